"""qr and lstsq against exact rationals: Q orthonormal and A = Q R at the R-term level on
ill-conditioned matrices (Hilbert, Vandermonde, rows graded over +-60 binades) and random ones, R
upper triangular, lstsq backward stable and at least as accurate as NumPy's float64 lstsq."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import expansions as ex
from expansions import linalg as la
from expansions.generate import random_terms

KINDS = ("hilbert", "vandermonde", "graded", "random")


def _u(R: int, dtype="float64") -> Fraction:
    return Fraction(1, 2 ** (np.finfo(dtype).nmant * R))


def _fr(x):
    return np.asarray(x.to_fraction(), dtype=object)


def _scaled(x):
    """``(N, s)``: the exact integers N (an object array) with x = N / 2^s."""
    F = _fr(x)
    D = max(f.denominator for f in F.flat)
    return np.vectorize(lambda f: int(f * D), otypes=[object])(F), D.bit_length() - 1


def matrix(kind: str, m: int, n: int, R: int, seed: int) -> ex.ExpansionArray:
    """Hilbert 1/(i+j+1) and Vandermonde t_i^j (t_i = i/(m-1)), both given exactly and rounded to R
    terms; random full-precision R-term expansions in [1/8, 8), those rows scaled by powers of two
    over +-60 binades (graded)."""
    if kind == "hilbert":
        return ex.array(np.array([[Fraction(1, i + j + 1) for j in range(n)] for i in range(m)], dtype=object),
                        terms=R)
    if kind == "vandermonde":
        t = [Fraction(i, m - 1) for i in range(m)]
        return ex.array(np.array([[t[i] ** j for j in range(n)] for i in range(m)], dtype=object), terms=R)
    terms = random_terms((m, n), R, seed=seed, exponent_range=(-2, 2))
    if kind == "graded":
        terms = terms * np.ldexp(1.0, np.random.default_rng(seed).integers(-60, 61, m))[:, None, None]
    return ex.from_terms(terms)


def check_qr(A: ex.ExpansionArray, Q: ex.ExpansionArray, Rq: ex.ExpansionArray, c: int = 1):
    """Exactly, with N = the larger dimension: max |Q^T Q - I| <= c N u; each column
    ||a_j - Q r_j||_1 <= c N u ||a_j||_1; R upper triangular (exact zeros below the diagonal)."""
    m, n = A.shape
    k = Q.shape[1]
    bound = c * max(m, n) * _u(A.nterms, A.dtype)
    Qi, qs = _scaled(Q)
    Ri, rs = _scaled(Rq)
    Ai, s = _scaled(A)
    defect = Qi.T.dot(Qi) - np.eye(k, dtype=object) * 2 ** (2 * qs)
    assert max(abs(v) for v in defect.flat) <= bound * 2 ** (2 * qs)
    t = max(qs + rs, s)  # A - Q R and A, both times 2^t
    E, Ai = Ai * 2 ** (t - s) - Qi.dot(Ri) * 2 ** (t - qs - rs), Ai * 2 ** (t - s)
    for j in range(n):
        assert sum(abs(E[:, j])) <= bound * sum(abs(Ai[:, j])), j
    assert not np.tril(np.asarray(Rq.terms[..., 0]) != 0, -1).any()


@pytest.mark.parametrize("R", [2, 3, 4])
@pytest.mark.parametrize("kind", KINDS)
def test_qr_is_orthonormal_and_backward_stable(kind, R):
    """24 x 24 (two panels: blocked), 29 x 24 and 13 x 20: the measured defects are below 3.5 u."""
    for m, n in ((24, 24), (29, 24), (13, 20)):
        A = matrix(kind, m, n, R, m * n + R)
        Q, Rq = la.qr(A)
        assert Q.shape == (m, min(m, n)) and Rq.shape == (min(m, n), n)
        check_qr(A, Q, Rq)


def _lstsq_measure(A, x, b) -> Fraction:
    """||A^T r||_inf / (||A||_1 (||A||_inf ||x||_inf + ||b||_inf + ||r||_inf)), r = b - A x exactly: at
    most c u when x solves a least-squares problem within c u of A and b (normwise)."""
    Af, xf, bf = _fr(A), np.asarray(x, dtype=object), _fr(b)
    r = bf - Af.dot(xf)
    norm1 = max(sum(abs(v) for v in col) for col in Af.T)
    norm_inf = max(sum(abs(v) for v in row) for row in Af)
    big = norm_inf * max(abs(v) for v in xf) + max(abs(v) for v in bf) + max(abs(v) for v in r)
    return max(abs(v) for v in Af.T.dot(r)) / (norm1 * big)


def _backward_error(A, x, b) -> Fraction:
    """||b - A x||_inf / (||A||_inf ||x||_inf + ||b||_inf), exactly."""
    Af, xf, bf = _fr(A), np.asarray(x, dtype=object), _fr(b)
    r = bf - Af.dot(xf)
    norm_inf = max(sum(abs(v) for v in row) for row in Af)
    return max(abs(v) for v in r) / (norm_inf * max(abs(v) for v in xf) + max(abs(v) for v in bf))


def _numpy_lstsq(A, b):
    return [Fraction(v) for v in np.linalg.lstsq(A.to_float(), b.to_float(), rcond=None)[0]]


@pytest.mark.parametrize("R", [2, 3, 4])
@pytest.mark.parametrize("kind", KINDS)
def test_lstsq_is_backward_stable(kind, R):
    """b = (1, ..., 1) (a smooth right-hand side: x of moderate size, as in fitting).  Tall 29 x 24:
    the least-squares measure within 2 u (measured below 0.05 u) and below NumPy float64's on the
    same data; square 16 x 16 (a solve): the backward error within n u (measured below 0.8 u) and
    below NumPy's."""
    u = _u(R)
    m, n = 29, 24
    A = matrix(kind, m, n, R, 7 * R)
    b = ex.array(np.ones(m), terms=R)
    x = _fr(la.lstsq(A, b)[0])
    mine = _lstsq_measure(A, x, b)
    assert mine <= 2 * u and mine <= _lstsq_measure(A, _numpy_lstsq(A, b), b)
    A, b = A[:16, :16], b[:16]
    x = _fr(la.lstsq(A, b)[0])
    mine = _backward_error(A, x, b)
    assert mine <= 16 * u and mine <= _backward_error(A, _numpy_lstsq(A, b), b)


