"""The engine's R = 2 operations are one compiled loop each (expansions/engine/fused_dw.py, issue 28):
the double-word algorithm, the library's non-finite rule and the two-term renormalization fused per
row, with the two-product and FMA by the hardware FMA.  Checked here:

* every ``R2_METHODS`` algorithm (add, sub, mul, div, sqrt), float64 and float32, with and without
  the renormalization: the engine backend's result equals the twins' composition
  (``dispatch.run`` on ``backends.cpu``: the algorithm, ``_double_word_finish``, ``renormalize``)
  bit for bit, NaN bits included, on the verification's families, special words (signed zeros,
  subnormals, near overflow, inf, NaN, wide random), operands whose product or quotient falls on
  either side of the hardware FMA's range (2**-900, 2**1020) and operands whose ratio is huge; the
  serial loop, the parallel one and ``numba.set_num_threads(1)``; random words (hypothesis);
* the hardware FMA (``llvm.fma``) equals the twins' round-to-odd emulation wherever the fast
  functions do not return their NaN marker (and the marker is needed: the plain FMA differs from the
  twins near underflow and overflow on these inputs);
* the public API runs one loop per operation on the engine (no separate renormalization);
* the R = 2 add and mul hot loops are vectorized: their machine code holds packed FP instructions.
"""

from __future__ import annotations

import dataclasses
import platform
import re

import numpy as np
import pytest
from helpers import bits
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")

import numba  # noqa: E402
from llvmlite import binding as llvm  # noqa: E402
from numba import njit  # noqa: E402
from test_dw_operation import _special_pairs  # noqa: E402
from test_engine_dw import special_words  # noqa: E402

import expansions as X  # noqa: E402
from expansions import backends, dispatch  # noqa: E402
from expansions.cpu import kernels as twin  # noqa: E402
from expansions.dw import R2_DEFAULTS, R2_METHODS  # noqa: E402
from expansions.dw import verify as V  # noqa: E402
from expansions.engine import dw as DE  # noqa: E402
from expansions.engine import fused_dw as FD  # noqa: E402

DTYPES = ("float64", "float32")
ENGINE = backends.engine_backend()
CASES = [(op, alg) for op in ("add", "sub", "mul", "div", "sqrt")
         for alg in R2_METHODS["add" if op == "sub" else op]]
DEFAULTS = [(op, R2_DEFAULTS["add" if op == "sub" else op]) for op in ("add", "sub", "mul", "div", "sqrt")]


def _params(cases, fast):
    """``cases`` x DTYPES as pytest params, those not in ``fast`` marked slow: each case compiles a loop
    (1.5 to 4 s on the 2-core machine), so the default run keeps a representative part."""
    return [pytest.param(*c, d, marks=() if (c, d) in fast or c in fast else pytest.mark.slow)
            for c in cases for d in DTYPES]


def _band_words(n, dtype, rng):
    """Four words whose leading words have exponents (e1, e2) with e1 + e2 or e1 - e2 near the ends of
    the exponent range (products and quotients near underflow, near overflow, and across the fast
    FMA's range ends 2**-900 and 2**1020), or e1 itself there (quotients and square roots whose
    two-product is about x), and tails of a few ulps or zero."""
    f = np.finfo(dtype)
    lo_e, hi_e = f.minexp - f.nmant, f.maxexp - 1
    ends = [lo_e - 6, int(np.log2(DE._FAST_LO)) if dtype == "float64" else lo_e + 30, f.minexp,
            int(np.log2(DE._FAST_HI)) if dtype == "float64" else hi_e - 4, hi_e]
    target = rng.choice(ends, size=n) + rng.integers(-3, 4, size=n)
    e1 = rng.integers(lo_e, hi_e + 1, size=n)
    how = rng.integers(0, 3, size=n)  # 0: e1 + e2 = target, 1: e1 - e2 = target, 2: e1 = target, e2 ~ 0
    e2 = np.where(how == 0, target - e1, np.where(how == 1, e1 - target, rng.integers(-3, 4, size=n)))
    e1 = np.where(how == 2, target, e1)
    e1, e2 = np.clip(e1, lo_e, hi_e), np.clip(e2, lo_e, hi_e)

    def word(e):
        m = rng.uniform(1.0, 2.0, size=n) * rng.choice([-1.0, 1.0], size=n)
        return np.ldexp(m, e).astype(dtype)

    def tail(h):
        t = (h.astype(np.float64) * rng.uniform(-1, 1, size=n) * float(f.eps) / 2).astype(dtype)
        return np.where(rng.random(n) < 0.2, np.zeros_like(t), t)

    x0, y0 = word(e1), word(e2)
    return [x0, tail(x0), y0, tail(y0)]


