"""Compile time of the block engine's loop at several commits, side by side on one machine.

    python -m bench.engine_compile COMMIT [COMMIT ...] [--rounds 2] [--name NAME]

Each commit is exported (``git archive``) into a temporary folder; a fresh process with an empty
numba cache (a temporary ``NUMBA_CACHE_DIR``) then makes the first call of the fused engine at
float64 (``expansions.engine.fused.add_safe(..., renormalize=True)``), which compiles the engine's one
loop with every operation (the additions, the multiplication, the renormalization, the Newton
reciprocal, division and square root).  Reported per commit: that call's wall seconds and the CPU
seconds of its process (all threads: steadier than the wall clock on a shared machine), the best of
``--rounds`` rounds, the commits alternating within a round.  Writes
``bench/results/engine_compile_<NAME>_<device>.{md,json,log}`` (the raw output of every process in
the log).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import load_note
from expansions.__main__ import device_slug

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"

_CHILD = r"""
import json, resource, time
import numpy as np
from expansions.engine import fused
x = np.full((20, 4), 1.5)
x[:, 1:] = 2.0**-30
t = time.perf_counter()
fused.add_safe(x, x, 4, renormalize=True)
wall = time.perf_counter() - t
ru = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "file": fused.__file__}))
"""


def measure(tree: Path) -> tuple[dict, str]:
    """The first call's seconds in a fresh process on the checkout ``tree`` with an empty cache."""
    with tempfile.TemporaryDirectory(prefix="engine-compile-cache-") as cache:
        env = dict(os.environ, PYTHONPATH=str(tree), NUMBA_CACHE_DIR=cache)
        p = subprocess.run([sys.executable, "-c", _CHILD], env=env, cwd=tree, capture_output=True, text=True,
                           check=True)
    return json.loads(p.stdout.strip().splitlines()[-1]), p.stdout + p.stderr


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("commits", nargs="+")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--name", default="compare")
    args = ap.parse_args()
    best: dict = {}
    log = []
    load = {"start": list(os.getloadavg())}
    with tempfile.TemporaryDirectory(prefix="engine-compile-") as tmp:
        trees = {}
        for c in args.commits:
            trees[c] = Path(tmp) / c
            trees[c].mkdir()
            archive = subprocess.run(["git", "archive", c], cwd=ROOT, capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(trees[c])], input=archive, check=True)
        for r in range(args.rounds):
            for c in args.commits:
                res, raw = measure(trees[c])
                log.append(f"round {r + 1} {c}: {raw.strip()}")
                print(log[-1], flush=True)
                b = best.setdefault(c, {"wall_s": float("inf"), "cpu_s": float("inf")})
                b["wall_s"] = min(b["wall_s"], res["wall_s"])
                b["cpu_s"] = min(b["cpu_s"], res["cpu_s"])
    load["end"] = list(os.getloadavg())
    stem = RESULTS / f"engine_compile_{args.name}_{device_slug()}"
    when = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    lines = [f"# Compile time of the engine's loop (float64, empty numba cache): {args.name}", "",
             f"`python -m bench.engine_compile {' '.join(sys.argv[1:])}`, {when}; "
             f"{load_note(load, os.cpu_count())}", "",
             "Best of the rounds; CPU: the process's user + system seconds (all threads).", "",
             "| commit | first call wall (s) | process CPU (s) |", "|---|---|---|"]
    for c in args.commits:
        lines.append(f"| {c} | {best[c]['wall_s']:.1f} | {best[c]['cpu_s']:.1f} |")
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    record = {"argv": sys.argv[1:], "when": when, "load": load, "best": best}
    stem.with_suffix(".json").write_text(json.dumps(record, indent=1))
    stem.with_suffix(".log").write_text("\n".join(log) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
