"""The instruction model (bench/sass.py, bench/model/): the SASS classifier on kernels of known content,
the twins recorded (bit for bit), the committed table's coverage, and its staleness (the votes and floors
of a few cells recomputed and compared; a few cells' instructions too, with the model extra: NVRTC 13
and nvdisasm)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from bench import gpu, model, sass
from expansions import bounds
from expansions.cpu import kernels as K
from expansions.cpu import newton
from expansions.formats import format_of, group_width
from expansions.generate import random_terms
from paper_repro import collange2016

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "bench" / "results" / "model_sm90.json"


def _tools_or_skip():
    """Skip without the model's toolchain; fail instead where EXPANSIONS_REQUIRE_MODEL=1 (CI's model
    environment), so that a broken install cannot pass as a skip."""
    why = sass.missing_tools()
    if why and os.environ.get("EXPANSIONS_REQUIRE_MODEL") == "1":
        pytest.fail(f"model toolchain absent ({why}) although EXPANSIONS_REQUIRE_MODEL=1")
    if why:
        pytest.skip(f"model toolchain absent ({why})")


def test_classify_opcodes():
    assert sass.classify("DADD") == "fp64"
    assert sass.classify("DFMA") == "fp64"
    assert sass.classify("FADD") == "fp32"
    assert sass.classify("SHFL.IDX") == "shfl"
    assert sass.classify("VOTE.ANY") == "vote"
    assert sass.classify("FSEL") == "select"
    assert sass.classify("SEL") == "select"
    assert sass.classify("IADD3") == "int"
    assert sass.classify("BRA.DIV") == "branch"
    assert sass.classify("BSSY") == "branch"
    assert sass.classify("LDG.E.64.CONSTANT") == "memory"
    assert sass.classify("STL.64") == "local"
    assert sass.classify("WHATEVER") == "other"


KNOWN = r"""
namespace t {
__global__ void one_dadd(const double* __restrict__ x, double* __restrict__ y) { y[0] = __dadd_rn(x[0], x[1]); }
__global__ void one_fadd(const float* __restrict__ x, float* __restrict__ y) { y[0] = __fadd_rn(x[0], x[1]); }
__global__ void one_shfl(const double* __restrict__ x, double* __restrict__ y) {
    y[threadIdx.x] = __shfl_sync(0xffffffffu, x[threadIdx.x], 0);
}
}
"""


def test_counts_of_known_kernels():
    _tools_or_skip()
    f = sass.sass(KNOWN, ["t::one_dadd", "t::one_fadd", "t::one_shfl"])
    dadd = sass.counts(f["t::one_dadd"].instructions)
    assert dadd["fp64"] == 1 and dadd["fp32"] == 0 and dadd["shfl"] == 0 and dadd["vote"] == 0
    assert [i.opcode for i in f["t::one_dadd"].instructions if i.cls == "fp64"] == ["DADD"]
    assert [i.cls for i in f["t::one_dadd"].instructions if i.cls == "memory"].count("memory") >= 2  # loads, store
    fadd = sass.counts(f["t::one_fadd"].instructions)
    assert fadd["fp32"] == 1 and fadd["fp64"] == 0
    shfl = sass.counts(f["t::one_shfl"].instructions)
    assert shfl["shfl"] == 2, "a float64 shuffle is two 32-bit SHFL"
    assert shfl["fp64"] == 0
    assert not sass.loops(f["t::one_dadd"])


@pytest.mark.parametrize("R", [4, 8])
def test_trip_counts_read_from_the_code(R):
    """The multiplication's loop over y_i runs R - 1 steps, its propagate loops are bounded by R rounds
    (unrolled by 2 or 4: R / 2 or R / 4 trips, mul.cuh), the renormalization loops of its operands'
    positional checks (one per operand, taken only where a group breaks the chain) R - 1 rounds, and
    the benchmark's K loop has no compile-time count."""
    _tools_or_skip()
    name = gpu.name_expression("best", "mul", "parallel", "float64", R)
    f = sass.sass(gpu._source(), [name])[name]
    head, latch = sass.steady_loop(f, "best")
    inner = [lp for lp in sass.loops(f) if head < lp[0] and lp[1] < latch]
    unroll = 4 if R % 4 == 0 and R > 4 else 2
    assert sorted(sass.counted_trips(f, lp) for lp in inner) == sorted([R - 1, R // unroll, R // unroll,
                                                                        R - 1, R - 1])
    with pytest.raises(sass.ModelError):
        sass.counted_trips(f, (head, latch))


