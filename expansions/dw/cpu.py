"""NumPy twins of the double-word algorithms of :mod:`expansions.dw.reference`: the same operations in
the same order, element-wise on arrays of high and low words (float64 or float32, NumPy or CuPy).

Every function has the name of the reference function it mirrors and returns ``(zh, zl)``.  NumPy's
``+ - * /`` and ``sqrt`` round once to nearest even and keep subnormals; CuPy's do too unless built
with fast-math.  NumPy has no vector FMA, so :func:`fma` emulates one (see there): it returns the
correctly rounded ``a*b + c`` for every float32 input, and for float64 inputs away from the
underflow and overflow edges of the two-product, as the design allows (decision 4).
"""

from __future__ import annotations

import numpy as np

from ..cpu.eft import fast_two_sum, two_prod, two_sum
from ..cpu.kernels import leading_exponent, scale
from ..cpu.lanes import array_module
from ..formats import dw_scale_limit, format_of

# ---------------------------------------------------------------------------------------------
# the FMA, division and square root


def _round_to_odd(v, w, xp):
    """Round-to-odd of the exact ``v + w`` where ``v = RN(v + w)``: ``v`` when ``w == 0`` or ``v`` is
    odd, else the neighbour of ``v`` on the side of ``w`` (which is odd)."""
    uint = xp.uint64 if v.dtype == np.float64 else xp.uint32
    even = (v.view(uint) & uint(1)) == 0
    toward = xp.where(w > 0, xp.asarray(xp.inf, dtype=v.dtype), xp.asarray(-xp.inf, dtype=v.dtype))
    return xp.where((w != 0) & even, xp.nextafter(v, toward), v)


def fma(a, b, c):
    """``RN(a*b + c)`` with one rounding (the kernels' ``__fma_rn`` / ``__fmaf_rn``).

    float32: ``a*b`` is exact in float64 and ``a*b + c = s + t`` exactly by 2Sum in float64; rounding
    ``s + t`` to odd at 53 bits and then to nearest at 24 bits is rounding to nearest once, because
    53 >= 24 + 2 (Boldo and Melquiond, "Emulation of FMA and correctly rounded sums: proved
    algorithms using rounding to odd", IEEE TC 57(4), 2008).
    float64: their emulated FMA: ``(uh, ul) = 2Prod(a, b)`` (Dekker, exact), ``(th, tl) = 2Sum(c, uh)``,
    ``v = RO(tl + ul)``, ``z = RN(th + v)``.
    Where ``a`` or ``b`` is zero, or an operand is not finite, ``a*b`` is exact (or special) and the
    result is the IEEE ``a*b + c``."""
    xp = array_module(a)
    with np.errstate(all="ignore"):
        if a.dtype == np.float32:
            f64 = xp.float64
            s, t = two_sum(a.astype(f64) * b.astype(f64), c.astype(f64))
            z = _round_to_odd(s, t, xp).astype(xp.float32)
        else:
            uh, ul = two_prod(a, b)
            th, tl = two_sum(c, uh)
            v, w = two_sum(tl, ul)
            z = th + _round_to_odd(v, w, xp)
        plain = ~(xp.isfinite(a) & xp.isfinite(b) & xp.isfinite(c)) | (a == 0) | (b == 0)
        return xp.where(plain, a * b + c, z)


def div(a, b):
    """``RN(a / b)`` (IEEE division)."""
    return a / b


def sqrt(a):
    """``RN(sqrt(a))`` (IEEE square root)."""
    return array_module(a).sqrt(a)


def _const(value, like):
    xp = array_module(like)
    return xp.full(like.shape, value, dtype=like.dtype)


def double_word(hi, lo):
    """The operand ``(hi, lo)`` made a double word where it is not one: ``2Sum(hi, lo)`` where
    ``RN(hi + lo) != hi`` (a NaN sum counts as different), the words as they are elsewhere (their bits,
    signed zeros included).  The library's R = 2 operations apply it to each operand before the
    algorithm, whose proof assumes ``hi = RN(hi + lo)``; an ulp-nonoverlapping pair with
    ``ulp(hi)/2 < |lo| < ulp(hi)`` is not a double word.  2Sum is exact, so the value does not change.
    Twin of ``double_word`` in ``expansions/cuda/dw.cuh``."""
    xp = array_module(hi)
    with np.errstate(all="ignore"):
        s, e = two_sum(hi, lo)
        keep = (hi + lo) == hi
    return xp.where(keep, hi, s), xp.where(keep, lo, e)


