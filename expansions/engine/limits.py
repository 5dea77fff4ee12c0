"""The term formats' bit layouts and the exponent limits the compiled engine tests on the bits of its
terms, each derived from :mod:`expansions.formats` (float64: p = 53, emin = -1022, emax = 1023;
float32: p = 24, emin = -126, emax = 127).  A normal float with ``2**e <= |x| < 2**(e+1)`` has the
biased exponent field ``e + emax``; zeros and subnormals have 0, infinities and NaN all ones.
"""

from __future__ import annotations

from ..formats import FLOAT32, FLOAT64, Format


def _layout(fmt: Format, bits: int) -> tuple:
    """(exponent field mask = bits of +inf, magnitude mask, exponent shift, biased exponent field
    mask, p) of a binary IEEE format of ``bits`` bits."""
    shift = fmt.p - 1  # the stored significand's bits
    field = 2 * fmt.emax + 1  # all ones: biased exponents 0 (zero, subnormal) .. 2 emax (normal), inf/NaN
    return field << shift, (1 << (bits - 1)) - 1, shift, field, fmt.p


#: :func:`_layout` of float64: (0x7FF0000000000000, 0x7FFFFFFFFFFFFFFF, 52, 0x7FF, 53).
LAYOUT64 = _layout(FLOAT64, 64)
#: :func:`_layout` of float32: (0x7F800000, 0x7FFFFFFF, 23, 0xFF, 24).
LAYOUT32 = _layout(FLOAT32, 32)

#: float64: the exponent bias (1023), the shift of the exponent field (52) and its mask (0x7FF).
BIAS64 = FLOAT64.emax
SHIFT64 = LAYOUT64[2]
FIELD64 = LAYOUT64[3]
#: float64: the mask of the magnitude bits (0x7FFFFFFFFFFFFFFF: all but the sign).
MAGNITUDE64 = LAYOUT64[1]
#: float64: the exponents of the smallest and largest normal binades (-1022, 1023).
EMIN64, EMAX64 = FLOAT64.emin, FLOAT64.emax

#: The smallest subnormal of each format as an exponent: 2**(emin - p + 1) (-1074, -149).
TINY_EXPONENT64 = FLOAT64.emin - FLOAT64.p + 1
TINY_EXPONENT32 = FLOAT32.emin - FLOAT32.p + 1

# ---------------------------------------------------------------------------------------------
# the float64 two-product of the twins (expansions.cpu.eft.two_prod): Dekker's product with
# Veltkamp's splitting, operands above 2**995 scaled

#: Veltkamp's splitting constant 2**27 + 1 = 2**ceil(p/2) + 1 (134217729.0): hi and lo of 26 bits each.
SPLITTER64 = 2.0 ** ((FLOAT64.p + 1) // 2) + 1.0
#: The twin's scaling of a factor above 2**TWO_PROD_BIG_EXPONENT: by 2**-28 (the other by 2**28), so
#: that the splitting's product by 2**27 + 1 cannot overflow (28 = ceil(p/2) + 1).
TWO_PROD_SCALE = (FLOAT64.p + 1) // 2 + 1
#: 995 = emax - 28: the twin scales a factor above 2**995.
TWO_PROD_BIG_EXPONENT = FLOAT64.emax - TWO_PROD_SCALE
TWO_PROD_BIG = 2.0**TWO_PROD_BIG_EXPONENT
TWO_PROD_DOWN = 2.0**-TWO_PROD_SCALE
TWO_PROD_UP = 2.0**TWO_PROD_SCALE

# ---------------------------------------------------------------------------------------------
# where a hardware FMA gives the twin's product error (expansions.engine.arithmetic: the module
# docstring): both factors normal or zero, below 2**995, the sum of their exponents in [-966, 1000]

#: 2017 = 995 + 1023 - 1: the largest biased exponent of a factor below 2**995 (not scaled by the twin).
BIASED_BELOW_BIG = TWO_PROD_BIG_EXPONENT + BIAS64 - 1
#: -966: the smallest sum e_x + e_y of the factors' exponents: the products' last bits, at
#: 2**(e_x + e_y - 2(p-1)), lie at or above 2**-1070 = 2**(emin - p + 5) (16 times the smallest
#: subnormal), so the error is a representable multiple of it and no partial product of Dekker's
#: underflows.
FMA_EXPONENT_SUM_MIN = (FLOAT64.emin - FLOAT64.p + 5) + 2 * (FLOAT64.p - 1)
#: 1000 = emax - 23: the largest sum e_x + e_y, the products below 2**1002: a margin of 2**22 below
#: overflow for the product, its error and Dekker's partial products.
FMA_EXPONENT_SUM_MAX = FLOAT64.emax - 23
#: 1080 and 3046: the same two limits on the sum of the biased exponents (each biased by 1023).
FMA_BIASED_SUM_MIN = FMA_EXPONENT_SUM_MIN + 2 * BIAS64
FMA_BIASED_SUM_MAX = FMA_EXPONENT_SUM_MAX + 2 * BIAS64
#: The neutral element of the running minimum of biased exponents over no nonzero term (2048: above
#: every biased exponent, and the sum with any factor's is above FMA_BIASED_SUM_MIN).
NO_EXPONENT_LO = FIELD64 + 1
