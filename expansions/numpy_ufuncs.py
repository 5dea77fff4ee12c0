"""The remaining real-valued NumPy ufuncs on ExpansionArrays: the logical functions, ``np.exp2``,
``np.hypot``, ``np.cbrt``, the inverse hyperbolic functions, ``np.logaddexp``/``np.logaddexp2`` and the
NumPy 2 vector-product gufuncs ``np.vecdot``, ``np.vecmat``, ``np.matvec``.

Each is composed of the library's operations (never through float64) with the bound of that
composition, computed here as an exact rational by a ``*_bound`` function from the bounds of the
operations it uses: ``e_a = bounds.add_safe(R, p)`` (a safe addition, relative to its exact result),
``mu = bounds.mul_relative_to_product(R, p)`` (a truncated product), ``bounds.div``,
``bounds.reciprocal``, ``bounds.sqrt`` and the stated (empirical) bounds of the elementary functions
``bounds.elementary(name, R, fmt)``: ``|error| <= e_f |f| + units eta`` (:func:`elementary_parts`).
Bounds that compose an elementary function's are therefore empirical too.  eta is the smallest
subnormal of the terms' format.  Mixed operands (floats, float arrays, expansions of other formats)
are promoted exactly, as the arithmetic promotes them.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np

from . import bounds
from . import formats as F
from .arraytype import ExpansionArray
from .backends import xp_of
from .cpu.constants import constant
from .elementary import exp, log, log1p
from .elementwise import isfinite, isinf, isnan, maximum, signbit
from .manipulation import where
from .numpy_protocol import UNSUPPORTED_HINTS, register_ufunc
from .operations import absolute, binary, compare, flat_pair, negative, operands, unary
from .reduce import matmul
from .reference.mpf import fraction_from_mpf
from .ufuncs import copysign, ldexp, to_numpy_int

__all__ = ["logical_and", "logical_or", "logical_xor", "logical_not", "exp2", "hypot", "cbrt", "asinh", "acosh",
           "atanh", "logaddexp", "logaddexp2", "vecdot", "vecmat", "matvec", "elementary_parts", "constant_error",
           "exp2_bound", "hypot_bound", "cbrt_bound", "asinh_bound", "acosh_bound", "atanh_bound",
           "logaddexp_bound"]


def _expansion(x, what) -> ExpansionArray:
    if not isinstance(x, ExpansionArray):
        raise TypeError(f"{what}: the operand must be an ExpansionArray, got {type(x).__name__}")
    return x


def _const(name: str, like: ExpansionArray) -> ExpansionArray:
    """The exact constant ``name`` of :mod:`expansions.cpu.constants` rounded to like's R terms, 0-d."""
    c = ExpansionArray(constant(name, like.nterms, like.dtype.name)[0].copy())
    return c if like.device == "cpu" else c.to_device(like.device)


def _flat_operands(x, y):
    x, y = operands(x, y)
    xt, yt, shape = flat_pair(x, y)
    return ExpansionArray(xt), ExpansionArray(yt), shape


def _mask(m, like: ExpansionArray):
    return xp_of(like.terms).asarray(m)


def _leading_exponent(lead):
    """e with 2^(e-1) <= |lead| < 2^e for finite nonzero lead, else 0 (an integer array of lead's module)."""
    xp = xp_of(lead)
    ok = xp.isfinite(lead) & (lead != 0)
    _, e = xp.frexp(xp.where(ok, lead, 1.0))
    return xp.where(ok, e, 0).astype(xp.int64)


# ----------------------------------------------------------------------------------------------
# bounds


def _fmt(dtype) -> F.Format:
    return F.format_of(np.dtype(dtype))


def elementary_parts(name: str, R: int, dtype) -> tuple:
    """(e_f, units) of the stated bound of the elementary function ``name``: the error of f(x) is at most
    ``units max(unit |f|, eta)`` (:func:`expansions.bounds.elementary`), so at most ``e_f |f| + units eta``
    with ``e_f = units unit``."""
    fmt = _fmt(dtype)
    b = bounds.elementary(name, R, fmt).value
    return b, b / bounds.elementary_unit(R, fmt)


