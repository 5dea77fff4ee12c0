"""Double-word algorithms on exact reference values: each operation rounded to nearest even in ``fmt``.

Every function takes the words of its operands (``xh, xl`` for a double-word ``x``, ``y`` for a
floating-point number) as values of :mod:`expansions.reference.fp` and a
:class:`~expansions.formats.Format`, and returns the pair ``(zh, zl)``.  The steps are those of the
published algorithm, in its order; the docstring gives the source and the operation count that
the source states (negations are free, 2Sum costs 6, Fast2Sum 3, 2Prod with an FMA 2).  The NumPy
twins in :mod:`expansions.dw.cpu` perform the same operations in the same order.

Adds to :mod:`expansions.reference.fp` the two correctly rounded operations the algorithms need
besides ``+ - * fma``: :func:`div` and :func:`sqrt` (exact result, then one rounding).

Preconditions (those of the proofs): operands are double-words, ``xh = RN(xh + xl)``; no underflow
or overflow.  Outside them the functions still return what the operations give (IEEE special values
included), which is what the twins return too.
"""

from __future__ import annotations

import math
from fractions import Fraction

from ..reference.eft import fast_two_sum, two_prod, two_sum
from ..reference.fp import INF, NAN, add, fma, is_nan, is_zero, mul, neg, round_fraction, sign_bit, sub

ONE = Fraction(1)
TWO = Fraction(2)


# ---------------------------------------------------------------------------------------------
# correctly rounded division and square root


def div(a, b, fmt):
    """RN(a / b) with IEEE special values (x/0 = ±inf for x != 0, 0/0 = inf/inf = NaN)."""
    if type(a) is Fraction and type(b) is Fraction:
        return round_fraction(a / b, fmt)
    if is_nan(a) or is_nan(b):
        return NAN
    negative = sign_bit(a) != sign_bit(b)
    a_inf = type(a) is float and math.isinf(a)
    b_inf = type(b) is float and math.isinf(b)
    if a_inf and b_inf:
        return NAN
    if a_inf:
        return -INF if negative else INF
    if b_inf:
        return -0.0 if negative else 0.0
    if is_zero(a) and is_zero(b):
        return NAN
    if is_zero(b):
        return -INF if negative else INF
    return -0.0 if negative else 0.0


def sqrt(a, fmt):
    """RN(sqrt(a)): sqrt(-0) = -0, sqrt(+inf) = +inf, NaN for negative numbers and NaN."""
    if type(a) is Fraction:
        if a < 0:
            return NAN
        return _sqrt_rn(a, fmt)
    if is_nan(a) or a < 0:
        return NAN
    return a  # +-0.0 or +inf


