"""The double-word kernels of ``dw.cuh``: their table, NVRTC compilation (no GPU needed) and launchers.

One thread per number.  Double-words are (count, 2) rows (hi, lo) -- the library's storage for
R = 2 -- and floats (count,).  :data:`KERNEL_ALGORITHMS` lists the algorithms of
:data:`expansions.dw.ALGORITHMS` that have a kernel; the functor of each is its name in CamelCase
and the entry point is chosen by its operand kinds, so instances come from this one table.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from ..dw import ALGORITHMS
from . import build

HERE = Path(__file__).resolve().parent
CTYPES = build.CTYPES
ENTRY = {("dw", "dw"): "dw_dw", ("dw", "fp"): "dw_fp", ("fp", "fp"): "fp_fp", ("dw",): "dw_unary"}
KERNEL_ALGORITHMS = tuple(n for n, a in ALGORITHMS.items() if a.operands in ENTRY)


def functor(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def name_expression(name: str, dtype: str) -> str:
    entry = ENTRY[ALGORITHMS[name].operands]
    return f"expansions::{entry}<{CTYPES[dtype]}, expansions::{functor(name)}>"


@functools.cache
def source() -> str:
    """eft.cuh and dw.cuh as one text (no include path needed)."""
    keep = []
    for f in ("eft.cuh", "dw.cuh"):
        keep += [ln for ln in (HERE / f).read_text().splitlines()
                 if not ln.startswith("#include") and ln.strip() != "#pragma once"]
    return "\n".join(keep) + "\n"


def compile_all(arch: str = "sm_90", verbose: bool = True):
    """Compile every (algorithm, dtype) kernel for ``arch``: (binary, {name expression: lowered}, log)."""
    names = [name_expression(n, d) for n in KERNEL_ALGORITHMS for d in CTYPES]
    return build.compile_source(source(), names, arch, verbose, "dw.cu")


@functools.cache
def _module(device_id: int):
    import tempfile  # only when a kernel is loaded

    import cupy  # optional dependency: CuPy is needed only on the GPU path

    binary, lowered, _ = compile_all(build.device_arch(device_id), verbose=False)
    path = Path(tempfile.mkdtemp(prefix="expansions-dw-")) / "dw.cubin"
    path.write_bytes(binary)
    return cupy.RawModule(path=str(path)), lowered


def run(name: str, *operands):
    """Run algorithm ``name`` on CuPy operands ((count, 2) double-words, (count,) floats) and return
    the (count, 2) result; the same bits as ``expansions.dw.cpu`` (where its FMA emulation is exact)."""
    import cupy  # optional dependency: needed only to launch on a GPU

    x = cupy.ascontiguousarray(operands[0])
    y = cupy.ascontiguousarray(operands[1]) if len(operands) > 1 else cupy.zeros(1, dtype=x.dtype)
    dtype = np.dtype(x.dtype).name
    module, lowered = _module(cupy.cuda.Device().id)
    fn = module.get_function(lowered[name_expression(name, dtype)])
    count = x.shape[0]
    out = cupy.empty((count, 2), dtype=x.dtype)
    if count:
        threads = build.BLOCK
        blocks = min(-(-count // threads), 32 * cupy.cuda.Device().attributes["MultiProcessorCount"])
        fn((blocks,), (threads,), (x, y, out, np.int64(count)))
    return out
