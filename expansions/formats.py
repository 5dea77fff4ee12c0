"""Binary floating-point formats (precision p, exponent range) and what an R-term expansion can carry.

A format is described by three integers: the precision ``p`` (significand bits, hidden bit included),
and the exponents ``emin`` and ``emax`` of the smallest and largest normal binades.  Numbers of the
format are ``M * 2**(e - p + 1)`` with integer ``|M| < 2**p`` and ``emin <= e <= emax``; subnormals
are those with ``e = emin`` and ``|M| < 2**(p-1)``.  The smallest positive number is
``2**(emin - p + 1)``.

The same description serves the hardware formats (float64: p = 53, float32: p = 24) and the tiny
formats (p = 4..8) in which the exact reference can enumerate every input.
"""

from __future__ import annotations

from fractions import Fraction
from typing import NamedTuple

import numpy as np


class Format(NamedTuple):
    """A binary floating-point format with round-to-nearest-even, subnormals and infinities."""

    p: int
    emin: int
    emax: int
    name: str

    @property
    def u(self) -> Fraction:
        """Unit roundoff ``2**-p``."""
        return Fraction(1, 1 << self.p)

    @property
    def eta(self) -> Fraction:
        """Smallest positive (subnormal) number ``2**(emin - p + 1)``."""
        return Fraction(2) ** (self.emin - self.p + 1)

    @property
    def smallest_normal(self) -> Fraction:
        return Fraction(2) ** self.emin

    @property
    def largest(self) -> Fraction:
        """Largest finite number ``(2 - 2**(1-p)) * 2**emax``."""
        return Fraction((1 << self.p) - 1) * Fraction(2) ** (self.emax - self.p + 1)


FLOAT64 = Format(53, -1022, 1023, "float64")
FLOAT32 = Format(24, -126, 127, "float32")

_BY_NAME = {"float64": FLOAT64, "float32": FLOAT32}


def tiny_format(p: int, emin: int = -1000, emax: int = 1000) -> Format:
    """A small-precision format for exhaustive tests (wide exponent range unless given)."""
    if not 2 <= p <= 64:
        raise ValueError(f"precision p must be in 2..64, got {p}")
    return Format(p, emin, emax, f"p{p}")


def canonical_dtype(dtype) -> np.dtype:
    """The NumPy dtype of expansion terms: float64 or float32 only, anything else is an error."""
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"unsupported term dtype {dtype!r}: use 'float64' or 'float32'") from exc
    if dt not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise TypeError(f"unsupported term dtype {dt}: use 'float64' or 'float32'")
    return dt


def format_of(dtype) -> Format:
    """The :class:`Format` of a term dtype (float64 or float32)."""
    return _BY_NAME[canonical_dtype(dtype).name]


MIN_TERMS = 2
MAX_TERMS = 32

#: R = 2 division and square root: where the leading word of the dividend (the radicand) lies below
#: ``2**(emin + DW_SCALE_PRECISIONS * p)``, the double-word algorithm runs on the operands scaled by
#: powers of two to order 1 (its intermediates, down to about ``|x| u**2``, would fall below the
#: underflow threshold) and its result is scaled back: :func:`dw_scale_limit`.
DW_SCALE_PRECISIONS = 3


def dw_scale_limit(fmt: Format) -> float:
    """``2**(emin + DW_SCALE_PRECISIONS * p)`` of ``fmt`` (a power of two the format holds)."""
    return 2.0 ** (fmt.emin + DW_SCALE_PRECISIONS * fmt.p)


def check_terms(R) -> int:
    """Validate a number of terms R (an int in 2..32) and return it."""
    if isinstance(R, bool) or not isinstance(R, (int, np.integer)):
        raise TypeError(f"the number of terms must be an integer, got {R!r}")
    R = int(R)
    if not MIN_TERMS <= R <= MAX_TERMS:
        raise ValueError(f"the number of terms must be in {MIN_TERMS}..{MAX_TERMS}, got {R}")
    return R


def group_width(R: int) -> int:
    """Lanes of one expansion on the GPU: the next power of two >= R (decision 2 of the design)."""
    W = 1
    while W < R:
        W *= 2
    return W


def nominal_bits(R: int, fmt: Format) -> int:
    """Bits an ulp-nonoverlapping R-term expansion carries when no term is near the underflow floor:
    ``R*(p-1) + 1``."""
    return R * (fmt.p - 1) + 1


def effective_bits(R: int, fmt: Format, leading_exponent: int) -> int:
    """Bits an R-term expansion whose leading term has exponent ``leading_exponent`` can carry.

    Terms below the smallest subnormal ``2**(emin-p+1)`` cannot exist, so the expansion carries
    ``min(R*(p-1) + 1, leading_exponent - (emin - p + 1) + 1)`` bits: for float64 near 1 that is
    at most 1075 bits whatever R, for float32 near 1 at most 150 bits.
    """
    floor_bits = leading_exponent - (fmt.emin - fmt.p + 1) + 1
    return max(0, min(nominal_bits(R, fmt), floor_bits))


def max_useful_terms(fmt: Format) -> int:
    """Largest R for which an ulp-nonoverlapping expansion can have all terms nonzero and normal:
    each term's exponent is at least p-1 below the previous one, from emax down to emin.

    This gives 40 for float64 and 12 for float32; section II of Collange et al. (2016) states 39
    and 12 (its count for float64 is one less than this formula's).
    """
    return (fmt.emax - fmt.emin) // (fmt.p - 1) + 1
