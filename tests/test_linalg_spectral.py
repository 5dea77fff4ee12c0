"""eigh, eigvalsh, svd, svdvals, pinv, matrix_rank, cond (refinement of float64 LAPACK on exact-slice
products): eigen- and singular values against mpmath at the same precision plus 20 bits, and, exactly
(integers), the residuals ||A V - V diag(w)||_F, ||A - U diag(s) V^T||_F and the orthogonality
defects at most N 2^4 u (relative to ||A||_2 for the residuals) on random, graded, nearly singular or
rank-deficient, clustered, Hilbert and exactly double-eigenvalue matrices; NumPy's signatures through
np.linalg."""

from __future__ import annotations

import warnings
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import expansions as ex
from expansions import linalg as la

#: The bound of the tests, in units of n u: n 2^4 u.
BOUND = 2 ** 4


def _u(R: int, dtype="float64") -> Fraction:
    return Fraction(1, 2 ** (np.finfo(dtype).nmant * R))


def _scaled(x):
    """``(N, s)``: the exact integers N (an object array) with x = N / 2^s."""
    F = np.asarray(x.to_fraction(), dtype=object)
    D = max(f.denominator for f in F.flat)
    return np.vectorize(lambda f: int(f * D), otypes=[object])(F), D.bit_length() - 1


def _symmetric(M):
    """The exactly symmetric matrix of M's lower triangle."""
    return np.tril(M) + np.tril(M, -1).T


def _householder(n: int, rng) -> np.ndarray:
    """An exactly orthogonal matrix with dyadic entries: I - 2 v v^T / n for a random +-1 vector v
    (n a power of two)."""
    v = rng.choice([-1.0, 1.0], n)
    return np.eye(n) - (2.0 / n) * np.outer(v, v)


def matrix(kind: str, n: int, seed: int) -> np.ndarray:
    """Symmetric float64 test matrices (given exactly to every R)."""
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((n, n))
    if kind == "random":
        return _symmetric(M)
    if kind == "graded":  # rows and columns scaled over +-30 binades: eigenvalues over +-60
        d = np.ldexp(1.0, rng.integers(-30, 31, n))
        return _symmetric(M * d[:, None] * d[None, :])
    Q = np.linalg.qr(M)[0]
    ev = np.linspace(1.0, 2.0, n)
    if kind == "singular":  # one eigenvalue 1e-30 of the rounded Q diag Q^T
        ev[0] = 1e-30
    elif kind == "clustered":  # gaps of about 1e-12 and (after rounding to float64) 1e-15
        ev[2] = ev[3] + 1e-12
        ev[5] = ev[6] + 1e-20
    if kind in ("singular", "clustered"):
        return _symmetric((Q * ev) @ Q.T)
    if kind == "hilbert":
        return 1.0 / (np.arange(n)[:, None] + np.arange(n)[None, :] + 1)
    if kind == "double":  # exactly (1, 1, 2, 3, ...) in an exactly orthogonal dyadic basis
        H = _householder(n, rng) @ _householder(n, rng)
        return H @ np.diag([1.0, 1.0] + [float(k) for k in range(2, n)]) @ H.T
    raise ValueError(kind)


def check_eigh(A: ex.ExpansionArray, w: ex.ExpansionArray, V: ex.ExpansionArray, c: int = BOUND):
    """Exactly: ||A V - V diag(w)||_F <= c n u max|w| and ||V^T V - I||_F <= c n u, w ascending."""
    n = A.shape[-1]
    u = _u(A.nterms, A.dtype)
    Ai, sa = _scaled(A)
    Vi, sv = _scaled(V)
    wi, sw = _scaled(w)
    assert all(wi[k] <= wi[k + 1] for k in range(n - 1))
    t = max(sa, sw)  # A V - V diag(w), times 2^(t + sv)
    res = Ai.dot(Vi) * 2 ** (t - sa) - Vi * (wi * 2 ** (t - sw))[None, :]
    scale = max(abs(x) for x in wi.flat) * 2 ** (t - sw + sv)
    assert sum(x * x for x in res.flat) <= (c * n * u * scale) ** 2
    defect = Vi.T.dot(Vi) - np.eye(n, dtype=object) * 2 ** (2 * sv)
    assert sum(x * x for x in defect.flat) <= (c * n * u * 2 ** (2 * sv)) ** 2


