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
