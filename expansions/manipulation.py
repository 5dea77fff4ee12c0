"""NumPy's array manipulation for ExpansionArrays: shapes, joining, selection, conversions.

Every function here moves or copies whole expansions (the (..., R) terms travel together, the term
axis stays last), so all of them are **exact**; they run with the array module of the terms (NumPy on
the CPU, CuPy on the GPU) and never move values between devices.  Operands of different formats are
promoted exactly to the widest one, as the arithmetic does (:func:`expansions.operations.operands`).
The views NumPy returns (``transpose``, ``swapaxes``, ``squeeze``, ``expand_dims``, ``broadcast_to``)
are views of the terms here too.

Two functions round: :func:`astype` to a narrower format (fewer terms, or float32 terms from float64
ones) rounds each value correctly, through its exact value on the host (:func:`expansions.array`'s
rounding; a host round trip, O(R^2) big-integer work per element), and :func:`tolist` returns exact
Python values (Fractions, or mpmath numbers).
"""

from __future__ import annotations

import numpy as np

from . import formats as F
from .arraytype import HANDLED, ExpansionArray, implements, traced
from .backends import xp_of
from .numpy_protocol import write_out
from .operations import _as_format
from .promote import operand_terms
from .reduce import normalize_axes as _normalize_axes

__all__ = ["transpose", "swapaxes", "squeeze", "expand_dims", "ravel", "moveaxis", "tolist", "astype",
           "concatenate", "stack", "where", "take", "broadcast_to", "zeros_like", "ones_like", "full_like",
           "empty_like", "common_format"]


def _check(x, what):
    if not isinstance(x, ExpansionArray):
        raise TypeError(f"{what} expects an ExpansionArray, got {type(x).__name__}")
    return x


def _write(out, r, what):
    return r if out is None else write_out(out, r, what)


# ----------------------------------------------------------------------------------------------
# shapes (views of the terms, the term axis kept last)


@implements(np.transpose)
def transpose(x, axes=None, *more):
    """``np.transpose``: the axes permuted (reversed by default); a view of the terms.  The method
    accepts ``x.transpose(1, 0)`` as NumPy does."""
    _check(x, "transpose")
    if more:
        axes = (axes,) + more
    if axes is None or axes == ():
        axes = tuple(range(x.ndim))[::-1]
    axes = _normalize_axes(axes, x.ndim, keep_order=True)
    if len(axes) != x.ndim:
        raise ValueError(f"axes {axes} don't match an array of {x.ndim} dimensions")
    return ExpansionArray(x.terms.transpose(axes + (x.ndim,)))


@implements(np.swapaxes)
def swapaxes(x, axis1, axis2):
    """``np.swapaxes``; a view of the terms."""
    _check(x, "swapaxes")
    a1, = _normalize_axes(axis1, x.ndim)
    a2, = _normalize_axes(axis2, x.ndim)
    return ExpansionArray(xp_of(x.terms).swapaxes(x.terms, a1, a2))


@implements(np.moveaxis)
def moveaxis(x, source, destination):
    """``np.moveaxis``; a view of the terms."""
    _check(x, "moveaxis")
    src = _normalize_axes(tuple(np.atleast_1d(source).tolist()), x.ndim, keep_order=True)
    dst = _normalize_axes(tuple(np.atleast_1d(destination).tolist()), x.ndim, keep_order=True)
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination must have the same number of elements")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return ExpansionArray(x.terms.transpose(tuple(order) + (x.ndim,)))


@implements(np.squeeze)
def squeeze(x, axis=None):
    """``np.squeeze``: axes of length one removed (all of them, or those of ``axis``)."""
    _check(x, "squeeze")
    axes = tuple(a for a in range(x.ndim) if x.shape[a] == 1) if axis is None else _normalize_axes(axis, x.ndim)
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return ExpansionArray(x.terms.reshape(tuple(d for a, d in enumerate(x.shape) if a not in axes) + (x.nterms,)))


@implements(np.expand_dims)
def expand_dims(x, axis):
    """``np.expand_dims``: axes of length one inserted at ``axis`` (an int or a tuple)."""
    _check(x, "expand_dims")
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    nd = x.ndim + len(axes)
    axes = _normalize_axes(axes, nd)
    it = iter(x.shape)
    shape = tuple(1 if a in axes else next(it) for a in range(nd))
    return ExpansionArray(x.terms.reshape(shape + (x.nterms,)))


