"""Scalar sequential versions of the library's expansion algorithms, on exact reference values.

Each function takes tuples of reference values (see :mod:`expansions.reference.fp`), one expansion
per argument, and returns a tuple.  The vector algorithms of Collange, Joldes, Muller, Popescu
(ASAP 2016) are written as operations on length-R lists, one list element per GPU lane, in exactly
the order of the kernels and of their CPU twins (``expansions/cpu/kernels.py``), so that all three
agree bit for bit.  Helpers:

* ``_shift_in(v, t)``: ``(t, v[0], ..., v[R-2])``, a shift toward higher lane numbers (less
  significant terms) inserting ``t`` at lane 0; ``v[R-1]`` leaves the vector.
* ``_shift_out(v)``: ``(v[1], ..., v[R-1], 0)``, a shift toward lane 0.
"""

from __future__ import annotations

from fractions import Fraction

from .eft import two_prod, two_sum, vec_sum
from .fp import INF, NAN, add, is_finite, is_nan, mul, neg, ulp


def _shift_in(v, t):
    return [t] + v[:-1]


def _shift_out(v):
    return v[1:] + [0.0]


def _lanes(x, R):
    """The lane vector of an input of any size: its terms, then zeros, cut to R lanes."""
    x = list(x)
    return (x + [0.0] * R)[:R]


def insertion_order(n: int, m: int):
    """Which input term the safe addition inserts at each step after the first: ``('x', i)`` or
    ``('y', i)``, alternating x1, y1, x2, y2, ... and then the rest of the longer input."""
    order = []
    for i in range(1, max(n, m)):
        if i < n:
            order.append(("x", i))
        if i < m:
            order.append(("y", i))
    return order


def nonfinite_epilogue(result, operands, leading, fmt):
    """The library's rule for non-finite values (identical in every backend).

    ``operands`` are the input expansions, ``leading`` is the IEEE result of the operation on their
    leading terms (``x0 + y0``, ``x0 * y0``, ...), already computed by the algorithm.

    * If an operand has a non-finite term, the result is ``(w, 0, ..., 0)`` where ``w`` is the IEEE
      operation applied to the operands' leading terms, an operand with a finite leading term but a
      non-finite lower term counting as NaN.
    * Else, if a computed term is not finite (overflow), the result is
      ``(±inf, 0, ..., 0)`` with the sign of ``leading``.
    * Else the computed result stands.

    A NaN result is always the canonical quiet NaN with a clear sign bit (``math.nan``).
    """
    R = len(result)
    bad = [any(not is_finite(t) for t in op) for op in operands]
    if any(bad):
        w = leading
        for op, b in zip(operands, bad):
            if b and is_finite(op[0]):
                w = NAN
        return tuple([w] + [0.0] * (R - 1))
    if not all(is_finite(t) for t in result):
        w = -INF if (leading < 0) else INF
        return tuple([w] + [0.0] * (R - 1))
    return tuple(result)


def add_safe(x, y, R, fmt):
    """Safe parallel addition (Algorithm 1, Fig. 1), inputs of n and m terms, output of R terms.

    Lane 0 adds x0 and y0; then the terms x1, y1, x2, y2, ... are inserted at lane 0 one per step
    while every lane applies 2Sum and the errors move up one lane per step (the error of lane R-1
    leaves the vector); then R-2 steps insert zeros; a last step adds the shifted errors with plain
    additions.  (The pseudo-code's loop "for i = 1 to R" would read x_R: the text's "2n-1 lines"
    for order-n inputs fixes it to i = 1 .. n-1.)
    """
    n, m = len(x), len(y)
    a = [x[0]] + [0.0] * (R - 1)
    b = [y[0]] + [0.0] * (R - 1)
    s, e = _map2(two_sum, a, b, fmt)
    leading = s[0]
    for which, i in insertion_order(n, m):
        t = x[i] if which == "x" else y[i]
        s, e = _map2(two_sum, s, _shift_in(e, t), fmt)
    for _ in range(R - 2):
        s, e = _map2(two_sum, s, _shift_in(e, 0.0), fmt)
    s = [add(si, ei, fmt) for si, ei in zip(s, _shift_in(e, 0.0))]
    return nonfinite_epilogue(s, (x, y), leading, fmt)


def add_fast(x, y, R, fmt):
    """Fast parallel addition (Fig. 5): lane-wise 2Sum of the inputs, then at most R-2 steps that
    shift the errors up one lane and 2Sum them in (stopping early once every error is zero), then a
    plain addition of the shifted errors.  No error bound under cancellation."""
    xs, ys = _lanes(x, R), _lanes(y, R)
    s, e = _map2(two_sum, xs, ys, fmt)
    leading = s[0]
    for _ in range(R - 2):
        es = _shift_in(e, 0.0)
        if not any(ei != 0 for ei in es):
            break
        s, e = _map2(two_sum, s, es, fmt)
    s = [add(si, ei, fmt) for si, ei in zip(s, _shift_in(e, 0.0))]
    return nonfinite_epilogue(s, (x, y), leading, fmt)


def _propagate(s, e, R, fmt):
    """``while any(e != 0)``, bounded by R rounds: 2Sum e into s, shift e up one lane (zero in)."""
    for _ in range(R):
        if not any(ei != 0 for ei in e):
            break
        s, e = _map2(two_sum, s, e, fmt)
        e = _shift_in(e, 0.0)
    return s, e


