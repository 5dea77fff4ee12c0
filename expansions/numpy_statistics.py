"""NumPy's statistics, differences and set functions on ExpansionArrays: ``np.diff``, ``np.ptp``,
``np.average``, ``np.nansum``, ``np.nanmean``, ``np.var``, ``np.std``, ``np.median``, ``np.percentile``,
``np.quantile``, ``np.unique`` (registered for ``__array_function__``).

Each is composed of the library's operations, never through float64: exact sorting and comparisons
(:mod:`expansions.statistics`), the canonical pairwise tree of :func:`expansions.reduce.sum`, the safe
addition and subtraction (bound ``e_a = bounds.add_safe(R, p)``, relative to the exact result of the
computed operands), the truncated product (``mu = bounds.mul_relative_to_product(R, p)``, relative to
the exact product) and the Newton division (``e_d = bounds.div(R, fmt, m)``).  The bounds below are
stated for ulp-nonoverlapping operands with no overflow and no underflow (near the underflow threshold
the operations' absolute underflow terms add); each function's docstring gives its own.  NaN and
infinities propagate as NumPy's float functions let them.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np

from . import bounds
from . import formats as F
from .arraytype import ExpansionArray, implements
from .backends import xp_of
from .creation import array as _array
from .elementwise import isinf, isnan
from .manipulation import concatenate, where
from .numpy_protocol import UNSUPPORTED_HINTS, write_out
from .operations import binary, compare, operands, unary
from .reduce import normalize_axes
from .reduce import sum as _sum
from .statistics import _sort_axis
from .statistics import max as _max
from .statistics import mean as _mean
from .statistics import min as _min

__all__ = ["diff", "ptp", "average", "nansum", "nanmean", "var", "std", "var_bound", "median", "quantile",
           "percentile", "unique"]

_NOVALUE = np._NoValue


def _check(x, what) -> ExpansionArray:
    if not isinstance(x, ExpansionArray):
        raise TypeError(f"{what}: the operand must be an ExpansionArray, got {type(x).__name__}")
    return x


def _refuse(what, **kw):
    """A TypeError naming the first argument given that is not supported (not at its default)."""
    for k, v in kw.items():
        if v is not None and v is not _NOVALUE and v is not False:
            raise TypeError(f"{what}: {k}={v!r} is not supported for ExpansionArray operands")


def _out(r, out, what):
    return r if out is None else write_out(out, r, what)


def _count(x, axis) -> int:
    return math.prod(x.shape[a] for a in normalize_axes(axis, x.ndim))


def _keepdims(keepdims) -> bool:
    return keepdims is True or (keepdims is not _NOVALUE and bool(keepdims))


def _along(t, axis, index):
    """``t[..., index, ...]`` with ``index`` (an int or slice) on ``axis`` of the expansions' shape."""
    return t[(slice(None),) * axis + (index,)]


# ----------------------------------------------------------------------------------------------
# differences and ranges


@implements(np.diff)
def diff(a, n=1, axis=-1, prepend=_NOVALUE, append=_NOVALUE):
    """``np.diff``: the n-th difference along ``axis``, ``out[i] = a[i+1] - a[i]`` applied n times; ``prepend``
    and ``append`` (values promoted exactly, a scalar broadcast along the other axes) are joined first.
    Each difference is one safe subtraction: within ``e_a |a[i+1] - a[i]|`` of the exact difference of
    its (computed) operands; the first difference of exact inputs is so within ``e_a`` relative."""
    x = _check(a, "np.diff")
    if n == 0:
        return x
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n!r}")
    if x.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    (ax,) = normalize_axes(axis, x.ndim)
    xp = xp_of(x.terms)
    parts = []
    for v in (prepend, append):
        if v is _NOVALUE:
            parts.append(None)
            continue
        v = v if isinstance(v, ExpansionArray) else operands(x, v)[1]
        if v.ndim == 0:
            shape = x.shape[:ax] + (1,) + x.shape[ax + 1:]
            v = ExpansionArray(xp.broadcast_to(v.terms, shape + (v.nterms,)))
        parts.append(v)
    if parts[0] is not None or parts[1] is not None:
        x = concatenate([v for v in (parts[0], x, parts[1]) if v is not None], axis=ax)
    for _ in range(n):
        t = x.terms
        x = binary("sub", ExpansionArray(_along(t, ax, slice(1, None))), ExpansionArray(_along(t, ax, slice(None, -1))))
    return x


