"""Exact values of expansions and conversions between exact numbers, expansions and mpmath.

:func:`exact_rows` turns many expansions into Fractions quickly (integer significands and one shift
per term); :func:`round_to_expansion` rounds an exact rational to R terms greedily (each term is the
correctly rounded value of what remains), which gives an expansion whose leading term is the
correctly rounded value and whose terms satisfy ``|x_{i+1}| <= ulp(x_i) / 2``.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np

from ..formats import Format
from .fp import exact, is_finite, round_fraction, to_float


def exact_rows(terms) -> list:
    """The exact sum of each row of a (N, k) float array, as Fractions (rows must be finite)."""
    a = np.asarray(terms)
    if a.ndim != 2:
        raise ValueError("exact_rows expects a 2-D array (N, k)")
    m, e = np.frexp(a.astype(np.float64))
    M = np.ldexp(m, 53).astype(np.int64).tolist()
    E = (e.astype(np.int64) - 53).tolist()
    out = []
    for Mi, Ei in zip(M, E):
        lo = min(Ei)
        tot = 0
        for mm, ee in zip(Mi, Ei):
            if mm:
                tot += mm << (ee - lo)
        out.append(Fraction(tot << lo) if lo >= 0 else Fraction(tot, 1 << -lo))
    return out


def exact_value(values) -> Fraction:
    """The exact sum of a sequence of finite reference values."""
    return sum((exact(v) for v in values), Fraction(0))


def round_to_expansion(q: Fraction, R: int, fmt: Format):
    """R terms (reference values) whose leading term is RN(q) and each next term is RN of the rest.

    A value beyond the format's range gives ``(±inf, 0, ..., 0)``; what lies below the smallest
    subnormal after R terms is lost (design decision 9)."""
    terms = []
    rest = Fraction(q)
    for _ in range(R):
        t = round_fraction(rest, fmt)
        if not is_finite(t):
            return tuple([t] + [0.0] * (R - 1))
        terms.append(t)
        rest -= exact(t)
    return tuple(terms)


def to_floats(values, dtype) -> np.ndarray:
    return np.array([to_float(v) for v in values], dtype=dtype)


def fraction_from_mpf(x) -> Fraction:
    """An mpmath mpf (finite) as an exact Fraction, sign included.

    Read from the raw ``(sign, man, exp, bc)`` tuple: ``mpf.man_exp`` drops the sign."""
    if not isinstance(x, mpmath.mpf):
        x = mpmath.mpf(x)
    sign, man, exp, _ = x._mpf_
    q = Fraction(int(man)) * Fraction(2) ** int(exp)
    return -q if sign else q


def mpf_from_fraction(q: Fraction):
    """An exact dyadic Fraction as an mpf, exactly (the precision is raised as needed)."""
    n, d = q.numerator, q.denominator
    if d & (d - 1):
        raise ValueError("only dyadic rationals convert exactly to mpf")
    k = d.bit_length() - 1
    return mpmath.mp.make_mpf(mpmath.libmp.from_man_exp(n, -k))
