"""The double-word kernels of ``dw.cuh``: their table, NVRTC compilation (no GPU needed) and launchers.

One thread per number.  Double-words are (count, 2) rows (hi, lo) -- the library's storage for
R = 2 -- and floats (count,).  :data:`KERNEL_ALGORITHMS` lists the algorithms of
:data:`expansions.dw.ALGORITHMS` that have a kernel; the functor of each is its name in CamelCase
and the entry point is chosen by its operand kinds, so instances come from this one table.

:func:`operation` is what the library's ``+ - * /`` and ``sqrt`` launch at R = 2 (the algorithms of
:data:`expansions.dw.R2_METHODS`): one ``dw_operation`` kernel that applies the algorithm, the
library's non-finite rule and the renormalization in registers (one launch per operation),
with the bits of the algorithm's kernel followed by the rule and ``renormalize`` (its twin, the
composition :func:`expansions.dispatch.run` runs on the CPU backends).
"""

from __future__ import annotations

import functools

import numpy as np

from ..dw import ALGORITHMS, R2_METHODS
from . import build

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
    """dw.cuh with its includes inlined (eft.cuh, lanes.cuh, expansion.cuh): one text, no include
    path needed."""
    return build.source("dw.cuh")


#: The operation each algorithm of the library's R = 2 dispatch computes: ``DwKind`` of dw.cuh.
KINDS = {"add": 0, "mul": 1, "div": 2, "sqrt": 3}


def library_algorithms() -> dict:
    """{algorithm name: operation} of the algorithms the library's dispatch runs at R = 2
    (:data:`expansions.dw.R2_METHODS`, which the dispatch uses)."""
    return {name: op for op, names in R2_METHODS.items() for name in names}


def operation_expression(name: str, dtype: str, negate_y: bool, renormalize: bool) -> str:
    """The ``dw_operation`` instance of the library's R = 2 operation by algorithm ``name``."""
    op = library_algorithms()[name]
    flags = f"{str(negate_y).lower()}, {str(renormalize).lower()}"
    return f"expansions::dw_operation<{CTYPES[dtype]}, expansions::{functor(name)}, {KINDS[op]}, {flags}>"


def operation_instances() -> list[str]:
    """Every ``dw_operation`` instance the library can launch: each algorithm and dtype, a negated y
    for the additions (subtraction), with and without the renormalization (none for the square root,
    whose result the library does not renormalize)."""
    out = []
    for name, op in library_algorithms().items():
        for dtype in CTYPES:
            for negate_y in ((False, True) if op == "add" else (False,)):
                for renormalize in ((False,) if op == "sqrt" else (False, True)):
                    out.append(operation_expression(name, dtype, negate_y, renormalize))
    return out


def all_names() -> list[str]:
    """The name expressions of the one program holding every double-word kernel: each (algorithm,
    dtype) kernel, then every library operation instance."""
    return [name_expression(n, d) for n in KERNEL_ALGORITHMS for d in CTYPES] + operation_instances()


def compile_all(arch: str = "sm_90", verbose: bool = True):
    """Compile every (algorithm, dtype) kernel and every library operation instance for ``arch``:
    (binary, {name expression: lowered}, log)."""
    return build.compile_source(source(), all_names(), arch, verbose, "dw.cu")


@functools.cache
def _module(device_id: int):
    import cupy  # optional dependency: CuPy is needed only on the GPU path

    path, lowered = build.cached_cubin(source(), all_names(), build.device_arch(device_id), "dw.cu")
    return cupy.RawModule(path=str(path)), lowered


def _launch(expression: str, x, y, out, count: int) -> None:
    import cupy  # optional dependency: needed only to launch on a GPU

    module, lowered = _module(cupy.cuda.Device().id)
    fn = module.get_function(lowered[expression])
    if count:
        threads = build.BLOCK
        blocks = min(-(-count // threads), 32 * cupy.cuda.Device().attributes["MultiProcessorCount"])
        fn((blocks,), (threads,), (x, y, out, np.int64(count)))


def operation(name: str, x, y=None, negate_y: bool = False, renormalize: bool = False):
    """The library's R = 2 operation by algorithm ``name`` on (count, 2) CuPy terms, one launch:
    ``x op y`` (``x - y`` with ``negate_y``), or ``sqrt(x)`` (``y`` None), with the library's
    non-finite rule, renormalized with ``renormalize``.  The bits of the twins' composition
    (:func:`expansions.dispatch.run` on ``backends.cpu``)."""
    import cupy  # optional dependency: needed only to launch on a GPU

    x = cupy.ascontiguousarray(x)
    y = x if y is None else cupy.ascontiguousarray(y)
    if x.ndim != 2 or x.shape[1] != 2 or y.shape != x.shape or y.dtype != x.dtype:
        raise ValueError(f"{name}: expected (count, 2) operands of one dtype, got {x.shape} {x.dtype} and "
                         f"{y.shape} {y.dtype}")
    expression = operation_expression(name, np.dtype(x.dtype).name, negate_y, renormalize)
    out = cupy.empty(x.shape, dtype=x.dtype)
    _launch(expression, x, y, out, x.shape[0])
    return out


def run(name: str, *operands):
    """Run algorithm ``name`` on CuPy operands ((count, 2) double-words, (count,) floats) and return
    the (count, 2) result; the same bits as ``expansions.dw.cpu`` (where its FMA emulation is exact)."""
    import cupy  # optional dependency: needed only to launch on a GPU

    x = cupy.ascontiguousarray(operands[0])
    y = cupy.ascontiguousarray(operands[1]) if len(operands) > 1 else cupy.zeros(1, dtype=x.dtype)
    count = x.shape[0]
    out = cupy.empty((count, 2), dtype=x.dtype)
    _launch(name_expression(name, np.dtype(x.dtype).name), x, y, out, count)
    return out
