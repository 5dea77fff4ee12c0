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

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

from .bound_type import Bound
from .dw import bounds as _dw_bounds
from .formats import FLOAT32, FLOAT64, Format, effective_bits, nominal_bits, tiny_format
from .reference.fp import exact, ulp


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


# ----------------------------------------------------------------------------------------------
# Newton iterations: reciprocal, division, square root (any R)
#
# The algorithms are in expansions/cpu/newton.py (twins) and expansions/cuda/newton.cuh: the
# operands are scaled by powers of two so that their leading term lies in [1, 2) (in [1, 4) for the
# square root), the iteration starts from a double word (the reciprocal, or the reciprocal of the
# square root, of the operand's first two terms by the double-word algorithms of expansions.dw, at
# about 2^-100 for float64) and runs on numbers of order 1 with the number of terms about doubling
# at each step (2, 4, 6, 11, ... up to R for float64, newton_steps; CAMPARY's scheme, Joldes, Muller, Popescu, ASAP
# 2014), every product is the truncated parallel multiplication and every sum the safe parallel
# addition, each followed by the error-free renormalization, and the result is scaled back.  The bounds below
# are derived by a first-order-free error recurrence in exact rationals: every step is written
# as exact Newton plus relative perturbations bounded by the proven bounds of the operations.


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


def newton_steps(R: int, fmt) -> tuple:
    """The numbers of terms of the Newton iteration, starting with 2 (the double-word start,
    :func:`newton_start`) and ending with R; every entry after the first is a Newton step.

    Exact Newton squares the relative error, so each step could double the number of terms; but the
    proven bound of the truncated product at r terms (Prop. IV.2) is about ``2**(p-1)`` times
    ``2**(-(p-1)r)``, so after a step to r terms the proven error is only about that product bound,
    and squaring it supports about ``2r - 2`` terms, not ``2r``.  Each step therefore goes to the
    largest r' <= 2r (at least r + 1, at most R) whose product bound is at least the square of the
    proven error so far (the recurrence of :func:`_reciprocal_scaled`), so that the final proven error
    is within a few units of the last product's bound.  Pure doubling (2, 4, 8, ...) would prove only
    about half of the bits: for R = 16, float64, 2**-416 instead of 2**-735.  One sequence per
    (R, format), shared by the reciprocal, the division and the square root.  The double-word start
    stands for the first steps (1 -> 2 -> 3 terms, or 1 -> 2 -> 4 with the tighter start) at the price
    of one double-word division."""
    fmt = _format(fmt)
    return _steps_cached(R, fmt)


@functools.cache
def _steps_cached(R: int, fmt: Format) -> tuple:
    eps = newton_start(R, fmt)
    steps, r = [2], 2
    while r < R:
        nxt = r + 1
        for c in range(r + 1, min(2 * r, R) + 1):
            if eps**2 <= _mul_relative(c, fmt):
                nxt = c
        r = nxt
        steps.append(r)
        eps = _reciprocal_step(eps, r, R, fmt)
    return tuple(steps)


def newton_start(m: int, fmt, rsqrt: bool = False) -> Fraction:
    """Relative error bound of the Newton iteration's start on a scaled m-term operand a (leading
    term in [1, 2), or [1, 4) with ``rsqrt``): its first two terms made a double word (2Sum, exact),
    ``a2 = a (1 + tau)`` with tau the truncation to 2 terms (:func:`_truncation`), then
    ``z = DWDivDW2(1, a2) = (1 + delta)/a2`` (JMP Algorithm 17, ``expansions.dw.bounds``), so
    ``|a z - 1| <= (1 + |delta|)/(1 - tau) - 1``; with ``rsqrt``, ``s = SQRTDWtoDW(a2) = sqrt(a2)(1 + delta1)``
    first and ``z = DWDivDW2(1, s)``: ``|sqrt(a) z - 1| <= (1 + |delta|)/((1 - |delta1|)(1 - tau)) - 1``.
    No term of these operands of order 1 underflows (the double-word proofs' hypothesis)."""
    fmt = _format(fmt)
    tau = _truncation(2, m, fmt.p)
    delta = _dw_bounds.bound("dw_div_dw2", fmt.p).value
    if not rsqrt:
        return round_up((1 + delta) / (1 - tau) - 1)
    delta1 = _dw_bounds.bound("dw_sqrt", fmt.p).value
    return round_up((1 + delta) / ((1 - delta1) * (1 - tau)) - 1)


def _reciprocal_step(eps: Fraction, r: int, m: int, fmt: Format) -> Fraction:
    mu = _mul_relative(r, fmt)
    alpha, _ = _add_relative(r, fmt)
    beta = (1 + _truncation(r, m, fmt.p)) * (1 + mu) - 1
    return round_up((1 + eps**2 + beta * (1 + eps) ** 2) * (1 + alpha) * (1 + mu) - 1)


def mul_relative_to_product(R: int, p: int) -> Fraction:
    """Prop. IV.2 relative to the exact product |x y| instead of |x0 y0|: for ulp-nonoverlapping x and
    y whose nonzero terms are normal (except possibly the last), |x| >= (1 - d)|x0| with
    d = :func:`tail_ratio`, so |x0 y0| <= |x y| / (1 - d)**2."""
    return mul_truncated(R, p).value / (1 - tail_ratio(p)) ** 2


def _mul_relative(r: int, fmt: Format) -> Fraction:
    """Relative error of one truncated product of the Newton iterations (operands of order 1):
    :func:`mul_relative_to_product` plus the absolute underflow slack ``mul_underflow_term`` over the
    product's magnitude, at least 1/4 there, hence the 4."""
    return round_up(mul_relative_to_product(r, fmt.p) + 4 * mul_underflow_term(r, fmt))


def _truncation(r: int, m: int, p: int) -> Fraction:
    """Relative error of an m-term ulp-nonoverlapping expansion cut to its first r terms."""
    if r >= m:
        return Fraction(0)
    t = _pow2(1 - p)
    return t**r / (1 - t) / (1 - tail_ratio(p))


def _scaling(m: int, fmt: Format) -> Fraction:
    """Relative change of an m-term operand scaled to a leading term in [1, 2) (or [1, 4)): each term
    is rounded at most twice below the underflow threshold, at most eta each, and the scaled value is
    at least 1 - d; zero when the scaling is exact (the operand scaled up)."""
    s = m * fmt.eta / (1 - tail_ratio(fmt.p))
    return s / (1 - s)


