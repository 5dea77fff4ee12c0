"""More of NumPy's real-valued ufuncs on ExpansionArrays: the exact ones and those that are one of the
library's operations under another name (registered with :func:`expansions.numpy_protocol.register_ufunc`,
so ``np.fabs(x)``, ``np.copysign(x, y)``, ... work on expansions as on float64 arrays).

Exact (every result is the exact value, or the documented IEEE special value):

- :func:`fabs` (``np.absolute``), :func:`copysign` (x's magnitude with the sign bit of y's value: of
  its leading term, a zero's and a NaN's sign included), :func:`heaviside` (0, h0 or 1 by the exact
  sign; NaN for NaN), :func:`fmax`, :func:`fmin` (exact comparisons; a NaN operand is ignored unless
  both are NaN, as NumPy), :func:`positive`, :func:`conjugate` (copies);
- :func:`modf` (the fractional part from each term's own fractional part, renormalized: exact, see
  there; the integer part :func:`expansions.elementwise.trunc`), :func:`divmod` (the pair of
  :func:`expansions.elementwise.floor_divide` and :func:`expansions.elementwise.remainder`, with their
  stated accuracy);
- :func:`ldexp` (every term times 2**n: exact while the terms stay normal; a term that leaves the
  normal range is rounded as float64's ldexp rounds it, and a result that overflows is +-inf),
  :func:`frexp` (the mantissa in [1/2, 1) of the value, not of the leading term, and the exponent).

Operations under NumPy's names: :func:`square` (``x * x``, the multiplication's bound),
:func:`reciprocal` (the Newton reciprocal, ``bounds.reciprocal``), :func:`float_power`
(:func:`expansions.pow`).

Ufuncs that have no meaning for expansions (``nextafter``, ``spacing``, the bit operations, the integer
functions ``gcd`` and ``lcm``) raise a TypeError that says why (:data:`MEANINGLESS`).
"""

from __future__ import annotations

import numbers

import numpy as np

from .arraytype import ExpansionArray
from .backends import for_terms, xp_of
from .elementary import pow as _pow
from .elementwise import (
    _canonical,
    _divmod,
    _integer_part,
    _nonfinite_value,
    _scaling_divisor,
    _signed_zero_extremum,
    floor_divide,
    isnan,
    remainder,
    signbit,
    trunc,
)
from .numpy_protocol import UNSUPPORTED_HINTS, register_ufunc
from .operations import absolute, binary, compare, flat_pair, negative, operands, unary
from .operations import sign as _sign_values

__all__ = ["fabs", "copysign", "heaviside", "fmax", "fmin", "positive", "conjugate", "modf", "divmod_", "ldexp",
           "frexp", "square", "reciprocal", "float_power", "MEANINGLESS"]


def _expansion(x, what) -> ExpansionArray:
    if not isinstance(x, ExpansionArray):
        raise TypeError(f"{what} expects an ExpansionArray, got {type(x).__name__}")
    return x


def _where(mask, a: ExpansionArray, b: ExpansionArray) -> ExpansionArray:
    """Element-wise a where mask, else b (a, b of one format, broadcast together with mask)."""
    xp = xp_of(a.terms)
    m = xp.asarray(mask)
    return ExpansionArray(xp.where(m[..., None], a.terms, b.terms))


def fabs(x):
    """``np.fabs``: |x| (exact)."""
    return absolute(_expansion(x, "np.fabs"))


def positive(x):
    """``np.positive``: a copy of x."""
    return _expansion(x, "np.positive").copy()


def conjugate(x):
    """``np.conjugate`` of real expansions: a copy of x."""
    return _expansion(x, "np.conjugate").copy()


def copysign(x, y):
    """``np.copysign``: |x| with the sign bit of y (its value's sign; a zero's or NaN's leading sign
    bit), exact.  y may be a float or an array of floats."""
    x, y = operands(_expansion(x, "np.copysign"), y)
    xt, yt, shape = flat_pair(x, y)
    X, Y = ExpansionArray(xt), ExpansionArray(yt)
    a = ExpansionArray(_canonical(absolute(X).terms))  # a non-finite row as the rule writes it
    s = signbit(Y) if Y.ndim else np.asarray(signbit(Y))
    return _where(s, negative(a), a).reshape(shape)


def heaviside(x, h0):
    """``np.heaviside``: 0 where x < 0, h0 where x == 0, 1 where x > 0, NaN where x is NaN (exact
    comparisons)."""
    x, h = operands(_expansion(x, "np.heaviside"), h0)
    xt, ht, shape = flat_pair(x, h)
    X, H = ExpansionArray(xt), ExpansionArray(ht)
    xp = xp_of(xt)
    zero, one = ExpansionArray(xp.zeros_like(xt)), ExpansionArray(xp.zeros_like(xt))
    one.terms[:, 0] = 1
    r = _where(xp.asarray(compare("gt", X, 0.0)), one, zero)
    r = _where(xp.asarray(compare("eq", X, 0.0)), H, r)
    return _where(xp.asarray(isnan(X)), X, r).reshape(shape)


