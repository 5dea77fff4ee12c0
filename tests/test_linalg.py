"""expansions.linalg: NumPy's shapes and semantics, values against mpmath at the same precision, the
exact backward error of solve, and singular / not positive definite / NaN inputs."""

from __future__ import annotations

import warnings
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import expansions as ex
from expansions import linalg as la

U = {R: Fraction(1, 2 ** (52 * R)) for R in (2, 3, 4, 8)}  # the format's precision u = 2^-(R(p-1))


def _mp(x: ex.ExpansionArray):
    return mpmath.matrix(np.asarray(x.to_mpmath()).tolist()) if x.ndim == 2 else mpmath.matrix(
        np.asarray(x.to_mpmath()).tolist())


def _max_rel(got: ex.ExpansionArray, want, prec) -> float:
    with mpmath.workprec(prec):
        g = np.asarray(got.to_mpmath()).reshape(-1)
        w = [want[i] for i in range(len(g))] if not isinstance(want, list) else want
        scale = max(abs(v) for v in w)
        return float(max(abs(a - b) for a, b in zip(g, w)) / scale)


def _fr(x):
    return np.asarray(x.to_fraction(), dtype=object)


def backward_error(A, x, b) -> Fraction:
    """||A x - b||_inf / (||A||_inf ||x||_inf + ||b||_inf), exactly."""
    Af, xf, bf = _fr(A), _fr(x), _fr(b)
    r = Af.dot(xf) - bf
    nA = max(sum(abs(v) for v in row) for row in Af)
    return max(abs(v) for v in r) / (nA * max(abs(v) for v in xf) + max(abs(v) for v in bf))


@pytest.mark.parametrize("R", [2, 3, 4, 8])
def test_solve_backward_error_and_against_mpmath(R):
    rng = np.random.default_rng(R)
    n = 6
    A = ex.array(rng.standard_normal((n, n)), terms=R)
    b = ex.array(rng.standard_normal(n), terms=R)
    x = la.solve(A, b)
    assert x.shape == (n,) and x.nterms == R
    assert backward_error(A, x, b) <= 8 * n * U[R]  # c n u with c = 8 (the growth factor here is small)
    with mpmath.workprec(53 * R):
        want = mpmath.lu_solve(_mp(A), mpmath.matrix(np.asarray(b.to_mpmath()).tolist()))
    assert _max_rel(x, [want[i] for i in range(n)], 53 * R) < 2.0 ** (-50 * R + 16)


def test_shapes_follow_numpy():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, 4, 4))
    b = rng.standard_normal((3, 4, 2))
    A, B = ex.array(a, terms=2), ex.array(b, terms=2)
    assert la.solve(A, B).shape == np.linalg.solve(a, b).shape
    assert la.solve(A, ex.array(b[0, :, 0], terms=2)).shape == np.linalg.solve(a, b[0, :, 0]).shape
    assert la.solve(A[0], B).shape == np.linalg.solve(a[0], b).shape  # the matrix broadcasts over b's stack
    assert la.inv(A).shape == (3, 4, 4) and la.det(A).shape == (3,)
    q, r = la.qr(ex.array(rng.standard_normal((5, 3)), terms=2))
    assert (q.shape, r.shape) == ((5, 3), (3, 3))
    q, r = la.qr(ex.array(rng.standard_normal((2, 3, 5)), terms=2))
    assert (q.shape, r.shape) == ((2, 3, 3), (2, 3, 5))
    assert la.norm(A, axis=(1, 2)).shape == (3,) and la.norm(A[0, 0]).shape == ()
    np.testing.assert_allclose(la.solve(A, B).to_float(), np.linalg.solve(a, b), rtol=1e-12)
    np.testing.assert_allclose(la.det(A).to_float(), np.linalg.det(a), rtol=1e-12)
    for o in (None, 1, -1, np.inf, -np.inf, "fro"):
        np.testing.assert_allclose(float(la.norm(A[1], o)), np.linalg.norm(a[1], o), rtol=1e-14)
    for o in (None, 1, 2, np.inf, -np.inf):
        np.testing.assert_allclose(float(la.norm(A[1, 0], o)), np.linalg.norm(a[1, 0], o), rtol=1e-14)
    # through NumPy's protocol
    assert np.linalg.solve(A, B).shape == (3, 4, 2) and np.linalg.det(A).shape == (3,)