@pytest.mark.parametrize("R", [2, 3, 4])
@pytest.mark.parametrize("kind", ["random", "graded", "singular", "clustered", "hilbert", "double"])
def test_eigh_residual_and_orthogonality(kind, R):
    n = 8
    A = ex.array(matrix(kind, n, 10 * R + n), terms=R)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        w, V = la.eigh(A)
    assert w.shape == (n,) and V.shape == (n, n) and w.nterms == R
    check_eigh(A, w, V)


@pytest.mark.slow
@pytest.mark.parametrize("n, R, seed", [(16, 4, 120), (33, 3, 36), (16, 8, 24)])
def test_eigh_graded_larger(n, R, seed):
    """Graded matrices whose eigenvalues span 1e-32 to 1 relative to ||A||: the small ones are
    resolved by first-order steps and rotations of the clusters the float64 start leaves."""
    A = ex.array(matrix("graded", n, seed), terms=R)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        w, V = la.eigh(A)
    check_eigh(A, w, V)


@pytest.mark.parametrize("R", [2, 3, 4])
def test_eigh_resolves_eigenvalues_float64_cannot_separate(R):
    """Eigenvalues 1 and 1 + 2^-70 (a double eigenvalue to float64) and 2, ..., 7, in an exactly
    orthogonal dyadic basis, so that A holds exactly in 2 terms: both found to n 2^4 u ||A||, with
    eigenvectors passing the residual and orthogonality checks."""
    n = 8
    rng = np.random.default_rng(R)
    H = (_householder(n, rng) @ _householder(n, rng)).astype(object)
    H = np.vectorize(Fraction, otypes=[object])(H)
    d = [Fraction(1), 1 + Fraction(1, 2 ** 70)] + [Fraction(k) for k in range(2, n)]
    A = ex.array(H.dot(np.diag(np.array(d, dtype=object))).dot(H.T), terms=R)
    assert abs(np.diff(np.linalg.eigvalsh(np.asarray(A.terms[..., 0]))[:2])) < 2 ** -40  # float64: double
    w, V = la.eigh(A)
    check_eigh(A, w, V)
    got = np.asarray(w.to_fraction())
    assert all(abs(g - e) <= BOUND * n * _u(R) * (n - 1) for g, e in zip(got, d))


@pytest.mark.parametrize("R", [2, 3, 4])
def test_eigenvalues_against_mpmath(R):
    """Well separated spectra: |w_i - mpmath's| <= n 2^4 u ||A||_2 (mpmath.eigsy at 53 R + 20 bits)."""
    n = 7
    A = ex.array(matrix("random", n, R), terms=R)
    w = la.eigvalsh(A)
    with mpmath.workprec(53 * R + 20):
        want = sorted(mpmath.eigsy(mpmath.matrix(np.asarray(A.to_mpmath()).tolist()), eigvals_only=True))
        got = np.asarray(w.to_mpmath())
        scale = max(abs(x) for x in want)
        for g, e in zip(got, want):
            assert abs(g - e) <= BOUND * n * mpmath.mpf(_u(R).numerator) / _u(R).denominator * scale


def test_eigh_float32_terms_and_eight_terms():
    A = ex.array(matrix("graded", 6, 3).astype(np.float32), terms=2, dtype="float32")
    check_eigh(A, *la.eigh(A))
    A = ex.array(matrix("clustered", 8, 4), terms=8)
    check_eigh(A, *la.eigh(A))