def _fextremum(op, x, y, what):
    x, y = operands(x, y)
    xt, yt, shape = flat_pair(x, y)
    X, Y = ExpansionArray(xt), ExpansionArray(yt)
    xp = xp_of(xt)
    nx, ny = xp.asarray(isnan(X)), xp.asarray(isnan(Y))
    pick_x = (xp.asarray(compare(op, X, Y)) | ny) & ~nx | (nx & ny)
    out = _signed_zero_extremum(op, xt, yt, _canonical(xp.where(pick_x[:, None], xt, yt)))
    return ExpansionArray(out.reshape(shape + (x.nterms,)))


def fmax(x, y):
    """``np.fmax``: the larger (exact comparison; of two equal values the second, as NumPy's array
    loops, but of +0 and -0 +0, as IEEE 754-2019); a NaN operand is ignored unless both are NaN."""
    return _fextremum("gt", x, y, "np.fmax")


def fmin(x, y):
    """``np.fmin``: the smaller (exact comparison; of two equal values the second, as NumPy's array
    loops, but of +0 and -0 -0, as IEEE 754-2019); a NaN operand is ignored unless both are NaN."""
    return _fextremum("lt", x, y, "np.fmin")


def modf(x):
    """``np.modf``: (fractional part, integer part), both with x's sign, exact.

    The integer part is :func:`expansions.elementwise.trunc`; the fractional part is x - trunc(x),
    from the exact fractional part d = x - floor(x) in [0, 1) of :func:`expansions.elementwise.floor`'s
    method: d for x >= 0, d - 1 for a negative x with d != 0, renormalized error-free into R terms (it
    has no more bits than x's terms below the unit).  A zero fractional part has x's sign; inf gives
    (+-0, +-inf), NaN (NaN, NaN)."""
    x = _expansion(x, "np.modf")
    t = x.terms
    xp = xp_of(t)
    R = x.nterms
    ints, d, finite = _integer_part(x)
    neg = xp.asarray(_sign_values(x) < 0) & (d.terms[..., 0] != 0)
    with np.errstate(all="ignore"):
        both = xp.concatenate([d.terms, -neg[..., None].astype(t.dtype)], axis=-1)
        flat = xp.ascontiguousarray(both).reshape(-1, R + 2)
        frac = for_terms(flat).renormalize(flat, R).reshape(t.shape)
    lead = t[..., 0]
    zero = frac[..., 0] == 0
    frac[..., 0] = xp.where(zero, xp.copysign(xp.zeros_like(lead), lead), frac[..., 0])
    bad = ~finite
    if bool(bad.any()):  # inf: a zero of its sign; NaN: NaN
        special = xp.where(xp.isnan(_nonfinite_value(t)), xp.nan, xp.copysign(xp.zeros_like(lead), lead))
        frac[bad] = 0
        frac[..., 0] = xp.where(bad, special, frac[..., 0])
    return ExpansionArray(frac), trunc(x)


def divmod_(x, y):
    """``np.divmod``: (``x // y``, ``x % y``), the pair of :func:`expansions.elementwise.floor_divide`
    and :func:`expansions.elementwise.remainder` (their stated accuracy), computed once."""
    if _scaling_divisor(x, y) is not None:  # floor_divide's exact scaling; the remainder as remainder's
        return floor_divide(x, y), remainder(x, y)
    return _divmod(x, y, False)


def _integer_exponents(n, what):
    if isinstance(n, ExpansionArray):
        raise TypeError(f"{what}: the exponent must be integers (a Python int or an integer array)")
    a = np.asarray(n)
    if a.dtype.kind not in "iub":
        raise TypeError(f"{what}: the exponent must be integers, got {a.dtype}")
    return a.astype(np.int64)