@implements(np.ptp)
def ptp(a, axis=None, out=None, keepdims=_NOVALUE):
    """``np.ptp``: ``max - min`` (exact extrema, then one safe subtraction: within ``e_a`` relative to the
    exact range); NaN propagates; an empty axis is a ValueError, as NumPy's."""
    x = _check(a, "np.ptp")
    k = _keepdims(keepdims)
    return _out(binary("sub", _max(x, axis=axis, keepdims=k), _min(x, axis=axis, keepdims=k)), out, "np.ptp")


# ----------------------------------------------------------------------------------------------
# sums and means


@implements(np.average)
def average(a, axis=None, weights=None, returned=False, *, keepdims=_NOVALUE):
    """``np.average``.  Without weights, :func:`expansions.mean` (its bound).  With weights w (promoted
    exactly; the shape of a, or 1-D along a single ``axis``): ``N / W`` with ``N = sum(a * w)`` (the
    products and the canonical tree: within ``e_N = bounds.dot(n, R, p)`` of ``sum |a_i w_i|``),
    ``W = sum(w)`` (within ``e_W = bounds.sum_tree(n, R, p)`` of ``sum |w_i|``) and the Newton division
    (``e_d = bounds.div(R, fmt)``), so
    ``|avg - N/W| <= e_d |avg| + (1 + e_d)(e_N sum|a_i w_i| + |N/W| e_W sum|w_i|) / (|W| - e_W sum|w_i|)``.
    A zero W is a ZeroDivisionError, as NumPy's.  ``returned=True`` also returns W (or the count),
    broadcast to the result's shape."""
    x = _check(a, "np.average") if weights is None else a
    k = _keepdims(keepdims)
    if weights is None:
        avg = _mean(x, axis=axis, keepdims=k)
        scl = operands(avg, float(_count(x, axis)))[1]
    else:
        x, w = operands(x, weights)
        if w.shape != x.shape:
            if axis is None:
                raise TypeError("np.average: axis must be specified when the shapes of a and weights differ")
            axes = normalize_axes(axis, x.ndim)
            if w.ndim != 1 or len(axes) != 1:
                raise TypeError("np.average: 1-D weights along a single axis are supported when shapes differ")
            if w.shape[0] != x.shape[axes[0]]:
                raise ValueError("np.average: length of weights differs from that of a along axis")
            shape = tuple(-1 if i == axes[0] else 1 for i in range(x.ndim))
            w = ExpansionArray(xp_of(w.terms).broadcast_to(w.terms.reshape(shape + (w.nterms,)), x.terms.shape))
        scl = _sum(w, axis=axis, keepdims=k)
        if bool(xp_of(scl.terms).any(compare("eq", scl, 0.0))):
            raise ZeroDivisionError("Weights sum to zero, can't be normalized")
        avg = binary("div", _sum(binary("mul", x, w), axis=axis, keepdims=k), scl)
    if not returned:
        return avg
    if scl.shape != avg.shape:
        scl = ExpansionArray(xp_of(scl.terms).broadcast_to(scl.terms, avg.terms.shape).copy())
    return avg, scl


def _no_nan(x):
    return where(xp_of(x.terms).asarray(isnan(x)), 0.0, x)


@implements(np.nansum)
def nansum(a, axis=None, dtype=None, out=None, keepdims=_NOVALUE, initial=_NOVALUE, where=_NOVALUE):
    """``np.nansum``: the sum (canonical pairwise tree) with every NaN element replaced by +0, so within
    ``bounds.sum_tree(n, R, p)`` of the sum of |x_i| over the non-NaN elements (n: all the elements).
    An all-NaN or empty slice sums to 0; infinities of both signs give NaN, as NumPy."""
    _refuse("np.nansum", dtype=dtype, initial=initial, where=where)
    x = _check(a, "np.nansum")
    return _out(_sum(_no_nan(x), axis=axis, keepdims=_keepdims(keepdims)), out, "np.nansum")


@implements(np.nanmean)
def nanmean(a, axis=None, dtype=None, out=None, keepdims=_NOVALUE, *, where=_NOVALUE):
    """``np.nanmean``: :func:`nansum` divided by the exact count of the non-NaN elements (one float):
    within ``(1 + bounds.sum_tree(n, R, p))(1 + bounds.div(R, fmt, m=1)) - 1`` of sum |x_i| / count over
    the non-NaN elements.  An all-NaN slice gives NaN with NumPy's RuntimeWarning."""
    _refuse("np.nanmean", dtype=dtype, where=where)
    x = _check(a, "np.nanmean")
    k = _keepdims(keepdims)
    xp = xp_of(x.terms)
    axes = normalize_axes(axis, x.ndim)
    counts = (~xp.asarray(isnan(x))).sum(axis=axes, keepdims=k).astype(np.float64)
    if bool((counts == 0).any()):
        warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=2)
    s = _sum(_no_nan(x), axis=axis, keepdims=k)
    return _out(binary("div", s, float(counts) if counts.ndim == 0 else counts), out, "np.nanmean")