def operands(op, alg, dtype, seed, n_family=600, n_special=900, n_band=600):
    """(count, 2) operands x, y: the verification's families for ``alg``, special words, the bands of
    :func:`_band_words`, and near-overflow words with small tails; |x| for the square root's families."""
    rng = np.random.default_rng(seed)
    fam = V.families(alg, n_family, dtype, rng)
    if len(fam) == 2:
        fam = fam + fam[::-1]
    cols = [np.concatenate(parts) for parts in zip(fam, special_words(4, n_special, dtype, rng),
                                                   _band_words(n_band, dtype, rng))]
    f = np.finfo(dtype)
    big = (f.max * rng.uniform(0.5, 1.0, size=60)).astype(dtype)
    tail = (big * rng.uniform(-1, 1, size=60) * float(f.eps) / 4).astype(dtype)
    cols = [np.concatenate([c, v]) for c, v in zip(cols, [big, tail, big[::-1], tail])]
    x, y = np.stack(cols[:2], axis=1), np.stack(cols[2:], axis=1)
    if op == "sqrt":  # mostly non-negative, some negative
        x = np.where((rng.random(len(x)) < 0.9)[:, None], np.abs(x), x)
    return np.ascontiguousarray(x), np.ascontiguousarray(y)


def _run(be, op, alg, renormalize, x, y):
    with np.errstate(all="ignore"):
        args = (x,) if op == "sqrt" else (x, y)
        return dispatch.run(op, alg, be, renormalize, *args, 2)


def _table(x, y, got, want, limit=4):
    bad = np.flatnonzero(~(bits(got) == bits(want)).all(axis=1))
    lines = [f"{bad.size} of {len(x)} rows differ; first {min(limit, bad.size)}:"]
    for i in bad[:limit]:
        lines.append("  x: " + " ".join(float(v).hex() for v in x[i]) + "   y: "
                     + " ".join(float(v).hex() for v in y[i]))
        lines.append("  engine: " + " ".join(float(v).hex() for v in got[i]))
        lines.append("  twins : " + " ".join(float(v).hex() for v in want[i]))
    return "\n".join(lines)


def assert_same(op, alg, renormalize, x, y, be=ENGINE):
    want = _run(backends.cpu, op, alg, renormalize, x, y)
    got = _run(be, op, alg, renormalize, x, y)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert (bits(got) == bits(want)).all(), f"{op} {alg} renormalize={renormalize} {x.dtype}\n" + _table(
        x, y, got, want)


# ---------------------------------------------------------------------------------------------
# the fused loops against the twins' composition


@pytest.mark.parametrize("op,alg,dtype", _params(CASES, DEFAULTS))
def test_fused_equals_twins(op, alg, dtype):
    """The public path (renormalized) of every algorithm, serial loop (the defaults in the default run)."""
    x, y = operands(op, alg, dtype, CASES.index((op, alg)))
    assert len(x) < FD.SERIAL_BELOW
    assert_same(op, alg, True, x, y)


@pytest.mark.parametrize("op,alg,dtype", _params([c for c in CASES if c[0] != "sqrt"],
                                                  [(c, "float64") for c in DEFAULTS]))
def test_fused_without_renormalization_equals_twins(op, alg, dtype):
    """``renormalize=False``: the algorithm and the rule only (what ``engine.dw_binary`` returns)."""
    x, y = operands(op, alg, dtype, 100 + CASES.index((op, alg)), 300, 450, 300)
    assert_same(op, alg, False, x, y)
    if op != "sub":
        with np.errstate(all="ignore"):
            want = dispatch.run(op, alg, backends.cpu, False, x, y, 2)
        assert (bits(FD.dw_binary(alg, x, y)) == bits(want)).all()


