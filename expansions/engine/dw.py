"""Compiled twins of the double-word algorithms of :mod:`expansions.dw.cpu` (numba, nopython).

Every function of :mod:`expansions.dw.cpu` is here with the same name and signature: arrays of high
and low words in (float64 or float32, equal dtypes, broadcast together), a tuple of arrays out,
bit-identical to the NumPy twin.  Each algorithm is written once, as a scalar function (the twin's
name with a leading underscore) that performs the twin's operations in the twin's order, and
:func:`_apply` selects it by number.  The element-wise functions share one parallel loop (``prange``
over the elements, the function chosen at run time: one compilation per dtype).  The fused entry
points cut the elements into blocks of :data:`_BLOCK`; a block is one serial loop compiled for one
algorithm (its number a compile-time constant, so the loop has no branch and LLVM vectorizes it),
and the blocks run in parallel.  Every loop is compiled on first use and cached on disk
(``cache=True``).

Why the results are the twin's, bit for bit:

* compiled without ``fastmath``: every ``+ - * /`` and ``sqrt`` is one IEEE operation rounded to
  nearest even, nothing is reassociated, and no multiply-add is contracted into an FMA (LLVM fuses
  only when the ``contract`` flag is set, which numba sets only under ``fastmath``); subnormals are
  kept (no flush-to-zero); ``error_model="numpy"`` makes a division by zero IEEE (no exception);
* the twin's two-product and FMA are emulations (:func:`expansions.cpu.eft.two_prod`: Dekker with
  Veltkamp's splitting, scaled above 2**995; :func:`expansions.dw.cpu.fma`: round-to-odd, Boldo and
  Melquiond 2008); they are reproduced here operation for operation, not replaced by a hardware FMA;
* the twin's selects (``where``) become branches that pick the same value.

:func:`dw_binary` and :func:`dw_unary` are the fused entry points for the library's dispatch: (count,
2) arrays in, the (count, 2) result out, with the library's non-finite rule
(``_double_word_finish`` in ``expansions/backends.py``) applied in the same loop (the leading-term
IEEE result decides, a NaN leading result gives (NaN, 0)); they equal the twins backend's
``dw_binary`` / ``dw_unary`` bit for bit.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import literally, njit, prange, types
from numba.extending import intrinsic, overload

from ..dw import ALGORITHMS

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
def _fast_two_sum(a, b):
    """Dekker's Fast2Sum (twin: :func:`expansions.cpu.eft.fast_two_sum`)."""
    s = a + b
    z = s - a
    e = b - z
    return s, e


_BIG = 2.0**995
_DOWN = 2.0**-28
_UP = 2.0**28


@njit(**_SCALAR)
def _split64(a):
    """Veltkamp's splitting (twin: ``expansions.cpu.eft._split64``)."""
    c = a * 134217729.0
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


def _two_prod(a, b):
    """``(RN(a*b), RN(a*b - RN(a*b)))`` as the twin computes it, float64 or float32 (compiled only)."""
    raise NotImplementedError


@overload(_two_prod, inline="always")
def _two_prod_impl(a, b):
    if isinstance(a, types.Float) and a.bitwidth == 32:
        return lambda a, b: _two_prod32(a, b)
    return lambda a, b: _two_prod64(a, b)


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


def _fma(a, b, c):
    """``RN(a*b + c)`` as the twin emulates it (compiled only)."""
    raise NotImplementedError


@overload(_fma, inline="always")
def _fma_impl(a, b, c):
    if isinstance(a, types.Float) and a.bitwidth == 32:
        return lambda a, b, c: _fma32(a, b, c)
    return lambda a, b, c: _fma64(a, b, c)


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
def _dw_times_fp1(xh, xl, y):
    """JMP Algorithm 7 (twin: :func:`expansions.dw.cpu.dw_times_fp1`)."""
    ch, cl1 = _two_prod(xh, y)
    cl2 = xl * y
    th, tl1 = _fast_two_sum(ch, cl2)
    tl2 = tl1 + cl1
    return _fast_two_sum(th, tl2)


@njit(**_SCALAR)
def _dw_times_fp2(xh, xl, y):
    """JMP Algorithm 8 (twin: :func:`expansions.dw.cpu.dw_times_fp2`)."""
    ch, cl1 = _two_prod(xh, y)
    cl2 = xl * y
    cl3 = cl1 + cl2
    return _fast_two_sum(ch, cl3)


@njit(**_SCALAR)
def _dw_times_fp3(xh, xl, y):
    """JMP Algorithm 9 (twin: :func:`expansions.dw.cpu.dw_times_fp3`)."""
    ch, cl1 = _two_prod(xh, y)
    cl3 = _fma(xl, y, cl1)
    return _fast_two_sum(ch, cl3)


