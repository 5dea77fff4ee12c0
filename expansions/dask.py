"""Dask arrays of expansions: the same arrays spread over chunks, processes and machines, with
reductions that give the same bits as on one device.

    import expansions as ex, expansions.dask as exd
    x = exd.random((10**8,), terms=4, seed=1, chunks=10**6)     # lazily, one block per chunk
    y = exd.from_array(ex.random((10**8,), terms=4, seed=2), chunks=10**6)
    d = exd.dot(x, y).compute()       # the bits of ex.dot(x.compute(), y.compute()), any chunking

An :class:`ExpansionDaskArray` holds a ``dask.array`` of terms, shape S + (R,), whose blocks are the
terms of ExpansionArrays (NumPy blocks on the CPU, CuPy blocks on a GPU): the term axis is always one
chunk, chunks run along the logical axes only.  Element-wise operations and any function of the
library (``sqrt``, ``absolute``, fused programs, ...) run block by block (:meth:`map_blocks`).

Reproducible reductions.  ``expansions.sum``, and ``dot`` and ``matmul`` with ``method="elementwise"``
(the products here always use that method; the single-device default may be the slice product of
:mod:`expansions.slices`, whose digits need whole rows and columns) evaluate the canonical pairwise
tree (adjacent pairs, odd last carried; :mod:`expansions.reduce`), whose node at level L and index j
covers the aligned elements [j 2^L, (j+1) 2^L) of the reduced axis.  Here each chunk covering
[a, b) of that axis is cut into maximal aligned pieces (a piece at the end of the axis may stop at
n), each reduced by the library inside its chunk (its local tree is the global subtree: same
alignment), and the pieces of all chunks are combined bottom-up in the canonical order with the
same node ``renormalize(add_safe(l, r))``.  So a sum or dot gives the same bits whatever the
chunking, the number of workers and the scheduler (threads, processes, ``distributed``), with the
bounds of :func:`expansions.bounds.sum_tree` and :func:`expansions.bounds.dot`.  A worker that dies
is handled by Dask (the task is recomputed, or the computation fails with Dask's error): every task
is a deterministic function of its inputs, so no wrong bits can come back.

Needs the ``dask`` extra (``pip install 'expansions[dask]'``: dask and distributed).
"""

from __future__ import annotations

import math
from numbers import Number

import dask
import dask.array as da
import numpy as np

from . import dispatch
from . import formats as F
from .arraytype import ExpansionArray
from .backends import for_terms, xp_of
from .creation import array as _array
from .generate import random_terms
from .operations import absolute, binary, negative, unary
from .reduce import dot as _dot
from .reduce import matmul as _matmul
from .reduce import sum as _sum

__all__ = ["ExpansionDaskArray", "from_array", "from_floats", "from_terms", "random", "from_npy_stack", "sum", "dot",
           "matmul"]


