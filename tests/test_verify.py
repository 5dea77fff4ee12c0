"""``python -m expansions verify``: its inputs reach every class of valid operand, every term of the
operands, and a row that measured no error says so."""

from __future__ import annotations

import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from expansions import bounds as B
from expansions import verify as V
from expansions.formats import format_of

ROOT = Path(__file__).resolve().parents[1]


def _valid(a, fmt) -> bool:
    return all(B.ulp_nonoverlapping([Fraction(float(t)) for t in row], fmt) for row in a)


@pytest.mark.parametrize("dtype", ("float64", "float32"))
@pytest.mark.parametrize("op", ("add_safe", "mul", "div", "reciprocal", "sqrt"))
def test_the_operands_are_valid_expansions_of_every_class(op, dtype):
    fmt = format_of(dtype)
    for R in (3, 8, 32):
        x, y = V.inputs(400, R, dtype, np.random.default_rng(R), op)
        assert x.shape == y.shape == (400, R) and x.dtype == np.dtype(dtype)
        assert _valid(x, fmt) and _valid(y, fmt)
        both = np.concatenate([x, y])
        nonzero = both != 0
        # interior zero terms followed by a nonzero term
        assert (~nonzero[:, 1:-1] & nonzero[:, -1:]).any()
        # subnormal terms, the smallest one repeated
        smallest = float(fmt.eta)
        assert ((np.abs(both) == smallest).sum(axis=1) >= 2).any()
        lead = np.abs(both[:, 0][both[:, 0] != 0]).astype(np.float64)
        assert lead.max() >= 2.0 ** (fmt.emax - 2 - V.SPREAD)  # near the top of the range
        assert lead.min() < 2.0 ** (fmt.emin + V.SPREAD + 1)  # in the lowest binades


def test_every_term_of_the_operands_is_exercised_where_the_format_holds_it():
    """With the leading exponents of :func:`centers`, the last term of the random family is a normal
    number; with (-8, 8) it underflowed to zero from float32 R = 8 and float64 R = 24 on."""
    for dtype, R in (("float32", 8), ("float64", 24), ("float64", 32)):
        fmt = format_of(dtype)
        x, _ = V.inputs(200, R, dtype, np.random.default_rng(1), "add_safe", edge=False)
        assert (np.abs(x[:100, -1]) >= 2.0 ** fmt.emin).mean() > 0.9


@pytest.mark.parametrize("op, R, dtype", [("add_safe", 8, "float32"), ("mul", 8, "float32"),
                                          ("add_safe", 24, "float64"),
                                          ("mul", 24, "float64"), ("add_safe", 32, "float64"),
                                          ("mul", 32, "float64"), ("sqrt", 32, "float64")])
def test_rows_that_measured_nothing_now_measure_errors(op, R, dtype):
    row = V.verify_one(op, R, dtype, samples=300, seed=5, edge=False)
    assert row.max_error_log2 > -math.inf and row.status == V.OK
    assert row.violations == 0 and row.max_ratio_log2 <= 0


def test_a_row_that_measured_no_error_says_so():
    """float32 R = 32: the range holds about 11 float32 terms below a leading one; every sum is exact."""
    row = V.verify_one("add_safe", 32, "float32", samples=200, seed=5)
    assert row.max_error_log2 == -math.inf and row.violations == 0
    assert row.status == V.NO_ERROR_MEASURED
    text = V.markdown([row], {})
    assert f"| {V.NO_ERROR_MEASURED} |" in text and "1 rows measured no error" in text
    renorm = V.verify_one("renormalize", 32, "float32", samples=200, seed=5)  # error-free: 0 is measured
    assert renorm.status == V.OK


@pytest.mark.slow  # a subprocess (numba's and the library's imports)
def test_command_line_flags_the_row():
    proc = subprocess.run([sys.executable, "-m", "expansions", "verify", "--operations", "add_safe",
                           "--terms", "32", "--dtype", "float32", "--samples", "100", "--backend", "cpu",
                           "--no-progress"], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert f"| {V.NO_ERROR_MEASURED} |" in proc.stdout and "measured no error" in proc.stdout


@pytest.mark.parametrize("dtype", ("float64", "float32"))
@pytest.mark.parametrize("R", (2, 3, 4, 16))
@pytest.mark.parametrize("op", V.ALL_OPERATIONS)
def test_edge_families_within_the_bounds(op, R, dtype):
    """Interior zeros and subnormal terms (outside the proofs' positional hypothesis until the
    operations renormalize such operands on entry) stay within every bound."""
    row = V.verify_one(op, R, dtype, samples=400, seed=11)
    assert row.violations == 0, row.counterexample
    if op == "renormalize":
        assert row.property_violations == 0


@pytest.mark.parametrize("op, R, dtype", [("div", 32, "float64"), ("reciprocal", 32, "float64"),
                                          ("div", 8, "float32"), ("reciprocal", 16, "float32")])
def test_near_underflow_divisors_within_the_bounds(op, R, dtype):
    """Divisors near 2^emin (so that the quotient's error is above the underflow term) whose trailing
    terms are subnormal: interior zeros followed by the smallest subnormal."""
    row = V.verify_one(op, R, dtype, samples=800, seed=7, edge=False)
    assert row.violations == 0, row.counterexample
