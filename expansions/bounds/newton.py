"""Proven bounds of the Newton iterations: reciprocal, division, square root (any R).
"""

from __future__ import annotations

import functools
from fractions import Fraction

from ..bound_type import Bound
from ..dw import bounds as _dw_bounds
from ..formats import Format
from .arithmetic import _format, _pow2, add_safe, mul_truncated, mul_underflow_term, round_up, tail_ratio

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
    return Bound(value, "|1/a|", "Newton iteration, error recurrence of expansions.bounds.newton._reciprocal_scaled",
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
