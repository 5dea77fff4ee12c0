"""The public-API benchmark against QD and MPFR (bench/native.py, bench/native/peers.cpp): the goals'
verdicts on synthetic tables, the exact reading of the peers' printed results, the sanity check, the
results writer, and (where g++, QD and MPFR are installed) the program built and run on tiny sizes,
its results agreeing with the library's."""

import json
import math
import subprocess
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from bench import native as N

ALL_OPS = list(N.OPS)


# ---------------------------------------------------------------------------------------------
# the goals as data, and their verdicts


def test_goal_rows_are_the_issues_table():
    rows = N.goal_rows(N.TERMS, ALL_OPS)
    got = {(g["R"], g["op"], g["peer"]): g["required"] for g in rows}
    assert len(rows) == len(got) == 27
    assert got[(2, "add", "qd")] == got[(2, "mul", "qd")] == 0.8
    assert got[(2, "div", "qd")] == got[(2, "sqrt", "qd")] == 0.5
    assert got[(2, "exp", "qd")] == 0.2 and got[(2, "sin", "mpfr")] == 2.0
    assert got[(4, "mul", "qd")] == 1.0 and got[(4, "sqrt", "qd")] == 0.5 and got[(4, "log", "mpfr")] == 1.0
    assert got[(8, "div", "mpfr")] == got[(16, "sqrt", "mpfr")] == 1.0
    assert got[(32, "add", "mpfr")] == got[(32, "mul", "mpfr")] == 0.5
    assert (32, "div", "mpfr") not in got and (3, "add", "mpfr") not in got and (2, "sub", "qd") not in got
    # only the measured R and operations
    assert {(g["R"], g["op"]) for g in N.goal_rows([4], ["add", "exp"])} == {(4, "add"), (4, "exp")}


def test_verdicts_met_missed_by_how_much_and_absent():
    mops = {(2, "add", "expansions"): 8.0, (2, "add", "qd"): 10.0,  # 0.8x: exactly met
            (2, "mul", "expansions"): 2.0, (2, "mul", "qd"): 10.0,  # 0.2x of 0.8x: missed by 4x
            (2, "exp", "expansions"): 1.0, (2, "exp", "mpfr"): 0.25,  # 4x of 2x: met
            (2, "exp", "qd"): 1.0,  # 1x of 0.2x: met by 5x
            (2, "div", "expansions"): 1.0}  # no peer
    goals = {(g["R"], g["op"], g["peer"]): g for g in
             N.evaluate_goals(mops, [2], ["add", "mul", "div", "exp"], {"qd": "QD is missing"})}
    add, mul, div = goals[(2, "add", "qd")], goals[(2, "mul", "qd")], goals[(2, "div", "qd")]
    assert add["status"] == "met" and add["ratio"] == pytest.approx(0.8) and add["factor"] == pytest.approx(1.0)
    assert mul["status"] == "missed" and mul["factor"] == pytest.approx(4.0)
    assert mul["text"] == "missed by 4x: 0.2x < 0.8x"
    assert div["status"] == "not measured" and div["ratio"] is None and "QD is missing" in div["text"]
    assert goals[(2, "exp", "mpfr")]["status"] == "met" and goals[(2, "exp", "mpfr")]["ratio"] == pytest.approx(4.0)
    assert goals[(2, "exp", "qd")]["factor"] == pytest.approx(5.0)
    assert (2, "log", "qd") not in goals  # log was not asked for


def test_scaling_goal_on_two_threads_only():
    cells = [{"R": 4, "op": "add", "n": 10**6, "threads": 2, "speedup": 1.9},
             {"R": 4, "op": "mul", "n": 10**6, "threads": 2, "speedup": 1.2},
             {"R": 4, "op": "div", "n": 10**6, "threads": 8, "speedup": 7.0}]
    add, mul, div = N.evaluate_scaling(cells)
    assert add["status"] == "met" and mul["status"] == "missed" and mul["factor"] == pytest.approx(1.5)
    assert div["status"] == "not measured" and "NUMBA_NUM_THREADS=2" in div["text"] and div["ratio"] == 7.0


# ---------------------------------------------------------------------------------------------
# exact values of the peers' printed results, and the sanity check


