"""Compile the CPU engine's common kernels for one term dtype into numba's disk cache:
``python tests/warm_numba.py float64``.  tests/conftest.py runs it once per dtype, in parallel,
before the xdist workers start, so that the workers load the compiled code instead of each
compiling it (about a CPU minute for both dtypes on a cold cache, a second on a warm one)."""

import sys

import expansions as ex


def warm(dtype: str) -> None:
    for R in (2, 3, 8):  # R = 2: the double-word algorithms; 3 and 8: the lane kernels, Newton, reductions
        x = ex.random((64,), terms=R, dtype=dtype, seed=1)
        y = ex.random((64,), terms=R, dtype=dtype, seed=2)
        for z in (x + y, x - y, x * y, x / y, ex.sqrt(abs(x)), ex.sum(x), ex.dot(x, y), -x,
                  ex.add(x, y, method="fast"), ex.renormalize(ex.from_terms(x.terms[:, ::-1].copy())),
                  ex.exp(x)):  # exp: the compiled elementary functions, one specialization per dtype
            assert z.terms.dtype == x.terms.dtype


if __name__ == "__main__":
    for name in sys.argv[1:] or ("float64", "float32"):
        warm(name)
