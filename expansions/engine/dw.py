"""Compiled twins of the double-word algorithms of :mod:`expansions.dw.cpu` (numba, nopython).

Every function of :mod:`expansions.dw.cpu` is here with the same name and signature: arrays of high
and low words in (float64 or float32, equal dtypes, broadcast together), a tuple of arrays out,
bit-identical to the NumPy twin.  Each algorithm is written once, as a scalar function (the twin's
name with a leading underscore) that performs the twin's operations in the twin's order, and
:func:`_apply` selects it by number.  The element-wise functions share one parallel loop (``prange``
over the elements, the function chosen at run time: one compilation per dtype).  The library's
operations at R = 2 run these scalar functions in the fused loops of
:mod:`expansions.engine.fused_dw` (the algorithm, the non-finite rule and the renormalization in one
loop).  Every loop is compiled on first use and cached on disk (``cache=True``).

Why the results are the twin's, bit for bit:

* compiled without ``fastmath``: every ``+ - * /`` and ``sqrt`` is one IEEE operation rounded to
  nearest even, nothing is reassociated, and no multiply-add is contracted into an FMA (LLVM fuses
  only when the ``contract`` flag is set, which numba sets only under ``fastmath``); subnormals are
  kept (no flush-to-zero); ``error_model="numpy"`` makes a division by zero IEEE (no exception);
* the twin's two-product and FMA are emulations (:func:`expansions.cpu.eft.two_prod`: Dekker with
  Veltkamp's splitting, scaled above 2**995; :func:`expansions.dw.cpu.fma`: round-to-odd, Boldo and
  Melquiond 2008); they are reproduced here operation for operation;
* with ``fast=True`` (the fused loops only) the algorithms take the two-product and the FMA from one
  hardware FMA instruction (:func:`_fma_hardware`), which is correctly rounded and therefore gives the
  emulations' bits wherever those are exact: everywhere for float32 (an FMA whose addend is finite),
  and for float64 where :func:`_product_in_range` holds.  Elsewhere the fast functions return a NaN,
  which reaches the algorithm's result, and the fused loop recomputes that row with the emulations;
* the twin's selects (``where``) become branches that pick the same value.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic, overload

from ..dw import ALGORITHMS
from .kernels import readonly
from .limits import EMAX64, SPLITTER64, TWO_PROD_BIG, TWO_PROD_DOWN, TWO_PROD_UP

_SCALAR = {"error_model": "numpy", "cache": True}  # no fastmath: IEEE operations, no contraction
_KERNEL = {**_SCALAR, "parallel": True}

# ---------------------------------------------------------------------------------------------
# typed constants and bits


def _c(like, value):
    """``value`` as a float of the type of ``like`` (compiled only)."""
    raise NotImplementedError


@overload(_c, inline="always")
def _c_impl(like, value):
    if isinstance(like, types.Float) and like.bitwidth == 32:
        return lambda like, value: np.float32(value)
    return lambda like, value: np.float64(value)


def _splitter(like):
    """Veltkamp's constant ``2**ceil(p/2) + 1`` of the type of ``like``: 134217729 or 4097."""
    raise NotImplementedError


@overload(_splitter, inline="always")
def _splitter_impl(like):
    if isinstance(like, types.Float) and like.bitwidth == 32:
        return lambda like: np.float32(4097.0)
    return lambda like: np.float64(134217729.0)


@intrinsic
def _bits64(typingctx, x):
    """The IEEE bits of a float64 as a uint64 (a bit cast)."""
    if not (isinstance(x, types.Float) and x.bitwidth == 64):
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.uint64))

    return types.uint64(x), codegen


# ---------------------------------------------------------------------------------------------
# error-free transforms (expansions.cpu.eft)


@njit(**_SCALAR)
def _two_sum(a, b):
    """Knuth's 2Sum (twin: :func:`expansions.cpu.eft.two_sum`)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


@njit(**_SCALAR)
def _double_word(hi, lo):
    """Twin: :func:`expansions.dw.cpu.double_word`: ``2Sum(hi, lo)`` where ``RN(hi + lo) != hi``, else
    ``(hi, lo)`` as they are."""
    if hi + lo == hi:
        return hi, lo
    return _two_sum(hi, lo)


@njit(**_SCALAR)
def _fast_two_sum(a, b):
    """Dekker's Fast2Sum (twin: :func:`expansions.cpu.eft.fast_two_sum`)."""
    s = a + b
    z = s - a
    e = b - z
    return s, e