@pytest.mark.parametrize("R", [2, 4])
def test_lu_det_inv_cholesky_qr_against_mpmath(R):
    rng = np.random.default_rng(10 + R)
    n = 5
    a = rng.standard_normal((n, n))
    A = ex.array(a, terms=R)
    prec = 53 * R
    tol = 2.0 ** (-50 * R + 20)
    P, L, Uf = la.lu(A)
    assert (ex.array(P, terms=R) @ L @ Uf == A).all() or \
        np.abs((ex.array(P, terms=R) @ L @ Uf - A).to_float()).max() <= 2.0 ** (-50 * R + 8)
    with mpmath.workprec(prec):
        M = _mp(A)
        d = mpmath.det(M)
        assert abs(la.det(A).to_mpmath() - d) / abs(d) < tol
        inv = mpmath.inverse(M)
        assert _max_rel(la.inv(A), [inv[i, j] for i in range(n) for j in range(n)], prec) < tol
        S = M * M.T + n * mpmath.eye(n)
        s = (A @ A.T) + ex.array(n * np.eye(n), terms=R)
        Lm = mpmath.cholesky(S)
        assert _max_rel(la.cholesky(s), [Lm[i, j] for i in range(n) for j in range(n)], prec) < tol
        Q, Rq = la.qr(A)
        assert np.abs((Q @ Rq - A).to_float()).max() <= 2.0 ** (-50 * R + 8)
        assert np.abs((Q.T @ Q).to_float() - np.eye(n)).max() <= 2.0 ** (-50 * R + 8)
        assert np.all(np.triu(np.ones((n, n))) >= (np.asarray(_fr(Rq)) != 0))  # R upper triangular


def test_lstsq_matches_the_normal_equations():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((7, 3)), rng.standard_normal(7)
    A, B = ex.array(a, terms=3), ex.array(b, terms=3)
    x, res, rank, s = la.lstsq(A, B)
    assert x.shape == (3,) and rank == 3 and s is None
    # A^T (A x - b) = 0 at the least-squares solution: small relative to |A|^2 |x|
    g = np.asarray(_fr(A)).T.dot(np.asarray(_fr(A)).dot(_fr(x)) - _fr(B))
    assert max(abs(v) for v in g) < Fraction(1, 2 ** 140)
    np.testing.assert_allclose(x.to_float(), np.linalg.lstsq(a, b, rcond=None)[0], rtol=1e-12)
    np.testing.assert_allclose(float(res), np.linalg.lstsq(a, b, rcond=None)[1][0], rtol=1e-12)


def test_adversarial_inputs():
    z = ex.array(np.ones((3, 3)), terms=2)
    with pytest.raises(la.LinAlgError, match="Singular"):
        la.solve(z, ex.array(np.ones(3), terms=2))
    with pytest.raises(la.LinAlgError, match="Singular"):
        la.inv(z)
    assert la.det(z) == 0
    perm = ex.array([[0.0, 1.0], [1.0, 0.0]], terms=2)  # a zero first pivot: pivoting needed
    assert (la.solve(perm, ex.array([2.0, 3.0], terms=2)) == ex.array([3.0, 2.0], terms=2)).all()
    assert float(la.det(perm)) == -1.0
    with pytest.raises(la.LinAlgError, match="positive definite"):
        la.cholesky(ex.array([[1.0, 2.0], [2.0, 1.0]], terms=2))
    with pytest.raises(la.LinAlgError, match="square"):
        la.solve(ex.array(np.ones((2, 3)), terms=2), ex.array(np.ones(2), terms=2))
    one = ex.array([[-4.0]], terms=3)
    assert float(la.solve(one, ex.array([2.0], terms=3))[0]) == -0.5 and float(la.det(one)) == -4.0
    assert la.solve(ex.zeros((0, 0), terms=2), ex.zeros(0, terms=2)).shape == (0,)
    nan = ex.array([[np.nan, 1.0], [1.0, 2.0]], terms=2)
    assert np.isnan(la.solve(nan, ex.array([1.0, 1.0], terms=2)).to_float()).all()
    with pytest.raises(TypeError, match="ExpansionArray"):
        la.solve(np.eye(2), np.ones(2))


