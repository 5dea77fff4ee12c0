"""Surineni, "Performance/accuracy trade-offs of floating-point arithmetic on NVIDIA GPUs", MSc thesis,
University of Missouri 2017 (seed 004): the trade-off studies of chapter 4 on this library's number
systems, measured on the CPU (chapter 3's GPU characterization is paper_repro/seed004_gpu.py, run when
a GPU is present; the tuner of chapters 6-7 is paper_repro/seed004_tuning.py).

Number systems: float32 and float64 (NumPy), float-float and double-double (R = 2 expansions of
float32 and float64 terms; the thesis's "float2"/"double2" are Taufer's CMP pairs, ours use the
library's R = 2 defaults, JMP 2017 Algorithms 6, 10 and 17), and expansions of R = 4 and R = 8
float64 terms (the thesis compares with CUMP, 256-bit GMP: R = 4 is about 212 bits, R = 8 about 424).
The single-precision systems take float32 inputs, the others float64 inputs, the same values for
every system of a family.

* **Global summation** (4.1, Taufer's benchmark): n values drawn with equal probability from two
  intervals, each with its opposite, shuffled, so the exact sum is 0; the absolute error is |sum|,
  exact.  Parallel execution as in the thesis's Figure 8: 2048 threads (64 blocks of 32) each add
  n/2048 values in order, then the 2048 partial sums are added in order.  (The thesis's serial run,
  one thread adding 10^6 values in order, is one call per addition here: too slow for the expansion
  systems through the Python API, so it is shown for float32 and float64 only.)
* **Repeated multiplication** (4.2): ``result *= x_i``, x_i alternately from (0.01, 1) and (1, 10), for
  n = 2^0 .. 2^k; relative error against mpmath at 1200 bits (the thesis: against CUMP), median over
  32 independent chains.
* **Do-undo division** (4.3): ``x = (x * y_i) / y_i`` for i = 1..n, absolute error |x_n - x_0|, exact,
  for the thesis's four input configurations (x from (0, 10) or (0, 10^6), y likewise), largest over
  64 chains.
* **The exponential** (4.4): ``exp`` on inputs drawn uniformly from (0.1, 1) and (1, 100), by the
  system's library function (NumPy's ``exp`` for float and double, :func:`expansions.exp` for the
  expansions, where the thesis used CUDA's built-in ``ex2``) and by Thall's Taylor series
  (1 + x + x^2/2! + ..., each term the previous one times x / n, summed in the system's arithmetic,
  until the latest term is at most ``eps`` times the partial sum, once n > x: eps = 1e-20 for
  float-float and double-double, the thesis's tolerance, and the system's unit roundoff for the
  others, 2^-(52R) for R terms.  The thesis's criterion (4) compares the term with 1e-20 exp(x.value)
  instead, which stops at the first term for every x above about 46, where 1e-20 e^x > x).
  Absolute error against mpmath at 4 R * 53 bits (the thesis: against GMP), the largest relative
  error, and the loop counts n of the series (mean and standard deviation, the thesis's Table VIII).

Times are CPU wall-clock seconds of the whole computation (median of 3), labelled as such: they
compare the systems on this CPU and say nothing of a GPU's latencies.  The thesis's own statements,
from ``anchors/surineni2017_tables.csv``, are printed beside the tables.
"""

from __future__ import annotations

import statistics
import time
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np

import expansions as ex

ANCHORS = Path(__file__).resolve().parent / "anchors" / "surineni2017_tables.csv"
THREADS = 2048
#: name -> (terms, dtype) for the expansion systems, or the NumPy dtype for the plain ones
SYSTEMS = {"float": "float32", "float-float": (2, "float32"), "double": "float64", "double-double": (2, "float64"),
           "R=4": (4, "float64"), "R=8": (8, "float64")}
INTERVALS = (((0.1, 1.0), (1.0, 10.0)), ((1e-3, 1e-2), (1e2, 1e3)), ((1e-6, 1e-5), (1e5, 1e6)))
DO_UNDO = (((0, 10), (0, 1e6)), ((0, 10), (0, 10)), ((0, 1e6), (0, 10)), ((0, 1e6), (0, 1e6)))
EXP_RANGES = ((0.1, 1.0), (1.0, 100.0))
#: Taylor series stopping criterion: the latest term below EPS times the partial sum (the thesis's 1e-20 for the pairs)
EXP_EPS = {"float": 2.0 ** -24, "float-float": 1e-20, "double": 2.0 ** -53, "double-double": 1e-20,
           "R=4": 2.0 ** -208, "R=8": 2.0 ** -416}
EXP_MAX_TERMS = 1000