_BIG = TWO_PROD_BIG  # 2**995 (expansions.engine.limits)
_DOWN = TWO_PROD_DOWN  # 2**-28
_UP = TWO_PROD_UP  # 2**28


@njit(**_SCALAR)
def _split64(a):
    """Veltkamp's splitting (twin: ``expansions.cpu.eft._split64``)."""
    c = a * SPLITTER64  # 2**27 + 1
    hi = c - (c - a)
    lo = a - hi
    return hi, lo


@njit(**_SCALAR)
def _two_prod64(a, b):
    """Dekker's product, operands above 2**995 scaled (twin: :func:`expansions.cpu.eft.two_prod`)."""
    p = a * b
    big_a = abs(a) > _BIG
    big_b = abs(b) > _BIG
    a2 = a * _DOWN if big_a else (a * _UP if big_b else a)
    b2 = b * _DOWN if big_b else (b * _UP if big_a else b)
    ah, al = _split64(a2)
    bh, bl = _split64(b2)
    e = (((ah * bh - p) + ah * bl) + al * bh) + al * bl
    return p, e


@njit(**_SCALAR)
def _two_prod32(a, b):
    """float32 product exact in float64, rounded twice to float32 (twin: :func:`expansions.cpu.eft.two_prod`)."""
    exact = np.float64(a) * np.float64(b)
    p = np.float32(exact)
    e = np.float32(exact - np.float64(p))
    return p, e


@intrinsic
def _fma_hardware(typingctx, a, b, c):
    """``RN(a*b + c)`` with one rounding: LLVM's ``llvm.fma`` (an FMA instruction on x86-64 with FMA,
    ``vfmadd...``; the C library's correctly rounded ``fma`` elsewhere).  numba has no FMA of its own."""
    if not (isinstance(a, types.Float) and a == b == c):
        return None

    def codegen(context, builder, signature, args):
        ty = context.get_value_type(signature.return_type)
        fn = builder.module.declare_intrinsic("llvm.fma", [ty], ir.FunctionType(ty, [ty, ty, ty]))
        return builder.call(fn, args)

    return a(a, b, c), codegen


#: The range of ``|RN(a*b)|`` (float64) where the hardware FMA gives the twins' bits: there the
#: twin's Dekker product (and with it its emulated FMA) is exact, because (i) no split or partial
#: product overflows (the twin scales operands above 2**995; ``|a*b| <= 2**1020`` keeps every partial
#: product and sum below 2**1021), and (ii) no partial product underflows: Dekker's product is exact
#: when ``e_a + e_b >= emin + p - 1 = -1022`` for the exponents of the operands' last bits (Boldo,
#: "Pitfalls of a full floating-point proof", IJCAR 2006), which ``|a*b| >= 2**-900`` guarantees with
#: a margin (``e_a + e_b >= floor(log2|a|) + floor(log2|b|) - 104 >= -1006``).
_FAST_LO = 2.0**-900
_FAST_HI = 2.0 ** (EMAX64 - 3)  # 2**1020


@njit(**_SCALAR)
def _product_in_range(p, a, b):
    """Whether the hardware two-product/FMA of ``a*b`` (``p = RN(a*b)``) gives the twin's bits: ``|p|``
    in [_FAST_LO, _FAST_HI], or an exact zero product (``a`` or ``b`` zero: both give +0 error)."""
    q = abs(p)
    return ((q >= _FAST_LO) & (q <= _FAST_HI)) | (a == 0) | (b == 0)


@njit(**_SCALAR)
def _two_prod64_fast(a, b):
    """The twin's two-product (:func:`_two_prod64`) by one FMA, ``e = RN(a*b - p)`` (exact), where
    :func:`_product_in_range` says it gives the twin's bits; NaN as ``e`` elsewhere (the fused loops
    of :mod:`expansions.engine.fused_dw` recompute such rows by the twin's operations)."""
    p = a * b
    e = _fma_hardware(a, b, -p)
    return p, e if _product_in_range(p, a, b) else np.nan


