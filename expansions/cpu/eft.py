"""Error-free transforms on NumPy arrays, element-wise; each mirrors ``expansions/cuda/eft.cuh``.

NumPy performs every float64 and float32 operation with one IEEE rounding to nearest even and keeps
subnormals, so these are the same operations, in the same order, as the kernels' ``__dadd_rn`` etc.
"""

from __future__ import annotations

import numpy as np

_SPLITTER64 = np.float64(134217729.0)  # 2**27 + 1: Veltkamp's splitting constant for p = 53


def two_sum(a, b):
    """Knuth's 2Sum: ``s = RN(a+b)``, ``e = a + b - s`` exactly (6 operations, no precondition)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


def fast_two_sum(a, b):
    """Dekker's Fast2Sum: ``s = RN(a+b)``, ``e = a + b - s`` exactly when ``|a| >= |b|``."""
    s = a + b
    z = s - a
    e = b - z
    return s, e


def two_prod(a, b):
    """``p = RN(a*b)``, ``e = RN(a*b - p)``: the result of 2ProdFMA (the kernels use ``__fma_rn``).

    float32: the product of two float32 numbers is exact in float64, so ``e`` is the float64
    difference rounded once to float32, which is exactly what the FMA returns, everywhere.
    float64: NumPy has no vector FMA, so Dekker's product with Veltkamp's splitting computes the
    same exact error whenever it is representable and the operands are below 2**996 in magnitude
    (the splitting overflows above); near underflow and overflow the two may differ.
    """
    if a.dtype == np.float32:
        exact = a.astype(np.float64) * b.astype(np.float64)  # exact: 24 + 24 bits <= 53
        p = exact.astype(np.float32)
        e = (exact - p.astype(np.float64)).astype(np.float32)
        return p, e
    p = a * b
    ah, al = _split64(a)
    bh, bl = _split64(b)
    e = (((ah * bh - p) + ah * bl) + al * bh) + al * bl
    return p, e


def _split64(a):
    """Veltkamp's splitting: ``a = hi + lo`` with hi and lo of at most 26 significant bits."""
    c = a * _SPLITTER64
    hi = c - (c - a)
    lo = a - hi
    return hi, lo