def _non_positional(x):
    """Every fifth row of ``x`` made to break the positional chain (a zero term before a nonzero one), every
    seventh not finite: the multiplication's operand test then renormalizes in some warps only, and the
    non-finite rule's vote is taken."""
    x = x.copy()
    x[::5, 1] = 0
    x[::7, -1] = np.inf
    return x


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("R", [3, 4, 8])
def test_recording_keeps_the_twins_bits(R, dtype):
    """The twins recorded (bench.model.votes.record: every group of a warp that takes a branch runs it) return
    their bits, and record a vote of every propagate loop of every step of the multiplication."""
    x = _non_positional(random_terms((256,), R, dtype, seed=11))
    y = random_terms((256,), R, dtype, seed=12)
    G = 32 // group_width(R)
    with np.errstate(all="ignore"):
        for op, twin in (("add_fast", K.add_fast), ("sub_safe", K.sub_safe), ("mul_truncated", K.mul_truncated)):
            out, votes = model.record(op, x, y, R, renormalize=True)
            np.testing.assert_array_equal(out, K.renormalize(twin(x, y, R), R))
            assert votes.matrix().shape[0] == 256 // G
        _, votes = model.record("mul_truncated", x, y, R)
        m = votes.matrix()
        # the first operand's positional vote: taken in the warps holding a finite row that breaks the chain
        rows = np.arange(256)
        assert (m[:, 0] == ((rows % 5 == 0) & (rows % 7 != 0)).reshape(-1, G).any(axis=1)).all()
        # both operands' votes, and every propagate loop
        assert ((m >= 0).sum(axis=1) >= 2 + 2 * (R - 1)).all()
        # the non-finite rule's vote, last: taken in the warps holding an inf
        assert (m[:, -1] == np.isinf(x).any(axis=1).reshape(-1, G).any(axis=1)).all()
        out, _ = model.record("renormalize", x, y, R)
        np.testing.assert_array_equal(out, K.renormalize(K.mul_truncated(x, y, R), R))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("R", [2, 3, 5])
def test_recording_the_newton_kernels_keeps_their_bits(R, dtype):
    """The Newton twins recorded return their bits, and record the votes of every step."""
    x = random_terms((128,), R, dtype, seed=13)
    y = random_terms((128,), R, dtype, seed=14)
    with np.errstate(all="ignore"):
        for name, want in (("newton_div", newton.div(x, y, R)), ("newton_reciprocal", newton.reciprocal(x, R)),
                           ("newton_sqrt", newton.sqrt(np.abs(x), R))):
            out, votes = model.record(name, x, y, R)
            np.testing.assert_array_equal(out, want)
            # per Newton step after the double-word start at least: products and renormalizations,
            # each with its votes
            assert votes.matrix().shape[1] >= 3 * (len(bounds.newton_steps(R, format_of(dtype))) - 1)


#: Cells whose votes and floor are recomputed against the committed table (no toolchain needed: the twins
#: recorded on the benchmark's inputs): every operation with votes, both dtypes, R = 2 to 32, library
#: kernels (streaming, raw and renormalizing) and benchmark kernels (best case); a few seconds.
VOTE_CELLS = [("add_safe", "float64", 2, False), ("sub_safe", "float32", 16, True), ("add_fast", "float32", 4, True),
              ("sub_fast", "float64", 32, False), ("mul_truncated", "float32", 3, True),
              ("mul_truncated", "float64", 8, False), ("renormalize", "float64", 8, False),
              ("renormalize", "float32", 3, False), ("newton_div", "float32", 2, True),
              ("newton_reciprocal", "float64", 4, True), ("newton_sqrt", "float64", 3, True),
              ("FastAdd", "float64", 2, None), ("SafeAdd", "float32", 3, None), ("TruncMul", "float32", 2, None)]


