"""The runbook's input families, shared with the tests that use the same sets.

* :func:`family` (:data:`FAMILIES`): random and adversarial expansions for the kernels of
  ``kernels.cu``: random, ulp/zero/same sign, wide gaps, cancellation, Sterbenz, arbitrary floats,
  close magnitudes, NaN/Inf, overflow, underflow, signed zeros; :func:`skip_family` says where a
  family does not apply.  ``tests/test_gpu.py`` checks the kernels on them, the runbook's
  ``bitexact`` part on more rows (:func:`tools.gpu.families.input_sets`).
* :func:`elementary_domain` and :func:`elementary_specials`: random arguments over an elementary
  function's domain and its special and edge values.  ``tests/test_elementary_emulated.py`` runs them
  through the warp emulator, the runbook's ``bitexact`` (exp) and ``elementary`` parts on the GPU.
"""

from __future__ import annotations

import math

import numpy as np

from expansions.cpu import elementary as E
from expansions.cpu import kernels as twin
from expansions.generate import random_terms

# ---------------------------------------------------------------------------------------------
# the kernels' families (tests/test_gpu.py, the bitexact part)


def _min_exponent(op, dtype):
    return -450 if (op == "mul_truncated" and dtype == "float64") else None


def _pair(op, dtype, n, m, count, seed, **kw):
    kw.setdefault("min_exponent", _min_exponent(op, dtype))
    x = random_terms(count, n, dtype, seed=seed, **kw)
    y = random_terms(count, m, dtype, seed=seed + 1, **kw)
    return x, y


def _first_round_overlaps(x, R):
    """Rows whose first renormalization round leaves overlapping terms (so that later rounds run)."""
    srt = np.take_along_axis(x, np.argsort(-np.abs(x), axis=1, kind="stable"), axis=1)
    k = x.shape[1]
    e = np.empty_like(srt)
    s = srt[:, k - 1].copy()
    for i in range(k - 2, -1, -1):
        s, e[:, i + 1] = twin.two_sum(srt[:, i], s)
    e[:, 0] = s
    return ~twin._adjacent_nonoverlapping(twin._vec_sum_err_branch(e, R))