def test_eigh_through_numpy_uplo_and_stacks():
    rng = np.random.default_rng(5)
    M = rng.standard_normal((2, 5, 5))
    A = ex.array(M, terms=2)
    res = np.linalg.eigh(A)
    assert res.eigenvalues.shape == (2, 5) and res.eigenvectors.shape == (2, 5, 5)
    for b in range(2):  # each matrix of the stack as alone, bit for bit; the lower triangle read
        w, V = la.eigh(A[b])
        assert np.array_equal(np.asarray(res.eigenvalues[b].terms), np.asarray(w.terms))
        assert np.array_equal(np.asarray(res.eigenvectors[b].terms), np.asarray(V.terms))
        check_eigh(ex.array(_symmetric(M[b]), terms=2), w, V)
    upper = la.eigvalsh(A, UPLO="U")
    want = la.eigvalsh(ex.array(np.swapaxes(M, -1, -2), terms=2))
    assert np.array_equal(np.asarray(upper.terms), np.asarray(want.terms))
    assert np.array_equal(np.asarray(np.linalg.eigvalsh(A).terms), np.asarray(res.eigenvalues.terms))
    with pytest.raises(ValueError):
        la.eigh(A, UPLO="X")
    with pytest.raises(np.linalg.LinAlgError):
        la.eigh(ex.array(np.ones((2, 3)), terms=2))


def test_eigh_zero_and_empty_and_nan():
    w, V = la.eigh(ex.zeros((3, 3), terms=2))
    assert not np.asarray(w.terms).any() and np.array_equal(np.asarray(V.to_float()), np.eye(3))
    w, V = la.eigh(ex.zeros((0, 0), terms=2))
    assert w.shape == (0,) and V.shape == (0, 0)
    M = np.eye(3)
    M[1, 0] = np.nan
    w, V = la.eigh(ex.array(M, terms=2))
    assert np.isnan(np.asarray(w.to_float())).all() and np.isnan(np.asarray(V.to_float())).all()


def test_eigh_warns_when_the_refinement_stops_short(monkeypatch):
    """No step allowed: the float64 start is not at the R-term level, so eigh warns."""
    monkeypatch.setattr(la, "SPECTRAL_MAX_STEPS", 0)
    with pytest.warns(RuntimeWarning, match="did not reach"):
        la.eigh(ex.array(matrix("random", 6, 1), terms=2))


def rectangular(kind: str, m: int, n: int, seed: int) -> np.ndarray:
    """float64 test matrices for the SVD (given exactly to every R)."""
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((m, n))
    if kind == "random":
        return M
    if kind == "graded":  # rows scaled over +-30 binades
        return M * np.ldexp(1.0, rng.integers(-30, 31, m))[:, None]
    if kind == "rank":  # an exact product of small integers: rank 2 exactly (other singular values 0)
        return rng.integers(-3, 4, (m, 2)).astype(float) @ rng.integers(-3, 4, (2, n)).astype(float)
    if kind == "clustered":  # singular values 2, ..., 1 with a gap of 1e-13, rounded to float64
        k = min(m, n)
        sv = np.linspace(2.0, 1.0, k)
        sv[1] = sv[2] + 1e-13
        return np.linalg.qr(M)[0][:, :k] @ np.diag(sv) @ np.linalg.qr(rng.standard_normal((n, n)))[0][:k]
    if kind == "hilbert":
        return 1.0 / (np.arange(m)[:, None] + np.arange(n)[None, :] + 1)
    raise ValueError(kind)