@pytest.mark.parametrize("op,dtype,R,renormalize", VOTE_CELLS)
def test_committed_votes_and_floor_are_current(op, dtype, R, renormalize):
    """The committed table's votes per warp-iteration (their number, distinct sequences, walked, mean and
    maximum per warp-iteration) and floor per operation are what the recorded twins give now, exactly."""
    data = _committed()
    old = next(r for r in data["records"] if (r["op"], r["dtype"], r["R"], r.get("renormalize")) ==
               (op, dtype, R, renormalize))
    cell = next(c for c in model.cells((R,), (dtype,)) if c["kernel"] == old["kernel"])
    floor: dict = {}
    seqs = model.vote_sequences(op, dtype, R, cell["kind"] == "best", bool(renormalize), floor)
    assert model.summary(seqs, model.core.sample_size(cell))[3] == old["votes"], "rerun python -m bench.model"
    assert model.floor_per_op(cell, floor, {}) == old["floor_per_op"], "rerun python -m bench.model"


def _committed():
    if not COMMITTED.exists():
        pytest.skip("bench/results/model_sm90.json not generated (python -m bench.model)")
    return json.loads(COMMITTED.read_text())


def test_committed_table_covers_every_cell():
    data = _committed()
    have = {(r["kernel"], r["dtype"], r["R"]) for r in data["records"]}
    want = {(c["kernel"], c["dtype"], c["R"]) for c in model.cells()}
    assert want <= have
    for r in data["records"]:
        parallel = r["op"] in ("add_safe", "sub_safe", "add_fast", "sub_fast", "mul_truncated", "SafeAdd",
                               "FastAdd", "TruncMul") or (r["op"].startswith("newton_") and r["R"] <= 4)
        # the one exception: since the operand's positional check, this kernel's code reaches the
        # double square root's slow-path subroutine (a CALL) on a path the walker follows; said in the
        # table as not modeled until the walker skips that subroutine
        parallel = parallel and r["kernel"] != "expansions::newton_sqrt<double, 4, 4, true, 2, 3, 4>"
        if parallel:
            assert "not_modeled" not in r, (r["kernel"], r.get("not_modeled"))
            assert r["floor_total"] > 0 and r["over_floor"] == pytest.approx(r["total_per_op"] / r["floor_total"])
        if "not_modeled" not in r:
            assert set(r["bound"]) == set(model.DEVICES)
            assert all(b["mops"] > 0 for b in r["bound"].values())
    for key in ("nvrtc", "nvdisasm", "date", "commit", "command"):
        assert data["meta"][key]


#: Cells recomputed by the staleness check: a straight-line kernel, the fast addition's unrolled
#: data-dependent loop, the multiplication's nested loops, library kernels (grid-stride loop), one of them
#: renormalizing, and a Newton kernel.
STALENESS = [("bench::best<bench::SafeAdd, double, 2>", "float64", 2),
             ("bench::best<bench::FastAdd, float, 4>", "float32", 4),
             ("bench::best<bench::TruncMul, double, 3>", "float64", 3),
             ("expansions::add_safe<double, 4, 4, 4, false>", "float64", 4),
             ("expansions::add_fast<float, 4, 4, 4, true>", "float32", 4),
             ("expansions::newton_div<float, 2, 2, 2, true, 2>", "float32", 2),
             ("bench::best_dw<expansions::DwAddAccurate, double>", "float64", 2)]


def _same(new, old, where=""):
    """Records equal field by field, floats to 1e-12 relative."""
    if isinstance(old, dict):
        assert isinstance(new, dict) and set(new) == set(old), (where, sorted(set(new) ^ set(old)))
        for k in old:
            _same(new[k], old[k], f"{where}.{k}")
    elif isinstance(old, float):
        assert new == pytest.approx(old, rel=1e-12), where
    else:
        assert new == old, where


