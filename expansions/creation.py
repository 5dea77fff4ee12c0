"""Creating expansion arrays: from values (:func:`array`, correctly rounded to R terms), from raw
terms (:func:`from_terms`, :func:`from_dlpack`, no copy), and the allocators (:func:`zeros`,
:func:`ones`, :func:`full`, :func:`empty`, :func:`random`).
"""

from __future__ import annotations

import numpy as np

from . import formats as F
from .arraytype import ExpansionArray, implements
from .backends import check_device, to_numpy, xp_of
from .convert import exact_scalar_for, expansion_of_exact, round_terms, terms_from_floats
from .generate import random_terms


@implements("array")
def array(obj, terms: int = 2, dtype="float64", device: str = "cpu") -> ExpansionArray:
    """An ExpansionArray from numbers, decimal strings, mpmath numbers, Fractions, nested lists or
    float/int arrays (and from an ExpansionArray, re-rounded to ``terms`` and ``dtype``).

    Each value is correctly rounded to ``terms`` terms: the leading term is the float nearest to
    the value, each next term the float nearest to what remains, so the terms are ulp-nonoverlapping.
    Floats are represented exactly whenever ``terms`` suffice (a float64 needs 3 float32 terms).
    Signs: a zero value's leading term carries the input's sign (also for a negative value that
    underflows), every later zero term is +0.0; beyond the format's range the result is
    ``(±inf, 0, ..., 0)``; every NaN becomes the canonical quiet NaN.  An ExpansionArray of the same
    dtype keeps its terms (a copy, padded with zeros to more terms); to fewer terms or another dtype
    its exact value is rounded as above.  Complex values and unknown objects are a TypeError.
    """
    R = F.check_terms(terms)
    dt = F.canonical_dtype(dtype)
    check_device(device)
    fmt = F.format_of(dt)
    if isinstance(obj, ExpansionArray):
        if obj.nterms == R and obj.dtype == dt:
            return obj.to_device(device).copy()
        if obj.dtype == dt and R > obj.nterms:
            t = to_numpy(obj.terms)
            pad = np.zeros(t.shape[:-1] + (R - obj.nterms,), dtype=dt)
            return ExpansionArray(np.concatenate([t, pad], axis=-1)).to_device(device)
        if obj.dtype == dt and R < obj.nterms:  # fewer terms: vectorized, the exact path for the rest
            t = to_numpy(obj.terms)
            flat = t.reshape(-1, obj.nterms)
            out, done = round_terms(flat, R)
            if not done.all():
                out[~done] = _round_objects(ExpansionArray(flat[~done]).to_decimal(), R, dt, fmt)
            return ExpansionArray(out.reshape(t.shape[:-1] + (R,))).to_device(device)
        obj = obj.to_decimal()  # another dtype: the exact value (signed zeros kept), rounded
    if xp_of(obj) is not np:
        obj = obj.get()
    if isinstance(obj, np.ndarray) and obj.dtype.kind not in "biufOUS":
        raise TypeError(f"cannot convert an array of dtype {obj.dtype} to expansions (real numbers only)")
    if isinstance(obj, np.ndarray) and obj.dtype.kind == "f" and obj.dtype.itemsize <= 8:
        return ExpansionArray(terms_from_floats(obj, R, dt)).to_device(device)
    a = np.asarray(obj, dtype=object) if not isinstance(obj, np.ndarray) else obj.astype(object)
    return ExpansionArray(_round_objects(a, R, dt, fmt)).to_device(device)


def _round_objects(a, R: int, dt, fmt):
    """Terms, shape a.shape + (R,), of the values of an array (or a scalar), each correctly rounded."""
    a = np.asarray(a, dtype=object)
    flat = a.reshape(-1)
    out = np.zeros((flat.size, R), dtype=dt)
    for i, v in enumerate(flat):
        if isinstance(v, ExpansionArray):
            raise TypeError("expansions.array: a sequence of ExpansionArrays is not a value; use "
                            "expansions.stack or expansions.concatenate")
        out[i] = expansion_of_exact(exact_scalar_for(v, R, fmt), R, fmt)
    return out.reshape(a.shape + (R,))


