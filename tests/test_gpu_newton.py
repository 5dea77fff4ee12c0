"""The Newton kernels (expansions/cuda/newton.cuh) on a GPU against their twins (expansions/cpu/newton.py),
bit for bit, and the public division/sqrt on device='cuda' against the CPU.  Skipped without a GPU."""

from __future__ import annotations

import os

import numpy as np
import pytest

from expansions import cuda
from expansions.cpu import newton as twin
from expansions.generate import random_terms

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not cuda.available(),
                       reason="no CUDA GPU visible to CuPy (expansions.cuda.available() is False)"),
]

RS = (2, 3, 4, 5, 8, 13, 16, 31, 32)
COUNT = int(os.environ.get("EXPANSIONS_GPU_NEWTON", 20011))
UINT = {np.dtype(np.float64): np.uint64, np.dtype(np.float32): np.uint32}


def _inputs(R, dtype, m, seed):
    x = random_terms(COUNT, R, dtype, seed=seed, p_ulp=0.2, p_zero=0.1)
    y = random_terms(COUNT, m, dtype, seed=seed + 1, p_ulp=0.2, p_zero=0.1)
    a = np.ascontiguousarray(np.where(x[:, :1] < 0, -x, x))
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0], dtype=dtype)
    for arr in (x, y, a):
        arr[:7] = 0
        arr[:7, 0] = special
        arr[7:14, 0] = special[::-1]
    a[20:40] *= -1  # negative radicands
    return x, y, a


def _same(got, want, what):
    u = UINT[want.dtype]
    bad = np.flatnonzero((got.view(u) != want.view(u)).any(axis=1))
    assert bad.size == 0, f"{what}: {bad.size} rows differ, first {bad[0]}: gpu {got[bad[0]]} twin {want[bad[0]]}"


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("R", RS)
def test_newton_kernels_equal_twins(R, dtype):
    import cupy as cp

    from expansions.cuda import launch

    for m in (R, 1):
        x, y, a = _inputs(R, dtype, m, seed=R * 10 + m)
        with np.errstate(all="ignore"):
            _same(cp.asnumpy(launch.newton_div(cp.asarray(x), cp.asarray(y), R)), twin.div(x, y, R), f"div m={m}")
            _same(cp.asnumpy(launch.newton_reciprocal(cp.asarray(y), R)), twin.reciprocal(y, R), f"reciprocal m={m}")
            aa = np.ascontiguousarray(a[:, :m])
            _same(cp.asnumpy(launch.newton_sqrt(cp.asarray(aa), R)), twin.sqrt(aa, R), f"sqrt m={m}")


def test_public_division_and_sqrt_on_the_gpu_equal_the_cpu():
    import expansions as ex

    for R in (3, 8):
        x = ex.random(1000, terms=R, seed=1)
        y = ex.random(1000, terms=R, seed=2)
        for f in (lambda u, v: u / v, lambda u, v: ex.sqrt(ex.absolute(u)), lambda u, v: ex.reciprocal(v),
                  lambda u, v: u / 3.0):
            cpu = f(x, y).terms
            gpu = f(x.to_device("cuda"), y.to_device("cuda")).to_device("cpu").terms
            _same(gpu.reshape(-1, R), cpu.reshape(-1, R), f"R={R}")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("R", (2, 3, 5, 8, 16))
def test_renormalizing_newton_kernels_equal_two_launches(R, dtype):
    """One launch per operation: the renormalizing Newton kernels give the bits of the twin followed
    by the library's renormalization (dispatch.renormalizer: zero results keep their sign) and of the
    two launches the library made before."""
    import cupy as cp

    from expansions import backends, dispatch
    from expansions.cuda import launch

    ren_twin = dispatch.renormalizer("newton", backends.cpu)
    ren_gpu = dispatch.renormalizer("newton", backends.cuda)
    for m in (R, 1):
        x, y, a = _inputs(R, dtype, m, seed=R * 20 + m)
        aa = np.ascontiguousarray(a[:, :m])
        with np.errstate(all="ignore"):
            for what, fn, tw, args in (("div", launch.newton_div, twin.div, (x, y)),
                                       ("reciprocal", launch.newton_reciprocal, twin.reciprocal, (y,)),
                                       ("sqrt", launch.newton_sqrt, twin.sqrt, (aa,))):
                dev = [cp.asarray(v) for v in args]
                one = cp.asnumpy(fn(*dev, R, renormalize=True))
                _same(one, ren_twin(tw(*args, R), R), f"{what} m={m} renormalizing vs twin")
                _same(one, cp.asnumpy(ren_gpu(fn(*dev, R), R)), f"{what} m={m} renormalizing vs two launches")