@pytest.mark.parametrize("op,alg,dtype", _params(DEFAULTS, [(DEFAULTS[0], "float64"), (DEFAULTS[2], "float64")]))
def test_parallel_loop_equals_twins(op, alg, dtype, monkeypatch):
    """Above SERIAL_BELOW rows the blocks run in a prange: special rows scattered over many blocks (the
    exact pass runs per block), then one thread (numba.set_num_threads(1)) gives the same bits."""
    x, y = operands(op, alg, dtype, 200 + DEFAULTS.index((op, alg)))
    rng = np.random.default_rng(1)
    k = 8 * FD.BLOCK + 37  # a partial last block
    idx = rng.integers(0, len(x), size=k)
    x, y = x[idx], y[idx]
    monkeypatch.setattr(FD, "SERIAL_BELOW", FD.BLOCK)
    assert_same(op, alg, True, x, y)
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        assert_same(op, alg, True, x, y)
    finally:
        numba.set_num_threads(threads)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(DEFAULTS), st.sampled_from(DTYPES), st.data())
def test_fused_equals_twins_random_words(case, dtype, data):
    op, alg = case
    width = 64 if dtype == "float64" else 32
    words = data.draw(st.lists(st.floats(width=width), min_size=4, max_size=4 * 24))
    words = words[: len(words) // 4 * 4]
    a = np.array(words, dtype=dtype).reshape(-1, 4)
    assert_same(op, alg, True, np.ascontiguousarray(a[:, :2]), np.ascontiguousarray(a[:, 2:]))


def test_public_operators_run_one_loop(monkeypatch):
    """x + y, x - y, x * y, x / y, sqrt(x) at R = 2 on the engine: one call of the fused loop each
    (through ``operation``, or the operators' direct entry to it), the renormalization inside it (the
    backend's renormalize is never called), the twins' bits."""
    calls = []
    real = FD.operation

    def spy(name, x, y=None, negate_y=False, renormalize=False):
        calls.append((name, negate_y, renormalize))
        return real(name, x, y, negate_y, renormalize)

    def no_renormalize(*args):
        raise AssertionError("the engine's R = 2 operations renormalize in their loop")

    real_direct = FD.direct

    def spy_direct(name, negate_y=False):  # the operators' common case: the same loop, unchecked
        run = real_direct(name, negate_y)

        def call(x, y):
            calls.append((name, negate_y, True))
            return run(x, y)

        return call

    monkeypatch.setattr(FD, "dw_operation", spy)
    monkeypatch.setattr(FD, "dw_direct", spy_direct)
    be = dataclasses.replace(backends.engine_backend.__wrapped__(), renormalize=no_renormalize)
    monkeypatch.setattr(backends, "_cpu_state", {"choice": "engine", "backend": be, "reason": None})
    x, y = operands("add", "dw_add_accurate", "float64", 5)
    s = np.abs(x)
    xe, ye, se = X.from_terms(x), X.from_terms(y), X.from_terms(s)
    got = {"add": xe + ye, "sub": xe - ye, "mul": xe * ye, "div": xe / ye, "sqrt": X.sqrt(se)}
    assert calls == [("dw_add_accurate", False, True), ("dw_add_accurate", True, True),
                     ("dw_times_dw1", False, True), ("dw_div_dw2", False, True), ("dw_sqrt", False, False)]
    for op, r in got.items():
        want = _run(backends.cpu, op, R2_DEFAULTS["add" if op == "sub" else op], True, s if op == "sqrt" else x, y)
        assert (bits(r.terms) == bits(want)).all(), op


def test_renormalized_square_root_equals_twins():
    """``operation('dw_sqrt', x, renormalize=True)`` (the library does not renormalize its square root,
    but the loop can): the twins' square root, rule and the double-word renormalizer (``renormalize(out,
    2)``, zero results kept: sqrt(-0) = -0)."""
    x, _ = operands("sqrt", "dw_sqrt", "float64", 9)
    with np.errstate(all="ignore"):
        want = dispatch._renormalize_keeping_zeros(backends.cpu, backends.cpu.dw_unary("dw_sqrt", x), 2)
    assert (bits(FD.operation("dw_sqrt", x, renormalize=True)) == bits(want)).all()


def test_operation_checks_its_input():
    x = np.ones((4, 2))
    with pytest.raises(ValueError, match="unknown binary double-word algorithm"):
        FD.operation("dw_plus_fp", x, x)
    with pytest.raises(ValueError, match="unknown unary"):
        FD.operation("sqrt", x)
    with pytest.raises(ValueError, match=r"\(count, 2\)"):
        FD.operation("dw_add_accurate", np.ones((4, 3)), np.ones((4, 3)))
    with pytest.raises(ValueError, match="one dtype"):
        FD.operation("dw_add_accurate", x, x.astype(np.float32))
    with pytest.raises(TypeError, match="float64 or float32"):
        FD.operation("dw_add_accurate", x.astype(np.float16), x.astype(np.float16))
    assert FD.operation("dw_times_dw1", x[:0], x[:0]).shape == (0, 2)
    strided = np.tile([1.0, 2.0**-60], (8, 1))[::2]  # not C-contiguous: copied first
    assert (FD.operation("dw_add_accurate", strided, strided) == [2.0, 2.0**-59]).all()


@njit(error_model="numpy")
def _renormalize_pairs(x, out):
    for i in range(x.shape[0]):
        out[i, 0], out[i, 1] = FD._renormalize_pair(x[i, 0], x[i, 1])


@pytest.mark.parametrize("dtype", DTYPES)
def test_compiled_renormalize_pair_equals_twin(dtype):
    """The exact pass's ``_renormalize_pair`` on its own: the twin's ``renormalize_pair`` (and so
    ``renormalize(x, 2)``) on pairs of special values, each word NaN, inf, zero of either sign,
    subnormal, near overflow."""
    x = _special_pairs(dtype)
    out = np.empty_like(x)
    _renormalize_pairs(x, out)
    with np.errstate(all="ignore"):
        want = np.stack(twin.renormalize_pair(x[:, 0], x[:, 1]), axis=1)
    assert (bits(out) == bits(want)).all()


# ---------------------------------------------------------------------------------------------
# the hardware FMA against the twins' emulations


@njit(error_model="numpy")
def _prod_pairs(a, b, out):
    for i in range(a.shape[0]):
        p0, e0 = DE._two_prod(a[i], b[i])
        p1, e1 = DE._two_prod(a[i], b[i], True)
        out[i, 0], out[i, 1], out[i, 2], out[i, 3] = p0, e0, p1, e1


@njit(error_model="numpy")
def _fma_triples(a, b, c, out):
    for i in range(a.shape[0]):
        out[i, 0] = DE._fma(a[i], b[i], c[i])
        out[i, 1] = DE._fma(a[i], b[i], c[i], True)
        out[i, 2] = DE._fma_hardware(a[i], b[i], c[i])


def _fma_inputs(dtype, seed, n=6000):
    rng = np.random.default_rng(seed)
    w = _band_words(n, dtype, rng)
    s = special_words(3, n, dtype, rng)
    a = np.concatenate([w[0], s[0], w[0]])
    b = np.concatenate([w[2], s[1], w[2]])
    with np.errstate(all="ignore"):
        c = np.concatenate([-(w[0] * w[2]), s[2], w[1]])  # cancellation of the product, specials, tails
    return a, b, c


@pytest.mark.parametrize("dtype", DTYPES)
def test_fast_two_product_and_fma_are_the_twins_or_marked(dtype):
    """``fast=True``: the hardware FMA's two-product and FMA have the emulations' bits, or are the
    NaN marker (float64 outside the range; an infinite addend); float32 two-products are never marked.
    The plain hardware FMA differs from the emulation on these inputs (the marker has teeth)."""
    a, b, c = _fma_inputs(dtype, 3)
    with np.errstate(all="ignore"):
        prods = np.empty((len(a), 4), dtype=dtype)
        _prod_pairs(a, b, prods)
        fmas = np.empty((len(a), 3), dtype=dtype)
        _fma_triples(a, b, c, fmas)
    assert (bits(prods[:, 0]) == bits(prods[:, 2])).all()  # RN(a*b) either way
    finite = np.isfinite(prods[:, 1])
    marked = np.isnan(prods[:, 3]) & finite
    assert (bits(prods[finite & ~marked, 3]) == bits(prods[finite & ~marked, 1])).all()
    ok = np.isfinite(fmas[:, 0]) & ~np.isnan(fmas[:, 1])
    assert (bits(fmas[ok, 1]) == bits(fmas[ok, 0])).all()
    assert (np.isnan(fmas[:, 1]) | (bits(fmas[:, 1]) == bits(fmas[:, 0])) | ~np.isfinite(fmas[:, 0])).all()
    if dtype == "float32":
        assert not marked.any()
    else:
        assert marked.sum() > 100  # the bands reach past both ends of the range
        plain = np.isfinite(fmas[:, 0]) & (bits(fmas[:, 2]) != bits(fmas[:, 0]))
        assert plain.any(), "no input where the plain FMA and the twin's emulation differ"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.floats(width=64), st.floats(width=64), st.floats(width=64)), min_size=1, max_size=20))
