"""Sequential baselines on exact reference values: QD-style double-double and quad-double, and the
certified (CAMPARY-style) addition and multiplication of any R.

Every function takes tuples of reference values (:mod:`expansions.reference.fp`), one expansion per
argument, and a :class:`~expansions.formats.Format`, and returns a tuple: the steps of the algorithm in
its order, each operation rounded to nearest even, then the library's non-finite rule
(:func:`expansions.reference.algorithms.nonfinite_epilogue`, with the IEEE result of the operation
on the leading terms).  The NumPy twins (:mod:`expansions.baselines.cpu`) and the one-thread CUDA
kernels (``expansions/cuda/baselines.cuh``) perform the same operations in the same order.

Sources.  QD: Hida, Li, Bailey, "Algorithms for quad-double precision floating point arithmetic"
(ARITH, 2001) and its long version "Library for double-double and quad-double arithmetic"
(2000-2007), whose text gives Quick-Two-Sum, Two-Sum, Renormalize,
Double-Accumulate and QD-Add-Accurate as pseudo-code, and the sloppy addition and the multiplication
as figures whose wiring the text describes (Lemmas on Three-Sum, the appendix's proof of the
addition bound, the list of product orders).  Where the text leaves a choice open, the docstring
says what we chose.  The double-double algorithms (R = 2) are those of :mod:`expansions.dw.reference`.
Certified operations: in the spirit of Joldes, Marty, Muller, Popescu (IEEE TC 2016) and CAMPARY, a
merge or sort by decreasing magnitude, then their renormalization (VecSum from the bottom,
VecSumErrBranch from the top); these are our well-defined variants, not a transcription of CAMPARY.
"""

from __future__ import annotations

from ..dw import reference as dw
from ..reference.algorithms import nonfinite_epilogue, sort_by_magnitude, vec_sum_err_branch
from ..reference.eft import fast_two_sum, two_prod, two_sum, vec_sum
from ..reference.fp import add, mul

# ---------------------------------------------------------------------------------------------
# double-double (R = 2): the algorithms of expansions.dw, with the library's non-finite rule


def dd_add_sloppy(x, y, fmt):
    """QD's double-double ``sloppy_add`` (:func:`expansions.dw.reference.qd_add_sloppy`; the operations
    of JMP 2017 Algorithm 5): no error bound under cancellation."""
    _check(x, y, 2)
    r = dw.qd_add_sloppy(x[0], x[1], y[0], y[1], fmt)
    return nonfinite_epilogue(r, (x, y), add(x[0], y[0], fmt), fmt)


def dd_add_ieee(x, y, fmt):
    """QD's double-double ``ieee_add`` (:func:`expansions.dw.reference.qd_add_ieee`; the operations of
    JMP 2017 Algorithm 6, relative error <= 3u^2 + 13u^3)."""
    _check(x, y, 2)
    r = dw.qd_add_ieee(x[0], x[1], y[0], y[1], fmt)
    return nonfinite_epilogue(r, (x, y), add(x[0], y[0], fmt), fmt)


def dd_mul(x, y, fmt):
    """Double-double product: the exact leading product by Two-Prod, the order-1 terms in plain
    arithmetic, one Quick-Two-Sum (the QD recipe; the operations of JMP 2017 Algorithm 10,
    DWTimesDW1, :func:`expansions.dw.reference.dw_times_dw1`, relative error <= 7u^2)."""
    _check(x, y, 2)
    r = dw.dw_times_dw1(x[0], x[1], y[0], y[1], fmt)
    return nonfinite_epilogue(r, (x, y), mul(x[0], y[0], fmt), fmt)


# ---------------------------------------------------------------------------------------------
# quad-double (R = 4): building blocks of Hida, Li, Bailey


def three_sum(a, b, c, fmt):
    """Three-Sum (QD, Figure "Three-Sums", wiring from the proof of its Lemma): ``(u, v) = 2Sum(a, b)``,
    ``(r0, w) = 2Sum(u, c)``, ``(r1, r2) = 2Sum(v, w)``; error-free."""
    u, v = two_sum(a, b, fmt)
    r0, w = two_sum(u, c, fmt)
    r1, r2 = two_sum(v, w, fmt)
    return r0, r1, r2


def three_sum2(a, b, c, fmt):
    """Three-Sum with two outputs (QD): as :func:`three_sum`, the last 2Sum a plain addition."""
    u, v = two_sum(a, b, fmt)
    r0, w = two_sum(u, c, fmt)
    return r0, add(v, w, fmt)


def three_sum1(a, b, c, fmt):
    """Three-Sum with one output (QD): ``(a + b) + c`` in plain arithmetic."""
    return add(add(a, b, fmt), c, fmt)