def constant_error(name: str, R: int, dtype) -> Fraction:
    """The exact relative rounding error (rounded up, against the constant at twice the format's
    precision span) of the constant ``name`` of :mod:`expansions.cpu.constants` rounded to R terms."""
    fmt = _fmt(dtype)
    prec = 2 * (fmt.emax - fmt.emin + 4 * fmt.p) + 256
    values = {"ln2": lambda: mpmath.log(2), "inv_ln2": lambda: 1 / mpmath.log(2)}
    with mpmath.workprec(prec):
        q = fraction_from_mpf(values[name]())
    c = sum((Fraction(float(v)) for v in constant(name, R, np.dtype(dtype).name)[0]), Fraction(0))
    return abs(q - c) / q + Fraction(1, 2 ** (prec - 8))


def _ops(R: int, dtype) -> tuple:
    fmt = _fmt(dtype)
    return (fmt, bounds.add_safe(R, fmt.p).value, bounds.mul_relative_to_product(R, fmt.p),
            bounds.div(R, fmt).value, bounds.sqrt(R, fmt).value)


def exp2_bound(R: int, dtype) -> tuple:
    """(relative, absolute) bound of :func:`exp2`: ``|result - 2^x| <= relative 2^x + absolute``.

    k = rint(x_0) is an exact integer with |x - k| <= 0.51 (|x| below the clipping limit);
    r = x - k errs by e_a |r| (one safe subtraction), t = r ln2 by ``(1 + e_a)(1 + mu)(1 + e_c) - 1 = g``
    relative (e_c: :func:`constant_error` of ln2), so |t - r ln2| <= 0.36 g and exp(t) is within
    ``e^(0.36 g) - 1 <= g`` of exp(r ln2), and exp itself within e_exp (its floor ``units eta`` is below
    ``2 units eta`` relative to exp(t) >= 0.7): ``relative = (1 + e_exp + 2 units eta)(1 + g) - 1``.  The scaling by
    2^k is exact while the terms stay normal; below the normal range each term is rounded to the
    subnormal grid: ``absolute = R eta``.  Where x is an integer, r = 0 and exp(0) = 1 exactly: the
    result is exact."""
    fmt, e_a, mu, _, _ = _ops(R, dtype)
    e_exp, units = elementary_parts("exp", R, dtype)
    g = (1 + e_a) * (1 + mu) * (1 + constant_error("ln2", R, dtype)) - 1
    return bounds.round_up((1 + e_exp + 2 * units * fmt.eta) * (1 + g) - 1), R * fmt.eta


def hypot_bound(R: int, dtype) -> tuple:
    """(relative, absolute) bound of :func:`hypot`.  With A, B the operands' magnitudes scaled by one
    power of two 2^-e (A in [1/2, 2), B <= A: exact, but for terms scaled below the normal range),
    ``S = A*A + B*B`` errs by ``theta = (1 + mu)(1 + e_a) - 1`` relative (two truncated products and one
    addition of nonnegative values) plus ``sigma = 4 (4 R + R(R + 1) + 1) eta`` relative (the terms of A
    and B scaled below the normal range, within R eta / 2 each, and the two products' underflow terms,
    relative to S >= 1/4); the square root adds e_sqrt (``bounds.sqrt``) and its underflow term
    (``bounds.newton_underflow_term``, relative to a result >= 1/2 twice it), ``sqrt(1 + d) - 1 <= d``:
    ``relative = (1 + e_sqrt + 2 nu)(1 + theta + sigma) - 1``.  The scaling back by 2^e is exact
    while the terms stay normal: ``absolute = R eta`` below the normal range."""
    fmt, e_a, mu, _, e_sq = _ops(R, dtype)
    nu = bounds.newton_underflow_term(R, fmt)
    theta = (1 + mu) * (1 + e_a) - 1
    sigma = 4 * (4 * R + R * (R + 1) + 1) * fmt.eta
    return bounds.round_up((1 + e_sq + 2 * nu) * (1 + theta + sigma) - 1), R * fmt.eta


