"""A fuzz test of the element-wise operations against exact references: random bit patterns for the
terms (exponents anywhere in the format, near the underflow and overflow thresholds, near 1), special
finite values (zero, the smallest subnormal, the largest float, the smallest normal), each operand
renormalized; the results of the public operations (+ - * /, sqrt, reciprocal) against Fractions and
the operations' stated bounds (:func:`expansions.program_bound.local_bound`, the bound of the
algorithm the public dispatch runs, with its underflow term), and of exp, log, sin, pow against mpmath
and :func:`expansions.bounds.elementary`.  A failure prints a table (inputs, exact value, result,
error, bound).

Restricted for now to renormalized operands: operands with interior zero terms followed by nonzero
terms, with repeated subnormal terms, or (R = 2) that are not double words lie outside the proofs'
hypotheses, and the operators that renormalize them on entry are being built elsewhere.  Cases the
proofs exclude by their own stated hypotheses (``program_bound``'s checks: the double-word algorithms
with operands or exact results near underflow or overflow) and non-finite results (the non-finite
rule, not a bound) are left out; so is pow near 1 with a large exponent (the bound states it does
not hold there: :func:`expansions.bounds.pow_bound`).
"""

from __future__ import annotations

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
        if op == "sqrt":
            x = np.where(x[:, :1] < 0, -x, x)
        with np.errstate(all="ignore"):
            out = np.asarray(_public(op, x, y).terms)
        for i in range(len(x)):
            ops_rows = (x[i],) if op in ("sqrt", "reciprocal") else (x[i], y[i])
            a, b = _q(x[i]), _q(y[i])
            if (op in ("div", "reciprocal") and (b if op == "div" else a) == 0) or not np.isfinite(out[i]).all():
                continue
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
                scale = abs(Fraction(float(x[i][0])) * Fraction(float(y[i][0]))) if kind == "lead" else abs(z)
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