def test_hilbert_like_system_of_condition_1e40():
    """The example's system (examples/linear_solve.py) at R = 4: the solution is accurate to about
    u * cond, far beyond float64."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "linear_solve", Path(__file__).resolve().parents[1] / "examples" / "linear_solve.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    A, b, exact = m.system(12)
    x = la.solve(ex.array(A, terms=4), ex.array(b, terms=4))
    err = max(abs(v - e) for v, e in zip(_fr(x), exact)) / max(abs(e) for e in exact)
    assert err < Fraction(1, 10 ** 15)


@pytest.mark.gpu
@pytest.mark.skipif(not ex.cuda.available(), reason="no CUDA GPU visible to CuPy")
def test_cuda_matches_cpu():
    """The routines on cuda arrays give the CPU's bits (the same operations, each bit-identical)."""
    rng = np.random.default_rng(5)
    a = ex.array(rng.standard_normal((2, 5, 5)), terms=4)
    b = ex.array(rng.standard_normal((2, 5, 3)), terms=4)
    s = a @ np.swapaxes(a, -1, -2) + ex.array(5 * np.eye(5), terms=4)
    g = {k: v.to_device("cuda") for k, v in (("a", a), ("b", b), ("s", s))}
    pairs = [(la.solve(a, b), la.solve(g["a"], g["b"])), (la.inv(a), la.inv(g["a"])), (la.det(a), la.det(g["a"])),
             (la.cholesky(s), la.cholesky(g["s"])), (la.qr(a)[0], la.qr(g["a"])[0]), (la.qr(a)[1], la.qr(g["a"])[1]),
             (la.norm(a, axis=(1, 2)), la.norm(g["a"], axis=(1, 2)))]
    for i, (c, d) in enumerate(pairs):
        d = d.to_device("cpu")
        assert np.array_equal(c.terms.view(np.uint64), d.terms.view(np.uint64)), i


# ----------------------------------------------------------------------------------------------
# the recursive algorithms (their updates are matrix products, by slices where that is faster)


def _inf_norm(M) -> Fraction:
    return max(sum(abs(v) for v in row) for row in M)


@pytest.mark.parametrize("leaf", [2, 5])
@pytest.mark.parametrize("R", [2, 3])
def test_recursive_factorizations_small_leaves(monkeypatch, leaf, R):
    """Leaves of 2 and 5 columns on 11 x 11 matrices run every level of the recursions (LU,
    triangular solves, Cholesky); the residuals are exact rationals, in units of u = 2^-(52 R)."""
    monkeypatch.setattr(la, "LEAF", leaf)
    rng = np.random.default_rng(20 + leaf + R)
    n = 11
    A = ex.array(rng.standard_normal((n, n)), terms=R)
    b = ex.array(rng.standard_normal((n, 3)), terms=R)
    u = U[R]
    P, L, Uf = la.lu(A)
    Af = _fr(A)
    res = np.asarray(_fr(ex.array(P, terms=R)).T).dot(Af) - _fr(L).dot(_fr(Uf))
    assert _inf_norm(res) <= 8 * n * u * _inf_norm(Af)
    x = la.solve(A, b)
    for j in range(3):
        assert backward_error(A, x[:, j], b[:, j]) <= 8 * n * u
    inv = _fr(la.inv(A))
    assert _inf_norm(Af.dot(inv) - np.eye(n, dtype=object)) <= 64 * n * u * _inf_norm(Af) * _inf_norm(inv)
    with mpmath.workprec(53 * R):
        d = mpmath.det(_mp(A))
        assert abs(la.det(A).to_mpmath() - d) / abs(d) < 2.0 ** (-50 * R + 20)
    S = ex.matmul(A, A.T) + ex.array(n * np.eye(n), terms=R)
    Lc = _fr(la.cholesky(S))
    assert np.all(np.triu(np.ones((n, n)), 1) * (Lc != 0) == 0)
    assert _inf_norm(_fr(S) - Lc.dot(Lc.T)) <= 8 * n * u * _inf_norm(_fr(S))


def test_recursive_lu_zero_pivots_and_stacks(monkeypatch):
    """A singular matrix (a zero column) and a stack of matrices through the recursion."""
    monkeypatch.setattr(la, "LEAF", 2)
    rng = np.random.default_rng(31)
    a = rng.standard_normal((3, 7, 7))
    a[1, :, 4] = 0
    A = ex.array(a, terms=2)
    f, perm, swaps = la.lu_factor(A)
    assert float(la.det(A)[1]) == 0.0
    with pytest.raises(la.LinAlgError, match="Singular"):
        la.solve(A, ex.array(np.ones((3, 7)), terms=2))
    for i in (0, 2):
        assert backward_error(A[i], la.solve(A[i], ex.array(np.ones(7), terms=2)), ex.array(np.ones(7), terms=2)) \
            <= 8 * 7 * U[2]
        np.testing.assert_allclose(float(la.det(A)[i]), np.linalg.det(a[i]), rtol=1e-12)