def test_exact_peer_values():
    assert N.exact_peer("mpfr", ["-18", 1]) == Fraction(-3, 2)  # -0x0.18 * 16
    assert N.exact_peer("mpfr", ["1000", 0]) == Fraction(1, 16)
    assert N.exact_peer("mpfr", ["8" + "0" * 30, -3]) == Fraction(1, 2 * 16**3)
    assert math.isnan(N.exact_peer("mpfr", ["@NaN@", 0])) and N.exact_peer("mpfr", ["-@Inf@", 0]) == -math.inf
    hi, lo = 1.0 + 2.0**-52, 2.0**-60
    assert N.exact_peer("qd", [hi.hex(), lo.hex()]) == Fraction(hi) + Fraction(lo)
    assert N.exact_terms([1.0, 2.0**-80]) == 1 + Fraction(1, 2**80)
    assert N.relative_difference(Fraction(1), Fraction(1)) is None
    assert N.relative_difference(1 + Fraction(1, 2**100), Fraction(1)) == pytest.approx(-100)
    assert N.relative_difference(math.inf, Fraction(1)) == math.inf
    assert N.relative_difference(math.nan, math.nan) is None


def _mpfr_digits(v: Fraction, digits: int = 60):
    """v as mpfr_get_str base 16 prints it (0.digits * 16^e), exact for the dyadic v used here."""
    e = 0
    while abs(v) >= 16**e:
        e += 1
    m = abs(v) * Fraction(16) ** (digits - e)
    assert m.denominator == 1
    return [("-" if v < 0 else "") + format(m.numerator, "x").rjust(digits, "0"), e]


def test_sanity_flags_a_disagreement():
    lib = np.array([[1.5, 2.0**-60], [-3.0, 2.0**-55]])
    exact = [Fraction(1.5) + Fraction(2.0**-60), Fraction(-3) + Fraction(2.0**-55)]
    same = {"R": 2, "op": "add", "lib": "mpfr", "check": [_mpfr_digits(v) for v in exact]}
    s = N.sanity(same, lib)
    assert s["ok"] and s["agreement_bits"] is None and s["elements"] == 2
    close = dict(same, check=[_mpfr_digits(exact[0] + Fraction(1, 2**110)), _mpfr_digits(exact[1])])
    s = N.sanity(close, lib)
    assert s["ok"] and 109 < s["agreement_bits"] < 111
    off = dict(same, check=[_mpfr_digits(exact[0]), _mpfr_digits(exact[1] + Fraction(1, 2**60))])
    s = N.sanity(off, lib)  # 2^-60 / 3: about 61.6 bits, fewer than 0.75 * 106
    assert not s["ok"] and 61 < s["agreement_bits"] < 62
    assert not N.sanity(dict(same, check=[]), lib)["ok"]  # nothing compared is no agreement


# ---------------------------------------------------------------------------------------------
# the results writer on a synthetic run


def _synthetic():
    one = [{"R": 2, "op": "add", "executor": "expansions", "threads": 1, "n": 1000, "mops": 5.0,
            "seconds": [2e-4, 2.2e-4], "sizing_seconds": [2e-4]},
           {"R": 2, "op": "exp", "executor": "expansions", "threads": 1, "n": 400, "mops": 0.03,
            "seconds": [0.013, 0.014], "sizing_seconds": [0.01]}]
    peers = [{"lib": "qd", "R": 2, "op": "add", "n": 1000, "threads": 1, "mops": 200.0, "seconds": [5e-6, 5e-6],
              "sizing_seconds": [5e-6], "check": []},
             {"lib": "mpfr", "R": 2, "op": "exp", "n": 1000, "threads": 1, "mops": 0.25, "seconds": [4e-3, 4e-3],
              "sizing_seconds": [4e-3], "check": []}]
    mops = {(2, "add", "expansions"): 5.0, (2, "exp", "expansions"): 0.03, (2, "add", "qd"): 200.0,
            (2, "exp", "mpfr"): 0.25}
    allc = [{"R": 2, "op": "add", "n": 1000, "threads": 2, "mops_1t": 5.0, "mops_all": 9.5, "speedup": 1.9,
             "seconds_1t": [1], "seconds_all": [1], "sizing_seconds": [1]}]
    res = {"one_core": one, "peers": peers, "peers_all_cores": [], "all_cores": allc,
           "checks": [{"R": 2, "op": "add", "lib": "qd", "elements": 2, "max_log2_relative_difference": -105.0,
                       "agreement_bits": 105.0, "expected_bits": 79.5, "ok": True}],
           "notes": ["QD ieee add skipped: synthetic"], "threads": 2, "threading_layer": "omp",
           "peers_build": {"command": "g++ peers.cpp", "compiler": "g++ 12", "reasons": {},
                           "available": {"qd": True, "mpfr": True, "openmp": True}},
           "goals": N.evaluate_goals(mops, [2], ["add", "exp"]), "scaling": N.evaluate_scaling(allc)}
    meta = {"command": "python -m bench.native --synthetic", "date": "2026-01-01 00:00 UTC",
            "environment": {"machine": "x86_64", "commit": "abc", "python": "3.11"}, "versions": {"numba": "0"},
            "cpu": "a CPU", "cores": 2, "args": {"terms": [2], "ops": ["add", "exp"], "n": 1000, "repeats": 2,
                                                  "budget": 0.1, "check": 2, "note": "Before the engine work."},
            "load_before": "1", "load_after": "2", "spread_median": 0.05, "spread_max": 0.1}
    return res, meta