@pytest.mark.parametrize("kernel,dtype,R", STALENESS)
def test_committed_table_is_current(kernel, dtype, R):
    _tools_or_skip()
    data = _committed()
    if (data["meta"]["nvrtc"], data["meta"]["nvdisasm"]) != (sass.nvrtc_version(), sass.nvdisasm_version()):
        pytest.skip(f"the table was made with NVRTC {data['meta']['nvrtc']} / nvdisasm {data['meta']['nvdisasm']}, "
                    f"this machine has {sass.nvrtc_version()} / {sass.nvdisasm_version()}")
    old = next(r for r in data["records"] if (r["kernel"], r["dtype"], r["R"]) == (kernel, dtype, R))
    (new,) = [r for r in model.run((R,), (dtype,), only=kernel, progress=False) if r["kernel"] == kernel]
    assert "not_modeled" not in new
    _same(json.loads(json.dumps(new)), old, "bench/results/model_sm90 is stale (rerun python -m bench.model): ")


def test_paper_tables_show_the_committed_bound():
    data = _committed()
    bounds = collange2016.model_bounds()
    rec = next(r for r in data["records"] if r["kernel"] == "bench::best<bench::SafeAdd, double, 4>")
    assert bounds[("I", 4, "safe")] == rec["bound"]["H100 SXM"]["mops"]
    algs = collange2016.ALGORITHMS
    records = [{"table": t, "R": R, "algorithm": a, "paper_mops_k40": None}
               for t, (op, _) in collange2016.TABLES.items() for R in collange2016.RS for a in algs[op]]
    text = collange2016.markdown(records, "test")
    assert text.count("(model bound, H100 SXM)") == len(collange2016.ALGORITHMS["add"]) + len(
        collange2016.ALGORITHMS["mul"])


def test_the_floor_is_below_the_counted_instructions():
    """The floor (the algorithm's own FP operations, shuffles, votes) never exceeds what the compiled
    kernel issues of each class: the kernel contains its algorithm (2 % for the sampled walks), and
    the renormalizing instances' floor exceeds the raw operation's."""
    data = _committed()
    checked = 0
    for r in data["records"]:
        if "floor_per_op" not in r:
            continue
        for c in ("fp64", "fp32", "shfl", "vote"):
            assert r["floor_per_op"][c] <= r["instructions_per_op"][c] * 1.02 + 1e-9, (r["kernel"], c)
        checked += 1
    assert checked >= 100
    by = {r["kernel"]: r for r in data["records"] if "floor_total" in r}
    for k, r in by.items():
        if k.endswith(", true>") and k.replace(", true>", ", false>") in by:
            assert r["floor_total"] > by[k.replace(", true>", ", false>")]["floor_total"], k