def cbrt_bound(R: int, dtype) -> tuple:
    """(relative, absolute) bound of :func:`cbrt`.  The result is never subnormal, but its lower terms
    may be scaled below the normal range by the final 2^j: ``absolute = R eta``.

    |x| = m 2^(3j) with m in [1/2, 4) (exact, but for terms scaled below the normal range: 2 R eta
    relative, a third of it in the root).  Start ``y0 = exp(log(m) / 3)``: |log m| <= 1.39, the argument
    errs by at most ``0.47 g + 3 units_log eta``, g = (1 + e_log)(1 + e_div1) - 1 (e_div1: ``bounds.div``
    by a one-term 3), so ``eps0 = (1 + e_exp)(1 + 2 (0.47 g + 3 units_log eta)) - 1 + (2 units_exp + R) eta``
    (log's floor in the argument, exp's floor relative to y0 >= 0.79, m's scaling).
    One Newton step on y^3 = m with the computed residual: ``y1 = y0 - (y0^3 - m) / (3 y0^2)``, y0^3 and
    3 y0^2 within ``kappa = (1 + mu)^2 - 1`` of exact, the residual and the step each one safe
    addition, the quotient ``bounds.div``: with ``gamma = (1 + e_a)(1 + e_div)/(1 - kappa) - 1``,
    the exact step's error ``N = eps0^2 (3 + 2 eps0) / (3 (1 - eps0)^2)``, the step's size
    ``D1 = eps0 (3 + 3 eps0 + eps0^2) / (3 (1 - eps0)^2)`` and
    ``Delta = D1 gamma + (1 + eps0) kappa (1 + gamma) / 3 + 4 nu``:
    ``eps1 = N + Delta + e_a (1 + N + Delta)``.  The leading term c0 of y1 replaces y1 where the
    library's c0 * c0 * c0 equals m (exactly compared): then |c0 - m^(1/3)| <= kappa / (3 (1 - kappa))
    relative, and c0 is the exact root where the R-term products hold c0^3 exactly.  The bound is
    ``max(eps1, kappa / (3 (1 - kappa)))``."""
    fmt, e_a, mu, e_div, _ = _ops(R, dtype)
    eta = fmt.eta
    e_div1 = bounds.div(R, fmt, m=1).value
    e_log, u_log = elementary_parts("log", R, dtype)
    e_exp, u_exp = elementary_parts("exp", R, dtype)
    nu = bounds.newton_underflow_term(R, fmt)
    g = (1 + e_log) * (1 + e_div1) - 1
    eps0 = (1 + e_exp) * (1 + 2 * (Fraction(47, 100) * g + 3 * u_log * eta)) - 1 + (2 * u_exp + R) * eta
    kappa = (1 + mu) ** 2 - 1
    gamma = (1 + e_a) * (1 + e_div) / (1 - kappa) - 1
    N = eps0**2 * (3 + 2 * eps0) / (3 * (1 - eps0) ** 2)
    D1 = eps0 * (3 + 3 * eps0 + eps0**2) / (3 * (1 - eps0) ** 2)
    delta = D1 * gamma + (1 + eps0) * kappa * (1 + gamma) / 3 + 4 * nu
    eps1 = N + delta + e_a * (1 + N + delta)
    return bounds.round_up(max(eps1, kappa / (3 * (1 - kappa)))), R * eta