def check_svd(A, U, s, Vh, c: int = BOUND):
    """Exactly, N = max(m, n): ||A - U diag(s) Vh||_F <= c N u s_0, ||U^T U - I||_F and
    ||Vh Vh^T - I||_F <= c N u; s descending and nonnegative."""
    m, n = A.shape
    k = s.shape[0]
    N = max(m, n)
    u = _u(A.nterms, A.dtype)
    Ai, sa = _scaled(A)
    Ui, su = _scaled(U)
    si, ss = _scaled(s)
    Vi, sv = _scaled(Vh)
    assert all(si[j] >= si[j + 1] for j in range(k - 1)) and all(x >= 0 for x in si)
    t = su + ss + sv
    product = (Ui[:, :k] * si[None, :]).dot(Vi[:k]) if k else np.zeros((m, n), dtype=object)
    res = Ai * 2 ** (t - sa) - product if t >= sa else Ai - product * 2 ** (sa - t)
    scale = (si[0] if k else 0) * 2 ** max(t - ss, sa - ss)
    assert sum(x * x for x in res.flat) <= (c * N * u * scale) ** 2
    for Q, q, rows in ((Ui.T, su, U.shape[1]), (Vi, sv, Vh.shape[0])):
        defect = Q.dot(Q.T) - np.eye(rows, dtype=object) * 2 ** (2 * q)
        assert sum(x * x for x in defect.flat) <= (c * N * u * 2 ** (2 * q)) ** 2


@pytest.mark.parametrize("R", [2, 3, 4])
@pytest.mark.parametrize("kind", ["random", "graded", "rank", "clustered", "hilbert"])
def test_svd_residual_and_orthogonality(kind, R):
    for m, n in ((7, 5), (4, 6)):
        A = ex.array(rectangular(kind, m, n, 10 * R + m), terms=R)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            U, s, Vh = la.svd(A)
        assert U.shape == (m, m) and s.shape == (min(m, n),) and Vh.shape == (n, n)
        check_svd(A, U, s, Vh)


@pytest.mark.slow
@pytest.mark.parametrize("m, n, R, seed", [(16, 16, 3, 35), (16, 18, 4, 38), (36, 33, 4, 73)])
def test_svd_graded_and_rank_deficient_larger(m, n, R, seed):
    """Graded (rows over +-30 binades) and rank-2 matrices at n = 16 to 36."""
    A = ex.array(rectangular("graded" if m < 30 else "rank", m, n, seed), terms=R)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        U, s, Vh = la.svd(A)
    check_svd(A, U, s, Vh)


@pytest.mark.parametrize("R", [2, 3, 4])
def test_singular_values_against_mpmath(R):
    """|s_i - mpmath's| <= N 2^4 u s_0 (mpmath.svd_r at 53 R + 20 bits)."""
    A = ex.array(rectangular("random", 6, 4, R), terms=R)
    s = la.svdvals(A)
    with mpmath.workprec(53 * R + 20):
        want = sorted(mpmath.svd_r(mpmath.matrix(np.asarray(A.to_mpmath()).tolist()), compute_uv=False),
                      reverse=True)
        got = np.asarray(s.to_mpmath())
        for g, e in zip(got, want):
            assert abs(g - e) <= BOUND * 6 * mpmath.mpf(_u(R).numerator) / _u(R).denominator * want[0]


def test_svd_reduced_float32_eight_terms_and_numpy():
    A = ex.array(rectangular("graded", 6, 4, 1).astype(np.float32), terms=2, dtype="float32")
    check_svd(A, *la.svd(A))
    A = ex.array(rectangular("random", 5, 4, 2), terms=8)
    check_svd(A, *la.svd(A))
    rng = np.random.default_rng(3)
    M = rng.standard_normal((2, 6, 4))
    A = ex.array(M, terms=2)
    res = np.linalg.svd(A, full_matrices=False)
    assert res.U.shape == (2, 6, 4) and res.S.shape == (2, 4) and res.Vh.shape == (2, 4, 4)
    for b in range(2):  # each matrix of the stack as alone, bit for bit
        U, s, Vh = la.svd(A[b])
        assert np.array_equal(np.asarray(res.U[b].terms), np.asarray(U[:, :4].terms))
        assert np.array_equal(np.asarray(res.S[b].terms), np.asarray(s.terms))
        assert np.array_equal(np.asarray(res.Vh[b].terms), np.asarray(Vh.terms))
    assert np.array_equal(np.asarray(np.linalg.svd(A, compute_uv=False).terms), np.asarray(res.S.terms))
    if hasattr(np.linalg, "svdvals"):
        assert np.array_equal(np.asarray(np.linalg.svdvals(A).terms), np.asarray(res.S.terms))
    U, s, Vh = la.svd(ex.zeros((3, 2), terms=2))
    assert not np.asarray(s.terms).any() and np.array_equal(np.asarray(U.to_float()), np.eye(3))
    with pytest.raises(np.linalg.LinAlgError):
        la.svd(ex.array([1.0, 2.0], terms=2))