# ----------------------------------------------------------------------------------------------
# variance, standard deviation


def var_bound(n: int, R: int, fmt, ddof=0) -> tuple:
    """(g, c): the bound of :func:`var` over n elements, ``|v - var| <= g var + c (sum|x_i| / n)^2``.

    The mean m' is within ``e_m sum|x_i| / n`` of the exact mean, ``e_m = (1 + e_t)(1 + e_1) - 1``
    (e_t = ``sum_tree(n)``, e_1 = ``div(R, fmt, m=1)``).  Each deviation ``x_i - m'`` is one safe
    subtraction (e_a), each square a truncated product (mu), the squares' tree errs by e_t relative to
    their (positive) sum and the division by e_1, so ``v = S(m') / (n - ddof) (1 + theta)`` with
    ``|theta| <= g = (1 + e_a)^2 (1 + mu)(1 + e_t)(1 + e_1) - 1``, where
    ``S(m') = sum (x_i - m')^2 = S + n (m' - m)^2`` exactly (the deviations from the exact mean sum to 0):
    the mean's error enters squared, ``c = (1 + g) n e_m^2 / (n - ddof)``, so there is no cancellation."""
    fmt = fmt if isinstance(fmt, F.Format) else F.format_of(fmt)
    p = fmt.p
    e_a, mu = bounds.add_safe(R, p).value, bounds.mul_relative_to_product(R, p)
    e_t, e_1 = bounds.sum_tree(n, R, p).value, bounds.div(R, fmt, m=1).value
    e_m = (1 + e_t) * (1 + e_1) - 1
    g = (1 + e_a) ** 2 * (1 + mu) * (1 + e_t) * (1 + e_1) - 1
    c = (1 + g) * n * e_m ** 2 / (Fraction(n) - Fraction(ddof)) if n > ddof else Fraction(0)
    return g, c


def _variance(x, axis, ddof, keepdims, correction, mean, where, dtype, what):
    _refuse(what, dtype=dtype, where=where, mean=mean)
    x = _check(x, what)
    if correction is not _NOVALUE:
        if ddof != 0:
            raise ValueError(f"{what}: ddof and correction can't be provided simultaneously")
        ddof = correction
    n = _count(x, axis)
    m = _mean(x, axis=axis, keepdims=True)
    d = binary("sub", x, m)
    s = _sum(binary("mul", d, d), axis=axis, keepdims=_keepdims(keepdims))
    return binary("div", s, float(max(n - ddof, 0)))  # n <= ddof: s / 0 (inf or NaN), as NumPy


@implements(np.var)
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=_NOVALUE, *, where=_NOVALUE, mean=_NOVALUE,
        correction=_NOVALUE):
    """``np.var``, two passes: the mean m' (:func:`expansions.mean`), then the canonical tree of the
    squared deviations ``(x_i - m')^2`` divided by ``n - ddof``.  Bound :func:`var_bound`:
    ``|v - var| <= g var + c (sum|x_i| / n)^2`` (the mean's error enters squared: no cancellation).
    ``ddof`` (or ``correction``) >= n gives inf or NaN, as NumPy; an empty array NaN."""
    r = _variance(a, axis, ddof, keepdims, correction, mean, where, dtype, "np.var")
    return _out(r, out, "np.var")


@implements(np.std)
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=_NOVALUE, *, where=_NOVALUE, mean=_NOVALUE,
        correction=_NOVALUE):
    """``np.std``: the square root of :func:`var` (``bounds.sqrt(R, fmt)``, e_s).  With E the bound of
    var (:func:`var_bound`) and var > 0, ``|s - std| <= ((1 + E / var)(1 + e_s) - 1) std``
    (``|sqrt(1 + r) - 1| <= |r|``); for var = 0, ``s <= sqrt(E)(1 + e_s)``."""
    r = unary("sqrt", _variance(a, axis, ddof, keepdims, correction, mean, where, dtype, "np.std"))
    return _out(r, out, "np.std")


