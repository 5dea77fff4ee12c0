"""Compile what the tests' engine paths compile into numba's disk cache, before the xdist workers
start (tests/conftest.py): ``python tests/warm_numba.py [UNIT ...]`` (``UNIT`` such as
``elementary:float64``; none: :data:`UNITS`), by :func:`expansions.warm.warm` (the units of
``python -m expansions warm`` in one process per core, the costliest first), so that the workers load
the compiled code instead of compiling it: a loop that tests on both workers need would otherwise be
compiled twice, once in each.  About 210 CPU seconds on a cold cache (a 2-core x86_64 machine: 105 s
of wall time), a second on a warm one."""

from __future__ import annotations

import sys

from expansions.warm import units, warm

#: Both dtypes for the families the float32 tests use; the double-word algorithms and the slice
#: products' steps in float64 (the float32 tests run the library's defaults, warmed by arithmetic).
UNITS = [*units(("elementary", "arithmetic", "baselines", "programs"), ("float64", "float32")),
         *units(("double_word", "slices"), ("float64",))]
#: The R of the tests' engine paths: the double-word loops (2) and the general ones (3, 8).
TERMS = (2, 3, 8)

if __name__ == "__main__":
    warm(sys.argv[1:] or UNITS, TERMS, progress=False)