@implements(np.ravel)
def ravel(x, order="C"):
    """``np.ravel`` (C order only): the elements as a 1-D array."""
    _check(x, "ravel")
    if order not in ("C", "K", "A"):
        raise ValueError("ravel: only order='C' is supported for ExpansionArrays")
    return ExpansionArray(x.terms.reshape(-1, x.nterms))


@implements(np.broadcast_to)
def broadcast_to(x, shape, subok=False):
    """``np.broadcast_to``: a read-only view (NumPy) of the terms broadcast to ``shape``."""
    _check(x, "broadcast_to")
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return ExpansionArray(xp_of(x.terms).broadcast_to(x.terms, shape + (x.nterms,)))


# ----------------------------------------------------------------------------------------------
# conversions


def tolist(x, kind: str = "fraction"):
    """The values as nested Python lists (a scalar for a 0-d array), exactly: ``kind='fraction'``
    (the default) gives :class:`fractions.Fraction` values, ``kind='mpf'`` mpmath numbers (exact,
    whatever mpmath's working precision).  A zero gives the integer-valued Fraction 0, except a
    negative zero, which is the float ``-0.0``; infinities and NaN are the floats inf, -inf, nan."""
    _check(x, "tolist")
    if kind not in ("fraction", "mpf"):
        raise ValueError("tolist: kind must be 'fraction' or 'mpf'")
    vals = x.to_fraction() if kind == "fraction" else x.to_mpmath()
    t0 = x.terms[..., 0]
    negzero = xp_of(t0).signbit(t0) & (x.terms == 0).all(axis=-1)
    negzero = negzero.get() if hasattr(negzero, "get") else np.asarray(negzero)
    if x.ndim == 0:
        return -0.0 if negzero else vals
    vals = vals.copy()
    vals[negzero] = -0.0
    return vals.tolist()


def astype(x, dtype=None, terms=None):
    """x in the format (``terms``, ``dtype``) (each defaulting to x's own).

    A format at least as wide (as many terms or more, float64 terms from float32 ones) is exact
    (:func:`expansions.operations._as_format`, on the device).  A narrower one (fewer terms, or
    float32 terms from float64 ones) rounds each value correctly (nearest leading term, then nearest
    next term, ...: :func:`expansions.array`'s rounding) from its exact value, computed on the host."""
    _check(x, "astype")
    R = x.nterms if terms is None else F.check_terms(terms)
    dt = x.dtype if dtype is None else F.canonical_dtype(dtype)
    if R >= x.nterms and (dt == x.dtype or dt == np.float64):
        return _as_format(x, R, dt).copy() if (R, dt) == (x.nterms, x.dtype) else _as_format(x, R, dt)
    return HANDLED["array"](x.to_fraction(), terms=R, dtype=dt.name, device=x.device)


# ----------------------------------------------------------------------------------------------
# joining and selection


def common_format(values):
    """The (R, dtype, device) every value converts to exactly: the widest format of the expansions
    among ``values`` (float64 if any has float64 terms), on their common device."""
    ex = [v for v in values if isinstance(v, ExpansionArray)]
    if not ex:
        raise TypeError("at least one operand must be an ExpansionArray")
    devices = {v.device for v in ex}
    if len(devices) > 1:
        raise ValueError(f"operands on different devices: {sorted(devices)}")
    dt = np.dtype(np.float64) if any(v.dtype == np.float64 for v in ex) else np.dtype(np.float32)
    return max(v.nterms for v in ex), dt, ex[0].device


def _no_dtype(what, dtype):
    if dtype is not None:
        raise TypeError(f"{what}: dtype= is not supported (operands are promoted exactly to the widest format; "
                        "use astype)")


def _in_format(v, R, dt, device):
    if isinstance(v, ExpansionArray):
        return _as_format(v, R, dt).terms
    return operand_terms(v, R, dt, device)


@implements(np.concatenate)
def concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    """``np.concatenate`` (``axis=None`` flattens first); operands promoted exactly to the widest
    format (:func:`common_format`)."""
    _no_dtype("np.concatenate", dtype)
    arrays = list(arrays)
    R, dt, device = common_format(arrays)
    ts = [_in_format(v, R, dt, device) for v in arrays]
    xp = xp_of(ts[0])
    if axis is None:
        ts, axis = [t.reshape(-1, R) for t in ts], 0
    nd = ts[0].ndim - 1
    if nd == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    axis, = _normalize_axes(axis, nd)
    return _write(out, ExpansionArray(xp.concatenate(ts, axis=axis)), "np.concatenate")


