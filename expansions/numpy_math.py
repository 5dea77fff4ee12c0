"""More of NumPy's mathematical functions on ExpansionArrays: ``np.outer``, ``np.kron``, ``np.cross``,
``np.round``/``np.around``, ``np.polyval``, ``np.convolve``, ``np.interp``, ``np.trapezoid``, ``np.power``
with an expansion exponent, and the angle conversions ``np.radians``/``np.deg2rad``,
``np.degrees``/``np.rad2deg``.

Each is composed of the library's operations (never through float64), with the bound of that
composition: ``e_a = bounds.add_safe(R, p)`` for a safe addition or subtraction (relative to its exact
result), ``mu = bounds.mul_relative_to_product(R, p)`` for a truncated product (relative to the exact
product), ``bounds.div(R, fmt, m)`` for a division, ``bounds.sum_tree`` and ``bounds.dot`` for the
canonical pairwise tree; for ulp-nonoverlapping operands, without overflow or underflow (near the
underflow threshold the operations' absolute underflow terms add).  Mixed operands (floats, float
arrays, expansions of other formats) are promoted exactly, as the arithmetic promotes them.
"""

from __future__ import annotations

import numbers
from fractions import Fraction

import mpmath
import numpy as np

from . import bounds
from . import formats as F
from .arraytype import HANDLED, ExpansionArray, implements, traced
from .backends import xp_of
from .cpu.constants import constant
from .creation import array as _array
from .elementary import pow as _pow
from .elementwise import isnan, power, rint
from .manipulation import _in_format, common_format, stack, where
from .numpy_protocol import UNSUPPORTED_HINTS, register_ufunc, write_out
from .operations import binary, compare, operands
from .reduce import dot as _dot
from .reduce import normalize_axes
from .reduce import sum as _sum
from .reference.mpf import fraction_from_mpf

__all__ = ["outer", "kron", "cross", "round_", "polyval", "horner_bound", "convolve", "interp", "trapezoid",
           "power_any", "radians", "degrees", "angle_bound"]


def _out(r, out, what):
    return r if out is None else write_out(out, r, what)


def _expansion(x, what) -> ExpansionArray:
    if not isinstance(x, ExpansionArray):
        raise TypeError(f"{what}: the operand must be an ExpansionArray, got {type(x).__name__}")
    return x


def _flat(x) -> ExpansionArray:
    return x.reshape(-1)


# ----------------------------------------------------------------------------------------------
# products


@implements(np.outer)
def outer(a, b, out=None):
    """``np.outer``: ``out[i, j] = a_i b_j`` of the flattened operands, each one truncated product (within
    ``mu`` of the exact product, plus ``bounds.mul_underflow_term``)."""
    x, y = operands(a, b)
    return _out(binary("mul", _flat(x).reshape(-1, 1), _flat(y).reshape(1, -1)), out, "np.outer")


@implements(np.kron)
def kron(a, b):
    """``np.kron``, any number of dimensions (the shorter shape padded with leading ones): every entry one
    truncated product ``a_i b_j`` (within ``mu`` of the exact product)."""
    x, y = operands(a, b)
    nd = max(x.ndim, y.ndim)
    xs, ys = (1,) * (nd - x.ndim) + x.shape, (1,) * (nd - y.ndim) + y.shape
    X = x.reshape(tuple(v for d in xs for v in (d, 1)))
    Y = y.reshape(tuple(v for d in ys for v in (1, d)))
    return binary("mul", X, Y).reshape(tuple(i * j for i, j in zip(xs, ys)))


def _component(t, i):
    return ExpansionArray(t[..., i, :])


@implements(np.cross)
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """``np.cross`` of 3-vectors (or 2-vectors, NumPy's z-component; a 2-vector with a 3-vector counts
    as z = 0) along ``axisa``/``axisb``, the other axes broadcast.  Each component
    ``a_i b_j - a_j b_i`` is two truncated products and one safe subtraction: the elements and tree of a
    dot product of length 2, within ``bounds.dot(2, R, p)`` of ``|a_i b_j| + |a_j b_i|``."""
    if axis is not None:
        axisa = axisb = axisc = axis
    x, y = operands(a, b)
    if x.ndim == 0 or y.ndim == 0:
        raise ValueError("np.cross: the operands must have at least one dimension")
    xp = xp_of(x.terms)
    (ia,), (ib,) = normalize_axes(axisa, x.ndim), normalize_axes(axisb, y.ndim)
    xt, yt = xp.moveaxis(x.terms, ia, -2), xp.moveaxis(y.terms, ib, -2)
    na, nb = xt.shape[-2], yt.shape[-2]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("incompatible dimensions for cross product (dimension must be 2 or 3)")
    if na == nb == 2:
        return binary("sub", binary("mul", _component(xt, 0), _component(yt, 1)),
                      binary("mul", _component(xt, 1), _component(yt, 0)))
    zero = xp.zeros_like(xt[..., :1, :])
    xt = xp.concatenate([xt, zero], axis=-2) if na == 2 else xt
    yt = xp.concatenate([yt, xp.zeros_like(yt[..., :1, :])], axis=-2) if nb == 2 else yt
    comps = []
    for i, j in ((1, 2), (2, 0), (0, 1)):
        comps.append(binary("sub", binary("mul", _component(xt, i), _component(yt, j)),
                            binary("mul", _component(xt, j), _component(yt, i))))
    c = stack(comps, axis=-1)
    (ic,) = normalize_axes(axisc, c.ndim)
    return ExpansionArray(xp.moveaxis(c.terms, -2, ic - c.ndim - 1))


