"""The constants of the elementary functions (:mod:`expansions.cpu.elementary`), generated exactly.

Every constant is computed with mpmath at a precision well beyond what the format can hold, turned
into an exact rational (:func:`expansions.reference.mpf.fraction_from_mpf`) and rounded greedily to
w terms (:func:`expansions.reference.exact.round_to_expansion`: the leading term is the correctly
rounded value and each next term the correctly rounded remainder).  Nothing is typed in as digits;
results are cached per (name, w, dtype).  The CUDA kernels of the elementary functions receive the
same arrays in one device table (:func:`expansions.cuda.elementary.table`), built by these functions.
"""

from __future__ import annotations

import functools
from fractions import Fraction

import mpmath
import numpy as np

from ..formats import Format, format_of
from ..reference.exact import round_to_expansion, to_floats
from ..reference.mpf import fraction_from_mpf


def _precision(fmt: Format) -> int:
    """Bits that cover every constant of the format: its whole exponent range plus a margin."""
    return (fmt.emax - fmt.emin) + 4 * fmt.p + 256


def _rounded(q: Fraction, w: int, dtype) -> np.ndarray:
    fmt = format_of(dtype)
    return to_floats(round_to_expansion(q, w, fmt), np.dtype(dtype))


_VALUES = {
    "ln2": lambda: mpmath.log(2),
    "inv_ln2": lambda: 1 / mpmath.log(2),
    "inv_ln10": lambda: 1 / mpmath.log(10),
    "pi": lambda: +mpmath.pi,
    "half_pi": lambda: mpmath.pi / 2,
    "quarter_pi": lambda: mpmath.pi / 4,
    "three_quarter_pi": lambda: 3 * mpmath.pi / 4,
    "two_over_pi": lambda: 2 / mpmath.pi,
    "pi_over_180": lambda: mpmath.pi / 180,  # np.radians
    "180_over_pi": lambda: 180 / mpmath.pi,  # np.degrees
}


@functools.cache
def constant(name: str, w: int, dtype: str, shift: int = 0) -> np.ndarray:
    """The named constant (a key of ``_VALUES``) times 2^shift as a (1, w) array of w terms (scaled
    before the rounding, so that a scaled constant keeps its tail above the underflow threshold)."""
    with mpmath.workprec(_precision(format_of(dtype)) + abs(shift)):
        q = fraction_from_mpf(_VALUES[name]()) * Fraction(2) ** shift
    out = _rounded(q, w, dtype)[None, :]
    out.setflags(write=False)
    return out


@functools.cache
def taylor(kind: str, n: int, w: int, dtype: str) -> np.ndarray:
    """(n, w) Taylor coefficients c_0..c_{n-1}, each rounded to w terms (exact rationals rounded):

    * ``'expm1'``: 1/(k+1)!, so that expm1(t) = t * sum c_k t^k;
    * ``'sin'``: (-1)^k/(2k+1)!, so that sin(t) = t * sum c_k (t^2)^k;
    * ``'versin'``: (-1)^k/(2k+2)!, so that 1 - cos(t) = t^2 * sum c_k (t^2)^k.
    """
    first = {"expm1": lambda k: k + 1, "sin": lambda k: 2 * k + 1, "versin": lambda k: 2 * k + 2}[kind]
    sign = (lambda k: 1) if kind == "expm1" else (lambda k: (-1) ** k)
    rows = []
    fact = 1
    done = 1
    for k in range(n):
        while done < first(k):
            done += 1
            fact *= done
        rows.append(_rounded(Fraction(sign(k), fact), w, dtype))
    out = np.array(rows)
    out.setflags(write=False)
    return out


@functools.cache
def atanh_coefficients(n: int, w: int, dtype: str) -> np.ndarray:
    """(n, w) coefficients 1/(2k+1), k = 0..n-1, each rounded to w terms (exact rationals rounded), so
    that 2 atanh(t) = 2t * sum c_k (t^2)^k.  The greedy rounding is prefix-consistent: the first v terms
    of a row are the row rounded to v terms (the logarithm's tapered Horner rule truncates them)."""
    out = np.array([_rounded(Fraction(1, 2 * k + 1), w, dtype) for k in range(n)])
    out.setflags(write=False)
    return out


@functools.cache
def log_centres(b: int, first: int, count: int, w: int, dtype: str) -> np.ndarray:
    """(count, w) table of log(c_i) for the centres c_i = i 2^-b, i = first .. first + count - 1, each
    rounded to w terms (mpmath at the format's constant precision, an exact rational rounded greedily;
    log(1) = 0 is the row of zeros).  The logarithm's argument reduction (:func:`expansions.cpu.
    elementary._log_centred`) reads row i - first."""
    fmt = format_of(dtype)
    rows = []
    with mpmath.workprec(_precision(fmt)):
        for i in range(first, first + count):
            q = fraction_from_mpf(mpmath.log(mpmath.mpf(i) / mpmath.mpf(2) ** b))
            rows.append(_rounded(q, w, dtype))
    out = np.array(rows)
    out.setflags(write=False)
    return out


def shift_of(fmt: Format) -> int:
    """The scaling 2^S of the Payne–Hanek table, S = p + 2: it lifts the table's products m * F_E
    (m < 2^p, F_E < 4) so that the bits of the reduced argument down to the underflow threshold
    survive in the table's terms."""
    return fmt.p + 2


@functools.cache
def two_over_pi_table(M: int, dtype: str) -> np.ndarray:
    """The Payne–Hanek table: row E - 3 (E = 3 .. emax - p + 1) holds ``((2^E * 2/pi) mod 4) * 2^S``
    in M terms (S = :func:`shift_of`).  For a term x_j = m 2^E with integer m, ``x_j * 2/pi`` is
    ``m * F_E`` modulo 4 (the dropped bits of 2/pi contribute multiples of 4), so a huge argument is
    reduced with products of size 2^(p+2) only (Payne and Hanek, SIGNUM Newsletter 18(1), 1983;
    Muller, "Elementary Functions", 3rd ed., section 11.4).  2/pi is taken from mpmath with
    emax + S + (underflow range) + M p bits, an integer G = floor(2/pi * 2^P); the row is exactly
    ``(G 2^E mod 2^(P+2)) 2^(S-P)`` rounded to M terms."""
    fmt = format_of(dtype)
    S = shift_of(fmt)
    P = fmt.emax + S + (fmt.p - fmt.emin) + M * fmt.p + 128
    with mpmath.workprec(P + 64):
        G = int(mpmath.floor(2 / mpmath.pi * mpmath.mpf(2) ** P))
    mod = 4 << P
    rows = []
    for E in range(3, fmt.emax - fmt.p + 2):
        val = (G << E) % mod
        rows.append(_rounded(Fraction(val << S, 1 << P), M, dtype))
    out = np.array(rows)
    out.setflags(write=False)
    return out
