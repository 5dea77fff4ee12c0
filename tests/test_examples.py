"""The example programs of examples/ run in quick mode on the CPU and pass their own checks.

Each example compares the library with mpmath and checks a proven error bound, and exits with a
non-zero status when the check fails; here each runs as a subprocess, as a user would run it.
"""

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_example(name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name), "--quick", "--device", "cpu", *args],
        capture_output=True, text=True, timeout=300,
    )


def check_ok(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, f"exit status {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "OK" in proc.stdout, proc.stdout
    assert "FAILED" not in proc.stdout
    return proc.stdout


def test_henon_quick():
    out = check_ok(run_example("henon.py"))
    assert "Lyapunov exponent" in out
    assert "observed error <= proven bound" in out


def _has(*names):
    import expansions

    mods = [expansions, getattr(expansions, "reduce", None)]
    return all(any(m is not None and hasattr(m, n) for m in mods) for n in names)


@pytest.mark.skipif(not _has("dot"), reason="expansions.dot is not available yet")
def test_ill_conditioned_dot_quick():
    out = check_ok(run_example("ill_conditioned_dot.py"))
    assert "np.dot" in out


def _div_any_R():
    import expansions

    try:
        expansions.div(expansions.array(1, terms=4), 3.0)
    except NotImplementedError:
        return False
    return True


@pytest.mark.skipif(not (_has("sum") and _div_any_R()), reason="expansions.sum or div for R > 2 not available yet")
def test_pi_quick():
    out = check_ok(run_example("pi.py"))
    assert "1415926535 8979323846 2643383279" in out  # printed in groups of ten after "3."


def test_examples_refuse_a_missing_gpu():
    """--device cuda without a GPU: a clear message and status 2, not a traceback."""
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            pytest.skip("a GPU is present")
    except Exception:
        pass
    proc = subprocess.run([sys.executable, str(EXAMPLES / "henon.py"), "--quick", "--device", "cuda"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "cannot run on cuda" in proc.stderr


@pytest.mark.slow  # a local Dask cluster of worker processes
def test_dask_dot_quick():
    pytest.importorskip("distributed")
    out = check_ok(run_example("dask_dot.py"))
    assert "same bits as expansions.dot on one process: True" in out


def test_linear_solve_quick():
    out = check_ok(run_example("linear_solve.py"))
    assert "numpy.linalg.solve" in out and "mpmath.lu_solve" in out


def test_user_kernel_quick():
    out = check_ok(run_example("user_kernel.py"))
    assert "relative error against S_N (mpmath)" in out


def test_cholesky_kernel_quick():
    out = check_ok(run_example("cholesky_kernel.py"))
    assert "Expansion<double, 4>" in out