class ExpansionDaskArray:
    """A Dask array of expansions (see the module docstring): ``terms`` is the dask array of shape
    ``shape + (R,)``; ``chunks`` are those of the logical axes."""

    __slots__ = ("terms",)

    def __init__(self, terms: da.Array):
        if not isinstance(terms, da.Array):
            raise TypeError(f"terms must be a dask array, got {type(terms).__name__}")
        if terms.ndim < 1:
            raise ValueError("terms must have at least one axis: the last axis holds the R terms")
        F.check_terms(terms.shape[-1])
        F.canonical_dtype(terms.dtype)
        if len(terms.chunks[-1]) != 1:
            raise ValueError(f"the term axis must be one chunk (got chunks {terms.chunks[-1]}): an expansion's "
                             "terms are never split; chunk the logical axes only")
        self.terms = terms

    nterms = property(lambda self: int(self.terms.shape[-1]))
    dtype = property(lambda self: np.dtype(self.terms.dtype))
    shape = property(lambda self: tuple(self.terms.shape[:-1]))
    ndim = property(lambda self: self.terms.ndim - 1)
    size = property(lambda self: int(math.prod(self.shape)))
    chunks = property(lambda self: self.terms.chunks[:-1])
    npartitions = property(lambda self: self.terms.npartitions)

    def __repr__(self):
        return (f"ExpansionDaskArray(shape={self.shape}, terms={self.nterms}, dtype='{self.dtype.name}', "
                f"chunks={self.chunks})")

    def compute(self, **kwargs) -> ExpansionArray:
        """The values as one ExpansionArray (``dask.compute`` options pass through)."""
        (t,) = dask.compute(self.terms, **kwargs)
        return ExpansionArray(xp_of(t).ascontiguousarray(t))

    def persist(self, **kwargs) -> ExpansionDaskArray:
        return ExpansionDaskArray(self.terms.persist(**kwargs))

    def rechunk(self, chunks) -> ExpansionDaskArray:
        """The same values with other chunks along the logical axes (the term axis stays one chunk)."""
        chunks = (chunks,) * self.ndim if isinstance(chunks, (int, str)) else tuple(chunks)
        return ExpansionDaskArray(self.terms.rechunk(chunks + (-1,)))

    def to_npy_stack(self, dirname: str, axis: int = 0):
        """Write the terms as one ``.npy`` file per chunk along ``axis`` (``dask.array.to_npy_stack``);
        :func:`from_npy_stack` reads them back lazily."""
        da.to_npy_stack(dirname, self.terms, axis=axis)

    def map_blocks(self, fn, *others, **kwargs) -> ExpansionDaskArray:
        """``fn(block, *other_blocks, **kwargs)`` on every block, each an ExpansionArray (``others``:
        ExpansionDaskArrays of the same shape and chunks, or constants); ``fn`` returns an
        ExpansionArray of its first argument's shape, R and dtype."""
        arrays = [self.terms]
        for o in others:
            if isinstance(o, ExpansionDaskArray):
                _check_pair(self, o)
                arrays.append(o.terms)
        consts = [None if isinstance(o, ExpansionDaskArray) else o for o in others]

        def block(*ts):
            it = iter(ts[1:])
            args = [ExpansionArray(next(it)) if c is None else c for c in consts]
            return fn(ExpansionArray(ts[0]), *args, **kwargs).terms

        return ExpansionDaskArray(da.map_blocks(block, *arrays, dtype=self.dtype, meta=self.terms._meta))

    def _binary(self, op, other, reflected=False):
        if isinstance(other, ExpansionDaskArray) or isinstance(other, (Number, np.number, str)):
            fn = (lambda a, b: binary(op, b, a)) if reflected else (lambda a, b: binary(op, a, b))
            return self.map_blocks(fn, other)
        return NotImplemented

    def __add__(self, o):
        return self._binary("add", o)

    def __radd__(self, o):
        return self._binary("add", o, True)

    def __sub__(self, o):
        return self._binary("sub", o)

    def __rsub__(self, o):
        return self._binary("sub", o, True)

    def __mul__(self, o):
        return self._binary("mul", o)

    def __rmul__(self, o):
        return self._binary("mul", o, True)

    def __truediv__(self, o):
        return self._binary("div", o)

    def __rtruediv__(self, o):
        return self._binary("div", o, True)

    def __neg__(self):
        return self.map_blocks(negative)

    def __abs__(self):
        return self.map_blocks(absolute)

    def sqrt(self) -> ExpansionDaskArray:
        return self.map_blocks(lambda b: unary("sqrt", b))

    def __matmul__(self, other):
        return matmul(self, other)

    def sum(self, axis=None) -> ExpansionDaskArray:
        return sum(self, axis=axis)

    def dot(self, other) -> ExpansionDaskArray:
        return dot(self, other)


def _check_pair(x: ExpansionDaskArray, y: ExpansionDaskArray):
    if (x.nterms, x.dtype) != (y.nterms, y.dtype):
        raise ValueError(f"mixed formats: {x.nterms} {x.dtype} terms and {y.nterms} {y.dtype} terms (convert one "
                         "explicitly, e.g. x.map_blocks(lambda b: expansions.array(b, terms=..., dtype=...)))")
    if x.shape != y.shape:
        raise ValueError(f"shapes {x.shape} and {y.shape} differ")
    if x.chunks != y.chunks:
        raise ValueError(f"mismatched chunks {x.chunks} and {y.chunks}: rechunk one of them (y.rechunk(x.chunks))")


def _logical_chunks(chunks, ndim):
    if chunks is None:
        return "auto"
    return (chunks,) * ndim if isinstance(chunks, (int, str)) else tuple(chunks)


def from_array(x: ExpansionArray, chunks="auto") -> ExpansionDaskArray:
    """A Dask array of the expansions of ``x`` (an ExpansionArray, NumPy or CuPy terms), chunked along
    its logical axes by ``chunks`` (Dask's forms: an int, a tuple, 'auto')."""
    if not isinstance(x, ExpansionArray):
        raise TypeError(f"from_array expects an ExpansionArray, got {type(x).__name__} (use expansions.array)")
    return from_terms(x.terms, chunks)


def from_terms(terms, chunks="auto") -> ExpansionDaskArray:
    """A Dask array of expansions from a (..., R) array of terms (NumPy, CuPy or dask) without copying
    it; ``chunks`` along the logical axes (a dask input keeps its own chunks when None)."""
    if isinstance(terms, da.Array):
        t = terms if chunks is None else terms.rechunk(_logical_chunks(chunks, terms.ndim - 1) + (-1,))
        return ExpansionDaskArray(t)
    return ExpansionDaskArray(da.from_array(terms, chunks=_logical_chunks(chunks, terms.ndim - 1) + (-1,)))


