"""The elementary-function kernels (expansions/cuda/elementary.cuh) on a GPU against their twins
(expansions/cpu/elementary.py), bit for bit, on random arguments over each domain and the special values
of tests/test_elementary_emulated.py; and the public functions on device='cuda' against the CPU.
Skipped without a GPU."""

from __future__ import annotations

import os

import numpy as np
import pytest
from test_elementary_emulated import BINARY, FUNCTIONS

import expansions as ex
from expansions import cuda
from expansions.cpu import elementary as twin
from expansions.testing import elementary_domain as domain
from expansions.testing import elementary_specials as _specials

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not cuda.available(),
                       reason="no CUDA GPU visible to CuPy (expansions.cuda.available() is False)"),
]

CONFIGS = ((2, "float64"), (3, "float64"), (4, "float64"), (8, "float64"), (16, "float64"), (2, "float32"),
           (4, "float32"), (8, "float32"))
COUNT = int(os.environ.get("EXPANSIONS_GPU_ELEMENTARY", 4099))
UINT = {np.dtype(np.float64): np.uint64, np.dtype(np.float32): np.uint32}


def _same(got, want, what):
    u = UINT[want.dtype]
    bad = np.flatnonzero((got.view(u) != want.view(u)).any(axis=1))
    assert bad.size == 0, f"{what}: {bad.size} rows differ, first {bad[0]}: gpu {got[bad[0]]} twin {want[bad[0]]}"


@pytest.mark.parametrize("f", FUNCTIONS)
@pytest.mark.parametrize("R,dtype", CONFIGS)
def test_elementary_kernels_equal_twins(R, dtype, f):
    import cupy as cp

    from expansions.cuda import launch

    rng = np.random.default_rng([R, len(dtype), FUNCTIONS.index(f)])
    x, y = domain(f, COUNT, R, dtype, rng)
    sx, sy = _specials(f, R, dtype)
    x = np.ascontiguousarray(np.concatenate([x, sx]))
    y = None if y is None else np.ascontiguousarray(np.concatenate([y, sy]))
    args = (x,) if y is None else (x, y)
    with np.errstate(all="ignore"):
        got = cp.asnumpy(getattr(launch, f)(*[cp.asarray(a) for a in args], R))
        want = getattr(twin, f)(*args, R)
    _same(got, want, f"{f} R={R} {dtype}")


@pytest.mark.parametrize("R", [2, 5])
def test_public_functions_on_the_gpu_equal_the_cpu(R):
    x = ex.random(300, terms=R, seed=1)
    y = ex.random(300, terms=R, seed=2)
    for name in FUNCTIONS:
        fn = getattr(ex, name)
        with np.errstate(all="ignore"):
            if name in BINARY:
                cpu, gpu = fn(x, y), fn(x.to_device("cuda"), y.to_device("cuda"))
            else:
                cpu, gpu = fn(x), fn(x.to_device("cuda"))
        _same(gpu.to_device("cpu").terms.reshape(-1, R), cpu.terms.reshape(-1, R), name)
    with np.errstate(all="ignore"):
        _same(np.exp(x.to_device("cuda")).to_device("cpu").terms, np.exp(x).terms, "np.exp")
