"""Element-wise functions of ExpansionArrays (NumPy ufuncs and the Python operators that share them).

Exact, with the array module of the terms (CPU and GPU alike):

- :func:`maximum`, :func:`minimum`, :func:`clip` (exact comparisons, :func:`expansions.operations.compare`;
  NaN propagates as in NumPy), :func:`sign`, :func:`signbit`, :func:`isfinite`, :func:`isnan`,
  :func:`isinf`;
- :func:`floor`, :func:`ceil`, :func:`trunc`, :func:`rint` (half to even).  The method
  (:func:`_integer_part`): with t_i the terms, ``x = sum trunc(t_i) + S`` where ``S = sum (t_i -
  trunc(t_i))``; each ``t_i - trunc(t_i)`` is exact (the bits of t_i below the unit, a float of
  t_i's sign; ``t_i - floor(t_i)`` would not be: 1 - 2^-80 is not a float64), S lies in (-R, R) and is
  renormalized error-free, ``k = floor(S)`` is the floor of its leading term, corrected by one down or
  up by two exact comparisons (S < k, S >= k + 1).  Then ``floor(x) = sum trunc(t_i) + k`` (R + 1
  integer floats, renormalized error-free) and the fractional part ``d = S - k`` is exact in [0, 1).
  ceil adds ``d != 0``, rint compares d with 1/2 exactly and breaks ties by the parity of floor(x)
  (the sum of ``fmod(f_i, 2)`` over its integer terms f_i, exact).  For an ulp-nonoverlapping x the
  integer fits R terms: let t_j be the first term with bits below the unit (if none, x is an integer
  and floor(x) = x); then |t_j| < 2^(p-1), ulp(t_j) < 1, so every later term has |t_i| < 1 and S lies
  in (-2, 2); floor(x) = t_0 + ... + t_{j-1} + (trunc(t_j) + k), the last an integer below 2^p in
  magnitude, one float: j + 1 <= R terms.  The R + 1 integer terms are renormalized to R + 1 terms
  (error-free) and the first R kept; the tests check the result against the exact floor.  A zero result has the
  sign of x (``floor(-0.0) = -0.0``, ``ceil(-0.5) = -0.0``, as NumPy).

With R-term arithmetic (stated per function):

- :func:`floor_divide` (``//``), :func:`remainder` (``%``), :func:`fmod` (:func:`_divmod`): the exact
  floor (or truncation, for fmod) of x / y rounded to R terms, and the exact remainder rounded to R
  terms.  The quotient q is the floor of the R-term division of x and y (of |x| and |y| for fmod),
  within one of the exact floor wherever |x / y| < 1 / (4 bounds.div(R)) (the division's error is then
  below 1/4); the remainder x - q y is computed exactly (every product q_k y_j split by the
  two-product, the terms summed by the error-free renormalization, in stages of at most 32 terms) and
  its sign and comparison with y correct q by one step, exactly.  Rows outside that range (larger
  quotients, operands near the overflow threshold, divisor terms near the underflow threshold, where
  the two-product's error is not exact, or sums that need more than 32 terms) are computed with exact
  rationals.  Zero results take NumPy's signs (``%``: y's, fmod: x's, ``//``: that of x / y); a
  non-finite operand or a zero divisor gives NumPy's result on the operands' values (their leading
  terms, or NaN for a finite leading term with a non-finite lower term), and a finite x modulo an
  infinity is x itself where NumPy's is finite.
- :func:`power` (``**``) with an integer exponent: binary powering with the library's truncated
  multiplication; a negative exponent takes the reciprocal (Newton) of the positive power, computed
  on exactly scaled operands where that power would overflow or underflow (so a representable
  result, subnormal ones included, is not flushed).  Bound :func:`power_bound`.  Expansion or
  non-integer exponents: :func:`expansions.pow` (exp(y log x), :mod:`expansions.elementary`);
  ``**`` with such an exponent stays a TypeError.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction

import numpy as np

from . import bounds
from . import formats as F
from .arraytype import HANDLED, ExpansionArray, implements
from .backends import for_terms, to_numpy, xp_of
from .convert import expansion_of_exact
from .cpu.eft import two_prod
from .cpu.newton import scale as _newton_scale
from .numpy_protocol import register_ufunc, write_out
from .operations import binary, compare, flat_pair, operands, unary
from .operations import sign as _sign_values

__all__ = ["maximum", "minimum", "clip", "sign", "signbit", "isfinite", "isnan", "isinf", "floor", "ceil",
           "trunc", "rint", "floor_divide", "remainder", "fmod", "power", "power_bound"]


def _expansion(x, what):
    if not isinstance(x, ExpansionArray):
        raise TypeError(f"{what} expects an ExpansionArray, got {type(x).__name__}")
    return x


def _renorm(t, R):
    """Error-free renormalization of raw terms t (..., n) to R terms (R >= n keeps every bit)."""
    with np.errstate(all="ignore"):
        return for_terms(t).renormalize(t.reshape(-1, t.shape[-1]), R).reshape(t.shape[:-1] + (R,))


# ----------------------------------------------------------------------------------------------
# classification and sign


def _nonfinite_value(t):
    """The IEEE value that the library's non-finite rule gives each row with a non-finite term: its
    leading term where that is not finite, NaN where the leading term is finite but a lower term is not
    (finite rows: their leading term)."""
    xp = xp_of(t)
    lead = t[..., 0]
    lower_bad = xp.isfinite(lead) & ~xp.isfinite(t).all(axis=-1)
    return xp.where(lower_bad, xp.asarray(np.nan, dtype=t.dtype), lead)


def _canonical(t):
    """Rows with a non-finite term as the rule writes results: (their IEEE value, 0, ..., 0)."""
    xp = xp_of(t)
    bad = ~xp.isfinite(t).all(axis=-1)
    out = xp.where(bad[..., None], xp.zeros_like(t), t)
    out[..., 0] = xp.where(bad, _nonfinite_value(t), t[..., 0])
    return out


def isfinite(x):
    """``np.isfinite``: every term finite (a boolean array on x's device; a bool for 0-d)."""
    r = xp_of(_expansion(x, "isfinite").terms).isfinite(x.terms).all(axis=-1)
    return r if x.ndim else bool(r)


def isinf(x):
    """``np.isinf``: the leading term is an infinity (the value of the row by the non-finite rule)."""
    r = xp_of(_expansion(x, "isinf").terms).isinf(x.terms[..., 0])
    return r if x.ndim else bool(r)


def isnan(x):
    """``np.isnan``: the leading term is NaN, or it is finite and a lower term is not (such an operand
    counts as NaN)."""
    r = xp_of(_expansion(x, "isnan").terms).isnan(_nonfinite_value(x.terms))
    return r if x.ndim else bool(r)


def _one_term(v, like: ExpansionArray) -> ExpansionArray:
    """An expansion of like's format whose leading term is v (a terms-dtype array), the others 0."""
    xp = xp_of(v)
    t = xp.zeros(tuple(v.shape) + (like.nterms,), dtype=like.dtype)
    t[..., 0] = v
    return ExpansionArray(t)


def sign(x):
    """``np.sign``: -1, 0 or +1 (NaN for NaN) as an expansion of x's format (exact)."""
    return _one_term(_sign_values(_expansion(x, "sign")), x)


def signbit(x):
    """``np.signbit``: the value is negative, or a zero or NaN with its sign bit set (exact)."""
    s = _sign_values(_expansion(x, "signbit"))
    xp = xp_of(s)
    r = (s < 0) | ((s == 0) | xp.isnan(s)) & xp.signbit(x.terms[..., 0])
    return r if x.ndim else bool(r)


def _extremum(op, x, y):
    x, y = operands(x, y)
    xt, yt, shape = flat_pair(x, y)
    xp = xp_of(xt)
    X, Y = ExpansionArray(xt), ExpansionArray(yt)
    pick_x = xp.asarray(compare(op, X, Y)) | xp.asarray(isnan(X))  # equal values: y, as NumPy
    pick_x &= ~xp.asarray(isnan(Y)) | xp.asarray(isnan(X))
    return ExpansionArray(_signed_zero_extremum(op, xt, yt, _canonical(xp.where(pick_x[:, None], xt, yt)))
                          .reshape(shape + (x.nterms,)))


def _signed_zero_extremum(op, xt, yt, out):
    """out with the extremum of two zeros as IEEE 754-2019 orders them (-0 < +0): the larger ("gt")
    is -0 only if both are, the smaller ("lt") is +0 only if both are."""
    xp = xp_of(out)
    zx = (xt == 0).all(axis=-1)
    zy = (yt == 0).all(axis=-1)
    sx, sy = xp.signbit(xt[:, 0]), xp.signbit(yt[:, 0])
    negative = (sx & sy) if op == "gt" else (sx | sy)
    both = zx & zy
    out[:, 0] = xp.where(both, xp.where(negative, -xp.zeros_like(out[:, 0]), 0), out[:, 0])
    return out


def maximum(x, y):
    """``np.maximum`` (exact comparison; a NaN operand gives NaN, the first one when both are; of two
    equal values the second, as NumPy, but of +0 and -0 the larger by IEEE 754-2019, +0; a non-finite
    result is written as the non-finite rule writes it, (value, 0, ..., 0))."""
    return _extremum("gt", x, y)


def minimum(x, y):
    """``np.minimum`` (exact comparison; a NaN operand gives NaN; of two equal values the second, as
    NumPy, but of +0 and -0 the smaller by IEEE 754-2019, -0)."""
    return _extremum("lt", x, y)


@implements(np.clip)
def clip(x, a_min=None, a_max=None, out=None, **kwargs):
    """``np.clip``: ``minimum(maximum(x, a_min), a_max)`` (either bound may be None); exact."""
    if kwargs.get("min") is not None or kwargs.get("max") is not None:
        a_min, a_max = kwargs.get("min", a_min), kwargs.get("max", a_max)
    r = _expansion(x, "clip")
    if a_min is not None:
        r = maximum(r, a_min)
    if a_max is not None:
        r = minimum(r, a_max)
    if r is x:
        r = x.copy()
    return r if out is None else write_out(out, r, "np.clip")


# ----------------------------------------------------------------------------------------------
# integer parts (exact; see the module docstring)


def _integer_part(x: ExpansionArray):
    """(I, d, finite): I the (..., R + 1) integer terms whose sum is floor(x), d the exact fractional
    part x - floor(x) in [0, 1) as an expansion of R + 1 terms, finite the rows to which they apply."""
    R = x.nterms
    xp = xp_of(x.terms)
    with np.errstate(all="ignore"):
        t = x.terms
        finite = xp.isfinite(t).all(axis=-1)
        t = xp.where(finite[..., None], t, 0)
        g = xp.trunc(t)
        S = ExpansionArray(_renorm(t - g, R))  # exact: t_i - trunc(t_i) is the bits of t_i below the unit
        k = xp.floor(S.terms[..., 0])  # floor(S) is k - 1, k or k + 1: decided by exact comparisons
        k = k - xp.asarray(compare("lt", S, _one_term(k, x))).astype(k.dtype)
        k = k + xp.asarray(compare("ge", S, _one_term(k + 1, x))).astype(k.dtype)
        ints = xp.concatenate([g, k[..., None]], axis=-1)
        d = _renorm(xp.concatenate([S.terms, -k[..., None]], axis=-1), R + 1)
    return ints, ExpansionArray(d), finite


def _finish(x: ExpansionArray, ints, finite):
    """The integer whose terms are ``ints`` as an R-term expansion; a zero keeps x's sign; a non-finite
    row of x gives its IEEE value (the library's rule)."""
    R = x.nterms
    xp = xp_of(ints)
    r = _renorm(ints, ints.shape[-1])[..., :R]
    r = xp.ascontiguousarray(r)
    zero = (r == 0).all(axis=-1)
    r[..., 0] = xp.where(zero, xp.copysign(r[..., 0], x.terms[..., 0]), r[..., 0])
    special = _nonfinite_value(x.terms)
    r[..., 0] = xp.where(finite, r[..., 0], special)
    r[..., 1:] = xp.where(finite[..., None], r[..., 1:], 0)
    return ExpansionArray(r)


def _with_extra(ints, extra):
    return xp_of(ints).concatenate([ints, extra[..., None].astype(ints.dtype)], axis=-1)


def floor(x):
    """``np.floor``, exact (see the module docstring)."""
    ints, _, finite = _integer_part(_expansion(x, "floor"))
    return _finish(x, ints, finite)


def ceil(x):
    """``np.ceil``, exact: floor(x) + 1 where the fractional part is not zero."""
    ints, d, finite = _integer_part(_expansion(x, "ceil"))
    return _finish(x, _with_extra(ints, d.terms[..., 0] != 0), finite)


def trunc(x):
    """``np.trunc``, exact: ceil for negative values, floor otherwise."""
    ints, d, finite = _integer_part(_expansion(x, "trunc"))
    neg = _sign_values(x) < 0
    return _finish(x, _with_extra(ints, neg & (d.terms[..., 0] != 0)), finite)


def rint(x):
    """``np.rint``: the nearest integer, ties to even; exact."""
    ints, d, finite = _integer_part(_expansion(x, "rint"))
    xp = xp_of(ints)
    half = _one_term(xp.full(d.shape, 0.5, dtype=x.dtype), d)
    above = xp.asarray(compare("gt", d, half))
    tie = xp.asarray(compare("eq", d, half))
    with np.errstate(all="ignore"):
        odd = xp.fmod(xp.abs(xp.fmod(ints, 2).sum(axis=-1)), 2) == 1
    return _finish(x, _with_extra(ints, above | tie & odd), finite)


# ----------------------------------------------------------------------------------------------
# division with an integer quotient


def _power_of_two(y) -> float | None:
    """y's value as a float when y is a Python/NumPy float or int that is a power of two (else None)."""
    if isinstance(y, (bool, np.bool_)) or not isinstance(y, (numbers.Real, np.floating, np.integer)):
        return None
    v = float(y)
    if not math.isfinite(v) or v == 0 or Fraction(v) != Fraction(y):
        return None
    m, _ = math.frexp(abs(v))
    return v if m == 0.5 else None


def _value_terms(t):
    """Exact renormalization of each row of terms t (..., n) to n terms: the leading term carries the
    value's sign and is zero only for a zero value."""
    return _renorm(t, t.shape[-1])


def _quotient_limit(R: int, fmt) -> float:
    """A power of two below which the floor of the R-term quotient is within one of the exact floor:
    ``|q - x/y| <= div(R) |x/y| < 1/4`` for ``|x/y| < 1 / (4 div(R))`` (bounds.div; its underflow term
    is far below 1/4)."""
    b = bounds.div(R, fmt).value
    return 2.0 ** math.floor(math.log2(1 / (4 * b)))


#: The most terms the renormalization takes (formats.MAX_TERMS): exact sums of more terms run in stages.
_SUM_TERMS = F.MAX_TERMS


def _exact_sum(parts, keep: int):
    """The exact sum of the rows of the term arrays ``parts`` (each (count, n_i)), renormalized
    error-free into ``keep`` terms, in stages of at most :data:`_SUM_TERMS` terms: ``(terms, lost)``,
    ``lost`` the rows whose value needed more terms at some stage (their terms are then not exact)."""
    xp = xp_of(parts[0])
    count = parts[0].shape[0]
    acc = xp.zeros((count, 0), dtype=parts[0].dtype)
    lost = xp.zeros(count, dtype=bool)
    pending = [c for p in parts for c in xp.split(p, p.shape[1], axis=1)]  # single terms
    while pending:
        room = _SUM_TERMS - acc.shape[1]
        take, pending = pending[:room], pending[room:]
        t = _value_terms(xp.concatenate([acc] + take, axis=1))
        # while terms are pending, leave room for up to half a stage of them
        width = min(t.shape[1], keep if not pending else min(keep, _SUM_TERMS - min(len(pending), _SUM_TERMS // 2)))
        lost |= (t[:, width:] != 0).any(axis=1)
        acc = t[:, :width]
    if acc.shape[1] < keep:
        acc = xp.concatenate([acc, xp.zeros((count, keep - acc.shape[1]), dtype=acc.dtype)], axis=1)
    return acc, lost


def _residual(a, q, b):
    """``(terms, lost)``: a - q b exactly (every product q_k b_j split by the two-product, whose error
    is exact where the caller checked the range) in :data:`_SUM_TERMS` - R terms (:func:`_exact_sum`);
    only the columns of q with a nonzero term are multiplied."""
    xp = xp_of(a)
    used = int(xp.nonzero((q != 0).any(axis=0))[0].max()) + 1 if bool((q != 0).any()) else 0
    count, R = a.shape
    parts = [a]
    for k in range(used):
        hi, lo = two_prod(*xp.broadcast_arrays(q[:, k:k + 1], b))
        parts += [-hi, -lo]
    return _exact_sum(parts, _SUM_TERMS - R)


def _divmod(x, y, truncated: bool):
    """``(q, r)`` for ``x // y`` and ``x % y`` (NumPy's floor division and remainder, r of y's sign),
    or with ``truncated`` for C's division and ``fmod`` (r of x's sign), as ExpansionArrays of the
    broadcast shape.  The method (see the module docstring): the floor of the R-term quotient of |x| and
    |y| (or x and y), one step corrected by the sign of the exact remainder, which is then rounded to R
    terms; rows outside the range where that is proven (quotients of 1 / (4 div(R)) or more, operands
    near the overflow threshold, divisor terms near the underflow threshold) exactly with rationals;
    non-finite operands and zero divisors as NumPy on the operands' values."""
    x, y = operands(x, y)
    xt, yt, shape = flat_pair(x, y)
    R, dt = x.nterms, x.dtype
    fmt = F.format_of(dt)
    xp = xp_of(xt)
    with np.errstate(all="ignore"):
        xv, yv = _value_terms(xt), _value_terms(yt)
        finite = xp.isfinite(xt).all(axis=-1) & xp.isfinite(yt).all(axis=-1)
        regular = finite & (yv[:, 0] != 0)
        # the values' leading terms; a zero value keeps its leading term's sign
        xl = xp.where(xv[:, 0] == 0, xt[:, 0], xv[:, 0])
        yl = xp.where(yv[:, 0] == 0, yt[:, 0], yv[:, 0])
        x_neg, y_neg = xp.signbit(xl), xp.signbit(yl)
        if truncated:  # |x| and |y|: the floor of their quotient is the truncated quotient's magnitude
            a = xp.where(x_neg[:, None], -xv, xv)
            b = xp.where(y_neg[:, None], -yv, yv)
        else:
            a, b = xv, yv
        a = xp.where(regular[:, None], a, 0)
        b = xp.where(regular[:, None], b, 1)
        quotient = binary("div", ExpansionArray(a), ExpansionArray(b))
        ints, _, _ = _integer_part(quotient)
        q = _finish(quotient, ints, xp.ones(a.shape[0], dtype=bool)).terms
        tiny = xp.where(b != 0, xp.abs(b), xp.asarray(np.inf, dtype=dt)).min(axis=-1)
        big = dt.type(2.0 ** (fmt.emax - 2))
        exact = (regular & (xp.abs(quotient.terms[:, 0]) < _quotient_limit(R, fmt))
                 & (xp.abs(a[:, 0]) < big) & (xp.abs(b[:, 0]) < big) & (tiny >= dt.type(2.0 ** (fmt.emin + fmt.p))))
        q = xp.where(exact[:, None], q, 0)
        e, lost = _residual(xp.where(exact[:, None], a, 0), q, b)
        exact &= ~lost
        # one step: the remainder belongs to [0, b) (b > 0) or (b, 0] (b < 0)
        over = _value_terms(xp.concatenate([e, -b], axis=-1))[:, 0]
        b_pos = b[:, 0] > 0
        up = xp.where(b_pos, over >= 0, over <= 0)
        down = xp.where(b_pos, e[:, 0] < 0, e[:, 0] > 0)
        step = (up.astype(dt) - down.astype(dt))[:, None]
        q = _renorm(xp.concatenate([q, step], axis=-1), R + 1)[:, :R]
        r = _value_terms(xp.concatenate([e, -step * b], axis=-1))[:, :R]  # exact, then R terms kept
        rest = xp.nonzero(regular & ~exact)[0]
        if rest.shape[0]:
            q, r = _divmod_exact(a, b, q, r, rest, fmt)
        # zero results take NumPy's signs
        if truncated:
            r = xp.where(x_neg[:, None], -r, r)
            q = xp.where((x_neg != y_neg)[:, None], -q, q)
        r_zero = (r == 0).all(axis=-1)
        q_zero = (q == 0).all(axis=-1)
        r[:, 0] = xp.where(r_zero, xp.copysign(xp.zeros_like(r[:, 0]), xl if truncated else yl), r[:, 0])
        q[:, 0] = xp.where(q_zero, xp.copysign(xp.zeros_like(q[:, 0]), xp.where(x_neg != y_neg, -1.0, 1.0).astype(dt)),
                           q[:, 0])
        # the other rows: NumPy on the values (the non-finite rule's values: NaN for a finite leading term
        # with a non-finite lower term); a finite remainder there (x finite, y infinite) is x itself
        special = ~regular
        if bool(special.any()):
            X = xp.where(xp.isfinite(xt).all(axis=-1), xl, _nonfinite_value(xt))
            Y = xp.where(xp.isfinite(yt).all(axis=-1), yl, _nonfinite_value(yt))
            nq = xp.floor_divide(X, Y) if not truncated else xp.trunc(X / Y)
            nr = xp.fmod(X, Y) if truncated else xp.remainder(X, Y)
            keep_x = special & xp.isfinite(xt).all(axis=-1) & xp.isfinite(nr) & (nr != 0)
            zeros = xp.zeros_like(r)
            q = xp.where(special[:, None], zeros, q)
            q[:, 0] = xp.where(special, nq, q[:, 0])
            r = xp.where(special[:, None], zeros, r)
            r[:, 0] = xp.where(special, nr, r[:, 0])
            r = xp.where(keep_x[:, None], xv, r)
    return ExpansionArray(q.reshape(shape + (R,))), ExpansionArray(r.reshape(shape + (R,)))


def _divmod_exact(a, b, q, r, rows, fmt):
    """Rows ``rows`` of (floor(a / b), a - floor(a / b) b) from the exact rationals of the terms, each
    rounded to R terms (a quotient beyond the range is ±inf)."""
    xp = xp_of(a)
    R = q.shape[-1]
    host = [to_numpy(v) for v in (a[rows], b[rows], rows)]
    q, r = to_numpy(q).copy(), to_numpy(r).copy()
    for ta, tb, i in zip(*host):
        A = sum(Fraction(float(t)) for t in ta)
        B = sum(Fraction(float(t)) for t in tb)
        k = math.floor(A / B)
        q[i] = expansion_of_exact(Fraction(k), R, fmt)
        r[i] = expansion_of_exact(A - k * B, R, fmt)
    return xp.asarray(q), xp.asarray(r)


def floor_divide(x, y):
    """``x // y``: the exact floor of x / y rounded to R terms (see :func:`_divmod`); a power-of-two
    divisor is an exact scaling."""
    p2 = _scaling_divisor(x, y)
    if p2 is not None:
        return floor(binary("mul", x, 1.0 / p2))  # an exact scaling (barring underflow)
    return _divmod(x, y, False)[0]


def _scaling_divisor(x, y) -> float | None:
    """y as a float where ``x // y`` is the floor of an exact scaling of the expansion x (y a power of
    two between 2**-100 and 2**100), else None."""
    p2 = _power_of_two(y) if isinstance(x, ExpansionArray) else None
    return p2 if p2 is not None and 2.0**-100 <= abs(p2) <= 2.0**100 else None


def remainder(x, y):
    """``x % y`` (NumPy's remainder, the sign of y): ``x - y floor(x / y)`` computed exactly, rounded to
    R terms (see :func:`_divmod`)."""
    return _divmod(x, y, False)[1]


def fmod(x, y):
    """``np.fmod`` (C's fmod, the sign of x): ``x - y trunc(x / y)`` computed exactly, rounded to R
    terms (see :func:`_divmod`)."""
    return _divmod(x, y, True)[1]


# ----------------------------------------------------------------------------------------------
# integer powers


def _integer_exponent(n):
    if isinstance(n, ExpansionArray):
        raise TypeError("power takes integer exponents: for an expansion exponent use expansions.pow (which "
                        "x ** y and np.power call)")
    if hasattr(n, "ndim") and getattr(n, "ndim", 0) == 0:
        n = n.item()
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (numbers.Integral, float, np.floating)) or \
            (not isinstance(n, numbers.Integral) and not float(n).is_integer()):
        raise TypeError(f"x ** {n!r}: only integer exponents are supported for ExpansionArrays (binary "
                        "powering); non-integer exponents: expansions.pow")
    return int(n)


def binary_powering(x, e: int, mul):
    """x^e for an integer e >= 1 by square and multiply, ``mul(a, b)`` the product: the products of
    :func:`power`, in its order (``expansions.fuse`` records the same ones).  x itself when e = 1."""
    result, base = None, x
    while True:
        if e & 1:
            result = base if result is None else mul(result, base)
        e >>= 1
        if not e:
            return result
        base = mul(base, base)


def _scaled_terms(t, shift):
    """The terms t scaled by 2^-shift (per row), as the kernels' ``scale`` scales (two products by
    powers of two, :func:`expansions.cpu.newton.scale`): exact but for terms that fall below the
    underflow threshold, so that a fused CUDA program gives the same bits."""
    xp = xp_of(t)
    flat = t.reshape(-1, t.shape[-1])
    with np.errstate(all="ignore"):
        return _newton_scale(flat, -xp.asarray(shift, dtype=np.int64).reshape(-1)).reshape(t.shape)


def _leading_exponent(t):
    """e with |t_0| in [2^(e-1), 2^e) for rows with a finite nonzero leading term, 0 for the others."""
    xp = xp_of(t)
    lead = t[..., 0]
    ok = xp.isfinite(lead) & (lead != 0)
    return xp.where(ok, xp.frexp(xp.where(ok, lead, 1))[1], 0).astype(np.int64)


def _scaled_product(a, b):
    """(M, E) pairs, value M 2^E with M's leading term in [1/2, 1): the truncated product, rescaled."""
    m = binary("mul", a[0], b[0])
    s = _leading_exponent(m.terms)
    return ExpansionArray(_scaled_terms(m.terms, s)), a[1] + b[1] + s


def _reciprocal_power_scaled(x: ExpansionArray, m: int) -> ExpansionArray:
    """1 / x^m with x scaled to [1/2, 1) before the powering and each product rescaled (an exact
    power-of-two scaling), so that no intermediate overflows or underflows; the exponent is applied
    to the Newton reciprocal at the end (rounding each term where the result is subnormal), then
    renormalized.  The non-finite rule holds: a non-finite leading term keeps zeros below it."""
    e0 = _leading_exponent(x.terms)
    M, E = binary_powering((ExpansionArray(_scaled_terms(x.terms, e0)), e0), m, _scaled_product)
    r = unary("reciprocal", M)
    t = _scaled_terms(r.terms, E)
    t[..., 1:] = xp_of(t).where(xp_of(t).isfinite(t[..., :1]), t[..., 1:], 0)
    return ExpansionArray(_renorm(t, x.nterms))


# the scaled path of x ** -m is taken for exponents below this (the exponent sums stay exact int64)
SCALED_POWER_LIMIT = 2**52


def _needs_scaling(x: ExpansionArray, m: int):
    """Rows where x^m might leave [2^L, 2^emax) (overflow, or a tail that falls below the underflow
    threshold where the scaled power's would not), L = min(emin + R p, 0): the reciprocal of such a
    power is computed scaled."""
    fmt = F.format_of(x.dtype)
    lead = x.terms[..., 0]
    e0 = _leading_exponent(x.terms)
    usual = xp_of(lead).isfinite(lead) & (lead != 0)
    low = min(fmt.emin + x.nterms * fmt.p, 0)
    return usual & ((e0 * m > fmt.emax) | ((e0 - 1) * m - 1 < low))


def power(x, n):
    """``x ** n`` for an integer n: binary powering (square and multiply, at most 2 floor(log2 |n|)
    truncated products); a negative n takes the Newton reciprocal of ``x ** |n|``, and where that power
    could overflow or fall below the range (``|x^|n||`` outside ``[2^min(emin + R p, 0), 2^emax)``) the
    powering runs on x scaled to [1/2, 1), each product rescaled by its exponent (exact powers of two),
    and the exponent is applied to the reciprocal at the end: a representable result is not flushed to
    zero (a subnormal one within a few units of the smallest subnormal).  ``x ** 0`` is 1 (also for NaN,
    as NumPy).  Bound :func:`power_bound` (no underflow or overflow of the result).  Traced programs
    (``expansions.fuse``) record the same products, the reciprocal and :func:`power_finish`."""
    x = _expansion(x, "power")
    n = _integer_exponent(n)
    if n == 0:
        return _one_term(xp_of(x.terms).ones(x.shape, dtype=x.dtype), x)
    result = binary_powering(x, abs(n), lambda a, b: binary("mul", a, b))
    if result is x:
        result = x.copy()
    if n < 0:
        result = power_finish(x, unary("reciprocal", result), n)
    return _ieee_power_sign(result, x, n)


def power_finish(x: ExpansionArray, r: ExpansionArray, n: int) -> ExpansionArray:
    """The end of ``x ** n`` for n < 0, given r the Newton reciprocal of the products of ``x ** |n|``:
    the rows where that power could leave the range (:func:`_needs_scaling`) computed scaled
    (:func:`_reciprocal_power_scaled`), then IEEE's sign of a zero or infinite result for odd n.  A
    traced program records it as its own node (``power_finish``), run by every backend of
    ``expansions.fuse`` (the CUDA program's kernel mirrors it)."""
    if -n < SCALED_POWER_LIMIT:
        need = _needs_scaling(x, -n)
        if bool(need.any()):
            scaled = _reciprocal_power_scaled(x, -n)
            r = ExpansionArray(xp_of(need).where(need[..., None], scaled.terms, r.terms))
    return _ieee_power_sign(r, x, n)


def _ieee_power_sign(result: ExpansionArray, x: ExpansionArray, n: int) -> ExpansionArray:
    """A zero or infinite x ** n (a zero or infinite x, or an underflow or overflow) with IEEE's sign:
    negative exactly where x is negative (its sign bit) and n odd."""
    if n % 2 == 0:
        return result
    xp = xp_of(result.terms)
    lead = result.terms[..., 0]
    x0 = x.terms[..., 0]
    edge = (lead == 0) | xp.isinf(lead)
    if not bool(edge.any()):
        return result
    t = result.terms.copy()
    signed = xp.where(xp.signbit(x0) & ~xp.isnan(x0), -xp.abs(lead), xp.abs(lead))
    t[..., 0] = xp.where(edge, signed, lead)
    return ExpansionArray(t)


# bits kept by each rounding of power_bound's recurrence, beyond the bits of the exponent
GROWTH_BITS = 64
# a relative bound above this says nothing: power_bound refuses to compute it (ValueError)
GROWTH_LIMIT = 2**GROWTH_BITS


def _growth_bound(e: Fraction, m: int) -> Fraction:
    """An upper bound of ``(1 + e)^m - 1`` (e >= 0, m >= 0) in O(log m) operations on small rationals:
    binary powering on c = (1 + e)^k - 1, ``c(2k) = 2 c(k) + c(k)^2``, ``c(k + 1) = c(k) + e + c(k) e``,
    every step rounded up (:func:`expansions.bounds.round_up`) to ``GROWTH_BITS`` + L bits, L the bits
    of m.  Every operation is monotone on non-negative values, so each rounded c(k) stays above the
    exact one.  Overestimate: a rounding adds a relative 2^(1 - GROWTH_BITS - L) at most, and a
    squaring at most doubles the relative excess of c, so after the L squarings (and L additions of e)
    the excess is below 2^(L + 2) 2^(1 - GROWTH_BITS - L) = 2^(3 - GROWTH_BITS): negligible.
    c(k) grows with k, so a c(k) above ``GROWTH_LIMIT`` on the way is a ValueError (the exact rational
    of such a bound could have more digits than memory holds)."""
    bits = GROWTH_BITS + m.bit_length()
    c = Fraction(0)
    for bit in bin(m)[2:] if m > 0 else "":
        c = bounds.round_up(2 * c + c * c, bits)
        if bit == "1":
            c = bounds.round_up(c + e + c * e, bits)
        if c > GROWTH_LIMIT:
            raise ValueError(f"(1 + {float(e):.3g})^{m} - 1 exceeds 2^{GROWTH_BITS}: no useful relative bound")
    return c


def power_bound(n: int, R: int, fmt) -> Fraction:
    """Relative error bound of :func:`power` (to |x^n|), ulp-nonoverlapping x, no underflow/overflow.

    Each truncated product is within ``e = bounds.mul_relative_to_product(R, p)`` of the exact product
    of its (computed) operands, and the computed x^m carries exactly m - 1 such factors (c(a + b) =
    c(a) + c(b) + 1, c(1) = 0, whatever the powering order), so ``|x^n - P| <= ((1 + e)^(n-1) - 1)|x^n|``,
    bounded above by :func:`_growth_bound` (any n, in O(log n) operations).
    For n < 0 the reciprocal adds ``r = bounds.reciprocal(R, fmt).value``:
    ``(1 + r) / (1 - b) - 1`` with b the bound of ``x^|n|`` (plus the reciprocal's absolute underflow
    term, not included here); a ValueError where b >= 1 (no relative bound then)."""
    fmt = fmt if isinstance(fmt, F.Format) else F.format_of(np.dtype(fmt))
    e = bounds.mul_relative_to_product(R, fmt.p)
    b = _growth_bound(e, max(abs(n) - 1, 0))
    if n >= 0:
        return b
    if b >= 1:
        raise ValueError(f"x ** {n}: the bound of x ** {-n} at R = {R} ({fmt.name}) is not below 1, so its "
                         "reciprocal has no relative bound")
    return (1 + bounds.reciprocal(R, fmt).value) / (1 - b) - 1


for _ufunc, _fn in [(np.maximum, maximum), (np.minimum, minimum), (np.sign, sign), (np.signbit, signbit),
                    (np.isfinite, isfinite), (np.isnan, isnan), (np.isinf, isinf), (np.floor, floor),
                    (np.ceil, ceil), (np.trunc, trunc), (np.rint, rint), (np.floor_divide, floor_divide),
                    (np.remainder, remainder), (np.fmod, fmod), (np.power, power)]:
    register_ufunc(_ufunc, _fn)
    HANDLED[_ufunc] = _fn  # the operators and methods of the array type reach them here


# ----------------------------------------------------------------------------------------------
# Python's int(), round(), math.floor, math.ceil of a 0-d array: Python ints from the exact value


def _scalar_value(x, what):
    _expansion(x, what)
    if x.ndim != 0:
        raise TypeError(f"only a 0-d ExpansionArray converts with {what}")
    q = x.to_fraction()
    if type(q) is not Fraction:  # a non-finite value: Python's own error for the float
        return float(q)
    return q


def to_int(x) -> int:
    """``int(x)``, ``math.trunc(x)``: the exact value truncated toward zero (ValueError for NaN,
    OverflowError for an infinity, as for floats)."""
    return int(_scalar_value(x, "int()"))


def to_round(x, ndigits=None):
    """``round(x)``: the nearest Python int to the exact value, ties to even; ``round(x, n)``: the exact
    value rounded to n decimals (ties to even) and then correctly rounded to x's format."""
    q = _scalar_value(x, "round()")
    if ndigits is None:
        return round(q)
    if type(q) is not Fraction:
        return x.copy()
    return HANDLED["array"](round(q, ndigits), terms=x.nterms, dtype=x.dtype.name, device=x.device)


HANDLED["int"] = to_int
HANDLED["round"] = to_round
HANDLED["math.floor"] = lambda x: math.floor(_scalar_value(x, "math.floor"))
HANDLED["math.ceil"] = lambda x: math.ceil(_scalar_value(x, "math.ceil"))