# ----------------------------------------------------------------------------------------------
# rounding to decimals


def _round(a, decimals=0, out=None):
    """``np.round``/``np.around``: decimals = 0 is :func:`expansions.rint` (exact, ties to even).  Otherwise
    NumPy's definition with the library's arithmetic: for d > 0, ``rint(x * 10^d) / 10^d``; for d < 0,
    ``rint(x / 10^-d) * 10^-d``, with 10^|d| correctly rounded to R terms (exact while R terms hold it:
    float64, R = 2 up to |d| = 45).  10^-d is not a binary number, so the result is not the decimal
    k 10^-d itself but the expansion nearest to it within the division's bound: for d > 0 it is
    ``k / 10^d`` within ``bounds.div(R, fmt, m)`` (m: the terms of 10^d) of it, k the integer nearest to
    the computed ``x 10^d``, which is within mu of the exact ``x 10^d`` (so k is x 10^d rounded to the
    nearest integer, ties to even, but where x 10^d lies within ``mu |x 10^d|`` of a half-integer); for
    d < 0 k is nearest to ``x / 10^-d`` (within the division's bound) and the result ``k 10^-d`` is
    within mu of it (exact while R terms hold it)."""
    x = _expansion(a, "np.round")
    if not isinstance(decimals, numbers.Integral) or isinstance(decimals, bool):
        raise TypeError(f"np.round: decimals must be an integer, got {decimals!r}")
    d = int(decimals)
    if d == 0:
        return _out(rint(x), out, "np.round")
    s = _array(10 ** abs(d), terms=x.nterms, dtype=x.dtype.name)
    s = s if x.device == "cpu" else s.to_device(x.device)
    if d > 0:
        r = binary("div", rint(binary("mul", x, s)), s)
    else:
        r = binary("mul", rint(binary("div", x, s)), s)
    return _out(r, out, "np.round")


def round_(a, decimals=0, out=None):
    return _round(a, decimals, out)


round_.__doc__ = _round.__doc__
for _f in {np.round, getattr(np, "around", np.round)}:
    implements(_f)(_round)


# ----------------------------------------------------------------------------------------------
# polynomials, convolution, interpolation, integration


def horner_bound(degree: int, R: int, p: int) -> Fraction:
    """The bound of :func:`polyval` for a polynomial of ``degree``:
    ``|P - sum p_i x^(N-i)| <= ((1 + mu)^N (1 + e_a)^N - 1) sum |p_i| |x|^(N-i)``, N the degree (the
    coefficient p_i goes through N - i products and at most N - i + 1 additions, the first addition to 0
    exact)."""
    e_a, mu = bounds.add_safe(R, p).value, bounds.mul_relative_to_product(R, p)
    return (1 + mu) ** degree * (1 + e_a) ** degree - 1


@implements(np.polyval)
def polyval(p, x):
    """``np.polyval``: Horner's rule as NumPy writes it, ``y = 0; for c in p: y = y * x + c``, with the
    library's truncated products and safe additions (the coefficients p and the points x expansions or
    floats, promoted exactly).  Bound :func:`horner_bound`."""
    if not isinstance(p, ExpansionArray):
        p = list(p)
    like = p if isinstance(p, ExpansionArray) else x
    like = _expansion(like, "np.polyval")
    X = x if isinstance(x, ExpansionArray) else operands(like, x)[1]
    y = ExpansionArray(xp_of(X.terms).zeros_like(X.terms))
    for c in p:
        y = binary("add", binary("mul", y, X), c)
    return y


