"""Throughput of the elementary functions on the CPU beside mpmath and python-flint at the same
precision: ``python -m bench.elementary_speed [--terms 2,4,8,16] [--n 2000] [--slow-n 300]``.

The library runs the NumPy twins (:mod:`expansions.cpu.elementary`) and the same functions on the
engine (what ``ex.exp`` runs on the CPU by default; the same bits: exp, log and sin compiled per
block of expansions by :mod:`expansions.engine.elementary`, atan the twin's NumPy steps on the
engine's compiled operations) on ``--n`` float64 expansions of R terms; mpmath
(``mpf`` at R * 53 bits) and python-flint (``arb`` at R * 53 bits) run a Python loop over ``--slow-n``
of the same numbers.  Figures are thousands of elements per second (the median of 3 timings after an
untimed call); the arguments are in [0.1, 3) (atan, exp, log, sin alike).  Results:
bench/results/elementary_speed_<device>.md.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import time

import mpmath
import numpy as np

from expansions import backends
from expansions.__main__ import device_slug, environment
from expansions.cpu import elementary as twins
from expansions.cpu.kernels import renormalize
from expansions.reference.exact import exact_rows
from expansions.reference.mpf import mpf_from_fraction

FUNCTIONS = ("exp", "log", "sin", "atan")


def _timed(fn, repeats=3):
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _arguments(n, R, rng):
    t = np.zeros((n, R))
    t[:, 0] = rng.uniform(0.1, 3, n)
    for i in range(1, R):
        t[:, i] = t[:, i - 1] * rng.uniform(-1, 1, n) * 2.0**-53
    return renormalize(t, R)


def measure(R, n, slow_n, rng):
    x = _arguments(n, R, rng)
    exact = [mpf_from_fraction(q) for q in exact_rows(x[:slow_n])]
    rows = []
    try:
        import flint  # optional peer (the 'bench' extra): skipped when absent
    except ImportError:
        flint = None
    for name in FUNCTIONS:
        row = {"function": name, "R": R, "bits": 53 * R}
        twin = getattr(twins, name)
        row["twins_kps"] = n / _timed(lambda twin=twin: twin(x, R)) / 1e3
        try:
            on_engine = backends.engine_backend().elementary(name)
            row["engine_kps"] = n / _timed(lambda f=on_engine: f(x, R)) / 1e3
        except ImportError:  # no numba: the engine column stays empty
            pass
        with mpmath.workprec(53 * R):
            vals = [+v for v in exact]
            f = getattr(mpmath, name)
            row["mpmath_kps"] = len(vals) / _timed(lambda f=f, vals=vals: [f(v) for v in vals]) / 1e3
        if flint is not None:
            old = flint.ctx.prec
            flint.ctx.prec = 53 * R
            try:
                avals = [flint.arb(mpmath.nstr(v, 53 * R // 3 + 5)) for v in exact]
                g = getattr(flint.arb, name)
                row["flint_kps"] = len(avals) / _timed(lambda g=g, avals=avals: [g(v) for v in avals]) / 1e3
            finally:
                flint.ctx.prec = old
        rows.append(row)
    return rows


def markdown(rows, header):
    lines = ["# Elementary functions: throughput on the CPU (thousands of elements per second)", "",
             " ".join(f"{k}: {v};" for k, v in header.items()), "",
             "| function | R | bits | expansions (NumPy twins) | expansions (engine, default) | mpmath | "
             "python-flint (arb) | engine / mpmath |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        fl = f"{r['flint_kps']:.3g}" if "flint_kps" in r else "-"
        en = f"{r['engine_kps']:.3g}" if "engine_kps" in r else "-"
        ratio = f"{r['engine_kps'] / r['mpmath_kps']:.3g}" if "engine_kps" in r else "-"
        lines.append(f"| {r['function']} | {r['R']} | {r['bits']} | {r['twins_kps']:.3g} | {en} | "
                     f"{r['mpmath_kps']:.3g} | {fl} | {ratio} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--terms", default="2,4,8,16")
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--slow-n", type=int, default=300)
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--render", default="", help="only rewrite the .md of this results .json")
    args = ap.parse_args(argv)
    if args.render:
        data = json.loads(pathlib.Path(args.render).read_text())
        pathlib.Path(args.render).with_suffix(".md").write_text(markdown(data["rows"], data["header"]))
        return 0
    rng = np.random.default_rng(args.seed)
    rows = []
    for R in [int(v) for v in args.terms.split(",")]:
        rows.extend(measure(R, args.n, args.slow_n, rng))
    header = {"command": "python -m bench.elementary_speed " + " ".join(sys.argv[1:]), "n": args.n,
              "slow_n": args.slow_n, **environment()}
    text = markdown(rows, header)
    print(text)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"elementary_speed_{device_slug()}"
    (out / f"{stem}.md").write_text(text)
    (out / f"{stem}.json").write_text(json.dumps({"header": header, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
