"""bench/first_calls.py: each first call in a fresh process with an empty numba cache, against the
issue's goals, with the raw output kept."""

from __future__ import annotations

import json

from bench import first_calls as F


def test_a_fresh_import_is_measured_and_written(tmp_path):
    assert F.main(["--only", "import", "--out", str(tmp_path)]) == 0
    (md,) = tmp_path.glob("first_calls_*.md")
    data = json.loads(md.with_suffix(".json").read_text())
    (row,) = data["rows"]
    assert row["name"] == "import" and row["returncode"] == 0 and row["wall"] > 0 and row["compiles"] == 0
    log = md.with_suffix(".log").read_text()
    assert "$ import: import expansions" in log and '"wall"' in log
    assert "| `import expansions` | — |" in md.read_text() and "no goal" in md.read_text()


def test_the_goals_are_judged_on_wall_seconds():
    rows = [{"name": n, "kind": k, "call": n, "setup": "", "returncode": 0, "wall": w, "cpu": 0.1, "compiles": 3,
             "cores": 2} for n, k, w in (("a", "arithmetic", 1.0), ("b", "arithmetic", 1.01), ("e", "elementary", 4.9),
                                         ("w", "warm", 61.0))]
    assert [F._met(r) for r in rows] == ["yes", "no", "yes", "no"]
    assert F._met(rows[0] | {"returncode": 1}) == "failed"
    header = {"command": "c", "environment": {"processor": "p", "commit": "x"}, "numba": "0", "cores": 2,
              "load_note": "quiet"}
    text = F.markdown(rows, header)
    assert "| `w` | — | 61.00 | 0.10 | 3 | <= 60 s on 2 cores | no |" in text
    assert "Goals met: 2 of 4" in text
