"""The public operators at R = 2 on the CPU engine, before and after the fused loops (issue 28).

``x + y``, ``x - y``, ``x * y``, ``x / y`` and ``expansions.sqrt(x)`` through the public API, as a user
calls them, on ``--n`` random double-words (``expansions.random``, float64 and float32 terms;
``sqrt`` of |x|), with one thread (``numba.set_num_threads(1)``) and with all of numba's threads;
and the cost of one call on a one-element array (the Python overhead per operation).  The same
measurement runs on this checkout and on ``--baseline`` (a git revision, unpacked by ``git archive``
into a temporary folder), each in its own process, alternately for ``--rounds`` rounds, so that the
two see the same machine load; the tables give the median over all timings (and the fastest).

``--threshold`` also times the fused loop of ``x + y`` (float64) serially and in parallel for
growing counts, the measurement behind ``expansions.engine.fused_dw.SERIAL_BELOW``; ``--cores``
times ``--cores-n`` expansions on one thread and on all threads (the issue's goal: >= 1.8x on two
cores for 10^6 expansions).

Writes ``bench/results/r2_fused_<device>.md``, ``.json`` (every timing) and ``.log`` (the raw lines the
worker processes printed).

    python -m bench.r2_fused [--n 100000] [--rounds 3] [--repeats 5] [--baseline 97f3444]
                             [--threshold] [--cores] [--cores-n 1000000] [--out bench/results]

(``--rounds 0 --threshold`` measures the threshold alone.)
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np

import expansions as ex
from expansions.__main__ import device_slug, environment

ROOT = Path(__file__).resolve().parents[1]
OPS = ("add", "sub", "mul", "div", "sqrt")
DTYPES = ("float64", "float32")
#: the commit before the fused loops: the engine ran the double-word algorithm, NumPy passes for the
#: non-finite rule, then the general renormalization
BASELINE = "97f3444"
OPERANDS = {"random": "draws of expansions.random (a fifth of them not double words)",
            "double-words": "draws of expansions.random renormalized (every one a double word)"}


# ---------------------------------------------------------------------------------------------
# the worker: runs in a fresh process on one checkout, prints one JSON line per measurement


def _timed(f, repeats: int, budget: float = 0.02) -> list[float]:
    """Seconds per call of ``f``: ``repeats`` timings, each of as many calls as fill ``budget``."""
    f()
    t = time.perf_counter()
    f()
    one = max(time.perf_counter() - t, 1e-7)
    k = max(1, int(budget / one))
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(k):
            f()
        out.append((time.perf_counter() - t) / k)
    return out


def _operations(n: int, dtype: str, operands: str = "random"):
    x = ex.random(n, terms=2, seed=1, dtype=dtype)
    y = ex.random(n, terms=2, seed=2, dtype=dtype)
    if operands == "double-words":  # renormalized: every operand a double word (RN(x0 + x1) = x0)
        x, y = ex.renormalize(x), ex.renormalize(y)
    s = ex.from_terms(x.terms * np.where(x.terms[..., :1] < 0, -1, 1).astype(dtype))  # |x|
    return {"add": lambda: x + y, "sub": lambda: x - y, "mul": lambda: x * y, "div": lambda: x / y,
            "sqrt": lambda: ex.sqrt(s)}


def worker(args) -> None:
    all_threads = numba.get_num_threads()
    for dtype in DTYPES if args.rounds else ():
        for threads, n in ((1, args.n), (all_threads, args.n), (1, 1)):
            numba.set_num_threads(threads)
            for op, f in _operations(n, dtype, args.operands).items():
                secs = _timed(f, args.repeats)
                print(json.dumps({"op": op, "dtype": dtype, "n": n, "threads": threads, "seconds": secs}), flush=True)
    numba.set_num_threads(all_threads)
    if args.threshold:
        _threshold_worker(args.repeats)
    if args.cores:
        for threads in (1, all_threads):
            numba.set_num_threads(threads)
            for op, f in _operations(args.cores_n, "float64", args.operands).items():
                secs = _timed(f, args.repeats, budget=0.2)
                print(json.dumps({"cores": True, "op": op, "dtype": "float64", "n": args.cores_n, "threads": threads,
                                  "seconds": secs}), flush=True)


def _threshold_worker(repeats: int) -> None:
    # by name: the module exists in this checkout only, not in the baseline's (whose worker never
    # gets here, but imports this file)
    fused_dw = importlib.import_module("expansions.engine.fused_dw")
    serial, parallel = fused_dw._entry("dw_add_accurate", True, True)
    for n in (256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536):
        x = np.random.default_rng(0).uniform(1, 2, (n, 2))
        out = np.empty_like(x)
        for name, f in (("serial", serial), ("parallel", parallel)):
            secs = _timed(lambda f=f, x=x, out=out: f(x, x, out, False), repeats)
            print(json.dumps({"threshold": True, "loop": name, "n": n, "seconds": secs}), flush=True)


# ---------------------------------------------------------------------------------------------
# the driver


def _unpack(rev: str, into: Path) -> str:
    """The commit of ``rev``, its ``expansions`` package unpacked into ``into``."""
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", rev], check=True, capture_output=True,
                            text=True).stdout.strip()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "expansions"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return commit


def _run_worker(path: Path, args, extra: list[str]) -> list[str]:
    env = {**os.environ, "PYTHONPATH": f"{path}{os.pathsep}{ROOT}"}
    cmd = [sys.executable, "-m", "bench.r2_fused", "--worker", "--n", str(args.n), "--repeats", str(args.repeats),
           "--cores-n", str(args.cores_n), "--operands", args.operands, *extra]
    res = subprocess.run(cmd, env=env, cwd=str(path), capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"worker on {path} failed:\n{res.stderr[-3000:]}")
    return [line for line in res.stdout.splitlines() if line.startswith("{")]


def _load(avg) -> str:
    return "/".join(f"{v:.1f}" for v in avg)


def _mops(n, secs):
    return n / statistics.median(secs) / 1e6


def markdown(data: dict) -> str:
    h = data["header"]
    lines = [
        "# The public operators at R = 2 on the CPU engine: this checkout against a baseline",
        "",
        f"`python -m bench.r2_fused {' '.join(h['argv'])}` on {h['processor']}, {h['cpu_count']} CPUs, numba "
        f"{h['numba']} (threads: {h['threads']}), commit {h['commit']} against the baseline {h['baseline']}"
        + (" (the double-word algorithm, NumPy passes for the non-finite rule, the general renormalization)"
           if h["baseline"].startswith(BASELINE) else "")
        + f"; operands: {OPERANDS[h.get('operands', 'random')]}. "
        f"{h['rounds']} alternating rounds of one process per checkout; Mop/s from the median seconds per "
        "call of all timings (in brackets: from the fastest).  Load average (1, 5, 15 min) at the start "
        f"{_load(h['load_average']['start'])}, at the end {_load(h['load_average']['end'])}: with more runnable "
        "processes than cores the figures, above all those with several threads, measure the machine's load.",
        "",
        f"## Mop/s through the public API, {h['n']} elements",
        "",
        "| op | terms | threads | before | after | after / before |",
        "|---|---|---|---|---|---|",
    ]
    cells = data["cells"]
    if not cells:
        lines[-4:] = []
    for dtype in DTYPES if cells else ():
        for threads in sorted({c["threads"] for c in cells if c["n"] == h["n"]}):
            for op in OPS:
                b, a = (next(c for c in cells if c["version"] == v and c["op"] == op and c["dtype"] == dtype
                             and c["n"] == h["n"] and c["threads"] == threads) for v in ("before", "after"))
                lines.append(f"| {op} | {dtype} | {threads} | {_mops(h['n'], b['seconds']):.1f} "
                             f"({h['n'] / min(b['seconds']) / 1e6:.1f}) | {_mops(h['n'], a['seconds']):.1f} "
                             f"({h['n'] / min(a['seconds']) / 1e6:.1f}) | "
                             f"{statistics.median(b['seconds']) / statistics.median(a['seconds']):.1f} |")
    if cells:
        lines += ["", "## Microseconds per call on one element (the Python overhead per operation)", "",
                  "| op | terms | before | after |", "|---|---|---|---|"]
    for dtype in DTYPES if cells else ():
        for op in OPS:
            b, a = (next(c for c in cells if c["version"] == v and c["op"] == op and c["dtype"] == dtype
                         and c["n"] == 1) for v in ("before", "after"))
            lines.append(f"| {op} | {dtype} | {statistics.median(b['seconds']) * 1e6:.1f} | "
                         f"{statistics.median(a['seconds']) * 1e6:.1f} |")
    if data["threshold"]:
        lines += ["", "## Serial against parallel loop (x + y, float64, fused loop alone, all threads)", "",
                  "| n | serial us | parallel us | parallel / serial |", "|---|---|---|---|"]
        for n in sorted({t["n"] for t in data["threshold"]}):
            s, p = (statistics.median(t["seconds"]) for loop in ("serial", "parallel")
                    for t in data["threshold"] if t["n"] == n and t["loop"] == loop)
            lines.append(f"| {n} | {s * 1e6:.1f} | {p * 1e6:.1f} | {p / s:.2f} |")
    if data["cores"]:
        n = data["cores"][0]["n"]
        lines += ["", f"## One thread against all threads, {n} elements (float64, after)", "",
                  "| op | 1 thread Mop/s | all threads Mop/s | speed-up |", "|---|---|---|---|"]
        for op in OPS:
            one, every = (next(c for c in data["cores"] if c["op"] == op and c["threads"] == t)
                          for t in (1, max(c["threads"] for c in data["cores"])))
            lines.append(f"| {op} | {_mops(n, one['seconds']):.1f} | {_mops(n, every['seconds']):.1f} | "
                         f"{statistics.median(one['seconds']) / statistics.median(every['seconds']):.2f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--baseline", default=BASELINE)
    p.add_argument("--threshold", action="store_true")
    p.add_argument("--cores", action="store_true")
    p.add_argument("--cores-n", type=int, default=1_000_000)
    p.add_argument("--out", default=str(ROOT / "bench" / "results"))
    p.add_argument("--operands", choices=("random", "double-words"), default="random",
                   help="expansions.random draws (a fifth are not double words), or the same renormalized")
    p.add_argument("--name", default="r2_fused", help="the results files' stem, before the device")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker(args)
        return 0

    load_before = os.getloadavg()
    log, cells, threshold, cores = [], [], [], []
    with tempfile.TemporaryDirectory(prefix="r2fused-") as tmp:
        base = Path(tmp)
        commit = _unpack(args.baseline, base)
        runs = [("before" if k % 2 else "after", k // 2, ["--rounds", "1"]) for k in range(2 * args.rounds)]
        if args.threshold or args.cores:  # this checkout only, once, after the comparison
            runs.append(("after", args.rounds, ["--rounds", "0"] + ["--threshold"] * args.threshold
                         + ["--cores"] * args.cores))
        for version, r, extra in runs:
            for line in _run_worker(ROOT if version == "after" else base, args, extra):
                log.append(f"{version} round {r}: {line}")
                rec = json.loads(line)
                if rec.pop("threshold", False):
                    threshold.append(rec)
                elif rec.pop("cores", False):
                    cores.append(rec)
                else:
                    key = {k: rec[k] for k in ("op", "dtype", "n", "threads")}
                    cell = next((c for c in cells if c["version"] == version
                                 and all(c[k] == v for k, v in key.items())), None)
                    if cell is None:
                        cells.append(cell := {"version": version, **key, "seconds": []})
                    cell["seconds"] += rec["seconds"]
            print(f"{version}, round {r + 1}: done", flush=True)
    header = {**environment(), "numba": numba.__version__, "cpu_count": os.cpu_count(),
              "threads": numba.get_num_threads(), "baseline": commit, "n": args.n, "rounds": args.rounds,
              "repeats": args.repeats, "operands": args.operands,
              "load_average": {"start": load_before, "end": os.getloadavg()},
              "argv": list(argv if argv is not None else sys.argv[1:])}
    data = {"header": header, "cells": cells, "threshold": threshold, "cores": cores}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{args.name}_{device_slug()}"
    (out / f"{stem}.md").write_text(markdown(data))
    (out / f"{stem}.json").write_text(json.dumps(data, indent=1))
    (out / f"{stem}.log").write_text("\n".join(log) + "\n")
    print((out / f"{stem}.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
