"""Exact conversions between mpmath numbers and Fractions (used by the reference and the library)."""

from __future__ import annotations

from fractions import Fraction

import mpmath


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
