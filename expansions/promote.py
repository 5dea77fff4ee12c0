"""Exact promotion of the operands of an operation that are not expansions.

An operand that is not an ExpansionArray joins the expansion's format (R terms of its dtype) only
when its value is representable there EXACTLY: its greedy correctly rounded R-term expansion (what
expansions.array gives) must equal it.  Otherwise a ValueError says so and suggests rounding it
explicitly with expansions.array.  Two kinds of value are not binary numbers and are rounded
correctly to R terms instead, as expansions.array does: decimal strings ("0.1") and mpmath
constants (mpmath.pi).  Hexadecimal strings are binary numbers and must be exact.
Devices: a NumPy array (ndim >= 1) never joins a cuda expansion and a CuPy array never joins a cpu
one (no silent transfers); scalars, 0-d NumPy arrays and Python lists are literals and go anywhere.
"""

from __future__ import annotations

import builtins
import math
from fractions import Fraction

import mpmath
import numpy as np

from . import formats as F
from .backends import to_device, to_numpy, xp_of
from .convert import Unsupported, exact_scalar_for, expansion_of_exact, split_to_float32


def inexact(value, R: int, dt: np.dtype, extra: str = ""):
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return ValueError(
        f"{shown}{extra} cannot be represented exactly by {R} {dt.name} terms, and operands are never "
        f"rounded silently: round it explicitly with expansions.array(value, terms={R}, dtype='{dt.name}')"
        f" (or use more terms)")


def _rounding_allowed(v) -> bool:
    """Decimal strings and mpmath constants are rounded correctly to R terms (not binary numbers)."""
    if isinstance(v, str):
        return not v.strip().lower().lstrip("+-").startswith("0x")
    return hasattr(v, "_mpf_") and not isinstance(v, mpmath.mpf)


#: Integers of at most this magnitude are one float64 term.
_EXACT_INT = 2**53


def _scalar_terms(v, R: int, dt: np.dtype) -> list:
    """The R terms of a scalar operand: exact, or rounded where allowed; else ValueError."""
    if dt == np.float64 and (type(v) is float or (type(v) is int and -_EXACT_INT <= v <= _EXACT_INT)):
        return [float(v) if v == v else math.nan] + [0.0] * (R - 1)  # one float64 term holds it (the fast path)
    fmt = F.format_of(dt)
    q = exact_scalar_for(v, R, fmt)
    terms = expansion_of_exact(q, R, fmt)
    if type(q) is Fraction and q != 0 and not _rounding_allowed(v):
        if not all(math.isfinite(t) for t in terms) or \
                builtins.sum((Fraction(t) for t in terms), Fraction(0)) != q:
            raise inexact(v, R, dt)
    return terms


def _object_terms(a: np.ndarray, R: int, dt: np.dtype) -> np.ndarray:
    """Terms of a host array of arbitrary scalars, element by element (exact or allowed rounding)."""
    flat = a.reshape(-1)
    out = np.zeros((flat.size, R), dtype=dt)
    for i, v in enumerate(flat):
        if isinstance(v, (np.ndarray, list, tuple)):
            raise ValueError("ragged nested sequences cannot be operands of an ExpansionArray")
        out[i] = _scalar_terms(v.item() if isinstance(v, np.generic) and v.dtype.kind in "biu" else v, R, dt)
    return out.reshape(a.shape + (R,))


def _check_split(a, ok, R, dt):
    bad = ~ok
    if bool(bad.any()):
        first = to_numpy(a[bad].reshape(-1)[:1])[0].item()
        n = int(bad.sum())
        raise inexact(first, R, dt, f" (and {n - 1} more element(s) of the {a.dtype} operand)" if n > 1 else
                       f" (an element of the {a.dtype} operand)")


def _array_terms(a, R: int, dt: np.dtype):
    """Exact terms (shape a.shape + (R,), same array module as a) of a NumPy or CuPy array."""
    xp = xp_of(a)
    kind, size = a.dtype.kind, a.dtype.itemsize
    out = xp.zeros(a.shape + (R,), dtype=dt)
    if kind == "b" or (kind == "f" and (size <= dt.itemsize or size <= 2)) or \
            (kind in "iu" and (size <= 2 or (size <= 4 and dt == np.float64))):
        lead = out[..., 0]
        lead[...] = a  # exact: the values fit one term (cast in the assignment, no temporary)
        if kind == "f":  # the canonical NaN, whatever its sign and payload (written only where one is)
            nan = xp.isnan(lead)
            if bool(nan.any()):
                lead[nan] = xp.asarray(np.nan, dtype=dt)
        return out
    if kind == "f" and size == 8:  # float64 values into float32 terms: exact only if nothing remains
        out, rest = split_to_float32(a, R)
        _check_split(a, (xp.isfinite(out[..., 0]) | ~xp.isfinite(a)) & (rest == 0), R, dt)
        return out
    if kind in "iu" and size == 8 and dt == np.float64:
        # hi has at most 32 significant bits, lo < 2**32: both exact; their 2Sum is the value's
        # greedy 2-term expansion (s = RN(a), e = a - s)
        hi = (a >> 32) << 32
        hf, lf = hi.astype(np.float64), (a - hi).astype(np.float64)
        s = hf + lf
        bb = s - hf
        out[..., 0] = s
        out[..., 1] = (hf - (s - bb)) + (lf - bb)
        return out
    if kind in "iu":  # large integers into float32 terms: the few that need it one by one
        limit = 1 << F.format_of(dt).p
        small = (a < limit) & (a > -limit) if kind == "i" else (a < limit)
        out[..., 0] = xp.where(small, a, 0).astype(dt)
        if not bool(small.all()):
            big = to_numpy(a[~small])
            tb = _object_terms(np.array([int(v) for v in big], dtype=object), R, dt)
            out[~small] = xp.asarray(tb)
        return out
    if kind == "c":
        raise Unsupported("complex values have no expansion")
    if xp is not np or kind not in "fOUS":
        raise Unsupported(f"cannot use an array of dtype {a.dtype} as an expansion operand")
    return _object_terms(a.astype(object), R, dt)


def operand_terms(v, R: int, dt: np.dtype, device: str):
    """The terms (shape v's shape + (R,), dtype dt, on ``device``) of an operand v that is not an
    expansion, exactly (see the module docstring); Unsupported for a type the expansions do not know."""
    xp = xp_of(v)
    if xp is not np:  # a CuPy array
        if device != "cuda":
            raise ValueError("a CuPy array cannot be an operand of an ExpansionArray on the 'cpu' device (no "
                             "silent device transfers): move one of them explicitly (a.get(), or "
                             "x.to_device('cuda'))")
        return _array_terms(v, R, dt)
    if isinstance(v, np.ndarray):
        if v.ndim == 0:
            v = v[()]
        elif device != "cpu":
            raise ValueError("a NumPy array cannot be an operand of an ExpansionArray on the 'cuda' device (no "
                             "silent device transfers): move it explicitly (cupy.asarray(a), or "
                             "expansions.array(a, terms=..., dtype=..., device='cuda'))")
        else:
            return _array_terms(v, R, dt)
    if isinstance(v, (list, tuple)):
        t = _object_terms(np.array(v, dtype=object), R, dt)
    else:
        t = np.asarray(_scalar_terms(v, R, dt), dtype=dt)
    return to_device(t, device)