def _add_relative(r: int, fmt: Format) -> tuple:
    b = add_safe(r, fmt.p, n=1, m=r)
    return b.value, b.hypotheses_hold


def _reciprocal_scaled(R: int, m: int, fmt: Format, steps=None) -> tuple:
    """Relative error bound of the R-term Newton reciprocal of a scaled m-term operand, and whether
    the hypotheses of the addition's bound hold.

    Start (two terms): :func:`newton_start`.  Step to r terms, from ``x = (1 + eps)/a``::

        v = mul(a_r, x) = (1 + eps)(1 + beta),   1 + beta = (1 + tau_r)(1 + mu_r)
        w = add_safe(2, -v) = (1 - eps - beta - eps beta)(1 + alpha_r)
        x' = mul(x, w) = (1/a)(1 - eps**2 - beta (1 + eps)**2)(1 + alpha_r)(1 + mu_r)

    so ``eps' <= (1 + eps**2 + beta (1 + eps)**2)(1 + alpha_r)(1 + mu_r) - 1``, with tau_r the truncation
    of a to r terms, mu_r the product bound (:func:`_mul_relative`), alpha_r the safe addition's
    bound for a 1-term and an r-term input."""
    steps = newton_steps(R, fmt) if steps is None else steps
    eps = newton_start(m, fmt)
    holds = True
    for r in steps[1:]:
        holds = holds and _add_relative(r, fmt)[1]
        eps = _reciprocal_step(eps, r, m, fmt)
    return eps, holds


def reciprocal_with_steps(R: int, fmt, steps) -> Bound:
    """The reciprocal's proven bound for another step sequence (ending with R), e.g. pure doubling
    (2, 4, 8, 16): what :func:`newton_steps` is compared with."""
    fmt = _format(fmt)
    if steps[-1] != R or steps[0] != 2:
        raise ValueError(f"the steps must start with 2 (the double-word start) and end with R = {R}")
    eps, holds = _reciprocal_scaled(R, R, fmt, tuple(steps))
    return Bound(round_up((1 + eps) * (1 + _scaling(R, fmt)) - 1), "|1/a|", "as reciprocal", holds)


def newton_underflow_term(R: int, fmt) -> Fraction:
    """Absolute slack of the Newton operations: scaling the R-term result back from order 1 rounds
    each term at most twice when it falls below the underflow threshold, at most eta each."""
    return R * _format(fmt).eta


def reciprocal(R: int, fmt, m: int | None = None) -> Bound:
    """Newton reciprocal of an m-term (default R) ulp-nonoverlapping expansion a, R terms out:
    ``|1/a - x| <= value * |1/a| + newton_underflow_term(R, fmt)``.  See :func:`_reciprocal_scaled`;
    the scaling of the input adds :func:`_scaling`."""
    fmt = _format(fmt)
    m = R if m is None else m
    eps, holds = _reciprocal_scaled(R, m, fmt)
    value = round_up((1 + eps) * (1 + _scaling(m, fmt)) - 1)
    return Bound(value, "|1/a|", "Newton iteration, error recurrence of expansions.bounds._reciprocal_scaled",
                 holds, "plus newton_underflow_term(R) absolute")


def div(R: int, fmt, m: int | None = None, n: int | None = None) -> Bound:
    """x / y with n-term x and m-term y (default R; m = 1: division by a float), R terms out:
    ``q = mul(x, reciprocal(y))``, so ``|x/y - q| <= value * |x/y| + newton_underflow_term(R, fmt)``
    with ``value = (1 + eps_recip)(1 + mu_R)(1 + s_x)(1 + s_y) - 1`` (s: the input scalings).
    Proven for n <= R (an x of more terms is truncated by the product)."""
    fmt = _format(fmt)
    m = R if m is None else m
    n = R if n is None else n
    eps, holds = _reciprocal_scaled(R, m, fmt)
    value = round_up((1 + eps) * (1 + _mul_relative(R, fmt)) * (1 + _scaling(n, fmt)) * (1 + _scaling(m, fmt)) - 1)
    return Bound(value, "|x/y|", "Newton reciprocal and truncated product (expansions.bounds.div)",
                 holds and n <= R, "plus newton_underflow_term(R) absolute" + ("" if n <= R else "; n > R"))


def sqrt(R: int, fmt, m: int | None = None) -> Bound:
    """Square root of an m-term (default R) ulp-nonoverlapping a >= 0, R terms out, by the Newton
    iteration for 1/sqrt(a) then a product: ``|sqrt(a) - s| <= value * sqrt(a) + newton_underflow_term``.

    Start (two terms): :func:`newton_start` with ``rsqrt``.  Step to r terms, from
    ``y = (1 + eps)/sqrt(a)``::

        v = mul(mul(a_r, y), y) = (1 + eps)**2 (1 + beta),  1 + beta = (1 + tau_r)(1 + mu_r)**2
        y' = mul(y, add_safe(3, -v)) / 2
           = (1/sqrt(a))(1 - 3/2 eps**2 - 1/2 eps**3 - 1/2 beta (1 + eps)**3)(1 + alpha_r)(1 + mu_r)(1 + rho_r)

    with rho_r = r eta (the halving, inexact only below the underflow threshold, relative to
    |y'| >= 1/2); then ``s = mul(a, y)``: ``(1 + eps_R)(1 + mu_R)(1 + s_a) - 1``."""
    fmt = _format(fmt)
    m = R if m is None else m
    eps = newton_start(m, fmt, rsqrt=True)
    holds = True
    for r in newton_steps(R, fmt)[1:]:
        mu = _mul_relative(r, fmt)
        alpha, ok = _add_relative(r, fmt)
        holds = holds and ok
        beta = (1 + _truncation(r, m, fmt.p)) * (1 + mu) ** 2 - 1
        rho = r * fmt.eta
        eps = round_up((1 + Fraction(3, 2) * eps**2 + eps**3 / 2 + beta * (1 + eps) ** 3 / 2)
                       * (1 + alpha) * (1 + mu) * (1 + rho) - 1)
    value = round_up((1 + eps) * (1 + _mul_relative(R, fmt)) * (1 + _scaling(m, fmt)) - 1)
    return Bound(value, "sqrt(a)", "Newton iteration for 1/sqrt(a), error recurrence of expansions.bounds.sqrt",
                 holds, "plus newton_underflow_term(R) absolute")


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


