"""Reductions (expansions.reduce, expansions.cpu.reduce): the NumPy twin against the exact reference
of the canonical tree, bit for bit; independence of the chunking; exact errors against the proven
bounds (expansions.bounds.sum_tree / dot); the public sum, dot and matmul."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from helpers import bits

import expansions as ex
from expansions import bounds
from expansions import reduce as red
from expansions.cpu import reduce as twin
from expansions.formats import format_of
from expansions.generate import random_terms
from expansions.reference import reduce as ref
from expansions.reference.exact import exact_rows
from expansions.reference.fp import from_float, to_float
from expansions.testing import flush_below, mixed_pairs

KINDS = ("random", "pairs", "cancel", "spread", "zeros", "nonfinite", "overflow")


def elements(kind, N, R, dt, rng, product=False):
    """(N, R) terms: N expansions to reduce in this order, of an adversarial family."""
    fmt = format_of(dt)
    seed = int(rng.integers(1 << 30))
    kw = dict(min_exponent=-400) if (product and dt == "float64") else {}
    if kind == "random":
        return random_terms((N,), R, dt, seed=seed, exponent_range=(-20, 20), **kw)
    if kind == "pairs":  # the verification's adversarial pairs, as neighbours of the tree
        x, y = mixed_pairs(max(16, (N + 1) // 2), R, dt, rng)
        order = rng.permutation(x.shape[0])  # a mix of the families even for small N
        out = np.stack([x[order], y[order]], axis=1).reshape(-1, R)[:N]
    elif kind == "cancel":  # x, -x neighbours whose sums cancel exactly, with a few survivors
        x = random_terms((N,), R, dt, seed=seed, exponent_range=(-5, 5), p_zero=0.2)
        out = x.copy()
        out[1::2] = -x[0::2][: N // 2]
        keep = rng.random(N) < 0.2
        out[keep] = x[keep]
    elif kind == "spread":  # neighbours that differ by hundreds of binades
        big = (-300, 300) if dt == "float64" else (-60, 60)
        out = random_terms((N,), R, dt, seed=seed, exponent_range=big, max_gap=fmt.p, **kw)
    elif kind == "zeros":  # signed zeros, alone and next to numbers
        out = np.where(rng.random((N, 1)) < 0.5, -0.0, 0.0).astype(dt) * np.ones((1, R), dt)
        some = rng.random(N) < 0.3
        out[some] = random_terms((int(some.sum()),), R, dt, seed=seed, **kw)
        out[rng.random(N) < 0.3, 0] = -0.0
    elif kind == "nonfinite":
        out = random_terms((N,), R, dt, seed=seed, **kw)
        vals = np.array([np.inf, -np.inf, np.nan], dtype=dt)
        hit = rng.random(N) < 0.25
        where = rng.integers(0, R, N)
        out[hit, where[hit]] = vals[rng.integers(0, 3, int(hit.sum()))]
    elif kind == "overflow":  # sums (and products) beyond the largest float
        hi = (fmt.emax - 3, fmt.emax) if not product else (fmt.emax // 2 - 1, fmt.emax // 2 + 2)
        out = random_terms((N,), R, dt, seed=seed, exponent_range=hi, same_sign=True)
        out[rng.random(N) < 0.2] *= -1
    else:
        raise ValueError(kind)
    if product and dt == "float64":  # keep 2Prod errors representable (Dekker = FMA there)
        out = flush_below(out, -480)
    return np.ascontiguousarray(out.astype(dt))


def ref_rows(R, dt, x3, y3=None):
    """The exact reference tree of each row of (batch, n, R) arrays (products with y3)."""
    fmt = format_of(dt)
    out = []
    for b in range(x3.shape[0]):
        xs = [tuple(from_float(v) for v in e) for e in x3[b]]
        if y3 is None:
            r = ref.tree(xs, R, fmt)
        else:
            r = ref.dot(xs, [tuple(from_float(v) for v in e) for e in y3[b]], R, fmt)
        out.append([to_float(v) for v in r])
    return np.array(out, dtype=dt).reshape(-1, R)


def table(got, want):
    bad = np.flatnonzero((bits(got) != bits(want)).any(axis=1))
    if not bad.size:
        return ""
    return f"{bad.size} rows differ, first {bad[0]}: got {got[bad[0]]} want {want[bad[0]]}"


# ---------------------------------------------------------------------------------------------
# twin vs exact reference


@pytest.mark.parametrize("dt", ("float64", "float32"))
@pytest.mark.parametrize("R", (2, 3, 4, 8))
def test_twin_sum_equals_reference(R, dt):
    rng = np.random.default_rng([R, len(dt)])
    failures = []
    with np.errstate(all="ignore"):
        for kind in KINDS:
            for n in (0, 1, 2, 3, 5, 9) if R <= 4 else (1, 3, 6):
                batch = 3 if R <= 3 else 2
                x = elements(kind, batch * n, R, dt, rng)
                for chunk in (2, 8):
                    got = twin.reduce(x, batch, n, R, chunk=chunk)
                    if msg := table(got, ref_rows(R, dt, x.reshape(batch, n, R))):
                        failures.append(f"{kind} n={n} chunk={chunk}: {msg}")
    assert not failures, "\n".join(failures[:8])


@pytest.mark.parametrize("dt", ("float64", "float32"))
@pytest.mark.parametrize("R", (2, 3, 4, 8))
def test_twin_dot_equals_reference(R, dt):
    rng = np.random.default_rng([R, len(dt), 1])
    failures = []
    with np.errstate(all="ignore"):
        for kind in KINDS:
            for n in (1, 2, 3, 5) if R <= 4 else (1, 3):
                batch = 2
                x = elements(kind, batch * n, R, dt, rng, product=True)
                y = elements(kind, batch * n, R, dt, rng, product=True)
                got = twin.reduce(x, batch, n, R, n2=1, xs=(n, 0, 1), y=y, ys=(n, 0, 1), chunk=4)
                want = ref_rows(R, dt, x.reshape(batch, n, R), y.reshape(batch, n, R))
                if msg := table(got, want):
                    failures.append(f"{kind} n={n}: {msg}")
    assert not failures, "\n".join(failures[:8])


def test_twin_equals_reference_large_R():
    rng = np.random.default_rng(16)
    with np.errstate(all="ignore"):
        for R, dt in ((16, "float64"), (13, "float32")):
            for kind in ("pairs", "nonfinite"):
                x = elements(kind, 5, R, dt, rng)
                assert not table(twin.reduce(x, 1, 5, R), ref_rows(R, dt, x.reshape(1, 5, R)))


def test_nonfinite_rule():
    """NaN and infinities propagate, inf + -inf is NaN, a finite overflow is inf; never garbage."""
    R = 4
    one = np.zeros((1, R))
    one[0, 0] = 1.0
    inf, nan = np.inf, np.nan

    def lead(*vals):
        x = np.repeat(one, len(vals), axis=0)
        x[:, 0] = vals
        with np.errstate(all="ignore"):
            r = twin.reduce(x, 1, len(vals), R)[0]
        assert not r[1:].any(), r
        return r[0]

    assert lead(1.0, inf, 2.0) == inf
    assert np.isnan(lead(1.0, inf, -inf, 2.0))
    assert np.isnan(lead(nan, 1.0))
    assert lead(-inf, -inf, 3.0) == -inf
    big = np.finfo(np.float64).max
    assert lead(big, big, 1.0) == inf
    assert np.isnan(lead(big, big, -big, -big))  # the pairs overflow to inf and -inf, whose sum is NaN
    assert lead(big, -big, big, -big) == 0  # the same terms in another order cancel exactly
    x = np.zeros((1, R))
    x[0, 2] = nan  # a NaN below a finite leading term: NaN
    with np.errstate(all="ignore"):
        assert np.isnan(twin.reduce(np.concatenate([x, one]), 1, 2, R)[0, 0])


def test_signed_zeros_and_trivial_sizes():
    R = 3
    neg = np.full((4, R), -0.0)
    out = twin.reduce(neg, 1, 4, R)
    assert not out.any()
    assert bits(twin.reduce(neg, 1, 0, R)).tolist() == [[0, 0, 0]]  # n = 0: +0
    x = random_terms((5,), R, seed=3)
    assert np.array_equal(bits(twin.reduce(x, 5, 1, R)), bits(x))  # n = 1: the element itself
    want = ref_rows(R, "float64", neg.reshape(1, 4, R))
    assert np.array_equal(bits(out), bits(want))


# ---------------------------------------------------------------------------------------------
# chunking: any power-of-two chunks, any number of passes, the canonical tree


def canonical(x3, R, y3=None):
    """The canonical tree written from its definition with the node twin: level by level, adjacent
    pairs, odd last carried (no chunks, no stack)."""
    level = [x3[:, j] for j in range(x3.shape[1])]
    if y3 is not None:
        level = [twin.product(a, y3[:, j], R) for j, a in enumerate(level)]
    if not level:
        return np.zeros((x3.shape[0], R), dtype=x3.dtype)
    while len(level) > 1:
        nxt = [twin.node(level[j], level[j + 1], R) for j in range(0, len(level) - 1, 2)]
        level = nxt + ([level[-1]] if len(level) % 2 else [])
    return level[0]


@pytest.mark.parametrize("dt", ("float64", "float32"))
def test_chunking_gives_the_canonical_tree(dt):
    rng = np.random.default_rng(7)
    R, batch = 3, 2
    chunkings = (4, 8, 64, (4, 2), (8, 2, 4), (2, 32))
    failures = []
    with np.errstate(all="ignore"):
        for n in (1, 2, 3, 5, 7, 8, 9, 16, 17, 31, 32, 33, 64, 65, 100):
            x = elements("pairs", batch * n, R, dt, rng)
            want = canonical(x.reshape(batch, n, R), R)
            for chunk in chunkings:
                if msg := table(twin.reduce(x, batch, n, R, chunk=chunk), want):
                    failures.append(f"n={n} chunk={chunk}: {msg}")
            if n > 33:
                continue
            y = elements("random", batch * n, R, dt, rng, product=True)
            wantd = canonical(x.reshape(batch, n, R), R, y.reshape(batch, n, R))
            for chunk in ((4, 2), 16):
                got = twin.reduce(x, batch, n, R, xs=(n, 0, 1), y=y, ys=(n, 0, 1), chunk=chunk)
                if msg := table(got, wantd):
                    failures.append(f"dot n={n} chunk={chunk}: {msg}")
    assert not failures, "\n".join(failures[:8])


def test_one_pass_returns_a_canonical_level():
    """A pass with chunk C = 2^k returns the canonical trees of the aligned blocks of C elements."""
    rng = np.random.default_rng(8)
    R, n = 4, 21
    x = elements("pairs", 2 * n, R, "float64", rng)
    with np.errstate(all="ignore"):
        got = twin.reduce_pass(x, 2, n, 1, (n, 0, 1), R, 8)
        x3 = x.reshape(2, n, R)
        blocks = [canonical(x3[:, c * 8:(c + 1) * 8], R) for c in range(3)]
    assert got.shape == (6, R)
    assert np.array_equal(bits(got), bits(np.stack(blocks, axis=1).reshape(6, R)))


def test_cpu_chunk_bounds_the_pass_size():
    assert twin.cpu_chunk(1, 10**6, 4) == 2  # a long row: one tree level per pass
    assert twin.cpu_chunk(10**4, 100, 4) == 2
    C = twin.cpu_chunk(10**6, 1000, 4)  # a 1000^3 matrix product: chunks as long as the rows
    assert C == 1024 and 10**6 * -(-1000 // C) * 4 <= max(twin.CPU_LANES_PER_PASS, 10**6 * 4)
    assert twin.cpu_chunk(2**20, 64, 32) == 64


def test_addressing_is_checked():
    x = np.zeros((10, 2))
    with pytest.raises(ValueError):
        twin.reduce(x, 2, 6, 2)  # 12 elements > 10
    with pytest.raises(ValueError):
        twin.reduce_pass(x, 2, 5, 1, (5, 0, 1), 2, 3)  # C not a power of two
    with pytest.raises(ValueError):
        twin.reduce(x, 1, 3, 2, n2=1, xs=(0, 0, -1))


# ---------------------------------------------------------------------------------------------
# exact errors against the proven bounds


def _exact(terms):
    return np.array(exact_rows(terms), dtype=object)


CASES = [(R, "float64") for R in (2, 3, 4, 8, 16)] + [(R, "float32") for R in (2, 3, 4, 8)]


@pytest.mark.parametrize("R,dt", CASES)
def test_sum_error_within_bound(R, dt):
    rng = np.random.default_rng([R, 3, len(dt)])
    p = format_of(dt).p
    worst = Fraction(0)
    for kind, n in (("pairs", 64), ("cancel", 50), ("spread", 33), ("random", 1000)):
        batch = 3 if n < 1000 else 1
        x = elements(kind, batch * n, R, dt, rng)
        got = twin.reduce(x, batch, n, R)
        assert np.isfinite(got).all()
        ex_x = _exact(x).reshape(batch, n)
        ex_got = _exact(got)
        B = bounds.sum_tree(n, R, p)
        assert B.hypotheses_hold
        for b in range(batch):
            err = abs(sum(ex_x[b], Fraction(0)) - ex_got[b])
            scale = sum((abs(v) for v in ex_x[b]), Fraction(0))
            assert err <= B.value * scale, (kind, n, b, float(err / scale), float(B.value))
            worst = max(worst, err / scale if scale else Fraction(0))
            assert bounds.ulp_nonoverlapping([from_float(v) for v in got[b]], format_of(dt))
    assert worst > 0  # the cases do round: the comparison is not vacuous


@pytest.mark.parametrize("R,dt", CASES)
def test_dot_error_within_bound(R, dt):
    rng = np.random.default_rng([R, 4, len(dt)])
    fmt = format_of(dt)
    worst = Fraction(0)
    for kind, n in (("pairs", 40), ("random", 300), ("spread", 17)):
        x = elements(kind, n, R, dt, rng, product=True)
        y = elements(kind, n, R, dt, rng, product=True)
        if dt == "float32":  # away from underflow: the conversion |x0 y0| -> |x y| needs normal terms
            x[np.abs(x) < 2.0**-100] = 0
            y[np.abs(y) < 2.0**-100] = 0
        got = twin.reduce(x, 1, n, R, xs=(n, 0, 1), y=y, ys=(n, 0, 1))
        ex_p = [a * b for a, b in zip(_exact(x), _exact(y))]
        err = abs(sum(ex_p, Fraction(0)) - _exact(got)[0])
        scale = sum((abs(v) for v in ex_p), Fraction(0))
        B = bounds.dot(n, R, fmt.p)
        slack = bounds.dot_underflow_term(n, R, fmt)
        assert err <= B.value * scale + slack, (kind, float(err / scale), float(B.value))
        worst = max(worst, err / scale)
    assert worst > 0


def test_bound_formulas():
    """The bounds are the stated closed forms, exact rationals, monotone in n."""
    for R, p in ((2, 53), (4, 53), (8, 24)):
        e = bounds.add_safe(R, p).value
        assert bounds.sum_tree(1, R, p).value == 0
        assert bounds.sum_tree(2, R, p).value == e
        assert bounds.sum_tree(5, R, p).value == (1 + e) ** 3 - 1
        assert bounds.sum_tree(1024, R, p).value == (1 + e) ** 10 - 1
        assert bounds.sum_tree(1025, R, p).value == (1 + e) ** 11 - 1
        t = Fraction(1, 2 ** (p - 1))
        mu = bounds.mul_truncated(R, p).value / (1 - t / (1 - t)) ** 2
        assert bounds.dot(1, R, p).value == mu
        assert bounds.dot(3, R, p).value == (1 + mu) * (1 + e) ** 2 - 1
        assert isinstance(bounds.dot(7, R, p).value, Fraction)
    assert not bounds.sum_tree(4, 24, 24).hypotheses_hold  # float32 with R > 20: Prop. III.1 fails
    fmt = format_of("float64")
    assert bounds.dot_underflow_term(4, 3, fmt) == 4 * bounds.mul_underflow_term(3, fmt) * (
        1 + bounds.add_safe(3, 53).value) ** 2


# ---------------------------------------------------------------------------------------------
# the public API


def _fr(a: ex.ExpansionArray):
    return np.asarray(a.to_fraction(), dtype=object)


def _tree_of(arr_terms, R, dt):
    """Reference tree of the expansions of a (n, R) array, as terms."""
    return ref_rows(R, dt, arr_terms.reshape(1, -1, R))[0]


@pytest.mark.parametrize("dt", ("float64", "float32"))
def test_sum_axes_bit_for_bit(dt):
    R = 3
    x = ex.from_terms(elements("pairs", 60, R, dt, np.random.default_rng(5)).reshape(3, 4, 5, R))
    t = x.terms
    for axis, keepdims in ((None, False), (0, False), (1, True), (-1, False), ((0, 2), False), ((0, 2), True),
                           ((1, 2), False), ((2, 0, 1), True), ((), False)):
        s = red.sum(x, axis=axis, keepdims=keepdims)
        want_shape = np.sum(np.zeros(x.shape), axis=axis, keepdims=keepdims).shape
        assert s.shape == want_shape and s.nterms == R and s.dtype == x.dtype
        axes = tuple(range(3)) if axis is None else tuple(a % 3 for a in np.atleast_1d(axis))
        kept = [a for a in range(3) if a not in axes]
        moved = np.moveaxis(t, kept + sorted(axes), range(3))  # C order over the reduced axes
        flat = moved.reshape(int(np.prod([x.shape[a] for a in kept])), -1, R)
        want = np.stack([_tree_of(flat[i], R, dt) for i in range(flat.shape[0])])
        assert np.array_equal(bits(s.terms.reshape(-1, R)), bits(want)), axis


def test_sum_empty_and_scalar():
    x = ex.zeros((0, 3), terms=2)
    assert red.sum(x).shape == () and float(red.sum(x)) == 0.0
    assert bits(red.sum(x).terms).tolist() == [0, 0]  # +0, not -0
    assert red.sum(x, axis=0).shape == (3,) and not red.sum(x, axis=0).terms.any()
    assert red.sum(x, axis=1).shape == (0,)
    assert red.sum(x, axis=1, keepdims=True).shape == (0, 1)
    s = ex.array("0.1", terms=3)
    assert np.array_equal(bits(red.sum(s).terms), bits(s.terms))
    with pytest.raises(np.exceptions.AxisError):
        red.sum(x, axis=2)
    with pytest.raises(ValueError):
        red.sum(x, axis=(0, -2))
    with pytest.raises(TypeError):
        red.sum(np.zeros(3))


def test_sum_exact_values():
    """Sums whose exact value the tree must reach: 0.1 * 10 with R = 3 rounds like the exact sum."""
    x = ex.array(["0.1"] * 10, terms=3)
    exact = 10 * x[0].to_fraction()
    err = abs(red.sum(x).to_fraction() - exact)
    assert err <= bounds.sum_tree(10, 3, 53).value * exact
    big = ex.array([1e300, 1.0, -1e300, 2.0**-60], terms=2)
    assert red.sum(big).to_fraction() == 1 + Fraction(2) ** -60


@pytest.mark.parametrize("dt", ("float64", "float32"))
def test_dot_and_matmul_bit_for_bit(dt):
    R = 3
    rng = np.random.default_rng(11)
    A = ex.from_terms(elements("random", 12, R, dt, rng, product=True).reshape(3, 4, R))
    B = ex.from_terms(elements("pairs", 20, R, dt, rng, product=True).reshape(4, 5, R))
    v = ex.from_terms(elements("random", 4, R, dt, rng, product=True))
    for got in (red.dot(A, B), red.matmul(A, B)):
        assert got.shape == (3, 5)
        for i in range(3):
            for l in range(5):
                want = ref_rows(R, dt, A.terms[i][None], np.ascontiguousarray(B.terms[:, l])[None])[0]
                assert np.array_equal(bits(got.terms[i, l]), bits(want)), (i, l)
    want_v = ref_rows(R, dt, A.terms, np.broadcast_to(v.terms, (3, 4, R)))
    assert np.array_equal(bits(red.dot(A, v).terms), bits(want_v))
    assert np.array_equal(bits(red.matmul(A, v).terms), bits(want_v))
    inner = red.dot(v, v)
    assert inner.shape == ()
    assert np.array_equal(bits(inner.terms), bits(ref_rows(R, dt, v.terms[None], v.terms[None])[0]))


def test_shapes_follow_numpy():
    rng = np.random.default_rng(12)

    def rnd(*shape):
        return ex.from_terms(random_terms(shape, 2, seed=int(rng.integers(1 << 30))))

    cases = [(red.dot, (4,), (4,)), (red.dot, (3, 4), (4,)), (red.dot, (4,), (4, 5)), (red.dot, (3, 4), (4, 5)),
             (red.dot, (2, 3, 4), (4,)), (red.dot, (2, 3, 4), (6, 4, 5)), (red.dot, (), (3, 2)),
             (red.matmul, (3, 4), (4, 5)), (red.matmul, (4,), (4, 5)), (red.matmul, (3, 4), (4,)),
             (red.matmul, (2, 3, 4), (4, 5)), (red.matmul, (2, 3, 4), (2, 4, 5)), (red.matmul, (1, 3, 4), (2, 4, 5)),
             (red.matmul, (4,), (2, 4, 5)), (red.matmul, (3, 0), (0, 2))]
    for f, sx, sy in cases:
        x, y = rnd(*sx), rnd(*sy)
        got = f(x, y)
        npf = np.dot if f is red.dot else np.matmul
        want = npf(_fr(x), _fr(y))
        assert got.shape == np.shape(want), (f.__name__, sx, sy)
        err = np.abs(np.asarray(got.to_fraction(), dtype=object) - want)
        scale = np.abs(npf(np.abs(_fr(x)), np.abs(_fr(y))))
        k = max(1, sx[-1] if sx else 1)
        assert np.all(err <= bounds.dot(k, 2, 53).value * scale + bounds.dot_underflow_term(k, 2, ex.FLOAT64)), \
            (f.__name__, sx, sy)
    with pytest.raises(ValueError, match="not aligned"):
        red.dot(rnd(3), rnd(4))
    with pytest.raises(ValueError, match="not aligned"):
        red.dot(rnd(2, 3), rnd(4, 2))
    with pytest.raises(ValueError):
        red.matmul(rnd(2, 3), rnd(4, 2))
    with pytest.raises(ValueError):
        red.matmul(rnd(), rnd(3))
    with pytest.raises(ValueError):
        red.matmul(rnd(2, 2, 3), rnd(3, 3, 2))
    # different numbers of terms: promoted exactly to the larger
    narrow, wide = rnd(3), ex.random(3, terms=3, seed=9)
    got, want = red.dot(narrow, wide), red.dot(ex.array(narrow, terms=3), wide)
    assert got.nterms == 3 and np.array_equal(got.terms, want.terms)


def test_mixed_operands():
    x = ex.random(4, terms=3, seed=1)
    a = np.array([1.5, -2.0, 0.25, 3.0])
    got = red.dot(x, a)
    want = red.dot(x, ex.array(a, terms=3))
    assert np.array_equal(bits(got.terms), bits(want.terms))
    assert np.array_equal(bits(red.dot(a, x).terms), bits(red.dot(ex.array(a, terms=3), x).terms))
    m = red.matmul(np.eye(4), x)
    assert m.to_fraction().tolist() == x.to_fraction().tolist()  # exact: products by 1 and 0, sums with 0


def test_matmul_error_within_bound():
    rng = np.random.default_rng(13)
    for R, dt in ((2, "float64"), (4, "float64"), (3, "float32")):
        K = 33
        A = ex.from_terms(elements("pairs", 4 * K, R, dt, rng, product=True).reshape(4, K, R))
        B = ex.from_terms(elements("pairs", K * 3, R, dt, rng, product=True).reshape(K, 3, R))
        if dt == "float32":
            for t in (A.terms, B.terms):
                t[np.abs(t) < 2.0**-100] = 0
        got = _fr(red.matmul(A, B))
        fa, fb = _fr(A), _fr(B)
        err = np.abs(got - fa.dot(fb))
        scale = np.abs(fa).dot(np.abs(fb))
        fmt = format_of(dt)
        assert np.all(err <= bounds.dot(K, R, fmt.p).value * scale + bounds.dot_underflow_term(K, R, fmt))
