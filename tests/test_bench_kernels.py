"""The GPU benchmark kernels compile with the library's NVRTC options, without spills (no GPU needed),
and the harness's instruction counts are positive for every algorithm it reports."""

import pytest
from helpers import nvrtc_available

from bench import gpu

pytest.importorskip("cupy")


@pytest.mark.skipif(not nvrtc_available(), reason="NVRTC (the nvidia-cuda-nvrtc wheel) is not installed")
@pytest.mark.slow  # NVRTC compiles every benchmark kernel
def test_bench_kernels_compile_without_spills():
    from bench import baselines_gpu as seq
    from bench import dw_gpu
    from expansions.cuda import build

    names = [gpu.name_expression(k, op, alg, dt, R) for k in ("best", "shmem") for (op, alg) in gpu.OPS
             for dt in ("float64", "float32") for R in (2, 4, 8, 16, 32)]
    names += [dw_gpu.name_expression(name, dt) for _, name in dw_gpu.METHODS for dt in ("float64", "float32")]
    seq_names = [seq.name_expression(k, op, alg, "float64", R) for k in ("best", "shmem")
                 for op in ("add", "mul") for alg in ("campary", "qd") for R in (2, 4, 8)
                 if seq.functor(op, alg, R)]
    _, lowered_seq, _ = gpu.compile_bench(seq_names, "sm_90")  # the baselines' kernels compile too
    assert len(lowered_seq) == len(seq_names)
    _, lowered, log = gpu.compile_bench(names, "sm_90", verbose=True)
    usage = build.parse_ptxas_log(log)
    for n in names:
        regs, stack, spill_st, spill_ld = usage[lowered[n]]
        assert spill_st == 0 and spill_ld == 0, (n, usage[lowered[n]])


def test_instruction_counts():
    for (op, alg) in gpu.OPS:
        for R in (2, 4, 8, 16, 32):
            assert gpu.instructions_per_op(op, alg, R) > 0