@njit(**_SCALAR)
def _two_prod32_fast(a, b):
    """The float32 two-product by one FMA: ``RN(a*b - RN(a*b))`` is the twin's (the exact float64
    difference rounded once to float32) for every input, overflow included (-inf either way)."""
    p = a * b
    return p, _fma_hardware(a, b, -p)


def _two_prod(a, b, fast=False):
    """``(RN(a*b), RN(a*b - RN(a*b)))`` as the twin computes it, float64 or float32 (compiled only).
    With ``fast`` (a compile-time constant of the fused loops): by the hardware FMA, the twin's bits
    or (float64, outside :func:`_product_in_range`) a NaN error term."""
    raise NotImplementedError


@njit(**_SCALAR)
def _two_prod64_as(a, b, fast):
    if fast:
        return _two_prod64_fast(a, b)
    return _two_prod64(a, b)


@njit(**_SCALAR)
def _two_prod32_as(a, b, fast):
    if fast:
        return _two_prod32_fast(a, b)
    return _two_prod32(a, b)


@overload(_two_prod, inline="always")
def _two_prod_impl(a, b, fast=False):
    if isinstance(a, types.Float) and a.bitwidth == 32:
        return lambda a, b, fast=False: _two_prod32_as(a, b, fast)
    return lambda a, b, fast=False: _two_prod64_as(a, b, fast)


# ---------------------------------------------------------------------------------------------
# the FMA emulation, division and square root (expansions.dw.cpu)


@njit(**_SCALAR)
def _round_to_odd(v, w):
    """Round-to-odd of the exact ``v + w`` where ``v = RN(v + w)`` (twin: ``_round_to_odd``)."""
    if w != 0 and (_bits64(v) & np.uint64(1)) == 0:
        return np.nextafter(v, np.inf if w > 0 else -np.inf)
    return v


@njit(**_SCALAR)
def _fma64(a, b, c):
    """Twin: :func:`expansions.dw.cpu.fma`, float64."""
    if not (np.isfinite(a) and np.isfinite(b) and np.isfinite(c)) or a == 0 or b == 0:
        return a * b + c
    uh, ul = _two_prod64(a, b)
    th, tl = _two_sum(c, uh)
    v, w = _two_sum(tl, ul)
    return th + _round_to_odd(v, w)


@njit(**_SCALAR)
def _fma32(a, b, c):
    """Twin: :func:`expansions.dw.cpu.fma`, float32 (round to odd at 53 bits, then to nearest at 24)."""
    if not (np.isfinite(a) and np.isfinite(b) and np.isfinite(c)) or a == 0 or b == 0:
        return a * b + c
    s, t = _two_sum(np.float64(a) * np.float64(b), np.float64(c))
    return np.float32(_round_to_odd(s, t))


@njit(**_SCALAR)
def _fma64_fast(a, b, c):
    """The twin's FMA (:func:`_fma64`) by the hardware FMA where that gives its bits: the product in
    :func:`_product_in_range` and ``|c| <= 2**1020`` (the emulation is then exact up to its last
    rounding, which is correct: Boldo and Melquiond 2008), or a zero product (the twin's ``a*b + c``);
    NaN elsewhere (see :func:`_two_prod64_fast`)."""
    z = _fma_hardware(a, b, c)
    q = abs(a * b)
    ok = ((q >= _FAST_LO) & (q <= _FAST_HI) & (abs(c) <= _FAST_HI)) | (a == 0) | (b == 0)
    return z if ok else np.nan


@njit(**_SCALAR)
def _fma32_fast(a, b, c):
    """The twin's float32 FMA (:func:`_fma32`, correctly rounded for every finite ``c``) by the
    hardware FMA; NaN where ``c`` is not finite (there the twin computes ``a*b + c``, which differs
    from the FMA when ``a*b`` overflows)."""
    z = _fma_hardware(a, b, c)
    return z if np.isfinite(c) else np.float32(np.nan)


def _fma(a, b, c, fast=False):
    """``RN(a*b + c)`` as the twin emulates it (compiled only); with ``fast``, by the hardware FMA,
    the twin's bits or a NaN (:func:`_fma64_fast`, :func:`_fma32_fast`)."""
    raise NotImplementedError


