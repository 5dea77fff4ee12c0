"""The GPU runbook (tools/gpu/, run as tools/gpu_run.py) without a GPU: the dry runs of the
first and second stages fit 6 minutes on the committed measurements, and fail when they would not or
when a measurement is missing; the compile pool writes the very files the loaders read (their cache
keys agree); the bit-exactness comparison passes on the twins and catches one flipped bit, keeping the
operands; the stages run end to end with the CUDA calls replaced (the rehearsal), writing at most 8
files, skipping what would not fit; the sanitizer's launch script has the twins' signatures."""

from __future__ import annotations

import dataclasses
import json
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest
from helpers import nvrtc_available

from expansions import backends
from expansions.cuda import build
from tools.gpu import (
    bitexact,
    common,
    compilation,
    devices,
    families,
    launch_each,
    stages,
    timings,
    units,
    verification,
)
from tools.gpu import run as gpu_run

STAGE_FILES = {"first": {"summary.json", "summary.md", "env.json", "bitexact.json", "tables.json", "r2.json",
                         "stream.json"},
               "second": {"summary.json", "summary.md", "model.json", "sanitizer.json", "verify.json",
                          "elementary.json", "characterize.json"}}


# -- the plan and its budget ------------------------------------------------------------------------


@pytest.mark.parametrize("stage", ["first", "second"])
def test_dry_run_fits_the_budget_on_the_committed_measurements(stage, capsys):
    assert gpu_run.main(["--stage", stage, "--dry-run"]) == 0
    out = capsys.readouterr().out
    for p in stages.parts(stage):
        assert f"[{p.name}]" in out
    plan = gpu_run.plan(stage)
    assert plan["missing"] == [] and plan["sized"]
    assert 0 < plan["total_seconds"] <= gpu_run.STAGE_BUDGET_S
    assert plan["compile"]["units"] == len(compilation.stage_units(stage)) > 0
    assert plan["compile"]["wall_seconds"] >= plan["compile"]["longest_unit_seconds"] > 0


def test_dry_run_fails_over_budget_or_without_a_measurement(monkeypatch, capsys):
    monkeypatch.setattr(gpu_run, "STAGE_BUDGET_S", 1.0)
    assert gpu_run.main(["--stage", "first", "--dry-run"]) == 1
    assert "OVER BUDGET" in capsys.readouterr().out
    monkeypatch.undo()
    budget = common.load_budget()
    one = dict(budget["compile"]["one_core"])
    one.pop(compilation.stage_units("second")[0].label)
    budget["compile"] = budget["compile"] | {"one_core": one}
    monkeypatch.setattr(common, "load_budget", lambda: budget)
    assert gpu_run.main(["--stage", "second", "--dry-run"]) == 1
    assert "NOT VALID" in capsys.readouterr().out


def test_every_unit_and_cpu_side_of_the_stages_is_measured():
    budget = common.load_budget()
    for stage in ("first", "second"):
        units = {u.label for u in compilation.stage_units(stage)}
        assert units <= set(budget["compile"]["one_core"]), stage
    keys = {f"{f.name} {R} {d}" for f, R, d in families.bitexact_configs()}
    assert keys <= set(budget["cpu"]["bitexact"])


def test_every_part_is_in_the_stage_it_names():
    """tools/gpu/stages.py orders every part its modules define, each in the stage the part names."""
    assert stages.defined().keys() == stages.PARTS.keys()
    for stage, names in stages.STAGES.items():
        assert [p.name for p in stages.parts(stage)] == list(names)
        assert all(p.stage == stage for p in stages.parts(stage)), stage


def test_lpt_schedule():
    assert common.lpt_makespan([], 16) == 0
    assert common.lpt_makespan([3, 5, 3, 4, 3], 2) == 10  # longest first: 5 | 4, 5 | 7, 8 | 7, 8 | 10
    assert common.lpt_makespan([10, 1, 1, 1], 16) == 10
    assert common.lpt_makespan([1.0] * 32, 16) == 2


