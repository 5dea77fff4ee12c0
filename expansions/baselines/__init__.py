"""Sequential baselines: one GPU thread per expansion, for the benchmarks' comparisons (the paper's
"QD" and "CAMPARY" columns, Collange et al., ASAP 2016, Sec. VI).

Three layers, one name per algorithm in each:

* :mod:`expansions.baselines.reference` — exact reference on :mod:`expansions.reference.fp` values;
* :mod:`expansions.baselines.cpu` — NumPy (or CuPy) twins, same operations in the same order;
* ``expansions/cuda/baselines.cuh`` — one-thread-per-expansion CUDA kernels, launched by
  :mod:`expansions.cuda.launch` (AoS: the library's (count, R) rows; SoA: ``*_soa``, (R, count)).

:data:`BASELINES` is the one table that tests and the build iterate over.
"""

from __future__ import annotations

from typing import NamedTuple


class Baseline(NamedTuple):
    name: str
    operation: str  # "add" or "mul"
    terms: int | None  # fixed number of terms (2 or 4), None for any R in 2..32
    source: str


_QD = "Hida, Li, Bailey, ARITH 2001 / 'Library for double-double and quad-double arithmetic'"

BASELINES = {
    b.name: b
    for b in (
        Baseline("dd_add_sloppy", "add", 2, f"QD double-double sloppy_add ({_QD}); JMP 2017 Algorithm 5"),
        Baseline("dd_add_ieee", "add", 2, f"QD double-double ieee_add ({_QD}); JMP 2017 Algorithm 6"),
        Baseline("dd_mul", "mul", 2, f"double-double product as in QD ({_QD}); JMP 2017 Algorithm 10"),
        Baseline("qd_add_sloppy", "add", 4, f"QD quad-double addition, Cray-style bound ({_QD})"),
        Baseline("qd_add_ieee", "add", 4, f"QD-Add-Accurate, IEEE-style bound ({_QD})"),
        Baseline("qd_mul", "mul", 4, f"QD quad-double accurate multiplication ({_QD})"),
        Baseline("certified_add", "add", None,
                 "merge by magnitude + VecSum + VecSumErrBranch (after Joldes, Marty, Muller, Popescu, IEEE TC 2016)"),
        Baseline("certified_mul", "mul", None,
                 "2Prod of the products of order < R, plain products of order R, sort by magnitude + VecSum + "
                 "VecSumErrBranch (after Joldes, Marty, Muller, Popescu, IEEE TC 2016)"),
    )
}

__all__ = ["BASELINES", "Baseline"]