@pytest.mark.parametrize("R", [2, 3, 8])
def test_safe_addition_floor_counts_algorithm_1(R):
    """Algorithm 1 on R + R terms: 2Sum(x_0, y_0), 2(R - 1) insertions (a term to lane 0, the errors up,
    a 2Sum), R - 2 zero steps (a shift, a 2Sum), a shift and an addition; per warp, for G groups."""
    x, y = random_terms((64,), R, "float64", seed=1), random_terms((64,), R, "float64", seed=2)
    G = 32 // group_width(R)
    floor: dict = {}
    model.vote_sequences("add_safe", "float64", R, best=False, floor=floor)
    fp = 6 + 12 * (R - 1) + 6 * (R - 2) + 1
    shfl = 4 * (R - 1) + (R - 2) + 1
    assert floor["fp"] / floor["warp_iterations"] == fp and floor["shfl"] / floor["warp_iterations"] == shfl
    out, votes = model.record("add_safe", x, y, R)
    np.testing.assert_array_equal(out, K.add_safe(x, y, R))
    assert votes.floor["fp"].tolist() == [fp] * (64 // G) and votes.floor["shfl"].tolist() == [shfl] * (64 // G)
    cell = {"mapping": "group", "dtype": "float64", "per_warp_iteration": G}
    per = model.floor_per_op(cell, floor, {})
    assert per["fp64"] == fp / G and per["shfl"] == 2 * shfl / G and per["vote"] == 0


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_needs_sort_is_the_sorting_networks_order(dtype):
    """The twin of warp_needs_sort's predicate: a group needs the sort exactly when the stable sort by decreasing
    magnitude (the twin's argsort, NaNs last) would move a term."""
    rng = np.random.default_rng(5)
    t = random_terms((400,), 6, dtype, seed=7)
    t[::3] = np.take_along_axis(t[::3], rng.permuted(np.tile(np.arange(6), (len(t[::3]), 1)), axis=1), 1)
    t[::7, 2] = t[::7, 1]  # ties keep their order
    t[::11, 4] = np.nan
    t[5::13] = 0.0
    order = np.argsort(-np.abs(t), axis=1, kind="stable")
    np.testing.assert_array_equal(K.needs_sort(t), (order != np.arange(6)).any(axis=1))
    assert K.needs_sort(t).any() and not K.needs_sort(t).all()


# ---------------------------------------------------------------------------------------------
# R = 2: the double-word kernels (issue 13, item 4)

TWO_SUM, FAST_TWO_SUM, TWO_PROD = 6, 3, 2  # Knuth's 2Sum, Dekker's Fast2Sum, 2Prod with the FMA

#: The algorithms' operations, derived from dw.cuh here (independently of model.DW_OPS): additions,
#: subtractions, products, FMAs and comparisons.
DW_ADD_MUL_OPS = {
    "dw_add_accurate": 2 * TWO_SUM + 1 + FAST_TWO_SUM + 1 + FAST_TWO_SUM,  # JMP Algorithm 6
    "dw_add_sloppy": TWO_SUM + 2 + FAST_TWO_SUM,  # Algorithm 5
    "qd_add_ieee": 2 * TWO_SUM + 1 + FAST_TWO_SUM + 1 + FAST_TWO_SUM,
    "qd_add_sloppy": TWO_SUM + 2 + FAST_TWO_SUM,
    "dg_add22": 1 + 2 * 4 + 1 + 6,  # r, both branches, the |a| >= |b| compare, Add12
    "dw_times_dw1": TWO_PROD + 4 + FAST_TWO_SUM,  # Algorithm 10
    "dw_times_dw2": TWO_PROD + 3 + FAST_TWO_SUM,  # Algorithm 11
    "dw_times_dw3": TWO_PROD + 4 + FAST_TWO_SUM,  # Algorithm 12
    "dg_mul22": (1 + 2 * 4 + 3 * 2 + 2) + 4 + 6,  # Mul12 (product, two splits, three errors, low), t3, Add12
    "ww_mul": TWO_PROD + 3 + FAST_TWO_SUM,
}
#: Operations the benchmark chain computes once for two operations (see model.DW_NOTES).
DW_SHARED = {"dg_mul22": 2}


def test_dw_ops_table_matches_the_derivation():
    from expansions.dispatch import R2_METHODS

    names = {n for ns in R2_METHODS.values() for n in ns}
    assert set(model.DW_OPS) == names
    for name, n in DW_ADD_MUL_OPS.items():
        assert model.DW_OPS[name] == {"fp": n, "div": 0, "sqrt": 0}, name
    assert {c["algorithm"] for c in model.cells((2,), ("float64",)) if c.get("double_word")} == names
    assert not any(c.get("double_word") for c in model.cells((3, 4), ("float64",)))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_dw_kernels_issue_exactly_the_algorithms_operations(dtype):
    """Every R = 2 method's benchmark kernel compiles and is modeled; for the additions and products the
    FP instructions per operation are the algorithm's operations (the chain has no harness and hoists
    nothing), in the dtype's pipe only, and the loop adds at most 2.5 other instructions per operation."""
    _tools_or_skip()
    cells = [c for c in model.cells((2,), (dtype,)) if c.get("double_word")]
    funcs = sass.sass(gpu._source(), [c["kernel"] for c in cells])
    fp, other = ("fp64", "fp32") if dtype == "float64" else ("fp32", "fp64")
    for c in cells:
        rec = model.model_cell(c, funcs[c["kernel"]], {})
        assert "not_modeled" not in rec, (c["kernel"], rec.get("not_modeled"))
        per = {k: v * 32 for k, v in rec["instructions_per_op"].items()}  # per thread and operation
        assert rec["bound_tops"]["H100 SXM"] > 0
        name = c["algorithm"]
        if name not in DW_ADD_MUL_OPS:
            assert per[fp] > model.DW_OPS[name]["fp"], name  # + the IEEE division's / square root's sequences
            continue
        assert per[fp] == DW_ADD_MUL_OPS[name] - DW_SHARED.get(name, 0), (name, per)
        assert per[other] == 0 and per["shfl"] == per["vote"] == per["memory"] == per["local"] == 0, name
        assert per["int"] + per["branch"] <= 2.5, (name, per)  # the loop counter and branch (+ a move)


def test_dw_defaults_meet_the_goal_in_the_committed_table():
    """The section is there; the defaults' bounds follow from their FP64 counts (FP64 pipe: 64 per clock
    per SM) and meet issue 13's goal (0.8 Tops/s addition, 1.5 multiplication, H100 SXM)."""
    data = _committed()
    md = COMMITTED.with_suffix(".md").read_text()
    assert "## R = 2: double-word kernels beside CCCL fpmp" in md
    assert data["meta"]["fpmp"]["h100_equivalent_tops"] == {"add": 0.73, "mul": 1.4}
    d = model.DEVICES["H100 SXM"]
    for op, name in (("add", "dw_add_accurate"), ("mul", "dw_times_dw1")):
        r = next(r for r in data["records"] if r.get("algorithm") == name and r["dtype"] == "float64")
        assert r["default"] and r["operation"] == op
        n = DW_ADD_MUL_OPS[name]
        assert r["fp_per_op"] == n and r["bound"]["H100 SXM"]["binding"] == "fp64"
        assert r["bound_tops"]["H100 SXM"] == pytest.approx(64 / n * d["sms"] * d["clock_hz"] / 1e12)
        assert r["meets_r2_goal"] is (r["bound_tops"]["H100 SXM"] >= r["goal_h100_tops"]) is True
        assert f"| {op} | **{name}** (default) |" in md


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_dw_benchmark_chain_stays_finite(dtype):
    """bench.dw_gpu's inputs are double-words (hi = RN(hi + lo)), and the benchmark's chain of K = 16
    operations (a = F(b, a); b = F(a, b), as bench::best_dw runs it), run by the CPU twins, stays
    finite for every R = 2 method: the GPU timing sees no overflow or special-operand slow path."""
    from bench import dw_gpu
    from expansions.dw import ALGORITHMS
    from expansions.dw import cpu as twins

    for _, name in dw_gpu.METHODS:
        x, y = dw_gpu.inputs(name, 256, dtype)
        for v in (x, y):
            assert v.dtype == np.dtype(dtype) and (v[:, 0] + v[:, 1] == v[:, 0]).all(), name
        f = getattr(twins, name)
        a, b = (x[:, 0], x[:, 1]), (y[:, 0], y[:, 1])
        with np.errstate(all="ignore"):
            for _ in range(16 // 2):
                if ALGORITHMS[name].operands == ("dw",):
                    a = f(*f(*a))
                    b = a
                else:
                    a = f(*b, *a)
                    b = f(*a, *b)
        assert np.isfinite(b[0]).all() and np.isfinite(b[1]).all(), name


def test_dw_gpu_puts_the_committed_bound_beside_the_measurement(tmp_path, monkeypatch):
    """The runbook's R = 2 measurement (bench.dw_gpu, GPU-only) with its timing replaced: each record gets
    the committed model bound of its cell, for the device the run names."""
    from bench import dw_gpu
    from expansions import backends, cuda

    data = _committed()
    monkeypatch.setattr(cuda, "available", lambda: True)
    monkeypatch.setattr(backends, "gpu_environment", lambda: {"device": "stand-in"})
    monkeypatch.setattr(dw_gpu, "measure", lambda name, dtype, quick=False: {
        "name": name, "dtype": dtype, "mops": 1000.0, "device": "NVIDIA H200"})
    assert dw_gpu.main(["--out", str(tmp_path), "--quick"]) == 0
    rows = json.loads((tmp_path / "r2_measured.json").read_text())["records"]
    assert len(rows) == 2 * len(dw_gpu.METHODS)
    kernel = dw_gpu.name_expression("dw_add_accurate", "float64")
    want = next(r for r in data["records"] if r["kernel"] == kernel and r["dtype"] == "float64")["bound"]["H200"]
    got = next(r for r in rows if r["name"] == "dw_add_accurate" and r["dtype"] == "float64")
    assert got["model_device"] == "H200" and got["measured_over_bound"] == pytest.approx(1000.0 / want["mops"])
    assert "dw_add_accurate" in (tmp_path / "r2_measured.md").read_text()
