"""Speed of the compiled CPU engine: its fused operations, through the public API, and its compile time.

For x + y (safe addition), x * y, x / y and sqrt(x) at each R, float64, on ``--n`` random
ulp-nonoverlapping expansions (``expansions.generate.random_terms``):

* ``public``: the operators of ``ExpansionArray`` on the engine backend (``x + y``, ``x * y``,
  ``x / y``, ``ex.sqrt(x)``), what a user runs: one fused pass per operation;
* ``fused``: the engine's functions with ``renormalize=True`` (:mod:`expansions.engine.fused`: the
  operation, its renormalization and the non-finite rule in one compiled loop over blocks of
  expansions on SIMD lanes).

(Until the programs' loop moved onto the block engine, a third column, ``rows``, ran the engine's
older path: the per-expansion row functions of ``engine/kernels.py`` and ``engine/newton.py``, a
kernel pass then a renormalization pass.
Those functions are retired, one compiled implementation per algorithm; the results files written
before keep that column.)

Each with one thread (``numba.set_num_threads(1)``), Mop/s of the median of ``--repeats`` timed calls
after a warm-up (the CPU time of the calls, ``time.process_time``, is recorded too: on a shared
machine it is the steadier figure for one thread); the fused and public results are checked equal,
bit for bit, to the twins' composition on the first 2000 expansions.  Then, on ``--large`` expansions,
the fused addition and multiplication with one thread and with all of numba's threads (wall clock).

Compile time: the first call of the fused engine (float64, then float32) in a fresh process with an
empty numba cache (``NUMBA_CACHE_DIR`` a new temporary folder), then in a second fresh process with
that cache.

Writes ``bench/results/engine_speed_<device>.md``, ``.json`` (every measurement, raw) and ``.log``
(the lines printed while measuring).

    python -m bench.engine_speed [--n 100000] [--terms 3 4 8 16 32] [--repeats 5] [--large 1000000]
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

import expansions as ex
import expansions.engine as E
from expansions import backends, dispatch
from expansions.__main__ import device_slug, environment
from expansions.cpu import kernels as TK
from expansions.cpu import newton as TN
from expansions.generate import random_terms

OPS = ("add", "mul", "div", "sqrt")


def fused(op, x, y, R):
    return {"add": lambda: E.add_safe(x, y, R, renormalize=True),
            "mul": lambda: E.mul_truncated(x, y, R, renormalize=True),
            "div": lambda: E.newton_div(x, y, R, renormalize=True),
            "sqrt": lambda: E.newton_sqrt(x, R, renormalize=True)}[op]()


def twins(op, x, y, R):
    """The specification: the twin, then the dispatch's renormalizer."""
    if op in ("add", "mul"):
        raw = (TK.add_safe if op == "add" else TK.mul_truncated)(x, y, R)
        return TK.renormalize(raw, R)
    raw = TN.div(x, y, R) if op == "div" else TN.sqrt(x, R)
    return dispatch._renormalize_keeping_zeros(backends.cpu, raw, R)


def public(op, xa, ya):
    return {"add": lambda: xa + ya, "mul": lambda: xa * ya, "div": lambda: xa / ya,
            "sqrt": lambda: ex.sqrt(xa)}[op]


# ---------------------------------------------------------------------------------------------
# measurements


def _timed(f, repeats):
    """(wall seconds of each call, CPU seconds of each call) after one warm-up call."""
    f()
    wall, cpu = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        f()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - t)
    return wall, cpu


def _log(line, lines):
    print(line, flush=True)
    lines.append(line)


def measure(n, terms, repeats, ops, lines):
    import numba  # the engine's dependency, imported only to measure it

    numba.set_num_threads(1)
    backends.set_cpu_backend("engine")
    rows_out = []
    for R in terms:
        x = random_terms((n,), R, "float64", seed=1)
        y = random_terms((n,), R, "float64", seed=2)
        x_pos = np.ascontiguousarray(np.where(x[:, :1] < 0, -x, x))
        for op in ops:
            a = x_pos if op == "sqrt" else x
            row = {"operation": op, "R": R, "dtype": "float64", "n": n, "threads": 1}
            k = min(n, 2000)
            with np.errstate(all="ignore"):
                want = twins(op, a[:k], y[:k], R)
                row["fused_bits_equal"] = bool(np.array_equal(fused(op, a[:k], y[:k], R).view(np.uint64),
                                                              want.view(np.uint64)))
                xa, ya = ex.from_terms(a), ex.from_terms(y)
                row["public_bits_equal"] = bool(np.array_equal(public(op, xa[:k], ya[:k])().terms.view(np.uint64),
                                                               want.view(np.uint64)))
                for name, f in (("public", public(op, xa, ya)), ("fused", lambda: fused(op, a, y, R))):  # noqa: B023
                    wall, cpu = _timed(f, repeats)
                    row[f"{name}_seconds"] = wall
                    row[f"{name}_cpu_seconds"] = cpu
                    row[f"{name}_mops"] = n / statistics.median(wall) / 1e6
                    row[f"{name}_cpu_mops"] = n / min(cpu) / 1e6
            rows_out.append(row)
            _log(json.dumps(row), lines)
    backends.set_cpu_backend(None)
    return rows_out