@njit(**_SCALAR)
def _fma64_as(a, b, c, fast):
    if fast:
        return _fma64_fast(a, b, c)
    return _fma64(a, b, c)


@njit(**_SCALAR)
def _fma32_as(a, b, c, fast):
    if fast:
        return _fma32_fast(a, b, c)
    return _fma32(a, b, c)


@overload(_fma, inline="always")
def _fma_impl(a, b, c, fast=False):
    if isinstance(a, types.Float) and a.bitwidth == 32:
        return lambda a, b, c, fast=False: _fma32_as(a, b, c, fast)
    return lambda a, b, c, fast=False: _fma64_as(a, b, c, fast)


# ---------------------------------------------------------------------------------------------
# Joldes, Muller, Popescu (ACM TOMS 2017), Algorithms 4 to 18


@njit(**_SCALAR)
def _dw_plus_fp(xh, xl, y):
    """JMP Algorithm 4 (twin: :func:`expansions.dw.cpu.dw_plus_fp`)."""
    sh, sl = _two_sum(xh, y)
    v = xl + sl
    return _fast_two_sum(sh, v)


@njit(**_SCALAR)
def _dw_add_sloppy(xh, xl, yh, yl):
    """JMP Algorithm 5 (twin: :func:`expansions.dw.cpu.dw_add_sloppy`)."""
    sh, sl = _two_sum(xh, yh)
    v = xl + yl
    w = sl + v
    return _fast_two_sum(sh, w)


@njit(**_SCALAR)
def _dw_add_accurate(xh, xl, yh, yl):
    """JMP Algorithm 6 (twin: :func:`expansions.dw.cpu.dw_add_accurate`)."""
    sh, sl = _two_sum(xh, yh)
    th, tl = _two_sum(xl, yl)
    c = sl + th
    vh, vl = _fast_two_sum(sh, c)
    w = tl + vl
    return _fast_two_sum(vh, w)


@njit(**_SCALAR)
def _dw_times_fp1(xh, xl, y, fast=False):
    """JMP Algorithm 7 (twin: :func:`expansions.dw.cpu.dw_times_fp1`)."""
    ch, cl1 = _two_prod(xh, y, fast)
    cl2 = xl * y
    th, tl1 = _fast_two_sum(ch, cl2)
    tl2 = tl1 + cl1
    return _fast_two_sum(th, tl2)


@njit(**_SCALAR)
def _dw_times_fp2(xh, xl, y, fast=False):
    """JMP Algorithm 8 (twin: :func:`expansions.dw.cpu.dw_times_fp2`)."""
    ch, cl1 = _two_prod(xh, y, fast)
    cl2 = xl * y
    cl3 = cl1 + cl2
    return _fast_two_sum(ch, cl3)


@njit(**_SCALAR)
def _dw_times_fp3(xh, xl, y, fast=False):
    """JMP Algorithm 9 (twin: :func:`expansions.dw.cpu.dw_times_fp3`)."""
    ch, cl1 = _two_prod(xh, y, fast)
    cl3 = _fma(xl, y, cl1, fast)
    return _fast_two_sum(ch, cl3)


@njit(**_SCALAR)
def _dw_times_dw1(xh, xl, yh, yl, fast=False):
    """JMP Algorithm 10 (twin: :func:`expansions.dw.cpu.dw_times_dw1`)."""
    ch, cl1 = _two_prod(xh, yh, fast)
    tl1 = xh * yl
    tl2 = xl * yh
    cl2 = tl1 + tl2
    cl3 = cl1 + cl2
    return _fast_two_sum(ch, cl3)


@njit(**_SCALAR)
def _dw_times_dw2(xh, xl, yh, yl, fast=False):
    """JMP Algorithm 11 (twin: :func:`expansions.dw.cpu.dw_times_dw2`)."""
    ch, cl1 = _two_prod(xh, yh, fast)
    tl = xh * yl
    cl2 = _fma(xl, yh, tl, fast)
    cl3 = cl1 + cl2
    return _fast_two_sum(ch, cl3)


@njit(**_SCALAR)
def _dw_times_dw3(xh, xl, yh, yl, fast=False):
    """JMP Algorithm 12 (twin: :func:`expansions.dw.cpu.dw_times_dw3`)."""
    ch, cl1 = _two_prod(xh, yh, fast)
    tl0 = xl * yl
    tl1 = _fma(xh, yl, tl0, fast)
    cl2 = _fma(xl, yh, tl1, fast)
    cl3 = cl1 + cl2
    return _fast_two_sum(ch, cl3)