def from_terms(terms) -> ExpansionArray:
    """Wrap a raw (..., R) array of float64 or float32 terms (NumPy or CuPy) as it is, without a copy
    (a C-contiguous copy is made only when the array is not C-contiguous).  The terms need not be
    ulp-nonoverlapping: :func:`renormalize` makes them so."""
    xp = xp_of(terms)
    if xp is np:
        terms = np.asarray(terms)
    if terms.ndim < 1:
        raise ValueError("terms must have at least one axis: the last axis holds the R terms")
    F.check_terms(terms.shape[-1])
    F.canonical_dtype(terms.dtype)
    if not terms.flags.c_contiguous:
        terms = xp.ascontiguousarray(terms)
    return ExpansionArray(terms)


def from_dlpack(obj) -> ExpansionArray:
    """Wrap a DLPack-capable (..., R) float64/float32 terms array (NumPy, CuPy, PyTorch, JAX, or an
    ExpansionArray) without a copy, like :func:`from_terms`: CPU memory becomes a NumPy array, CUDA
    memory a CuPy array."""
    if not hasattr(obj, "__dlpack_device__"):
        raise TypeError(f"{type(obj).__name__} does not support the DLPack protocol (__dlpack_device__)")
    kind = int(obj.__dlpack_device__()[0])
    if kind in (1, 3):  # kDLCPU, kDLCUDAHost
        terms = np.from_dlpack(obj)
    elif kind in (2, 13):  # kDLCUDA, kDLCUDAManaged
        import cupy

        terms = cupy.from_dlpack(obj)
    else:
        raise ValueError(f"DLPack device type {kind} is neither CPU nor CUDA")
    return from_terms(terms)


def _alloc(shape, R, dtype, device, fill):
    R = F.check_terms(R)
    dt = F.canonical_dtype(dtype)
    check_device(device)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    t = np.zeros(shape + (R,), dtype=dt) if fill is None else fill(shape, R, dt)
    return ExpansionArray(t).to_device(device)


def zeros(shape, terms: int = 2, dtype="float64", device: str = "cpu") -> ExpansionArray:
    return _alloc(shape, terms, dtype, device, None)


def empty(shape, terms: int = 2, dtype="float64", device: str = "cpu") -> ExpansionArray:
    """Like :func:`zeros` (terms are initialised: an expansion of garbage would not be one)."""
    return _alloc(shape, terms, dtype, device, None)


def full(shape, value, terms: int = 2, dtype="float64", device: str = "cpu") -> ExpansionArray:
    v = array(value, terms=terms, dtype=dtype)
    if v.ndim != 0:
        raise ValueError("full() needs a scalar value")
    return _alloc(shape, terms, dtype, device,
                  lambda s, R, dt: np.ascontiguousarray(np.broadcast_to(v.terms, s + (R,))))


def ones(shape, terms: int = 2, dtype="float64", device: str = "cpu") -> ExpansionArray:
    return full(shape, 1, terms=terms, dtype=dtype, device=device)


def random(shape, terms: int = 2, dtype="float64", seed=None, device: str = "cpu",
           exponent_range=(-8, 8), max_gap: int = 4, **options) -> ExpansionArray:
    """Random ulp-nonoverlapping expansions (see :func:`expansions.generate.random_terms`): leading
    exponents uniform in ``exponent_range``, each next term ``p + g`` binades lower with ``g``
    uniform in ``0..max_gap``; options ``p_ulp``, ``p_zero``, ``same_sign``, ``min_exponent``.  Not
    all are double words at R = 2 (``g = 0`` gives ``ulp/2 <= |x_1| < ulp(x_0)``), and ``p_zero`` puts
    zeros before nonzero terms: the operations renormalize such operands where their proofs need it
    (docs/guide/operations.md, "Operands the proofs take")."""
    R = F.check_terms(terms)
    dt = F.canonical_dtype(dtype)
    check_device(device)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    t = random_terms(shape, R, dt.name, seed=seed, exponent_range=exponent_range, max_gap=max_gap, **options)
    return ExpansionArray(np.ascontiguousarray(t)).to_device(device)
