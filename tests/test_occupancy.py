"""The occupancy calculator's formulas (expansions.cuda.occupancy) on documented cases, the block size
chosen from them, and the tuner's launch configuration (NVRTC's registers, no GPU needed)."""

from __future__ import annotations

import pytest

from expansions.cuda import build
from expansions.cuda.occupancy import SM70, SM90, blocks_per_sm, choose_block, kernel_registers, occupancy, table


def _nvrtc_or_skip():
    try:
        from cupy.cuda import nvrtc  # noqa: F401  (optional: CI has CuPy's NVRTC)

        return build.nvrtc_version()
    except Exception as exc:  # no CuPy or no NVRTC library
        pytest.skip(f"CuPy NVRTC unavailable ({type(exc).__name__}: {exc})")


def test_best_practices_guide_example():
    """CUDA C++ Best Practices Guide, "Calculating Occupancy" (compute capability 7.0): 37 registers per
    thread give 75 % with 128-thread blocks (12 blocks) and 63 % with 320-thread blocks (4 blocks)."""
    assert blocks_per_sm(128, 37, SM70) == (12, "registers")
    assert occupancy(128, 37, SM70) == 0.75
    assert blocks_per_sm(320, 37, SM70) == (4, "registers")
    assert occupancy(320, 37, SM70) == 40 / 64  # 62.5 %, the guide's "63 %"


def test_thirty_two_registers_allow_full_occupancy():
    """The same guide: 2048 resident threads and 64 K registers, so 100 % needs at most 32 registers;
    33 registers round up to 1280 per warp (unit 256): 48 warps, 75 %."""
    for limits in (SM70, SM90):
        assert occupancy(256, 32, limits) == 1.0
        assert occupancy(256, 33, limits) == 0.75
        assert occupancy(1024, 32, limits) == 1.0


def test_the_other_limits():
    assert blocks_per_sm(32, 16, SM90) == (32, "blocks")  # 32 resident blocks of one warp: 50 %
    assert occupancy(32, 16, SM90) == 0.5
    assert blocks_per_sm(1024, 64, SM90) == (1, "registers")  # 64 K registers per block exactly
    assert blocks_per_sm(1024, 65, SM90) == (0, "registers")  # more than a block may have: no launch
    assert blocks_per_sm(64, 256, SM90) == (0, "registers")  # more than 255 per thread
    assert blocks_per_sm(256, 32, SM90, shared=100 * 1024) == (2, "shared memory")  # (100 K + 1 K reserved)
    assert blocks_per_sm(256, 32, SM70, shared=48 * 1024) == (2, "shared memory")  # no reservation on 7.0
    with pytest.raises(ValueError, match="multiple of 32"):
        blocks_per_sm(100, 32, SM90)
    rows = table(46, SM90)
    assert [r["threads"] for r in rows] == list(range(32, 1025, 32))
    assert {r["threads"]: r["warps_per_sm"] for r in rows}[640] == 40  # 46 registers: 1536 per warp, 40 warps


def test_choose_block():
    c = choose_block(46, SM90)
    assert c.occupancy == max(r["occupancy"] for r in c.rows) == 40 / 64
    assert c.tied == [64, 128, 160, 256, 320, 640] and (c.threads, c.how) == (256, "library default")
    c = choose_block(46, SM90, preferred=96)
    assert (c.threads, c.how) == (640, "largest")
    timings = {64: 3.0, 128: 1.0, 160: 2.0, 256: 1.5, 320: 1.0, 640: 4.0}
    c = choose_block(46, SM90, measure=timings.__getitem__)
    assert (c.threads, c.how) == (128, "measured") and c.seconds == timings
    assert choose_block(200, SM90).threads == 256  # 8 warps per SM at most (registers)
    with pytest.raises(ValueError, match="cannot launch"):
        choose_block(300, SM90)


def test_registers_from_nvrtc():
    _nvrtc_or_skip()
    text = ('extern "C" __global__ void k(const double* x, double* y, int n) {\n'
            '  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] * x[i] + 1.0; }\n')
    regs = kernel_registers(text, "k")
    assert 4 <= regs <= 32


def test_the_tuners_launch_configuration():
    """launch=True on the CPU: the tuned program's kernel compiled for sm_90, its registers, the block
    size of highest occupancy on the sm_90 table; a program of several formats has no single kernel."""
    _nvrtc_or_skip()
    import expansions as ex
    from expansions import tuning
    from paper_repro.seed004_tuning import axpc, axpc_samples

    choice, note = tuning.launch_choice(axpc, {}, axpc_samples(16))
    assert note == "" and choice.limits is SM90 and choice.registers > 0
    assert choice.occupancy == occupancy(choice.threads, choice.registers, SM90)
    assert choice.occupancy == max(r["occupancy"] for r in table(choice.registers, SM90))
    tuned = ex.tune(axpc, *axpc_samples(64), rel_error=2.0 ** -60, check_time=False, bound_elements=0,
                    launch=True)
    assert tuned.report.launch is None and "one kernel per operation" in tuned.report.launch_note
    assert "Launch configuration (CUDA): no single CUDA kernel" in tuned.report.markdown()
    assert tuned.block is None  # on the CPU nothing is launched


def test_program_block_argument():
    from expansions.programs import Program

    with pytest.raises(ValueError, match="multiple of 32"):
        Program(lambda x: x + x, block=100)
    with pytest.raises(ValueError, match="cuda="):
        Program(lambda x: x + x, cuda="loop")
