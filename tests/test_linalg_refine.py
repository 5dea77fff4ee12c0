"""solve(refine=True): well-conditioned systems refine without falling back and reach the R-term
level (exact componentwise backward error, exact forward error against the rational solution);
ill-conditioned ones fall back to the LU in expansions with a warning."""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest

import expansions as ex
from expansions import linalg as la


def _fr(x):
    return np.asarray(x.to_fraction(), dtype=object)


def _u(R: int, dtype: str = "float64") -> Fraction:
    return Fraction(1, 2 ** (np.finfo(dtype).nmant * R))


def conditioned(n: int, cond: float, seed: int, graded: int = 0) -> np.ndarray:
    """U diag(s) V^T with U, V orthogonal factors of Gaussian matrices and s from 1 to 1/cond
    (geometric), its rows scaled by powers of two within +-graded binades."""
    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.standard_normal((n, n)))[0]
    V = np.linalg.qr(rng.standard_normal((n, n)))[0]
    a = (U * np.logspace(0, -np.log10(cond), n)) @ V.T
    return a * 2.0 ** rng.integers(-graded, graded + 1, n)[:, None]


def componentwise_backward_error(A, x, b) -> Fraction:
    """max_i |b - A x|_i / (|A| |x| + |b|)_i, exactly (Oettli and Prager)."""
    Af, xf, bf = _fr(A), _fr(x), _fr(b)
    r = Af.dot(xf) - bf
    scale = abs(Af).dot(abs(xf)) + abs(bf)
    return max(abs(v) / s for v, s in zip(r, scale))


def exact_solve(A, b) -> list[Fraction]:
    """The exact rational solution by Gaussian elimination on Fractions."""
    M = [list(row) + [v] for row, v in zip(_fr(A).tolist(), _fr(b).tolist())]
    n = len(M)
    for k in range(n):
        p = next(i for i in range(k, n) if M[i][k] != 0)
        M[k], M[p] = M[p], M[k]
        for i in range(k + 1, n):
            f = M[i][k] / M[k][k]
            M[i] = [v - f * w for v, w in zip(M[i], M[k])]
    x = [Fraction(0)] * n
    for k in range(n - 1, -1, -1):
        x[k] = (M[k][n] - sum(M[k][j] * x[j] for j in range(k + 1, n))) / M[k][k]
    return x


def _refine_without_warning(A, b):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return la.solve(A, b, refine=True)


@pytest.mark.parametrize("R", [2, 3, 4])
def test_well_conditioned_systems_refine_to_the_R_term_level(R):
    """cond 1e2 .. 1e8, n = 8 .. 40, rows graded over +-20 binades or not: no fallback, and the exact
    componentwise backward error within the stopping rule's REFINE_TOLERANCE n u plus the
    residual's own rounding (2 n u more)."""
    u = _u(R)
    for n in (8, 20, 40):
        for cond in (1e2, 1e4, 1e8):
            for graded in (0, 20):
                a = conditioned(n, cond, n + R, graded)
                A = ex.array(a, terms=R)
                b = ex.array(np.random.default_rng(n).standard_normal(n), terms=R)
                x = _refine_without_warning(A, b)
                assert componentwise_backward_error(A, x, b) <= (la.REFINE_TOLERANCE + 2) * n * u, (n, cond, graded)


@pytest.mark.parametrize("R", [2, 3, 4])
def test_refined_forward_error_against_the_rational_solution(R):
    """n = 8: |x - x*| / |x*| within cond_inf(A) times the backward error bound (exact x*)."""
    n, u = 8, _u(R)
    for cond in (1e2, 1e4, 1e8):
        a = conditioned(n, cond, 7 * R)
        A = ex.array(a, terms=R)
        b = ex.array(np.random.default_rng(3).standard_normal(n), terms=R)
        x = _fr(_refine_without_warning(A, b))
        exact = exact_solve(A, b)
        err = max(abs(v - e) for v, e in zip(x, exact)) / max(abs(e) for e in exact)
        kappa = np.linalg.norm(a, np.inf) * np.linalg.norm(np.linalg.inv(a), np.inf)
        assert err <= 2 * Fraction(kappa) * (la.REFINE_TOLERANCE + 2) * n * u, cond


def test_refinement_of_a_stack_with_several_right_hand_sides_and_float32():
    """Stacked matrices with several right-hand sides, and float32 terms: no fallback, each column
    within the bound."""
    A = ex.array(np.stack([conditioned(12, 1e3, s) for s in (1, 2)]), terms=3)
    b = ex.array(np.random.default_rng(5).standard_normal((2, 12, 3)), terms=3)
    x = _refine_without_warning(A, b)
    for i in range(2):
        for j in range(3):
            assert componentwise_backward_error(A[i], x[i, :, j], b[i, :, j]) <= 4 * 12 * _u(3)
    A32 = ex.array(conditioned(10, 1e3, 4), terms=3, dtype="float32")
    b32 = ex.array(np.ones(10), terms=3, dtype="float32")
    x32 = _refine_without_warning(A32, b32)
    assert componentwise_backward_error(A32, x32, b32) <= 4 * 10 * _u(3, "float32")
    empty = la.solve(ex.zeros((0, 3, 3), terms=2), ex.zeros((0, 3, 2), terms=2), refine=True)
    assert empty.shape == (0, 3, 2)


@pytest.mark.parametrize("R", [2, 4])
def test_ill_conditioned_systems_fall_back_with_the_warning(R):
    """cond 1e20 (formed exactly at R terms from float64 factors): the float64 corrections do not
    contract, so the LU in expansions answers, with the RuntimeWarning, bit for bit."""
    n = 20
    rng = np.random.default_rng(9)
    U = ex.array(np.linalg.qr(rng.standard_normal((n, n)))[0], terms=R)
    V = ex.array(np.linalg.qr(rng.standard_normal((n, n)))[0], terms=R)
    S = ex.array(np.diag(np.logspace(0, -20, n)), terms=R)
    A = (U @ S) @ V.T
    b = ex.array(np.ones(n), terms=R)
    with pytest.warns(RuntimeWarning, match="did not converge"):
        x = la.solve(A, b, refine=True)
    assert np.array_equal(x.terms, la.solve(A, b).terms)


@pytest.mark.parametrize("span", [40, 80])
def test_badly_scaled_systems_refine_componentwise(span):
    """A = D1 A0 D2 (A0 Gaussian, D1 and D2 powers of two within +-span binades), n = 20, R = 2: the
    residual's product keeps its componentwise bound (relative to |A| |x|, whatever the scaling), so
    the refinement stops at a componentwise backward error within the rule's bound, far below NumPy
    float64's on the same system."""
    n, R = 20, 2
    rng = np.random.default_rng(span)
    d1, d2 = np.ldexp(1.0, rng.integers(-span, span + 1, (2, n)))
    a = d1[:, None] * rng.standard_normal((n, n)) * d2[None, :]
    A, b = ex.array(a, terms=R), ex.array(rng.standard_normal(n), terms=R)
    x = _refine_without_warning(A, b)
    mine = componentwise_backward_error(A, x, b)
    numpy = componentwise_backward_error(A, ex.array(np.linalg.solve(a, b.to_float()), terms=R), b)
    assert mine <= (la.REFINE_TOLERANCE + 2) * n * _u(R) and mine < numpy