def positional(x, fmt):
    """The operand as the proofs of the multiplication, the dot product and the Newton operations take
    it: ``|x_i| <= 2**-(p-1) |x_{i-1}|`` for every i, which implies ``|x_i| <= 2**(-(p-1) i) |x_0|``.
    An ulp-nonoverlapping expansion may break it (a zero followed by a nonzero term, subnormal terms
    that repeat); then, and only where every term is finite, the operand is renormalized to its own
    number of terms (error-free; its output keeps the condition), else returned as it is.  The kernels
    test ``RN(2**(p-1) |x_i|) <= |x_{i-1}|``, exact but where it overflows and fails anyway."""
    if len(x) < 2 or not all(is_finite(t) for t in x):
        return x
    top = Fraction(2) ** (fmt.p - 1)
    if all(top * abs(Fraction(x[i])) <= abs(Fraction(x[i - 1])) for i in range(1, len(x))):
        return x
    return tuple(renormalize(x, len(x), fmt))


def mul_truncated(x, y, R, fmt):
    """Truncated parallel multiplication (Algorithm 2, Fig. 7), inputs of n and m terms, R terms out.

    At step i (0 .. R-2) every lane l forms ``2Prod(x_l, y_i)`` (order i+l) and 2Sums the product into
    its accumulator; lane 0's accumulator is the output term pi_i; the accumulators shift down one
    lane; the product errors, then the sum errors, are propagated with bounded any-loops.  The last
    step uses plain products and additions.  (Fig. 7's ``K-1`` is ``R-1``.)  The operands are first
    made :func:`positional`.
    """
    x, y = positional(x, fmt), positional(y, fmt)
    m = len(y)
    xs = _lanes(x, R)
    s = [0.0] * R
    pi = [0.0] * R
    leading = mul(x[0], y[0], fmt)
    for i in range(R - 1):
        yi = y[i] if i < m else 0.0
        p, e = _map2(two_prod, xs, [yi] * R, fmt)
        s, ep = _map2(two_sum, s, p, fmt)
        pi[i] = s[0]
        s = _shift_out(s)
        s, e = _propagate(s, e, R, fmt)
        s, ep = _propagate(s, ep, R, fmt)
    yi = y[R - 1] if R - 1 < m else 0.0
    p = [mul(xl, yi, fmt) for xl in xs]
    s = [add(sl, pl, fmt) for sl, pl in zip(s, p)]
    pi[R - 1] = s[0]
    return nonfinite_epilogue(pi, (x, y), leading, fmt)


def vec_sum_err_branch(e, R, fmt, dropped: bool = False):
    """VecSumErrBranch (Joldes, Marty, Muller, Popescu 2016): from the top, 2Sum the running value
    with the next term; a nonzero error closes an output term, a zero error keeps accumulating.
    At most R output terms; the rest is zero.  (2Sum instead of Fast2Sum: identical results where
    Fast2Sum's precondition holds, and error-free on any input.)  With ``dropped=True``, also the
    list of values it leaves out when R terms are full (their exact sum is the truncation error)."""
    r = [0.0] * R
    j = 0
    eps = e[0]
    for i in range(1, len(e)):
        r[j], eps = two_sum(eps, e[i], fmt)
        if eps != 0:
            if j >= R - 1:
                return (r, [eps, *e[i + 1:]]) if dropped else r
            j += 1
        else:
            eps = r[j]
    r[j] = eps
    return (r, []) if dropped else r


def sort_by_magnitude(x):
    """Stable sort by decreasing magnitude: ties keep their input order (the kernels break ties by
    lane index)."""
    return [t for _, t in sorted(enumerate(x), key=lambda it: (-abs(exact_or_zero(it[1])), it[0]))]


def exact_or_zero(t):
    return t if type(t) is Fraction else Fraction(0)


def adjacent_nonoverlapping(r, fmt):
    """Each term is zero or at most the ulp of the term before it (ulp(0) is the smallest
    subnormal).  On outputs of VecSumErrBranch, whose nonzero terms come first, this is
    Definition II.2."""
    return all(r[i] == 0 or abs(r[i]) <= ulp(r[i - 1], fmt) for i in range(1, len(r)))


def renormalize(x, R, fmt):
    """Renormalization to R terms of any finite input: at most R rounds of a stable sort by decreasing
    magnitude, VecSum from the bottom and VecSumErrBranch from the top (Joldes, Marty, Muller,
    Popescu, IEEE TC 2016), stopping as soon as the terms are ulp-nonoverlapping.

    One round suffices for the outputs of the library's operations; unordered input may need a
    second.  Every round is error-free when the input has at most R terms."""
    cur = list(x)
    leading = None
    for _ in range(R):
        e = vec_sum(sort_by_magnitude(cur), fmt)
        if leading is None:
            leading = e[0]
        r = vec_sum_err_branch(e, R, fmt)
        if all(is_finite(t) for t in r) and adjacent_nonoverlapping(r, fmt):
            break
        cur = r
    return nonfinite_epilogue(r, (x,), leading, fmt)


def negate(x):
    """-x: every term negated (exact)."""
    return tuple(neg(t) for t in x)


def sub_safe(x, y, R, fmt):
    """x - y with the safe addition: ``add_safe(x, -y)``."""
    return add_safe(x, negate(y), R, fmt)


def sub_fast(x, y, R, fmt):
    """x - y with the fast addition: ``add_fast(x, -y)``."""
    return add_fast(x, negate(y), R, fmt)


def _map2(f, a, b, fmt):
    """Apply a two-output EFT lane by lane; return the two output vectors."""
    out1, out2 = [], []
    for ai, bi in zip(a, b):
        u, v = f(ai, bi, fmt)
        out1.append(u)
        out2.append(v)
    return out1, out2


__all__ = [
    "add_safe",
    "add_fast",
    "mul_truncated",
    "renormalize",
    "vec_sum_err_branch",
    "negate",
    "sub_safe",
    "sub_fast",
    "insertion_order",
    "nonfinite_epilogue",
    "is_nan",
]