@njit(**_SCALAR)
def _dw_div_fp1(xh, xl, y, fast=False):
    """JMP Algorithm 13 (twin: :func:`expansions.dw.cpu.dw_div_fp1`)."""
    th = xh / y
    pih, pil = _two_prod(th, y, fast)
    dh, d1 = _two_sum(xh, -pih)
    d2 = xl - pil
    dl = d1 + d2
    d = dh + dl
    tl = d / y
    return _fast_two_sum(th, tl)


@njit(**_SCALAR)
def _dw_div_fp2(xh, xl, y, fast=False):
    """JMP Algorithm 14 (twin: :func:`expansions.dw.cpu.dw_div_fp2`)."""
    th = xh / y
    pih, pil = _two_prod(th, y, fast)
    dh = xh - pih
    dl = xl - pil
    d = dh + dl
    tl = d / y
    return _fast_two_sum(th, tl)


@njit(**_SCALAR)
def _dw_div_fp3(xh, xl, y, fast=False):
    """JMP Algorithm 15 (twin: :func:`expansions.dw.cpu.dw_div_fp3`)."""
    th = xh / y
    pih, pil = _two_prod(th, y, fast)
    dh = xh - pih
    dt = dh - pil
    d = dt + xl
    tl = d / y
    return _fast_two_sum(th, tl)


@njit(**_SCALAR)
def _dw_div_dw1(xh, xl, yh, yl, fast=False):
    """JMP Algorithm 16 (twin: :func:`expansions.dw.cpu.dw_div_dw1`)."""
    th = xh / yh
    rh, rl = _dw_times_fp1(yh, yl, th, fast)
    pih, pil = _two_sum(xh, -rh)
    dh = pil - rl
    dl = dh + xl
    d = pih + dl
    tl = d / yh
    return _fast_two_sum(th, tl)


@njit(**_SCALAR)
def _dw_div_dw2(xh, xl, yh, yl, fast=False):
    """JMP Algorithm 17 (twin: :func:`expansions.dw.cpu.dw_div_dw2`)."""
    th = xh / yh
    rh, rl = _dw_times_fp1(yh, yl, th, fast)
    pih = xh - rh
    dl = xl - rl
    d = pih + dl
    tl = d / yh
    return _fast_two_sum(th, tl)


@njit(**_SCALAR)
def _dw_div_dw3(xh, xl, yh, yl, fast=False):
    """JMP Algorithm 18 (twin: :func:`expansions.dw.cpu.dw_div_dw3`)."""
    one = _c(yh, 1.0)
    th = one / yh
    rh = _fma(-yh, th, one, fast)
    rl = -(yl * th)
    eh, el = _fast_two_sum(rh, rl)
    dh, dl = _dw_times_fp3(eh, el, th, fast)
    mh, ml = _dw_plus_fp(dh, dl, th)
    return _dw_times_dw3(xh, xl, mh, ml, fast)


# ---------------------------------------------------------------------------------------------
# QD library


@njit(**_SCALAR)
def _qd_add_sloppy(ah, al, bh, bl):
    """QD ``sloppy_add`` (twin: :func:`expansions.dw.cpu.qd_add_sloppy`)."""
    s, e = _two_sum(ah, bh)
    e = e + (al + bl)
    return _fast_two_sum(s, e)


@njit(**_SCALAR)
def _qd_add_ieee(ah, al, bh, bl):
    """QD ``ieee_add`` (twin: :func:`expansions.dw.cpu.qd_add_ieee`)."""
    s1, s2 = _two_sum(ah, bh)
    t1, t2 = _two_sum(al, bl)
    s2 = s2 + t1
    s1, s2 = _fast_two_sum(s1, s2)
    s2 = s2 + t2
    return _fast_two_sum(s1, s2)


# ---------------------------------------------------------------------------------------------
# da Graça and Defour (RNC 7, 2006)


@njit(**_SCALAR)
def _dg_add12(a, b):
    """Add12 (twin: :func:`expansions.dw.cpu.dg_add12`)."""
    s = a + b
    v = s - a
    r = (a - (s - v)) + (b - v)
    return s, r


