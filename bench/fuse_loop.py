"""``ex.fuse(fn, cpu="loop")`` (one compiled block loop) against ``cpu="plan"`` (the planned backend
calls, ``ex.fuse``'s default) and op by op, on one core, and the loop's first-call time.

Programs: ``x*y + z`` (2 operations); ``bench.workloads``' Horner polynomial of degree 20 (41
operations) and its Lorenz ensemble, 10 classical Runge-Kutta steps (about 650 operations), with the
default methods (at R = 2 the double-word algorithms), float64 random expansions
(``expansions.random``), ``--n`` expansions (the Lorenz ensemble a tenth of them).

Timing: milliseconds per call, the median of ``--repeats`` samples, the three executors interleaved
(each sample a loop of calls lasting about 50 ms, or one call), after a warm-up; one thread
(``numba.set_num_threads(1)``; run with ``NUMBA_NUM_THREADS=1`` to keep numba's pool at one thread
too).  ``bits``: loop == plan == op by op, bit for bit.

First call: in a fresh process, the first ``loop(x)`` of a Horner program (i) with an empty numba
cache (``NUMBA_CACHE_DIR`` a new folder: the one loop that runs every program is compiled, once per
dtype), (ii) in another fresh process with that cache and a program of another degree, which no
process has run (nothing is compiled); the same for the plan's first call (the engine's operations it
calls compiled, or loaded).

    NUMBA_NUM_THREADS=1 python -m bench.fuse_loop [--n 100000] [--terms 2 3 4 8] [--repeats 5]

Writes ``bench/results/fuse_loop_<device>.md`` and ``.json`` (every measurement, raw).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import expansions as ex
from expansions.__main__ import device_slug, environment
from expansions.programs import Program

from .fuse import _interleaved_times
from .workloads import horner, lorenz

PROGRAMS = {"x*y + z": (lambda x, y, z: x * y + z, 3, 1.0), "Horner degree 20": (lambda x: horner(x, None), 1, 1.0),
            "Lorenz RK4, 10 steps": (lambda x, y: lorenz(x, y), 2, 0.1)}


def _bits(v):
    return [a.terms.tobytes() for a in (v if isinstance(v, tuple) else (v,))]


def measure(name, R, n, repeats):
    fn, arity, scale = PROGRAMS[name]
    n = max(1, int(n * scale))
    args = [ex.random((n,), terms=R, seed=10 * R + k) for k in range(arity)]
    plan, loop = Program(fn, cpu="plan"), Program(fn, cpu="loop")
    graph, _ = plan.trace(*args)
    ops = sum(1 for node in graph.nodes if node.op not in ("input", "const", "promote"))
    with np.errstate(all="ignore"):
        same = _bits(fn(*args)) == _bits(plan(*args)) == _bits(loop(*args))
        timed = _interleaved_times([lambda: fn(*args), lambda: plan(*args), lambda: loop(*args)], repeats)
        (t_op, t_plan, t_loop), raw = [t for t, _, _ in timed], [s for _, s, _ in timed]
    return {"program": name, "R": R, "n": n, "operations": ops, "op_by_op_ms": 1e3 * t_op, "plan_ms": 1e3 * t_plan,
            "loop_ms": 1e3 * t_loop, "samples_s": raw, "loop_vs_plan": t_plan / t_loop,
            "loop_vs_op_by_op": t_op / t_loop, "bits_equal": same}


_FIRST_CALL = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np, expansions as ex
x = ex.random((1000,), terms=int(sys.argv[2]), seed=1)
degree = int(sys.argv[3])
def poly(x):
    p = 0.5 + 0 * x
    for k in range(degree):
        p = p * x + (k + 1) / 32
    return p
f = ex.fuse(poly, cpu=sys.argv[1])
t = time.perf_counter()
f(x)
first = time.perf_counter() - t
t = time.perf_counter()
f(x)
second = time.perf_counter() - t
print(json.dumps({"first_call_s": first, "second_call_s": second, "process_s": time.perf_counter() - t0}))
"""