@implements(np.convolve)
def convolve(a, v, mode="full"):
    """``np.convolve`` of two 1-D operands (modes 'full', 'same', 'valid' as NumPy).  With v the shorter
    (NumPy swaps them), ``out[k] = sum_j a[k - j] v[j]`` is one dot product of length m = len(v) (the
    zero-padded ends are exact zero products) by the library's element-wise products and canonical
    tree: within ``bounds.dot(m, R, p)`` of ``sum_j |a[k - j] v[j]|``."""
    x, y = operands(a, v)
    if x.ndim != 1 or y.ndim != 1:
        raise ValueError("np.convolve: the operands must be 1-D")
    if x.shape[0] == 0:
        raise ValueError("a cannot be empty")
    if y.shape[0] == 0:
        raise ValueError("v cannot be empty")
    if y.shape[0] > x.shape[0]:
        x, y = y, x
    n, m = x.shape[0], y.shape[0]
    xp = xp_of(x.terms)
    pad = xp.zeros((m - 1, x.nterms), dtype=x.dtype)
    xpad = xp.concatenate([pad, x.terms, pad])
    starts = {"full": 0, "same": (m - 1) // 2, "valid": m - 1}
    if mode not in starts:
        raise ValueError(f"mode must be one of 'full', 'same', 'valid', got {mode!r}")
    length = {"full": n + m - 1, "same": n, "valid": n - m + 1}[mode]
    k = xp.arange(starts[mode], starts[mode] + length)[:, None]
    A = ExpansionArray(xpad[k + (m - 1) - xp.arange(m)[None, :]])
    return _dot(A, y, method="elementwise")


def _promoted(values):
    R, dt, device = common_format(values)
    return [None if v is None else ExpansionArray(_in_format(v, R, dt, device)) for v in values]


@implements(np.interp)
def interp(x, xp, fp, left=None, right=None, period=None):
    """``np.interp`` (xp increasing, as NumPy assumes): for xp_j <= x < xp_(j+1) (found by exact
    comparisons), NumPy's ``slope (x - xp_j) + fp_j`` with ``slope = (fp_(j+1) - fp_j) / (xp_(j+1) - xp_j)``
    in the library's arithmetic; x = xp_j gives fp_j exactly, x below xp_0 ``left`` (default fp_0), above
    the last ``right`` (default the last fp), NaN for NaN; where the formula gives NaN, NumPy's fallbacks.
    Bound, with I = slope (x - xp_j) the exact increment:
    ``|result - exact| <= e_a |exact| + (1 + e_a) gamma |I|``,
    ``gamma = (1 + e_a)^2 (1 + e_d)(1 + mu) / (1 - e_a) - 1``, e_d = ``bounds.div(R, fmt)``."""
    if period is not None:
        raise TypeError("np.interp: period= is not supported for ExpansionArray operands")
    X, XP, FP, L, Rt = _promoted([x, xp, fp, left, right])
    if XP.ndim != 1 or FP.ndim != 1 or XP.shape != FP.shape:
        raise ValueError("fp and xp are not of the same length")
    m = XP.shape[0]
    if m == 0:
        raise ValueError("array of sample points is empty")
    xpm = xp_of(X.terms)
    shape = X.shape
    Xf = X.reshape(-1)
    le = xpm.asarray(compare("le", XP.reshape(1, m), Xf.reshape(-1, 1))).reshape(-1, m)
    j = le.sum(axis=1).astype(np.intp) - 1
    jc = xpm.clip(j, 0, max(m - 2, 0))
    j1 = xpm.minimum(jc + 1, m - 1)

    def at(E, idx):
        return ExpansionArray(E.terms[idx])

    x0, x1, f0, f1 = at(XP, jc), at(XP, j1), at(FP, jc), at(FP, j1)
    slope = binary("div", binary("sub", f1, f0), binary("sub", x1, x0))
    r = binary("add", binary("mul", slope, binary("sub", Xf, x0)), f0)
    bad = xpm.asarray(isnan(r))
    if bool(bad.any()):  # NumPy's fallbacks: from the right end, then fp_j where fp_j == fp_(j+1)
        r2 = binary("add", binary("mul", slope, binary("sub", Xf, x1)), f1)
        r = where(bad, r2, r)
        flat = xpm.asarray(isnan(r)) & xpm.asarray(compare("eq", f0, f1))
        r = where(flat, f0, r)
    r = where(j == m - 1, at(FP, xpm.full(j.shape, m - 1)), r)
    r = where(j < 0, at(FP, xpm.zeros(j.shape, dtype=np.intp)) if L is None else L, r)
    above = xpm.asarray(compare("gt", Xf, at(XP, xpm.full(j.shape, m - 1))))
    r = where(above, at(FP, xpm.full(j.shape, m - 1)) if Rt is None else Rt, r)
    r = where(xpm.asarray(isnan(Xf)), np.nan, r)
    return r.reshape(shape)


def _trapezoid(y, x=None, dx=1.0, axis=-1):
    """``np.trapezoid``: ``sum_i d_i (y_i + y_(i+1)) / 2`` along ``axis`` with ``d_i = x_(i+1) - x_i`` (x 1-D
    or of y's shape) or ``dx``: each element one safe addition, one safe subtraction (with x) and one
    truncated product, the canonical tree, then the exact halving.  With T = sum |d_i (y_i + y_(i+1))| / 2:
    ``|result - exact| <= ((1 + theta)(1 + e_t) - 1) T``, ``theta = (1 + e_a)^2 (1 + mu) - 1`` with x
    (``(1 + e_a)(1 + mu) - 1`` with dx), ``e_t = bounds.sum_tree(n - 1, R, p)``."""
    Y = y if isinstance(y, ExpansionArray) else operands(x if isinstance(x, ExpansionArray) else dx, y)[1]
    if Y.ndim == 0:
        raise ValueError("np.trapezoid: y must have at least one dimension")
    (ax,) = normalize_axes(axis, Y.ndim)
    xp = xp_of(Y.terms)
    t = xp.moveaxis(Y.terms, ax, -2)
    s = binary("add", ExpansionArray(t[..., 1:, :]), ExpansionArray(t[..., :-1, :]))
    if x is None:
        d = dx
    else:
        X = x if isinstance(x, ExpansionArray) else operands(Y, x)[1]
        if X.ndim == 1:
            xt = X.terms
        else:
            xt = xp.moveaxis(X.terms, ax, -2)
        d = binary("sub", ExpansionArray(xt[..., 1:, :]), ExpansionArray(xt[..., :-1, :]))
    return binary("mul", _sum(binary("mul", s, d), axis=-1), 0.5)


trapezoid = implements(np.trapezoid)(_trapezoid)


# ----------------------------------------------------------------------------------------------
# ufuncs: power with an expansion exponent, angle conversions


def power_any(x, y):
    """``np.power`` and ``x ** y``: an integer exponent takes :func:`expansions.power` (binary powering,
    ``power_bound``); an expansion exponent takes :func:`expansions.pow` (exp(y log|x|), its stated bound
    ``bounds.pow_bound`` for |y| up to ``bounds.pow_exponent_limit``)."""
    if isinstance(y, ExpansionArray) or traced(y):
        return _pow(x, y)
    return power(x, y)


def angle_bound(name: str, R: int, dtype) -> Fraction:
    """Relative bound of :func:`radians` (``name`` 'pi_over_180') or :func:`degrees` ('180_over_pi'): the
    constant c is correctly rounded to R terms (:func:`expansions.cpu.constants.constant`) with the
    relative error e_c computed here exactly (against the constant at twice the format's precision
    span), and the product errs by mu: ``(1 + mu)(1 + e_c) - 1`` (plus ``bounds.mul_underflow_term``)."""
    fmt = F.format_of(dtype)
    prec = 2 * (fmt.emax - fmt.emin + 4 * fmt.p) + 256
    with mpmath.workprec(prec):
        q = fraction_from_mpf(mpmath.pi / 180 if name == "pi_over_180" else 180 / mpmath.pi)
    c = sum((Fraction(float(v)) for v in constant(name, R, np.dtype(dtype).name)[0]), Fraction(0))
    e_c = abs(q - c) / q + Fraction(1, 2 ** (prec - 8))
    return bounds.round_up((1 + bounds.mul_relative_to_product(R, fmt.p)) * (1 + e_c) - 1)


def _angle(name, x, what):
    x = _expansion(x, what)
    c = ExpansionArray(constant(name, x.nterms, x.dtype.name)[0].copy())
    return binary("mul", x, c if x.device == "cpu" else c.to_device(x.device))


def radians(x):
    """``np.radians``/``np.deg2rad``: x times pi/180 rounded to R terms; bound :func:`angle_bound`."""
    return _angle("pi_over_180", x, "np.radians")


def degrees(x):
    """``np.degrees``/``np.rad2deg``: x times 180/pi rounded to R terms; bound :func:`angle_bound`."""
    return _angle("180_over_pi", x, "np.degrees")


for _ufunc, _fn in [(np.power, power_any), (np.radians, radians), (np.deg2rad, radians), (np.degrees, degrees),
                    (np.rad2deg, degrees)]:
    register_ufunc(_ufunc, _fn)
    UNSUPPORTED_HINTS.pop(_ufunc.__name__, None)
HANDLED[np.power] = power_any  # x ** y
for _name in ("round", "around"):
    UNSUPPORTED_HINTS.pop(_name, None)