def _sqrt_rn(q: Fraction, fmt) -> Fraction:
    n, d = q.numerator, q.denominator
    e = n.bit_length() - d.bit_length()
    if (n << max(0, -e)) < (d << max(0, e)):
        e -= 1
    # 2**e <= q < 2**(e+1), so 2**(e//2) <= sqrt(q) < 2**(e//2 + 1)
    qe = max(e // 2, fmt.emin) - fmt.p + 1  # quantum of the result's binade
    # Q = q / 4**qe; the result is RN(sqrt(Q)) * 2**qe with RN(sqrt(Q)) an integer
    if qe >= 0:
        num, den = n, d << (2 * qe)
    else:
        num, den = n << (-2 * qe), d
    r = math.isqrt(num // den)  # floor(sqrt(Q))
    # compare sqrt(Q) with r + 1/2, i.e. 4Q with (2r + 1)**2
    lhs, rhs = 4 * num, (2 * r + 1) ** 2 * den
    if lhs > rhs or (lhs == rhs and r & 1):
        r += 1
    return Fraction(r << qe) if qe >= 0 else Fraction(r, 1 << -qe)


# ---------------------------------------------------------------------------------------------
# Joldes, Muller, Popescu (ACM TOMS 2017), Algorithms 4 to 18


def dw_plus_fp(xh, xl, y, fmt):
    """DWPlusFP, Algorithm 4 of JMP 2017 (10 operations): double-word + floating-point number."""
    sh, sl = two_sum(xh, y, fmt)
    v = add(xl, sl, fmt)
    return fast_two_sum(sh, v, fmt)


def dw_add_sloppy(xh, xl, yh, yl, fmt):
    """SloppyDWPlusDW, Algorithm 5 of JMP 2017 (11 operations): no error bound under cancellation."""
    sh, sl = two_sum(xh, yh, fmt)
    v = add(xl, yl, fmt)
    w = add(sl, v, fmt)
    return fast_two_sum(sh, w, fmt)


def dw_add_accurate(xh, xl, yh, yl, fmt):
    """AccurateDWPlusDW, Algorithm 6 of JMP 2017 (20 operations)."""
    sh, sl = two_sum(xh, yh, fmt)
    th, tl = two_sum(xl, yl, fmt)
    c = add(sl, th, fmt)
    vh, vl = fast_two_sum(sh, c, fmt)
    w = add(tl, vl, fmt)
    return fast_two_sum(vh, w, fmt)


def dw_times_fp1(xh, xl, y, fmt):
    """DWTimesFP1, Algorithm 7 of JMP 2017 (10 operations)."""
    ch, cl1 = two_prod(xh, y, fmt)
    cl2 = mul(xl, y, fmt)
    th, tl1 = fast_two_sum(ch, cl2, fmt)
    tl2 = add(tl1, cl1, fmt)
    return fast_two_sum(th, tl2, fmt)


def dw_times_fp2(xh, xl, y, fmt):
    """DWTimesFP2, Algorithm 8 of JMP 2017 (7 operations)."""
    ch, cl1 = two_prod(xh, y, fmt)
    cl2 = mul(xl, y, fmt)
    cl3 = add(cl1, cl2, fmt)
    return fast_two_sum(ch, cl3, fmt)


def dw_times_fp3(xh, xl, y, fmt):
    """DWTimesFP3, Algorithm 9 of JMP 2017 (6 operations, one FMA besides 2Prod)."""
    ch, cl1 = two_prod(xh, y, fmt)
    cl3 = fma(xl, y, cl1, fmt)
    return fast_two_sum(ch, cl3, fmt)


def dw_times_dw1(xh, xl, yh, yl, fmt):
    """DWTimesDW1, Algorithm 10 of JMP 2017 (9 operations)."""
    ch, cl1 = two_prod(xh, yh, fmt)
    tl1 = mul(xh, yl, fmt)
    tl2 = mul(xl, yh, fmt)
    cl2 = add(tl1, tl2, fmt)
    cl3 = add(cl1, cl2, fmt)
    return fast_two_sum(ch, cl3, fmt)


def dw_times_dw2(xh, xl, yh, yl, fmt):
    """DWTimesDW2, Algorithm 11 of JMP 2017 (8 operations)."""
    ch, cl1 = two_prod(xh, yh, fmt)
    tl = mul(xh, yl, fmt)
    cl2 = fma(xl, yh, tl, fmt)
    cl3 = add(cl1, cl2, fmt)
    return fast_two_sum(ch, cl3, fmt)


def dw_times_dw3(xh, xl, yh, yl, fmt):
    """DWTimesDW3, Algorithm 12 of JMP 2017 (9 operations)."""
    ch, cl1 = two_prod(xh, yh, fmt)
    tl0 = mul(xl, yl, fmt)
    tl1 = fma(xh, yl, tl0, fmt)
    cl2 = fma(xl, yh, tl1, fmt)
    cl3 = add(cl1, cl2, fmt)
    return fast_two_sum(ch, cl3, fmt)


def dw_div_fp1(xh, xl, y, fmt):
    """DWDivFP1, Algorithm 13 of JMP 2017 (16 operations)."""
    th = div(xh, y, fmt)
    pih, pil = two_prod(th, y, fmt)
    dh, d1 = two_sum(xh, neg(pih), fmt)
    d2 = sub(xl, pil, fmt)
    dl = add(d1, d2, fmt)
    d = add(dh, dl, fmt)
    tl = div(d, y, fmt)
    return fast_two_sum(th, tl, fmt)


def dw_div_fp2(xh, xl, y, fmt):
    """DWDivFP2, Algorithm 14 of JMP 2017 (10 operations)."""
    th = div(xh, y, fmt)
    pih, pil = two_prod(th, y, fmt)
    dh = sub(xh, pih, fmt)
    dl = sub(xl, pil, fmt)
    d = add(dh, dl, fmt)
    tl = div(d, y, fmt)
    return fast_two_sum(th, tl, fmt)


def dw_div_fp3(xh, xl, y, fmt):
    """DWDivFP3, Algorithm 15 of JMP 2017 (10 operations)."""
    th = div(xh, y, fmt)
    pih, pil = two_prod(th, y, fmt)
    dh = sub(xh, pih, fmt)
    dt = sub(dh, pil, fmt)
    d = add(dt, xl, fmt)
    tl = div(d, y, fmt)
    return fast_two_sum(th, tl, fmt)


def dw_div_dw1(xh, xl, yh, yl, fmt):
    """DWDivDW1, Algorithm 16 of JMP 2017 (24 operations)."""
    th = div(xh, yh, fmt)
    rh, rl = dw_times_fp1(yh, yl, th, fmt)
    pih, pil = two_sum(xh, neg(rh), fmt)
    dh = sub(pil, rl, fmt)
    dl = add(dh, xl, fmt)
    d = add(pih, dl, fmt)
    tl = div(d, yh, fmt)
    return fast_two_sum(th, tl, fmt)


def dw_div_dw2(xh, xl, yh, yl, fmt):
    """DWDivDW2, Algorithm 17 of JMP 2017 (18 operations)."""
    th = div(xh, yh, fmt)
    rh, rl = dw_times_fp1(yh, yl, th, fmt)
    pih = sub(xh, rh, fmt)
    dl = sub(xl, rl, fmt)
    d = add(pih, dl, fmt)
    tl = div(d, yh, fmt)
    return fast_two_sum(th, tl, fmt)


def dw_div_dw3(xh, xl, yh, yl, fmt):
    """DWDivDW3, Algorithm 18 of JMP 2017 (31 operations): one Newton step for 1/y, then DWTimesDW3."""
    th = div(ONE, yh, fmt)
    rh = fma(neg(yh), th, ONE, fmt)
    rl = neg(mul(yl, th, fmt))
    eh, el = fast_two_sum(rh, rl, fmt)
    dh, dl = dw_times_fp3(eh, el, th, fmt)
    mh, ml = dw_plus_fp(dh, dl, th, fmt)
    return dw_times_dw3(xh, xl, mh, ml, fmt)


# ---------------------------------------------------------------------------------------------
# QD library (Hida, Li, Bailey): dd_real::sloppy_add and dd_real::ieee_add


def qd_add_sloppy(ah, al, bh, bl, fmt):
    """QD ``sloppy_add`` ("Cray-style error bound"): ``s, e = two_sum(ah, bh); e += al + bl;
    quick_two_sum(s, e)``.  The same operations in the same order as :func:`dw_add_sloppy`."""
    s, e = two_sum(ah, bh, fmt)
    e = add(e, add(al, bl, fmt), fmt)
    return fast_two_sum(s, e, fmt)


def qd_add_ieee(ah, al, bh, bl, fmt):
    """QD ``ieee_add`` ("IEEE-style error bound", due to Briggs and Kahan), also Algorithm 6 of
    Warwick (2020): two 2Sums, then two renormalizations by quick_two_sum.  The same operations in
    the same order as :func:`dw_add_accurate`."""
    s1, s2 = two_sum(ah, bh, fmt)
    t1, t2 = two_sum(al, bl, fmt)
    s2 = add(s2, t1, fmt)
    s1, s2 = fast_two_sum(s1, s2, fmt)
    s2 = add(s2, t2, fmt)
    return fast_two_sum(s1, s2, fmt)


# ---------------------------------------------------------------------------------------------
# da Graça and Defour (RNC 7, 2006), Section 4.1, as printed


def dg_add12(a, b, fmt):
    """Add12 (Knuth's 2Sum), Theorem 2: ``s = a + b``, ``r = (a + b) - s`` exactly."""
    s = add(a, b, fmt)
    v = sub(s, a, fmt)
    r = add(sub(a, sub(s, v, fmt), fmt), sub(b, v, fmt), fmt)
    return s, r


def split_constant(fmt) -> Fraction:
    """Veltkamp's splitting constant ``2**s + 1`` with ``s = ceil(p/2)``: 4097 for float32 (p = 24),
    134217729 for float64 (p = 53)."""
    return Fraction((1 << ((fmt.p + 1) // 2)) + 1)


def dg_split(a, fmt):
    """Split (Dekker/Veltkamp), Theorem 3: ``a = a_hi + a_lo``, each of at most ``p - ceil(p/2)`` and
    ``ceil(p/2) - 1`` significant bits (plus sign), exactly (no overflow of ``C*a``)."""
    c = mul(split_constant(fmt), a, fmt)
    abig = sub(c, a, fmt)
    ahi = sub(c, abig, fmt)
    alo = sub(a, ahi, fmt)
    return ahi, alo


def dg_mul12(a, b, fmt):
    """Mul12 (Dekker's product without FMA), Theorem 4: ``x = RN(a*b)``, ``x + y = a*b`` exactly
    (no underflow or overflow)."""
    x = mul(a, b, fmt)
    ahi, alo = dg_split(a, fmt)
    bhi, blo = dg_split(b, fmt)
    err1 = sub(x, mul(ahi, bhi, fmt), fmt)
    err2 = sub(err1, mul(alo, bhi, fmt), fmt)
    err3 = sub(err2, mul(ahi, blo, fmt), fmt)
    y = sub(mul(alo, blo, fmt), err3, fmt)
    return x, y


def dg_add22(ah, al, bh, bl, fmt):
    """Add22, Theorem 5: the larger high word's error is computed first (one comparison), then Add12."""
    r = add(ah, bh, fmt)
    if abs(ah) >= abs(bh):
        s = add(add(add(sub(ah, r, fmt), bh, fmt), bl, fmt), al, fmt)
    else:
        s = add(add(add(sub(bh, r, fmt), ah, fmt), al, fmt), bl, fmt)
    return dg_add12(r, s, fmt)


def dg_mul22(ah, al, bh, bl, fmt):
    """Mul22, Theorem 6: ``(t1, t2) = Mul12(ah, bh)``, ``t3 = ((ah*bl) + (al*bh)) + t2``,
    ``(rh, rl) = Add12(t1, t3)``.

    The paper prints ``Add12(t1, t2)`` on its line 3, which would drop the cross products and
    contradict its Theorem 6 (error 2**-44); ``t3`` is meant.  With ``t3`` the values are those of
    :func:`dw_times_dw1` (Algorithm 10): Mul12 and 2Prod give the same pair, and Add12 gives what
    Fast2Sum gives when ``|t1| >= |t3|``."""
    t1, t2 = dg_mul12(ah, bh, fmt)
    t3 = add(add(mul(ah, bl, fmt), mul(al, bh, fmt), fmt), t2, fmt)
    return dg_add12(t1, t3, fmt)


# ---------------------------------------------------------------------------------------------
# Warwick (Bath MComp dissertation, 2020): two-float multiplication and division


def ww_mul(ah, al, bh, bl, fmt):
    """Warwick's Algorithm 8: DWTimesDW3 with the low product folded into FMAs (8 operations):
    ``(sh, sl) = 2Prod(ah, bh); sl = fma(al, bl, sl); sl = fma(ah, bl, sl); sl = fma(al, bh, sl);
    quick_two_sum(sh, sl)``.  No proven bound."""
    sh, sl = two_prod(ah, bh, fmt)
    sl = fma(al, bl, sl, fmt)
    sl = fma(ah, bl, sl, fmt)
    sl = fma(al, bh, sl, fmt)
    return fast_two_sum(sh, sl, fmt)


def ww_div(ah, al, bh, bl, fmt):
    """Warwick's Algorithm 9 (from DoubleFloats.jl ``dvi_ddd_d_fast``; a variant of DWDivDW2):
    ``sh = ah/bh; (th, tl) = 2Prod(sh, bh); v = (ah - th) + (al - tl); sl = fma(-sh, bl, v) / bh;
    quick_two_sum(sh, sl)``.  The printed ``FMA(-hi, b_lo, v)`` reads ``hi`` for ``s_hi``.  No proven
    bound."""
    sh = div(ah, bh, fmt)
    th, tl = two_prod(sh, bh, fmt)
    v = add(sub(ah, th, fmt), sub(al, tl, fmt), fmt)
    sl = div(fma(neg(sh), bl, v, fmt), bh, fmt)
    return fast_two_sum(sh, sl, fmt)


# ---------------------------------------------------------------------------------------------
# square root: Lefèvre, Louvet, Muller, Picot, Rideau (ACM TOMS 2023), Algorithm 8


def dw_sqrt(xh, xl, fmt):
    """SQRTDWtoDW, Algorithm 8 of Lefèvre et al. 2023 (relative error <= 25/8 u**2 for x > 0):
    ``sh = RN(sqrt(xh)); r1 = RN(xh - sh**2)`` (an FMA), ``r2 = RN(xl + r1); sl = RN(r2 / (2 sh))``,
    ``Fast2Sum(sh, sl)``.  A zero ``xh`` (the algorithm would divide 0 by 0) gives ``(sqrt(xh), +0)``."""
    sh = sqrt(xh, fmt)
    if is_zero(xh):
        return sh, 0.0
    r1 = fma(neg(sh), sh, xh, fmt)
    r2 = add(xl, r1, fmt)
    sl = div(r2, mul(TWO, sh, fmt), fmt)
    return fast_two_sum(sh, sl, fmt)
