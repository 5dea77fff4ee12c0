"""Compile the CPU engine's loops into numba's disk cache: ``python tests/warm_numba.py UNIT ...``
(``UNIT`` a key of :data:`UNITS`, such as ``elementary:float64``; none: all of them).

tests/conftest.py runs it before the xdist workers start: the units run in one process per core,
the costliest first (:func:`main`), so that the workers load the compiled code instead of compiling it: a loop
that tests on both workers need would otherwise be compiled twice, once in each.  About 210 CPU
seconds on a cold cache (a 2-core x86_64 machine: 105 s of wall time), a second on a warm one.
Only what the tests' engine paths compile is warmed; nothing is checked here beyond the dtype."""

from __future__ import annotations

import multiprocessing
import os
import sys

import numpy as np

import expansions as ex
from expansions.engine import baselines as EB
from expansions.engine import dw as EDW
from expansions.engine import fused_dw as FD
from expansions.slices import SCHEMES, matmul_terms


def _pair(R: int, dtype: str, count: int = 64):
    return (ex.random((count,), terms=R, dtype=dtype, seed=1), ex.random((count,), terms=R, dtype=dtype, seed=2))


def engine(dtype: str) -> None:
    """The fused engine (R >= 3: one loop for every operation) and the reductions, at R = 3 and 8, and
    the library's R = 2 defaults."""
    for R in (2, 3, 8):
        x, y = _pair(R, dtype)
        for z in (x + y, x - y, x * y, x / y, ex.sqrt(abs(x)), ex.sum(x), ex.dot(x, y), -x,
                  ex.add(x, y, method="fast"), ex.renormalize(ex.from_terms(x.terms[:, ::-1].copy()))):
            assert z.terms.dtype == x.terms.dtype


def elementary(dtype: str) -> None:
    """The compiled elementary functions (one loop for all of them, per dtype)."""
    x, _ = _pair(2, dtype)
    assert ex.exp(x).terms.dtype == x.terms.dtype


def double_word(dtype: str) -> None:
    """Every double-word algorithm's R = 2 loop, raw and renormalized (the float32 tests run few of
    them: the library's defaults, warmed by :func:`engine`)."""
    x, y = (p.terms for p in _pair(2, dtype))
    for name in FD.BINARY:
        for renormalize in (False, True):
            assert FD.operation(name, x, y, renormalize=renormalize).dtype == x.dtype
    for renormalize in (False, True):
        assert FD.operation("dw_sqrt", np.abs(x), renormalize=renormalize).dtype == x.dtype


def baselines(dtype: str) -> None:
    """The compiled twins of the baselines (double-double, quad-double, certified) and the double-word
    algorithms' element-wise functions."""
    x, y = (p.terms for p in _pair(2, dtype))
    assert EDW.two_sum(x[:, 0], y[:, 0])[0].dtype == x.dtype
    X, Y = (p.terms for p in _pair(4, dtype))
    for z in (EB.dd_add_sloppy(x, y), EB.dd_mul(x, y), EB.qd_add_ieee(X, Y), EB.qd_mul(X, Y),
              EB.certified_add(X, Y, 4), EB.certified_mul(X, Y, 4)):
        assert z.dtype == x.dtype


def slices(dtype: str) -> None:
    """The slice products' compiled steps (both schemes; the steps run in float64)."""
    a = ex.random((4, 3), terms=2, dtype=dtype, seed=1).terms
    b = ex.random((3, 5), terms=2, dtype=dtype, seed=2).terms
    for scheme in SCHEMES:
        assert matmul_terms(a, b, 2, dtype, scheme=scheme).shape == (4, 5, 2)


#: unit name -> (function, dtype, CPU seconds on a cold cache: measured on a 2-core x86_64 machine,
#: used only to start the costliest units first)
UNITS = {
    **{f"elementary:{d}": (elementary, d, 48) for d in ("float64", "float32")},
    **{f"engine:{d}": (engine, d, 25) for d in ("float64", "float32")},
    **{f"baselines:{d}": (baselines, d, 12.5) for d in ("float64", "float32")},
    "double_word:float64": (double_word, "float64", 29),
    "slices:float64": (slices, "float64", 10.7),
}


def _warm(unit: str) -> str:
    function, dtype, _ = UNITS[unit]
    function(dtype)
    return unit


def main(units: list[str]) -> None:
    """Warm ``units`` in one process per core, the costliest first, each to the next free process."""
    units = sorted(units, key=lambda u: -UNITS[u][2])
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    with multiprocessing.get_context("spawn").Pool(min(cores, len(units))) as pool:
        for _ in pool.imap_unordered(_warm, units, chunksize=1):
            pass


if __name__ == "__main__":
    main(sys.argv[1:] or list(UNITS))