def asinh_bound(R: int, dtype) -> tuple:
    """(relative, absolute) bound of :func:`asinh`.  |x| < 1: ``z = a + a^2 / (1 + sqrt(1 + a^2))``
    (a = |x|): the quotient errs by ``w = (1 + mu)(1 + e_div) / ((1 - e_a)^2 (1 - e_sqrt)) - 1``, z by
    ``zeta = (1 + e_a)(1 + w) - 1`` relative (all terms nonnegative), and since log1p(z) >= z / (1 + z)
    a relative error zeta of z moves log1p(z) by at most zeta log1p(z): ``(1 + e_log1p)(1 + zeta) - 1``.
    |x| >= 1: ``log(a) + log1p(sqrt(1 + (1/a)^2))`` (nothing overflows), ``tau = (1 + e_rec)^2 (1 + mu) - 1``
    for (1/a)^2, ``rho = (1 + e_sqrt)(1 + e_a)(1 + tau) - 1`` for the square root (in [1, sqrt 2]), the
    log1p term (>= ln 2) within ``(1 + e_log1p)(1 + rho) - 1``, log(a) >= 0 within e_log, one safe
    addition of nonnegative terms.  ``absolute = (2 units + R(R + 1)) eta`` (the functions' floors and
    the products' underflow terms)."""
    fmt, e_a, mu, e_div, e_sq = _ops(R, dtype)
    e_l1p, units = elementary_parts("log1p", R, dtype)
    e_log, _ = elementary_parts("log", R, dtype)
    e_rec = bounds.reciprocal(R, fmt).value
    w = (1 + mu) * (1 + e_div) / ((1 - e_a) ** 2 * (1 - e_sq)) - 1
    small = (1 + e_l1p) * (1 + e_a) * (1 + w) - 1
    tau = (1 + e_rec) ** 2 * (1 + mu) - 1
    rho = (1 + e_sq) * (1 + e_a) * (1 + tau) - 1
    big = (1 + max(e_log, (1 + e_l1p) * (1 + rho) - 1)) * (1 + e_a) - 1 + 32 * fmt.eta
    return bounds.round_up(max(small, big)), (2 * units + R * (R + 1)) * fmt.eta


def acosh_bound(R: int, dtype) -> tuple:
    """(relative, absolute, near_one) with ``|result - f| <= (relative + near_one / (x - 1)) f + absolute``
    for :func:`acosh` (near_one only for x < 2).  1 <= x < 2:
    ``z = (x - 1) + sqrt((x - 1)(x + 1))``, x - 1 and x + 1 each one safe operation on the exact x (no
    cancellation error: e_a relative), the product mu, the square root e_sqrt: ``zeta =
    (1 + e_a)^2 (1 + e_sqrt)(1 + mu) - 1``; log1p(z) then within ``(1 + e_log1p)(1 + zeta) - 1``.
    x >= 2: ``log(x) + log1p(sqrt(1 - (1/x)^2))`` (nothing overflows; both terms >= 0.62):
    ``tau = (1 + e_rec)^2 (1 + mu) - 1``, ``rho = (1 + e_sqrt)(1 + e_a)(1 + tau) - 1``, the sum within
    ``(1 + max(e_log, (1 + e_log1p)(1 + rho) - 1))(1 + e_a) - 1``.  ``absolute = 2 units eta``.
    Near 1 the terms of P = (x - 1)(x + 1) reach the underflow threshold: P errs by at most
    ``c = mul_underflow_term + 2 R eta`` more, its square root S by ``c / (2 S)``, which relative to
    f >= S / 3 is ``3 c / (2 P) <= near_one / (x - 1)`` with ``near_one = c`` (P >= 2 (x - 1))."""
    fmt, e_a, mu, _, e_sq = _ops(R, dtype)
    e_l1p, units = elementary_parts("log1p", R, dtype)
    e_log, _ = elementary_parts("log", R, dtype)
    e_rec = bounds.reciprocal(R, fmt).value
    small = (1 + e_l1p) * (1 + e_a) ** 2 * (1 + e_sq) * (1 + mu) - 1
    tau = (1 + e_rec) ** 2 * (1 + mu) - 1
    rho = (1 + e_sq) * (1 + e_a) * (1 + tau) - 1
    big = (1 + max(e_log, (1 + e_l1p) * (1 + rho) - 1)) * (1 + e_a) - 1 + 32 * fmt.eta
    near_one = bounds.mul_underflow_term(R, fmt) + 2 * R * fmt.eta
    return bounds.round_up(max(small, big)), 2 * units * fmt.eta, near_one


