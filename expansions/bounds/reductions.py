"""Proven bounds of the sums and dot products by the canonical pairwise tree (:mod:`expansions.reduce`).
"""

from __future__ import annotations

from fractions import Fraction

from ..bound_type import Bound
from ..formats import Format
from .arithmetic import add_safe, mul_underflow_term
from .newton import mul_relative_to_product


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