def exact_least_squares(A, b) -> list[Fraction]:
    """The exact least-squares solution: the normal equations A^T A x = A^T b on Fractions."""
    Af, bf = _fr(A), _fr(b)
    M = [list(row) + [v] for row, v in zip(Af.T.dot(Af).tolist(), Af.T.dot(bf).tolist())]
    n = len(M)
    for k in range(n):
        for i in range(k + 1, n):
            f = M[i][k] / M[k][k]
            M[i] = [v - f * w for v, w in zip(M[i], M[k])]
    x = [Fraction(0)] * n
    for k in range(n - 1, -1, -1):
        x[k] = (M[k][n] - sum(M[k][j] * x[j] for j in range(k + 1, n))) / M[k][k]
    return x


@pytest.mark.parametrize("R", [2, 3, 4])
def test_lstsq_forward_error_where_well_conditioned(R):
    """Random 20 x 8 and 12 x 12 (condition numbers about 10): the relative error against the exact
    least-squares solution within 4 n u (cond + cond^2 ||r|| / (||A|| ||x||)) (the perturbation bound
    of Golub and Van Loan, 5.3.8), and below NumPy float64's."""
    u = _u(R)
    for m, n in ((20, 8), (12, 12)):
        A = matrix("random", m, n, R, m + n + R)
        b = ex.array(np.random.default_rng(m + R).standard_normal(m), terms=R)
        x, res, rank, s = la.lstsq(A, b)
        assert rank == n and s is None and (res.shape == () if m > n else res.shape == (0,))
        exact = exact_least_squares(A, b)
        scale = max(abs(e) for e in exact)
        mine, numpy = (max(abs(v - e) for v, e in zip(y, exact)) / scale for y in (_fr(x), _numpy_lstsq(A, b)))
        a = A.to_float()
        cond = np.linalg.cond(a)
        r = np.linalg.norm(b.to_float() - a @ x.to_float()) / (np.linalg.norm(a, 2) * np.linalg.norm(x.to_float()))
        assert mine <= 4 * n * u * Fraction(cond + cond**2 * r) and mine <= numpy