def atanh_bound(R: int, dtype) -> tuple:
    """(relative, absolute) bound of :func:`atanh` (a = |x| < 1; 1 - a is one safe subtraction on the
    exact a: e_a relative, no cancellation error).  a < 1/2: ``q = 2a / (1 - a)`` (2a exact, the
    division e_div) within ``zeta = (1 + e_div)/(1 - e_a) - 1``; log1p(q) (>= q / (1 + q)) within
    ``(1 + e_log1p)(1 + zeta) - 1``.  a >= 1/2: ``log1p(a) - log(1 - a)``, log1p(a) >= 0.4 within
    e_log1p, log(1 - a) <= -ln 2 moved by at most ``e_a / (1 - e_a) <= 2 e_a |log(1 - a)|`` by the
    subtraction's error, then e_log: the difference of a positive and a negative term within
    ``(1 + max(e_log1p, (1 + e_log)(1 + 2 e_a) - 1))(1 + e_a) - 1``.  The halving is exact but below the
    normal range: ``absolute = (2 units + R) eta``."""
    fmt, e_a, _, e_div, _ = _ops(R, dtype)
    e_l1p, units = elementary_parts("log1p", R, dtype)
    e_log, _ = elementary_parts("log", R, dtype)
    zeta = (1 + e_div) / (1 - e_a) - 1
    small = (1 + e_l1p) * (1 + zeta) - 1
    big = (1 + max(e_l1p, (1 + e_log) * (1 + 2 * e_a) - 1)) * (1 + e_a) - 1
    return bounds.round_up(max(small, big)), (2 * units + R) * fmt.eta


def logaddexp_bound(R: int, dtype, diff, base2: bool = False) -> tuple:
    """(e_f, e_L, absolute) with ``|result - f| <= e_f |f| + e_L L + absolute`` for :func:`logaddexp`
    (``base2``: :func:`logaddexp2`) of operands with ``|x - y| = diff``, f the exact result and
    ``L = log1p(exp(-diff))`` (``log1p(2^-diff) / ln 2``) the exact correction.

    d = |x - y| errs by e_a d, so E = exp(-d) (exp2) errs by ``phi = e_E + (1 + e_E) 2 e_a diff``
    relative (while e_a diff <= 1); E <= 2 log1p(E), so the log1p term errs by
    ``(1 + e_l)(1 + 2 phi) - 1`` relative (base 2: e_l includes the product by 1/ln2 correctly rounded
    to R terms, ``(1 + e_log1p)(1 + mu)(1 + e_c) - 1``); the final safe addition e_a |f|.  Where
    e_a diff > 1, E and the term are 0 and e_L = 1.  ``absolute = 3 units eta`` (twice that in base
    2): the floors of exp and log1p."""
    fmt, e_a, mu, _, _ = _ops(R, dtype)
    e_E, units = elementary_parts("exp", R, dtype)
    e_l, _ = elementary_parts("log1p", R, dtype)
    if base2:
        e_E = exp2_bound(R, dtype)[0]
        e_l = (1 + e_l) * (1 + mu) * (1 + constant_error("inv_ln2", R, dtype)) - 1
    diff = Fraction(diff)
    if e_a * diff > 1:
        e_L = Fraction(1)
    else:
        phi = e_E + (1 + e_E) * 2 * e_a * diff
        e_L = bounds.round_up((1 + e_a) * ((1 + e_l) * (1 + 2 * phi) - 1))
    return e_a, e_L, (1 + e_a) * 3 * units * fmt.eta * (2 if base2 else 1)


# ----------------------------------------------------------------------------------------------
# logical functions (exact: NumPy's truth value of a float)


def _truth(v, like):
    """v != 0 exactly (NaN is true, -0 false): a boolean array on like's device."""
    if isinstance(v, ExpansionArray):
        return xp_of(v.terms).asarray(compare("ne", v, 0.0))
    return xp_of(like.terms).asarray(v) != 0


def _logical(op, x, y, what):
    like = x if isinstance(x, ExpansionArray) else _expansion(y, what)
    return op(_truth(x, like), _truth(y, like))


def logical_and(x, y):
    """``np.logical_and``: NumPy's truth value of each operand (nonzero, NaN included, is true; -0 is
    false), exact, as NumPy booleans."""
    return _logical(lambda a, b: a & b, x, y, "np.logical_and")


def logical_or(x, y):
    """``np.logical_or`` of the exact truth values (see :func:`logical_and`)."""
    return _logical(lambda a, b: a | b, x, y, "np.logical_or")


def logical_xor(x, y):
    """``np.logical_xor`` of the exact truth values (see :func:`logical_and`)."""
    return _logical(lambda a, b: a ^ b, x, y, "np.logical_xor")


def logical_not(x):
    """``np.logical_not``: x == 0 exactly (NaN is true, so its negation false)."""
    x = _expansion(x, "np.logical_not")
    return ~_truth(x, x)


