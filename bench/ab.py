"""The public API's speed at two commits, side by side on one machine: an A/B comparison robust to a
noisy machine.

    python -m bench.ab --base COMMIT [--ops div,sqrt,mul] [--terms 3,4,8,16] [--rounds 3] [--name NAME]

The base commit is checked out into a temporary git worktree; the same measuring child (this file,
``--child``) then runs in fresh processes against the base and against this checkout, alternately,
``--rounds`` times each (so that a slow period of a shared machine hits both), each process timing
every (op, R) cell on one core (``numba.set_num_threads(1)``) as the minimum over ``--repeats`` calls
on ``--n`` expansions (the minimum: what the code costs when nothing else runs; the others are noise).
The child uses only the public API (``np.multiply``, ``np.divide``, ``np.add`` on expansions,
``ex.sqrt``, ``ex.exp``...), so it runs on any version.  Each cell's figure is the best of its rounds;
the ratio new/base and, per side, the cell's time in multiplications of the same R (its own run's
``mul``) are reported.  Writes ``bench/results/ab_<NAME>_cpu-<machine>.{md,json,log}`` (the raw
output of every child in the log).  Compile time is excluded (one untimed call first; the numba
caches are the checkouts' own).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np

import expansions as ex  # in a child: the checkout on PYTHONPATH (the base's worktree, or this one)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
OPS = ("mul", "div", "sqrt")


def child(ops, terms, n, repeats) -> dict:
    """Time every (op, R) cell in this process (the checkout on ``sys.path``): ``{"op R": seconds}``."""
    numba.set_num_threads(1)
    rng = np.random.default_rng(7)
    out = {"expansions": ex.__file__}
    for R in terms:
        x = ex.array(rng.uniform(-4, 4, n), terms=R) / 3.0  # full tails
        y = ex.array(rng.uniform(0.5, 4, n), terms=R) / 7.0
        a = abs(x)
        calls = {"mul": (np.multiply, x, y), "add": (np.add, x, y), "div": (np.divide, x, y), "sqrt": (ex.sqrt, a),
                 "exp": (ex.exp, y), "log": (ex.log, a), "log1p": (ex.log1p, x / 16.0)}
        for op in ops:
            fn, *operands = calls[op]

            def f(fn=fn, operands=operands):
                return fn(*operands)

            f()  # compiles (or loads the cache)
            best = float("inf")
            for _ in range(repeats):
                t0 = time.perf_counter()
                f()
                best = min(best, time.perf_counter() - t0)
            out[f"{op} {R}"] = best
    return out


def _run_child(checkout: Path, args, log) -> dict:
    env = dict(os.environ, PYTHONPATH=str(checkout), NUMBA_NUM_THREADS="1",
               NUMBA_CACHE_DIR=str(checkout / ".numba-cache-ab"))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--ops", args.ops, "--terms", args.terms,
           "--n", str(args.n), "--repeats", str(args.repeats)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=checkout, check=False)
    log.write(f"$ PYTHONPATH={checkout} {' '.join(cmd)}\n{r.stdout}{r.stderr}rc={r.returncode}\n")
    log.flush()
    if r.returncode:
        raise RuntimeError(f"the child failed in {checkout}:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def _commit(ref: str) -> str:
    r = subprocess.run(["git", "rev-parse", ref], cwd=ROOT, capture_output=True, text=True, check=True)
    return r.stdout.strip()


def markdown(rec: dict) -> str:
    lines = [f"# A/B: {rec['name']} (CPU {rec['machine']})", "",
             f"`{rec['command']}`, {rec['date']}: base {rec['base']}, new {rec['new']}"
             f"{' (with uncommitted changes)' if rec['dirty'] else ''}.", "",
             f"One core, {rec['n']} expansions per call, the minimum over {rec['repeats']} calls in each of "
             f"{rec['rounds']} alternating processes per side, the best of the rounds; load average "
             f"{rec['load_before']} before, {rec['load_after']} after.  Raw output: the .log beside this file.", "",
             "| op | R | base (us/call) | new (us/call) | new / base time | base in mul | new in mul |",
             "|---|---|---|---|---|---|---|"]
    for cell in rec["cells"]:
        lines.append(f"| {cell['op']} | {cell['R']} | {cell['base'] * 1e6:.0f} | {cell['new'] * 1e6:.0f} | "
                     f"{cell['new'] / cell['base']:.2f} | {cell['base_in_mul']:.2f} | {cell['new_in_mul']:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", help="the commit to compare with (this checkout is the new side)")
    ap.add_argument("--ops", default=",".join(OPS), help="comma-separated: mul, add, div, sqrt, exp, log, log1p")
    ap.add_argument("--terms", default="3,4,8,16")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--name", default=None, help="the results' name (default: the base's short hash)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    ops = args.ops.split(",")
    terms = [int(t) for t in args.terms.split(",")]
    if args.child:
        print(json.dumps(child(ops, terms, args.n, args.repeats)))
        return 0
    if not args.base:
        ap.error("--base is required")
    if "mul" not in ops:
        ops = ["mul", *ops]  # the unit of the "in mul" columns
        args.ops = ",".join(ops)
    base = _commit(args.base)
    new = _commit("HEAD")
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                                capture_output=True, text=True, check=True).stdout.strip())
    name = args.name or base[:7]
    stem = RESULTS / f"ab_{name}_cpu-{platform.machine()}"
    load_before = [round(v, 2) for v in os.getloadavg()]
    best = {"base": {}, "new": {}}
    with tempfile.TemporaryDirectory(prefix="expansions-ab-") as tmp, open(stem.with_suffix(".log"), "w") as log:
        wt = Path(tmp) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(wt), base], cwd=ROOT, check=True)
        try:
            for k in range(args.rounds):
                for side, checkout in (("base", wt), ("new", ROOT)) if k % 2 == 0 else (("new", ROOT), ("base", wt)):
                    got = _run_child(checkout, args, log)
                    print(f"round {k + 1} {side}: " + ", ".join(f"{c} {v * 1e6:.0f} us" for c, v in got.items()
                                                              if c != "expansions"), flush=True)
                    for c, v in got.items():
                        if c != "expansions":
                            best[side][c] = min(best[side].get(c, float("inf")), v)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(wt)], cwd=ROOT, check=False)
    cells = []
    for R in terms:
        for op in ops:
            b, n_ = best["base"][f"{op} {R}"], best["new"][f"{op} {R}"]
            cells.append({"op": op, "R": R, "base": b, "new": n_, "base_in_mul": b / best["base"][f"mul {R}"],
                          "new_in_mul": n_ / best["new"][f"mul {R}"]})
    rec = {"name": name, "machine": platform.machine(), "base": base, "new": new, "dirty": dirty,
           "command": "python -m bench.ab " + " ".join(argv if argv is not None else sys.argv[1:]),
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "n": args.n, "repeats": args.repeats, "rounds": args.rounds, "load_before": load_before,
           "load_after": [round(v, 2) for v in os.getloadavg()], "cells": cells}
    stem.with_suffix(".json").write_text(json.dumps(rec, indent=1) + "\n")
    stem.with_suffix(".md").write_text(markdown(rec))
    print(markdown(rec))
    return 0


if __name__ == "__main__":
    sys.exit(main())
