"""The main job's command line (paper_repro/__main__.py): its modes, recorded in every file it writes,
and the time of each part."""

from __future__ import annotations

import json

import pytest

import paper_repro.__main__ as main
from paper_repro import collange2016 as C


def run(tmp_path, monkeypatch, *args):
    """The job with every part made tiny: R = 2 only, a few cases, no seed."""
    tiny = {"tables_quick": True, "verify_samples": 20, "dw": (64, 0), "seeds": (), "seeds_quick": True}
    monkeypatch.setattr(main, "MODES", {m: tiny for m in main.MODES})
    monkeypatch.setattr(main, "VERIFY_TERMS", (2,))
    status = main.main([*args, "--skip", "tables", "--out", str(tmp_path), "--no-progress", "--backend", "cpu"])
    return status, json.loads((tmp_path / "results.json").read_text())


@pytest.mark.parametrize("args, mode", [((), "default"), (("--full",), "full"), (("--quick",), "quick")])
def test_every_file_names_its_mode(tmp_path, monkeypatch, args, mode):
    status, res = run(tmp_path, monkeypatch, *args)
    assert status == 0
    assert res["mode"] == mode and res["quick"] == (mode == "quick")
    assert set(res["part_seconds"]) == {"verify", "dw"} and all(s >= 0 for s in res["part_seconds"].values())
    tables = (tmp_path / "tables.md").read_text()
    assert f"mode **{mode}**" in tables and "## Time of each part" in tables
    for name in ("verification.md", "verification.json", "dw_verification.md", "dw_verification.json"):
        assert f"mode {mode}" in (tmp_path / name).read_text(), name


def test_modes_are_exclusive(tmp_path):
    with pytest.raises(SystemExit):
        main.main(["--quick", "--full", "--out", str(tmp_path)])


def test_the_default_is_small_on_a_cpu_and_full_on_a_gpu():
    ns = lambda **kw: type("A", (), {"quick": False, "full": False, **kw})  # noqa: E731
    assert main._mode(ns(), "cpu") == "default"
    assert main._mode(ns(), "cuda") == "full"
    assert main._mode(ns(quick=True), "cuda") == "quick"
    assert main._mode(ns(full=True), "cpu") == "full"
    default, full = main.MODES["default"], main.MODES["full"]
    assert default["verify_samples"] < full["verify_samples"] and len(default["seeds"]) == 1
    assert full["seeds"] == main.SEED_MODULES and not full["tables_quick"] and not full["seeds_quick"]


def test_the_guide_states_each_mode_as_it_is():
    """docs/guide/start.md's table of the modes says what MODES holds."""
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "guide" / "start.md").read_text()
    rows = {line.split("|")[1].strip(): line for line in text.splitlines() if line.startswith("| ")}
    for mode, label in (("default", "default (CPU)"), ("full", "`--full` (and the default on a GPU)"),
                        ("quick", "`--quick` (a smoke test, CI)")):
        plan, row = main.MODES[mode], rows[label]
        samples = plan["verify_samples"]
        assert (f"{samples} cases per row" in row) or (samples == 10000 and "10^4 cases per row" in row), row
        assert f"{plan['dw'][0]} cases, {plan['dw'][1]} rounds" in row, row
        quick = plan["tables_quick"]
        tables = (f"{C.CALL_SECONDS[quick] * 1000:.0f} ms a call, at most 2^{C.BACKEND_TERMS[quick].bit_length() - 1} "
                  f"terms per operand (twins: {C.TWIN_EXPANSIONS[quick]} expansions), {C.REPEATS[quick]} repeats")
        assert tables in row, row
