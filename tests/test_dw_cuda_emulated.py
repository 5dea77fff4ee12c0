"""The double-word CUDA kernels (expansions/cuda/dw.cuh), compiled by g++ against the warp emulator of
tests/emulation/emu.h, against the NumPy twins of expansions.dw.cpu, bit for bit (see
tests/test_cuda_emulated.py for what the emulation does and does not check)."""

from __future__ import annotations

import ctypes
import shutil

import numpy as np
import pytest
from helpers import emulated_library

from expansions.cuda import dw_kernels
from expansions.dw import ALGORITHMS
from expansions.dw import cpu as twin

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed to build the warp emulator")


@pytest.fixture(scope="module")
def lib():
    lines = ['#include "emu.h"', dw_kernels.source()]
    for name in dw_kernels.KERNEL_ALGORITHMS:
        for dtype, ct in dw_kernels.CTYPES.items():
            expr = dw_kernels.name_expression(name, dtype)
            lines.append(f'extern "C" void emu_{name}_{dtype}(const {ct}* x, const {ct}* y, {ct}* o, long long n) '
                         f"{{ emu::launch(2, 64, [=]{{ {expr}(x, y, o, n); }}); }}")
    return emulated_library("\n".join(lines) + "\n", name="emu_dw")


def _inputs(kinds, n, dtype, rng):
    out = []
    for k in kinds:
        hi = (rng.standard_normal(n) * np.exp2(rng.integers(-20, 20, n))).astype(dtype)
        if k == "fp":
            out.append(hi)
            continue
        lo = (hi.astype(np.float64) * rng.uniform(-0.5, 0.5, n) * np.finfo(dtype).eps).astype(dtype)
        hi2, lo2 = twin.fast_two_sum(hi, lo) if hasattr(twin, "fast_two_sum") else (hi, lo)
        a = np.stack([hi2, lo2], axis=1)
        a[rng.random(n) < 0.05] = [0, 0]
        out.append(np.ascontiguousarray(a))
    return out


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", dw_kernels.KERNEL_ALGORITHMS)
def test_dw_kernel_equals_twin(lib, name, dtype):
    alg = ALGORITHMS[name]
    rng = np.random.default_rng(abs(hash((name, dtype))) % 2**32)
    n = 257
    args = _inputs(alg.operands, n, np.dtype(dtype), rng)
    x = args[0]
    y = args[1] if len(args) > 1 else np.zeros(1, dtype=dtype)
    out = np.full((n, 2), 7.0, dtype=dtype)
    p = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    getattr(lib, f"emu_{name}_{dtype}")(p(x), p(y), p(out), ctypes.c_longlong(n))
    flat = [c for a, k in zip(args, alg.operands) for c in ((a[:, 0], a[:, 1]) if k == "dw" else (a,))]
    with np.errstate(all="ignore"):
        zh, zl = getattr(twin, name)(*flat)
    want = np.stack([zh, zl], axis=1).astype(dtype)
    u = np.uint64 if dtype == "float64" else np.uint32
    # bit-identical, except that any NaN equals any NaN (the double-word layer does not canonicalize
    # NaN; the library's non-finite rule does, on top of it)
    differ = (out.view(u) != want.view(u)) & ~(np.isnan(out) & np.isnan(want))
    bad = np.flatnonzero(differ.any(axis=1))
    assert bad.size == 0, f"{bad.size} rows differ, first: {[a[bad[0]] for a in args]} got {out[bad[0]]} " \
                          f"want {want[bad[0]]}"
