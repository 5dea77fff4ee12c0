"""Verification of the double-word algorithms: exact errors of the twins' results against the proven bounds.

For each algorithm of :data:`expansions.dw.ALGORITHMS` and each dtype, the inputs are

* random double-words (``hi`` with a random significand and exponent in [-8, 8], ``lo`` a random tail
  below ``ulp(hi)/2``);
* adversarial families: boundary significands (``1``, ``1 + ulp``, ``2 - ulp``, ``1.5``...) with
  boundary tails (``±ulp/2``, the largest float below it, ``ulp/4``, zero), near-ties that the
  normalization ``(hi, lo) = Fast2Sum(hi, lo)`` turns into valid double-words, and per operation:
  cancellation (``y = -x`` up to the tails, or up to a few ulps), Sterbenz pairs and exponent gaps
  for additions; ``y`` near ``1/x`` for products; ``y`` near ``x`` for quotients; near squares for
  the square root;
* a hill climb: the cases with the largest error (relative to the bound where there is one) are
  mutated (one word moved by one or a few ulps, doubled, halved, negated, or a tail redrawn from the
  boundary tails) and the best distinct cases are kept, generation after generation.

JMP built their worst cases by hand from values next to binade boundaries with tails next to half an
ulp; the boundary families above draw from that kind of value, and the climb searches around them
(the paper's own worst-case inputs are not reproduced here).

The twin (:mod:`expansions.dw.cpu`) computes the results; the error of every result is exact
(rationals; for the square root the bound test is exact, by squaring, and the reported error is
exact to 2**-200).  Exponents stay in [-8, 8] for the high words, so no operation underflows or
overflows, as the proofs assume.  The table gives, per (algorithm, dtype): cases, proven bound and
largest observed error in units of ``u**2``, JMP's "largest observed" (their Table 1, from
``paper_repro/anchors/jmp2017_double_word_bounds.csv``), and the cases above the bound.

Run: ``python -m expansions.dw.verify --samples 4000 --climb 60 --out results/dw``.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import time
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np

from ..formats import format_of
from ..reference.exact import exact_rows
from . import ALGORITHMS, cpu
from . import bounds as DB

DTYPES = ("float64", "float32")
EXPONENT_RANGE = (-8, 8)
ANCHORS = Path(__file__).resolve().parents[2] / "paper_repro" / "anchors" / "jmp2017_double_word_bounds.csv"


# ---------------------------------------------------------------------------------------------
# inputs


def n_words(name: str) -> int:
    return sum(2 if k == "dw" else 1 for k in ALGORITHMS[name].operands)


def _ulp_exp(hi):
    """The exponent of ``ulp(hi)/2`` for each nonzero ``hi`` (``2**(floor(log2|hi|) - p)``)."""
    _, e = np.frexp(hi.astype(np.float64))
    return e.astype(np.int64)  # |hi| in [2**(e-1), 2**e): ulp = 2**(e-p), half ulp = 2**(e-p-1)


def random_fp(n, dtype, rng, erange=EXPONENT_RANGE, mantissas=None, positive=False):
    """Floats with a random (or given) p-bit significand and exponent uniform in ``erange``."""
    p = format_of(dtype).p
    m = rng.integers(1 << (p - 1), 1 << p, size=n) if mantissas is None else mantissas
    e = rng.integers(erange[0], erange[1] + 1, size=n)
    s = np.ones(n) if positive else rng.choice([-1.0, 1.0], size=n)
    return (s * np.ldexp(m.astype(np.float64), (e - (p - 1)).astype(np.int32))).astype(dtype)


def boundary_mantissas(n, p, rng):
    """Significands next to binade boundaries and midpoints, and a few random ones."""
    top, half = 1 << p, 1 << (p - 1)
    choices = np.array([half, half + 1, half + 2, top - 1, top - 2, 3 << (p - 2), (3 << (p - 2)) + 1,
                        (3 << (p - 2)) - 1], dtype=np.int64)
    m = choices[rng.integers(0, choices.size, size=n)]
    rnd = rng.random(n) < 0.2
    m[rnd] = rng.integers(half, top, size=int(rnd.sum()))
    return m


TAILS = ("random", "half", "below_half", "below_half", "quarter", "zero", "tiny", "random_gap")


def tails(hi, rng, kinds=TAILS):
    """A tail for each ``hi``: of a kind drawn from ``kinds`` (see :data:`TAILS`), random sign."""
    dtype = hi.dtype
    p = format_of(dtype).p
    n = hi.size
    e = _ulp_exp(hi) - p - 1  # half ulp = 2**e
    kind = rng.integers(0, len(kinds), size=n)
    m = rng.integers(1 << (p - 1), 1 << p, size=n).astype(np.float64)
    g = rng.integers(0, p + 1, size=n)
    out = np.zeros(n)
    for i, k in enumerate(kinds):
        sel = kind == i
        if k == "random":
            v = np.ldexp(m, (e - p).astype(np.int32))
        elif k == "random_gap":
            v = np.ldexp(m, (e - p - g).astype(np.int32))
        elif k == "half":
            v = np.ldexp(np.ones(n), e.astype(np.int32))
        elif k == "below_half":  # ulp/2 (1 - j 2**-p), j = 1..8
            v = np.ldexp(float(1 << p) - rng.integers(1, 9, size=n), (e - p).astype(np.int32))
        elif k == "quarter":
            v = np.ldexp(np.ones(n), (e - 1).astype(np.int32))
        elif k == "tiny":
            v = np.ldexp(m, (e - 2 * p).astype(np.int32))
        else:
            v = np.zeros(n)
        out[sel] = v[sel]
    out *= rng.choice([-1.0, 1.0], size=n)
    out[hi == 0] = 0.0
    return out.astype(dtype)


def normalize(hi, lo):
    """``(RN(hi + lo), error)``: a valid double-word with the same value (Fast2Sum, ``|hi| >= |lo|``)."""
    with np.errstate(all="ignore"):
        return cpu.fast_two_sum(hi, lo)


def _dw_random(n, dtype, rng, positive=False):
    hi = random_fp(n, dtype, rng, positive=positive)
    return normalize(hi, tails(hi, rng, ("random", "random_gap", "zero")))


def _dw_boundary(n, dtype, rng, positive=False):
    p = format_of(dtype).p
    hi = random_fp(n, dtype, rng, mantissas=boundary_mantissas(n, p, rng), positive=positive)
    return normalize(hi, tails(hi, rng))


def _scale_ulps(a, k):
    """``a + k ulp(a)`` (k small), computed exactly."""
    return (a.astype(np.float64) + k * np.spacing(np.abs(a)).astype(np.float64)).astype(a.dtype)


def _second_operand(op, kind, xh, xl, n, dtype, rng):
    """A second operand (words list) built from the first, for operation ``op`` ("add", "mul", "div")."""
    p = format_of(dtype).p
    fam = rng.integers(0, 5, size=n)
    k = rng.integers(-4, 5, size=n)
    two = rng.choice([0.5, 1.0, 2.0], size=n)
    base = random_fp(n, dtype, rng)
    with np.errstate(all="ignore"):
        if op == "add":
            canc = -xh  # y = -x up to the tail
            near = _scale_ulps(-xh, rng.integers(-3, 4, size=n))
            f = rng.uniform(0.5, 2.0, size=n)
            sterb = (-(xh.astype(np.float64) * f)).astype(dtype)
            shift = -rng.integers(0, 2 * p + 3, size=n).astype(np.int32)
            gap = np.ldexp(xh.astype(np.float64) * rng.uniform(-2.0, 2.0, size=n), shift).astype(dtype)
            edge = _scale_ulps((-(xh.astype(np.float64) * two)).astype(dtype), k)  # Sterbenz boundaries
            cands = (canc, near, sterb, gap, edge)
        elif op == "mul":
            rec = (1.0 / xh.astype(np.float64)).astype(dtype)
            rec = np.ldexp(rec, rng.integers(-2, 3, size=n).astype(np.int32)).astype(dtype)
            rec = _scale_ulps(rec, rng.integers(-2, 3, size=n))
            bnd = random_fp(n, dtype, rng, mantissas=boundary_mantissas(n, p, rng))
            pow2 = _scale_ulps(np.ldexp(np.ones(n), rng.integers(-3, 4, size=n).astype(np.int32)).astype(dtype), k)
            cands = (rec, bnd, base, xh, pow2)
        else:  # div
            near = _scale_ulps(xh, rng.integers(-3, 4, size=n))
            half = np.ldexp(xh, rng.integers(-2, 3, size=n).astype(np.int32)).astype(dtype)
            bnd = random_fp(n, dtype, rng, mantissas=boundary_mantissas(n, p, rng))
            pow2 = _scale_ulps(np.ldexp(np.ones(n), rng.integers(-3, 4, size=n).astype(np.int32)).astype(dtype), k)
            cands = (near, half, bnd, base, pow2)
    yh = np.choose(fam, cands).astype(dtype)
    yh[yh == 0] = base[yh == 0]
    if kind == "fp":
        return [yh]
    yh, yl = normalize(yh, tails(yh, rng))
    return [yh, yl]


def families(name: str, n: int, dtype: str, rng: np.random.Generator):
    """Input words (list of arrays, argument order) for ``n`` cases of algorithm ``name``: one third
    random, one third boundary double-words, one third operation-specific adversarial pairs."""
    alg = ALGORITHMS[name]
    kinds = alg.operands
    k1, k2 = n // 3, n // 3
    k3 = n - k1 - k2
    if kinds == ("fp",):  # split
        a = np.concatenate([random_fp(k1 + k3, dtype, rng),
                            random_fp(k2, dtype, rng, mantissas=boundary_mantissas(k2, format_of(dtype).p, rng))])
        return [a]
    if kinds == ("fp", "fp"):
        a = random_fp(n, dtype, rng)
        b = random_fp(n, dtype, rng)
        if alg.operation == "add":  # cancellation and Sterbenz
            b[:k1] = (-(a[:k1].astype(np.float64) * rng.uniform(0.5, 2.0, size=k1))).astype(dtype)
        return [a, b]
    positive = alg.operation == "sqrt"
    parts = [_dw_random(k1, dtype, rng, positive), _dw_boundary(k2, dtype, rng, positive)]
    if alg.operation == "sqrt":
        s = random_fp(k3, dtype, rng, erange=(-4, 4), positive=True)
        with np.errstate(all="ignore"):
            sh, sl = cpu.two_prod(s, s)  # exact squares, then a few ulps off
        sh = _scale_ulps(sh, rng.integers(-1, 2, size=k3))
        parts.append(normalize(sh, np.where(rng.random(k3) < 0.5, sl, tails(sh, rng))))
    else:
        parts.append(_dw_boundary(k3, dtype, rng))
    xh = np.concatenate([q[0] for q in parts])
    xl = np.concatenate([q[1] for q in parts])
    words = [xh, xl]
    if len(kinds) == 2:
        # first third random, second boundary, third adversarial w.r.t. x
        rnd = _dw_random(k1, dtype, rng) if kinds[1] == "dw" else [random_fp(k1, dtype, rng)]
        bnd = _dw_boundary(k2, dtype, rng) if kinds[1] == "dw" else [
            random_fp(k2, dtype, rng, mantissas=boundary_mantissas(k2, format_of(dtype).p, rng))]
        adv = _second_operand(alg.operation, kinds[1], xh[k1 + k2:], xl[k1 + k2:], k3, dtype, rng)
        for j in range(len(adv)):
            words.append(np.concatenate([rnd[j], bnd[j], adv[j]]))
    return words


# ---------------------------------------------------------------------------------------------
# results and exact errors


def twin(name: str, words):
    """Run the twin of ``name`` on the input words."""
    with np.errstate(all="ignore"):
        return getattr(cpu, name)(*words)


def _values(name, words):
    """The exact operands, per row: a list (one per operand) of lists of Fractions."""
    out, i = [], 0
    for kind in ALGORITHMS[name].operands:
        w = 2 if kind == "dw" else 1
        out.append(exact_rows(np.stack([words[j].astype(np.float64) for j in range(i, i + w)], axis=1)))
        i += w
    return out


def _sqrt_approx(q: Fraction, bits: int = 220) -> Fraction:
    """sqrt(q) to about ``bits`` bits (floor of the scaled integer square root)."""
    k = bits
    return Fraction(math.isqrt(q.numerator * (1 << (2 * k)) // q.denominator), 1 << k)


def exact_errors(name: str, words, zh, zl, p: int, bound_value: Fraction | None = None):
    """For each row with finite inputs and outputs: ``(index, rel, violates)``: the exact relative
    error (Fraction) and whether it exceeds the proven bound (``bound_value`` relative, or the mixed
    bound of Add22).  ``rel`` is None where the exact result is zero (then ``violates`` says whether
    the result is nonzero and a bound exists)."""
    alg = ALGORITHMS[name]
    finite = np.isfinite(zh) & np.isfinite(zl)
    for w in words:
        finite &= np.isfinite(w)
    idx = np.flatnonzero(finite)
    if idx.size == 0:
        return []
    sub = [w[idx] for w in words]
    vals = _values(name, sub)
    Z = exact_rows(np.stack([zh[idx].astype(np.float64), zl[idx].astype(np.float64)], axis=1))
    op = alg.operation
    out = []
    for k, i in enumerate(idx.tolist()):
        z = Z[k]
        if op == "add":
            exact = vals[0][k] + vals[1][k]
        elif op == "mul":
            exact = vals[0][k] * vals[1][k]
        elif op == "div":
            if vals[1][k] == 0:
                continue
            exact = vals[0][k] / vals[1][k]
        elif op == "split":
            exact = vals[0][k]
        else:  # sqrt
            x = vals[0][k]
            if x <= 0:
                continue
            r = _sqrt_approx(x)
            rel = abs(z - r) / r
            viol = False
            if bound_value is not None:
                lo_, hi_ = (1 - bound_value) ** 2 * x, (1 + bound_value) ** 2 * x
                viol = not (z >= 0 and lo_ <= z * z <= hi_)
            out.append((i, rel, viol))
            continue
        err = abs(z - exact)
        if name == "dg_add22" and p == 24:
            al, bl = Fraction(float(sub[1][k])), Fraction(float(sub[3][k]))
            case_bound = DB.dg_add22_bound(p, al, bl, exact)
        elif bound_value is not None:
            case_bound = bound_value * abs(exact)
        else:
            case_bound = None
        viol = case_bound is not None and err > case_bound
        if exact != 0:
            rel = err / abs(exact)
        else:
            rel = Fraction(0) if err == 0 else None
        out.append((i, rel, viol))
    return out


# ---------------------------------------------------------------------------------------------
# hill climb


def _low_word(name, j):
    """Whether word ``j`` is the low word of a double-word operand (and the index of its high word)."""
    i = 0
    for kind in ALGORITHMS[name].operands:
        if kind == "dw" and j == i + 1:
            return i
        i += 2 if kind == "dw" else 1
    return None


def _mutate(name, words, rng):
    """One random small change per row: a word moved by one or a few ulps, doubled, halved or
    negated, or a low word redrawn from the boundary tails of its high word; double-words
    renormalized."""
    alg = ALGORITHMS[name]
    n = words[0].size
    out = [w.copy() for w in words]
    which = rng.integers(0, len(words), size=n)
    how = rng.integers(0, 6, size=n)
    k = np.where(rng.random(n) < 0.5, rng.choice([-1, 1], size=n), rng.integers(-8, 9, size=n))
    with np.errstate(all="ignore"):
        for j in range(len(words)):
            sel = which == j
            if not sel.any():
                continue
            w = out[j]
            moved = _scale_ulps(w, k)
            doubled = (w * w.dtype.type(2)).astype(w.dtype)
            halved = (w * w.dtype.type(0.5)).astype(w.dtype)
            hi = _low_word(name, j)
            redrawn = tails(out[hi], rng) if hi is not None else moved
            cand = np.choose(how, (moved, moved, doubled, halved, -w, redrawn)).astype(w.dtype)
            w[sel] = cand[sel]
        # renormalize the double-word operands, keep operands nonzero and in range
        i = 0
        for kind in alg.operands:
            if kind == "dw":
                h, lo = out[i], out[i + 1]
                bad = (h == 0) | (np.abs(lo) >= np.abs(h)) | ~np.isfinite(h)
                h = np.where(bad, words[i], h)
                lo = np.where(bad, words[i + 1], lo)
                if alg.operation == "sqrt":
                    neg = h < 0
                    h, lo = np.where(neg, -h, h), np.where(neg, -lo, lo)
                out[i], out[i + 1] = normalize(h, lo)
                i += 2
            else:
                bad = (out[i] == 0) | ~np.isfinite(out[i])
                out[i] = np.where(bad, words[i], out[i])
                i += 1
        lim = np.ldexp(1.0, EXPONENT_RANGE[1] + 2)
        keep = np.ones(n, dtype=bool)
        for w in out:
            keep &= np.abs(w.astype(np.float64)) < lim
        for j in range(len(out)):
            out[j] = np.where(keep, out[j], words[j])
    return out


def _score(rel, bound_value):
    if rel is None:
        return math.inf
    return float(rel / bound_value) if bound_value else float(rel)


def hill_climb(name, dtype, words, scores, iterations, rng, population=48, children=8, bound_value=None):
    """Improve the worst cases: returns (all evaluated child words, their exact results list)."""
    p = format_of(dtype).p
    order = np.argsort(-np.asarray(scores))[:population]
    pop = [w[order] for w in words]
    pop_scores = np.asarray(scores)[order]
    seen_words = []
    seen_results = []
    for _ in range(iterations):
        parents = [np.repeat(w, children) for w in pop]
        kids = _mutate(name, parents, rng)
        zh, zl = twin(name, kids)
        res = exact_errors(name, kids, zh, zl, p, bound_value)
        sc = np.full(kids[0].size, -1.0)
        for i, rel, viol in res:
            sc[i] = math.inf if viol else _score(rel, bound_value)
        seen_words.append(kids)
        seen_results.append((res, zh, zl))
        allw = [np.concatenate([a, b]) for a, b in zip(pop, kids)]
        alls = np.concatenate([pop_scores, sc])
        # keep the best distinct rows
        key = np.stack([w.astype(np.float64) for w in allw], axis=1)
        _, first = np.unique(key, axis=0, return_index=True)
        first = first[np.argsort(-alls[first])][:population]
        pop = [w[first] for w in allw]
        pop_scores = alls[first]
    return seen_words, seen_results


# ---------------------------------------------------------------------------------------------
# the table


def jmp_observed() -> dict:
    """JMP 2017 Table 1 "largest observed" per algorithm number, as printed (from the anchors CSV)."""
    if not ANCHORS.exists():
        return {}
    with open(ANCHORS) as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    return {int(re.match(r"\d+", r["algorithm"]).group()): r for r in rows}


def in_u2(text: str, p: int) -> float | None:
    """A printed bound such as ``2u^2-6u^3`` or ``1.5u^2`` or ``1`` in units of u**2 for precision p."""
    t = text.replace(" ", "")
    if not t or t in ("?", "N/A"):
        return None
    return sum(coef * 2.0 ** (-p * (power - 2)) for coef, power in _terms(t))


def _terms(t: str):
    out = []
    for m in re.finditer(r"([+-]?)([\d.]*)(?:u\^(\d))?", t):
        if not m.group(0):
            continue
        sign = -1.0 if m.group(1) == "-" else 1.0
        coef = float(m.group(2)) if m.group(2) else 1.0
        power = int(m.group(3)) if m.group(3) else 0
        out.append((sign * coef, power))
    return out


@dataclass
class Row:
    algorithm: str
    jmp: int | None
    dtype: str
    cases: int = 0
    nonfinite_cases: int = 0
    bound_u2: float | None = None
    bound_source: str = ""
    max_observed_u2: float | None = None
    max_before_climb_u2: float | None = None
    jmp_observed: str = ""
    jmp_observed_u2: float | None = None
    violations: int = 0
    seconds: float = 0.0
    note: str = ""
    worst_case: dict = field(default_factory=dict)


def verify_one(name: str, dtype: str, samples: int = 3000, climb: int = 40, seed: int = 0) -> Row:
    t0 = time.perf_counter()
    alg = ALGORITHMS[name]
    p = format_of(dtype).p
    row = Row(name, alg.jmp, dtype)
    b = DB.bound(name, p)
    bound_value = b.value if b is not None else None
    if b is not None:
        row.bound_u2 = DB.in_u2(b.value, p)
        row.bound_source = b.source
    else:
        row.note = DB.no_bound_reason(name)
    if name == "dg_add22" and p != 24:
        row.note += "; the paper states it for float (p = 24) only: not checked here"
    if alg.jmp is not None:
        obs = jmp_observed().get(alg.jmp)
        if obs:
            row.jmp_observed = obs["largest_observed"]
            row.jmp_observed_u2 = in_u2(row.jmp_observed, p)
    rng = np.random.default_rng([seed, p, sorted(ALGORITHMS).index(name)])
    words = families(name, samples, dtype, rng)
    zh, zl = twin(name, words)
    res = exact_errors(name, words, zh, zl, p, bound_value)
    scores = np.full(words[0].size, -1.0)
    worst = [Fraction(-1), None]
    cases = 0
    nonfinite = words[0].size - len(res)

    def account(res, words, zh, zl):
        nonlocal cases
        for i, rel, viol in res:
            cases += 1
            if viol:
                row.violations += 1
                if "violation" not in row.worst_case:
                    row.worst_case["violation"] = _case(words, zh, zl, i)
            if rel is not None and rel > worst[0]:
                worst[0] = rel
                worst[1] = _case(words, zh, zl, i)

    account(res, words, zh, zl)
    for i, rel, viol in res:
        scores[i] = math.inf if viol else _score(rel, bound_value)
    row.max_before_climb_u2 = DB.in_u2(worst[0], p) if worst[0] >= 0 else None
    if climb:
        seen_w, seen_r = hill_climb(name, dtype, words, scores, climb, rng, bound_value=bound_value)
        for w, (r, czh, czl) in zip(seen_w, seen_r):
            nonfinite += w[0].size - len(r)
            account(r, w, czh, czl)
    row.cases = cases
    row.nonfinite_cases = nonfinite
    if worst[0] >= 0:
        row.max_observed_u2 = DB.in_u2(worst[0], p)
        row.worst_case["max"] = worst[1]
    row.seconds = time.perf_counter() - t0
    return row


def _case(words, zh, zl, i):
    return {"inputs": [float(w[i]).hex() for w in words], "output": [float(zh[i]).hex(), float(zl[i]).hex()]}


def _f(v, nd=3):
    if v is None:
        return "-"
    if v >= 1e6:
        return f"{v:.3g}"
    return f"{v:.{nd}f}"


def markdown(rows, header: dict) -> str:
    lines = [
        "# Double-word verification",
        "",
        " ".join(f"{k}: {v};" for k, v in header.items()),
        "",
        "Exact relative errors |zh + zl - z| / |z| of the NumPy twins' results, in units of u^2 (u = 2^-p). "
        "`proven` is the bound of `expansions.dw.bounds` (JMP 2017 Table 1 unless the source says otherwise); "
        "`JMP observed` is the largest error JMP report (their Table 1), converted with this dtype's u; "
        "`before climb` is the largest error on the random and adversarial inputs alone.",
        "",
        "| algorithm | JMP # | dtype | cases | proven (u^2) | largest observed (u^2) | before climb | "
        "JMP observed | violations | note |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        jo = f"{r.jmp_observed} ({_f(r.jmp_observed_u2)})" if r.jmp_observed else "-"
        lines.append(
            f"| {r.algorithm} | {r.jmp or '-'} | {r.dtype} | {r.cases} | {_f(r.bound_u2)} | "
            f"{_f(r.max_observed_u2)} | {_f(r.max_before_climb_u2)} | {jo} | {r.violations} | {r.note} |"
        )
    return "\n".join(lines) + "\n"


def run(names=None, dtypes=DTYPES, samples=3000, climb=40, seed=0, progress=False):
    names = list(ALGORITHMS) if names is None else list(names)
    rows = []
    for dt in dtypes:
        for name in names:
            rows.append(verify_one(name, dt, samples, climb, seed))
            if progress:
                r = rows[-1]
                print(f"{name:16s} {dt}: max {_f(r.max_observed_u2)} u^2, bound {_f(r.bound_u2)}, "
                      f"violations {r.violations}, {r.seconds:.1f}s", flush=True)
    return rows


def write(rows, header, out_dir):
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "dw_verification.md").write_text(markdown(rows, header))
    (out / "dw_verification.json").write_text(json.dumps({"header": header, "rows": [asdict(r) for r in rows]},
                                                         indent=1, default=str))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m expansions.dw.verify", description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=3000, help="random + adversarial cases per row")
    ap.add_argument("--climb", type=int, default=40, help="hill-climbing iterations (256 cases each)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dtype", action="append", choices=DTYPES)
    ap.add_argument("--algorithm", action="append", choices=sorted(ALGORITHMS))
    ap.add_argument("--out", default=None, help="folder for dw_verification.md and .json")
    a = ap.parse_args(argv)
    header = {"samples": a.samples, "climb": a.climb, "seed": a.seed, "backend": "numpy twins"}
    rows = run(a.algorithm, a.dtype or DTYPES, a.samples, a.climb, a.seed, progress=True)
    print(markdown(rows, header))
    if a.out:
        write(rows, header, a.out)
    return 1 if any(r.violations for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