def from_floats(a, terms: int = 2, dtype="float64", chunks="auto") -> ExpansionDaskArray:
    """Expansions of R terms from a float or integer array (NumPy, CuPy or dask), converted block by
    block on the workers (exactly, as operands are promoted; ``expansions.array`` rules)."""
    R = F.check_terms(terms)
    dt = F.canonical_dtype(dtype)
    src = a if isinstance(a, da.Array) else da.from_array(a, chunks=_logical_chunks(chunks, np.ndim(a)))
    out = src.map_blocks(lambda b: _array(b, terms=R, dtype=dt.name, device="cpu" if xp_of(b) is np else "cuda").terms,
                         new_axis=src.ndim, chunks=src.chunks + ((R,),), dtype=dt)
    return ExpansionDaskArray(out)


def random(shape, terms: int = 2, dtype="float64", seed=0, chunks="auto", device: str = "cpu",
           **options) -> ExpansionDaskArray:
    """Random expansions (:func:`expansions.random`'s distribution), generated block by block: block
    ``i`` (its index tuple) from the seed ``[seed, *i]``, so the same seed and chunks give the same array."""
    R = F.check_terms(terms)
    dt = F.canonical_dtype(dtype)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    template = da.empty(shape + (R,), chunks=_logical_chunks(chunks, len(shape)) + (-1,), dtype=dt)

    def block(t, block_info=None):
        idx = block_info[None]["chunk-location"][:-1]
        out = random_terms(t.shape[:-1], R, dt.name, seed=[int(seed), *idx], **options)
        return out if device == "cpu" else _array(out, terms=R, dtype=dt.name, device=device).terms

    return ExpansionDaskArray(template.map_blocks(block, dtype=dt))


def from_npy_stack(dirname: str) -> ExpansionDaskArray:
    """The array written by :meth:`ExpansionDaskArray.to_npy_stack`, read lazily (memory-mapped)."""
    return ExpansionDaskArray(da.from_npy_stack(dirname, mmap_mode="r"))


# ----------------------------------------------------------------------------------------------
# reproducible reductions: the canonical tree over global indices


def _pieces(a: int, b: int, n: int):
    """The maximal aligned pieces (level L, index j) that cover [a, b) of an axis of length n: aligned
    blocks [j 2^L, (j+1) 2^L) of the tree padded to a power of two, cut at n (a piece may end past b
    only where b == n, the padded leaves being absent)."""
    if n == 0:
        return []
    top = 1 << (n - 1).bit_length()
    end = top if b == n else b
    out = []
    while a < end:
        L = (a & -a).bit_length() - 1 if a else top.bit_length() - 1
        while (1 << L) > end - a:
            L -= 1
        out.append((L, a >> L))
        a += 1 << L
    return out


def _node(a, b):
    be = for_terms(a)
    R = a.shape[-1]
    flat_a, flat_b = a.reshape(-1, R), b.reshape(-1, R)
    with np.errstate(all="ignore"):
        return dispatch.run("add", "safe", be, True, flat_a, flat_b, R).reshape(a.shape)