# ----------------------------------------------------------------------------------------------
# exp2, hypot, cbrt


def exp2(x):
    """``np.exp2``: 2^x as ``2^k exp((x - k) ln2)`` with k = rint of the leading term (an exact integer,
    clipped to the range where 2^k over- or underflows), the difference one safe subtraction, ln2
    correctly rounded to R terms, and the exact scaling by 2^k (:func:`expansions.ufuncs.ldexp`), so
    that the error does not grow with |x|.  Bound :func:`exp2_bound` (exact for an integer x in range);
    overflow to inf, underflow to 0 (or subnormals), exp2(-inf) = 0, exp2(inf) = inf, NaN for NaN."""
    x = _expansion(x, "np.exp2")
    fmt = _fmt(x.dtype)
    xp = xp_of(x.terms)
    limit = fmt.emax - fmt.emin + fmt.p + 2  # beyond it 2^k alone over- or underflows
    lead = x.terms[..., 0]
    k = xp.rint(xp.clip(xp.where(xp.isfinite(lead), lead, 0), -limit, limit))
    r = binary("sub", x, ExpansionArray(xp.concatenate(
        [k[..., None], xp.zeros(k.shape + (x.nterms - 1,), dtype=x.dtype)], axis=-1)))
    with np.errstate(all="ignore"):
        e = exp(binary("mul", r, _const("ln2", x)))
        return ldexp(e, to_numpy_int(k.astype(xp.int64)))


def hypot(x, y):
    """``np.hypot``: sqrt(x^2 + y^2) of the magnitudes scaled by one power of two (that of the larger
    leading term, exact) so that nothing overflows or underflows where the result is representable;
    bound :func:`hypot_bound`.  hypot(+-inf, anything, NaN included) = inf, else NaN for NaN."""
    X, Y, shape = _flat_operands(x, y)
    xp = xp_of(X.terms)
    a, b = absolute(X), absolute(Y)
    m0 = xp.fmax(xp.abs(X.terms[:, 0]), xp.abs(Y.terms[:, 0]))
    e = to_numpy_int(_leading_exponent(m0))
    with np.errstate(all="ignore"):
        A, B = ldexp(a, -e), ldexp(b, -e)
        s = unary("sqrt", binary("add", binary("mul", A, A), binary("mul", B, B)))
        r = ldexp(s, e)
    r = where(_mask(isnan(X), X) | _mask(isnan(Y), X), np.nan, r)
    r = where(_mask(isinf(X), X) | _mask(isinf(Y), X), np.inf, r)
    return r.reshape(shape)


def cbrt(x):
    """``np.cbrt``: the real cube root, odd (cbrt(-x) = -cbrt(x)); cbrt(+-0) = +-0, cbrt(+-inf) = +-inf,
    NaN for NaN.  |x| = m 2^(3j) (exact scaling, m in [1/2, 4)), the start exp(log(m) / 3), one Newton
    step on y^3 = m with the computed residual, the leading term of the result taken where its cube
    (the library's products) equals m exactly, then scaled by 2^j: exact for exact cubes whose root is
    one float and whose cube the R-term products hold (x = 8, 27, 0.125, ...).  Bound
    :func:`cbrt_bound` (relative)."""
    x = _expansion(x, "np.cbrt")
    xp = xp_of(x.terms)
    special = _mask(compare("eq", x, 0.0), x) | ~_mask(isfinite(x), x)
    a = absolute(where(special, 1.0, x))
    j = _leading_exponent(a.terms[..., 0]) // 3
    jn = to_numpy_int(j)
    with np.errstate(all="ignore"):
        m = ldexp(a, -3 * jn)
        y0 = exp(binary("div", log(m), 3.0))
        sq = binary("mul", y0, y0)
        d = binary("div", binary("sub", binary("mul", sq, y0), m), binary("mul", sq, 3.0))
        y1 = binary("sub", y0, d)
        c0 = ExpansionArray(xp.concatenate([y1.terms[..., :1], xp.zeros_like(y1.terms[..., 1:])], axis=-1))
        cube = binary("mul", binary("mul", c0, c0), c0)
        y = where(_mask(compare("eq", cube, m), x), c0, y1)
        r = copysign(ldexp(y, jn), x)
    return where(special, x, r)


