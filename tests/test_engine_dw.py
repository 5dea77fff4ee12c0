"""The compiled engine's double-word algorithms and sequential baselines (expansions.engine.dw,
expansions.engine.baselines) against their NumPy twins, bit for bit.

* every element-wise function of expansions.dw.cpu (the algorithms of expansions.dw.ALGORITHMS and
  the helpers two_sum, fast_two_sum, two_prod, fma, div, sqrt): engine == twin, float64 and float32,
  on the verification's families (random, boundary double-words, operation-specific adversarial
  pairs: cancellation, exact squares, ...) and on special words: signed zeros, subnormals, the
  smallest normal, near overflow, above the two-product's scaling threshold 2**995, inf, NaN, and
  random words over the whole exponent range.  The bits are compared (signed zeros count); a NaN of
  these raw functions is compared as a NaN (its sign and payload are the hardware's);
* (the library's R = 2 operations, one fused loop each, are tested in test_engine_fused_dw.py);
* every sequential baseline (and its _soa variant): engine == twin bit for bit on random and
  adversarial expansions, with special values in some terms; certified_* for every R of the suite.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import RS, bits

pytest.importorskip("numba")

from expansions.baselines import cpu as BC  # noqa: E402
from expansions.dw import ALGORITHMS  # noqa: E402
from expansions.dw import cpu as DC  # noqa: E402
from expansions.dw import verify as V  # noqa: E402
from expansions.engine import baselines as BE  # noqa: E402
from expansions.engine import dw as DE  # noqa: E402
from expansions.testing import mixed_pairs  # noqa: E402

DTYPES = ("float64", "float32")
HELPERS = {"two_sum": 2, "fast_two_sum": 2, "two_prod": 2, "fma": 3, "div": 2, "sqrt": 1}
ELEMENTWISE = {**{name: V.n_words(name) for name in ALGORITHMS}, **HELPERS}


def special_values(dtype) -> np.ndarray:
    """Signed zeros, subnormals, the normal range's ends, values past the scaling threshold of the
    float64 two-product, infinities and NaN."""
    f = np.finfo(dtype)
    v = [0.0, -0.0, f.smallest_subnormal, -f.smallest_subnormal, 3 * f.smallest_subnormal,
         float(f.tiny) * 0.75, f.tiny, -f.tiny, 1.5 * f.tiny, 1.0, -1.0, 1 + f.eps, -(1 - f.epsneg), 3.0, 0.1,
         f.max, -f.max, f.max / 2, 0.75 * f.max, np.sqrt(f.max), np.inf, -np.inf, np.nan]
    if dtype == "float64":
        v += [1.5 * 2.0**995, -(2.0**1000), 2.0**-1060, 2.0**-537, 2.0**970]
    return np.array(v, dtype=dtype)


def wide_random(n, dtype, rng) -> np.ndarray:
    """Random signs, significands and exponents over the whole normal and subnormal range."""
    f = np.finfo(dtype)
    e = rng.integers(f.minexp - f.nmant, f.maxexp, size=n)
    m = rng.uniform(1.0, 2.0, size=n) * rng.choice([-1.0, 1.0], size=n)
    return np.ldexp(m, e).astype(dtype)


def special_words(k, n, dtype, rng):
    """``k`` words of ``n`` rows: a third special values, a third wide random, a third mixed."""
    sv = special_values(dtype)
    out = []
    for _ in range(k):
        s = rng.choice(sv, size=n)
        w = wide_random(n, dtype, rng)
        third = n // 3
        a = np.where(rng.random(n) < 0.5, s, w)
        a[:third] = s[:third]
        a[third:2 * third] = w[third:2 * third]
        out.append(a.astype(dtype))
    return out


def _same(a, b):
    return (bits(a) == bits(b)) | (np.isnan(a) & np.isnan(b))


def _table(words, got, want, limit=4):
    bad = np.flatnonzero(~np.logical_and.reduce([_same(g, w) for g, w in zip(got, want)]))
    lines = [f"{bad.size} of {got[0].size} rows differ; first {min(limit, bad.size)}:"]
    for i in bad[:limit]:
        lines.append("  inputs: " + " ".join(float(w[i]).hex() for w in words))
        lines.append("  engine: " + " ".join(float(g[i]).hex() for g in got))
        lines.append("  twin  : " + " ".join(float(w[i]).hex() for w in want))
    return "\n".join(lines)


def _inputs(name, dtype, seed):
    rng = np.random.default_rng(seed)
    k = ELEMENTWISE[name]
    words = special_words(k, 900, dtype, rng)
    if name in ALGORITHMS:
        fam = V.families(name, 600, dtype, rng)
        words = [np.concatenate([a, b]) for a, b in zip(fam, words)]
    return words


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_equals_twin(name, dtype):
    words = _inputs(name, dtype, sorted(ELEMENTWISE).index(name))
    with np.errstate(all="ignore"):
        want = getattr(DC, name)(*words)
    got = getattr(DE, name)(*words)
    if not isinstance(want, tuple):
        got, want = (got,), (want,)
    assert all(g.dtype == w.dtype and g.shape == w.shape for g, w in zip(got, want))
    ok = np.logical_and.reduce([_same(g, w) for g, w in zip(got, want)])
    assert ok.all(), f"{name} {dtype}\n" + _table(words, got, want)


def test_elementwise_broadcasts_and_checks():
    x = np.linspace(1, 2, 12).reshape(3, 4)
    zh, zl = DE.dw_add_accurate(x, x * 2.0**-60, np.float64(3.0), np.float64(0.0))
    wh, wl = DC.dw_add_accurate(x, x * 2.0**-60, np.float64(3.0), np.float64(0.0))
    assert zh.shape == (3, 4) and (bits(zh) == bits(wh)).all() and (bits(zl) == bits(wl)).all()
    with pytest.raises(TypeError, match="one dtype"):
        DE.dw_add_accurate(x, x, x.astype(np.float32), x)
    with pytest.raises(TypeError, match="takes 4 arrays"):
        DE.dw_add_accurate(x, x)


# ---------------------------------------------------------------------------------------------
# sequential baselines


def _expansion_pairs(R, dtype, seed, n=240):
    """Adversarial pairs of the verification (cancellation, Sterbenz, gaps, zeros, ulp overlaps,
    near underflow), then rows with special values or near-overflow words in some terms."""
    rng = np.random.default_rng(seed)
    x, y = mixed_pairs(n, R, dtype, rng)
    k = 60
    sx = special_words(1, k * R, dtype, rng)[0].reshape(k, R)
    sy = special_words(1, k * R, dtype, rng)[0].reshape(k, R)
    keep = rng.random((k, R)) < 0.6  # most terms special, the others from a random expansion
    sx = np.where(keep, sx, x[:k])
    sy = np.where(keep, sy, y[:k])
    sy[: k // 4] = -sx[: k // 4]  # exact cancellation, specials included
    return np.concatenate([x, sx]), np.concatenate([y, sy])


BASELINES = [("dd_add_sloppy", 2), ("dd_add_ieee", 2), ("dd_mul", 2),
             ("qd_add_sloppy", 4), ("qd_add_ieee", 4), ("qd_mul", 4)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,R", BASELINES)
def test_baseline_equals_twin(name, R, dtype):
    x, y = _expansion_pairs(R, dtype, R)
    with np.errstate(all="ignore"):
        want = getattr(BC, name)(x, y)
        want_soa = getattr(BC, name + "_soa")(x.T.copy(), y.T.copy())
    got = getattr(BE, name)(x, y)
    assert (bits(got) == bits(want)).all(), f"{name} {dtype}\n" + _table([x[:, 0], y[:, 0]], got.T, want.T)
    got_soa = getattr(BE, name + "_soa")(x.T.copy(), y.T.copy())
    assert got_soa.shape == (R, x.shape[0]) and (bits(got_soa) == bits(want_soa)).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", RS)
def test_certified_equals_twin(R, dtype):
    x, y = _expansion_pairs(R, dtype, 100 + R, n=120)
    for name in ("certified_add", "certified_mul"):
        with np.errstate(all="ignore"):
            want = getattr(BC, name)(x, y, R)
        got = getattr(BE, name)(x, y, R)
        assert (bits(got) == bits(want)).all(), f"{name} R={R} {dtype}\n" + _table([x[:, 0], y[:, 0]], got.T, want.T)
    with np.errstate(all="ignore"):
        want = BC.certified_mul_soa(x.T.copy(), y.T.copy(), R)
    assert (bits(BE.certified_mul_soa(x.T.copy(), y.T.copy(), R)) == bits(want)).all()


def test_baselines_check_their_input():
    x = np.ones((4, 4))
    with pytest.raises(ValueError, match=r"\(count, 2\)"):
        BE.dd_add_ieee(x, x)
    with pytest.raises(TypeError, match="same dtype"):
        BE.qd_mul(x, x.astype(np.float32))
    with pytest.raises(ValueError, match=r"\(count, 3\)"):
        BE.certified_add(x, x, 3)


# ---------------------------------------------------------------------------------------------
# the benchmark harness of the engine against its peers (bench/peers.py), on a tiny run


def test_peers_harness_runs(tmp_path):
    import json

    from bench import peers

    assert peers.main(["--n", "3000", "--twin-n", "500", "--slow-n", "40", "--repeats", "1", "--slow-repeats", "1",
                       "--rs", "2", "--ops", "add,sqrt", "--out", str(tmp_path)]) == 0
    (md,) = tmp_path.glob("peers_*.md")
    data = json.loads(md.with_suffix(".json").read_text())
    cells = {(c["op"], c["executor"]) for c in data["cells"]}
    assert {("add", "expansions 1T"), ("sqrt", "expansions 1T"), ("add", "expansions twins"),
            ("add", "float64")} <= cells
    assert all(c["mops"] > 0 and len(c["seconds"]) == 1 for c in data["cells"])
    assert "| 2 | 106 | add |" in md.read_text()