def test_markdown_tables_ratios_verdicts_and_explanations(tmp_path, monkeypatch):
    res, meta = _synthetic()
    expl = tmp_path / "explanations.json"
    expl.write_text(json.dumps({"_format": "x", "2 add qd": "measured: 400 instructions per element, scalar"}))
    monkeypatch.setattr(N, "EXPLANATIONS", expl)
    md = N.markdown(res, meta)
    assert "**Before the engine work.**" in md
    # one-core row: expansions, QD, QD ieee add, MPFR, ratios; the exp cell ran on 400 of 1000 elements
    assert "| 2 | 106 | add | 5 | 200 | - | - | 0.025 | - |" in md
    assert "| 2 | 106 | exp | 0.03 (400) | - | - | 0.25 | - | 0.12 |" in md
    assert "| 2 | add | >= 0.8x QD | 0.025x | missed by 32x: 0.025x < 0.8x | measured: 400 instructions per " \
           "element, scalar |" in md
    assert "| 2 | exp | >= 2x MPFR | 0.12x | missed by 16.7x: 0.12x < 2x | not yet measured |" in md
    assert "| 2 | exp | >= 0.2x QD | - | QD not measured |" in md
    assert "| 2 | add | >= 1.8x one core on 2 threads, 1000 elements | 1.9x | met: 1.9x >= 1.8x |  |" in md
    assert "1 met, 2 missed, 1 not measured" in md
    assert "| 2 | add | QD | 2 | 105 | 79.5 | yes |" in md
    assert "- Note: QD ieee add skipped: synthetic" in md
    assert "| 2 (106) | add | 5 | 200 | - |" in md and "| 2 (106) | exp | 0.03 | - | 0.25 |" in md


def test_main_writes_json_md_log(tmp_path, monkeypatch):
    res, _ = _synthetic()
    monkeypatch.setattr(N, "run", lambda args, log: (log("a raw line"), res)[1])
    none = tmp_path / "no_explanations.json"  # not the committed explanations: none yet
    none.write_text("{}")
    monkeypatch.setattr(N, "EXPLANATIONS", none)
    assert N.main(["--terms", "2", "--ops", "add,exp", "--out", str(tmp_path), "--note", "a note"]) == 0
    (md,) = tmp_path.glob("native_cpu-*.md")
    data = json.loads(md.with_suffix(".json").read_text())
    assert data["command"] == f"python -m bench.native --terms 2 --ops add,exp --out {tmp_path} --note 'a note'"
    assert data["args"]["terms"] == [2] and data["args"]["ops"] == ["add", "exp"] and data["args"]["n"] == 100_000
    assert {"cpu", "cores", "versions", "environment", "load_before", "goals", "scaling", "checks"} <= set(data)
    assert data["goals"][0]["status"] == "missed"
    log = md.with_suffix(".log").read_text()
    assert "a raw line" in log and log.startswith("$ python -m bench.native")
    assert "**a note**" in md.read_text()
    # the .md again from the .json, with an explanation filled in since
    expl = tmp_path / "explanations.json"
    expl.write_text(json.dumps({"2 add qd": "scalar code, 300 instructions per element"}))
    monkeypatch.setattr(N, "EXPLANATIONS", expl)
    before = md.read_text()
    assert N.main(["--render", str(md.with_suffix(".json"))]) == 0
    after = md.read_text()
    assert after != before and after.replace("scalar code, 300 instructions per element", "not yet measured") == before


def test_bad_options_are_refused(tmp_path):
    with pytest.raises(SystemExit):
        N.main(["--ops", "add,tan", "--out", str(tmp_path)])
    with pytest.raises(SystemExit):
        N.main(["--terms", "1", "--out", str(tmp_path)])