@njit(**_SCALAR)
def _dw_times_dw1(xh, xl, yh, yl):
    """JMP Algorithm 10 (twin: :func:`expansions.dw.cpu.dw_times_dw1`)."""
    ch, cl1 = _two_prod(xh, yh)
    tl1 = xh * yl
    tl2 = xl * yh
    cl2 = tl1 + tl2
    cl3 = cl1 + cl2
    return _fast_two_sum(ch, cl3)


@njit(**_SCALAR)
def _dw_times_dw2(xh, xl, yh, yl):
    """JMP Algorithm 11 (twin: :func:`expansions.dw.cpu.dw_times_dw2`)."""
    ch, cl1 = _two_prod(xh, yh)
    tl = xh * yl
    cl2 = _fma(xl, yh, tl)
    cl3 = cl1 + cl2
    return _fast_two_sum(ch, cl3)


@njit(**_SCALAR)
def _dw_times_dw3(xh, xl, yh, yl):
    """JMP Algorithm 12 (twin: :func:`expansions.dw.cpu.dw_times_dw3`)."""
    ch, cl1 = _two_prod(xh, yh)
    tl0 = xl * yl
    tl1 = _fma(xh, yl, tl0)
    cl2 = _fma(xl, yh, tl1)
    cl3 = cl1 + cl2
    return _fast_two_sum(ch, cl3)


@njit(**_SCALAR)
def _dw_div_fp1(xh, xl, y):
    """JMP Algorithm 13 (twin: :func:`expansions.dw.cpu.dw_div_fp1`)."""
    th = xh / y
    pih, pil = _two_prod(th, y)
    dh, d1 = _two_sum(xh, -pih)
    d2 = xl - pil
    dl = d1 + d2
    d = dh + dl
    tl = d / y
    return _fast_two_sum(th, tl)


@njit(**_SCALAR)
def _dw_div_fp2(xh, xl, y):
    """JMP Algorithm 14 (twin: :func:`expansions.dw.cpu.dw_div_fp2`)."""
    th = xh / y
    pih, pil = _two_prod(th, y)
    dh = xh - pih
    dl = xl - pil
    d = dh + dl
    tl = d / y
    return _fast_two_sum(th, tl)


@njit(**_SCALAR)
def _dw_div_fp3(xh, xl, y):
    """JMP Algorithm 15 (twin: :func:`expansions.dw.cpu.dw_div_fp3`)."""
    th = xh / y
    pih, pil = _two_prod(th, y)
    dh = xh - pih
    dt = dh - pil
    d = dt + xl
    tl = d / y
    return _fast_two_sum(th, tl)


@njit(**_SCALAR)
def _dw_div_dw1(xh, xl, yh, yl):
    """JMP Algorithm 16 (twin: :func:`expansions.dw.cpu.dw_div_dw1`)."""
    th = xh / yh
    rh, rl = _dw_times_fp1(yh, yl, th)
    pih, pil = _two_sum(xh, -rh)
    dh = pil - rl
    dl = dh + xl
    d = pih + dl
    tl = d / yh
    return _fast_two_sum(th, tl)


@njit(**_SCALAR)
def _dw_div_dw2(xh, xl, yh, yl):
    """JMP Algorithm 17 (twin: :func:`expansions.dw.cpu.dw_div_dw2`)."""
    th = xh / yh
    rh, rl = _dw_times_fp1(yh, yl, th)
    pih = xh - rh
    dl = xl - rl
    d = pih + dl
    tl = d / yh
    return _fast_two_sum(th, tl)


@njit(**_SCALAR)
def _dw_div_dw3(xh, xl, yh, yl):
    """JMP Algorithm 18 (twin: :func:`expansions.dw.cpu.dw_div_dw3`)."""
    one = _c(yh, 1.0)
    th = one / yh
    rh = _fma(-yh, th, one)
    rl = -(yl * th)
    eh, el = _fast_two_sum(rh, rl)
    dh, dl = _dw_times_fp3(eh, el, th)
    mh, ml = _dw_plus_fp(dh, dl, th)
    return _dw_times_dw3(xh, xl, mh, ml)


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
def _ww_mul(ah, al, bh, bl):
    """Warwick's Algorithm 8 (twin: :func:`expansions.dw.cpu.ww_mul`)."""
    sh, sl = _two_prod(ah, bh)
    sl = _fma(al, bl, sl)
    sl = _fma(ah, bl, sl)
    sl = _fma(al, bh, sl)
    return _fast_two_sum(sh, sl)


@njit(**_SCALAR)
def _ww_div(ah, al, bh, bl):
    """Warwick's Algorithm 9 (twin: :func:`expansions.dw.cpu.ww_div`)."""
    sh = ah / bh
    th, tl = _two_prod(sh, bh)
    v = (ah - th) + (al - tl)
    sl = _fma(-sh, bl, v) / bh
    return _fast_two_sum(sh, sl)