def anchors_text() -> list[str]:
    """The thesis's statements about chapter 4 kept in the anchors file (comment lines)."""
    with open(ANCHORS) as f:
        return [line[1:].strip() for line in f if line.startswith("# Text")]


def _family_dtype(system: str) -> str:
    spec = SYSTEMS[system]
    return spec if isinstance(spec, str) else spec[1]


def _lift(system: str, values: np.ndarray):
    """``values`` (of the system's family dtype) in the system: a NumPy array or an ExpansionArray."""
    spec = SYSTEMS[system]
    return values if isinstance(spec, str) else ex.array(values, terms=spec[0], dtype=spec[1])


def _exact(v) -> Fraction | float:
    if isinstance(v, ex.ExpansionArray):
        return v.to_fraction()
    return Fraction(float(v)) if np.isfinite(v) else float(v)


def _median_time(f, repeats: int):
    out, r = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        r = f()
        out.append(time.perf_counter() - t0)
    return statistics.median(out), r


def summation_inputs(n: int, intervals, dtype: str, rng) -> np.ndarray:
    half = n // 2
    lo, hi = intervals
    pick = rng.random(half) < 0.5
    a = np.where(pick, rng.uniform(*lo, half), rng.uniform(*hi, half)).astype(dtype)
    x = np.concatenate([a, -a])
    return x[rng.permutation(x.size)]


def parallel_sum(system: str, x: np.ndarray):
    """2048 threads, each summing its n/2048 values in order, then the partials in order."""
    cols = x.reshape(-1, THREADS)
    v = _lift(system, cols)
    acc = v[0]
    for i in range(1, cols.shape[0]):
        acc = acc + v[i]
    total = acc[0]
    for t in range(1, THREADS):
        total = total + acc[t]
    return total


def serial_sum(x: np.ndarray):
    return np.add.accumulate(x)[-1]


def study_summation(n: int, repeats: int, seed: int) -> list[dict]:
    rows = []
    for k, iv in enumerate(INTERVALS):
        for system in SYSTEMS:
            x = summation_inputs(n, iv, _family_dtype(system), np.random.default_rng([seed, k]))
            secs, total = _median_time(lambda system=system, x=x: parallel_sum(system, x), repeats)
            row = {"intervals": iv, "system": system, "n": n, "parallel_error": float(abs(_exact(total))),
                   "parallel_seconds": secs}
            if isinstance(SYSTEMS[system], str):
                s_secs, s_total = _median_time(lambda x=x: serial_sum(x), repeats)
                row.update(serial_error=float(abs(_exact(s_total))), serial_seconds=s_secs)
            rows.append(row)
    return rows