# reductions


def _tree_height(n: int) -> int:
    """Height of the canonical pairwise tree of n leaves: ceil(log2 n), 0 for n <= 1."""
    return (int(n) - 1).bit_length() if n > 1 else 0


def sum_tree(n: int, R: int, p: int) -> Bound:
    """Sum of n R-term expansions by the canonical pairwise tree of :mod:`expansions.reduce` (adjacent
    pairs, odd last carried; node(a, b) = renormalize(add_safe(a, b, R), R)), relative to sum |x_i|:

        |sum_i x_i - S| <= ((1 + e)**h - 1) * sum_i |x_i|,   e = add_safe(R, p).value,  h = ceil(log2 n).

    Proof.  The renormalization of R terms into R terms is error-free (every VecSum and
    VecSumErrBranch step is a 2Sum, and R input terms never fill more than R outputs), and its output
    is ulp-nonoverlapping, so every node adds two ulp-nonoverlapping R-term expansions (the inputs x_i
    by hypothesis) and, by Prop. III.1, computes a + b + delta_v with |delta_v| <= e |a + b|, a and b
    the exact values of its children.  A node v of level t (1..h) covers a set I_v of inputs, and by
    induction on t, |value(v)| <= (1 + e)**t sum_{i in I_v} |x_i|: its children are of levels < t (a
    carried element keeps its value), so |a + b| <= (1 + e)**(t-1) sum_{I_v} |x_i| and
    |delta_v| <= e (1 + e)**(t-1) sum_{I_v} |x_i|.  The result is sum_i x_i + sum_v delta_v exactly;
    the nodes of one level cover disjoint sets of inputs, so level t contributes at most
    e (1 + e)**(t-1) sum_i |x_i|, and the levels 1..h add up to ((1 + e)**h - 1) sum_i |x_i|.
    n <= 1: no node, no error.  2Sum is exact on subnormals, so no absolute underflow term; the
    hypotheses of Prop. III.1 are those of :func:`add_safe` (they fail for float32 with R > 20), and
    the result must not overflow."""
    base = add_safe(R, p)
    h = _tree_height(n)
    value = (1 + base.value) ** h - 1
    return Bound(value, "sum |x_i|",
                 "Collange et al. 2016, Prop. III.1 at each node of the pairwise tree (height ceil(log2 n))",
                 base.hypotheses_hold, base.note or "inputs ulp-nonoverlapping")


def dot(n: int, R: int, p: int) -> Bound:
    """Dot product of n pairs of R-term expansions by :mod:`expansions.reduce` (each element
    renormalize(mul_truncated(x_i, y_i, R), R), then the tree of :func:`sum_tree`), relative to
    sum |x_i y_i|:

        |sum_i x_i y_i - D| <= ((1 + mu) (1 + e)**h - 1) * sum_i |x_i y_i|,
        mu = mul_truncated(R, p).value / c**2,   c = 1 - 2**(1-p) / (1 - 2**(1-p)),
        e = add_safe(R, p).value,   h = ceil(log2 n).

    Proof.  Prop. IV.2 bounds the product error by m |x_0 y_0| (m = mul_truncated(R, p).value).  For an
    ulp-nonoverlapping x whose nonzero terms are normal (except possibly its last nonzero term), the
    k-th nonzero term after x_0 is at most 2**((1-p)k) |x_0| (ulp(v) <= 2**(1-p) |v| for normal v), so
    |x - x_0| <= |x_0| 2**(1-p) / (1 - 2**(1-p)) and |x| >= c |x_0|; with the same for y,
    |x_0 y_0| <= |x y| / c**2.  So each renormalized product (the renormalization is error-free) is
    p_i = x_i y_i (1 + theta_i), |theta_i| <= mu, |p_i| <= (1 + mu) |x_i y_i|, and it is
    ulp-nonoverlapping.  The tree of :func:`sum_tree` on the p_i errs by at most
    ((1 + e)**h - 1) sum |p_i| <= ((1 + e)**h - 1)(1 + mu) sum |x_i y_i|; adding the products' errors,
    mu sum |x_i y_i|, gives the bound.  Near the underflow threshold add :func:`dot_underflow_term`."""
    base = add_safe(R, p)
    mu = mul_relative_to_product(R, p)
    h = _tree_height(n)
    value = (1 + mu) * (1 + base.value) ** h - 1
    note = "inputs ulp-nonoverlapping with normal terms (but the last nonzero); plus dot_underflow_term absolute"
    return Bound(value, "sum |x_i y_i|",
                 "Collange et al. 2016, Prop. IV.2 per product and Prop. III.1 at each node of the pairwise tree",
                 base.hypotheses_hold, base.note or note)


def dot_underflow_term(n: int, R: int, fmt: Format) -> Fraction:
    """Absolute slack of :func:`dot` near the underflow threshold: each of the n products may lose
    :func:`mul_underflow_term` (the library's accounting, design decision 9), and that absolute error
    of a leaf goes through the tree like its value, growing by at most (1 + e)**h (e, h as in
    :func:`sum_tree`): ``n * mul_underflow_term(R, fmt) * (1 + e)**h``."""
    grow = (1 + add_safe(R, fmt.p).value) ** _tree_height(n)
    return n * mul_underflow_term(R, fmt) * grow


# ----------------------------------------------------------------------------------------------
# matrix products by exact slices (the Ozaki scheme): expansions.cpu.slices, expansions.slices

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


# ----------------------------------------------------------------------------------------------
# matrix products by residues (Ozaki scheme II): expansions.cpu.slices (modular steps), expansions.slices

#: Every integer the modular scheme computes in float64 (a residue sum, a Garner sum, a level sum, a
#: product of residue matrices) stays within this, so that it is exact whatever the order of the
#: additions, and :func:`expansions.cpu.slices.smod` reduces it exactly (its quotient times the
#: modulus stays below 2**53).
MODULAR_EXACT = 2**52
#: Widest digit of the modular scheme's splitting and of the exact result's levels.
MODULAR_DIGIT_MAX = 26
#: Moduli stay below this (for a small inner dimension n the GEMM condition alone would allow more).
MODULUS_MAX = 2**23