def qd_renormalize(a, fmt):
    """Renormalize (QD, "a variant of Priest's renormalization") of 4 or 5 terms to 4: Quick-Two-Sums
    from the bottom, then from the top a Quick-Two-Sum per term that emits the running sum whenever its
    error is nonzero.

    The pseudo-code never stores the running sum left after its loop; its implementation does (the
    footnote: "this loop is unrolled to several if statements"), and so do we: ``b_k = s`` if k < 4.
    """
    n = len(a)
    t = [0.0] * n
    s, t[n - 1] = fast_two_sum(a[n - 2], a[n - 1], fmt)
    for i in range(n - 3, -1, -1):
        s, t[i + 1] = fast_two_sum(a[i], s, fmt)
    t[0] = s
    b = [0.0] * 4
    s = t[0]
    k = 0
    for i in range(1, n):
        s, e = fast_two_sum(s, t[i], fmt)
        if e != 0:
            if k < 4:
                b[k] = s
            s = e
            k += 1
    if k < 4:
        b[k] = s
    return b


def double_accumulate(u, v, x, fmt):
    """Double-Accumulate (QD): adds x to the two-term accumulator (u, v); returns ``(s, u, v)`` where a
    nonzero s is a finished output component."""
    s, v = two_sum(v, x, fmt)
    s, u = two_sum(u, s, fmt)
    if u == 0:
        u = s
        s = 0.0
    if v == 0:
        v = u
        u = s
        s = 0.0
    return s, u, v


# ---------------------------------------------------------------------------------------------
# quad-double operations


def qd_add_sloppy(x, y, fmt):
    """Quad-double + quad-double, QD's first ("sloppy", Cray-style bound) addition, Figure "Quad-Double +
    Quad-Double" as its appendix wires it: 2Sums 1-4 of the term pairs, 2Sum 5 of the order-1 sum and
    the order-0 error, Three-Sums 6 (three outputs), 7 (two) and 8 (one), then Renormalize of the five
    terms.  The drawing's order of each Three-Sum's inputs is not in the text; ours is (sum of the
    order, carry from above, error from above)."""
    _check(x, y, 4)
    x0, e0 = two_sum(x[0], y[0], fmt)  # 1
    t1, e1 = two_sum(x[1], y[1], fmt)  # 2
    t2, e2 = two_sum(x[2], y[2], fmt)  # 3
    t3, e3 = two_sum(x[3], y[3], fmt)  # 4
    x1, u = two_sum(t1, e0, fmt)  # 5
    x2, w, v = three_sum(t2, u, e1, fmt)  # 6
    x3, z = three_sum2(t3, w, e2, fmt)  # 7
    x4 = three_sum1(z, v, e3, fmt)  # 8
    r = qd_renormalize([x0, x1, x2, x3, x4], fmt)
    return nonfinite_epilogue(r, (x, y), x0, fmt)


def qd_add_ieee(x, y, fmt):
    """Quad-double + quad-double, QD-Add-Accurate (QD, due to Shewchuk and Boldo, "IEEE-style" bound):
    merge the eight terms by decreasing magnitude, Double-Accumulate them until four components are
    out, put the accumulator into the remaining components, Renormalize.

    The merge is the stable merge of the two inputs (ties: x's term first; for inputs not sorted by
    magnitude, the stable sort of x + y).  The printed lines 14-15 (``if k < 2: c[k+1] = v``,
    ``if k < 3: c[k] = u``) would drop the accumulator when k = 3 and its low part when k = 2; we put
    it in the free components: ``c[k], c[k+1] = u, v`` when k <= 2, ``c[3] = RN(u + v)`` when k = 3."""
    _check(x, y, 4)
    c = [0.0] * 4
    u = v = 0.0
    k = 0
    for t in sort_by_magnitude(list(x) + list(y)):
        if k == 4:
            break
        s, u, v = double_accumulate(u, v, t, fmt)
        if s != 0:
            c[k] = s
            k += 1
    if k <= 2:
        c[k], c[k + 1] = u, v
    elif k == 3:
        c[3] = add(u, v, fmt)
    r = qd_renormalize(c, fmt)
    return nonfinite_epilogue(r, (x, y), add(x[0], y[0], fmt), fmt)


def qd_mul(x, y, fmt):
    """Quad-double * quad-double, QD's accurate multiplication: the 10 products of order <= 3 by
    Two-Prod, the 3 of order 4 in plain arithmetic, accumulated order by order (Figure "accumulation
    phase"): Three-Sum of the order-1 terms, Six-Three-Sum of the order-2 terms and the carry,
    Nine-Two-Sum of the order-3 terms and carries, Nine-One-Sum of the order-4 terms and carries, then
    Renormalize of the five components.  The text names these boxes and what they compute; the order
    of their inputs is ours (products by increasing i, then errors by increasing i, then carries)."""
    _check(x, y, 4)
    p, q = {}, {}
    for k in range(4):
        for i in range(k + 1):
            p[i, k - i], q[i, k - i] = two_prod(x[i], y[k - i], fmt)
    p4 = [mul(x[i], y[4 - i], fmt) for i in (1, 2, 3)]
    x0 = p[0, 0]
    x1, c1, c2 = three_sum(p[0, 1], p[1, 0], q[0, 0], fmt)
    x2, d1, d2 = six_three_sum(p[0, 2], p[1, 1], p[2, 0], q[0, 1], q[1, 0], c1, fmt)
    x3, f1 = nine_two_sum(p[0, 3], p[1, 2], p[2, 1], p[3, 0], q[0, 2], q[1, 1], q[2, 0], c2, d1, fmt=fmt)
    x4 = nine_one_sum(*p4, q[0, 3], q[1, 2], q[2, 1], q[3, 0], d2, f1, fmt=fmt)
    r = qd_renormalize([x0, x1, x2, x3, x4], fmt)
    return nonfinite_epilogue(r, (x, y), x0, fmt)


