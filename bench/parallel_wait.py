"""The cost of one parallel call of the engine, by how numba's worker threads wait between loops.

    python -m bench.parallel_wait [--sizes 1024,4096,16384,65536,1048576] [--terms 2,8] [--repeats 30]

numba runs the engine's parallel loops on its threading layer (OpenMP where libgomp is present, its
default).  After a loop libgomp's worker threads spin for a while before they sleep; on a machine whose
cores other processes use too, a spinning worker uses up its turn, and the next parallel loop waits for
the scheduler's next tick before that worker runs its share: milliseconds per call, whatever the size.
The engine therefore sets ``OMP_WAIT_POLICY=PASSIVE`` (the workers sleep at once and are woken) unless
the user set it (:mod:`expansions.engine.kernels`).  This benchmark measures both in fresh processes,
alternately: ``x + y`` and ``x * y`` through the public API on all cores, per size and R, the median
and the largest of ``--repeats`` calls (a stall shows in both), beside one thread.  An empty
``OMP_WAIT_POLICY`` is libgomp's default (the setting before the engine chose PASSIVE).  Writes
``bench/results/parallel_wait_cpu-<machine>.{md,json,log}``; the machine's load is recorded, since
the stall needs other work on the cores.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numba
import numpy as np

import expansions as ex

from . import load_note, log_to

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
POLICIES = {"libgomp default": "", "PASSIVE": "PASSIVE"}


def child(sizes, terms, repeats) -> dict:
    """Median and largest seconds per call of every (op, R, size, threads) cell, in this process."""
    rng = np.random.default_rng(3)
    out = {"layer": None, "cells": []}
    for R in terms:
        for n in sizes:
            x = ex.array(rng.uniform(-4, 4, n), terms=R) / 3.0
            y = ex.array(rng.uniform(0.5, 4, n), terms=R) / 7.0
            for op, fn in (("add", np.add), ("mul", np.multiply)):
                for threads in (1, numba.config.NUMBA_NUM_THREADS):
                    numba.set_num_threads(threads)
                    fn(x, y)
                    times = []
                    for _ in range(repeats):
                        t0 = time.perf_counter()
                        fn(x, y)
                        times.append(time.perf_counter() - t0)
                    out["cells"].append({"op": op, "R": R, "n": n, "threads": threads,
                                         "median": statistics.median(times), "max": max(times)})
    out["layer"] = numba.threading_layer()
    return out


def markdown(rec: dict) -> str:
    lines = [f"# One parallel call of the engine, by the worker threads' wait policy (CPU {rec['machine']})", "",
             f"`{rec['command']}`, {rec['date']}, commit {rec['commit']}; numba's threading layer: {rec['layer']}; "
             f"{rec['cores']} cores; {load_note(rec['load'], rec['cores'])}.", "",
             "Public API (`x + y`, `x * y` on expansions), fresh processes per policy, alternating, "
             f"{rec['repeats']} calls per cell after one untimed call: median and largest time per call (us), "
             "on all cores and on one thread, and the all-core median in expansions per microsecond.  "
             "Raw output: the .log beside this file.", "",
             "| op | R | expansions | policy | 1 thread median | all cores median | all cores max | "
             "all cores / 1 thread |",
             "|---|---|---|---|---|---|---|---|"]
    for c in rec["cells"]:
        lines.append(f"| {c['op']} | {c['R']} | {c['n']} | {c['policy']} | {c['one'] * 1e6:.0f} | "
                     f"{c['all'] * 1e6:.0f} | {c['all_max'] * 1e6:.0f} | {c['all'] / c['one']:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1024,4096,16384,65536,1048576")
    ap.add_argument("--terms", default="2,8")
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    terms = [int(t) for t in args.terms.split(",")]
    if args.child:
        print(json.dumps(child(sizes, terms, args.repeats)))
        return 0
    RESULTS.mkdir(parents=True, exist_ok=True)
    stem = RESULTS / f"parallel_wait_cpu-{platform.machine()}"
    say = log_to(f"{stem}.log")
    command = "python -m bench.parallel_wait " + " ".join(argv if argv is not None else sys.argv[1:])
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    say(f"{command}  (commit {commit})")
    load = {"start": list(os.getloadavg())}
    runs = {name: [] for name in POLICIES}
    layer = None
    for k in range(args.rounds):
        order = list(POLICIES.items()) if k % 2 == 0 else list(reversed(POLICIES.items()))
        for name, value in order:
            env = dict(os.environ, OMP_WAIT_POLICY=value, PYTHONPATH=str(ROOT))
            cmd = [sys.executable, "-m", "bench.parallel_wait", "--child", "--sizes", args.sizes, "--terms",
                   args.terms, "--repeats", str(args.repeats)]
            r = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
            say(f"$ OMP_WAIT_POLICY={value!r} {' '.join(cmd)}\n{r.stdout}{r.stderr}rc={r.returncode}")
            if r.returncode:
                raise SystemExit(f"the child failed: {r.stderr[-2000:]}")
            got = json.loads(r.stdout.strip().splitlines()[-1])
            layer = got["layer"]
            runs[name].append(got["cells"])
    load["end"] = list(os.getloadavg())
    cells = []
    for name in POLICIES:
        for i, c in enumerate(runs[name][0]):
            if c["threads"] != 1:
                continue
            rounds_one = [r[i]["median"] for r in runs[name]]
            rounds_all = [r[i + 1] for r in runs[name]]  # the all-core cell follows its one-thread cell
            best = min(rounds_all, key=lambda a: a["median"])
            cells.append({"op": c["op"], "R": c["R"], "n": c["n"], "policy": name, "one": min(rounds_one),
                          "all": best["median"], "all_max": best["max"], "threads": best["threads"]})
    cells.sort(key=lambda c: (c["op"], c["R"], c["n"], c["policy"]))
    rec = {"machine": platform.machine(), "command": command.strip(), "commit": commit, "layer": layer,
           "cores": os.cpu_count(), "load": load, "repeats": args.repeats, "cells": cells,
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    Path(f"{stem}.json").write_text(json.dumps(rec, indent=1) + "\n")
    text = markdown(rec)
    Path(f"{stem}.md").write_text(text)
    say(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
