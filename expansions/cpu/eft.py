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
    same exact error whenever it is representable and no partial product overflows; where the
    error falls below the smallest subnormal, or the product is within a factor 2**-52 of the
    overflow threshold, the two may differ.
    """
    if a.dtype == np.float32:
        exact = a.astype(np.float64) * b.astype(np.float64)  # exact: 24 + 24 bits <= 53
        p = exact.astype(np.float32)
        e = (exact - p.astype(np.float64)).astype(np.float32)
        return p, e
    p = a * b
    # an operand above 2**995 is split scaled down by 2**-28, the other scaled up by 2**28:
    # the product is unchanged and exact (if both are that large, the product overflows anyway)
    big_a, big_b = np.abs(a) > _BIG, np.abs(b) > _BIG
    a2 = np.where(big_a, a * _DOWN, np.where(big_b, a * _UP, a))
    b2 = np.where(big_b, b * _DOWN, np.where(big_a, b * _UP, b))
    ah, al = _split64(a2)
    bh, bl = _split64(b2)
    e = (((ah * bh - p) + ah * bl) + al * bh) + al * bl
    return p, e


def _split64(a):
    """Veltkamp's splitting: ``a = hi + lo`` with hi and lo of at most 26 significant bits
    (exact for ``|a| <= 2**995``; above, the splitting constant's product may overflow)."""
    c = a * _SPLITTER64
    hi = c - (c - a)
    lo = a - hi
    return hi, lo


_BIG = np.float64(2.0**995)
_DOWN = np.float64(2.0**-28)
_UP = np.float64(2.0**28)