# ----------------------------------------------------------------------------------------------
# inverse hyperbolic functions


def asinh(x):
    """``np.arcsinh``: ``sign(x) log1p(|x| + x^2 / (1 + sqrt(1 + x^2)))`` for |x| < 1 (no cancellation
    near 0), ``sign(x) (log|x| + log1p(sqrt(1 + (1/x)^2)))`` for |x| >= 1 (no overflow); odd, +-0 and
    +-inf kept, NaN for NaN.  Bound :func:`asinh_bound`."""
    x = _expansion(x, "np.arcsinh")
    a = absolute(x)
    small = _mask(compare("lt", a, 1.0), x)
    with np.errstate(all="ignore"):
        s = where(small, a, 0.0)
        sq = binary("mul", s, s)
        q = binary("div", sq, binary("add", unary("sqrt", binary("add", sq, 1.0)), 1.0))
        rs = log1p(binary("add", s, q))
        b = where(small, 1.0, a)
        ib = unary("reciprocal", b)
        u = unary("sqrt", binary("add", binary("mul", ib, ib), 1.0))
        rb = binary("add", log(b), log1p(u))
        return copysign(where(small, rs, rb), x)


def acosh(x):
    """``np.arccosh`` for x >= 1: ``log1p((x - 1) + sqrt((x - 1)(x + 1)))`` for x < 2 (no cancellation
    near 1: x - 1 is computed on the exact x), ``log(x) + log1p(sqrt(1 - (1/x)^2))`` for x >= 2 (no
    overflow); acosh(1) = 0, acosh(inf) = inf, NaN below 1 and for NaN.  Bound :func:`acosh_bound`."""
    x = _expansion(x, "np.arccosh")
    small = _mask(compare("lt", x, 2.0), x)
    with np.errstate(all="ignore"):
        s = where(small, x, 1.0)
        d = binary("sub", s, 1.0)
        rs = log1p(binary("add", d, unary("sqrt", binary("mul", d, binary("add", s, 1.0)))))
        b = where(small, 2.0, x)
        ib = unary("reciprocal", b)
        u = unary("sqrt", binary("sub", 1.0, binary("mul", ib, ib)))
        rb = binary("add", log(b), log1p(u))
    r = where(small, rs, rb)
    return where(_mask(compare("lt", x, 1.0), x) | _mask(isnan(x), x), np.nan, r)


def atanh(x):
    """``np.arctanh``: ``sign(x) log1p(2|x| / (1 - |x|)) / 2`` for |x| < 1/2 (no cancellation near 0),
    ``sign(x) (log1p(|x|) - log(1 - |x|)) / 2`` above (no overflow of 2|x| / (1 - |x|) near 1; 1 - |x| is
    computed on the exact x); atanh(+-1) = +-inf, NaN for |x| > 1 and NaN, +-0 kept.  Bound
    :func:`atanh_bound`."""
    x = _expansion(x, "np.arctanh")
    a = absolute(x)
    inside = _mask(compare("lt", a, 1.0), x)
    small = _mask(compare("lt", a, 0.5), x)
    with np.errstate(all="ignore"):
        s = where(small, a, 0.0)
        rs = log1p(binary("div", binary("mul", s, 2.0), binary("sub", 1.0, s)))
        h = where(inside & ~small, a, 0.5)
        rh = binary("sub", log1p(h), log(binary("sub", 1.0, h)))
        r = copysign(binary("mul", where(small, rs, rh), 0.5), x)
    one = _mask(compare("eq", a, 1.0), x)
    negative_x = _mask(signbit(x), x)
    r = where(one & negative_x, -np.inf, where(one & ~negative_x, np.inf, r))
    return where(_mask(compare("gt", a, 1.0), x) | _mask(isnan(x), x), np.nan, r)


# ----------------------------------------------------------------------------------------------
# logaddexp, logaddexp2