def ldexp(x, n):
    """``np.ldexp``: x * 2**n for integer n, every term scaled: exact while the terms stay normal (a
    term that leaves the normal range is rounded as the terms' ldexp rounds it, the result
    renormalized; an overflowing result is +-inf by the library's non-finite rule)."""
    x = _expansion(x, "np.ldexp")
    e = _integer_exponents(n, "np.ldexp")
    xp = xp_of(x.terms)
    shape = np.broadcast_shapes(x.shape, e.shape)
    t = xp.broadcast_to(_canonical(x.terms), shape + (x.nterms,))  # (inf, -inf) is inf, by the rule
    ee = xp.asarray(np.clip(np.broadcast_to(e, shape), -1 << 30, 1 << 30))[..., None]
    with np.errstate(all="ignore"):
        s = xp.ldexp(t, ee.astype(xp.int32))
        flat = xp.ascontiguousarray(s).reshape(-1, x.nterms)
        out = for_terms(flat).renormalize(flat, x.nterms)
        # a zero result (a zero, or every term scaled below the range) keeps the value's sign (the
        # value's sign computed for those rows only)
        zero = xp.nonzero((out == 0).all(axis=-1))[0]
        if zero.shape[0]:
            rows = xp.ascontiguousarray(xp.ascontiguousarray(t).reshape(-1, x.nterms)[zero])
            lead = _sign_values(ExpansionArray(rows))
            negative_value = (lead < 0) | (lead == 0) & xp.signbit(rows[:, 0])
            out[zero, 0] = xp.where(negative_value, -xp.zeros_like(lead), xp.zeros_like(lead))
    return ExpansionArray(out.reshape(s.shape))


def frexp(x):
    """``np.frexp``: (m, e) with x = m 2**e exactly, 1/2 <= |m| < 1 for the value (an integer array e);
    zero gives (x, 0), a non-finite x (x, 0), as NumPy."""
    x = _expansion(x, "np.frexp")
    t = x.terms
    xp = xp_of(t)
    lead = t[..., 0]
    finite = xp.isfinite(t).all(axis=-1) & (lead != 0)
    _, e = xp.frexp(xp.where(finite, lead, 1.0))
    e = xp.where(finite, e, 0).astype(xp.int64)
    m = ldexp(x, -to_numpy_int(e))
    # the leading term's exponent is the value's unless the leading term is +-1/2 exactly (times 2**e)
    # and the rest has the other sign: then |m| < 1/2, and m, e are doubled and decremented
    low = xp.asarray(compare("lt", absolute(m), 0.5)) & finite
    if bool(xp.any(low)):
        e = e - low.astype(xp.int64)
        m = ldexp(m, to_numpy_int(low.astype(xp.int64)))
    m_terms = m.terms.copy()
    m_terms[~finite] = t[~finite]
    return ExpansionArray(m_terms), e


def to_numpy_int(a):
    """An integer array of the terms' module as a NumPy array (ldexp's exponent argument)."""
    return a.get() if hasattr(a, "get") else np.asarray(a)


def square(x):
    """``np.square``: x * x (the multiplication, its bound)."""
    return binary("mul", _expansion(x, "np.square"), x)


def reciprocal(x):
    """``np.reciprocal``: 1 / x by the Newton reciprocal (``bounds.reciprocal``)."""
    return unary("reciprocal", _expansion(x, "np.reciprocal"))


def float_power(x, y):
    """``np.float_power``: :func:`expansions.pow` (an integer exponent takes the exact-rounding powering
    of ``**``)."""
    if isinstance(y, numbers.Integral) and not isinstance(y, bool):
        return _expansion(x, "np.float_power") ** int(y)
    return _pow(x, y)


#: NumPy ufuncs without a meaning for expansions, and why.
MEANINGLESS = {
    "nextafter": "an expansion has no single next representable number (its terms can always be extended); "
                 "use ex.array(x, terms=R) to choose the precision",
    "spacing": "an expansion's spacing is not one float's: see x.effective_bits() for the precision it carries",
    **{name: "bit operations apply to integers, not to expansions" for name in (
        "bitwise_and", "bitwise_or", "bitwise_xor", "invert", "bitwise_not", "left_shift", "right_shift",
        "bitwise_count")},
    "gcd": "gcd applies to integers: convert exact integers with int(x) first",
    "lcm": "lcm applies to integers: convert exact integers with int(x) first",
}


def _meaningless(name):
    def refuse(*args, **kwargs):
        raise TypeError(f"np.{name} on expansions: {MEANINGLESS[name]}")
    return refuse


for _ufunc, _fn in [(np.fabs, fabs), (np.copysign, copysign), (np.heaviside, heaviside), (np.fmax, fmax),
                    (np.fmin, fmin), (np.conjugate, conjugate), (np.modf, modf), (np.divmod, divmod_),
                    (np.ldexp, ldexp), (np.frexp, frexp), (np.square, square), (np.reciprocal, reciprocal),
                    (np.float_power, float_power)]:
    register_ufunc(_ufunc, _fn)
    UNSUPPORTED_HINTS.pop(_ufunc.__name__, None)
for _name in MEANINGLESS:
    if hasattr(np, _name) and isinstance(getattr(np, _name), np.ufunc):
        register_ufunc(getattr(np, _name), _meaningless(_name))
