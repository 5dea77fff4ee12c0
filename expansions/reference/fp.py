"""Exact IEEE-754 arithmetic in any binary format, on ``fractions.Fraction``.

Every operation is "exact result, then round to nearest, ties to even, in the format (p, emin, emax)",
with subnormals, overflow to infinity, signed zeros and NaN as IEEE 754 specifies.

Values are plain Python objects, so that the reference reads like the algorithms:

* a finite nonzero number is a ``Fraction``;
* a zero, an infinity or a NaN is a Python ``float`` (``0.0``, ``-0.0``, ``inf``, ``-inf``, ``nan``):
  the float keeps the sign of a zero, which the algorithms' bit-exact comparisons need.

Use :func:`from_float` / :func:`to_float` to cross to machine floats.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath

from ..formats import Format
from .mpf import fraction_from_mpf, mpf_from_fraction

Value = "Fraction | float"

INF = math.inf
NAN = math.nan


def is_finite(a) -> bool:
    return type(a) is Fraction or math.isfinite(a)


def is_zero(a) -> bool:
    return type(a) is not Fraction and a == 0.0


def is_nan(a) -> bool:
    return type(a) is not Fraction and math.isnan(a)


def exact(a) -> Fraction:
    """The exact value of a finite value (zeros give 0)."""
    if type(a) is Fraction:
        return a
    if not math.isfinite(a):
        raise ValueError(f"{a} has no exact rational value")
    return Fraction(0)


def sign_bit(a) -> bool:
    """True when the sign bit is set (negative numbers, -0.0, -inf)."""
    if type(a) is Fraction:
        return a < 0
    return math.copysign(1.0, a) < 0


def from_float(x) -> Fraction | float:
    """A machine float (Python or NumPy) as a reference value, exactly."""
    x = float(x)
    if x == 0.0 or not math.isfinite(x):
        return x
    return Fraction(x)


def to_float(a) -> float:
    """A reference value as a Python float; exact when the value is a float64 number."""
    if type(a) is Fraction:
        return float(a)
    return a


def round_fraction(q: Fraction, fmt: Format) -> Fraction | float:
    """Round the exact rational ``q`` to nearest, ties to even, in ``fmt``.

    Zero gives ``+0.0`` (callers decide the sign of an exact zero); a nonzero value that rounds to
    zero gives a zero with the sign of ``q``; overflow gives a signed infinity.
    """
    if q == 0:
        return 0.0
    neg = q < 0
    n, d = abs(q.numerator), q.denominator
    e = n.bit_length() - d.bit_length()
    if (n << max(0, -e)) < (d << max(0, e)):
        e -= 1
    # 2**e <= |q| < 2**(e+1)
    e = max(e, fmt.emin)
    qe = e - fmt.p + 1  # exponent of the quantum (ulp) at this binade
    if qe >= 0:
        num, den = n, d << qe
    else:
        num, den = n << -qe, d
    m, r = divmod(num, den)
    twice = 2 * r
    if twice > den or (twice == den and m & 1):
        m += 1
    if m == 0:
        return -0.0 if neg else 0.0
    if e > fmt.emax or (e == fmt.emax and m >> fmt.p):
        return -INF if neg else INF
    v = Fraction(m << qe) if qe >= 0 else Fraction(m, 1 << -qe)
    return -v if neg else v


def is_representable(q: Fraction, fmt: Format) -> bool:
    """Whether the exact rational ``q`` is a number of ``fmt``."""
    r = round_fraction(q, fmt)
    return type(r) is Fraction and r == q or (q == 0)


def neg(a):
    """-a (exact)."""
    return -a


def add(a, b, fmt: Format):
    """RN(a + b) with IEEE special values."""
    if type(a) is Fraction and type(b) is Fraction:
        s = a + b
        return 0.0 if s == 0 else round_fraction(s, fmt)
    if is_nan(a) or is_nan(b):
        return NAN
    if type(a) is float and math.isinf(a):
        if type(b) is float and math.isinf(b) and a != b:
            return NAN
        return a
    if type(b) is float and math.isinf(b):
        return b
    # at least one zero, the other finite
    if is_zero(a) and is_zero(b):
        return -0.0 if (sign_bit(a) and sign_bit(b)) else 0.0
    return b if is_zero(a) else a


def sub(a, b, fmt: Format):
    """RN(a - b): IEEE subtraction is the addition of the negation."""
    return add(a, neg(b), fmt)


def mul(a, b, fmt: Format):
    """RN(a * b) with IEEE special values."""
    if type(a) is Fraction and type(b) is Fraction:
        return round_fraction(a * b, fmt)
    negative = sign_bit(a) != sign_bit(b)
    if is_nan(a) or is_nan(b):
        return NAN
    a_inf = type(a) is float and math.isinf(a)
    b_inf = type(b) is float and math.isinf(b)
    if a_inf or b_inf:
        if is_zero(a) or is_zero(b):
            return NAN
        return -INF if negative else INF
    return -0.0 if negative else 0.0


def fma(a, b, c, fmt: Format):
    """RN(a * b + c) with a single rounding, IEEE special values included."""
    if type(a) is Fraction and type(b) is Fraction and type(c) is Fraction:
        s = a * b + c
        return 0.0 if s == 0 else round_fraction(s, fmt)
    if is_nan(a) or is_nan(b) or is_nan(c):
        return NAN
    prod_neg = sign_bit(a) != sign_bit(b)
    a_inf = type(a) is float and math.isinf(a)
    b_inf = type(b) is float and math.isinf(b)
    if a_inf or b_inf:
        if is_zero(a) or is_zero(b):
            return NAN
        prod_inf = -INF if prod_neg else INF
        if type(c) is float and math.isinf(c) and c != prod_inf:
            return NAN
        return prod_inf
    if type(c) is float and math.isinf(c):
        return c
    # finite operands, and a or b or c is zero
    if is_zero(a) or is_zero(b):
        if is_zero(c):
            return -0.0 if (prod_neg and sign_bit(c)) else 0.0
        return c
    # c is zero, a*b nonzero: RN(a*b) (a rounded-to-zero product keeps the product's sign)
    return round_fraction(a * b, fmt)


def div(a, b, fmt: Format):
    """RN(a / b) with IEEE special values."""
    negative = sign_bit(a) != sign_bit(b)
    if is_nan(a) or is_nan(b):
        return NAN
    a_inf = type(a) is float and math.isinf(a)
    b_inf = type(b) is float and math.isinf(b)
    if a_inf and b_inf or is_zero(a) and is_zero(b):
        return NAN
    if a_inf or is_zero(b):
        return -INF if negative else INF
    if b_inf or is_zero(a):
        return -0.0 if negative else 0.0
    return round_fraction(a / b, fmt)


def sqrt(a, fmt: Format):
    """RN(sqrt(a)) with IEEE special values: sqrt(-0) = -0, a negative number gives NaN.

    The candidate from a high-precision mpmath square root is corrected by comparing the exact
    squares of the midpoints to its neighbours with a."""
    if is_nan(a) or (type(a) is float and a < 0) or (type(a) is Fraction and a < 0):
        return NAN
    if type(a) is float:  # +-0, +inf
        return a
    with mpmath.workprec(fmt.p + 96):
        c = round_fraction(fraction_from_mpf(mpmath.sqrt(mpf_from_fraction(a))), fmt)
    for _ in range(4):
        u = ulp(c, fmt)
        up = c + u
        down = c - (u / 2 if _is_pow2(c) and c > fmt.smallest_normal else u)  # the float below c
        if a > ((c + up) / 2) ** 2:
            c = up
        elif a < ((c + down) / 2) ** 2:
            c = down
        else:
            return c
    raise ArithmeticError("sqrt: no convergence")  # pragma: no cover


def _is_pow2(q: Fraction) -> bool:
    n, d = q.numerator, q.denominator
    return n & (n - 1) == 0 and d & (d - 1) == 0


def ulp(a, fmt: Format) -> Fraction:
    """Goldberg's ulp of a finite value: ``2**(e - p + 1)``, subnormal quantum for tiny values."""
    q = abs(exact(a))
    if q == 0:
        return fmt.eta
    n, d = q.numerator, q.denominator
    e = n.bit_length() - d.bit_length()
    if (n << max(0, -e)) < (d << max(0, e)):
        e -= 1
    return Fraction(2) ** (max(e, fmt.emin) - fmt.p + 1)


def exponent(a) -> int:
    """floor(log2(|a|)) of a finite nonzero value."""
    q = abs(exact(a))
    n, d = q.numerator, q.denominator
    e = n.bit_length() - d.bit_length()
    if (n << max(0, -e)) < (d << max(0, e)):
        e -= 1
    return e