# ---------------------------------------------------------------------------------------------
# the program, built and run (g++, QD and MPFR installed: Debian's libqd-dev and libmpfr-dev)


def _missing():
    cxx, why = N.compiler()
    if cxx is None:
        return why
    return None


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    why = _missing()
    if why:
        pytest.skip(why)
    info = N.build(tmp_path_factory.mktemp("native_cache"))
    missing = {k: v for k, v in info["reasons"].items() if k in ("qd", "mpfr")}
    if missing:
        pytest.skip(f"QD or MPFR missing: {missing} (apt-get install libqd-dev libmpfr-dev)")
    return info


def test_operands_are_the_peers_values():
    x, y, p = N.operands(50, 4)
    t = x.terms
    # correctly rounded 4-term expansions: QD's normalized form, |x_{i+1}| <= ulp(x_i) / 2
    assert np.all(np.abs(t[:, 1:]) <= np.spacing(np.abs(t[:, :-1])) / 2)
    assert np.all(t[:, 3] != 0) and np.all((np.abs(t[:, 0]) >= 0.5) & (np.abs(t[:, 0]) < 4))
    assert np.array_equal(p.terms, np.where(t[:, :1] < 0, -t, t))
    x32 = N.operands(20, 32)[0].terms
    assert np.all(np.abs(x32[x32 != 0]) >= 2.0**-1022)


def test_program_agrees_with_the_library(built, tmp_path):
    """The program's results (QD at R = 2, 4; MPFR at R = 2, 3, 4) on tiny sizes, against the library's:
    every sanity check passes (QD's dd_real * and / fail it without QD_FMS: see peers.cpp)."""
    cache = Path(built["binary"]).parent.parent  # the fixture's build, found again by its hash
    args = ["--terms", "2,3,4", "--n", "200", "--repeats", "1", "--budget", "0.01", "--check", "3",
            "--no-all-cores", "--out", str(tmp_path), "--cache-dir", str(cache)]
    assert N.main(args) == 0
    data = json.loads(next(tmp_path.glob("native_cpu-*.json")).read_text())
    cells = {(c["R"], c["op"], c["lib"]) for c in data["peers"]}
    assert cells == ({(R, op, "mpfr") for R in (2, 3, 4) for op in N.OPS}
                     | {(R, op, "qd") for R in (2, 4) for op in N.OPS}
                     | {(R, op, "qd_ieee") for R in (2, 4) for op in ("add", "sub")})
    assert all(c["n"] == 200 and c["mops"] > 0 and len(c["seconds"]) == 1 for c in data["peers"])
    assert len(data["checks"]) == len(cells)
    bad = [c for c in data["checks"] if not c["ok"] or c["elements"] != 3]
    assert not bad, bad
    assert data["peers_build"]["available"] == {"qd": True, "mpfr": True, "openmp": True}
    assert data["peers_build"]["binary"] == built["binary"]
    assert built["libraries"]["qd_config"].endswith("QD_FMS defined")


def test_program_detects_a_wrong_result(built, tmp_path):
    """The sanity check on the program's real output fails when the library's result is perturbed in
    its second term (a relative change of about 2^-60 at R = 2)."""
    x, y, p = N.operands(20, 2)
    N.write_terms(tmp_path, x, y, p)
    (cell,) = N.run_peers(built["binary"], 2, tmp_path, 20, ["mpfr"], ["mul"], 1, 0.01, 4, 1, lambda s: None)
    lib = (x[:4] * y[:4]).terms
    assert N.sanity(cell, lib)["ok"]
    wrong = lib.copy()
    wrong[2, 1] += np.spacing(wrong[2, 0]) * 2.0**-8
    assert not N.sanity(cell, wrong)["ok"]


def test_a_missing_library_is_skipped_with_its_reason(built, tmp_path, monkeypatch):
    src, libs, hint = N.PROBES["qd"]
    monkeypatch.setitem(N.PROBES, "qd", (src.replace("qd/qd_real.h", "qd/no_such_header.h"), libs, hint))
    info = N.build(tmp_path)
    assert info["available"]["qd"] is False and info["available"]["mpfr"] is True
    assert "no_such_header" in info["reasons"]["qd"] and "libqd-dev" in info["reasons"]["qd"]
    assert "-DBENCH_QD" not in info["command"] and "qd_config" not in info["libraries"]
    x, y, p = N.operands(10, 2)
    N.write_terms(tmp_path, x, y, p)
    out = subprocess.run([info["binary"], "2", "10", str(tmp_path), "qd", "add", "1", "0.01", "0", "1"],
                         capture_output=True, text=True)
    assert out.returncode == 3 and "built without QD" in out.stderr