@implements(np.stack)
def stack(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    """``np.stack``: a new axis ``axis``; operands promoted exactly to the widest format."""
    _no_dtype("np.stack", dtype)
    arrays = list(arrays)
    R, dt, device = common_format(arrays)
    ts = [_in_format(v, R, dt, device) for v in arrays]
    axis, = _normalize_axes(axis, ts[0].ndim)
    return _write(out, ExpansionArray(xp_of(ts[0]).stack(ts, axis=axis)), "np.stack")


@implements(np.where)
def where(condition, x=None, y=None):
    """``np.where(condition, x, y)``: x where the (boolean, NumPy or CuPy on the operands' device)
    condition holds, else y, broadcast together; x and y promoted exactly to the wider format.  The
    one-argument form is NumPy's on the condition."""
    if traced(condition, x, y):
        return HANDLED["traced"]("where", condition, x, y)
    if x is None and y is None:
        if isinstance(condition, ExpansionArray):
            raise TypeError("np.where(x) of an ExpansionArray: use np.nonzero(x != 0)")
        return xp_of(condition).nonzero(condition)
    R, dt, device = common_format([x, y])
    xt, yt = _in_format(x, R, dt, device), _in_format(y, R, dt, device)
    xp = xp_of(xt)
    c = xp.asarray(condition, dtype=bool)
    shape = np.broadcast_shapes(tuple(c.shape), tuple(xt.shape[:-1]), tuple(yt.shape[:-1]))
    return ExpansionArray(xp.where(xp.broadcast_to(c, shape)[..., None], xt, yt))


@implements(np.take)
def take(x, indices, axis=None, out=None, mode="raise"):
    """``np.take`` (mode='raise'): the elements at ``indices`` along ``axis`` (of the flattened array
    when None)."""
    _check(x, "take")
    if mode != "raise":
        raise TypeError("take: only mode='raise' is supported for ExpansionArrays")
    xp = xp_of(x.terms)
    t = x.terms.reshape(-1, x.nterms) if axis is None else x.terms
    axis = 0 if axis is None else _normalize_axes(axis, x.ndim)[0]
    idx = xp.asarray(indices)
    n = t.shape[axis]
    if idx.size and bool(((idx < -n) | (idx >= n)).any()):
        raise IndexError(f"take: index out of bounds for axis {axis} with size {n}")
    return _write(out, ExpansionArray(xp.take(t, idx, axis=axis)), "np.take")


def _like(x, fill, dtype=None, shape=None, terms=None):
    _check(x, "*_like")
    R = x.nterms if terms is None else F.check_terms(terms)
    dt = x.dtype if dtype is None else F.canonical_dtype(dtype)
    shape = x.shape if shape is None else ((shape,) if isinstance(shape, (int, np.integer)) else tuple(shape))
    xp = xp_of(x.terms)
    t = xp.zeros(shape + (R,), dtype=dt)
    if fill is not None:
        t[...] = xp.asarray(operand_terms(fill, R, dt, "cpu")) if xp is not np else operand_terms(fill, R, dt, "cpu")
    return ExpansionArray(t)


@implements(np.zeros_like)
def zeros_like(x, dtype=None, order="K", subok=True, shape=None, *, device=None, terms=None):
    """``np.zeros_like``: zeros of x's shape and format (``dtype``, ``terms``, ``shape`` override them)."""
    return _like(x, None, dtype, shape, terms)


@implements(np.empty_like)
def empty_like(x, dtype=None, order="K", subok=True, shape=None, *, device=None, terms=None):
    """``np.empty_like``: as :func:`zeros_like` (the terms are initialised)."""
    return _like(x, None, dtype, shape, terms)


@implements(np.ones_like)
def ones_like(x, dtype=None, order="K", subok=True, shape=None, *, device=None, terms=None):
    """``np.ones_like``: ones of x's shape and format."""
    return _like(x, 1, dtype, shape, terms)


@implements(np.full_like)
def full_like(x, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None, terms=None):
    """``np.full_like``: ``fill_value`` (promoted exactly to the format: a value the R terms cannot
    hold exactly is a ValueError) in x's shape and format."""
    return _like(x, fill_value, dtype, shape, terms)


HANDLED["tolist"] = tolist
HANDLED["astype"] = astype
HANDLED[np.reshape] = lambda x, shape=None, order="C", **kw: x.reshape(shape if shape is not None
                                                                           else kw["newshape"])
HANDLED[np.copy] = lambda x, order="K", subok=False: x.copy()
HANDLED["flatten"] = lambda x, order="C": ExpansionArray(x.terms.reshape(-1, x.nterms).copy())