def modulus_limit(n: int) -> int:
    """The largest odd modulus m (< :data:`MODULUS_MAX`) whose symmetric residues (|r| <= (m-1)/2)
    give exact products of residue matrices for an inner dimension n: ``n ((m-1)/2)**2 <= 2**52``,
    every partial sum of the BLAS an integer of magnitude <= 2**52."""
    h = math.isqrt(MODULAR_EXACT // max(int(n), 1))
    return min(2 * h + 1, MODULUS_MAX - 1)


def _is_prime(m: int) -> bool:
    if m < 2 or m % 2 == 0:
        return m == 2
    return all(m % d for d in range(3, math.isqrt(m) + 1, 2))


def _smod(x: int, m: int) -> int:
    """The symmetric residue of x modulo an odd m, in [-(m-1)/2, (m-1)/2]."""
    r = x % m
    return r - m if r > (m - 1) // 2 else r


def _balanced_digits(x: int, bits: int) -> list:
    """Balanced base-2**bits digits of x >= 0, lowest first, |d| <= 2**(bits-1) (the top one too)."""
    out = []
    base, half = 1 << bits, 1 << (bits - 1)
    while x:
        d = x % base
        if d > half:
            d -= base
        out.append(d)
        x = (x - d) >> bits
    return out or [0]


@dataclass(frozen=True)
class ModularPlan:
    """What the modular slice product (Ozaki scheme II, by the Chinese remainder theorem) of an inner
    dimension n computes for R terms of precision p.

    Each row of A (column of B) is cut into ``slices`` balanced digits: the first of ``top`` bits, the
    others of ``beta`` bits, ``bits`` = top + (slices - 1) beta in all, so that a_ik ~ A'_ik 2**(E_i - bits)
    with an integer A'_ik (|A'_ik| <= :attr:`entry_max`).  The integer product C' = A' B' is computed
    modulo each of the pairwise coprime ``moduli`` by one float64 matrix product of symmetric residues
    (exact: :func:`modulus_limit`), and reconstructed exactly (Garner's mixed-radix form) as ``levels``
    balanced digits of ``level_bits`` bits, of which the ``cut`` lowest are dropped; the rest become
    the R terms.  ``truncation`` is tau of :func:`modular_truncation`."""

    n: int
    R: int
    p: int
    bits: int
    beta: int
    slices: int
    top: int
    moduli: tuple
    level_bits: int
    levels: int
    cut: int
    truncation: Fraction

    @property
    def gemms(self) -> int:
        return len(self.moduli)

    @property
    def modulus(self) -> int:
        """M, the product of the moduli: |C'| <= (M - 1)/2."""
        return math.prod(self.moduli)

    @property
    def entry_max(self) -> int:
        """The largest |A'_ik| the digits allow (:func:`entry_max`)."""
        return entry_max(self.beta, self.slices, self.top)

    @property
    def kept(self) -> int:
        """Digits of the exact product converted to terms (the top ``levels - cut``)."""
        return self.levels - self.cut

    def chunk_digits(self, p: int) -> int:
        """Digits per term of the output format (precision p): g balanced digits of level_bits bits
        make an integer below 2**p when g level_bits <= p (see :meth:`SlicePlan.chunk_digits`)."""
        return max(1, p // self.level_bits)

    def chunks(self, p: int) -> int:
        """Terms of the kept digits in the output format."""
        return -(-self.kept // self.chunk_digits(p))

    def setup(self, sa: int | None = None, sb: int | None = None) -> ModularSetup:
        """The tables of a product whose operands use only their first ``sa`` (A) and ``sb`` (B)
        digits (the others are zero in every entry; default all): :func:`modular_setup`."""
        return modular_setup(self, self.slices if sa is None else sa, self.slices if sb is None else sb)


@dataclass(frozen=True)
class ModularSetup:
    """The constants of one modular slice product (:meth:`ModularPlan.setup`): the product C' of the
    integers A', B' of the plan's digits is 2**shift C'', C'' = A'' B'' of the integers of the first
    sa and sb digits, and C'' is what is reconstructed, from the first ``len(moduli)`` moduli:

    * ``weights[i][s]``: 2**((S-1-s) beta) mod m_i, the residue of A' is sum_s d_s weights[i][s];
    * ``unshift[i]``: 2**-shift mod m_i (C'' mod m_i from C' mod m_i);
    * ``garner[i][j]`` (j < i), ``inverses[i]``: Garner's constants (P_j mod m_i, P_i**-1 mod m_i);
    * ``radix[i]``: the balanced base-2**level_bits digits of P_i, lowest first, ``levels`` of them;
    * the ``cut`` lowest levels are dropped, at most as many bits as the plan drops (2**shift is a
      coarser unit), so the plan's truncation holds; the lowest kept level's unit is
      2**(E'_i + F'_j + low_exponent), E'_i the scale :func:`expansions.cpu.slices.split` returns
      (E_i + beta - top: the unit of A' is 2**(E'_i - S beta)).

    All residues are symmetric (in [-(m-1)/2, (m-1)/2])."""

    moduli: tuple
    weights: tuple
    shift: int
    unshift: tuple
    garner: tuple
    inverses: tuple
    radix: tuple
    level_bits: int
    levels: int
    cut: int
    low_exponent: int

    @property
    def gemms(self) -> int:
        return len(self.moduli)


@functools.lru_cache(maxsize=1024)
def modular_setup(plan: ModularPlan, sa: int, sb: int) -> ModularSetup:
    """:class:`ModularSetup` of ``plan`` for operands with sa and sb digits in use (1 <= sa, sb <= S):
    the fewest moduli (a prefix of the plan's) whose product exceeds 2 n entry_max(sa) entry_max(sb)."""
    S, beta, lb = plan.slices, plan.beta, plan.level_bits
    if not (1 <= sa <= S and 1 <= sb <= S):
        raise ValueError(f"digits in use must be in 1..{S}, got {sa} and {sb}")
    shift = (S - sa) * beta + (S - sb) * beta
    need = 2 * plan.n * entry_max(beta, sa, plan.top) * entry_max(beta, sb, plan.top) + 1
    N = 1
    while math.prod(plan.moduli[:N]) < need:
        N += 1
    moduli = plan.moduli[:N]
    M = math.prod(moduli)
    levels = 1
    while (M - 1) // 2 > ((1 << (lb - 1)) - 1) << ((levels - 1) * lb):
        levels += 1
    P = [math.prod(moduli[:j]) for j in range(N)]
    radix = []
    for j in range(N):
        d = _balanced_digits(P[j], lb)
        radix.append(tuple(d + [0] * (levels - len(d))))
    cut = min(max(0, (plan.cut * lb - shift) // lb), max(0, levels - 2))
    while levels - cut < 2:
        levels += 1
        radix = [r + (0,) for r in radix]
    weights = tuple(tuple(_smod(1 << ((S - 1 - s) * beta), m) for s in range(S)) for m in moduli)
    unshift = tuple(_smod(pow(2, -shift, m), m) for m in moduli)
    garner = tuple(tuple(_smod(P[j], m) if j < i else 0 for j in range(N)) for i, m in enumerate(moduli))
    inverses = tuple(_smod(pow(P[i], -1, m), m) for i, m in enumerate(moduli))
    return ModularSetup(moduli, weights, shift, unshift, garner, inverses, tuple(radix), lb, levels, cut,
                        shift + cut * lb - 2 * S * beta)


def entry_max(beta: int, slices: int, top: int) -> int:
    """max |A'| for balanced digits, the first of ``top`` bits (|d| <= 2**(top-1)), the others of beta."""
    low = (1 << (beta - 1)) * (((1 << ((slices - 1) * beta)) - 1) // ((1 << beta) - 1))
    return (1 << (top - 1)) * (1 << ((slices - 1) * beta)) + low


def _dropped_levels(cut: int, level_bits: int) -> int:
    """max |sum_{l<cut} d_l 2**(l level_bits)| over balanced digits: 2**(lb-1) (2**(cut lb) - 1)/(2**lb - 1)."""
    return (1 << (level_bits - 1)) * (((1 << (cut * level_bits)) - 1) // ((1 << level_bits) - 1))


def modular_truncation(n: int, bits: int, beta: int, slices: int, top: int, R: int, level_bits: int,
                       cut: int) -> Fraction:
    """tau: |C_ij - C^_ij| <= n 2**(E_i + F_j) tau, C^ the modular slice product before its conversion
    to R terms (the kept digits of C' times 2**(E_i + F_j - 2 bits)).

    Proof.  The splitting (:func:`expansions.cpu.slices.split` with the first digit of ``top`` bits,
    the scale E' = E + beta - top) gives a_k = A'_k 2**(E - bits) + V_k with the integer
    A'_k = sum_s d_ks 2**((S-s) beta), |d_k1| <= 2**(top-1) (checked by the code, which raises E
    otherwise), |d_ks| <= 2**(beta-1) (carries), so |A'_k| <= :func:`entry_max` = 2**bits abar, and
    |V_k| <= v 2**E, v = R 2**-bits / 2 (each of the R terms' remainders modulo 2**(E - bits),
    rounded to nearest).  With the same for b_k (scale F):
    a b - a^ b^ = V b^ + a^ V' + V V', so per k, relative to 2**(E+F), at most v (2 abar + v).
    C' = sum_k A'_k B'_k is computed exactly (the residues and their products are exact integers,
    :func:`modulus_limit`; the Chinese remainder theorem: |C'| <= n entry_max**2 <= (M - 1)/2, M the
    product of the moduli; Garner's reconstruction and the level sums are exact integers below
    :data:`MODULAR_EXACT`).  Dropping the ``cut`` lowest balanced digits of C' changes it by at most
    :func:`_dropped_levels`, times 2**(E + F - 2 bits).  Summing over k and dividing by n gives tau."""
    am = Fraction(entry_max(beta, slices, top), 1 << bits)
    v = Fraction(R, 2) * _pow2(-bits)
    return v * (2 * am + v) + Fraction(_dropped_levels(cut, level_bits), n) * _pow2(-2 * bits)


def modular_plan(n: int, R: int, fmt, extra: int = 0) -> ModularPlan:
    """The fewest moduli for R terms of the format fmt: the smallest ``bits`` whose splitting error
    is at most 15/16 of ``2**(-(p-1)R - 4 - extra)`` (the target of :func:`slice_plan`), the fewest slices
    of at most :data:`MODULAR_DIGIT_MAX` bits that hold it, the largest primes below
    :func:`modulus_limit` until their product exceeds ``2 n entry_max**2``, the widest levels whose
    sums stay exact and the most dropped levels that keep tau within the target.  For n = 1000,
    float64, extra = 0: 11 products at R = 2, 16 at R = 3, 20 at R = 4, 39 at R = 8."""
    return _modular_plan(int(n), int(R), _format(fmt), _check_extra(extra))


@functools.lru_cache(maxsize=256)
def _primes_down(limit: int, count: int) -> tuple:
    out, m = [], limit if limit % 2 else limit - 1
    while len(out) < count:
        if _is_prime(m):
            out.append(m)
        m -= 2
    return tuple(out)


@functools.lru_cache(maxsize=4096)
def _modular_plan(n: int, R: int, fmt: Format, extra: int = 0) -> ModularPlan:
    n = max(n, 1)
    target = _pow2(-(fmt.p - 1) * R - 4 - extra)
    limit = modulus_limit(n)
    h = (limit - 1) // 2
    bits = (fmt.p - 1) * R + 4 + extra
    while True:
        slices = -(-bits // MODULAR_DIGIT_MAX)
        while True:  # the residue sums: slices digits of beta bits times weights |w| <= h
            beta = -(-bits // slices)
            if slices * (1 << (beta - 1)) * h <= MODULAR_EXACT:
                break
            slices += 1
        top = bits - (slices - 1) * beta
        am = Fraction(entry_max(beta, slices, top), 1 << bits)
        v = Fraction(R, 2) * _pow2(-bits)
        if v * (2 * am + v) <= target * Fraction(15, 16):
            break
        bits += 1
    amax = entry_max(beta, slices, top)
    need = 2 * n * amax * amax + 1
    moduli, count = (), 0
    while math.prod(moduli) < need:
        count += 8
        primes = _primes_down(limit, count)
        moduli = ()
        for m in primes:
            moduli += (m,)
            if math.prod(moduli) >= need:
                break
    N = len(moduli)
    if (N - 1) * h * h + h > MODULAR_EXACT:
        raise ValueError(f"too many moduli ({N}) for exact Garner sums")
    M = math.prod(moduli)
    for level_bits in range(min(MODULAR_DIGIT_MAX, fmt.p), 1, -1):
        levels = 1
        while (M - 1) // 2 > ((1 << (level_bits - 1)) - 1) << ((levels - 1) * level_bits):
            levels += 1
        digits = [_balanced_digits(math.prod(moduli[:j]), level_bits) for j in range(N)]
        biggest = max(abs(d) for ds in digits for d in ds)
        if all(len(ds) <= levels for ds in digits) and N * h * biggest <= MODULAR_EXACT:
            break
    else:
        raise ValueError(f"no exact level width for {N} moduli")
    cut = 0
    while cut + 2 < levels and modular_truncation(n, bits, beta, slices, top, R, level_bits, cut + 1) <= target:
        cut += 1
    tau = modular_truncation(n, bits, beta, slices, top, R, level_bits, cut)
    return ModularPlan(n, R, fmt.p, bits, beta, slices, top, moduli, level_bits, levels, cut, tau)


def modular_scale_fits(plan: ModularPlan, fmt) -> bool:
    """Whether the kept digits of every modular product of the plan (every :meth:`ModularPlan.setup`),
    scaled so that the lowest kept level's unit is the smallest normal number 2**emin, stay below
    2**emax: every term formed from them is then exact and normal (as in :func:`slice_scale_fits`).
    Bound used: the setup's |C''| <= (M'' - 1)/2 < n entry_max(sa) entry_max(sb) m_0 (one modulus more
    than needed at most), entry_max(sa) <= entry_max(S) 2**-((S - sa) beta), and its lowest kept
    unit is above 2**(cut level_bits - shift - level_bits) in the units of C'."""
    fmt = _format(fmt)
    lb = plan.level_bits
    top = plan.n * plan.entry_max ** 2 * plan.moduli[0] + (_dropped_levels(plan.cut, lb) << lb)
    top = (top << lb) >> (plan.cut * lb)
    return fmt.emin + (top + 1).bit_length() + 1 <= fmt.emax


@dataclass(frozen=True)
class ComponentwiseBound:
    """``|C_ij - out_ij| <= scaled * n * 2**(E_i + F_j) + relative * |C_ij| + absolute``, for every
    entry, with E_i, F_j the row and column scales of the slice product."""

    scaled: Fraction
    relative: Fraction
    absolute: Fraction
    source: str
    note: str = ""


def slice_scheme_fits(scheme: str, n: int, R: int, fmt, extra: int = 0) -> bool:
    """Whether the plan of ``scheme`` ("modular" or "levels") for n, R, fmt and ``extra`` bits exists
    and its exact sums fit the format (:func:`modular_scale_fits`, :func:`slice_scale_fits`)."""
    fmt = _format(fmt)
    try:
        if scheme == "modular":
            return modular_scale_fits(modular_plan(n, R, fmt, extra), fmt)
        return slice_scale_fits(slice_plan(n, R, fmt, extra), fmt)
    except ValueError:
        return False


def default_slice_scheme(n: int, R: int, fmt, extra: int = 0) -> str:
    """The slicing :func:`expansions.slices.matmul` uses by default: "modular" where it fits the
    format (:func:`modular_scale_fits`) and needs fewer matrix products than "levels" (every float64
    case: 11 against 15 products at n = 1000 and R = 2, 20 against 55 at R = 4), else "levels"
    (where that fits; ValueError where neither does)."""
    fmt = _format(fmt)
    modular, levels = (slice_scheme_fits(sc, n, R, fmt, extra) for sc in ("modular", "levels"))
    if not (modular or levels):
        raise ValueError(f"no slice scheme holds {R} terms of {fmt.name} for an inner dimension {n}"
                         + (f" and {extra} extra bits" if extra else ""))
    if modular and levels:
        return "modular" if modular_plan(n, R, fmt, extra).gemms < slice_plan(n, R, fmt, extra).gemms else "levels"
    return "modular" if modular else "levels"


def matmul_slices(n: int, R: int, fmt, scheme: str | None = None, extra: int = 0) -> ComponentwiseBound:
    """Proven componentwise bound of the slice product (:func:`expansions.slices.matmul`) of an m x n
    and an n x p matrix of expansions, R terms of format fmt out, by ``scheme`` ("modular":
    :func:`modular_plan`, Ozaki scheme II; "levels": :func:`slice_plan`, Ozaki scheme I; default
    :func:`default_slice_scheme`) with ``extra`` bits (the plans' argument; the product chooses it
    from its operands, :func:`componentwise_extra`, so that :func:`matmul` holds):

        |C_ij - out_ij| <= tau (1 + rho) n 2**(E_i + F_j) + rho |C_ij| + R eta / 2,

    where C is the exact product, tau = the plan's ``truncation``, E_i = 1 + the largest
    exponent e (2**(e-1) <= |t| < 2**e) of the finite terms t of row i of A (so 2**(E_i - 2) <=
    max_k |a_ik| (1 + 2**-52) when the terms are ulp-nonoverlapping; +1 for each row where the slicing
    raised it, see :func:`expansions.cpu.slices.split`), F_j the same for column j of B, and
    rho = 2**((1-p) R) / ((1 - 2**(1-p)) (1 - d)), d = :func:`tail_ratio` (0 when the kept digits
    make at most R terms, ``plan.chunks(p) <= R``).

    Proof.  :func:`slice_truncation` (levels) or :func:`modular_truncation` (modular) bounds
    |C - C~| by n 2**(E+F) tau, where C~ is the exact value the kept digits hold.  C~ is cut into
    normal terms of the format (exact: :func:`slice_scale_fits`, :func:`modular_scale_fits`); the
    library's renormalization of those K terms into K terms is error-free and ulp-nonoverlapping,
    r_0..r_{K-1}; keeping r_0..r_{R-1} drops at most |r_{R-1}| t/(1-t) <= |r_0| t**R/(1-t),
    t = 2**(1-p), and |r_0| <= |C~|/(1-d) (the terms are normal: every nonzero value there is a
    multiple of the smallest normal number), so at most rho |C~| <= rho (|C| + n 2**(E+F) tau).
    Scaling the R kept terms back by 2**(E_i + F_j - c0) is exact unless a term falls below the
    underflow threshold, where it rounds by at most eta/2: R eta / 2.  The last renormalization (R
    into R terms) is error-free.  Overflow: a result whose leading term overflows is (+-inf, 0, ..., 0)."""
    fmt = _format(fmt)
    scheme = default_slice_scheme(n, R, fmt, extra) if scheme is None else scheme
    if scheme == "modular":
        plan = modular_plan(n, R, fmt, extra)
        source = ("Ozaki, Uchino, Imamura 2025 (Ozaki scheme II: exact products of residues, the Chinese "
                  "remainder theorem); expansions.bounds.matmul_slices")
        note = (f"{plan.gemms} products of residue matrices, {plan.bits} bits per entry in {plan.slices} digits, "
                f"{plan.levels - plan.cut} of {plan.levels} levels of {plan.level_bits} bits kept")
    elif scheme == "levels":
        plan = slice_plan(n, R, fmt, extra)
        source = "Ozaki, Ogita, Oishi, Rump 2012 (exact slice products); expansions.bounds.matmul_slices"
        note = f"{plan.gemms} slice products, beta = {plan.beta}, S = {plan.slices}, T = {plan.levels}"
    else:
        raise ValueError(f"unknown slice scheme {scheme!r}")
    rho = _slices_rounding(plan, R, fmt)
    return ComponentwiseBound(plan.truncation * (1 + rho), rho, Fraction(R, 2) * fmt.eta, source, note)


def _slices_rounding(plan, R: int, fmt: Format) -> Fraction:
    """rho of :func:`matmul_slices`: the relative error of keeping R of the exact sum's terms."""
    t = _pow2(1 - fmt.p)
    return t**R / (1 - t) / (1 - tail_ratio(fmt.p)) if plan.chunks(fmt.p) > R else Fraction(0)


def _nonoverlap_factor(p: int) -> Fraction:
    """c = 1 - 2**(1-p) / (1 - 2**(1-p)): |x| >= c |x_0| for an ulp-nonoverlapping x (see :func:`dot`)."""
    t = _pow2(1 - p)
    return 1 - t / (1 - t)


def componentwise_level(R: int, fmt) -> Fraction:
    """2**(-(p-1) R): the slice product's componentwise target, relative to sum_k |a_ik b_kj| (the
    R-term level; :func:`componentwise_extra` chooses the plan that meets it)."""
    return _pow2(-(_format(fmt).p - 1) * R)


def matmul(n: int, R: int, fmt) -> Bound:
    """The componentwise bound of the default matrix product (``a @ b``, :func:`expansions.matmul`,
    ``dot``, ``inner``, ``tensordot`` with ``method="auto"``, and the products inside
    :mod:`expansions.linalg`), whichever path computes it, for an inner dimension n, R terms of fmt:

        |C_ij - out_ij| <= value * sum_k |a_ik b_kj| + absolute,

    ``value`` the larger of the element-wise path's D = :func:`dot` (n, R, p) and the slice path's
    ``L + rho (1 + L)``, L = :func:`componentwise_level` = 2**(-(p-1)R), rho the slice product's
    final rounding (:func:`matmul_slices` at its largest: 2**((1-p)R) / ((1 - 2**(1-p)) (1 - d)),
    d = :func:`tail_ratio`); ``absolute`` (in the note) is the larger of :func:`dot_underflow_term`
    and R eta / 2.  (Prop. IV.2's constant makes D the larger for R <= 7 in float64, 2**-53 at
    R = 2, although the element-wise path measures at the R-term level; the slice path, which runs
    every product but the smallest, is proven at L + rho (1 + L).)

    Proof.  The element-wise path (the canonical tree of products) is within D sum |a_ik b_kj| plus
    :func:`dot_underflow_term` (:func:`dot`).  The slice path computes with the plan of
    ``componentwise_extra(n, R, fmt, k)`` extra bits, where 2**-k is a lower bound of
    2**-(E_i + F_j) sum_k |a_ik,0| |b_kj,0| over the entries with a nonzero product, computed
    exactly from the operands (:func:`expansions.slices.componentwise_deficit`); so the truncation
    n 2**(E_i + F_j) tau (1 + rho) of :func:`matmul_slices` is at most
    L c**2 2**(E_i + F_j) 2**-k <= L sum_k |a_ik b_kj| (c of :func:`dot`: |a| >= c |a_0|), and the
    final rounding rho |C~| <= rho (|C| + L sum |ab|) <= rho (1 + L) sum |ab|.  An entry whose
    products are all zero is computed exactly (0).  The hypotheses are those of :func:`dot`:
    ulp-nonoverlapping operands.  A product whose spread no plan holds in the format's range runs
    the element-wise path."""
    fmt = _format(fmt)
    D = dot(n, R, fmt.p)
    level = componentwise_level(R, fmt)
    rho = _pow2(1 - fmt.p) ** R / (1 - _pow2(1 - fmt.p)) / (1 - tail_ratio(fmt.p))
    absolute = max(dot_underflow_term(n, R, fmt), Fraction(R, 2) * fmt.eta)
    return Bound(max(D.value, level + rho * (1 + level)), "sum_k |a_ik b_kj| (componentwise)",
                 "expansions.bounds.matmul: bounds.dot for the element-wise path; bounds.matmul_slices with "
                 "componentwise_extra bits for the slice path", D.hypotheses_hold,
                 f"plus an absolute {float(absolute):.3g} near underflow; inputs ulp-nonoverlapping")


def componentwise_extra(n: int, R: int, fmt, deficit: int, scheme: str | None = None) -> int:
    """Extra bits of the slice plans (:func:`modular_plan`, :func:`slice_plan`) with which the slice
    product of an inner dimension n meets :func:`matmul`'s componentwise bound, given ``deficit`` = k
    such that s = 2**-k is a lower bound of 2**-(E_i + F_j) sum_k |a_ik,0 b_kj,0| over the entries
    with a nonzero product (:func:`expansions.slices.componentwise_deficit`; E_i, F_j the scales of
    :func:`matmul_slices`): the smallest extra, from the one the plans' targets
    tau <= 2**(-(p-1)R - 4 - extra) give less one, with

        n tau (1 + rho) <= L c**2 s,

    tau the plan's own truncation, L = :func:`componentwise_level`, c as in :func:`dot`, rho as in
    :func:`matmul`.  ValueError where no plan with enough bits fits the format's range (the product
    then runs the element-wise path)."""
    return _componentwise_extra(max(int(n), 1), int(R), _format(fmt), int(deficit), scheme)


@functools.lru_cache(maxsize=4096)
def _componentwise_extra(n: int, R: int, fmt: Format, deficit: int, scheme: str | None) -> int:
    c = _nonoverlap_factor(fmt.p)
    allowed = componentwise_level(R, fmt) * c * c * _pow2(-deficit)
    rho = _pow2(1 - fmt.p) ** R / (1 - _pow2(1 - fmt.p)) / (1 - tail_ratio(fmt.p))
    need = n * (1 + rho) / allowed * _pow2(-(fmt.p - 1) * R - 4)  # the targets' 2**-extra must be below 1/need
    extra = max(0, math.ceil(math.log2(need.numerator) - math.log2(need.denominator)) - 1)
    while True:
        if fmt.emin + (fmt.p - 1) * R + 4 + extra >= fmt.emax:  # the kept digits alone exceed the range
            raise ValueError(f"no slice plan of {extra} extra bits fits {fmt.name}")
        sc = scheme or default_slice_scheme(n, R, fmt, extra)
        if not slice_scheme_fits(sc, n, R, fmt, extra):
            raise ValueError(f"no {sc} slice plan of {extra} extra bits fits {fmt.name}")
        plan = modular_plan(n, R, fmt, extra) if sc == "modular" else slice_plan(n, R, fmt, extra)
        if n * plan.truncation * (1 + rho) <= allowed:
            return extra
        extra += 1


# ----------------------------------------------------------------------------------------------
# elementary functions (expansions.cpu.elementary): stated bounds, EMPIRICAL (not proven)

#: The elementary functions whose accuracy is stated by :func:`elementary`.
ELEMENTARY = ("exp", "expm1", "log", "log1p", "log2", "log10", "pow", "sin", "cos", "tan", "atan", "atan2", "asin",
              "acos", "sinh", "cosh", "tanh")


def elementary_unit(R: int, fmt) -> Fraction:
    """The relative unit of the elementary functions' accuracy: ``u_R = 2**-((p-1)R)``, or, where an
    R-term expansion near 1 is limited by the underflow threshold (``R(p-1) + 1`` above
    ``formats.effective_bits(R, fmt, 0)``: float32 from R = 7, float64 from R = 21), the format's floor
    ``2**-(effective_bits - 1)`` (``2**-149`` for float32, ``2**-1074`` for float64)."""
    fmt = _format(fmt)
    return _pow2(-(effective_bits(R, fmt, 0) - 1))


def elementary(name: str, R: int, fmt) -> Bound:
    """Stated error bound of the elementary function ``name`` at R terms: EMPIRICAL, from the
    measurements of ``python -m expansions verify --elementary`` (paper_repro/results/cpu-x86_64/
    elementary/), not a proof.  The error of a result y of f(x) is measured in units of
    ``max(elementary_unit(R, fmt) |f(x)|, eta, eta |f'(x)|)`` for tan (the reduced argument cannot be
    nearer a pole than eta): where the unit is u_R (``R(p-1) + 1`` bits fit above the underflow
    threshold) the stated bound is 8 units, the goal of issue 16 (about 3 bits lost); where the
    format's floor limits the precision (float32 R >= 7, float64 R >= 21), every operation near the
    floor loses up to R(R+1)/2 eta (:func:`mul_underflow_term`), and the stated bound is 256 units
    of the floor, 2**15 for pow (exp(y log x): the floor's absolute error of y log x, up to 745 in
    magnitude, becomes a relative error of the result)."""
    if name not in ELEMENTARY:
        raise ValueError(f"unknown elementary function {name!r}: one of {ELEMENTARY}")
    fmt = _format(fmt)
    nominal = nominal_bits(R, fmt) <= effective_bits(R, fmt, 0)
    units = 8 if nominal else (2**15 if name == "pow" else 256)
    note = f"{units} units of {'u_R' if nominal else 'the underflow floor'}; not proven"
    if name == "pow":
        note += "; for |y| <= pow_exponent_limit(R, fmt) only (see pow_bound)"
    return Bound(units * elementary_unit(R, fmt), "max(unit |f|, eta)",
                 "empirical: python -m expansions verify --elementary", True, note)


#: pow's stated bound holds while the absolute error of log x at the underflow threshold, multiplied by
#: |y|, stays this many times below it (measured: the bound is missed from about 2^3 below on).
POW_FLOOR_MARGIN = 16


def pow_exponent_limit(R: int, fmt) -> Fraction:
    """The largest |y| for which pow's stated bound (:func:`elementary`) holds: ``bound / (16 eta)``.

    ``pow(x, y) = exp(y log|x|)``: the terms of log x below the underflow threshold are lost, so log x
    carries an absolute error of about eta (the smallest subnormal), which y multiplies into an
    absolute error of about ``|y| eta`` in the exponent, a relative error of the result of about
    ``|y| eta``.  It matters near x = 1 with a large |y| (|y log x| at most about 745 for a result in
    range): float64 R = 16, x = 1 - 2^-540, y = 30 2^540 has a relative error of 2^-536, not 2^-829.
    Measured against mpmath (x = 1 +- 2^-k, y = z / log x, |z| <= 40, R = 2..32, both dtypes), the
    bound is met for |y| up to this limit and missed from about 2^3 |y| above it on; beyond it no bound
    is stated."""
    fmt = _format(fmt)
    return elementary("pow", R, fmt).value / (POW_FLOOR_MARGIN * fmt.eta)


def pow_bound(R: int, fmt, y) -> Bound:
    """pow's stated bound (:func:`elementary`) for an exponent of magnitude |y|: its hypotheses hold
    only for ``|y| <= pow_exponent_limit(R, fmt)`` (see there)."""
    b = elementary("pow", R, fmt)
    limit = pow_exponent_limit(R, fmt)
    holds = abs(Fraction(y)) <= limit
    note = b.note if holds else (f"not stated: |y| above {float(limit):.3g}, where the absolute error of "
                                 "log x at the underflow threshold times |y| dominates")
    return Bound(b.value, b.relative_to, b.source, holds, note)
