"""Speed of the compiled CPU engine (expansions.engine) against the NumPy twins, and its compile time.

For add (add_safe), mul (mul_truncated), div and sqrt at each R, float64, on ``--n`` random
ulp-nonoverlapping expansions: Mop/s of the engine with one thread (``numba.set_num_threads(1)``) and
with all of numba's threads (median of ``--repeats`` timed calls after a warm-up call), and of the twin
(median of its timed calls; on fewer expansions where a call of the twin on ``--n`` would take more than
``--twin-budget`` seconds: the count is in the table).  The engine's result is checked equal to the
twin's, bit for bit, on the twin's expansions.

Compile time: the first call of each kernel (float64) in a fresh process with an empty numba cache
(``NUMBA_CACHE_DIR`` a new temporary folder), then in a second fresh process with that cache (the code
loaded from disk).

Writes ``bench/results/engine_speed_<device>.md`` and ``.json`` (every measurement, raw).

    python -m bench.engine_speed [--n 100000] [--terms 2 4 8 16 32] [--repeats 5] [--twin-budget 10]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import expansions.engine as E
from expansions.__main__ import device_slug, environment
from expansions.cpu import kernels as TK
from expansions.cpu import newton as TN
from expansions.generate import random_terms

OPS = ("add", "mul", "div", "sqrt")

_COMPILE_SCRIPT = r"""
import json, time
import numpy as np
t = time.perf_counter()
import expansions.engine as E
from expansions.engine import kernels, newton, reduction
imported = time.perf_counter() - t
x = np.full((4, 3), 1.5)
x[:, 1:] = 2.0**-60
calls = {
    "add_safe / add_fast / sub_* (_add_kernel)": lambda: E.add_safe(x, x, 3),
    "mul_truncated (_mul_kernel)": lambda: E.mul_truncated(x, x, 3),
    "renormalize (_renormalize_kernel)": lambda: E.renormalize(x, 3),
    "reciprocal / div / sqrt (_newton_kernel)": lambda: E.div(x, x, 3),
    "reduce / reduce_pass (_pass_kernel)": lambda: E.reduce(x, 1, 4, 3),
}
out = {"import engine modules": imported}
for name, f in calls.items():
    t = time.perf_counter()
    f()
    out[name] = time.perf_counter() - t
print(json.dumps(out))
"""


def compile_times() -> dict:
    """First-call seconds per kernel (float64): empty cache, then warm cache, each in a fresh process."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        res = {}
        for label in ("empty cache", "warm cache"):
            t = time.perf_counter()
            p = subprocess.run([sys.executable, "-c", _COMPILE_SCRIPT], env=env, capture_output=True, text=True,
                               check=True)
            res[label] = {"process seconds": time.perf_counter() - t, **json.loads(p.stdout.strip().splitlines()[-1])}
    return res


def _median_seconds(f, repeats):
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts), ts


def _functions(mod_kernels, mod_newton, R):
    return {
        "add": lambda x, y: mod_kernels.add_safe(x, y, R),
        "mul": lambda x, y: mod_kernels.mul_truncated(x, y, R),
        "div": lambda x, y: mod_newton.div(x, y, R),
        "sqrt": lambda x, y: mod_newton.sqrt(x, R),
    }


