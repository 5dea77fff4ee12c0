"""Double-word kernels: NVRTC compiles every (algorithm, dtype) without spills (no GPU needed); on a
GPU, each kernel equals its NumPy twin bit for bit (NaN equal to NaN) on 10^6 numbers."""

import numpy as np
import pytest
from helpers import nvrtc_available

from expansions.cuda import dw_kernels

cupy = pytest.importorskip("cupy")


@pytest.mark.skipif(not nvrtc_available(), reason="NVRTC (the nvidia-cuda-nvrtc wheel) is not installed")
@pytest.mark.slow  # NVRTC compiles every double-word kernel
def test_dw_kernels_compile_without_spills():
    from expansions.cuda import build

    _, lowered, log = dw_kernels.compile_all("sm_90", verbose=True)
    usage = build.parse_ptxas_log(log)
    assert len(lowered) == 2 * len(dw_kernels.KERNEL_ALGORITHMS) + len(dw_kernels.operation_instances())
    for name, low in lowered.items():
        assert usage[low][2] == 0 and usage[low][3] == 0, name


@pytest.mark.gpu
@pytest.mark.skipif(not cupy.cuda.is_available(), reason="no CUDA GPU visible to CuPy")
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", dw_kernels.KERNEL_ALGORITHMS)
def test_dw_kernel_equals_twin_on_gpu(name, dtype):
    from expansions.dw import ALGORITHMS
    from expansions.dw import cpu as twin

    rng = np.random.default_rng(1)
    n = 10**6
    ops = []
    for k in ALGORITHMS[name].operands:
        hi = (rng.standard_normal(n) * np.exp2(rng.integers(-20, 20, n))).astype(dtype)
        if k == "fp":
            ops.append(hi)
        else:
            lo = (hi.astype(np.float64) * rng.uniform(-0.5, 0.5, n) * np.finfo(dtype).eps).astype(dtype)
            ops.append(np.ascontiguousarray(np.stack(twin.fast_two_sum(hi, lo), axis=1)))
    got = cupy.asnumpy(dw_kernels.run(name, *[cupy.asarray(a) for a in ops]))
    with np.errstate(all="ignore"):
        want = np.stack(getattr(twin, name)(*[c for a in ops for c in ((a[:, 0], a[:, 1]) if a.ndim == 2 else (a,))]),
                        axis=1)
    u = np.uint64 if dtype == "float64" else np.uint32
    assert not ((got.view(u) != want.view(u)) & ~(np.isnan(got) & np.isnan(want))).any()