def six_three_sum(a, b, c, d, e, f, fmt):
    """Six-Three-Sum (QD): Three-Sum of each half, then the two three-term sums added as in the sloppy
    addition, to three components: ``2Sum`` of the leading terms, ``2Sum`` of the second terms then of
    that sum and the leading error, the rest in plain arithmetic."""
    s0, s1, s2 = three_sum(a, b, c, fmt)
    t0, t1, t2 = three_sum(d, e, f, fmt)
    r0, g0 = two_sum(s0, t0, fmt)
    h1, g1 = two_sum(s1, t1, fmt)
    r1, k1 = two_sum(h1, g0, fmt)
    r2 = add(add(add(s2, t2, fmt), g1, fmt), k1, fmt)
    return r0, r1, r2


def nine_two_sum(*a, fmt):
    """Nine-Two-Sum (QD): the nine inputs paired into four double-doubles (a0, a1) ... (a6, a7) and
    the double a8, added by the double-double sloppy addition ((a0a1 + a2a3) + (a4a5 + a6a7)) + (a8, 0)
    to one double-double."""
    hl = [(a[2 * i], a[2 * i + 1]) for i in range(4)]
    ab = dw.qd_add_sloppy(*hl[0], *hl[1], fmt)
    cd = dw.qd_add_sloppy(*hl[2], *hl[3], fmt)
    s = dw.qd_add_sloppy(*ab, *cd, fmt)
    return dw.qd_add_sloppy(*s, a[8], 0.0, fmt)


def nine_one_sum(*a, fmt):
    """Nine-One-Sum (QD): the nine inputs added in plain arithmetic, left to right."""
    s = a[0]
    for t in a[1:]:
        s = add(s, t, fmt)
    return s


# ---------------------------------------------------------------------------------------------
# certified operations, any R


def certified_add(x, y, R, fmt):
    """x + y in R terms: the 2R terms merged by decreasing magnitude (the stable merge, ties: x's term
    first; for inputs not sorted by magnitude, the stable sort of x + y), VecSum from the bottom,
    VecSumErrBranch from the top keeping R terms.  Error-free unless VecSumErrBranch has more than R
    terms to emit; then the error is exactly the part it drops."""
    _check(x, y, R)
    e = vec_sum(sort_by_magnitude(list(x) + list(y)), fmt)
    r = vec_sum_err_branch(e, R, fmt)
    return nonfinite_epilogue(r, (x, y), add(x[0], y[0], fmt), fmt)


def certified_mul_terms(x, y, R, fmt):
    """The terms the certified multiplication sums, in their collection order: for each order
    k = 0 .. R-1 and i = 0 .. k, ``p, e = 2Prod(x_i, y_{k-i})`` (p then e); then the plain products
    ``RN(x_i y_{R-i})``, i = 1 .. R-1.  R^2 + 2R - 1 terms."""
    terms = []
    for k in range(R):
        for i in range(k + 1):
            terms += two_prod(x[i], y[k - i], fmt)
    terms += [mul(x[i], y[R - i], fmt) for i in range(1, R)]
    return terms


def certified_mul(x, y, R, fmt):
    """x * y in R terms: the terms of :func:`certified_mul_terms` sorted by decreasing magnitude
    (stable: ties keep the collection order), VecSum from the bottom, VecSumErrBranch from the top
    keeping R terms.  The products of order > R are never formed and those of order R are rounded
    (Prop. IV.1 of Collange et al. bounds the former); the rest is exact up to what VecSumErrBranch
    drops."""
    _check(x, y, R)
    e = vec_sum(sort_by_magnitude(certified_mul_terms(x, y, R, fmt)), fmt)
    r = vec_sum_err_branch(e, R, fmt)
    return nonfinite_epilogue(r, (x, y), mul(x[0], y[0], fmt), fmt)


def _check(x, y, R):
    if len(x) != R or len(y) != R:
        raise ValueError(f"expected two expansions of {R} terms, got {len(x)} and {len(y)}")


__all__ = [
    "dd_add_sloppy",
    "dd_add_ieee",
    "dd_mul",
    "qd_add_sloppy",
    "qd_add_ieee",
    "qd_mul",
    "certified_add",
    "certified_mul",
    "certified_mul_terms",
    "qd_renormalize",
    "double_accumulate",
    "three_sum",
]