def first_calls(R: int) -> list:
    """The first call of a program in fresh processes: empty numba cache, then warm with a new program."""
    root = Path(__file__).resolve().parent.parent
    out = []
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as programs:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache, "EXPANSIONS_CACHE_DIR": programs, "NUMBA_NUM_THREADS": "1"}
        for cpu in ("loop", "plan"):
            for label, degree in (("empty numba cache", 20), ("warm cache, a new program", 13)):
                p = subprocess.run([sys.executable, "-c", _FIRST_CALL, cpu, str(R), str(degree)], env=env, cwd=root,
                                   capture_output=True, text=True, check=True)
                row = {"cpu": cpu, "R": R, "cache": label, "degree": degree, **json.loads(p.stdout.splitlines()[-1])}
                out.append(row)
                print(json.dumps(row), flush=True)
    return out


def markdown(rows, first, header) -> str:
    lines = ["# ex.fuse: the loop (cpu=\"loop\") against the plan (cpu=\"plan\", the default) and op by op",
             "", "; ".join(f"{k}: {v}" for k, v in header.items()), "",
             __doc__.split("Timing:")[1].split("First call:")[0].strip(), "",
             "| program | operations | n | R | op by op (ms) | plan (ms) | loop (ms) | loop vs plan | "
             "loop vs op by op | bits |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['program']} | {r['operations']} | {r['n']} | {r['R']} | {r['op_by_op_ms']:.3g} | "
                     f"{r['plan_ms']:.3g} | {r['loop_ms']:.3g} | {r['loop_vs_plan']:.2f}x | "
                     f"{r['loop_vs_op_by_op']:.2f}x | {'equal' if r['bits_equal'] else 'DIFFER'} |")
    lines += ["", "## First call in a fresh process (Horner, 1000 expansions)", "",
              __doc__.split("First call:")[1].split("    NUMBA")[0].strip(), "",
              "| cpu= | R | cache | first call (s) | second call (ms) | whole process (s) |",
              "|---|---|---|---|---|---|"]
    for r in first:
        lines.append(f"| {r['cpu']} | {r['R']} | {r['cache']} | {r['first_call_s']:.2f} | "
                     f"{1e3 * r['second_call_s']:.3g} | {r['process_s']:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--terms", type=int, nargs="+", default=[2, 3, 4, 8])
    ap.add_argument("--programs", nargs="+", default=list(PROGRAMS), choices=list(PROGRAMS))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-first-call", action="store_true")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    args = ap.parse_args(argv)
    import numba  # the engine's dependency, imported only to set its threads

    numba.set_num_threads(1)
    command = "python -m bench.fuse_loop " + " ".join(argv if argv is not None else sys.argv[1:])
    header = environment() | {"numba": numba.__version__, "numba_threads": numba.get_num_threads(),
                              "NUMBA_NUM_THREADS": os.environ.get("NUMBA_NUM_THREADS", "unset"), "command": command,
                              "load_average_before": " ".join(f"{v:.2f}" for v in os.getloadavg())}
    rows = []
    for R in args.terms:
        for name in args.programs:
            rows.append(measure(name, R, args.n, args.repeats))
            print(json.dumps({k: v for k, v in rows[-1].items() if k != "samples_s"}), flush=True)
    first = [] if args.no_first_call else first_calls(4)
    header["load_average_after"] = " ".join(f"{v:.2f}" for v in os.getloadavg())
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"fuse_loop_{device_slug()}"
    stem.with_suffix(".json").write_text(json.dumps({"environment": header, "rows": rows, "first_call": first},
                                                    indent=1) + "\n")
    stem.with_suffix(".md").write_text(markdown(rows, first, header))
    print(markdown(rows, first, header))
    return 0 if all(r["bits_equal"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