@njit(**_SCALAR)
def _dg_split(a):
    """Split (twin: :func:`expansions.dw.cpu.dg_split`)."""
    c = _splitter(a) * a
    abig = c - a
    ahi = c - abig
    alo = a - ahi
    return ahi, alo


@njit(**_SCALAR)
def _dg_mul12(a, b):
    """Mul12, no FMA (twin: :func:`expansions.dw.cpu.dg_mul12`)."""
    x = a * b
    ahi, alo = _dg_split(a)
    bhi, blo = _dg_split(b)
    err1 = x - ahi * bhi
    err2 = err1 - alo * bhi
    err3 = err2 - ahi * blo
    y = alo * blo - err3
    return x, y


@njit(**_SCALAR)
def _dg_add22(ah, al, bh, bl):
    """Add22 (twin: :func:`expansions.dw.cpu.dg_add22`; its select becomes a branch)."""
    r = ah + bh
    if abs(ah) >= abs(bh):
        s = (((ah - r) + bh) + bl) + al
    else:
        s = (((bh - r) + ah) + al) + bl
    return _dg_add12(r, s)


@njit(**_SCALAR)
def _dg_mul22(ah, al, bh, bl):
    """Mul22 with ``Add12(t1, t3)`` (twin: :func:`expansions.dw.cpu.dg_mul22`)."""
    t1, t2 = _dg_mul12(ah, bh)
    t3 = ((ah * bl) + (al * bh)) + t2
    return _dg_add12(t1, t3)


# ---------------------------------------------------------------------------------------------
# Warwick (2020)


@njit(**_SCALAR)
def _ww_mul(ah, al, bh, bl, fast=False):
    """Warwick's Algorithm 8 (twin: :func:`expansions.dw.cpu.ww_mul`)."""
    sh, sl = _two_prod(ah, bh, fast)
    sl = _fma(al, bl, sl, fast)
    sl = _fma(ah, bl, sl, fast)
    sl = _fma(al, bh, sl, fast)
    return _fast_two_sum(sh, sl)


@njit(**_SCALAR)
def _ww_div(ah, al, bh, bl, fast=False):
    """Warwick's Algorithm 9 (twin: :func:`expansions.dw.cpu.ww_div`)."""
    sh = ah / bh
    th, tl = _two_prod(sh, bh, fast)
    v = (ah - th) + (al - tl)
    sl = _fma(-sh, bl, v, fast) / bh
    return _fast_two_sum(sh, sl)


# ---------------------------------------------------------------------------------------------
# square root


@njit(**_SCALAR)
def _dw_sqrt(xh, xl, fast=False):
    """SQRTDWtoDW, Lefèvre et al. 2023, Algorithm 8 (twin: :func:`expansions.dw.cpu.dw_sqrt`)."""
    sh = np.sqrt(xh)
    r1 = _fma(-sh, sh, xh, fast)
    r2 = xl + r1
    sl = r2 / (_c(xh, 2.0) * sh)
    zh, zl = _fast_two_sum(sh, sl)
    if xh == 0:
        return sh, _c(xh, 0.0)
    return zh, zl


# ---------------------------------------------------------------------------------------------
# one table of the element-wise functions: name -> (number of input arrays, number of outputs)

_TABLE = {
    "two_sum": (2, 2), "fast_two_sum": (2, 2), "two_prod": (2, 2), "dg_add12": (2, 2), "dg_mul12": (2, 2),
    "dg_split": (1, 2), "dw_sqrt": (2, 2), "fma": (3, 1), "div": (2, 1), "sqrt": (1, 1),
    **{name: (len(a.operands) + sum(k == "dw" for k in a.operands), 2)
       for name, a in ALGORITHMS.items() if name not in ("dg_add12", "dg_mul12", "dg_split", "dw_sqrt")},
}
_OP = {name: i for i, name in enumerate(_TABLE)}  # the operation numbers the loops dispatch on


