"""Whole computations through the public API beside the libraries a user would pick instead, in one run.

Workloads (the same definitions in ``bench/workloads/peers.cpp``), on arrays of random expansions x, y
of R float64 terms with full tails (``bench.native.values``: |v| in [0.5, 4)):

* ``sum``: ``np.sum(x)``; ``dot``: ``ex.dot(x, y)`` (the peers: ``np.sum(x * y)`` or their loop);
* ``horner``: the degree-20 polynomial sum_k c_k x^k, c_k = (k + 1)/32, by Horner's rule, element-wise;
* ``henon``: 20 steps of the Hénon map (x, y) -> (1 - 1.375 x^2 + y, 0.3125 x) from (x/8, y/8), element-wise;
* ``logsumexp``: m = max(x), m + log(sum(exp(x - m)));
* ``lorenz``: 10 steps of the classical Runge-Kutta method (h = 1/256) on the Lorenz system
  (sigma = 10, rho = 28, beta = 2.625) from (x, y, x y), an ensemble of independent systems.

Executors: ``expansions`` op by op (the public API: operators, ``np.*`` on ExpansionArrays, ``ex.dot``),
``expansions`` through ``ex.fuse`` (the element-wise workloads, the whole function traced once);
QD 2.3's ``dd_real`` (R = 2) and ``qd_real`` (R = 4) and MPFR at 53 R bits (R = 8 and the others) in
a C++ program built here (``g++ -O3 -march=native``; QD's two-product by FMA, as in
``bench.native``); xprec's ``ddouble`` dtype and numpy-quaddtype's binary128 (R = 2; NumPy arrays and
ufuncs); python-flint's ``arb`` and mpmath's ``mpf`` at 53 R bits (Python loops over elements).
Missing peers are skipped with the reason.

Timing: nanoseconds per element (per element of the ensemble for the element-wise workloads, per
summand for the reductions), the median of 3 timed calls on a count sized as ``bench.native.measure``
sizes it (from 64 elements up until a call takes about ``--budget`` seconds or reaches ``--n``).  One
core (``numba.set_num_threads(1)``; the peers are single-threaded), and with ``--all-cores`` the
library's op-by-op figures on all of numba's threads too.  Sanity: the leading double of every
executor's result on the first 64 elements (a reduction) or of its first element's result, against
the library's (relative difference).

    python -m bench.workloads [--terms 2,4,8] [--works sum,dot,horner,henon,logsumexp,lorenz]
                              [--n 1000000] [--budget 0.3] [--all-cores] [--no-small]

Then (unless ``--no-small``) scalars, small arrays and mixed operands: one ``+`` and one ``*`` on 0-d
expansions and on 100 elements (microseconds, beside mpmath, python-flint and xprec's 0-d arrays),
and ``x + v``, ``x * v`` on 10^5 elements with v a Python float, an int, a 0-d expansion, a
broadcast row, a NumPy array, as ratios to two full arrays.

writes ``bench/results/workloads_<device>.json``, ``.md`` (the tables, the goals met or missed by how
much) and ``.log`` (the raw output).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

import mpmath
import numpy as np
import numpy.ma  # noqa: F401  (before numpy-quaddtype, which breaks its later import)

import expansions as ex
from expansions.__main__ import device_slug, environment

from . import load_note, log_to, native

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "workloads" / "peers.cpp"
WORKS = ("sum", "dot", "horner", "henon", "logsumexp", "lorenz")
#: Element counts of a workload relative to --n (the element-wise ones are heavier per element).
SCALE = {"sum": 1, "dot": 1, "horner": 0.1, "henon": 0.1, "logsumexp": 0.1, "lorenz": 0.01}
#: Workloads whose elements are independent (the ones ``ex.fuse`` runs as one program).
ELEMENTWISE = ("horner", "henon", "lorenz")


# ---------------------------------------------------------------------------------------------
# the workloads, on arrays (the library's, xprec's, numpy-quaddtype's) or on lists of scalars


def horner(x, y):
    p = 21 / 32 + 0 * x
    for k in range(19, -1, -1):
        p = p * x + (k + 1) / 32
    return p


def henon(x, y):
    a, b = 0.125 * x, 0.125 * y  # inside the map's basin
    for _ in range(20):
        a, b = 1 - 1.375 * (a * a) + b, 0.3125 * a
    return a


def lorenz(x, y):
    sigma, rho, beta, h = 10.0, 28.0, 2.625, 1 / 256

    def f(a, b, c):
        return sigma * (b - a), a * (rho - c) - b, a * b - beta * c

    X, Y, Z = x, y, x * y
    for _ in range(10):
        k1 = f(X, Y, Z)
        k2 = f(X + (h / 2) * k1[0], Y + (h / 2) * k1[1], Z + (h / 2) * k1[2])
        k3 = f(X + (h / 2) * k2[0], Y + (h / 2) * k2[1], Z + (h / 2) * k2[2])
        k4 = f(X + h * k3[0], Y + h * k3[1], Z + h * k3[2])
        X = X + (h / 6) * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
        Y = Y + (h / 6) * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
        Z = Z + (h / 6) * (k1[2] + 2 * k2[2] + 2 * k3[2] + k4[2])
    return X


ELEMENT_FUNCTIONS = {"horner": horner, "henon": henon, "lorenz": lorenz}


def array_work(work: str, dot=None):
    """The workload on arrays: a function of (x, y) (``dot``: the array library's dot product)."""
    if work == "sum":
        return lambda x, y: np.sum(x)
    if work == "dot":
        return dot or (lambda x, y: np.sum(x * y))
    if work == "logsumexp":
        def lse(x, y):
            m = np.max(x)
            return m + np.log(np.sum(np.exp(x - m)))
        return lse
    return ELEMENT_FUNCTIONS[work]


def scalar_work(work: str, exp, log, key):
    """The workload on lists of scalars (python-flint, mpmath): a function of (xs, ys)."""
    if work == "sum":
        return lambda xs, ys: sum(xs[1:], xs[0])
    if work == "dot":
        return lambda xs, ys: sum((a * b for a, b in zip(xs[1:], ys[1:])), xs[0] * ys[0])
    if work == "logsumexp":
        def lse(xs, ys):
            m = max(xs, key=key)
            return m + log(sum((exp(v - m) for v in xs[1:]), exp(xs[0] - m)))
        return lse
    f = ELEMENT_FUNCTIONS[work]
    return lambda xs, ys: [f(a, b) for a, b in zip(xs, ys)]


def lead(v) -> float:
    """The leading double of a result (an expansion, a NumPy scalar or array of a peer's dtype, a list)."""
    if isinstance(v, list):
        v = v[0]
    if isinstance(v, ex.ExpansionArray):
        return float(v.terms.reshape(-1, v.nterms)[0, 0])
    if isinstance(v, np.ndarray) and v.ndim:
        v = v.reshape(-1)[0]
    try:
        return float(v)
    except TypeError:
        return float(v.mid())  # python-flint's arb


# ---------------------------------------------------------------------------------------------
# executors


def ours(work: str, x, y, fused: bool):
    f = array_work(work, dot=lambda a, b: ex.dot(a, b))
    if fused:
        f = ex.fuse(f)
    return lambda k: (lambda: f(x[:k], y[:k]))


def numpy_peer(work: str, x, y, dtype):
    xd = to_dtype(x, dtype)
    yd = to_dtype(y, dtype)
    f = array_work(work)
    return lambda k: (lambda: f(xd[:k], yd[:k]))


def to_dtype(x, dtype):
    """The values of x (R terms) in a NumPy dtype of a peer (xprec's ddouble, binary128): the sum of
    the terms from the last, each converted (the peer rounds it once more where it holds fewer bits)."""
    t = x.terms
    out = t[:, -1].astype(dtype)
    for r in range(x.nterms - 2, -1, -1):
        out = t[:, r].astype(dtype) + out
    return out


def scalar_peer(work: str, x, y, make, exp, log, key):
    xs = [make(row) for row in x.terms]
    ys = [make(row) for row in y.terms]
    f = scalar_work(work, exp, log, key)
    return lambda k: (lambda: f(xs[:k], ys[:k]))


def flint_peer(work, x, y, R):
    import flint  # optional peer (the bench extra): absent, the cell says why

    flint.ctx.prec = 53 * R

    def make(row):
        return sum((flint.arb(float(t)) for t in row[1:]), flint.arb(float(row[0])))

    return scalar_peer(work, x, y, make, lambda v: v.exp(), lambda v: v.log(), lambda v: float(v.mid()))


def mpmath_peer(work, x, y, R):
    mpmath.mp.prec = 53 * R

    def make(row):
        return sum((mpmath.mpf(float(t)) for t in row[1:]), mpmath.mpf(float(row[0])))

    return scalar_peer(work, x, y, make, mpmath.exp, mpmath.log, float)


def timed_cell(make, n: int, budget: float) -> dict:
    """``bench.native.measure`` with 3 repeats: ns per element of the median call, and its count."""
    m = native.measure(make, n, 3, budget)
    return {"count": m["n"], "ns": 1e9 / (m["mops"] * 1e6), "seconds": m["seconds"], "check": None}


def run_native(binary: str, lib: str, R: int, folder: Path, n: int, work: str, budget: float) -> dict:
    out = subprocess.run([binary, lib, str(R), str(n), str(folder), work, str(budget)], capture_output=True,
                         text=True)
    if out.returncode:
        return {"skipped": (out.stderr.strip() or f"exit {out.returncode}")[-300:]}
    rec = json.loads(out.stdout.strip().splitlines()[-1])
    return {"count": rec["count"], "ns": rec["seconds"] / rec["count"] * 1e9, "seconds": [rec["seconds"]],
            "check": float(rec["check"])}


# ---------------------------------------------------------------------------------------------
# the run


def run(args, say) -> dict:
    import numba  # the engine's thread count (numba is the engine's optional dependency)

    threads_all = numba.config.NUMBA_NUM_THREADS
    numba.set_num_threads(1)
    info = native.build(source=SOURCE)
    say(f"native peers: {info.get('libraries') or info['reasons']}")
    cells = []
    for R in args.terms:
        x, y, _ = native.operands(args.n, R)
        with tempfile.TemporaryDirectory() as tmp:
            native.write_terms(Path(tmp), x, y, y)
            for work in args.works:
                n = max(64, int(args.n * SCALE[work]))
                cell = {"R": R, "work": work, "n": n, "executors": {}}
                ex_ = cell["executors"]
                with np.errstate(all="ignore"):
                    ex_["expansions"] = timed_cell(ours(work, x, y, False), n, args.budget)
                    ex_["expansions"]["check"] = lead(ours(work, x, y, False)(min(n, 64))())
                    if work in ELEMENTWISE:
                        ex_["expansions fused"] = timed_cell(ours(work, x, y, True), n, args.budget)
                    if args.all_cores:
                        numba.set_num_threads(threads_all)
                        ex_["expansions all cores"] = timed_cell(ours(work, x, y, False), n, args.budget)
                        numba.set_num_threads(1)
                    libs = (["qd"] if R in (2, 4) else []) + ["mpfr"]
                    for lib in libs:
                        name = {"qd": "QD", "mpfr": "MPFR"}[lib]
                        if info["binary"] and info["available"].get(lib):
                            ex_[name] = run_native(info["binary"], lib, R, Path(tmp), n, work, args.budget)
                        else:
                            ex_[name] = {"skipped": info["reasons"].get(lib, "not built")}
                    if R == 2:
                        for name, module, dtype in (("xprec", "xprec", "ddouble"),
                                                    ("numpy-quaddtype", "numpy_quaddtype", "QuadPrecDType")):
                            try:
                                mod = __import__(module)
                                dt = getattr(mod, dtype)
                                dt = dt() if module == "numpy_quaddtype" else dt
                                mk = numpy_peer(work, x, y, dt)
                                ex_[name] = timed_cell(mk, n, args.budget)
                                ex_[name]["check"] = lead(mk(min(n, 64))())
                            except Exception as exc:  # an absent or failing peer: said, not fatal
                                ex_[name] = {"skipped": f"{type(exc).__name__}: {exc}"[:300]}
                    for name, peer in (("python-flint", flint_peer), ("mpmath", mpmath_peer)):
                        try:
                            mk = peer(work, x[:min(n, 20000)], y[:min(n, 20000)], R)
                            ex_[name] = timed_cell(mk, min(n, 20000), args.budget)
                            ex_[name]["check"] = lead(mk(min(n, 64))())
                        except Exception as exc:
                            ex_[name] = {"skipped": f"{type(exc).__name__}: {exc}"[:300]}
                ref = ex_["expansions"]["check"]
                for rec in ex_.values():
                    if rec.get("check") is not None and ref:
                        rec["check_difference"] = abs(rec["check"] - ref) / abs(ref)
                say(json.dumps(cell))
                cells.append(cell)
    return {"cells": cells, "native": {k: v for k, v in info.items() if k != "binary"},
            "threads_all": threads_all}


# ---------------------------------------------------------------------------------------------
# scalars, small arrays and mixed operands


def _best_us(fn, u, v, number: int) -> float:
    """Microseconds per call of ``fn(u, v)``: the best of 7 repeats of ``number`` calls (timeit's rule
    for a small call)."""
    fn(u, v)
    return min(timeit.repeat(lambda: fn(u, v), number=number, repeat=7)) / number * 1e6


def small(args, say) -> list[dict]:
    """One operation on 0-d expansions and on 100 elements (microseconds per call), beside mpmath,
    python-flint and (R = 2) xprec's 0-d ``ddouble`` arrays; and ``x op v`` on 10^5 elements with v a
    Python float, an int, a 0-d expansion, a broadcast row, a NumPy float64 array, as a ratio to the
    same operation on two full expansion arrays."""
    out = []
    for R in args.terms:
        X, Y, _ = native.operands(100_000, R)  # ExpansionArrays
        x, y = X.terms, Y.terms
        a, b = X[0], Y[0]
        xs, ys = X[:100], Y[:100]
        rec = {"R": R, "us": {}, "ratio": {}}
        for op, f in (("+", lambda u, v: u + v), ("*", lambda u, v: u * v)):
            rec["us"][f"0-d {op}"] = _best_us(f, a, b, 2000)
            rec["us"][f"100 elements {op}"] = _best_us(f, xs, ys, 2000)
            with mpmath.workprec(53 * R):
                ma, mb = mpmath.mpf(float(x[0, 0])), mpmath.mpf(float(y[0, 0]))
                rec["us"][f"mpmath 0-d {op}"] = _best_us(f, ma, mb, 20000)
            try:
                import flint  # optional peer: skipped with the reason when absent
                old = flint.ctx.prec
                flint.ctx.prec = 53 * R
                try:
                    fa, fb = flint.arb(float(x[0, 0])), flint.arb(float(y[0, 0]))
                    rec["us"][f"python-flint 0-d {op}"] = _best_us(f, fa, fb, 20000)
                finally:
                    flint.ctx.prec = old
            except ImportError as exc:
                rec.setdefault("skipped", {})["python-flint"] = str(exc)
            if R == 2:
                try:
                    import xprec  # optional peer: skipped with the reason when absent
                    xa = np.asarray(float(x[0, 0]), dtype=xprec.ddouble)
                    xb = np.asarray(float(y[0, 0]), dtype=xprec.ddouble)
                    rec["us"][f"xprec 0-d {op}"] = _best_us(f, xa, xb, 20000)
                except ImportError as exc:
                    rec.setdefault("skipped", {})["xprec"] = str(exc)
        full = {op: _best_us(f, X, Y, 20) for op, f in (("+", lambda u, v: u + v), ("*", lambda u, v: u * v))}
        row = ex.from_terms(y[:1])
        operands = {"a Python float": 1.5, "an int": 3, "a 0-d expansion": b, "a broadcast (1,) expansion": row,
                    "a NumPy float64 array": np.asarray(y[:, 0])}
        for what, v in operands.items():
            for op, f in (("+", lambda u, v: u + v), ("*", lambda u, v: u * v)):
                rec["ratio"][f"x {op} {what}"] = _best_us(f, X, v, 20) / full[op]
        say(json.dumps(rec))
        out.append(rec)
    return out


# ---------------------------------------------------------------------------------------------
# goals and the report


def _ns(cell, name):
    rec = cell["executors"].get(name) or {}
    return rec.get("ns")


def goals(cells, small_records=None) -> list[dict]:
    """The goals of whole computations, evaluated on one core: (goal, figure, met)."""
    out = []

    def add(goal, value, met):
        out.append({"goal": goal, "measured": value, "met": bool(met)})

    for c in cells:
        R, w, ours_ns = c["R"], c["work"], _ns(c, "expansions")
        if R == 2 and w in ("sum", "dot"):
            mops = 1e3 / ours_ns
            want = 150 if w == "sum" else 100
            add(f"R = 2 {w}: >= {want} Mop/s", f"{mops:.1f} Mop/s", mops >= want)
        if R in (2, 4) and w == "dot":
            flint, qd = _ns(c, "python-flint"), _ns(c, "QD")
            if flint:
                add(f"R = {R} dot: >= 10x python-flint", f"{flint / ours_ns:.2f}x", flint / ours_ns >= 10)
            if qd:
                add(f"R = {R} dot: >= 0.5x QD", f"{qd / ours_ns:.2f}x", qd / ours_ns >= 0.5)
        if R in (2, 4):
            qd = _ns(c, "QD")
            best = min(v for v in (ours_ns, _ns(c, "expansions fused")) if v)
            if qd:
                add(f"R = {R} {w}: within 1.2x of QD's time", f"{best / qd:.2f}x QD's time", best <= 1.2 * qd)
            xp = _ns(c, "xprec")
            if R == 2 and xp:
                add(f"R = 2 {w}: no slower than xprec", f"{best / xp:.2f}x xprec's time", best <= xp)
        fused = _ns(c, "expansions fused")
        if fused:
            add(f"R = {R} {w} through ex.fuse: >= 1.5x faster than op by op", f"{ours_ns / fused:.2f}x",
                ours_ns / fused >= 1.5)
    for rec in small_records or ():
        R = rec["R"]
        for op in ("+", "*"):
            v = rec["us"][f"0-d {op}"]
            add(f"R = {R} one `{op}` on 0-d expansions: <= 1 us", f"{v:.2f} us", v <= 1)
            v = rec["us"][f"100 elements {op}"]
            add(f"R = {R} one `{op}` on 100 elements: <= 2 us", f"{v:.2f} us", v <= 2)
        worst = max(rec["ratio"], key=rec["ratio"].get)
        v = rec["ratio"][worst]
        add(f"R = {R} mixed operands: within 1.1x of two full arrays (10^5)", f"{v:.2f}x (worst: `{worst}`)",
            v <= 1.1)
    return out


ORDER = ("expansions", "expansions fused", "expansions all cores", "QD", "MPFR", "xprec", "numpy-quaddtype",
         "python-flint", "mpmath")


#: why the missed goals are missed (written from the measurements; rendered under the goals)
EXPLANATIONS = HERE / "workloads_explanations.json"


def markdown(res: dict) -> str:
    env = res["environment"]
    lines = ["# Whole computations: the public API beside QD, MPFR, xprec, numpy-quaddtype, python-flint, mpmath", "",
             f"`{res['command']}` at commit {env['commit']}, {res['date']}, one core of {env['processor']}; "
             f"{load_note(res['load'], os.cpu_count() or 1)}. Raw output: `{res['log']}`. "
             "Nanoseconds per element (lower is better), the median of 3 calls; `–`: not run (reason in the JSON).",
             ""]
    for R in sorted({c["R"] for c in res["cells"]}):
        cells = [c for c in res["cells"] if c["R"] == R]
        names = [n for n in ORDER if any(n in c["executors"] and "ns" in c["executors"][n] for c in cells)]
        lines += [f"## R = {R}", "", "| workload | " + " | ".join(names) + " |",
                  "|---" * (len(names) + 1) + "|"]
        for c in cells:
            row = [c["work"]]
            for n in names:
                v = _ns(c, n)
                row.append("–" if v is None else (f"{v:.1f}" if v < 1e4 else f"{v:.3g}"))
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    if res.get("small"):
        lines += ["## Scalars, small arrays and mixed operands", "",
                  "Microseconds per call (the best of 7 repeats), and `x op v` on 10^5 expansions as a ratio to "
                  "the same operation on two full expansion arrays.", "",
                  "| R | call | us |", "|---|---|---|"]
        for rec in res["small"]:
            lines += [f"| {rec['R']} | {k} | {v:.3g} |" for k, v in rec["us"].items()]
        lines += ["", "| R | mixed operation | time / two full arrays |", "|---|---|---|"]
        for rec in res["small"]:
            lines += [f"| {rec['R']} | `{k}` | {v:.2f} |" for k, v in rec["ratio"].items()]
        lines.append("")
    lines += ["## Goals (one core)", "", "| goal | measured | met |", "|---|---|---|"]
    for g in res["goals"]:
        lines.append(f"| {g['goal']} | {g['measured']} | {'met' if g['met'] else 'NOT met'} |")
    met = sum(g["met"] for g in res["goals"])
    lines += ["", f"{met} of {len(res['goals'])} goals met.", ""]
    notes = json.loads(EXPLANATIONS.read_text()) if EXPLANATIONS.exists() else {}
    said = []
    for g in res["goals"]:
        key = next((k for k in notes if not k.startswith("_") and k in g["goal"]), None)
        if not g["met"] and key is not None and key not in said:
            said.append(key)
    missing = [g["goal"] for g in res["goals"] if not g["met"] and not any(k in g["goal"] for k in said)]
    if said or missing:
        lines += ["## Why the missed goals are missed", "",
                  f"From `{EXPLANATIONS.relative_to(HERE.parent)}` (the developers' reading of the measurements):", ""]
        lines += [f"- **{k}**: {notes[k]}" for k in said]
        lines += [f"- **{g}**: no explanation written yet." for g in missing]
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--terms", default="2,4,8")
    ap.add_argument("--works", default=",".join(WORKS))
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--budget", type=float, default=0.3)
    ap.add_argument("--all-cores", action="store_true")
    ap.add_argument("--no-small", dest="small", action="store_false",
                    help="leave out the scalars, small arrays and mixed operands")
    ap.add_argument("--out", default=str(HERE / "results"))
    ap.add_argument("--render", action="store_true", help="write the .md again from the committed .json (no run)")
    args = ap.parse_args(argv)
    if args.render:
        stem = Path(args.out) / f"workloads_{device_slug()}"
        Path(f"{stem}.md").write_text(markdown(json.loads(Path(f"{stem}.json").read_text())))
        return 0
    args.terms = [int(v) for v in args.terms.split(",")]
    args.works = [w for w in args.works.split(",") if w]
    for w in args.works:
        if w not in WORKS:
            raise SystemExit(f"unknown workload {w!r}: use {', '.join(WORKS)}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"workloads_{device_slug()}"
    say = log_to(f"{stem}.log")

    env = environment()
    command = ("python -m bench.workloads " + " ".join(argv if argv is not None else sys.argv[1:])).strip()
    say(f"{command}  (commit {env['commit']})")
    load = {"start": list(os.getloadavg())}
    t0 = time.time()
    res = run(args, say)
    if args.small:
        import numba  # the engine's thread count (numba is the engine's optional dependency)

        numba.set_num_threads(1)
        res["small"] = small(args, say)
    load["end"] = list(os.getloadavg())
    res.update({"command": command, "environment": env, "date": datetime.date.today().isoformat(), "load": load,
                "log": Path(f"{stem}.log").name, "wall_seconds": time.time() - t0})
    res["goals"] = goals(res["cells"], res.get("small"))
    Path(f"{stem}.json").write_text(json.dumps(res, indent=1) + "\n")
    Path(f"{stem}.md").write_text(markdown(res))
    say(f"wrote {stem}.md in {res['wall_seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