def _logaddexp(x, y, base2):
    X, Y, shape = _flat_operands(x, y)
    with np.errstate(all="ignore"):
        m = maximum(X, Y)
        d = negative(absolute(binary("sub", X, Y)))
        if base2:
            term = binary("mul", log1p(exp2(d)), _const("inv_ln2", X))
        else:
            term = log1p(exp(d))
        r = binary("add", m, term)
    same_inf = _mask(isinf(X), X) & _mask(compare("eq", X, Y), X)  # inf - inf: the infinity itself
    return where(same_inf, X, r).reshape(shape)


def logaddexp(x, y):
    """``np.logaddexp``: log(e^x + e^y) as ``max(x, y) + log1p(exp(-|x - y|))`` (no overflow for large
    operands); logaddexp(-inf, -inf) = -inf, an infinity with anything (but NaN) the larger, NaN for NaN.
    Bound :func:`logaddexp_bound`."""
    return _logaddexp(x, y, False)


def logaddexp2(x, y):
    """``np.logaddexp2``: log2(2^x + 2^y) as ``max(x, y) + log1p(exp2(-|x - y|)) / ln2`` (1/ln2 correctly
    rounded to R terms, :func:`exp2`), with logaddexp's special values.  Bound :func:`logaddexp_bound`
    with ``base2=True``."""
    return _logaddexp(x, y, True)


# ----------------------------------------------------------------------------------------------
# NumPy 2's vector products (gufuncs), through the library's matrix product


def _vectors(a, b, what):
    x, y = operands(a, b)
    if x.ndim == 0 or y.ndim == 0:
        raise ValueError(f"{what}: an operand is 0-d (the core dimension is missing)")
    return x, y


def vecdot(x1, x2):
    """``np.vecdot``: the dot products of the vectors along the last axes, the other axes broadcast:
    :func:`expansions.matmul` of ``x1[..., None, :]`` and ``x2[..., :, None]`` (the same bits as
    ``expansions.dot`` of each pair of vectors); each entry within ``bounds.matmul(n, R, fmt)`` of
    ``sum_k |x1_k x2_k|``."""
    x, y = _vectors(x1, x2, "np.vecdot")
    r = matmul(x.reshape(x.shape[:-1] + (1, x.shape[-1])), y.reshape(y.shape + (1,)))
    return r.reshape(r.shape[:-2])


def matvec(x1, x2):
    """``np.matvec``: matrix (..., m, n) times vector (..., n), the batch axes broadcast:
    :func:`expansions.matmul` of x1 and ``x2[..., None]`` (for one matrix and one vector, the bits of
    ``expansions.matmul(x1, x2)``); each entry within ``bounds.matmul(n, R, fmt)``."""
    x, y = _vectors(x1, x2, "np.matvec")
    if x.ndim < 2:
        raise ValueError("np.matvec: the first operand must have at least two dimensions")
    r = matmul(x, y.reshape(y.shape + (1,)))
    return r.reshape(r.shape[:-1])


def vecmat(x1, x2):
    """``np.vecmat``: vector (..., n) times matrix (..., n, m), the batch axes broadcast:
    :func:`expansions.matmul` of ``x1[..., None, :]`` and x2 (for one vector and one matrix, the bits of
    ``expansions.matmul(x1, x2)``); each entry within ``bounds.matmul(n, R, fmt)``."""
    x, y = _vectors(x1, x2, "np.vecmat")
    if y.ndim < 2:
        raise ValueError("np.vecmat: the second operand must have at least two dimensions")
    r = matmul(x.reshape(x.shape[:-1] + (1, x.shape[-1])), y)
    return r.reshape(r.shape[:-2] + r.shape[-1:])


_UFUNCS = [("logical_and", logical_and), ("logical_or", logical_or), ("logical_xor", logical_xor),
           ("logical_not", logical_not), ("exp2", exp2), ("hypot", hypot), ("cbrt", cbrt), ("arcsinh", asinh),
           ("arccosh", acosh), ("arctanh", atanh), ("logaddexp", logaddexp), ("logaddexp2", logaddexp2),
           ("vecdot", vecdot), ("matvec", matvec), ("vecmat", vecmat)]
for _name, _fn in _UFUNCS:
    if isinstance(getattr(np, _name, None), np.ufunc):
        register_ufunc(getattr(np, _name), _fn)
    UNSUPPORTED_HINTS.pop(_name, None)
