"""A fuzz test of the element-wise operations against exact references: random bit patterns for the
terms (exponents anywhere in the format, near the underflow and overflow thresholds, near 1), special
finite values (zero, the smallest subnormal, the largest float, the smallest normal), each operand
renormalized; the results of the public operations (+ - * /, sqrt, reciprocal) against Fractions and
the operations' stated bounds (:func:`expansions.program_bound.local_bound`, the bound of the
algorithm the public dispatch runs, with its underflow term), and of exp, log, sin, pow against mpmath
and :func:`expansions.bounds.elementary`.  A failure prints a table (inputs, exact value, result,
error, bound).

A third of the arithmetic's operands are valid expansions (``bounds.ulp_nonoverlapping``) outside
the proofs' positional hypotheses, which the operations renormalize on entry: an interior zero term
followed by a nonzero one, a repeated subnormal term, and at R = 2 pairs that are not double words
(|lo| between ulp(hi)/2 and ulp(hi)); their bounds are relative to the renormalized operands.
Floor division, remainder and fmod are fuzzed against the exact floor and remainders.  Cases the
proofs exclude by their own stated hypotheses (``program_bound``'s checks: the double-word algorithms
with operands or exact results near underflow or overflow) and non-finite results (the non-finite
rule, not a bound; tests/test_special_signs.py checks it) are left out; so is pow near 1 with a large
exponent (the bound states it does not hold there: :func:`expansions.bounds.pow_bound`).
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import expansions as ex
from expansions import bounds as B
from expansions import dispatch
from expansions.cpu.kernels import renormalize
from expansions.formats import format_of
from expansions.program_bound import NotProven, _check, local_bound
from expansions.verify_elementary import errors as elementary_errors

pytestmark = pytest.mark.slow

ARITHMETIC = ("add", "sub", "mul", "div", "sqrt", "reciprocal")
ELEMENTARY = ("exp", "log", "sin", "pow")
UINT = {"float64": np.uint64, "float32": np.uint32}


def _bits(rng, n, dtype, lo, hi):
    """n floats of random sign and significand bits, biased exponents uniform in [lo, hi]."""
    fmt = format_of(dtype)
    mant = fmt.p - 1
    width = 64 if dtype == "float64" else 32
    sig = rng.integers(0, 1 << mant, size=n, dtype=np.uint64)
    exp = rng.integers(lo, hi + 1, size=n).astype(np.uint64)
    sign = rng.integers(0, 2, size=n).astype(np.uint64)
    raw = (sign << np.uint64(width - 1)) | (exp << np.uint64(mant)) | sig
    return raw.astype(UINT[dtype]).view(dtype)


def operands(rng, n, R, dtype, where):
    """(n, R) renormalized expansions whose leading terms lie in the exponent band ``where``: 'low'
    (subnormal and the lowest binades), 'high' (the top binades), 'one' (near 1), 'any' (the whole
    range); the lower terms drawn from bit patterns below them; special finite values mixed in."""
    fmt = format_of(dtype)
    bias = fmt.emax
    top = 2 * fmt.emax  # the largest biased exponent of a finite float
    band = {"low": (0, 2 * fmt.p), "high": (top - fmt.p, top), "one": (bias - 2, bias + 1), "any": (0, top)}[where]
    terms = np.zeros((n, R), dtype=dtype)
    terms[:, 0] = _bits(rng, n, dtype, *band)
    for t in range(1, R):
        below = np.maximum(band[0] - t * fmt.p - rng.integers(0, 2 * fmt.p, n), 0)
        terms[:, t] = [_bits(rng, 1, dtype, int(b), int(b) + fmt.p)[0] for b in below]
    special = np.array([0.0, float(fmt.eta), float(fmt.largest), float(fmt.smallest_normal), 1.0], dtype=dtype)
    pick = rng.random(n) < 0.1
    terms[pick, 0] = rng.choice(special, pick.sum()) * rng.choice(np.array([-1, 1], dtype=dtype), pick.sum())
    with np.errstate(all="ignore"):
        out = renormalize(terms, R)
    return out[np.isfinite(out).all(axis=1)]


def outside_the_positional_condition(rng, x, dtype):
    """Valid (ulp-nonoverlapping) rows of x's values made to break the proofs' positional hypotheses:
    an interior zero before a nonzero term, a repeated subnormal term, or (two terms) a low word
    between ulp(hi)/2 and ulp(hi).  Rows that would not stay valid are left as they are."""
    fmt = format_of(dtype)
    x = x.copy()
    R = x.shape[1]
    for i in range(len(x)):
        kind = rng.integers(0, 3)
        if kind == 0 and R >= 3:
            x[i, 2:] = x[i, 1:-1].copy()  # an interior zero: the same nonzero terms, one place later
            x[i, 1] = 0
        elif kind == 1 and R >= 3:  # a repeated subnormal after a leading term in the lowest binade
            eta = float(fmt.eta)
            x[i] = 0
            x[i, 0] = dtype(rng.choice([-1.0, 1.0]) * float(fmt.smallest_normal) * (1 + rng.random()))
            x[i, 1] = x[i, 2] = dtype(eta)
        elif kind == 2 and x[i, 0] != 0 and np.isfinite(x[i, 0]):
            hi = x[i, 0]
            with np.errstate(all="ignore"):
                u = np.spacing(np.abs(hi))
            if not np.isfinite(u):
                continue
            x[i, 1] = dtype(rng.choice([1.0, 0.75, -0.75, -1.0]) * u) if R == 2 else x[i, 1]
            x[i, 2:] = 0
    valid = np.array([np.isfinite(row).all() and B.ulp_nonoverlapping([float(t) for t in row], fmt) for row in x],
                     dtype=bool)
    return x[valid]


def _q(row) -> Fraction:
    return sum((Fraction(float(t)) for t in row), Fraction(0))


def _hex(row) -> str:
    return " ".join(float(t).hex() for t in row)


def _table(failures) -> str:
    lines = ["| inputs | exact | result | error | bound |", "|---|---|---|---|---|"]
    lines += [f"| {f['inputs']} | {f['exact']} | {f['result']} | {f['error']} | {f['bound']} |" for f in failures[:20]]
    return "\n".join(lines)


def _in_range(z: Fraction, fmt) -> bool:
    """z is 0 or within the double-word proofs' range (``program_bound``'s margin)."""
    return z == 0 or Fraction(2) ** (fmt.emin + 3 * fmt.p) <= abs(z) <= Fraction(2) ** (fmt.emax - 4)


def _public(op, x, y):
    X, Y = ex.from_terms(x), ex.from_terms(y)
    return {"add": lambda: X + Y, "sub": lambda: X - Y, "mul": lambda: X * Y, "div": lambda: X / Y,
            "sqrt": lambda: ex.sqrt(X), "reciprocal": lambda: ex.reciprocal(X)}[op]()


def _exact(op, a, b):
    return {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b, "div": lambda: a / b,
            "reciprocal": lambda: 1 / a}[op]()


def _arithmetic_failures(op, R, dtype, seed, n=120):
    fmt = format_of(dtype)
    rng = np.random.default_rng(seed)
    failures, checked = [], 0
    alg = "reciprocal" if op == "reciprocal" else dispatch.method(op, "auto", R)
    kind, rel, absolute, hyp = local_bound(op, alg, R, fmt)
    for where in ("any", "one", "low", "high"):
        x = operands(rng, n, R, dtype, where)
        y = operands(rng, len(x), R, dtype, rng.choice(["any", "one", "low", "high"]))[: len(x)]
        x = x[: len(y)]
        if where in ("any", "one"):  # a third of the rows outside the positional hypotheses
            k = len(x) // 3
            tx = outside_the_positional_condition(rng, x[:k], np.dtype(dtype).type)
            ty = outside_the_positional_condition(rng, y[:k], np.dtype(dtype).type)
            k = min(len(tx), len(ty))
            x, y = np.concatenate([tx[:k], x[k:]]), np.concatenate([ty[:k], y[k:]])
            x, y = x[: min(len(x), len(y))], y[: min(len(x), len(y))]
        if op == "sqrt":
            x = np.where(x[:, :1] < 0, -x, x)
        with np.errstate(all="ignore"):
            out = np.asarray(_public(op, x, y).terms)
        for i in range(len(x)):
            ops_rows = (x[i],) if op in ("sqrt", "reciprocal") else (x[i], y[i])
            a, b = _q(x[i]), _q(y[i])
            if (op in ("div", "reciprocal") and (b if op == "div" else a) == 0) or not np.isfinite(out[i]).all():
                continue
            ops_rows = tuple(renormalize(np.ascontiguousarray(r[None, :]), R)[0] for r in ops_rows)  # what the
            # operation computes with: the operands renormalized (for positional ones, themselves)
            try:
                _check(hyp, ops_rows, fmt, out[i])
            except NotProven:
                continue  # outside the proof's stated hypotheses (double words near underflow or overflow)
            got = _q(out[i])
            checked += 1
            if op == "sqrt":  # |got - sqrt(a)| <= rel sqrt(a) + absolute, decided with mpmath at ample precision
                with mpmath.workprec(4 * R * fmt.p + 2300):
                    root = mpmath.sqrt(mpmath.mpf(a.numerator) / a.denominator)
                    err = abs(mpmath.mpf(got.numerator) / got.denominator - root)
                    allowed = mpmath.mpf(rel.numerator) / rel.denominator * root + \
                        mpmath.mpf(absolute.numerator) / absolute.denominator
                    bad, exact_text = err > allowed, mpmath.nstr(root, 25)
                    err_text, bound_text = mpmath.nstr(err, 5), mpmath.nstr(allowed, 5)
            else:
                z = _exact(op, a, b)
                if hyp == "double-word" and not _in_range(z, fmt):
                    checked -= 1
                    continue  # the double-word proofs assume no underflow or overflow of the result either
                if kind == "lead":  # relative to the (renormalized) operands' leading terms
                    scale = abs(Fraction(float(ops_rows[0][0])) * Fraction(float(ops_rows[1][0])))
                else:
                    scale = abs(z)
                err, allowed = abs(got - z), rel * scale + absolute
                bad, exact_text = err > allowed, f"{float(z):.17g}"
                err_text, bound_text = f"{float(err):.5g}", f"{float(allowed):.5g}"
            if bad:
                failures.append({"inputs": " ; ".join(_hex(r) for r in ops_rows), "exact": exact_text,
                                 "result": _hex(out[i]), "error": err_text, "bound": bound_text})
    return failures, checked


@pytest.mark.parametrize("dtype", ("float64", "float32"))
@pytest.mark.parametrize("R", (2, 3, 4, 8))
@pytest.mark.parametrize("op", ARITHMETIC)
def test_fuzz_arithmetic_within_the_stated_bounds(op, R, dtype):
    failures, checked = _arithmetic_failures(op, R, dtype, seed=[R, ARITHMETIC.index(op), len(dtype)])
    assert checked >= 50
    assert not failures, f"{len(failures)} of {checked} cases beyond the bound:\n" + _table(failures)


def _pow_beyond_the_limit(y, R, fmt):
    """Rows of pow where the bound states it does not hold (:func:`expansions.bounds.pow_bound`)."""
    return np.array([not B.pow_bound(R, fmt, _q(b)).hypotheses_hold for b in y], dtype=bool)


@pytest.mark.parametrize("dtype", ("float64", "float32"))
@pytest.mark.parametrize("R", (2, 4, 8))
@pytest.mark.parametrize("name", ELEMENTARY)
def test_fuzz_elementary_within_the_stated_bounds(name, R, dtype):
    fmt = format_of(dtype)
    rng = np.random.default_rng([R, ELEMENTARY.index(name), len(dtype)])
    x = np.concatenate([operands(rng, 16, R, dtype, w) for w in ("one", "any", "low", "high")])
    if name == "exp":  # arguments whose result is in range, and some beyond
        x = np.ascontiguousarray(x * np.asarray(2.0 ** -rng.integers(0, fmt.emax, (len(x), 1)), dtype=dtype))
    if name == "log":
        x = np.where(x[:, :1] < 0, -x, x)
    args = (x,)
    if name == "pow":
        x = np.where(x[:, :1] < 0, -x, x)
        y = operands(rng, len(x), R, dtype, "one")[: len(x)]
        x = x[: len(y)]
        keep = ~_pow_beyond_the_limit(y, R, fmt) & (x[:, 0] != 0)
        args = (np.ascontiguousarray(x[keep]), np.ascontiguousarray(y[keep]))
    fn = getattr(ex, name)
    with np.errstate(all="ignore"):
        out = np.asarray(fn(*[ex.from_terms(a) for a in args]).terms)
    errs = elementary_errors(name, args, out, R, dtype)
    units = float(B.elementary(name, R, fmt).value / B.elementary_unit(R, fmt))
    bad = np.flatnonzero(errs > units)
    failures = [{"inputs": " ; ".join(_hex(a[i]) for a in args), "exact": "(mpmath)", "result": _hex(out[i]),
                 "error": f"{errs[i]:.3g} units", "bound": f"{units:g} units"} for i in bad]
    assert np.sum(~np.isnan(errs)) >= 20
    assert not failures, f"{len(failures)} cases beyond the bound:\n" + _table(failures)


@pytest.mark.parametrize("dtype", ("float64", "float32"))
@pytest.mark.parametrize("R", (2, 3, 4, 8))
def test_fuzz_floor_division_and_remainders_exact(R, dtype):
    """x // y: the exact floor (rounded to R terms where they cannot hold it; ±inf beyond the range);
    x % y and fmod: the exact remainders rounded to R terms, with their signs."""
    fmt = format_of(dtype)
    rng = np.random.default_rng([R, len(dtype), 7])
    x = np.concatenate([operands(rng, 24, R, dtype, w) for w in ("one", "any", "low", "high")])
    y = np.concatenate([operands(rng, 24, R, dtype, w) for w in ("one", "any", "low", "high")])
    n = min(len(x), len(y))
    x, y = x[:n], y[rng.permutation(n)]
    X, Y = ex.from_terms(x), ex.from_terms(y)
    with np.errstate(all="ignore"):
        q, r, f = (np.asarray(v.terms) for v in (X // Y, X % Y, ex.fmod(X, Y)))
    tol = Fraction(2) ** (1 - R * (fmt.p - 1))
    failures, checked = [], 0
    for i in range(n):
        a, b = _q(x[i]), _q(y[i])
        if b == 0:
            continue
        k = math.floor(a / b)
        rem, frem = a - b * k, a - b * math.trunc(a / b)
        checked += 1
        got_q = _q(q[i]) if np.isfinite(q[i]).all() else float(q[i][0])
        if isinstance(got_q, float):  # an infinite quotient: the exact floor is beyond the range
            ok_q = abs(k) >= fmt.largest and (got_q > 0) == (k > 0)
        else:  # exact where R terms hold it, else rounded to R terms
            ok_q = got_q == k if abs(k) < 2 ** (R * (fmt.p - 1)) else abs(got_q - k) <= abs(k) * tol
        ok_r = np.isfinite(r[i]).all() and abs(_q(r[i]) - rem) <= abs(rem) * tol + R * fmt.eta
        ok_f = np.isfinite(f[i]).all() and abs(_q(f[i]) - frem) <= abs(frem) * tol + R * fmt.eta
        if not (ok_q and ok_r and ok_f):
            failures.append({"inputs": _hex(x[i]) + " ; " + _hex(y[i]), "exact": f"{float(k):.17g}",
                             "result": _hex(q[i]) + " ; " + _hex(r[i]) + " ; " + _hex(f[i]),
                             "error": f"{ok_q} {ok_r} {ok_f}", "bound": "exact floor, remainders to R terms"})
    assert checked >= 50
    assert not failures, f"{len(failures)} of {checked} cases wrong:\n" + _table(failures)