def test_no_compiler_skips_both_peers(monkeypatch, tmp_path):
    monkeypatch.setenv("CXX", "no-such-compiler-xyz")
    info = N.build(tmp_path)
    assert info["binary"] is None and "no-such-compiler-xyz" in info["reasons"]["qd"]
    assert info["reasons"]["mpfr"] == info["reasons"]["qd"]


def test_measure_sizes_cells_by_the_budget(monkeypatch):
    """The sizing rule on a model clock: a call on k elements takes ``cost(k)`` seconds."""

    def run(cost, n, repeats, budget):
        def make(k):
            f = lambda: None  # noqa: E731
            f.seconds = cost(k)
            return f
        monkeypatch.setattr(N, "_seconds", lambda f: f.seconds)
        return N.measure(make, n, repeats, budget)

    cell = run(lambda k: k * 2.0**-16, 10**6, 3, 2.0**-5)  # 2^-16 s an element: 64, 1024, 2048 elements
    assert cell["n"] == 2048 and cell["sizing_seconds"] == [2.0**-10, 2.0**-6, 2.0**-5]
    assert cell["seconds"] == [2.0**-5] * 3 and cell["mops"] == pytest.approx(2.0**16 / 1e6)
    fast = run(lambda k: k * 1e-9, 10**5, 2, 0.02)
    assert fast["n"] == 10**5 and len(fast["sizing_seconds"]) == 4  # 64, 1024, 16384, 100000
    slow = run(lambda k: 0.01, 10**5, 5, 0.004)  # 10 ms whatever the count: over twice the budget
    assert slow["n"] == 64 and len(slow["seconds"]) == 2  # 5 * 0.004 / 0.01 calls
    assert len(run(lambda k: 0.008, 10**5, 5, 0.004)["seconds"]) == 5  # twice the budget: all repeats
    assert len(run(lambda k: 1.0, 10**5, 5, 0.004)["seconds"]) == 1


def test_program_sizes_cells_by_the_budget(built, tmp_path):
    x, y, p = N.operands(5000, 16)
    N.write_terms(tmp_path, x, y, p)
    (small,) = N.run_peers(built["binary"], 16, tmp_path, 5000, ["mpfr"], ["sin"], 2, 1e-4, 0, 1, lambda s: None)
    (full,) = N.run_peers(built["binary"], 16, tmp_path, 5000, ["mpfr"], ["add"], 2, 10.0, 0, 1, lambda s: None)
    assert small["n"] == 64 and len(small["sizing_seconds"]) == 1 and len(small["seconds"]) == 1
    assert full["n"] == 5000 and len(full["sizing_seconds"]) == 3 and len(full["seconds"]) == 2


def test_program_on_several_threads_gives_the_same_results(built, tmp_path):
    """--peers-all-cores: the OpenMP loops compute what the one-thread loops compute."""
    x, y, p = N.operands(300, 4)
    N.write_terms(tmp_path, x, y, p)
    args = (built["binary"], 4, tmp_path, 300, ["qd", "mpfr"], ["mul", "exp"], 1, 10.0, 300)
    one = N.run_peers(*args, 1, lambda s: None)
    two = N.run_peers(*args, 2, lambda s: None)
    assert [(c["lib"], c["op"], c["threads"], c["n"]) for c in two] == \
        [(lib, op, 2, 300) for lib in ("qd", "mpfr") for op in ("mul", "exp")]
    assert [c["check"] for c in one] == [c["check"] for c in two] and len(one[0]["check"]) == 300


def test_readme_shows_the_committed_summary():
    """The README's CPU table is the committed results' summary, row for row (regenerating the
    results means copying their "Summary" table into the README, or into the docs page it moved to)."""
    root = Path(N.__file__).resolve().parent.parent
    results = root / "bench" / "results" / "native_cpu-x86_64.md"
    if not results.exists():
        pytest.skip("no committed results")
    lines = results.read_text().splitlines()
    rows, i = [], lines.index("## Summary: one core, Mop/s") + 2
    while lines[i].startswith("|"):
        rows.append(lines[i])
        i += 1
    docs = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    assert len(rows) >= 3
    assert any(all(r in d.read_text() for r in rows) for d in docs), "README's CPU table differs from " + str(results)