# ----------------------------------------------------------------------------------------------
# order statistics


def _rows_last(x: ExpansionArray, axis):
    """x with the axes of ``axis`` (None: all) flattened into one last axis (C order), and the shape of
    the result with those axes kept as ones."""
    axes = normalize_axes(axis, x.ndim)
    kept = [a for a in range(x.ndim) if a not in axes]
    xp = xp_of(x.terms)
    t = xp.ascontiguousarray(xp.transpose(x.terms, kept + list(axes) + [x.ndim]))
    rest = tuple(x.shape[a] for a in kept)
    kept_shape = tuple(1 if a in axes else x.shape[a] for a in range(x.ndim))
    return ExpansionArray(t.reshape(rest + (_count(x, axis), x.nterms))), kept_shape


def _nan_rows(s: ExpansionArray, r: ExpansionArray) -> ExpansionArray:
    """r, NaN where the sorted rows s (NaN last) hold a NaN."""
    xp = xp_of(s.terms)
    bad = xp.asarray(isnan(ExpansionArray(s.terms[..., -1, :])))
    if not bool(bad.any()):
        return r
    return where(bad, np.nan, r)


def _finish(r, kept_shape, keepdims, out, what):
    return _out(r.reshape(kept_shape) if keepdims else r, out, what)


@implements(np.median)
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """``np.median``: the exact sort, then the middle element (odd n: exact) or the mean of the two middle
    ones, ``(s_k + s_(k+1)) * 0.5`` (one safe addition, within ``e_a`` relative to the exact median; the
    halving exact unless a term falls below the underflow threshold).  A slice with a NaN gives NaN; an
    empty one NaN with NumPy's RuntimeWarning."""
    x = _check(a, "np.median")
    y, kept_shape = _rows_last(x, axis)
    n = y.shape[-1]
    if n == 0:
        warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=2)
        t = xp_of(y.terms).zeros(y.shape[:-1] + (y.nterms,), dtype=y.dtype)
        t[..., 0] = np.nan
        r = ExpansionArray(t)
    else:
        s = _sort_axis(y, -1, None, None, "np.median")[0]
        k = (n - 1) // 2
        r = ExpansionArray(s.terms[..., k, :].copy())
        if n % 2 == 0:
            r = binary("mul", binary("add", r, ExpansionArray(s.terms[..., k + 1, :])), 0.5)
        r = _nan_rows(s, r)
    return _finish(r, kept_shape, keepdims, out, "np.median")


def _weight(g: Fraction, like: ExpansionArray) -> ExpansionArray:
    """The exact rational g correctly rounded to like's R terms (exact where they hold it)."""
    w = _array(g, terms=like.nterms, dtype=like.dtype.name)
    return w if like.device == "cpu" else w.to_device(like.device)


def _quantile(x, qs, axis, method, keepdims, out, what, others):
    """The quantiles ``qs`` (exact rationals in [0, 1], a NumPy object array of q's shape)."""
    _refuse(what, **others)
    if method != "linear":
        raise TypeError(f"{what}: method={method!r} is not supported for ExpansionArray operands (only 'linear')")
    x = _check(x, what)
    y, kept_shape = _rows_last(x, axis)
    n = y.shape[-1]
    if n == 0:
        raise IndexError(f"{what}: index -1 is out of bounds for axis 0 with size 0")
    s = _sort_axis(y, -1, None, None, what)[0]
    xp = xp_of(s.terms)
    results = []
    for q in qs.reshape(-1):
        h = q * (n - 1)
        lo = math.floor(h)
        g = h - lo
        a = ExpansionArray(s.terms[..., lo, :].copy())
        if g == 0:
            r = a
        else:
            b = ExpansionArray(s.terms[..., lo + 1, :])
            d = binary("sub", b, a)
            if g < Fraction(1, 2):
                r = binary("add", a, binary("mul", _weight(g, a), d))
            else:
                r = binary("sub", b, binary("mul", _weight(1 - g, a), d))
            infinite = xp.asarray(isinf(a)) | xp.asarray(isinf(b))
            if bool(infinite.any()):  # the limit: the infinite end (NaN between -inf and inf)
                r = where(infinite, binary("add", a, b), r)
        results.append(_nan_rows(s, r).terms)
    t = xp.stack(results).reshape(qs.shape + y.shape[:-1] + (x.nterms,))
    r = ExpansionArray(t)
    if keepdims:
        r = r.reshape(qs.shape + kept_shape)
    return _out(r, out, what)


