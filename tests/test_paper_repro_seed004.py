"""Seed 004's chapter 4 studies (paper_repro.seed004_surineni) on small sizes: the inputs have the
exact sum the benchmark assumes, the parallel summation adds in the stated order, and the errors
reported are the exact ones."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

import expansions as ex
from paper_repro import seed004_surineni as s


def test_summation_inputs_sum_to_exactly_zero():
    for iv in s.INTERVALS:
        x = s.summation_inputs(4096, iv, "float32", np.random.default_rng(1))
        assert sum(Fraction(float(v)) for v in x) == 0 and x.dtype == np.float32


def test_parallel_sum_adds_threads_then_partials_in_order():
    x = s.summation_inputs(2 * s.THREADS, s.INTERVALS[1], "float64", np.random.default_rng(2))
    cols = x.reshape(-1, s.THREADS)
    partial = cols[0] + cols[1]
    want = partial[0]
    for t in range(1, s.THREADS):
        want = want + partial[t]
    assert s.parallel_sum("double", x) == want
    got = s.parallel_sum("double-double", x)
    assert isinstance(got, ex.ExpansionArray) and got.nterms == 2 and got.dtype == np.float64


def test_do_undo_error_is_exact():
    rows = s.study_do_undo(3, 4, seed=5)
    assert len(rows) == len(s.DO_UNDO) * len(s.SYSTEMS)
    assert all(r["max_abs_error"] >= 0 for r in rows)
    md = s.markdown({"summation": [], "multiplication": [], "do_undo": rows, "anchors": s.anchors_text()})
    assert "Do-undo" in md and "float-float" in md


def test_exponential_study_errors_are_against_mpmath():
    """The exponential study (4.4): the library's exp of R = 4 expansions is within a few units of
    2^-208 of mpmath's value, the Taylor series in double within a few ulps, and the loop counts grow
    with the inputs as the series needs (n > x before it may stop)."""
    rows = {(r["range"], r["system"], r["impl"]): r for r in s.study_exp(16, 1, 7)}
    assert rows[((0.1, 1.0), "R=4", "library")]["max_rel_error"] < 2.0 ** -200
    assert rows[((0.1, 1.0), "double", "Taylor")]["max_rel_error"] < 2.0 ** -48
    small, large = rows[((0.1, 1.0), "double", "Taylor")], rows[((1.0, 100.0), "double", "Taylor")]
    assert small["loop_mean"] < large["loop_mean"]
    xs = np.random.default_rng([7, 44, 1]).uniform(1.0, 100.0, 16).astype(np.float32)  # the study's inputs
    overflow = int(np.sum(xs.astype(np.float64) > np.log(float(np.finfo(np.float32).max))))
    assert rows[((1.0, 100.0), "float", "library")]["nonfinite"] == overflow  # e^x beyond float32's range
    assert rows[((1.0, 100.0), "double", "library")]["nonfinite"] == 0
