"""Proven error bounds, as exact rationals (design decision 8).

Each function returns a :class:`Bound`: the exact value, what it bounds (relative to which
quantity), where it is proven, and whether the proof's hypotheses hold for the given sizes.  The
verification (``python -m expansions verify``) compares exact errors with these values.

Underflow.  2Sum is exact even for subnormal results, so the additions need no absolute term.  A
2Prod whose error falls below the smallest subnormal ``eta = 2**(emin-p+1)`` loses up to ``eta/2``;
:func:`mul_underflow_term` gives the absolute term the verification adds for the multiplication
when terms approach the underflow threshold (design decision 9).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from .formats import Format


@dataclass(frozen=True)
class Bound:
    value: Fraction  # the bound, relative to `relative_to`
    relative_to: str  # the quantity the error is divided by
    source: str  # where the bound is proven
    hypotheses_hold: bool = True  # whether the proof's hypotheses hold for these sizes
    note: str = ""

    @property
    def log2(self) -> float:
        return math.log2(self.value.numerator) - math.log2(self.value.denominator)


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


def ulp_nonoverlapping(values, fmt: Format) -> bool:
    """Definition II.2: the nonzero terms v satisfy ``|v_i| <= ulp(v_{i-1})`` (zeros are skipped)."""
    from .reference.fp import exact, ulp

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
    from .reference.fp import exact

    mags = [abs(exact(v)) for v in values if exact(v) != 0]
    return all(a >= b for a, b in zip(mags, mags[1:]))