@pytest.mark.parametrize("R", [2, 4])
def test_blocked_solve_of_size_48(R):
    """n = 48 > LEAF: the updates are products by slices (the cost model picks them at these sizes);
    the backward error, computed exactly, is within 8 n u."""
    rng = np.random.default_rng(40 + R)
    n = 48
    A = ex.array(rng.standard_normal((n, n)), terms=R)
    b = ex.array(rng.standard_normal(n), terms=R)
    assert ex.reduce.choose_method(n - 24, 24, 24, R, "float64") == "slices"
    x = la.solve(A, b)
    assert backward_error(A, x, b) <= 8 * n * U[R]


@pytest.mark.parametrize("R", [2, 3])
def test_refined_solve_converges(R):
    rng = np.random.default_rng(50 + R)
    n = 30
    A = ex.array(rng.standard_normal((n, n)), terms=R)
    b = ex.array(rng.standard_normal((n, 2)), terms=R)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = la.solve(A, b, refine=True)
    for j in range(2):
        assert backward_error(A, x[:, j], b[:, j]) <= 8 * n * U[R]
    ref = la.solve(A, b)
    assert np.abs((x - ref).to_float()).max() <= 2.0 ** (-48 * R) * np.abs(ref.to_float()).max() * 1e6


def test_refined_solve_falls_back_with_a_warning():
    """Hilbert 14 (condition ~1e19 > 1/u of float64): refinement from float64 factors cannot converge;
    the LU in expansions answers, with a RuntimeWarning.  A matrix singular in float64 likewise."""
    n, R = 14, 4
    H = ex.array(np.array([[Fraction(1, i + j + 1) for j in range(n)] for i in range(n)], dtype=object), terms=R)
    b = ex.array(np.ones(n), terms=R)
    with pytest.warns(RuntimeWarning, match="did not converge"):
        x = la.solve(H, b, refine=True)
    assert np.array_equal(x.terms, la.solve(H, b).terms)
    eps = ex.array([[1.0, 1.0], [1.0, 1.0]], terms=2) + ex.array([[0.0, 0.0], [0.0, 2.0**-70]], terms=2)
    with pytest.warns(RuntimeWarning, match="did not converge"):
        y = la.solve(eps, ex.array([1.0, 2.0], terms=2), refine=True)
    assert _fr(y).tolist() == [1 - 2**70, 2**70]


def test_refined_solve_float32_and_shapes():
    rng = np.random.default_rng(61)
    A = ex.array(rng.standard_normal((2, 9, 9)), terms=3, dtype="float32")
    b = ex.array(rng.standard_normal((2, 9)), terms=3, dtype="float32")
    x = la.solve(A, b[..., None], refine=True)[..., 0]
    assert x.shape == (2, 9) and x.dtype == np.float32 and x.nterms == 3
    for i in range(2):
        assert backward_error(A[i], x[i], b[i]) <= 8 * 9 * Fraction(1, 2 ** (23 * 3))
    assert la.solve(ex.zeros((0, 0), terms=2), ex.zeros(0, terms=2), refine=True).shape == (0,)


def test_pivot_is_the_exact_largest():
    """The pivot search decides by leading terms only where they decide: a leading term one ulp
    larger with a smaller exact value loses; equal values go to the first row."""
    t = np.zeros((4, 4, 2))
    t[:, :, 0] = np.eye(4) * 0.25
    t[0, 0] = [1.0 + 2.0**-52, -(2.0**-53)]  # 1 + 2^-53
    t[2, 0] = [1.0, 0.75 * 2.0**-52]  # 1 + 0.75 2^-52: larger, with a smaller leading term
    t[3, 0] = [-1.0, -0.75 * 2.0**-52]  # the same magnitude, later: not chosen
    A = ex.from_terms(t)
    _, perm, _ = la.lu_factor(A)
    assert int(perm[0]) == 2
    assert int(la._pivot(ex.from_terms(t[:, 0][None]))[0]) == 2