def test_fast_fma_is_the_twins_or_marked_random(triples):
    a, b, c = (np.array(v, dtype=np.float64) for v in zip(*triples))
    with np.errstate(all="ignore"):
        out = np.empty((len(a), 3))
        _fma_triples(a, b, c, out)
        prods = np.empty((len(a), 4))
        _prod_pairs(a, b, prods)
    assert (np.isnan(out[:, 1]) | (bits(out[:, 1]) == bits(out[:, 0]))).all()
    assert (np.isnan(prods[:, 3]) | (bits(prods[:, 3]) == bits(prods[:, 1]))).all()


# ---------------------------------------------------------------------------------------------
# the hot loops are vectorized


PACKED = re.compile(r"^\s*v?(add|sub|mul|fn?m(add|sub)\d+)p[sd]\s.*%[xyz]mm", re.M)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="checks x86-64 machine code")
@pytest.mark.parametrize("alg,kind", [("dw_add_accurate", 0), ("dw_times_dw1", 1)])
def test_hot_loops_are_vectorized(alg, kind):
    """The machine code of the R = 2 add and mul loops (float64) holds packed (SIMD) FP arithmetic on
    xmm/ymm/zmm registers (SSE2 ``addpd`` or AVX ``vaddpd``), and, where the CPU has FMA, the
    product's two-product as a packed FMA.  Compiled here without numba's disk cache, whose code
    cannot be inspected."""
    block = njit(error_model="numpy")(FD._block.py_func)
    op = DE._OP[alg]

    @njit(error_model="numpy")
    def run(x, y, out):
        return block(op, kind, True, x, y, out, False, False)

    x = np.ones(64)
    run(x, x, np.empty_like(x))
    asm = "".join(block.inspect_asm(sig) for sig in block.signatures)
    packed = PACKED.findall(asm)
    assert len(packed) >= 16, f"{alg}: {len(packed)} packed FP instructions: the loop is not vectorized"
    if kind == 1 and llvm.get_host_cpu_features().get("fma", False):
        assert re.search(r"^\s*vfn?m(add|sub)\d+pd\s", asm, re.M), f"{alg}: no packed FMA"


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_blocks_that_switch_between_double_words_and_not(dtype):
    """Runs of blocks whose operands are all double words and runs where some are not (the loops
    carry from block to block whether the one before needed its operands made double words, and then
    check the next one first), with non-finite rows among them, serial and parallel sizes: the twins'
    bits for every operation."""
    rng = np.random.default_rng(5)
    for n in (5000, 40_000):
        x = X.random(n, terms=2, dtype=dtype, seed=1).terms.copy()
        y = X.random(n, terms=2, dtype=dtype, seed=2).terms.copy()
        block = np.arange(n) // FD.BLOCK
        clean = (block % 3 == 0) | (block % 5 == 1)  # runs of clean blocks between dirty ones
        for t in (x, y):
            t[clean] = X.renormalize(X.from_terms(t[clean])).terms
            t[rng.integers(0, n, 7), rng.integers(0, 2, 7)] = np.array([np.inf, np.nan, -np.inf, 0.0, -0.0, np.inf,
                                                                         np.nan], dtype=dtype)
        s = np.where(x[:, :1] < 0, -x, x)
        be = backends.engine_backend()
        for op in ("add", "sub", "mul", "div", "sqrt"):
            alg = R2_DEFAULTS["add" if op == "sub" else op]
            a = s if op == "sqrt" else x
            got, want = _run(be, op, alg, True, a, y), _run(backends.cpu, op, alg, True, a, y)
            assert (bits(got) == bits(want)).all(), _table(a, y, got, want)