def underflow_exponents(kind: str, xh, yh=None):
    """Per element, the exponents ``(kx, ky, back)`` by which the library's R = 2 division
    (``kind`` 'div') or square root ('sqrt') scales its operands and its result: where the leading
    word ``xh`` is finite, nonzero and below :func:`expansions.formats.dw_scale_limit` (the
    algorithm's intermediates would underflow), the division scales x and y to order 1 (``kx =
    -ilogb(xh)``, ``ky = -ilogb(yh)``) and its quotient back by ``back = ky - kx``, the square root
    scales x by ``kx = -2 (ilogb(xh) >> 1)`` (an even power) and its result by ``back = -kx / 2``;
    zero elsewhere (a product by 2**0 leaves the bits).  Twin of ``dw_scaled`` in
    ``expansions/cuda/dw.cuh``."""
    xp = array_module(xh)
    limit = xh.dtype.type(dw_scale_limit(format_of(xh.dtype)))
    with np.errstate(all="ignore"):
        need = (xp.abs(xh) < limit) & (xh != 0)
    zero = xp.zeros(xh.shape, dtype=xp.int32)
    if kind == "sqrt":
        kx = xp.where(need, -2 * (leading_exponent(xh) >> 1), zero)
        return kx, zero, xp.where(need, -(kx // 2), zero)
    kx = xp.where(need, -leading_exponent(xh), zero)
    ky = xp.where(need, -leading_exponent(yh), zero)
    return kx, ky, ky - kx


def scaled_operands(kind: str, x, y=None):
    """(count, 2) operands of the library's R = 2 division or square root scaled by
    :func:`underflow_exponents`, and the exponent to scale the result back by."""
    kx, ky, back = underflow_exponents(kind, x[:, 0], None if y is None else y[:, 0])
    with np.errstate(all="ignore"):
        return scale(x, kx), (None if y is None else scale(y, ky)), back


# ---------------------------------------------------------------------------------------------
# Joldes, Muller, Popescu (ACM TOMS 2017), Algorithms 4 to 18


def dw_plus_fp(xh, xl, y):
    """Twin of :func:`expansions.dw.reference.dw_plus_fp` (JMP Algorithm 4)."""
    sh, sl = two_sum(xh, y)
    v = xl + sl
    return fast_two_sum(sh, v)


def dw_add_sloppy(xh, xl, yh, yl):
    """Twin of :func:`expansions.dw.reference.dw_add_sloppy` (JMP Algorithm 5)."""
    sh, sl = two_sum(xh, yh)
    v = xl + yl
    w = sl + v
    return fast_two_sum(sh, w)


def dw_add_accurate(xh, xl, yh, yl):
    """Twin of :func:`expansions.dw.reference.dw_add_accurate` (JMP Algorithm 6)."""
    sh, sl = two_sum(xh, yh)
    th, tl = two_sum(xl, yl)
    c = sl + th
    vh, vl = fast_two_sum(sh, c)
    w = tl + vl
    return fast_two_sum(vh, w)


def dw_times_fp1(xh, xl, y):
    """Twin of :func:`expansions.dw.reference.dw_times_fp1` (JMP Algorithm 7)."""
    ch, cl1 = two_prod(xh, y)
    cl2 = xl * y
    th, tl1 = fast_two_sum(ch, cl2)
    tl2 = tl1 + cl1
    return fast_two_sum(th, tl2)


def dw_times_fp2(xh, xl, y):
    """Twin of :func:`expansions.dw.reference.dw_times_fp2` (JMP Algorithm 8)."""
    ch, cl1 = two_prod(xh, y)
    cl2 = xl * y
    cl3 = cl1 + cl2
    return fast_two_sum(ch, cl3)


def dw_times_fp3(xh, xl, y):
    """Twin of :func:`expansions.dw.reference.dw_times_fp3` (JMP Algorithm 9)."""
    ch, cl1 = two_prod(xh, y)
    cl3 = fma(xl, y, cl1)
    return fast_two_sum(ch, cl3)


def dw_times_dw1(xh, xl, yh, yl):
    """Twin of :func:`expansions.dw.reference.dw_times_dw1` (JMP Algorithm 10)."""
    ch, cl1 = two_prod(xh, yh)
    tl1 = xh * yl
    tl2 = xl * yh
    cl2 = tl1 + tl2
    cl3 = cl1 + cl2
    return fast_two_sum(ch, cl3)


def dw_times_dw2(xh, xl, yh, yl):
    """Twin of :func:`expansions.dw.reference.dw_times_dw2` (JMP Algorithm 11)."""
    ch, cl1 = two_prod(xh, yh)
    tl = xh * yl
    cl2 = fma(xl, yh, tl)
    cl3 = cl1 + cl2
    return fast_two_sum(ch, cl3)


def dw_times_dw3(xh, xl, yh, yl):
    """Twin of :func:`expansions.dw.reference.dw_times_dw3` (JMP Algorithm 12)."""
    ch, cl1 = two_prod(xh, yh)
    tl0 = xl * yl
    tl1 = fma(xh, yl, tl0)
    cl2 = fma(xl, yh, tl1)
    cl3 = cl1 + cl2
    return fast_two_sum(ch, cl3)


def dw_div_fp1(xh, xl, y):
    """Twin of :func:`expansions.dw.reference.dw_div_fp1` (JMP Algorithm 13)."""
    th = div(xh, y)
    pih, pil = two_prod(th, y)
    dh, d1 = two_sum(xh, -pih)
    d2 = xl - pil
    dl = d1 + d2
    d = dh + dl
    tl = div(d, y)
    return fast_two_sum(th, tl)


def dw_div_fp2(xh, xl, y):
    """Twin of :func:`expansions.dw.reference.dw_div_fp2` (JMP Algorithm 14)."""
    th = div(xh, y)
    pih, pil = two_prod(th, y)
    dh = xh - pih
    dl = xl - pil
    d = dh + dl
    tl = div(d, y)
    return fast_two_sum(th, tl)


def dw_div_fp3(xh, xl, y):
    """Twin of :func:`expansions.dw.reference.dw_div_fp3` (JMP Algorithm 15)."""
    th = div(xh, y)
    pih, pil = two_prod(th, y)
    dh = xh - pih
    dt = dh - pil
    d = dt + xl
    tl = div(d, y)
    return fast_two_sum(th, tl)


def dw_div_dw1(xh, xl, yh, yl):
    """Twin of :func:`expansions.dw.reference.dw_div_dw1` (JMP Algorithm 16)."""
    th = div(xh, yh)
    rh, rl = dw_times_fp1(yh, yl, th)
    pih, pil = two_sum(xh, -rh)
    dh = pil - rl
    dl = dh + xl
    d = pih + dl
    tl = div(d, yh)
    return fast_two_sum(th, tl)


def dw_div_dw2(xh, xl, yh, yl):
    """Twin of :func:`expansions.dw.reference.dw_div_dw2` (JMP Algorithm 17)."""
    th = div(xh, yh)
    rh, rl = dw_times_fp1(yh, yl, th)
    pih = xh - rh
    dl = xl - rl
    d = pih + dl
    tl = div(d, yh)
    return fast_two_sum(th, tl)


def dw_div_dw3(xh, xl, yh, yl):
    """Twin of :func:`expansions.dw.reference.dw_div_dw3` (JMP Algorithm 18)."""
    one = _const(1, yh)
    th = div(one, yh)
    rh = fma(-yh, th, one)
    rl = -(yl * th)
    eh, el = fast_two_sum(rh, rl)
    dh, dl = dw_times_fp3(eh, el, th)
    mh, ml = dw_plus_fp(dh, dl, th)
    return dw_times_dw3(xh, xl, mh, ml)


# ---------------------------------------------------------------------------------------------
# QD library


def qd_add_sloppy(ah, al, bh, bl):
    """Twin of :func:`expansions.dw.reference.qd_add_sloppy` (QD ``sloppy_add``)."""
    s, e = two_sum(ah, bh)
    e = e + (al + bl)
    return fast_two_sum(s, e)


def qd_add_ieee(ah, al, bh, bl):
    """Twin of :func:`expansions.dw.reference.qd_add_ieee` (QD ``ieee_add``)."""
    s1, s2 = two_sum(ah, bh)
    t1, t2 = two_sum(al, bl)
    s2 = s2 + t1
    s1, s2 = fast_two_sum(s1, s2)
    s2 = s2 + t2
    return fast_two_sum(s1, s2)


# ---------------------------------------------------------------------------------------------
# da Graça and Defour (RNC 7, 2006)


def dg_add12(a, b):
    """Twin of :func:`expansions.dw.reference.dg_add12` (Add12)."""
    s = a + b
    v = s - a
    r = (a - (s - v)) + (b - v)
    return s, r


def split_constant(dtype) -> float:
    """``2**ceil(p/2) + 1``: 4097 for float32, 134217729 for float64."""
    p = np.finfo(dtype).nmant + 1
    return float((1 << ((p + 1) // 2)) + 1)


def dg_split(a):
    """Twin of :func:`expansions.dw.reference.dg_split` (Split)."""
    c = a.dtype.type(split_constant(a.dtype)) * a
    abig = c - a
    ahi = c - abig
    alo = a - ahi
    return ahi, alo


def dg_mul12(a, b):
    """Twin of :func:`expansions.dw.reference.dg_mul12` (Mul12, no FMA)."""
    x = a * b
    ahi, alo = dg_split(a)
    bhi, blo = dg_split(b)
    err1 = x - ahi * bhi
    err2 = err1 - alo * bhi
    err3 = err2 - ahi * blo
    y = alo * blo - err3
    return x, y


def dg_add22(ah, al, bh, bl):
    """Twin of :func:`expansions.dw.reference.dg_add22` (Add22): both branches, then a select."""
    xp = array_module(ah)
    r = ah + bh
    s_a = (((ah - r) + bh) + bl) + al
    s_b = (((bh - r) + ah) + al) + bl
    s = xp.where(xp.abs(ah) >= xp.abs(bh), s_a, s_b)
    return dg_add12(r, s)


def dg_mul22(ah, al, bh, bl):
    """Twin of :func:`expansions.dw.reference.dg_mul22` (Mul22, with ``Add12(t1, t3)``)."""
    t1, t2 = dg_mul12(ah, bh)
    t3 = ((ah * bl) + (al * bh)) + t2
    return dg_add12(t1, t3)


# ---------------------------------------------------------------------------------------------
# Warwick (2020)


def ww_mul(ah, al, bh, bl):
    """Twin of :func:`expansions.dw.reference.ww_mul` (Warwick's Algorithm 8)."""
    sh, sl = two_prod(ah, bh)
    sl = fma(al, bl, sl)
    sl = fma(ah, bl, sl)
    sl = fma(al, bh, sl)
    return fast_two_sum(sh, sl)


def ww_div(ah, al, bh, bl):
    """Twin of :func:`expansions.dw.reference.ww_div` (Warwick's Algorithm 9)."""
    sh = div(ah, bh)
    th, tl = two_prod(sh, bh)
    v = (ah - th) + (al - tl)
    sl = div(fma(-sh, bl, v), bh)
    return fast_two_sum(sh, sl)


# ---------------------------------------------------------------------------------------------
# square root


def dw_sqrt(xh, xl):
    """Twin of :func:`expansions.dw.reference.dw_sqrt` (SQRTDWtoDW, Lefèvre et al. 2023, Alg. 8)."""
    xp = array_module(xh)
    sh = sqrt(xh)
    r1 = fma(-sh, sh, xh)
    r2 = xl + r1
    sl = div(r2, xh.dtype.type(2) * sh)
    zh, zl = fast_two_sum(sh, sl)
    zero = xh == 0
    return xp.where(zero, sh, zh), xp.where(zero, xp.zeros_like(zl), zl)