# ---------------------------------------------------------------------------------------------
# square root


@njit(**_SCALAR)
def _dw_sqrt(xh, xl):
    """SQRTDWtoDW, Lefèvre et al. 2023, Algorithm 8 (twin: :func:`expansions.dw.cpu.dw_sqrt`)."""
    sh = np.sqrt(xh)
    r1 = _fma(-sh, sh, xh)
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
def _apply(op, a, b, c, d):
    """The scalar function number ``op`` (of :data:`_OP`) on its first operands, as a pair."""
    z = a - a
    if op == 0:
        return _two_sum(a, b)
    if op == 1:
        return _fast_two_sum(a, b)
    if op == 2:
        return _two_prod(a, b)
    if op == 3:
        return _dg_add12(a, b)
    if op == 4:
        return _dg_mul12(a, b)
    if op == 5:
        return _dg_split(a)
    if op == 6:
        return _dw_sqrt(a, b)
    if op == 7:
        return _fma(a, b, c), z
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
        return _dw_times_fp1(a, b, c)
    if op == 14:
        return _dw_times_fp2(a, b, c)
    if op == 15:
        return _dw_times_fp3(a, b, c)
    if op == 16:
        return _dw_times_dw1(a, b, c, d)
    if op == 17:
        return _dw_times_dw2(a, b, c, d)
    if op == 18:
        return _dw_times_dw3(a, b, c, d)
    if op == 19:
        return _dw_div_fp1(a, b, c)
    if op == 20:
        return _dw_div_fp2(a, b, c)
    if op == 21:
        return _dw_div_fp3(a, b, c)
    if op == 22:
        return _dw_div_dw1(a, b, c, d)
    if op == 23:
        return _dw_div_dw2(a, b, c, d)
    if op == 24:
        return _dw_div_dw3(a, b, c, d)
    if op == 25:
        return _qd_add_sloppy(a, b, c, d)
    if op == 26:
        return _qd_add_ieee(a, b, c, d)
    if op == 27:
        return _dg_add22(a, b, c, d)
    if op == 28:
        return _dg_mul22(a, b, c, d)
    if op == 29:
        return _ww_mul(a, b, c, d)
    return _ww_div(a, b, c, d)


_BRANCHES = ("two_sum", "fast_two_sum", "two_prod", "dg_add12", "dg_mul12", "dg_split", "dw_sqrt", "fma", "div",
             "sqrt", "dw_plus_fp", "dw_add_sloppy", "dw_add_accurate", "dw_times_fp1", "dw_times_fp2",
             "dw_times_fp3", "dw_times_dw1", "dw_times_dw2", "dw_times_dw3", "dw_div_fp1", "dw_div_fp2",
             "dw_div_fp3", "dw_div_dw1", "dw_div_dw2", "dw_div_dw3", "qd_add_sloppy", "qd_add_ieee", "dg_add22",
             "dg_mul22", "ww_mul", "ww_div")
assert _BRANCHES == tuple(_OP), "the branches of _apply must follow _TABLE"


_BLOCK = 4096  # elements per block in dw_binary / dw_unary: one serial loop, blocks in parallel


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
    flat = [np.ascontiguousarray(a).reshape(-1) for a in arrays]
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
# the fused entry points of the dispatch: (count, 2) in, (count, 2) out, non-finite rule included

#: the double-word x double-word algorithms the dispatch can call, and the operation each computes
BINARY = {name: a.operation for name, a in ALGORITHMS.items() if a.operands == ("dw", "dw")}
_KIND = {"add": 0, "mul": 1, "div": 2}


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


@njit(**_SCALAR)
def _double_word_rule(h, lo, x0, x1, y0, y1, leading, binary):
    """``_double_word``'s rule on one result ``(h, lo)`` of operands ``(x0, x1)`` and ``(y0, y1)`` (or
    ``(x0, x1)`` alone when ``binary`` is False): :func:`nonfinite_row` for R = 2, then (NaN, 0) where
    the leading result is NaN (0/0, inf - inf, the square root of a negative number)."""
    t = (h - h) + (lo - lo) + (x0 - x0) + (x1 - x1)  # zero exactly when these are finite
    if binary:
        t = t + (y0 - y0) + (y1 - y1)
    if t == 0 and not np.isnan(leading):  # the common case: nothing to do
        return h, lo
    zero = _c(leading, 0.0)
    bad_x = not (np.isfinite(x0) and np.isfinite(x1))
    bad_y = binary and not (np.isfinite(y0) and np.isfinite(y1))
    anybad = bad_x or bad_y
    if anybad or not (np.isfinite(h) and np.isfinite(lo)):
        w = leading
        if bad_x and np.isfinite(x0):
            w = _c(leading, np.nan)
        if bad_y and np.isfinite(y0):
            w = _c(leading, np.nan)
        if not anybad:
            w = _c(leading, -np.inf) if leading < 0 else _c(leading, np.inf)
        if np.isnan(w):
            w = _c(leading, np.nan)
        h, lo = w, zero
    if np.isnan(leading):
        h, lo = _c(leading, np.nan), zero
    return h, lo


