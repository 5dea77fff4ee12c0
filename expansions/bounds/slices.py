"""The plans and truncation bounds of the matrix products by exact slices (the Ozaki scheme):
:mod:`expansions.cpu.slices`, :mod:`expansions.slices`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction

from ..formats import Format
from .arithmetic import _format, _pow2

#: Widest slice: a balanced digit (|d| <= 2**(beta-1)) must be exact in float32 (24 bits).
SLICE_BITS_MAX = 24
#: Narrowest slice the plan accepts (an inner dimension above 2**37 would need narrower ones).
SLICE_BITS_MIN = 8


def slice_bits(n: int) -> int:
    """beta, the bits of one slice for an inner dimension n: the largest beta <= SLICE_BITS_MAX with
    ``n * (2**(beta-1))**2 <= 2**53``, so that a product of two slice matrices, whose entries are
    integers of magnitude at most 2**(beta-1) (balanced digits), sums n products of magnitude at most
    2**(2 beta - 2) and every partial sum, in any order, is an integer of magnitude <= 2**53: exact in
    float64 whatever the BLAS does (Ozaki, Ogita, Oishi, Rump 2012, the condition of their
    splitting, here for balanced digits).  n = 1000 gives 22, n = 100 gives 24."""
    n = max(int(n), 1)
    beta = SLICE_BITS_MAX
    while beta > SLICE_BITS_MIN and n * 4 ** (beta - 1) > 2**53:
        beta -= 1
    if n * 4 ** (beta - 1) > 2**53:
        raise ValueError(f"inner dimension {n} too large for exact slice products")
    return beta


@dataclass(frozen=True)
class SlicePlan:
    """What the slice product of an inner dimension n computes for R terms of precision p.

    Each row of A (column of B) is cut into ``slices`` digit matrices D_1..D_S of ``beta``-bit
    balanced digits below the row's scale 2**E; the product keeps the pairs (s, t) with
    ``s + t <= levels`` (``pairs``, most significant first): ``gemms`` = levels (levels - 1) / 2
    float64 matrix products.  ``truncation`` is tau of :func:`slice_truncation`, the exact bound of
    what the dropped slices and pairs contribute, relative to n 2**(E_i + F_j)."""

    n: int
    R: int
    p: int
    beta: int
    slices: int
    levels: int
    truncation: Fraction

    @property
    def pairs(self) -> tuple:
        return tuple((s, L - s) for L in range(2, self.levels + 1) for s in range(1, L)
                     if s <= self.slices and L - s <= self.slices)

    @property
    def gemms(self) -> int:
        return len(self.pairs)

    def chunk_digits(self, p: int) -> int:
        """Digits per term of the output format (precision p) when the exact sum is cut into terms:
        g balanced digits make an integer of at most 2**(beta-1) (2**(g beta) - 1)/(2**beta - 1) < 2**p
        in magnitude when g beta <= p."""
        return max(1, p // self.beta)

    def chunks(self, p: int) -> int:
        """Terms of the exact sum (levels -1..T, T + 2 digits) in the output format."""
        return -(-(self.levels + 2) // self.chunk_digits(p))


def slice_truncation(beta: int, slices: int, levels: int, R: int) -> Fraction:
    """tau: |C_ij - C~_ij| <= n 2**(E_i + F_j) tau for the slice product C~ of the pairs s + t <= T
    (T = levels) of S = ``slices`` slices of beta bits, R-term operands.

    Proof.  Write a_k (k = 1..n) for the exact entries of row i of A and b_k for column j of B.
    The slicing (:func:`expansions.cpu.slices.split`) gives a_k = sum_{s<=S} d_ks 2**(E - s beta) + V_k
    with integers |d_ks| <= 2**(beta-1) (checked by the code) and |V_k| <= R 2**(E - S beta) / 2:
    V_k is the sum over the R terms of each term's residue modulo 2**(E - S beta), rounded to
    nearest, at most half of it.  With A-bar = 2**(beta-1) sum_{s<=S} 2**(-s beta),
    |sum_s d_ks 2**(E - s beta)| <= 2**E A-bar, and the same for b_k (scale 2**F).  Then
    a b - a^ b^ = V b^ + a^ V' + V V', so per k, relative to 2**(E+F):

        |a_k b_k - a^_k b^_k| <= v (B-bar + v) + A-bar v,   v = R 2**(-S beta) / 2,

    and the dropped pairs s + t > T add at most 2**(2 beta - 2) sum_{s,t<=S, s+t>T} 2**(-(s+t) beta).
    Summing over the n values of k gives n 2**(E+F) tau.  The kept pairs are summed exactly (each
    product of slice matrices is exact, see :func:`slice_bits`, and their sum is accumulated in
    integers, :func:`expansions.cpu.slices.fold`)."""
    w = _pow2(-beta)
    bar = _pow2(beta - 1) * sum(w**s for s in range(1, slices + 1))
    v = Fraction(R, 2) * w**slices
    dropped = _pow2(2 * beta - 2) * sum(w ** (s + t) for s in range(1, slices + 1)
                                        for t in range(1, slices + 1) if s + t > levels)
    return v * (bar + v) + bar * v + dropped


def slice_plan(n: int, R: int, fmt, extra: int = 0) -> SlicePlan:
    """The fewest slice products for R terms of the format fmt (or precision p): S = T - 1 slices per
    operand and the pairs s + t <= T, T the smallest level with
    ``tau <= 2**(-(p-1) R - 4 - extra)`` (:func:`slice_truncation`), so that the truncation is at most
    ``2**(-(p-1) R - extra) n max_k |a_ik| max_k |b_kj|`` (2**(E+F) <= 16 max|a| max|b|, see
    :func:`matmul_slices`).  ``extra`` bits beyond the R-term level are what badly scaled operands
    need for a componentwise bound (:func:`componentwise_extra`).  For n = 1000, float64, extra = 0:
    15 products at R = 2, 36 at R = 3, 55 at R = 4."""
    return _slice_plan(int(n), int(R), _format(fmt), _check_extra(extra))


def _check_extra(extra) -> int:
    extra = int(extra)
    if extra < 0:
        raise ValueError(f"extra bits must be >= 0, got {extra}")
    return extra


@functools.lru_cache(maxsize=4096)
def _slice_plan(n: int, R: int, fmt: Format, extra: int = 0) -> SlicePlan:
    beta = slice_bits(n)
    target = _pow2(-(fmt.p - 1) * R - 4 - extra)
    T = 2
    while True:
        tau = slice_truncation(beta, T - 1, T, R)
        if tau <= target:
            return SlicePlan(int(n), R, fmt.p, beta, T - 1, T, tau)
        T += 1


def slice_scale_fits(plan: SlicePlan, fmt) -> bool:
    """Whether the exact sum of a slice product, digits of levels -1..T scaled so that the lowest
    level's unit is the smallest normal number 2**emin, stays below 2**emax: every term formed from
    it is then exact and normal (``expansions.cpu.slices.finish``).  True for float64 up to R = 32;
    for float32 up to R = 6 at n = 1000."""
    fmt = _format(fmt)
    c0 = fmt.emin + plan.levels * plan.beta
    return c0 + plan.beta + (max(plan.n, 1) - 1).bit_length() + 1 <= fmt.emax
