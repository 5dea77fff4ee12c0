"""The additions' and the multiplication's proven bounds (Collange, Joldes, Muller, Popescu, ASAP
2016), what a valid expansion is (Definitions II.1, II.2), and the helpers the other bounds share
(the format of a precision, the rounding up of a rational bound).

Underflow.  2Sum is exact even for subnormal results, so the additions need no absolute term.  A
2Prod whose error falls below the smallest subnormal ``eta = 2**(emin-p+1)`` loses up to ``eta/2``;
:func:`mul_underflow_term` gives the absolute term the verification adds for the multiplication
when terms approach the underflow threshold (design decision 9).
"""

from __future__ import annotations

import math
from fractions import Fraction

from ..bound_type import Bound
from ..formats import FLOAT32, FLOAT64, Format, tiny_format
from ..reference.fp import exact, ulp


def _pow2(k: int) -> Fraction:
    return Fraction(2) ** k


def add_safe(R: int, p: int, n: int | None = None, m: int | None = None) -> Bound:
    """Safe parallel addition (Algorithm 1), inputs of n and m terms (default R), R terms out.

    Proposition III.1 of Collange, Joldes, Muller, Popescu (ASAP 2016) shows that each line of the
    scheme raises by one the exponent slack delta of ``|s_i| <= 2**(-(p-1)i + delta) |s_0|``; after the
    ``L = n + m - 1`` lines of the generalized scheme, the terms dropped beyond the R-th are bounded
    by the geometric series ``sum_{i>=R} 2**(-(p-1)i + L)``, that is

        |x + y - s| <= 2**(-(p-1)R + L) / (1 - 2**(1-p)) * |x + y|,

    which for n = m = R is the text's "relative error bounded by a value slightly larger than
    2**(-Rp + 3R - 1)".  The proof assumes ``G_i < 1``, which the text derives from
    ``2**(i+1) <= 2**p / 7`` for every term index i up to R (false for float32 when R > 20).
    """
    n = R if n is None else n
    m = R if m is None else m
    L = n + m - 1
    value = _pow2(-(p - 1) * R + L) / (1 - _pow2(1 - p))
    holds = 7 * _pow2(R + 1) <= _pow2(p)
    return Bound(
        value,
        "|x + y|",
        "Collange et al. 2016, Prop. III.1 and the text after it",
        holds,
        "" if holds else f"hypothesis 2^(i+1) <= 2^p/7 fails for i up to {R} with p = {p}",
    )


def add_fast(R: int, p: int) -> Bound | None:
    """Fast parallel addition (Fig. 5): the paper proves no bound (none under cancellation)."""
    return None


def mul_truncation(R: int, p: int) -> Bound:
    """Proposition IV.1: the products x_i y_j with i + j >= R, which the truncated multiplication
    never forms, add up to at most ``|x0 y0| 2**(-(p-1)R) (R-1) / (1 - 2**(1-p))``."""
    value = _pow2(-(p - 1) * R) * (R - 1) / (1 - _pow2(1 - p))
    return Bound(value, "|x0 y0|", "Collange et al. 2016, Prop. IV.1")


def mul_truncated(R: int, p: int) -> Bound:
    """Truncated parallel multiplication (Algorithm 2), R-term inputs and output: Proposition IV.2,

        |xy - pi| <= |x0 y0| 2**(-(p-1)R) (R-1) [1 + 2**(p-2)(1 + 2**-p) + (R**3 - R)((R-1)!)**2].
    """
    bracket = 1 + _pow2(p - 2) * (1 + _pow2(-p)) + (R**3 - R) * math.factorial(R - 1) ** 2
    value = _pow2(-(p - 1) * R) * (R - 1) * bracket
    return Bound(value, "|x0 y0|", "Collange et al. 2016, Prop. IV.2, eq. (6)")


def mul_underflow_term(R: int, fmt: Format) -> Fraction:
    """Absolute slack for the multiplication near the underflow threshold: the R(R+1)/2 products of
    order < R each lose at most eta/2 when their error (or, in the last step, their rounding) falls
    below the smallest subnormal; the verification adds twice that, ``R(R+1)/2 * eta``, and says so.
    This term is the library's accounting (design decision 9), not part of the paper's proof."""
    return Fraction(R * (R + 1), 2) * fmt.eta


def _format(fmt) -> Format:
    """A Format from a Format or a precision p (53: float64, 24: float32, else a tiny format)."""
    if isinstance(fmt, Format):
        return fmt
    return {53: FLOAT64, 24: FLOAT32}.get(int(fmt)) or tiny_format(int(fmt))


def round_up(q: Fraction, bits: int = 64) -> Fraction:
    """The smallest rational m / 2**k >= q with an integer m of ``bits`` bits (q >= 0): the Newton
    recurrences round every intermediate bound up with it, which keeps them rigorous and keeps the
    rationals small (exact products of the step bounds would reach millions of digits)."""
    if q <= 0:
        return Fraction(0)
    n, d = q.numerator, q.denominator
    e = n.bit_length() - d.bit_length()  # 2**(e-1) <= q < 2**(e+1)
    k = bits - 1 - e
    m = -((-n << k) // d) if k >= 0 else -((-n) // (d << -k))
    return Fraction(m, 1 << k) if k >= 0 else Fraction(m << -k)


def tail_ratio(p: int) -> Fraction:
    """d with ``|x - x0| <= d |x0|`` for an ulp-nonoverlapping expansion x (Definition II.2):
    ``|x_i| <= ulp(x_{i-1}) <= 2**(1-p) |x_{i-1}|``, so the tail is at most ``sum_{i>=1} 2**((1-p)i)``."""
    t = _pow2(1 - p)
    return t / (1 - t)


def ulp_nonoverlapping(values, fmt: Format) -> bool:
    """Definition II.2: the nonzero terms v satisfy ``|v_i| <= ulp(v_{i-1})`` (zeros are skipped).

    What the library calls a valid expansion.  The bounds of the multiplication, the dot product and
    the Newton operations are proven for operands with ``|v_i| <= 2**(-(p-1) i) |v_0|`` (by position),
    the double-word bounds (R = 2) for ``v_0 = RN(v_0 + v_1)``; the operations renormalize the valid
    operands that break those conditions first (``expansions.cpu.kernels.positional``,
    ``expansions.dw.cpu.double_word``), so the bounds hold for every valid operand."""
    prev = None
    for v in values:
        q = exact(v)
        if q == 0:
            continue
        if prev is not None and abs(q) > ulp(prev, fmt):
            return False
        prev = q
    return True


def ordered(values) -> bool:
    """Definition II.1: the nonzero terms are ordered by decreasing magnitude."""
    mags = [abs(exact(v)) for v in values if exact(v) != 0]
    return all(a >= b for a, b in zip(mags, mags[1:]))