def study_multiplication(max_log2: int, chains: int, repeats: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    n = 1 << max_log2
    small = rng.uniform(0.01, 1, (n, chains))
    large = rng.uniform(1, 10, (n, chains))
    rows = []
    for system in SYSTEMS:
        dt = _family_dtype(system)
        xs = np.where((np.arange(n) % 2 == 0)[:, None], small, large).astype(dt)
        v = _lift(system, xs)
        checkpoints = {1 << k for k in range(0, max_log2 + 1, 2)}
        results, t0 = {}, time.perf_counter()
        acc = v[0]
        with np.errstate(all="ignore"):  # a chain's random walk can leave float32's range: inf, reported
            for i in range(1, n):
                if i in checkpoints:
                    results[i] = acc
                acc = acc * v[i]
        results[n] = acc
        secs = time.perf_counter() - t0
        with mpmath.workprec(1200):
            ref = [mpmath.mpf(1)] * chains
            for i in range(n):
                ref = [r * mpmath.mpf(float(xs[i, c])) for c, r in enumerate(ref)]
                if i + 1 in results:
                    got = results[i + 1]
                    vals = [_exact(got[c]) for c in range(chains)]
                    errs = [float(abs(mpmath.mpf(q.numerator) / q.denominator - r) / r)
                            if isinstance(q, Fraction) else float("nan") for q, r in zip(vals, ref)]
                    rows.append({"system": system, "n": i + 1, "median_relative_error": statistics.median(errs)})
        rows.append({"system": system, "n": n, "seconds_all_steps": secs, "chains": chains})
    return rows


def study_do_undo(n: int, chains: int, seed: int) -> list[dict]:
    rows = []
    for k, ((xl, xh), (yl, yh)) in enumerate(DO_UNDO):
        rng = np.random.default_rng([seed, k])
        x0 = rng.uniform(xl, xh, chains)
        ys = rng.uniform(yl, yh, (n, chains))
        for system in SYSTEMS:
            dt = _family_dtype(system)
            x = _lift(system, x0.astype(dt))
            yv = _lift(system, ys.astype(dt))
            start = _exact(x) if isinstance(x, ex.ExpansionArray) else [Fraction(float(v)) for v in x]
            t0 = time.perf_counter()
            with np.errstate(all="ignore"):
                for i in range(n):
                    x = (x * yv[i]) / yv[i]
            secs = time.perf_counter() - t0
            end = _exact(x) if isinstance(x, ex.ExpansionArray) else [Fraction(float(v)) for v in x]
            errs = [float(abs(a - b)) for a, b in zip(np.ravel(end), np.ravel(start))]
            rows.append({"x": (xl, xh), "y": (yl, yh), "system": system, "n": n, "max_abs_error": max(errs),
                         "seconds": secs})
    return rows


def taylor_exp(system: str, x: np.ndarray):
    """Thall's Taylor series of exp in the system's arithmetic, row by row until criterion (4):
    (values, loop count n per input)."""
    v = _lift(system, x)
    eps = EXP_EPS[system]
    x64 = x.astype(np.float64)
    ones = ex.ones_like if isinstance(v, ex.ExpansionArray) else np.ones_like
    term, total = ones(v), ones(v)
    counts = np.zeros(x.shape, dtype=np.int64)
    active = np.ones(x.shape, dtype=bool)
    with np.errstate(all="ignore"):
        for n in range(1, EXP_MAX_TERMS + 1):
            term = term * v / float(n)
            lead = term.terms[..., 0] if isinstance(term, ex.ExpansionArray) else term
            total = ex.where(active, total + term, total) if isinstance(total, ex.ExpansionArray) else \
                np.where(active, total + term, total)
            counts += active
            lead_sum = total.terms[..., 0] if isinstance(total, ex.ExpansionArray) else total
            small = np.abs(np.asarray(lead, np.float64)) <= eps * np.abs(np.asarray(lead_sum, np.float64))
            active &= ~(small & (n > x64)) & np.isfinite(np.asarray(lead, np.float64))
            if not active.any():
                break
    return total, counts


def library_exp(system: str, x: np.ndarray):
    v = _lift(system, x)
    with np.errstate(all="ignore"):
        return np.exp(v) if isinstance(v, np.ndarray) else ex.exp(v)


def study_exp(n: int, repeats: int, seed: int) -> list[dict]:
    rows = []
    for k, (lo, hi) in enumerate(EXP_RANGES):
        xs = np.random.default_rng([seed, 44, k]).uniform(lo, hi, n)
        for system in SYSTEMS:
            x = xs.astype(_family_dtype(system))
            bits = 4 * 53 * (SYSTEMS[system][0] if not isinstance(SYSTEMS[system], str) else 1)
            with mpmath.workprec(max(bits, 256)):
                ref = [mpmath.exp(mpmath.mpf(float(t))) for t in x]
            for impl, f in (("library", library_exp), ("Taylor", taylor_exp)):
                secs, out = _median_time(lambda f=f, system=system, x=x: f(system, x), repeats)
                counts = None
                if impl == "Taylor":
                    out, counts = out
                vals = _exact(out) if isinstance(out, ex.ExpansionArray) else [_exact(t) for t in out]
                with mpmath.workprec(max(bits, 256)):
                    abs_err, rel_err = [], []
                    for q, r in zip(np.ravel(vals), ref):
                        if not isinstance(q, Fraction):  # inf or NaN (float32's range ends at e^88.7)
                            abs_err.append(float("inf"))
                            rel_err.append(float("inf"))
                            continue
                        e = abs(mpmath.mpf(q.numerator) / q.denominator - r)
                        abs_err.append(float(e))
                        rel_err.append(float(e / r))
                fin = np.isfinite(abs_err)  # float32's range ends at e^88.7: those are counted apart
                row = {"range": (lo, hi), "system": system, "impl": impl, "n": n, "seconds": secs,
                       "mean_abs_error": float(np.mean(np.asarray(abs_err)[fin])) if fin.any() else float("nan"),
                       "max_rel_error": float(np.max(np.asarray(rel_err)[fin])) if fin.any() else float("nan"),
                       "nonfinite": int(np.sum(~fin))}
                if counts is not None:
                    row.update(loop_mean=float(counts.mean()), loop_sd=float(counts.std()))
                rows.append(row)
    return rows


def run(quick: bool = True, seed: int = 2017) -> dict:
    n_sum = 1 << 16 if quick else 1 << 20
    return {
        "summation": study_summation(n_sum, 1 if quick else 3, seed),
        "multiplication": study_multiplication(8 if quick else 14, 8 if quick else 32, 1, seed),
        "do_undo": study_do_undo(200 if quick else 10_000, 16 if quick else 64, seed),
        "exp": study_exp(64 if quick else 2048, 1 if quick else 3, seed),
        "anchors": anchors_text(),
        "device": "cpu (CPU figures: wall-clock seconds on this machine's CPU)",
    }


def markdown(res: dict) -> str:
    out = ["## Seed 004 (Surineni 2017), chapter 4 trade-offs, on the CPU", "",
           "CPU figures (this machine's CPU, wall-clock); the thesis measured GPUs. The thesis's statements:", ""]
    out += [f"> {a}" for a in res["anchors"]] + [""]
    out += ["### Global summation (exact sum 0; absolute error of the computed sum)", "",
            "| intervals | system | n | error, 2048 threads | s | error, serial | s |", "|---|---|---|---|---|---|---|"]
    for r in res["summation"]:
        ser = (f"{r['serial_error']:.3g} | {r['serial_seconds']:.3g}" if "serial_error" in r else "- | -")
        out.append(f"| {r['intervals'][0]} & {r['intervals'][1]} | {r['system']} | {r['n']} | "
                   f"{r['parallel_error']:.3g} | {r['parallel_seconds']:.3g} | {ser} |")
    out += ["", "### Repeated multiplication (median relative error against mpmath at 1200 bits)", "",
            "| system | n | median relative error |", "|---|---|---|"]
    out += [f"| {r['system']} | {r['n']} | {r['median_relative_error']:.3g} |"
            for r in res["multiplication"] if "median_relative_error" in r]
    out += ["", "| system | multiplications per chain | chains | s (all steps) |", "|---|---|---|---|"]
    out += [f"| {r['system']} | {r['n']} | {r['chains']} | {r['seconds_all_steps']:.3g} |"
            for r in res["multiplication"] if "seconds_all_steps" in r]
    out += ["", "### Do-undo division ((x * y_i) / y_i repeated; largest absolute error |x_n - x_0|)", "",
            "| x from | y from | system | iterations | largest error | s |", "|---|---|---|---|---|---|"]
    out += [f"| {r['x']} | {r['y']} | {r['system']} | {r['n']} | {r['max_abs_error']:.3g} | {r['seconds']:.3g} |"
            for r in res["do_undo"]]
    out += ["", "### The exponential (library function and Taylor series; absolute error against mpmath)", "",
            "| range | system | implementation | inputs | mean absolute error | largest relative error | "
            "non-finite (overflow) | loop count n (mean / sd) | s |", "|---|---|---|---|---|---|---|---|---|"]
    for r in res.get("exp", []):
        loops = f"{r['loop_mean']:.1f} / {r['loop_sd']:.1f}" if "loop_mean" in r else "-"
        out.append(f"| {r['range'][0]:g}..{r['range'][1]:g} | {r['system']} | {r['impl']} | {r['n']} | "
                   f"{r['mean_abs_error']:.3g} | {r['max_rel_error']:.3g} | {r['nonfinite']} | {loops} | "
                   f"{r['seconds']:.3g} |")
    return "\n".join(out) + "\n"


def plot(res: dict, out_dir: Path) -> Path | None:
    """The thesis's Figures 7, 9-10 and 11-14 in one PNG (CPU figures): summation error per interval
    pair, multiplication error against n, do-undo error per configuration, per system."""
    try:
        import matplotlib  # optional dependency (the plot extra)

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # optional dependency (the plot extra)
    except ImportError:
        return None
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5))

    def pos(v):  # an exact result (error 0) has no place on a log axis: not drawn, said in the title
        return v if v > 0 else np.nan

    for system in SYSTEMS:
        s = [r for r in res["summation"] if r["system"] == system]
        axes[0].plot(range(len(s)), [pos(r["parallel_error"]) for r in s], "o-", label=system)
        m = [r for r in res["multiplication"] if r["system"] == system and "median_relative_error" in r]
        axes[1].loglog([r["n"] for r in m], [pos(r["median_relative_error"]) for r in m], "o-", label=system)
        d = [r for r in res["do_undo"] if r["system"] == system]
        axes[2].plot(range(len(d)), [pos(r["max_abs_error"]) for r in d], "o-", label=system)
    axes[0].set_xticks(range(len(INTERVALS)), [f"{a[0]:g}..{b[1]:g}" for a, b in INTERVALS], fontsize=7)
    axes[2].set_xticks(range(len(DO_UNDO)), [f"x<{x[1]:g}, y<{y[1]:g}" for x, y in DO_UNDO], fontsize=7)
    for ax, title in zip(axes, ("global summation, 2048 threads: |error|", "repeated multiplication: rel. error",
                                "do-undo division: max |error|")):
        ax.set_yscale("log")
        ax.set_title(title + " (CPU; exact results not drawn)", fontsize=9)
    axes[1].set_xlabel("multiplications")
    axes[0].legend(fontsize=7)
    out = Path(out_dir) / "seed004_tradeoffs.png"
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
