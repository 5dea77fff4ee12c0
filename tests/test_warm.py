"""``python -m expansions warm`` (expansions/warm.py): its units, its command line, and a warmed cache
that the next process loads without compiling."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from expansions import backends, engine, warm
from expansions.__main__ import main

ROOT = Path(__file__).resolve().parents[1]

# A fresh process: runs a unit's calls and prints how many of numba's compilations (outermost
# "numba:compile" events, which numba fires only when it does not find the code in its cache) they made.
COUNT_COMPILES = """
import sys
from numba.core import event
from expansions import warm

class Compiles(event.Listener):
    depth = outermost = 0
    def on_start(self, ev):
        self.depth += 1
    def on_end(self, ev):
        self.depth -= 1
        self.outermost += self.depth == 0

listener = Compiles()
event.register("numba:compile", listener)
warm.warm_unit(sys.argv[1], (2,))
print(listener.outermost)
"""


def test_units_are_the_families_times_the_dtypes():
    assert warm.units(("arithmetic", "slices"), ("float64", "float32")) == [
        "arithmetic:float64", "arithmetic:float32", "slices:float64", "slices:float32"]
    assert warm.units() == [f"{f}:{d}" for f in warm.DEFAULT_FAMILIES for d in warm.DEFAULT_DTYPES]
    with pytest.raises(ValueError, match="unknown family"):
        warm.units(("arithmetics",))
    with pytest.raises(ValueError, match="unknown dtype"):
        warm.units(("arithmetic",), ("float16",))


@pytest.mark.skipif(not engine.available(), reason="the compiled engine needs numba")
def test_a_unit_runs_the_engine_and_restores_the_backend(monkeypatch):
    """Under ``EXPANSIONS_CPU=twins`` a unit still calls the engine (what it is for), then gives the
    process its backend back."""
    called = []
    real = backends.engine_backend()
    spy = dataclasses.replace(real, add_safe=lambda *a, **k: called.append(1) or real.add_safe(*a, **k))
    monkeypatch.setattr(backends, "engine_backend", lambda: spy)
    monkeypatch.setattr(backends, "_cpu_state", {})
    monkeypatch.setenv("EXPANSIONS_CPU", "twins")
    assert backends.cpu_backend().name == "cpu"
    try:
        unit, wall, cpu = warm.warm_unit("arithmetic:float64", (4,))
    finally:
        assert backends.cpu_backend().name == "cpu"
        monkeypatch.setattr(backends, "_cpu_state", {})
    assert unit == "arithmetic:float64" and wall > 0 and cpu > 0 and called


def test_without_the_engine_there_is_nothing_to_compile(monkeypatch, capsys):
    monkeypatch.setattr(backends, "cpu_backend_reason", lambda: "numba is missing")
    monkeypatch.setattr(warm, "warm", lambda *a, **k: pytest.fail("nothing should be compiled"))
    assert main(["warm", "--no-progress"]) == 0
    assert "nothing to compile" in capsys.readouterr().out


@pytest.mark.parametrize("args", [["--families", "nope"], ["--dtype", "float16"]])
def test_the_command_refuses_what_it_does_not_know(args, capsys):
    assert main(["warm", "--no-progress", *args]) == 2
    assert "unknown" in capsys.readouterr().err


@pytest.mark.slow  # two compilations of the slice products' steps: about 30 CPU seconds
@pytest.mark.skipif(not engine.available(), reason="the compiled engine needs numba")
def test_a_warmed_cache_is_loaded_without_compiling(tmp_path):
    """``warm`` fills an empty cache; a later process running the same calls compiles nothing, while
    the same calls on another empty cache do compile (so the count can see a compilation)."""
    env = os.environ | {"NUMBA_CACHE_DIR": str(tmp_path / "warm"), "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-m", "expansions", "warm", "--families", "slices", "--terms", "2",
                          "--no-progress"], env=env, capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    assert "slices:float64" in run.stdout and any((tmp_path / "warm").rglob("*.nbi"))
    counts = {}
    for cache in ("warm", "empty"):
        env["NUMBA_CACHE_DIR"] = str(tmp_path / cache)
        out = subprocess.run([sys.executable, "-c", COUNT_COMPILES, "slices:float64"], env=env, capture_output=True,
                             text=True, cwd=ROOT, check=True)
        counts[cache] = int(out.stdout.split()[-1])
    assert counts["warm"] == 0 and counts["empty"] > 0, counts
