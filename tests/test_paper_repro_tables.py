"""Tables I-IV of the main job on the CPU (paper_repro/collange2016.py): measured on the default CPU
backend (what users run), with the twins' figures in columns of their own, each record naming its
backend; the plot's four panels."""

from __future__ import annotations

import time

import numpy as np
import pytest

from expansions import backends, engine
from expansions.generate import random_terms
from paper_repro import collange2016 as C

BEST = [(t, op) for t, (op, scenario) in C.TABLES.items() if scenario == "best"]


@pytest.mark.skipif(not engine.available(), reason="the compiled engine needs numba")
@pytest.mark.parametrize("R", C.RS)
def test_the_backend_runs_the_twins_algorithm(R):
    """For every algorithm of the best-case tables, the function timed on the engine gives the bits of
    the twin timed as the specification (so both columns measure the same algorithm)."""
    x, y = (random_terms((300,), R, "float64", seed=R + k) for k in (0, 1))
    compared = 0
    for _, op in BEST:
        for a in C.ALGORITHMS[op]:
            ours, spec = C.cpu_function(op, a, R, backends.engine_backend()), C.cpu_function(op, a, R)
            assert (ours is None) == (spec is None), (op, a, R)
            if ours is not None:
                np.testing.assert_array_equal(ours(x, y).view(np.uint64), spec(x, y).view(np.uint64),
                                              err_msg=f"{op} {a}")
                compared += 1
    assert compared >= 5


def test_the_backend_gets_enough_expansions_for_its_call_time():
    x = y = np.zeros((10 * C.DISTINCT, 2))
    assert C._count(lambda a, b: None, x, y, 0.02) == len(x)  # fast: every expansion there is
    assert C._count(lambda a, b: time.sleep(0.03), x, y, 0.02) == C.DISTINCT  # slow: the fewest
    count = C._count(lambda a, b: time.sleep(len(a) * 2e-6), x, y, 0.04)  # 8 ms on DISTINCT: 5 times as many
    assert 2 * C.DISTINCT < count < 7 * C.DISTINCT, count


def _tiny(monkeypatch):
    monkeypatch.setattr(C, "RS", (2, 4))
    monkeypatch.setattr(C, "BACKEND_TERMS", {True: 512, False: 512})
    monkeypatch.setattr(C, "TWIN_EXPANSIONS", {True: 64, False: 64})


@pytest.mark.parametrize("choice", ["engine", "twins"])
def test_each_figure_names_its_backend(monkeypatch, choice):
    if choice == "engine" and not engine.available():
        pytest.skip("the compiled engine needs numba")
    _tiny(monkeypatch)
    monkeypatch.setattr(backends, "_cpu_state", {})
    backends.set_cpu_backend(choice)
    try:
        records = C.measure(True, "cpu", progress=False)
    finally:
        monkeypatch.setattr(backends, "_cpu_state", {})
    best = [r for r in records if r["scenario"] == "best" and r.get("mops")]
    assert len(best) == sum(len(C.ALGORITHMS[op]) for _, op in BEST) * 2
    for r in best:
        assert r["backend"] == choice and r["expansions"] == 512 // r["R"]
        if choice == "engine":
            assert r["backend_label"].startswith("engine, ") and r["spec_backend"] == "twins"
            assert r["spec_expansions"] == 64 and r["spec_mops"] > 0
        else:
            assert r["backend_label"] == C.SPECIFICATION and "spec_mops" not in r
    assert not any(r.get("mops") for r in records if r["scenario"] != "best")
    text = C.markdown(records, "CPU test")
    ours = f"Safe (Alg. 1) (CPU test, {best[0]['backend_label']})"
    assert f"| R | {ours} | Safe (Alg. 1) (K40, paper) |" in text
    assert (f"Safe (Alg. 1) ({C.SPECIFICATION}) |" in text) == (choice == "engine")


def test_the_plot_has_a_panel_per_table(tmp_path, monkeypatch):
    """Four log-scale panels (Tables I-IV); in each, one colour per algorithm and one line style per
    source: ours solid, the K40 dashed, the twins dash-dotted (the best case only)."""
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    figures = []
    monkeypatch.setattr(plt, "close", figures.append)
    measured = {"mops": 3.0, "spec_mops": 0.1, "backend_label": "engine, 2 threads"}
    records = [{"table": t, "operation": op, "scenario": sc, "R": R, "algorithm": a, "paper_mops_k40": 10.0 / R,
                **(measured if sc == "best" else {})}
               for t, (op, sc) in C.TABLES.items() for R in C.RS for a in C.ALGORITHMS[op]]
    assert C.plot(records, tmp_path / "mops_vs_R.png", "CPU test").stat().st_size > 0
    (fig,) = figures
    axes = {ax.get_title().split(":")[0]: ax for ax in fig.axes}
    assert set(axes) == {f"Table {t}" for t in C.TABLES}
    for table, (op, scenario) in C.TABLES.items():
        ax = axes[f"Table {table}"]
        assert ax.get_yscale() == "log" and ax.get_xscale() == "log"
        styles = {}
        for line in ax.get_lines():
            styles.setdefault(line.get_linestyle(), set()).add(line.get_color())
        assert len(styles["--"]) == len(C.ALGORITHMS[op])  # a colour per algorithm
        assert ("-" in styles and "-." in styles) == (scenario == "best")
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend[:2] == ["CPU test, engine, 2 threads", "Tesla K40 (paper)"] and C.SPECIFICATION in legend