@njit(**_SCALAR)
def _apply(op, a, b, c, d, fast=False):
    """The scalar function number ``op`` (of :data:`_OP`) on its first operands, as a pair; ``fast``
    as in :func:`_two_prod` (the algorithms' products and FMAs by the hardware FMA)."""
    z = a - a
    if op == 0:
        return _two_sum(a, b)
    if op == 1:
        return _fast_two_sum(a, b)
    if op == 2:
        return _two_prod(a, b, fast)
    if op == 3:
        return _dg_add12(a, b)
    if op == 4:
        return _dg_mul12(a, b)
    if op == 5:
        return _dg_split(a)
    if op == 6:
        return _dw_sqrt(a, b, fast)
    if op == 7:
        return _fma(a, b, c, fast), z
    if op == 8:
        return a / b, z
    if op == 9:
        return np.sqrt(a), z
    if op == 10:
        return _dw_plus_fp(a, b, c)
    if op == 11:
        return _dw_add_sloppy(a, b, c, d)
    if op == 12:
        return _dw_add_accurate(a, b, c, d)
    if op == 13:
        return _dw_times_fp1(a, b, c, fast)
    if op == 14:
        return _dw_times_fp2(a, b, c, fast)
    if op == 15:
        return _dw_times_fp3(a, b, c, fast)
    if op == 16:
        return _dw_times_dw1(a, b, c, d, fast)
    if op == 17:
        return _dw_times_dw2(a, b, c, d, fast)
    if op == 18:
        return _dw_times_dw3(a, b, c, d, fast)
    if op == 19:
        return _dw_div_fp1(a, b, c, fast)
    if op == 20:
        return _dw_div_fp2(a, b, c, fast)
    if op == 21:
        return _dw_div_fp3(a, b, c, fast)
    if op == 22:
        return _dw_div_dw1(a, b, c, d, fast)
    if op == 23:
        return _dw_div_dw2(a, b, c, d, fast)
    if op == 24:
        return _dw_div_dw3(a, b, c, d, fast)
    if op == 25:
        return _qd_add_sloppy(a, b, c, d)
    if op == 26:
        return _qd_add_ieee(a, b, c, d)
    if op == 27:
        return _dg_add22(a, b, c, d)
    if op == 28:
        return _dg_mul22(a, b, c, d)
    if op == 29:
        return _ww_mul(a, b, c, d, fast)
    return _ww_div(a, b, c, d, fast)


_BRANCHES = ("two_sum", "fast_two_sum", "two_prod", "dg_add12", "dg_mul12", "dg_split", "dw_sqrt", "fma", "div",
             "sqrt", "dw_plus_fp", "dw_add_sloppy", "dw_add_accurate", "dw_times_fp1", "dw_times_fp2",
             "dw_times_fp3", "dw_times_dw1", "dw_times_dw2", "dw_times_dw3", "dw_div_fp1", "dw_div_fp2",
             "dw_div_fp3", "dw_div_dw1", "dw_div_dw2", "dw_div_dw3", "qd_add_sloppy", "qd_add_ieee", "dg_add22",
             "dg_mul22", "ww_mul", "ww_div")
assert _BRANCHES == tuple(_OP), "the branches of _apply must follow _TABLE"


@njit(**_KERNEL)
def _map(op, a, b, c, d, zh, zl):
    """``(zh[i], zl[i]) = f(a[i], b[i], c[i], d[i])`` for the function number ``op`` (unused operands
    are passed as ``a``, never read).  One loop for every function, ``op`` read at run time: the
    element-wise functions cost one compilation per dtype; the fused entry points below are the
    specialized, vectorized ones."""
    for i in prange(a.shape[0]):
        h, lo = _apply(op, a[i], b[i], c[i], d[i])
        zh[i] = h
        zl[i] = lo


def _elementwise(name: str, *words):
    """Run the compiled function ``name`` element-wise on the broadcast words, like the twin."""
    n_in, n_out = _TABLE[name]
    if len(words) != n_in:
        raise TypeError(f"{name} takes {n_in} arrays, got {len(words)}")
    arrays = [np.asarray(w) for w in words]
    dtype = _common_dtype(name, arrays)
    arrays = np.broadcast_arrays(*arrays)
    shape = arrays[0].shape
    flat = [readonly(np.ascontiguousarray(a).reshape(-1)) for a in arrays]  # see kernels.readonly
    flat += [flat[0]] * (4 - n_in)
    zh = np.empty(flat[0].shape, dtype=dtype)
    zl = np.empty_like(zh)
    _map(_OP[name], *flat, zh, zl)
    if n_out == 1:
        return zh.reshape(shape)
    return zh.reshape(shape), zl.reshape(shape)


