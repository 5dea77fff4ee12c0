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


def _sqrt_samples():
    return ex.from_terms(np.array([[1.0, 2.0 ** -60], [1.0, 2.0 ** -55], [1.0, 3 * 2.0 ** -58],
                                   [1.0, 5 * 2.0 ** -70]]))


def _true_errors_of_sqrt_minus(x, y=None):
    """The relative errors of ``ex.sqrt(x) - y`` (y = 1 when None) against mpmath at 3000 bits."""
    import mpmath

    got = (ex.sqrt(x) - (1.0 if y is None else y)).terms
    errors = []
    with mpmath.workprec(3000):
        for k, row in enumerate(np.asarray(x.terms)):
            sub = 1 if y is None else mpmath.fsum(mpmath.mpf(float(t)) for t in np.asarray(y.terms)[k])
            exact = mpmath.sqrt(mpmath.fsum(mpmath.mpf(float(t)) for t in row)) - sub
            computed = mpmath.fsum(mpmath.mpf(float(t)) for t in np.asarray(got)[k])
            errors.append(float(abs(computed - exact) / abs(exact)))
    return errors


def test_a_square_root_at_the_inputs_format_is_measured():
    """The reference runs every node at the wider format (the inputs widened exactly), and the true error
    is measured against mpmath: the error of ``sqrt`` at R = 2 does not cancel out of the measurement."""
    x = _sqrt_samples()
    true = _true_errors_of_sqrt_minus(x)
    assert 1e-18 < max(true) < 1e-17  # the errors the tuner must see (mpmath, independently of the tuner)
    with pytest.raises(ValueError, match="above the threshold"):
        ex.tune(lambda x: ex.sqrt(x) - 1.0, x, rel_error=1e-25, check_time=False)
    report = ex.tune(lambda x: ex.sqrt(x) - 1.0, x, rel_error=1e-15, check_time=False).report
    assert report.original_true.elements == 4
    assert report.original_true.error == pytest.approx(max(true), rel=1e-6)
    assert report.original_error == pytest.approx(max(true), rel=1e-6)  # the widened reference agrees
    assert report.reference_true.error < 1e-40
    assert "True error (against mpmath): original 6.94e-18" in report.markdown()


def test_a_cancellation_the_declared_format_cannot_resolve_is_refused():
    """``sqrt(x) - y`` with x at R = 2 and y an accurate R = 4 value of sqrt(x): the difference is the
    square root's own error, so the true relative error is huge; the tuner refuses the threshold."""
    import mpmath

    x = _sqrt_samples()
    with mpmath.workprec(2000):
        y = ex.array([mpmath.sqrt(mpmath.mpf(float(r[0])) + mpmath.mpf(float(r[1]))) for r in np.asarray(x.terms)],
                     terms=4)
    assert max(_true_errors_of_sqrt_minus(x, y)) > 1e30
    with pytest.raises(ValueError, match="above the threshold"):
        ex.tune(lambda x, y: ex.sqrt(x) - y, x, y, rel_error=1e-40, check_time=False)
