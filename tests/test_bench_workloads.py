"""python -m bench.workloads: a tiny run writes its three files with every executor's figure or the
reason it is absent, the same first results as the library's (the sanity check), and the goals."""

from __future__ import annotations

import json

import pytest

from bench import workloads


def test_tiny_run(tmp_path):
    pytest.importorskip("numba")
    assert workloads.main(["--terms", "2", "--works", "sum,horner", "--n", "640", "--budget", "0.01",
                           "--out", str(tmp_path)]) == 0
    (js,) = tmp_path.glob("workloads_*.json")
    res = json.loads(js.read_text())
    assert [c["work"] for c in res["cells"]] == ["sum", "horner"]
    for c in res["cells"]:
        for name, rec in c["executors"].items():
            assert "ns" in rec or rec.get("skipped"), name
            if rec.get("check_difference") is not None:
                assert rec["check_difference"] < 1e-12, (c["work"], name)
        assert "expansions fused" in c["executors"] or c["work"] not in workloads.ELEMENTWISE
    text = (tmp_path / js.name.replace(".json", ".md")).read_text()
    assert "## Goals (one core)" in text and "R = 2 sum: >= 150 Mop/s" in text
    (small,) = res["small"]  # scalars, small arrays, mixed operands: every figure measured
    assert small["us"]["0-d +"] > 0 and small["us"]["mpmath 0-d *"] > 0 and len(small["ratio"]) == 10
    assert "## Scalars, small arrays and mixed operands" in text and "R = 2 mixed operands" in text


def test_goals_from_figures():
    cell = {"R": 2, "work": "dot", "executors": {"expansions": {"ns": 5.0}, "QD": {"ns": 4.0},
                                                 "python-flint": {"ns": 100.0}, "xprec": {"ns": 10.0}}}
    got = {g["goal"]: g["met"] for g in workloads.goals([cell])}
    assert got["R = 2 dot: >= 100 Mop/s"] is True  # 5 ns per element: 200 Mop/s
    assert got["R = 2 dot: >= 10x python-flint"] is True
    assert got["R = 2 dot: within 1.2x of QD's time"] is False  # 1.25x
    assert got["R = 2 dot: no slower than xprec"] is True