def scaling(n, repeats, lines):
    """The fused addition and multiplication at R = 4 on n expansions: one thread and all threads."""
    import numba  # the engine's dependency, imported only to measure it

    out = []
    R = 4
    x = random_terms((n,), R, "float64", seed=3)
    y = random_terms((n,), R, "float64", seed=4)
    for op in ("add", "mul"):
        row = {"operation": op, "R": R, "n": n}
        for threads in (1, numba.config.NUMBA_NUM_THREADS):
            numba.set_num_threads(threads)
            wall, _ = _timed(lambda: fused(op, x, y, R), repeats)  # noqa: B023
            row[f"{threads}_threads_seconds"] = wall
            row[f"{threads}_threads_mops"] = n / statistics.median(wall) / 1e6
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        row["threads"] = numba.config.NUMBA_NUM_THREADS
        row["scaling"] = row[f"{row['threads']}_threads_mops"] / row["1_threads_mops"]
        out.append(row)
        _log(json.dumps(row), lines)
    return out


_COMPILE_SCRIPT = r"""
import json, time
import numpy as np
t = time.perf_counter()
import expansions.engine as E
imported = time.perf_counter() - t
out = {"import": imported}
for dt in ("float64", "float32"):
    x = np.full((20, 4), 1.5, dtype=dt)
    x[:, 1:] = 2.0**-30
    t = time.perf_counter()
    E.add_safe(x, x, 4, renormalize=True)
    out["fused engine, " + dt + " (every operation: one compiled loop)"] = time.perf_counter() - t
print(json.dumps(out))
"""


def compile_times() -> dict:
    """First-call seconds: empty cache, then warm cache, each in a fresh process."""
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        res = {}
        for label in ("empty cache", "warm cache"):
            t = time.perf_counter()
            p = subprocess.run([sys.executable, "-c", _COMPILE_SCRIPT], env=env, capture_output=True, text=True,
                               check=True, cwd=root)
            res[label] = {"process seconds": time.perf_counter() - t, **json.loads(p.stdout.strip().splitlines()[-1])}
    return res


def markdown(rows_out, scale, compile_res, header) -> str:
    lines = [
        "# Compiled CPU engine (numba): fused operations and the public API",
        "",
        " ".join(f"{k}: {v};" for k, v in header.items()),
        "",
        "Mop/s = expansions per second / 10^6, median of the timed calls (wall clock), float64, random "
        "ulp-nonoverlapping operands, one thread (`numba.set_num_threads(1)`). `public`: `x + y`, `x * y`, `x / y`, "
        "`ex.sqrt(x)` on the engine backend; `fused`: the engine's functions with `renormalize=True` (one pass). "
        "`cpu`: the same from the fastest call's CPU time (steadier on a shared machine). `bits`: fused and public "
        "equal to the twins' composition on 2000 expansions. The machine is shared: see the load averages.",
        "",
        "| operation | R | public | fused | public (cpu) | fused (cpu) | bits |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows_out:
        bits = "equal" if r["fused_bits_equal"] and r["public_bits_equal"] else "DIFFER"
        lines.append(f"| {r['operation']} | {r['R']} | {r['public_mops']:.3g} | {r['fused_mops']:.3g} | "
                     f"{r['public_cpu_mops']:.3g} | {r['fused_cpu_mops']:.3g} | {bits} |")
    if scale:
        threads = scale[0]["threads"]
        lines += ["", f"## All cores ({threads} threads) against one, fused, R = 4, n = {scale[0]['n']}", "",
                  f"| operation | 1 thread (Mop/s) | {threads} threads (Mop/s) | scaling |", "|---|---|---|---|"]
        for r in scale:
            lines.append(f"| {r['operation']} | {r['1_threads_mops']:.3g} | {r[f'{threads}_threads_mops']:.3g} | "
                         f"{r['scaling']:.2f}x |")
    lines += ["", "## Compile time (first call in a fresh process)", "",
              "| first call | empty cache (s) | warm cache (s) |", "|---|---|---|"]
    cold, warm = compile_res["empty cache"], compile_res["warm cache"]
    for key in cold:
        lines.append(f"| {key} | {cold[key]:.2f} | {warm[key]:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--terms", type=int, nargs="+", default=[3, 4, 8, 16, 32])
    ap.add_argument("--ops", nargs="+", default=list(OPS), choices=OPS)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--large", type=int, default=1_000_000, help="expansions of the all-cores measurement (0: none)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = ap.parse_args(argv)
    import numba  # the engine's dependency, imported only to measure it

    lines: list = []
    compile_res = compile_times()
    _log(json.dumps(compile_res), lines)
    header = {**environment(), "numba": numba.__version__, "cpu_count": os.cpu_count(),
              "numba_threads": numba.config.NUMBA_NUM_THREADS, "threading_layer_env": numba.config.THREADING_LAYER,
              "command": "python -m bench.engine_speed " + " ".join(argv if argv is not None else sys.argv[1:]),
              "load_average_before": " ".join(f"{v:.2f}" for v in os.getloadavg())}
    rows_out = measure(args.n, args.terms, args.repeats, args.ops, lines)
    scale = scaling(args.large, args.repeats, lines) if args.large else []
    header["threading_layer"] = numba.threading_layer()
    header["load_average_after"] = " ".join(f"{v:.2f}" for v in os.getloadavg())
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"engine_speed_{device_slug()}"
    (out / f"{stem}.md").write_text(markdown(rows_out, scale, compile_res, header))
    (out / f"{stem}.json").write_text(json.dumps({"header": header, "compile": compile_res, "rows": rows_out,
                                                  "scaling": scale}, indent=1))
    (out / f"{stem}.log").write_text("\n".join(lines) + "\n")
    print(f"wrote {out / stem}.md, .json and .log")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