def _fractions(q, scale, what, name):
    if isinstance(q, ExpansionArray):
        raise TypeError(f"{what}: q must be floats (an ExpansionArray q is not supported)")
    a = np.asarray(q)
    if a.dtype.kind not in "iuf":
        raise TypeError(f"{what}: q must be real numbers, got {a.dtype}")
    qs = np.empty(a.shape, dtype=object)
    for i, v in np.ndenumerate(a):
        f = Fraction(int(v)) if a.dtype.kind in "iu" else Fraction(float(v))
        if not 0 <= f <= scale:
            raise ValueError(f"{name} must be in the range [0, {scale}]")
        qs[i] = f / scale
    return qs


_QUANTILE_BOUND = """the exact sort s, the virtual index h = q (n - 1) computed exactly (a rational; NumPy
    computes it in float64), lo = floor(h), g = h - lo; the result is s_lo for g = 0, else
    ``s_lo + g (s_(lo+1) - s_lo)`` for g < 1/2 and ``s_(lo+1) - (1 - g)(s_(lo+1) - s_lo)`` otherwise (NumPy's
    "linear" formula), the weight w (g or 1 - g) rounded correctly to R terms (relative error
    ``e_w <= 2^(-(p-1)R)``, 0 where R terms hold it).  Bound:
    ``|result - exact| <= e_a |exact| + (1 + e_a) gamma w |s_(lo+1) - s_lo|``,
    ``gamma = (1 + e_a)(1 + mu)(1 + e_w) - 1``.  A slice with a NaN gives NaN; an empty one IndexError.
    Infinities give the limit where NumPy's formula gives NaN: for g = 0 the result is s_lo itself, and
    for 0 < g < 1 with an infinite s_lo or s_(lo+1) it is ``s_lo + s_(lo+1)`` (that infinity; NaN between
    -inf and inf)."""


@implements(np.quantile)
def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None,
             interpolation=None):
    return _quantile(a, _fractions(q, 1, "np.quantile", "Quantiles"), axis, method, keepdims, out, "np.quantile",
                     {"weights": weights, "interpolation": interpolation})


@implements(np.percentile)
def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None,
               interpolation=None):
    return _quantile(a, _fractions(q, 100, "np.percentile", "Percentiles"), axis, method, keepdims, out,
                     "np.percentile", {"weights": weights, "interpolation": interpolation})


quantile.__doc__ = "``np.quantile`` (method 'linear', the default): " + _QUANTILE_BOUND
percentile.__doc__ = "``np.percentile``: :func:`quantile` at q / 100 (the exact rational): " + _QUANTILE_BOUND


# ----------------------------------------------------------------------------------------------
# sets


@implements(np.unique)
def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *, equal_nan=True,
           sorted=True):  # noqa: A002 - NumPy's name
    """``np.unique`` of the flattened array: the distinct values in increasing order by exact value (NaN last,
    all NaNs one value with ``equal_nan``), exact; ``return_index`` (first occurrences), ``return_inverse``
    (of the input's shape) and ``return_counts`` as NumPy's."""
    if axis is not None:
        raise TypeError("np.unique: axis= is not supported for ExpansionArray operands")
    x = _check(ar, "np.unique")
    s, perm = _sort_axis(x.reshape(-1), 0, None, None, "np.unique")  # stable: equal values keep their order
    xp = xp_of(s.terms)
    n = s.shape[0]
    first = xp.ones(n, dtype=bool)
    if n > 1:
        a, b = ExpansionArray(s.terms[1:]), ExpansionArray(s.terms[:-1])
        same = xp.asarray(compare("eq", a, b))
        if equal_nan:
            nan = xp.asarray(isnan(s))
            same |= nan[1:] & nan[:-1]
        first[1:] = ~same
    starts = xp.flatnonzero(first)
    out = [ExpansionArray(s.terms[starts])]
    if return_index:
        out.append(perm[starts].astype(np.intp))
    if return_inverse:
        inverse = xp.empty(n, dtype=np.intp)
        inverse[perm] = xp.cumsum(first) - 1
        out.append(inverse.reshape(x.shape))
    if return_counts:
        out.append(xp.diff(xp.concatenate([starts, xp.asarray([n])])).astype(np.intp))
    return out[0] if len(out) == 1 else tuple(out)


for _name in ("var", "std", "median", "percentile", "quantile", "diff", "nansum"):
    UNSUPPORTED_HINTS.pop(_name, None)