def _combine(parts: list, n: int, zero):
    """The canonical tree's root from the pieces (L, j, terms) of all chunks, bottom-up in order."""
    if n == 0:
        return zero
    level = {}
    for L, j, t in parts:
        level[(L, j)] = t
    top = max(0, (n - 1).bit_length())
    for L in range(top):
        for (lv, j) in sorted(k for k in level if k[0] == L):
            if (lv, j) not in level:
                continue
            t = level.pop((lv, j))
            # bottom-up, every node of level L is complete: a right child was taken with its left
            # sibling, and a left child's sibling is there or lies beyond n (then it is carried)
            assert j % 2 == 0 and ((L, j + 1) in level or (j + 1) << L >= n), (L, j)
            level[(L + 1, j // 2)] = _node(t, level.pop((L, j + 1))) if (L, j + 1) in level else t
    ((_, t),) = level.items()
    return t


def _tree(chunk_fn, bounds, n, zero_block, out_shape, dtype):
    """Delayed reductions: ``chunk_fn(c, s, e)`` reduces the aligned piece [s, e) inside chunk c (a
    delayed terms array); the pieces are combined by :func:`_combine`."""
    parts = []
    for c, (a, b) in enumerate(bounds):
        for L, j in _pieces(a, b, n):
            s, e = j << L, min((j + 1) << L, n)
            parts.append((L, j, chunk_fn(c, s - a, e - a)))
    root = dask.delayed(_combine)(parts, n, zero_block)
    return da.from_delayed(root, shape=out_shape, dtype=dtype)


def _bounds(chunks):
    edges = np.concatenate([[0], np.cumsum(chunks)]).astype(int).tolist()
    return list(zip(edges[:-1], edges[1:]))


def sum(x: ExpansionDaskArray, axis=None) -> ExpansionDaskArray:  # noqa: A001 - expansions.sum's name
    """The sum over ``axis`` (an int, or None for all elements in C order), bit-identical to
    ``expansions.sum(x.compute(), axis)`` whatever the chunks; the result is a Dask array of the
    other axes (one chunk)."""
    if not isinstance(x, ExpansionDaskArray):
        raise TypeError(f"sum expects an ExpansionDaskArray, got {type(x).__name__}")
    if axis is None:
        if x.ndim != 1:
            t = x.terms if x.size else x.terms.rechunk(-1)  # Dask reshapes no empty array of several chunks
            x = ExpansionDaskArray(t.reshape(-1, x.nterms))
        axis = 0
    axis = int(axis) % max(x.ndim, 1) if x.ndim else 0
    t = x.terms
    other = [k for k in range(x.ndim) if k != axis]
    t = t.transpose(other + [axis, x.ndim]).rechunk({k: -1 for k in range(len(other))})
    n = x.shape[axis]
    out_shape = tuple(x.shape[k] for k in other)
    blocks = t.to_delayed().reshape(-1)

    def piece(c, s, e):
        return dask.delayed(lambda b, s=s, e=e: _sum(ExpansionArray(b[..., s:e, :]), axis=-1).terms)(blocks[c])

    zero = np.zeros(out_shape + (x.nterms,), dtype=x.dtype)
    return ExpansionDaskArray(_tree(piece, _bounds(t.chunks[-2]), n, zero, out_shape + (x.nterms,), x.dtype))


def dot(x: ExpansionDaskArray, y: ExpansionDaskArray) -> ExpansionDaskArray:
    """``expansions.dot(..., method="elementwise")`` of two 1-D arrays (a 0-d result), or a 2-D x with a
    1-D or 2-D y (as :func:`matmul`), bit-identical to that single-device result whatever the chunks
    (x's chunks of the reduced axis must equal y's)."""
    if x.ndim == 1 and y.ndim == 1:
        _check_pair(x, y)
        xb, yb = x.terms.to_delayed().reshape(-1), y.terms.to_delayed().reshape(-1)

        def piece(c, s, e):
            return dask.delayed(lambda a, b, s=s, e=e: _dot(ExpansionArray(a[s:e]), ExpansionArray(b[s:e]),
                                                                      method="elementwise").terms)(
                xb[c], yb[c])

        zero = np.zeros((x.nterms,), dtype=x.dtype)
        return ExpansionDaskArray(_tree(piece, _bounds(x.chunks[0]), x.shape[0], zero, (x.nterms,), x.dtype))
    return matmul(x, y)


def matmul(x: ExpansionDaskArray, y: ExpansionDaskArray) -> ExpansionDaskArray:
    """``x @ y`` for a 2-D x and a 1-D or 2-D y, bit-identical to ``expansions.matmul(x, y,
    method="elementwise")`` on one device;
    x's chunks along its columns must equal y's along its rows (the reduced axis)."""
    if not (isinstance(x, ExpansionDaskArray) and isinstance(y, ExpansionDaskArray)):
        raise TypeError("matmul expects two ExpansionDaskArrays")
    if x.ndim != 2 or y.ndim not in (1, 2):
        raise ValueError(f"matmul: a 2-D x and a 1-D or 2-D y are supported, got {x.shape} and {y.shape}")
    if (x.nterms, x.dtype) != (y.nterms, y.dtype):
        raise ValueError(f"mixed formats: {x.nterms} {x.dtype} and {y.nterms} {y.dtype} terms")
    if x.shape[1] != y.shape[0]:
        raise ValueError(f"matmul: shapes {x.shape} and {y.shape} not aligned")
    if x.chunks[1] != y.chunks[0]:
        raise ValueError(f"mismatched chunks along the reduced axis: {x.chunks[1]} and {y.chunks[0]} (rechunk one)")
    xt = x.terms.rechunk({0: -1})
    yt = y.terms.rechunk({1: -1}) if y.ndim == 2 else y.terms
    xb, yb = xt.to_delayed().reshape(-1), yt.to_delayed().reshape(-1)
    out_shape = (x.shape[0],) + y.shape[1:]

    def piece(c, s, e):
        return dask.delayed(lambda a, b, s=s, e=e: _matmul(ExpansionArray(a[:, s:e]), ExpansionArray(b[s:e]),
                                                                         method="elementwise").terms)(
            xb[c], yb[c])

    zero = np.zeros(out_shape + (x.nterms,), dtype=x.dtype)
    return ExpansionDaskArray(_tree(piece, _bounds(x.chunks[1]), x.shape[1], zero, out_shape + (x.nterms,), x.dtype))