def measure(n, terms, repeats, twin_budget, ops):
    import numba  # the engine's dependency, imported only to measure it

    all_threads = numba.config.NUMBA_NUM_THREADS
    rows = []
    for R in terms:
        x = random_terms((n,), R, "float64", seed=1)
        y = random_terms((n,), R, "float64", seed=2)
        x_pos = np.ascontiguousarray(np.where(x[:, :1] < 0, -x, x))
        eng = _functions(E, E, R)
        twin = _functions(TK, TN, R)
        for op in ops:
            a = x_pos if op == "sqrt" else x
            row = {"operation": op, "R": R, "dtype": "float64", "n": n}
            for threads in (1, all_threads):
                numba.set_num_threads(threads)
                eng[op](a, y)  # compiled or loaded before timing
                med, ts = _median_seconds(lambda: eng[op](a, y), repeats)  # noqa: B023
                row[f"engine_{threads}t_seconds"] = ts
                row[f"engine_{threads}t_mops"] = n / med / 1e6
            numba.set_num_threads(all_threads)
            # the twin: on n expansions, or fewer when n would exceed the budget
            k = min(n, 1000)
            with np.errstate(all="ignore"):
                t = time.perf_counter()
                twin[op](a[:k], y[:k])
                probe = time.perf_counter() - t
                k = int(min(n, max(1000, twin_budget / max(probe, 1e-9) * k)))
                reps = 3 if probe * k / 1000 < twin_budget / 3 else 1
                med, ts = _median_seconds(lambda: twin[op](a[:k], y[:k]), reps)  # noqa: B023
                want = twin[op](a[:k], y[:k])
            got = eng[op](a[:k], y[:k])
            row["twin_n"] = k
            row["twin_seconds"] = ts
            row["twin_mops"] = k / med / 1e6
            row["bits_equal"] = bool(np.array_equal(got.view(np.uint64), want.view(np.uint64)))
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows, all_threads


def markdown(rows, compile_res, header, threads) -> str:
    lines = [
        "# Compiled CPU engine (numba) against the NumPy twins",
        "",
        " ".join(f"{k}: {v};" for k, v in header.items()),
        "",
        f"Mop/s = expansions per second / 10^6 (median of the timed calls), float64, random ulp-nonoverlapping "
        f"operands; `1 thread` with `numba.set_num_threads(1)`, `{threads} threads` with all of numba's threads. "
        "`twin n`: the expansions of the twin's timing (fewer than n where n would exceed the time budget). "
        "`bits`: engine == twin bit for bit on those expansions. The machine is shared: see the load average.",
        "",
        f"| operation | R | engine 1 thread | engine {threads} threads | twin | speedup 1 thread | "
        f"speedup {threads} threads | twin n | bits |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        e1, ea, tw = r["engine_1t_mops"], r[f"engine_{threads}t_mops"], r["twin_mops"]
        lines.append(f"| {r['operation']} | {r['R']} | {e1:.3g} | {ea:.3g} | {tw:.3g} | {e1 / tw:.3g}x | "
                     f"{ea / tw:.3g}x | {r['twin_n']} | {'equal' if r['bits_equal'] else 'DIFFER'} |")
    lines += ["", "## Compile time (float64, first call of each kernel in a fresh process)", "",
              "| first call | empty cache (s) | warm cache (s) |", "|---|---|---|"]
    cold, warm = compile_res["empty cache"], compile_res["warm cache"]
    for key in cold:
        lines.append(f"| {key} | {cold[key]:.2f} | {warm[key]:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--terms", type=int, nargs="+", default=[2, 4, 8, 16, 32])
    ap.add_argument("--ops", nargs="+", default=list(OPS), choices=OPS)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--twin-budget", type=float, default=10.0, help="seconds for one timed call of a twin")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = ap.parse_args(argv)
    import numba  # the engine's dependency, imported only to measure it

    compile_res = compile_times()
    print(json.dumps(compile_res), flush=True)
    header = {**environment(), "numba": numba.__version__, "cpu_count": os.cpu_count(),
              "numba_threads": numba.config.NUMBA_NUM_THREADS, "threading_layer_env": numba.config.THREADING_LAYER,
              "command": "python -m bench.engine_speed " + " ".join(argv if argv is not None else sys.argv[1:]),
              "load_average_before": " ".join(f"{v:.2f}" for v in os.getloadavg())}
    rows, threads = measure(args.n, args.terms, args.repeats, args.twin_budget, args.ops)
    header["load_average_after"] = " ".join(f"{v:.2f}" for v in os.getloadavg())
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"engine_speed_{device_slug()}"
    (out / f"{stem}.md").write_text(markdown(rows, compile_res, header, threads))
    (out / f"{stem}.json").write_text(json.dumps({"header": header, "compile": compile_res, "rows": rows}, indent=1))
    print(f"wrote {out / stem}.md and .json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