def test_qr_modes_shapes_and_numpy_signs():
    """'reduced', 'complete', 'r' as NumPy, stacked; R's diagonal has LAPACK's signs, so Q and R agree
    with NumPy's float64 QR to float64 accuracy; 'r' is the R of 'reduced'."""
    rng = np.random.default_rng(11)
    a = rng.standard_normal((2, 7, 4))
    A = ex.array(a, terms=2)
    for mode in ("reduced", "complete"):
        Q, Rq = la.qr(A, mode=mode)
        Qn, Rn = np.linalg.qr(a, mode=mode)
        assert Q.shape == Qn.shape and Rq.shape == Rn.shape
        np.testing.assert_allclose(Q.to_float(), Qn, atol=1e-13)
        np.testing.assert_allclose(Rq.to_float(), Rn, atol=1e-13)
        for i in range(2):
            check_qr(A[i], Q[i], Rq[i])
    assert np.array_equal(la.qr(A, mode="r").terms, la.qr(A)[1].terms)
    Qc, Rc = np.linalg.qr(ex.array(a[0].T, terms=3), mode="complete")  # through NumPy's protocol; wide
    assert Qc.shape == (4, 4) and Rc.shape == (4, 7)
    check_qr(ex.array(a[0].T, terms=3), Qc, Rc)
    with pytest.raises(ValueError, match="raw"):
        la.qr(A, mode="raw")
    H = matrix("hilbert", 15, 12, 2, 0)
    H32 = ex.array(H.to_fraction(), terms=2, dtype="float32")  # float32 terms: u = 2^-46
    Q, Rq = la.qr(H32)
    assert Q.dtype == np.float32 and Rq.dtype == np.float32
    check_qr(H32, Q, Rq)


@pytest.mark.parametrize("shape", [(12, 8), (6, 11), (9, 9)])
def test_householder_panels(monkeypatch, shape):
    """Panels of 3 columns: every step of the blocked algorithm (the panel's reflections, the compact
    WY trailing update, Q accumulated panel by panel) on stacked matrices; lstsq through it."""
    monkeypatch.setattr(la, "LEAF", 3)
    R = 3
    m, n = shape
    A = ex.from_terms(random_terms((2,) + shape, R, seed=m * n))
    Q, Rq = la.qr(A)
    for i in range(2):
        check_qr(A[i], Q[i], Rq[i])
    Qc, Rc = la.qr(A[0], mode="complete")
    check_qr(A[0], Qc, Rc)
    if m >= n:
        b = ex.array(np.random.default_rng(m).standard_normal(m), terms=R)
        x = _fr(la.lstsq(A[0], b)[0])
        assert _lstsq_measure(A[0], x, b) <= n * _u(R)


def test_rank_deficiency_and_special_columns():
    """A zero column: tau = 0 (no reflection), a zero diagonal entry of R, Q still orthonormal; lstsq
    raises.  Columns already upper triangular keep their entries (beta = x_0).  Entries near the
    format's range: the norms are taken of columns scaled by powers of two (no overflow)."""
    A = ex.array(np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0], [0.0, 0.0, 5.0], [0.0, 0.0, 7.0]]), terms=2)
    Q, Rq = la.qr(A)
    check_qr(A, Q, Rq)
    assert float(Rq[0, 0]) == 1.0 and float(Rq[1, 1]) == 0.0
    with pytest.raises(la.LinAlgError, match="rank-deficient"):
        la.lstsq(A, ex.array(np.ones(4), terms=2))
    big = ex.array(np.random.default_rng(2).standard_normal((6, 4)) * 2.0**1000, terms=2)
    Q, Rq = la.qr(big)
    check_qr(big, Q, Rq)
    tiny = ex.array(np.random.default_rng(3).standard_normal((6, 4)) * 2.0**-900, terms=2)
    Q, Rq = la.qr(tiny)
    check_qr(tiny, Q, Rq)
