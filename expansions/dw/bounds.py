"""Proven relative error bounds of the double-word algorithms, as exact rationals in ``u = 2**-p``.

:func:`bound` returns an :class:`expansions.bounds.Bound` whose ``value`` bounds
``|zh + zl - z| / |z|``, ``z`` the exact sum, product, quotient or square root of the operands, or
``None`` for algorithms without a proven bound.  The proofs assume double-word operands
(``xh = RN(xh + xl)``), rounding to nearest even and no underflow or overflow; the verification keeps
its inputs inside that domain (:mod:`expansions.dw.verify`).

Sources:

* JMP: Joldes, Muller, Popescu, "Tight and rigorous error bounds for basic building blocks of
  double-word arithmetic", ACM TOMS 44(2), 2017 (hal-01351529), Table 1 ("Our bound" column, the
  ``proven_bound`` column of ``paper_repro/anchors/jmp2017_double_word_bounds.csv``).
* MR: Muller, Rideau, "Formalization of double-word arithmetic, and comments on ...", ACM TOMS 48(1),
  2022 (hal-02972245): Coq proofs; they correct the proofs of Algorithm 4 and of Algorithms 10-12
  (whose JMP bounds stay valid) and tighten some bounds.  Only JMP's values are used here.
* LLMPR: Lefèvre, Louvet, Muller, Picot, Rideau, "Accurate calculation of Euclidean norms using
  double-word arithmetic", ACM TOMS 49(1), 2023: SQRTDWtoDW (Algorithm 8), ``25/8 u**2``.
* DG: da Graça, Defour, RNC 7 2006, Theorems 5 and 6 (float, p = 24: ``2**-44`` terms).
"""

from __future__ import annotations

from fractions import Fraction

from ..bound_type import Bound

_JMP = "Joldes, Muller, Popescu, ACM TOMS 2017, Table 1"
_SAME6 = "same operations as Algorithm 6 (AccurateDWPlusDW): " + _JMP
_SAME10 = "same values as Algorithm 10 (DWTimesDW1, see dg_mul22): " + _JMP

# name: (coefficient of u**2, coefficient of u**3, source)
_RELATIVE = {
    "dw_plus_fp": (2, 0, _JMP + " (Algorithm 4; proof corrected by Muller and Rideau 2022)"),
    "dw_add_accurate": (3, 13, _JMP + " (Algorithm 6)"),
    "qd_add_ieee": (3, 13, _SAME6),
    "dw_times_fp1": (Fraction(3, 2), 4, _JMP + " (Algorithm 7)"),
    "dw_times_fp2": (3, 0, _JMP + " (Algorithm 8)"),
    "dw_times_fp3": (2, 0, _JMP + " (Algorithm 9)"),
    "dw_times_dw1": (7, 0, _JMP + " (Algorithm 10)"),
    "dw_times_dw2": (6, 0, _JMP + " (Algorithm 11)"),
    "dw_times_dw3": (5, 0, _JMP + " (Algorithm 12)"),
    "dg_mul22": (7, 0, _SAME10),
    "dw_div_fp1": (Fraction(7, 2), 0, _JMP + " (Algorithm 13)"),
    "dw_div_fp2": (Fraction(7, 2), 0, _JMP + " (Algorithm 14)"),
    "dw_div_fp3": (3, 0, _JMP + " (Algorithm 15)"),
    "dw_div_dw1": (15, 56, _JMP + " (Algorithm 16)"),
    "dw_div_dw2": (15, 56, _JMP + " (Algorithm 17)"),
    "dw_div_dw3": (Fraction(49, 5), 0, _JMP + " (Algorithm 18: 9.8 u^2)"),
    "dw_sqrt": (Fraction(25, 8), 0, "Lefevre, Louvet, Muller, Picot, Rideau, ACM TOMS 2023 (SQRTDWtoDW, Algorithm 8)"),
}

_EXACT = {
    "dg_add12": "error-free: Add12 is Knuth's 2Sum (da Graca and Defour 2006, Theorem 2)",
    "dg_mul12": "error-free without underflow: Dekker's product (da Graca and Defour 2006, Theorem 4)",
    "dg_split": "error-free: Veltkamp's splitting (da Graca and Defour 2006, Theorem 3)",
}

_NONE = {
    "dw_add_sloppy": "no bound: relative error up to 1 under cancellation (JMP 2017, Table 1, Algorithm 5)",
    "qd_add_sloppy": "no bound: same operations as Algorithm 5 (SloppyDWPlusDW)",
    "ww_mul": "no published bound (Warwick 2020, Algorithm 8)",
    "ww_div": "no published bound (Warwick 2020, Algorithm 9)",
}


def u(p: int) -> Fraction:
    return Fraction(1, 1 << p)


def bound(name: str, p: int) -> Bound | None:
    """The proven bound on ``|zh + zl - z| / |z|`` for algorithm ``name`` in precision ``p``, or None.

    ``dg_add22`` has a mixed bound (see :func:`dg_add22_bound`); here it returns None."""
    if name in _RELATIVE:
        c2, c3, source = _RELATIVE[name]
        uu = u(p)
        return Bound(Fraction(c2) * uu**2 + Fraction(c3) * uu**3, "|z|", source)
    if name in _EXACT:
        return Bound(Fraction(0), "|z|", _EXACT[name])
    if name == "dg_add22" or name in _NONE:
        return None
    raise KeyError(f"unknown double-word algorithm {name!r}")


def no_bound_reason(name: str) -> str:
    if name == "dg_add22":
        return "mixed bound max(2^-p |al+bl|, 2^-(2p-4) |a+b|) (da Graca and Defour 2006, Theorem 5)"
    return _NONE.get(name, "")


def dg_add22_bound(p: int, al: Fraction, bl: Fraction, exact_sum: Fraction) -> Fraction:
    """Add22 (da Graça and Defour 2006, Theorem 5, stated for float, p = 24):
    ``|rh + rl - (a + b)| <= max(2**-24 |al + bl|, 2**-44 |a + b|)``, written ``2**-p`` and
    ``2**-(2p-4)``.  Only p = 24 is the paper's statement; the verification applies it to float32 only."""
    return max(u(p) * abs(al + bl), Fraction(16) * u(p) ** 2 * abs(exact_sum))


def in_u2(value: Fraction, p: int) -> float:
    """A relative error in units of ``u**2``."""
    return float(value * (1 << (2 * p)))