def test_model_plan_stays_within_its_cap_most_valuable_first():
    taken, rest = timings.model_plan()
    assert taken and sum(timings.cell_cost(c, None) for c in taken) <= timings.MODEL_CAP_S
    assert len(taken) + len(rest) == len(timings.model_cells())
    first = taken[0]
    assert first["source"] == "library" and first["dtype"] == "float64" and first["renormalize"]


# -- compilation out of the budget: the pool fills the cache the loaders read ------------------------


@pytest.fixture
def fake_gpu_loaders(monkeypatch, tmp_path):
    """A cache folder, sm_90 as the device's target, CuPy's loading replaced, and NVRTC forbidden in
    the loaders (a loader that would compile raises)."""
    monkeypatch.setenv("EXPANSIONS_CACHE_DIR", str(tmp_path))
    loaded = []

    class RawModule:
        def __init__(self, path):
            loaded.append(Path(path))

        def get_function(self, name):
            return name

    class Device:
        id = 0

        def __init__(self, device_id=0):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    fake = types.SimpleNamespace(RawModule=RawModule, cuda=types.SimpleNamespace(Device=Device))
    return fake, loaded


@pytest.mark.skipif(not nvrtc_available(), reason="needs CuPy's NVRTC (the cuda12 extra)")
def test_the_compile_pool_writes_what_the_loaders_read(fake_gpu_loaders, monkeypatch):
    from bench import gpu as bench_gpu
    from expansions.programs import cuda as programs_cuda

    fake, loaded = fake_gpu_loaders
    inst = build.instance("add_safe", "float64", 2, renormalize=True)
    bench_name = bench_gpu.name_expression("best", "add", "safe", "float64", 2)
    pool = [units.kernel_unit(inst), units.Unit("bench", (bench_name,)), units.Unit("program", ("fma", 2, "float64"))]
    res = compilation.prewarm(pool, "sm_90", 1)
    assert res["errors"] == 0 and res["units"] == 3 and res["cached"] == 0
    assert compilation.prewarm(pool, "sm_90", 1)["cached"] == 3

    def refuse(*args, **kwargs):
        raise AssertionError("a loader compiled: its cache key is not the pool's")

    monkeypatch.setattr(build, "compile_source", refuse)
    monkeypatch.setattr(build, "device_arch", lambda device_id: "sm_90")
    monkeypatch.setitem(sys.modules, "cupy", fake)
    kernels = build.DeviceKernels.__new__(build.DeviceKernels)
    kernels.arch = "sm_90"
    path, lowered = kernels._cubin([inst])  # what build.kernels(inst) loads
    assert inst.name_expression in lowered and path.exists()
    bench_gpu._function.cache_clear()
    assert bench_gpu._function(bench_name)
    name, text = units.program_source("fma", 2, "float64")
    programs_cuda._FUNCTIONS.clear()
    assert programs_cuda._function(name, text, 0) == lowered_name(loaded[-1])
    assert len(loaded) == 2


def lowered_name(cubin: Path) -> str:
    return next(iter(json.loads(cubin.with_suffix(".json").read_text()).values()))


def test_program_source_does_not_depend_on_the_count():
    """The fused program's kernel text (part of its cache key) is the same for 3 rows as for the
    stream part's 2^24: every input is a full array either way."""
    import expansions as ex
    from expansions.generate import random_terms
    from expansions.programs import Program
    from expansions.programs import cuda as programs_cuda

    args = [ex.from_terms(random_terms((50,), 4, "float64", seed=k)) for k in range(3)]
    graph, (_, items) = Program(units.PROGRAMS["fma"]).trace(*args)
    seen = []
    programs_cuda.KernelPlan(graph, tuple(items), "cpu", lambda n, t, p, c: seen.append((n, t)))(args)
    assert seen[0] == units.program_source("fma", 4, "float64")


# -- the bit-exactness comparison -----------------------------------------------------------------------


