"""CPU benchmarks (pytest-benchmark): the NumPy backend against mpmath at the same precision.

Run with ``pytest bench/ --benchmark-only`` (not part of the test suite).  Each benchmark adds or
multiplies N expansions of R float64 terms with the CPU backend, or N mpmath numbers at R*53 bits,
so that the two rows of one (operation, R) compare the same work; ``extra_info`` holds Mop/s.
"""

import mpmath
import pytest

import expansions as ex

N = 2048
RS = (2, 4, 8, 16, 32)


@pytest.fixture(scope="module", params=RS, ids=lambda R: f"R{R}")
def operands(request):
    R = request.param
    x = ex.random((N,), terms=R, seed=1)
    y = ex.random((N,), terms=R, seed=2)
    return R, x, y


@pytest.mark.parametrize("op", ["add_safe", "add_fast", "mul"])
def test_cpu_backend(benchmark, operands, op):
    R, x, y = operands
    f = {"add_safe": lambda: ex.add(x, y, renormalize=False),
         "add_fast": lambda: ex.add(x, y, method="fast", renormalize=False),
         "mul": lambda: ex.mul(x, y, renormalize=False)}[op]
    benchmark(f)
    benchmark.extra_info.update(R=R, expansions=N, mops=N / benchmark.stats.stats.median / 1e6)


@pytest.mark.parametrize("op", ["add", "mul"])
def test_mpmath_same_precision(benchmark, operands, op):
    R, x, y = operands
    with mpmath.workprec(53 * R):
        xs = [mpmath.mpf(v) for v in x.to_mpmath()]
        ys = [mpmath.mpf(v) for v in y.to_mpmath()]

    def run():
        with mpmath.workprec(53 * R):
            if op == "add":
                return [a + b for a, b in zip(xs, ys)]
            return [a * b for a, b in zip(xs, ys)]

    benchmark(run)
    benchmark.extra_info.update(R=R, bits=53 * R, expansions=N, mops=N / benchmark.stats.stats.median / 1e6)
