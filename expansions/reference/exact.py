"""Exact values of expansions and conversions between exact numbers, expansions and mpmath.

:func:`exact_rows` turns many expansions into Fractions quickly (integer significands and one shift
per term); :func:`round_to_expansion` rounds an exact rational to R terms greedily (each term is the
correctly rounded value of what remains), which gives an expansion whose leading term is the
correctly rounded value and whose terms satisfy ``|x_{i+1}| <= ulp(x_i) / 2``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..formats import Format
from .fp import exact, is_finite, is_zero, round_fraction, to_float
from .mpf import fraction_from_mpf, mpf_from_fraction

__all__ = ["exact_rows", "exact_value", "round_to_expansion", "to_floats", "fraction_from_mpf", "mpf_from_fraction"]


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
    subnormal after R terms is lost (design decision 9).  Signs of zeros: the leading term of a
    nonzero value that rounds to zero is a zero with the value's sign (``-1e-400`` gives ``-0.0``);
    every zero term after the leading one is ``+0.0``, whatever the sign of a remainder lost below
    the smallest subnormal, so that one value has one set of terms (and the sign of a zero expansion
    is the sign of its leading term)."""
    terms = []
    rest = Fraction(q)
    for k in range(R):
        t = round_fraction(rest, fmt)
        if not is_finite(t):
            return tuple([t] + [0.0] * (R - 1))
        if k > 0 and is_zero(t):
            t = 0.0
        terms.append(t)
        rest -= exact(t)
    return tuple(terms)


def to_floats(values, dtype) -> np.ndarray:
    return np.array([to_float(v) for v in values], dtype=dtype)