def test_same_rows_matches_nans_and_tells_signed_zeros_apart():
    a = np.array([[np.nan, 1.0], [0.0, 1.0], [1.0, 2.0]])
    b = a.copy()
    b.view(np.uint64)[0, 0] = 0xFFF8000000000000  # x86's default NaN against CUDA's canonical one
    b[1, 0] = -0.0
    same, nan_only = common.same_rows(a, b)
    assert same.tolist() == [True, False, True] and nan_only.tolist() == [True, False, False]


@pytest.mark.parametrize("name", ["add_safe", "mul_truncated", "renormalize", "reduce_dot", "dw", "fuse_fma"])
def test_comparison_passes_on_the_twins(name):
    fam = families.family(name)
    R = fam.rs[0] if name == "dw" else 4
    rec = bitexact.compare(devices.Rehearsal(), fam, R, "float64", 64, 4)
    assert rec["mismatches"] == 0 and rec["rows"] > 0 and len(rec["sets"]) >= 1


def test_comparison_catches_one_flipped_bit_and_keeps_the_operands():
    """A mutation: the 'GPU' add_safe flips the last bit of one term of one row."""
    def flipped(x, y, R, **kw):
        out = backends.cpu.add_safe(x, y, R).copy()
        out.view(np.uint64)[3, 1] ^= 1
        return out

    dev = devices.Rehearsal(dataclasses.replace(backends.cpu, add_safe=flipped))
    rec = bitexact.compare(dev, families.family("add_safe"), 4, "float64", 64, 4)
    assert rec["mismatches"] == 1 and rec["mismatches_by_set"] == {"random": 1}
    (fail,) = rec["failures"]
    assert fail["row"] == 3 and len(fail["inputs"]) == 2 and fail["gpu"] != fail["cpu"]
    x = np.array([float.fromhex(h) for h in fail["inputs"][0]])[None]
    y = np.array([float.fromhex(h) for h in fail["inputs"][1]])[None]
    from expansions import dispatch
    want = dispatch.run("add", "safe", backends.cpu, True, x, y, 4)[0]
    assert [float.fromhex(h) for h in fail["cpu"]] == want.tolist()


def test_dw_comparison_names_the_result_that_differs():
    from expansions.dw import cpu as dw_twins

    class Mutated(devices.Rehearsal):
        def dw_run(self, name, *operands):
            out = super().dw_run(name, *operands)
            if name == "dw_plus_fp":
                out = out.copy()
                out[0, 0] = np.nextafter(out[0, 0], np.inf)
            return out

    assert dw_twins.dw_plus_fp  # the mutated algorithm exists
    rec = bitexact.compare(Mutated(), families.family("dw"), 2, "float64", 32, 2)
    assert rec["mismatches"] == 1 and rec["mismatching_results"] == ["dw.cuh dw_plus_fp"]


def test_bitexact_stops_at_its_deadline(tmp_path):
    ctx = common.Context(tmp_path, time.time() - 1, devices.Rehearsal(), scale=1e-4)
    bitexact.run_bitexact(ctx)
    rec = json.loads((tmp_path / "bitexact.json").read_text())
    assert rec["status"] == "partial" and "not run" in rec["stopped"] and rec["results"] == []


def test_merge_rows_of_verification_chunks():
    rows = [{"operation": "add_safe", "R": 2, "cases": 5, "nonfinite_cases": 1, "violations": 0, "underflow_cases": 0,
             "s0_not_rn": 0, "property_violations": 0, "max_error_log2": -105.0, "max_ratio_log2": -3.0,
             "seconds": 1.0, "counterexample": {}},
            {"operation": "add_safe", "R": 2, "cases": 7, "nonfinite_cases": 0, "violations": 2, "underflow_cases": 1,
             "s0_not_rn": 1, "property_violations": 0, "max_error_log2": -104.0, "max_ratio_log2": 0.5,
             "seconds": 2.0, "counterexample": {"x": 1}}]
    m = verification.merge_rows(rows)
    assert (m["cases"], m["violations"], m["max_error_log2"], m["max_ratio_log2"]) == (12, 2, -104.0, 0.5)
    assert m["chunks"] == 2
    assert m["counterexample"] == {"x": 1}