def family(name, op, dtype, n, m, R, count, seed):
    """(x, y) of one family of inputs: x of n terms, y of m terms (y unused by unary operations)."""
    dt = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    big = 1023 if dt == np.float64 else 127
    if name == "random":
        return _pair(op, dtype, n, m, count, seed)
    if name == "ulp_zero_same_sign":
        return _pair(op, dtype, n, m, count, seed, p_ulp=0.3, p_zero=0.3, same_sign=True, max_gap=0)
    if name == "wide_gaps":
        return _pair(op, dtype, n, m, count, seed, max_gap=53 if dt == np.float64 else 24)
    if name == "cancellation":  # y = -x + tiny
        x, _ = _pair(op, dtype, n, m, count, seed)
        y = np.zeros((count, m), dt)
        k = min(n, m)
        y[:, :k] = -x[:, :k]
        tiny = random_terms(count, 1, dtype, seed=seed + 2, exponent_range=(-60, -30))[:, 0]
        y[:, k - 1] = np.where(y[:, k - 1] == 0, tiny, y[:, k - 1] + tiny)
        if op in ("sub_safe", "sub_fast"):
            y = -y
        return x, y
    if name == "sterbenz":  # x0 and y0 of opposite signs within a factor 2
        x, y = _pair(op, dtype, n, m, count, seed)
        y[:, 0] = (-x[:, 0] * rng.uniform(0.5, 2.0, count)).astype(dt)
        return x, y
    if name == "arbitrary":  # any floats: unordered, overlapping, zeros and signed zeros
        lim = 40 if dt == np.float64 else 20
        x = (rng.standard_normal((count, n)) * np.exp2(rng.integers(-lim, lim, (count, n)))).astype(dt)
        y = (rng.standard_normal((count, m)) * np.exp2(rng.integers(-lim, lim, (count, m)))).astype(dt)
        x[rng.random(x.shape) < 0.1] = 0
        y[rng.random(y.shape) < 0.1] = -0.0
        return x, y
    if name == "close_magnitudes":  # renormalization needs several rounds on some of these
        pool = (rng.standard_normal((8 * count, n)) * np.exp2(rng.integers(-3, 3, (8 * count, n)))).astype(dt)
        multi = _first_round_overlaps(pool, R)
        x = np.ascontiguousarray(np.concatenate([pool[multi], pool[~multi]])[:count])
        y = (rng.standard_normal((count, m)) * np.exp2(rng.integers(-3, 3, (count, m)))).astype(dt)
        return x, y
    if name == "nonfinite":
        x, y = _pair(op, dtype, n, m, count, seed)
        special = np.array([np.inf, -np.inf, np.nan], dtype=dt)
        for a in (x, y):
            hit = rng.random(a.shape) < 0.15
            a[hit] = special[rng.integers(0, 3, hit.sum())]
        return x, y
    if name == "overflow":  # leading terms near the overflow threshold
        lo = (big - 3) if op != "mul_truncated" else (big // 2 + 8)
        return _pair(op, dtype, n, m, count, seed, exponent_range=(lo, lo + 3), min_exponent=None)
    if name == "underflow":  # terms down to the subnormal floor (2Sum stays exact there)
        lo = -1000 if dt == np.float64 else -100
        return _pair(op, dtype, n, m, count, seed, exponent_range=(lo, lo + 20), min_exponent=None)
    if name == "signed_zeros":
        x = np.where(rng.random((count, n)) < 0.5, -0.0, 0.0).astype(dt)
        y = np.where(rng.random((count, m)) < 0.5, -0.0, 0.0).astype(dt)
        return x, y
    raise ValueError(name)


FAMILIES = (
    "random",
    "ulp_zero_same_sign",
    "wide_gaps",
    "cancellation",
    "sterbenz",
    "arbitrary",
    "close_magnitudes",
    "nonfinite",
    "overflow",
    "underflow",
    "signed_zeros",
)


def skip_family(name, op, dtype):
    # float64 products below the underflow threshold: the twin's Dekker product may differ from FMA
    return name == "underflow" and op == "mul_truncated" and dtype == "float64"


# ---------------------------------------------------------------------------------------------
# the elementary functions' arguments (tests/test_elementary_emulated.py, the bitexact and
# elementary parts)


def rows(values, R, dtype):
    """Rows of R terms from tuples of leading terms (the rest zero)."""
    out = np.zeros((len(values), R), dtype=dtype)
    for i, v in enumerate(values):
        v = v if isinstance(v, tuple) else (v,)
        out[i, : len(v)] = v[:R]
    return out



def elementary_domain(f, count, R, dtype, rng):
    """Random arguments (and second arguments) of f over its domain, every term used."""
    dt = np.dtype(dtype)
    f32 = dt == np.float32
    seed = int(rng.integers(1 << 30))

    def rand(lo, hi, s=0):
        return random_terms(count, R, dtype=dt, seed=seed + s, exponent_range=(lo, hi))

    y = None
    if f == "exp":
        x = rand(-12, 6 if f32 else 9)
    elif f in ("expm1", "sinh", "cosh", "tanh"):
        x = rand(-12, 5)
    elif f in ("log", "log2", "log10"):
        x = np.abs(rand(-30, 30) if f32 else rand(-60, 60))
    elif f == "log1p":
        x = np.where((np.arange(count) % 2 == 0)[:, None], np.abs(rand(-10, 4)), -np.abs(rand(-10, -1, 1)))
    elif f in ("sin", "cos", "tan"):
        x = rand(-10, 40)
    elif f == "atan":
        x = rand(-20, 20)
    elif f in ("asin", "acos"):
        x = rand(-20, -1)
    elif f == "atan2":
        x, y = rand(-10, 10), rand(-10, 10, 1)
    else:  # pow: positive bases, and negative bases with integer exponents
        x, y = np.abs(rand(-4, 4)), rand(-4, 3, 1)
        neg = np.arange(count) % 3 == 0
        x[neg] = -x[neg]
        y[neg] = rows([float(v) for v in rng.integers(-6, 7, int(neg.sum()))], R, dt)
    return np.ascontiguousarray(x), (None if y is None else np.ascontiguousarray(y))


def elementary_specials(f, R, dtype):
    dt = np.dtype(dtype)
    f32 = dt == np.float32
    inf, nan = math.inf, math.nan
    tiny = float(np.finfo(dt).smallest_subnormal)
    big = float(np.finfo(dt).max)
    e = float(np.finfo(dt).eps)
    common = [0.0, -0.0, inf, -inf, nan, (1.0, nan), (0.5, inf), (-2.0, -inf), tiny, -tiny, big, -big,
              (1.0, e * e / 4), (-1.0, -e * e / 4)]
    th = E.thresholds(dt)
    hi, lo, lim = float(th["exp_hi"]), float(th["exp_lo"]), float(th["hyp_limit"])
    per = {
        "exp": [hi, -hi, (hi, -e), lo, (lo, e), lo / 2, -700.0 if not f32 else -90.0, 88.0, 709.0, (0.5, e / 8)],
        "expm1": [0.5, -0.5, (0.5, e / 8), 0.50000001, 1e-300 if not f32 else 1e-30, 40.0, -40.0, hi, -hi],
        "log": [1.0, (1.0, -e / 4), 2.0, 0.5, math.sqrt(2), (math.sqrt(2), e), -1.0, 1e-310 if not f32 else 1e-40,
                4.0**100 if not f32 else 2.0**100],
        "log1p": [-1.0, (-1.0, -e / 4), (-1.0, e / 4), -0.5, 0.25, -0.25, 0.25000001, -2.0,
                  1e-300 if not f32 else 1e-30, (0.25, -e / 8)],
        "sin": [1e300 if not f32 else 1e38, -1e22 if not f32 else -1e30, 2.0**1023 if not f32 else 2.0**127,
                float(th["quarter_pi"]), math.pi, (math.pi, 1.2246467991473532e-16), 1e-300 if not f32 else 1e-30,
                2.0**52, 1e10, 1.5707963267948966],
        "atan": [1.0, -1.0, (1.0, -e / 4), 1e300 if not f32 else 1e38, -1e-300 if not f32 else -1e-30, 2.0**60],
        "asin": [1.0, -1.0, (1.0, e / 4), (1.0, -e / 4), (-1.0, -e / 4), (-1.0, e / 4), 1.5, -2.0, 0.5,
                 1e-300 if not f32 else 1e-30],
        "sinh": [0.5, -0.5, (0.5, e / 8), lim, -lim, (hi, e), -hi, hi + 1, 1e-300 if not f32 else 1e-30, 30.0],
    }
    per["expm1"] += [1e-320 if not f32 else 1e-44]
    per["cos"] = per["tan"] = per["sin"]
    per["acos"] = per["asin"]
    per["cosh"] = per["tanh"] = per["sinh"]
    per["log2"] = per["log10"] = per["log"]
    if f == "atan2":
        vals = [0.0, -0.0, inf, -inf, nan, 1.0, -1.0, (2.0, nan)]
        ys = [a for a in vals for _ in vals]
        xs = [b for _ in vals for b in vals]
        ys += [1e300 if not f32 else 1e38, 1e-300 if not f32 else 1e-30, 1.0, -1e-300 if not f32 else -1e-30,
               1e-300 if not f32 else 1e-30]
        xs += [1e-300 if not f32 else 1e-30, -1e300 if not f32 else -1e38, (1.0, -e / 4), 1e300 if not f32 else 1e38,
               1e300 if not f32 else 1e38]
        return rows(ys, R, dt), rows(xs, R, dt)
    if f == "pow":
        xv = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, inf, -inf, nan, (1.0, e / 4)]
        yv = [0.0, -0.0, 1.0, 3.0, -3.0, 2.0, 0.5, -0.5, inf, -inf, nan, (3.0, e)]
        xs = [a for a in xv for _ in yv] + [10.0, 10.0, 0.1, -10.0]
        ys = [b for _ in xv for b in yv] + [400.0 if not f32 else 50.0, -400.0 if not f32 else -50.0,
                                            400.0 if not f32 else 50.0, 301.0 if not f32 else 39.0]
        return rows(xs, R, dt), rows(ys, R, dt)
    return rows(common + per[f], R, dt), None