@njit(**_SCALAR)
def _leading(kind, x0, y0):
    """The leading-term IEEE result of operation ``kind``: 0 add, 1 mul, 2 div, 3 sqrt (of x0)."""
    if kind == 0:
        return x0 + y0
    if kind == 1:
        return x0 * y0
    if kind == 2:
        return x0 / y0
    return np.sqrt(x0)


@njit(**_SCALAR)
def _dw_block(op, kind, x, y, out):
    """One block of :func:`dw_binary` / :func:`dw_unary` on flat (2m,) arrays (high, low, high, ...):
    the algorithm's result into ``out``, and the number of rows where the non-finite rule may change
    it (a non-finite operand word, result word or leading result), which the caller then fixes.
    ``op`` and ``kind`` are compile-time constants; the loop has no branch and vectorizes."""
    literally(op)
    literally(kind)
    flagged = 0
    for i in range(x.shape[0] // 2):
        x0, x1, y0, y1 = x[2 * i], x[2 * i + 1], y[2 * i], y[2 * i + 1]
        h, lo = _apply(op, x0, x1, y0, y1)
        leading = _leading(kind, x0, y0)
        out[2 * i] = h
        out[2 * i + 1] = lo
        t = (h - h) + (lo - lo) + (x0 - x0) + (x1 - x1) + (y0 - y0) + (y1 - y1) + (leading - leading)
        flagged += t != 0  # t is 0 exactly when all of these are finite
    return flagged


@functools.cache
def _dw_kernel(op: int, kind: int):
    """The parallel loop over the blocks of :func:`_dw_block`; returns the number of flagged rows.
    ``op`` and ``kind`` are constants of the loop (closure variables, by which numba's cache keys it)."""

    @njit(**_KERNEL)
    def loop(x, y, out):
        n = x.shape[0] // 2
        flagged = 0
        for k in prange((n + _BLOCK - 1) // _BLOCK):
            lo, hi = 2 * k * _BLOCK, 2 * min(n, (k + 1) * _BLOCK)
            flagged += _dw_block(op, kind, x[lo:hi], y[lo:hi], out[lo:hi])
        return flagged

    return loop


@njit(**_KERNEL)
def _dw_fix(kind, x, y, out):
    """The non-finite rule on every row of a result of :func:`_dw_block` (it leaves finite rows as
    they are); run only when some row was flagged."""
    for i in prange(x.shape[0] // 2):
        x0, x1, y0, y1 = x[2 * i], x[2 * i + 1], y[2 * i], y[2 * i + 1]
        out[2 * i], out[2 * i + 1] = _double_word_rule(out[2 * i], out[2 * i + 1], x0, x1, y0, y1,
                                                       _leading(kind, x0, y0), kind != 3)


def _dw_run(name, kind, x, y):
    out = np.empty_like(x)
    xf, yf, of = x.reshape(-1), y.reshape(-1), out.reshape(-1)
    if _dw_kernel(_OP[name], kind)(xf, yf, of):
        _dw_fix(kind, xf, yf, of)
    return out


def dw_binary(name: str, x, y):
    """The double-word algorithm ``name`` (a key of :data:`BINARY`) on (count, 2) arrays ``x`` and ``y``,
    then the non-finite rule: equal bit for bit to ``backends.cpu.dw_binary(name, kind, x, y)`` (``kind``
    the algorithm's operation; a subtraction is an addition of ``-y``)."""
    if name not in BINARY:
        raise ValueError(f"unknown double-word algorithm {name!r}; expected one of {sorted(BINARY)}")
    x, y = _pairs(name, x, y)
    return _dw_run(name, _KIND[BINARY[name]], x, y)


def dw_unary(name: str, x):
    """The double-word square root (``name`` = ``'dw_sqrt'``) of the (count, 2) array ``x``, then the
    non-finite rule: equal bit for bit to ``backends.cpu.dw_unary('dw_sqrt', x)``."""
    if name != "dw_sqrt":
        raise ValueError(f"unknown unary double-word algorithm {name!r}; expected 'dw_sqrt'")
    (x,) = _pairs(name, x)
    return _dw_run(name, 3, x, x)


def _pairs(name, *operands):
    arrays = [np.ascontiguousarray(a) for a in operands]
    for a in arrays:
        if a.ndim != 2 or a.shape[1] != 2 or a.shape[0] != arrays[0].shape[0]:
            raise ValueError(f"{name}: expected (count, 2) arrays, got shapes {[b.shape for b in arrays]}")
    _common_dtype(name, arrays)
    return arrays
