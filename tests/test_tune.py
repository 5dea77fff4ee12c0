"""expansions.tune: the tuned program meets its threshold on fresh inputs, a threshold nothing meets is
refused clearly, non-finite inputs follow the library's rule, and the command line works."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import expansions as ex
from expansions.programs import Program
from expansions.tuning import program_error
from paper_repro.seed004_tuning import axpc, axpc_samples, henon, henon_samples

ROOT = Path(__file__).resolve().parents[1]


def _error_on(tuned, fn, args, ref_terms):
    """The tuned program's error on ``args`` against ``fn`` with every operation at ``ref_terms``."""
    n_ops = len(tuned.report.nodes)
    ref = Program(fn, overrides={k: {"terms": ref_terms} for k in range(n_ops)})(*args)
    return program_error(tuned(*args), ref)


def test_the_product_of_a_times_b_plus_c_runs_at_lower_precision():
    """The thesis's example: with c ~ 2^100 |a b|, the product is lowered and the sum is not."""
    tuned = ex.tune(axpc, *axpc_samples(256), rel_error=2.0 ** -200, check_time=False)
    mul, add = tuned.report.nodes
    assert (mul.op, add.op) == ("mul", "add")
    assert mul.terms < 4 and add.terms == 4
    assert _error_on(tuned, axpc, axpc_samples(512, seed=99), 8) <= 2.0 ** -200  # fresh inputs
    assert tuned.report.validation_error <= 2.0 ** -200


def test_a_threshold_below_the_programs_own_error_is_refused():
    with pytest.raises(ValueError, match="above the threshold"):
        ex.tune(axpc, *axpc_samples(64), rel_error=2.0 ** -400, check_time=False)


def test_bad_input():
    with pytest.raises(TypeError, match="function of expansions"):
        ex.tune(3, rel_error=1e-10)
    with pytest.raises(ValueError, match="positive"):
        ex.tune(axpc, *axpc_samples(8), rel_error=0.0)
    with pytest.raises(ValueError, match="no arithmetic"):
        ex.tune(lambda x: -x, ex.ones((4,), terms=4), rel_error=1e-10)


@pytest.mark.slow  # tens of CPU seconds, more when profiling is noisy
def test_henon_tuned_for_two_thresholds():
    def two_steps(x, y):
        return henon(x, y, 2)

    tight = ex.tune(two_steps, *henon_samples(128), rel_error=1e-100, check_time=False)
    loose = ex.tune(two_steps, *henon_samples(128), rel_error=1e-60, check_time=False)
    fresh = henon_samples(256, seed=77)
    assert _error_on(tight, two_steps, fresh, 16) <= 1e-100
    assert _error_on(loose, two_steps, fresh, 16) <= 1e-60
    assert sum(n.terms for n in loose.report.nodes) < sum(n.terms for n in tight.report.nodes)
    assert sum(n.terms for n in loose.report.nodes) < sum(n.declared_terms for n in loose.report.nodes)


def test_non_finite_inputs_follow_the_rule():
    a, b, c = axpc_samples(64)
    tuned = ex.tune(axpc, a, b, c, rel_error=2.0 ** -200, check_time=False)
    t = np.array(a.terms)
    t[::7, 0] = np.nan
    t[3::7, 0] = np.inf
    t[5::7] = 0
    t[5::7, 0] = -np.inf
    bad = ex.from_terms(t)
    got, want = tuned(bad, b, c), axpc(bad, b, c)
    nonfinite = ~np.isfinite(want.terms[:, 0])
    assert nonfinite.sum() >= 20
    assert np.array_equal(got.terms[nonfinite, 0], want.terms[nonfinite, 0], equal_nan=True)
    assert (got.terms[nonfinite, 1:] == 0).all()


@pytest.mark.slow  # a subprocess that tunes a program (the API is tested above)
def test_command_line():
    cmd = [sys.executable, "-m", "expansions", "tune", "paper_repro.seed004_tuning:axpc", "--rel-error", "1e-60",
           "--repeats", "1"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "| 0 | mul |" in proc.stdout and "lowest R within the threshold" in proc.stdout
    assert "Proven bound (composed along the graph): tuned " in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "expansions", "tune", "nonsense", "--rel-error", "1"],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 2 and "MODULE:FUNCTION" in proc.stderr


def test_float32_terms_where_the_error_allows():
    """At 2^-140 the product (2^-100 of the sum) needs about 42 bits: two float32 terms, no more terms than
    float64 needs, so the tuner takes them; the operands are rounded to float32 at the node and its result
    widened exactly into the float64 sum, whose dtype stays declared."""
    samples = axpc_samples(256)
    tuned = ex.tune(axpc, *samples, rel_error=2.0 ** -140, check_time=False, methods=False, bound_elements=16)
    mul, add = tuned.report.nodes
    assert (mul.dtype, mul.terms, mul.lowest_float32_terms) == ("float32", 2, 2)
    assert add.dtype == "float64" and add.lowest_float32_terms > add.terms
    fresh = axpc_samples(512, seed=98)
    out = tuned(*fresh)
    assert out.dtype == np.float64
    assert _error_on(tuned, axpc, fresh, 8) <= 2.0 ** -140
    assert tuned.report.proven_bound.proven and tuned.report.proven_bound.relative <= 2.0 ** -140
    assert "| 2 float32 (auto) |" in tuned.report.markdown()
    plain = ex.tune(axpc, *samples, rel_error=2.0 ** -140, check_time=False, methods=False, dtypes=False,
                    bound_elements=0)
    assert all(n.dtype == "float64" and n.lowest_float32_terms is None for n in plain.report.nodes)
    assert plain.report.proven_bound is None