def test_pinv_against_mpmath():
    """Full column rank: pinv = (A^T A)^-1 A^T, within 2^6 N u cond(A)^2 (mpmath at 300 bits)."""
    for R in (2, 4):
        M = rectangular("random", 6, 4, R)
        A = ex.array(M, terms=R)
        P = np.linalg.pinv(A)
        assert P.shape == (4, 6)
        with mpmath.workprec(300):
            Am = mpmath.matrix(np.asarray(A.to_mpmath()).tolist())
            want = mpmath.inverse(Am.T * Am) * Am.T
            err = mpmath.mnorm(mpmath.matrix(np.asarray(P.to_mpmath()).tolist()) - want, "F")
            assert err <= 2 ** 6 * 6 * float(_u(R)) * np.linalg.cond(M) ** 2 * mpmath.mnorm(want, "F")
    P = la.pinv(ex.array(rectangular("rank", 5, 4, 1), terms=2))  # rank 2: A P A = A
    A = ex.array(rectangular("rank", 5, 4, 1), terms=2)
    assert np.abs(np.asarray((A @ P @ A - A).to_float())).max() < 1e-28
    with pytest.raises(ValueError):
        la.pinv(A, rcond=1e-10, rtol=1e-10)


def test_matrix_rank_and_cond():
    rng = np.random.default_rng(4)
    assert la.matrix_rank(ex.array(rectangular("rank", 6, 5, 2), terms=3)) == 2
    M = rng.standard_normal((6, 5))
    assert np.linalg.matrix_rank(ex.array(M, terms=2)) == 5
    assert la.matrix_rank(ex.array(M, terms=2), tol=1e3) == 0
    assert list(la.matrix_rank(ex.array(np.stack([M, M * 0]), terms=2))) == [5, 0]
    assert la.matrix_rank(ex.array([0.0, 0.0], terms=2)) == 0 and la.matrix_rank(ex.array([0.0, 1.0], terms=2)) == 1
    # a rank-5 matrix whose float64 rank is 4: a fifth direction of size 1e-20 (exact in 2 terms)
    B = np.linalg.qr(rng.standard_normal((6, 5)))[0]
    A = ex.array(B[:, :4] @ rng.standard_normal((4, 5)), terms=2)
    A = A + ex.array(np.outer(B[:, 4], np.ones(5)), terms=2) * 1e-20
    assert np.linalg.matrix_rank(np.asarray(A.terms[..., 0])) == 4
    assert la.matrix_rank(A) == 5
    A = ex.array(M, terms=3)
    with mpmath.workprec(53 * 3 + 20):
        sv = mpmath.svd_r(mpmath.matrix(np.asarray(A.to_mpmath()).tolist()), compute_uv=False)
        want = max(sv) / min(sv)
        assert abs(np.linalg.cond(A).to_mpmath() / want - 1) < 2.0 ** (-52 * 3 + 10)
        assert abs(la.cond(A, -2).to_mpmath() * want - 1) < 2.0 ** (-52 * 3 + 10)
    S = ex.array(M[:5], terms=2)
    assert float(la.cond(S, 1)) == float(la.norm(S, 1) * la.norm(la.inv(S), 1))
    assert float(la.cond(ex.array([[1.0, 0.0], [0.0, 0.0]], terms=2), "fro")) == np.inf
    with pytest.raises(np.linalg.LinAlgError):
        la.cond(ex.zeros((0, 0), terms=2))
