"""Seed 004's GPU characterization (paper_repro.seed004_gpu): the microbenchmark sources compile with
NVRTC for sm_90 (no GPU needed), the tables put a timing result beside the thesis's figures, a run
without a GPU says it was skipped, and on a GPU the measurements are plausible (skipped here)."""

from __future__ import annotations

import pytest

from expansions import cuda
from expansions.cuda import build
from paper_repro import seed004_gpu as g


def _nvrtc_or_skip():
    try:
        from cupy.cuda import nvrtc  # noqa: F401  (optional: CI has CuPy's NVRTC)

        return build.nvrtc_version()
    except Exception as exc:  # no CuPy or no NVRTC library
        pytest.skip(f"CuPy NVRTC unavailable ({type(exc).__name__}: {exc})")


@pytest.mark.slow  # NVRTC compiles every microbenchmark
def test_microbenchmarks_compile_for_sm90():
    _nvrtc_or_skip()
    compiled = g.compile_all("sm_90")
    assert set(compiled) == {"standard", "fast", "library"}
    for b, (binary, lowered, log) in compiled.items():
        usage = build.parse_ptxas_log(log)
        names = g.sources()[b][2]
        assert set(lowered) == set(names) and len(binary) > 0
        assert all(usage[lowered[n]][0] > 0 for n in names), b  # registers reported for every kernel
    # the fast-math build is another program: its FP32 division and exponential differ from the standard's
    assert compiled["fast"][0] != compiled["standard"][0]
    assert any("dw_chain<double, expansions::DwDivDw2" in n for n in compiled["library"][1])
    assert any("group_chain<double, 8, 1" in n for n in compiled["library"][1])


def _fake_result():
    prim = [{"dtype": dt, "op": op, "build": b, "latency_cycles": 4.0 + k + (b == "fast") / 2,
             "per_cycle_per_sm": 64.0 / (k + 1) * (1 + (b == "fast")),
             "per_second_clock": 1e12, "per_second_events": 2e12}
            for dt, ops in g.MEASURED.items() for k, op in enumerate(ops) for b in g.BUILDS
            if not (b == "fast" and dt == "double")]
    lib = [{"dtype": "double", "op": "add", "algorithm": "dw_add_accurate", "R": 2, "latency_cycles": 41.5,
            "per_cycle_per_sm": 3.25, "per_second_clock": 1e11, "per_second_events": 9.5e10}]
    mixed = {k: {"per_cycle_per_sm": 1.0, "per_second_clock": v, "per_second_events": v / 2}
             for k, v in (("single", 3e13), ("double", 1.5e13), ("mixed", 2.9e13))}
    return {"primitives": prim, "library": lib, "mixed": mixed, "sms": 132, "clock_hz": 1.98e9, "arch": "sm_90",
            "theory": {"theoretical single": 128 * 132 * 1.98e9, "theoretical double": 64 * 132 * 1.98e9},
            "quick": True, "environment": {"gpu_name": "Fake GPU"}}


def test_tables_beside_the_thesis():
    md = g.markdown(_fake_result())
    iv = md.split("### Table IV")[1].split("### Table V")[0]
    assert "| div | 996/40 | 520/18 | 371/15 | 338/16 | 7 / 7.5 | 16 / 32 | 2e+03 |" in iv  # thesis, ours std/fast
    assert "| exp2 | 88/40 | 49/18 | 40/15 | 40/16 |" in iv  # the thesis's "ex2" row
    v = md.split("### Table V")[1].split("### Table IX")[0]
    assert "| add | 22 | 10 | 48 | 48 | 4 | 64 | 2e+03 |" in v
    assert "| shfl | - | - | - | - |" in v  # not in the thesis's tables
    ix = md.split("### Table IX")[1]
    assert "| theoretical single | 6600 Gflop/s | 3.345e+04 Gflop/s | - |" in ix
    assert "| mixed | 186 Gflop/s | 2.9e+04 Gflop/s | 1.45e+04 Gflop/s |" in ix
    assert "| double | add | dw_add_accurate | 2 | 41.5 | 3.25 | 95 |" in md
    assert "Fake GPU (sm_90, 132 multiprocessors" in md


def test_anchors_are_the_thesis_figures():
    a = g.anchors()
    assert a["IV"]["sqrt"]["maxwell"] == (84.0, 13.0) and a["V"]["div"]["pascal"] == (1114.0, None)
    assert a["IX"] == {"theoretical single": 6.6e12, "theoretical double": 206e9, "single": 2.4e12,
                       "double": 93e9, "mixed": 186e9}


def test_without_a_gpu_the_run_says_so():
    if cuda.available():
        pytest.skip("a GPU is visible: the characterization runs for real")
    res = g.run(quick=True)
    assert "no GPU" in res["skipped"]
    assert "Skipped: no GPU" in g.markdown(res)


@pytest.mark.gpu
@pytest.mark.skipif(not cuda.available(), reason="no CUDA GPU visible to CuPy (expansions.cuda.available() is False)")
def test_measurements_on_the_gpu_are_plausible():
    res = g.measure(quick=True)
    prim = {(r["dtype"], r["op"], r["build"]): r for r in res["primitives"]}
    assert 1 <= prim["float", "add", "standard"]["latency_cycles"] <= 30
    assert prim["double", "div", "standard"]["latency_cycles"] > prim["double", "add", "standard"]["latency_cycles"]
    assert prim["float", "div", "fast"]["latency_cycles"] < prim["float", "div", "standard"]["latency_cycles"]
    assert all(r["per_cycle_per_sm"] > 0 and r["latency_cycles"] > 0 for r in res["primitives"] + res["library"])
    assert res["mixed"]["mixed"]["per_second_events"] > res["mixed"]["double"]["per_second_events"]
    assert "### Table IX" in g.markdown(res)


def test_per_multiprocessor_rate_from_block_clocks():
    """Blocks on one multiprocessor share its clock: its rate is their operations over first start to
    last stop; the median over multiprocessors is reported."""
    import numpy as np

    clocks = np.array([[0, 100, 0], [10, 110, 0], [500, 550, 3]])
    assert g._per_sm_rate(clocks, 1000.0) == pytest.approx((2000 / 110 + 1000 / 50) / 2)