def _common_dtype(name, arrays):
    dtypes = {a.dtype for a in arrays}
    if len(dtypes) != 1 or next(iter(dtypes)) not in (np.float64, np.float32):
        raise TypeError(f"{name}: expected arrays of one dtype, float64 or float32, got {sorted(map(str, dtypes))}")
    return next(iter(dtypes))


def _public(name: str):
    n_in, n_out = _TABLE[name]

    def f(*words):
        return _elementwise(name, *words)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = (f"Compiled twin of :func:`expansions.dw.cpu.{name}`: {n_in} array(s) in, "
                 f"{'a tuple of two arrays' if n_out == 2 else 'an array'} out, bit-identical.")
    return f


two_sum = _public("two_sum")
fast_two_sum = _public("fast_two_sum")
two_prod = _public("two_prod")
fma = _public("fma")
div = _public("div")
sqrt = _public("sqrt")
dw_plus_fp = _public("dw_plus_fp")
dw_add_sloppy = _public("dw_add_sloppy")
dw_add_accurate = _public("dw_add_accurate")
dw_times_fp1 = _public("dw_times_fp1")
dw_times_fp2 = _public("dw_times_fp2")
dw_times_fp3 = _public("dw_times_fp3")
dw_times_dw1 = _public("dw_times_dw1")
dw_times_dw2 = _public("dw_times_dw2")
dw_times_dw3 = _public("dw_times_dw3")
dw_div_fp1 = _public("dw_div_fp1")
dw_div_fp2 = _public("dw_div_fp2")
dw_div_fp3 = _public("dw_div_fp3")
dw_div_dw1 = _public("dw_div_dw1")
dw_div_dw2 = _public("dw_div_dw2")
dw_div_dw3 = _public("dw_div_dw3")
qd_add_sloppy = _public("qd_add_sloppy")
qd_add_ieee = _public("qd_add_ieee")
dg_add12 = _public("dg_add12")
dg_split = _public("dg_split")
dg_mul12 = _public("dg_mul12")
dg_add22 = _public("dg_add22")
dg_mul22 = _public("dg_mul22")
ww_mul = _public("ww_mul")
ww_div = _public("ww_div")
dw_sqrt = _public("dw_sqrt")


def split_constant(dtype) -> float:
    """``2**ceil(p/2) + 1``: 4097 for float32, 134217729 for float64 (as :func:`expansions.dw.cpu.split_constant`)."""
    p = np.finfo(dtype).nmant + 1
    return float((1 << ((p + 1) // 2)) + 1)


# ---------------------------------------------------------------------------------------------
# the non-finite rule of a row (the sequential baselines' epilogue)


@njit(**_SCALAR)
def _finite_row(a, i):
    for k in range(a.shape[1]):
        if not np.isfinite(a[i, k]):
            return False
    return True


@njit(**_SCALAR)
def nonfinite_row(s, i, x, y, leading, binary):
    """Row ``i`` of :func:`expansions.cpu.kernels.nonfinite_epilogue` on ``s`` in place; the operands
    are ``(x, y)``, or ``(x,)`` when ``binary`` is False.  If an operand has a non-finite term the row
    becomes ``(w, 0, ..., 0)``, ``w`` the leading-term result ``leading`` or NaN where that operand's
    leading term is finite; else, if a computed term is not finite, ``(±inf, 0, ..., 0)`` with the
    sign of ``leading``; a NaN is the canonical positive quiet NaN."""
    bad_x = not _finite_row(x, i)
    bad_y = binary and not _finite_row(y, i)
    anybad = bad_x or bad_y
    if not anybad and _finite_row(s, i):
        return
    w = leading
    if bad_x and np.isfinite(x[i, 0]):
        w = _c(leading, np.nan)
    if bad_y and np.isfinite(y[i, 0]):
        w = _c(leading, np.nan)
    if not anybad:
        w = _c(leading, -np.inf) if leading < 0 else _c(leading, np.inf)
    if np.isnan(w):
        w = _c(leading, np.nan)
    for k in range(s.shape[1]):
        s[i, k] = _c(leading, 0.0)
    s[i, 0] = w