# -- running stages --------------------------------------------------------------------------------------


def test_parts_that_would_not_fit_are_skipped_with_their_estimate(tmp_path):
    assert gpu_run.main(["--stage", "second", str(tmp_path), "--rehearse", "--limit", "12", "--part", "verify",
                         "--part", "elementary"]) == 1
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [r["status"] for r in summary["parts"]] == ["skipped", "skipped"]
    assert all("would not fit" in r["reason"] for r in summary["parts"])
    assert "elementary: skipped" in (tmp_path / "summary.md").read_text()


def test_without_a_gpu_the_gpu_parts_say_so(tmp_path):
    if backends.gpu_environment().get("gpu_available"):
        pytest.skip("a GPU is visible: the parts run for real")
    assert gpu_run.main(["--stage", "first", str(tmp_path), "--part", "env", "--part", "tables"]) == 1
    summary = json.loads((tmp_path / "summary.json").read_text())
    status = {r["part"]: r for r in summary["parts"]}
    assert status["env"]["status"] == "measured" and (tmp_path / "env.json").exists()
    assert status["tables"]["status"] == "skipped" and status["tables"]["reason"].startswith("no GPU")
    assert summary["compile"]["status"] == "skipped"


def test_rehearsal_of_two_parts_in_their_processes(tmp_path):
    assert gpu_run.main(["--stage", "second", str(tmp_path), "--rehearse", "--part", "sanitizer",
                         "--part", "characterize"]) == 0
    assert {p.name for p in tmp_path.iterdir()} == {"summary.json", "summary.md", "sanitizer.json",
                                                    "characterize.json"}
    san = json.loads((tmp_path / "sanitizer.json").read_text())
    assert san["status"] == "passed" and san["tools"]["rehearsal"]["disagreements"] == []


@pytest.mark.slow
@pytest.mark.parametrize("stage", ["first", "second"])
def test_rehearsal_of_a_stage_end_to_end(stage, tmp_path):
    """Every part of the stage, each in its process, the CUDA calls replaced, at 1/2000 of the sizes:
    every file written (at most 8), every part passed or measured."""
    assert gpu_run.main(["--stage", stage, str(tmp_path), "--rehearse", "--scale", "0.0005", "--limit", "1500"]) == 0
    files = {p.name for p in tmp_path.iterdir()}
    assert files == STAGE_FILES[stage] and len(files) <= 8
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [r["part"] for r in summary["parts"]] == [p.name for p in stages.parts(stage)]
    assert all(r["status"] in ("passed", "measured") for r in summary["parts"]), summary["parts"]
    if stage == "first":
        bitexact = json.loads((tmp_path / "bitexact.json").read_text())
        assert len(bitexact["results"]) == len(list(families.bitexact_configs()))


# -- the sanitizer's launch script -------------------------------------------------------------------------


@pytest.mark.parametrize("one", [False, True])
def test_launch_each_covers_every_kernel_with_the_twins_signatures(one):
    """The sanitizer's script, run with the twins in place of the launchers, agrees with itself: every
    call it makes has the right arguments for its kernel."""
    assert launch_each.check_all(launch_each.twin_launchers(), np.asarray, np.asarray, backends.cpu.reduce,
                                     launch_each.twin_dw_run, launch_each.twin_dw_operation,
                                     one_per_family=one) == []


def test_one_per_family_compiles_one_instance_per_kernel():
    inst = launch_each.family_instances()
    ops = [i.op for i in inst]
    assert len(set(ops)) == len(ops) and "exp" in ops and "log" not in ops
    assert {"add_safe", "certified_mul_soa", "reduce_sum", "reduce_dot", "newton_sqrt"} <= set(ops)
