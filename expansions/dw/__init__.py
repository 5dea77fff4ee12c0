"""Double-word (R = 2) arithmetic: a number is ``hi + lo`` with ``hi = RN(hi + lo)``.

Three layers, one name per algorithm in each (the name says operand kinds and variant):

* :mod:`expansions.dw.reference` — every algorithm as a pure function on exact reference values
  (:mod:`expansions.reference.fp`), in any format, tiny precisions included;
* :mod:`expansions.dw.cpu` — the NumPy twins (CuPy too), same operations in the same order,
  element-wise on arrays of ``hi`` and ``lo``;
* :mod:`expansions.dw.bounds` — the proven relative error bounds as exact rationals in ``u = 2**-p``;
  :mod:`expansions.dw.verify` compares exact errors with them.

The algorithms are those of Joldes, Muller, Popescu, "Tight and rigorous error bounds for basic
building blocks of double-word arithmetic", ACM TOMS 44(2), 2017 (hal-01351529; "JMP", Algorithms
4 to 18), the double-double addition of the QD library (Hida, Li, Bailey, ARITH 2001), the float-float
operators of da Graça and Defour (RNC 7, 2006), the two-float multiplication and division of Warwick
(Bath, 2020), and the double-word square root of Lefèvre, Louvet, Muller, Picot, Rideau ("Accurate
calculation of Euclidean norms using double-word arithmetic", ACM TOMS 49(1), 2023, Algorithm 8).

:data:`ALGORITHMS` is the one table that tests and verification iterate over.
"""

from __future__ import annotations

from typing import NamedTuple

# R = 2: the double-word algorithms (expansions.dw) selectable by name, and the default of each
# operation: the fastest algorithm with a proven bound, as measured by `python -m bench.r2_defaults`
# (bench/results/r2_defaults_cpu-x86_64.md: on the CPU, Algorithm 6 adds 7x faster than the safe
# parallel addition with a 10x tighter bound, Algorithm 10 is the fastest product and Algorithm 17
# the fastest quotient, for float64 and float32 alike).  To be measured again on a GPU.
R2_METHODS = {
    "add": ("dw_add_accurate", "dw_add_sloppy", "qd_add_ieee", "qd_add_sloppy", "dg_add22"),
    "mul": ("dw_times_dw1", "dw_times_dw2", "dw_times_dw3", "dg_mul22", "ww_mul"),
    "div": ("dw_div_dw1", "dw_div_dw2", "dw_div_dw3", "ww_div"),
    "sqrt": ("dw_sqrt",),
}
R2_DEFAULTS = {"add": "dw_add_accurate", "mul": "dw_times_dw1", "div": "dw_div_dw2", "sqrt": "dw_sqrt"}


class Algorithm(NamedTuple):
    name: str
    operation: str  # "add", "mul", "div", "sqrt" or "split": what hi + lo approximates
    operands: tuple  # operand kinds in argument order: "dw" (hi, lo) or "fp" (one float)
    jmp: int | None  # the algorithm's number in JMP 2017, if it is one of theirs
    source: str


def _a(name, operation, operands, jmp, source):
    return Algorithm(name, operation, tuple(operands.split(",")), jmp, source)


_JMP = "Joldes, Muller, Popescu, ACM TOMS 2017 (hal-01351529)"

ALGORITHMS = {
    a.name: a
    for a in (
        _a("dw_plus_fp", "add", "dw,fp", 4, f"DWPlusFP, Algorithm 4 of {_JMP}"),
        _a("dw_add_sloppy", "add", "dw,dw", 5, f"SloppyDWPlusDW, Algorithm 5 of {_JMP}"),
        _a("dw_add_accurate", "add", "dw,dw", 6, f"AccurateDWPlusDW, Algorithm 6 of {_JMP}"),
        _a("dw_times_fp1", "mul", "dw,fp", 7, f"DWTimesFP1, Algorithm 7 of {_JMP}"),
        _a("dw_times_fp2", "mul", "dw,fp", 8, f"DWTimesFP2, Algorithm 8 of {_JMP}"),
        _a("dw_times_fp3", "mul", "dw,fp", 9, f"DWTimesFP3, Algorithm 9 of {_JMP}"),
        _a("dw_times_dw1", "mul", "dw,dw", 10, f"DWTimesDW1, Algorithm 10 of {_JMP}"),
        _a("dw_times_dw2", "mul", "dw,dw", 11, f"DWTimesDW2, Algorithm 11 of {_JMP}"),
        _a("dw_times_dw3", "mul", "dw,dw", 12, f"DWTimesDW3, Algorithm 12 of {_JMP}"),
        _a("dw_div_fp1", "div", "dw,fp", 13, f"DWDivFP1, Algorithm 13 of {_JMP}"),
        _a("dw_div_fp2", "div", "dw,fp", 14, f"DWDivFP2, Algorithm 14 of {_JMP}"),
        _a("dw_div_fp3", "div", "dw,fp", 15, f"DWDivFP3, Algorithm 15 of {_JMP}"),
        _a("dw_div_dw1", "div", "dw,dw", 16, f"DWDivDW1, Algorithm 16 of {_JMP}"),
        _a("dw_div_dw2", "div", "dw,dw", 17, f"DWDivDW2, Algorithm 17 of {_JMP}"),
        _a("dw_div_dw3", "div", "dw,dw", 18, f"DWDivDW3, Algorithm 18 of {_JMP}"),
        _a("qd_add_sloppy", "add", "dw,dw", None, "QD dd_real::sloppy_add (Hida, Li, Bailey 2001)"),
        _a("qd_add_ieee", "add", "dw,dw", None, "QD dd_real::ieee_add (Hida, Li, Bailey 2001)"),
        _a("dg_add12", "add", "fp,fp", None, "Add12, da Graça and Defour, RNC 7 2006, Theorem 2"),
        _a("dg_split", "split", "fp", None, "Split, da Graça and Defour, RNC 7 2006, Theorem 3"),
        _a("dg_mul12", "mul", "fp,fp", None, "Mul12, da Graça and Defour, RNC 7 2006, Theorem 4"),
        _a("dg_add22", "add", "dw,dw", None, "Add22, da Graça and Defour, RNC 7 2006, Theorem 5"),
        _a("dg_mul22", "mul", "dw,dw", None, "Mul22, da Graça and Defour, RNC 7 2006, Theorem 6"),
        _a("ww_mul", "mul", "dw,dw", None, "Warwick, Bath 2020, Algorithm 8 (two-float multiplication)"),
        _a("ww_div", "div", "dw,dw", None, "Warwick, Bath 2020, Algorithm 9 (two-float division)"),
        _a("dw_sqrt", "sqrt", "dw", None,
           "SQRTDWtoDW, Algorithm 8 of Lefevre, Louvet, Muller, Picot, Rideau, ACM TOMS 2023"),
    )
}

__all__ = ["ALGORITHMS", "Algorithm"]
