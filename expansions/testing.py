"""Adversarial inputs: the library's families of expansions and its hypothesis strategies.

The tests, the verification tables (``python -m expansions verify``) and the GPU runbook draw their
inputs from here; users can test their own code on the same inputs.

**Convention.** Every family is a function that returns a pair ``(x, y)`` of NumPy term arrays of
shape ``(count, R)`` (row i: the R terms of one expansion, term 0 leading; the layout of the
kernels, and of ``ExpansionArray.terms`` for a 1-D array): the operands of a binary operation, ``x``
alone for a unary one.  ``expansions.from_terms(x)`` makes an :class:`expansions.ExpansionArray`
of them.  ``seed`` is anything :func:`numpy.random.default_rng` takes; the same arguments give the
same bits (a ``numpy.random.Generator`` is used as it stands, and advanced).  The hypothesis
strategies (:func:`valid_expansions`, :func:`arbitrary_expansions`) draw ExpansionArrays; they need
hypothesis (the ``test`` extra), imported when the module is.

Two groups of families:

* **valid expansions** (:data:`VALID_FAMILIES`, composed by :func:`mixed_pairs` and
  :func:`edge_pairs`, the verification's inputs): every row finite and ulp-nonoverlapping
  (:func:`expansions.bounds.ulp_nonoverlapping`, what the library calls a valid expansion), so the
  proven bounds apply: :func:`cancellation`, :func:`sterbenz`, :func:`exponent_gaps`,
  :func:`zeros_and_overlaps`, :func:`same_sign`, :func:`near_underflow`, :func:`sparse`,
  :func:`subnormal`, :func:`near_overflow`, :func:`lowest_binades`;
* **kernel inputs** (:func:`family` by name, :data:`FAMILIES` and :data:`MORE_FAMILIES`): any floats
  for bit-for-bit comparisons of kernels against their twins, non-finite terms, signed zeros,
  unordered and overlapping terms included.

>>> import numpy as np
>>> from expansions import testing
>>> x, y = testing.cancellation(4, 3, seed=1)
>>> x.shape, x.dtype
((4, 3), dtype('float64'))
>>> bool(np.array_equal(x, testing.cancellation(4, 3, seed=1)[0]))   # deterministic
True
>>> bool((x[:, 0] == -y[:, 0]).all())                                 # leading terms cancel
True
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .cpu import elementary as E
from .cpu import kernels as twin
from .creation import array as _array
from .creation import from_terms
from .formats import format_of
from .generate import random_terms

try:  # hypothesis is a test extra, not a dependency: the strategies need it, the families do not
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover - depends on the environment
    st = None

#: The leading exponents of a valid family lie within its ``center`` +- SPREAD.
SPREAD = 8


def _rng(seed) -> np.random.Generator:
    return np.random.default_rng(seed)


def _seeds(rng, n):
    return rng.integers(0, 2**31, size=n)


def _terms(count, R, dtype, seed, exponent_range, **kw):
    return random_terms((count,), R, dtype, seed=int(seed), exponent_range=exponent_range, **kw)


def _around(center):
    return (center - SPREAD, center + SPREAD)


# ---------------------------------------------------------------------------------------------
# valid expansions: the verification's families (each core takes its seeds and the generator, so
# that mixed_pairs and edge_pairs draw exactly what the verification drew)


def _random(count, R, dtype, seeds, center):
    return _terms(count, R, dtype, seeds[0], _around(center)), _terms(count, R, dtype, seeds[1], _around(center))


def _cancellation(count, R, dtype, seeds, rng, center):
    p = format_of(dtype).p
    x = _terms(count, R, dtype, seeds[0], _around(center))
    y = -x
    j = rng.integers(1, R, size=count)
    tail = _terms(count, R, dtype, seeds[1], (0, 0))
    for i in range(count):
        jj = j[i]
        nz = np.flatnonzero(x[i, :jj])
        _, e_prev = np.frexp(float(x[i, nz[-1]]))  # last nonzero term before the tail
        scale = int(e_prev) - 1 - p - int(rng.integers(0, 3))
        y[i, jj:] = np.ldexp(tail[i, : R - jj].astype(np.float64), scale).astype(dtype)
    return x, y


def _sterbenz(count, R, dtype, seeds, rng, center):
    x = _terms(count, R, dtype, seeds[0], _around(center))
    y = _terms(count, R, dtype, seeds[1], (0, 0))
    _, ex0 = np.frexp(x[:, 0].astype(np.float64))
    shift = (ex0 - 1 + rng.integers(-1, 1, size=count)).astype(np.int32)
    y = np.ldexp(y.astype(np.float64), shift[:, None]).astype(dtype)
    y = np.where((np.sign(y[:, :1]) == np.sign(x[:, :1])), -y, y)
    return x, y


def _gaps(count, R, dtype, seeds, center):
    p = format_of(dtype).p
    return tuple(_terms(count, R, dtype, s, _around(center), max_gap=p) for s in seeds[:2])


def _zeros(count, R, dtype, seeds, center):
    return tuple(_terms(count, R, dtype, s, _around(center), p_ulp=0.3, p_zero=0.2) for s in seeds[:2])


def _same_sign(count, R, dtype, seeds, center):
    return tuple(_terms(count, R, dtype, s, (center, center + 1), same_sign=True) for s in seeds[:2])


def near_underflow_exponent(R: int, dtype) -> int:
    """The center of :func:`near_underflow`'s leading exponents: the last terms of R-term rows fall
    to the subnormal range, and products of two rows stay finite."""
    fmt = format_of(dtype)
    return min(fmt.emin + (R - 1) * (fmt.p + 2) // 2, fmt.emax // 2 - 6)


def _near_underflow(count, R, dtype, seeds):
    lo = near_underflow_exponent(R, dtype)
    return tuple(_terms(count, R, dtype, s, (lo - 4, lo + 4)) for s in seeds[:2])


def random_pairs(count: int, R: int, dtype="float64", seed=None, *, center: int = 0):
    """Random valid expansions (:func:`expansions.generate.random_terms`), leading exponents within
    ``center`` +- :data:`SPREAD`."""
    return _random(count, R, dtype, _seeds(_rng(seed), 2), center)


def cancellation(count: int, R: int, dtype="float64", seed=None, *, center: int = 0):
    """Massive cancellation: ``y = -x`` up to a random term j (1 <= j < R), then an unrelated tail
    below the ulp of x's last nonzero term before j, so ``|x + y| < 2**(3 - p) |x_0|``: the sum loses
    at least p - 3 bits of x's leading term."""
    rng = _rng(seed)
    return _cancellation(count, R, dtype, _seeds(rng, 2), rng, center)


def sterbenz(count: int, R: int, dtype="float64", seed=None, *, center: int = 0):
    """Sterbenz pairs: y's leading term of the opposite sign to x's, ``|y_0|`` within a factor 4 of
    ``|x_0|`` (the leading terms' difference is exact where within a factor 2)."""
    rng = _rng(seed)
    return _sterbenz(count, R, dtype, _seeds(rng, 2), rng, center)


def exponent_gaps(count: int, R: int, dtype="float64", seed=None, *, center: int = 0):
    """Gaps of 0..p bits (beyond p) between consecutive terms."""
    return _gaps(count, R, dtype, _seeds(_rng(seed), 2), center)


def zeros_and_overlaps(count: int, R: int, dtype="float64", seed=None, *, center: int = 0):
    """Interleaved zero terms (probability 0.2 each) and one-bit overlaps (a term exactly ± the ulp of
    the one before, probability 0.3)."""
    return _zeros(count, R, dtype, _seeds(_rng(seed), 2), center)


def same_sign(count: int, R: int, dtype="float64", seed=None, *, center: int = 0):
    """Every term of a row of the sign of its leading term, leading exponents ``center`` or
    ``center + 1`` (close magnitudes: sums carry)."""
    return _same_sign(count, R, dtype, _seeds(_rng(seed), 2), center)


def near_underflow(count: int, R: int, dtype="float64", seed=None):
    """Leading exponents within 4 of :func:`near_underflow_exponent`: the last terms are subnormal or
    zero (random_terms' terms below the smallest subnormal are zero)."""
    return _near_underflow(count, R, dtype, _seeds(_rng(seed), 2))


def mixed_pairs(count: int, R: int, dtype="float64", seed=None, *, center: int = 0):
    """The verification's mix of the design notes' adversarial families, in this order: random
    (``count - 6 (count // 8)`` rows), then ``max(1, count // 8)`` rows each of :func:`cancellation`,
    :func:`sterbenz`, :func:`exponent_gaps`, :func:`zeros_and_overlaps`, :func:`same_sign` and
    :func:`near_underflow`; leading exponents within ``center`` +- :data:`SPREAD` (the near-underflow
    rows apart)."""
    rng = _rng(seed)
    s = _seeds(rng, 16)
    k = max(1, count // 8)
    parts = [_random(count - 6 * k, R, dtype, s[0:2], center),
             _cancellation(k, R, dtype, s[2:4], rng, center),
             _sterbenz(k, R, dtype, s[4:6], rng, center),
             _gaps(k, R, dtype, s[6:8], center),
             _zeros(k, R, dtype, s[8:10], center),
             _same_sign(k, R, dtype, s[10:12], center),
             _near_underflow(k, R, dtype, s[12:14])]
    return np.concatenate([a for a, _ in parts]), np.concatenate([b for _, b in parts])


def _sparse_rows(count, R, dtype, seed, rng, center):
    dense = _terms(count, R, dtype, seed, _around(center))
    out = np.zeros_like(dense)
    for i in range(count):
        m = int(rng.integers(1, R + 1))  # nonzero terms, spread over the R positions in order
        where = np.concatenate([[0], np.sort(rng.choice(np.arange(1, R), m - 1, replace=False))])
        out[i, where.astype(int)] = dense[i, :m]
    return out


def _subnormal_rows(count, R, dtype, seed, rng):
    fmt = format_of(dtype)
    t = _terms(count, R, dtype, seed, (fmt.emin, fmt.emin + fmt.p // 2))
    smallest = np.asarray(float(fmt.eta), dtype=t.dtype)
    for i in range(count):
        zeros = np.flatnonzero(t[i] == 0)
        fill = zeros[rng.random(zeros.size) < 0.75]
        t[i, fill] = rng.choice([-1, 1], size=fill.size) * smallest
    return t


def _ranges(dtype):
    """The edge families' exponent ranges: the lowest binades, large partners of tiny factors (their
    product near 2^-2SPREAD), the top of the range."""
    fmt = format_of(dtype)
    low = (fmt.emin, fmt.emin + SPREAD)
    big = (-fmt.emin - 3 * SPREAD, -fmt.emin - 2 * SPREAD)
    high = (fmt.emax - 2 - SPREAD, fmt.emax - 2)
    return low, big, high


def sparse(count: int, R: int, dtype="float64", seed=None, *, centers=(0, 0)):
    """Interior zero terms followed by nonzero terms (``[1, 0, 0, 0, 0, 0, 0, 2^-53]``: the zeros are
    skipped by the definition, so the nonzero terms sit at any positions); x's leading exponents
    around ``centers[0]``, y's around ``centers[1]``."""
    rng = _rng(seed)
    s = _seeds(rng, 2)
    return _sparse_rows(count, R, dtype, s[0], rng, centers[0]), _sparse_rows(count, R, dtype, s[1], rng, centers[1])


def subnormal(count: int, R: int, dtype="float64", seed=None, *, product: bool = False):
    """A normal leading term in the lowest p/2 binades whose next terms are subnormal, the last ones
    repeating the smallest subnormal ± eta (allowed: its ulp is itself).  y: the same (``product``:
    leading terms near ``2**-emin``, so that x y is near 1)."""
    rng = _rng(seed)
    s = _seeds(rng, 2)
    x = _subnormal_rows(count, R, dtype, s[0], rng)
    y = _terms(count, R, dtype, s[1], _ranges(dtype)[1]) if product else _subnormal_rows(count, R, dtype, s[1], rng)
    return x, y


def near_overflow(count: int, R: int, dtype="float64", seed=None, *, product: bool = False):
    """Leading terms within ``2**(emax - 2 - SPREAD) .. 2**(emax - 1)``, gaps of up to p bits between
    the terms: sums stay finite.  y: the same (``product``: the reciprocal range, so that
    ``2**-SPREAD <= |x_0 y_0| < 2**(SPREAD + 2)``)."""
    fmt = format_of(dtype)
    s = _seeds(_rng(seed), 2)
    high = _ranges(dtype)[2]
    x = _terms(count, R, dtype, s[0], high, max_gap=fmt.p)
    y = _terms(count, R, dtype, s[1], (-high[1], -high[0])) if product else _terms(count, R, dtype, s[1], high,
                                                                                    max_gap=fmt.p)
    return x, y


def lowest_binades(count: int, R: int, dtype="float64", seed=None, *, product: bool = False):
    """Leading terms in the lowest SPREAD + 1 binades of the normal range (the later terms underflow
    to subnormals or zero); y: the same (``product``: large, x y near 2**-2SPREAD)."""
    low, big, _ = _ranges(dtype)
    s = _seeds(_rng(seed), 2)
    return _terms(count, R, dtype, s[0], low), _terms(count, R, dtype, s[1], big if product else low)


def edge_pairs(count: int, R: int, dtype="float64", seed=None, *, centers=(0, 0), product: bool = False):
    """The valid inputs :func:`mixed_pairs` does not reach, ``max(1, count // 4)`` rows each of
    :func:`sparse` (at ``centers``), :func:`subnormal`, :func:`near_overflow` and
    :func:`lowest_binades`, each y a partner that keeps the result in range (``product``: the partners
    of a multiplication)."""
    rng = _rng(seed)
    s = _seeds(rng, 16)
    k = max(1, count // 4)
    fmt = format_of(dtype)
    low, big, high = _ranges(dtype)
    tiny = _subnormal_rows(k, R, dtype, s[0], rng)
    xs = [_sparse_rows(k, R, dtype, s[1], rng, centers[0]), tiny]
    ys = [_sparse_rows(k, R, dtype, s[2], rng, centers[1])]
    ys.append(_terms(k, R, dtype, s[3], big) if product else _subnormal_rows(k, R, dtype, s[3], rng))
    xs.append(_terms(k, R, dtype, s[4], high, max_gap=fmt.p))
    ys.append(_terms(k, R, dtype, s[5], (-high[1], -high[0])) if product else
              _terms(k, R, dtype, s[5], high, max_gap=fmt.p))
    xs.append(_terms(k, R, dtype, s[6], low))
    ys.append(_terms(k, R, dtype, s[7], big if product else low))
    return np.concatenate(xs), np.concatenate(ys)


#: The families whose rows are valid expansions, by name.
VALID_FAMILIES = {
    "random": random_pairs, "cancellation": cancellation, "sterbenz": sterbenz, "exponent_gaps": exponent_gaps,
    "zeros_and_overlaps": zeros_and_overlaps, "same_sign": same_sign, "near_underflow": near_underflow,
    "sparse": sparse, "subnormal": subnormal, "near_overflow": near_overflow, "lowest_binades": lowest_binades,
}


def flush_below(terms, exponent: int) -> np.ndarray:
    """A copy of ``terms`` with the terms below ``2**exponent`` in magnitude zero (still valid
    expansions).  Float64 products of the rows of :func:`mixed_pairs` flushed below 2^-480 keep their
    rounding errors above the underflow threshold, where the twins' Dekker product and the FMA agree."""
    a = np.array(terms, copy=True)
    a[np.abs(a) < np.ldexp(1.0, exponent)] = 0
    return a


def product_safe_pairs(count: int, R: int, dtype="float64", seed=None):
    """:func:`mixed_pairs` whose float64 terms are flushed below 2^-480 (:func:`flush_below`)."""
    x, y = mixed_pairs(count, R, dtype, seed)
    if np.dtype(dtype) == np.float64:
        x, y = flush_below(x, -480), flush_below(y, -480)
    return x, y


def product_safe_random(count: int, R: int, dtype="float64", seed=None, **kw) -> np.ndarray:
    """Random expansions (:func:`expansions.generate.random_terms`, its keywords) whose float64 terms
    lie above 2^-400, so that products keep representable errors; one (count, R) array."""
    kw.setdefault("min_exponent", -400 if np.dtype(dtype) == np.float64 else None)
    return random_terms((count,), R, dtype, seed=seed, **kw)


# ---------------------------------------------------------------------------------------------
# kernel inputs (tests/test_gpu.py, tests/test_cuda_emulated.py, the GPU runbook's bitexact part):
# x of n terms, y of m terms; ``op`` the kernel's name ("mul" in it: products' rules, "sub": y
# negated where the family says so), R its number of output terms


def _is_product(op) -> bool:
    return "mul" in op


def _min_exponent(op, dtype):
    """Float64 products: no term below 2^-450 (the twin's Dekker product equals the FMA's above)."""
    return -450 if (_is_product(op) and np.dtype(dtype) == np.float64) else None


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


def family(name: str, op: str, dtype, n: int, m: int, R: int, count: int, seed: int):
    """(x, y) of the kernel-input family ``name`` (:data:`FAMILIES`, :data:`MORE_FAMILIES`): ``count``
    rows, x of n terms, y of m terms (y unused by unary operations), for the kernel ``op`` at R output
    terms; ``seed`` an integer."""
    dt = np.dtype(dtype)
    fmt = format_of(dt)
    rng = np.random.default_rng(seed)
    big = 1023 if dt == np.float64 else 127
    if name == "random":
        return _pair(op, dtype, n, m, count, seed)
    if name == "ulp_zero_same_sign":
        return _pair(op, dtype, n, m, count, seed, p_ulp=0.3, p_zero=0.3, same_sign=True, max_gap=0)
    if name == "wide_gaps":
        return _pair(op, dtype, n, m, count, seed, max_gap=fmt.p)
    if name in ("cancellation", "exact_cancellation"):
        # y = -x on the first min(n, m) terms, then (cancellation) a tiny term added to the last one;
        # exact_cancellation: a tiny last term only where that term is zero, so that x + y = 0 exactly
        # on the other rows when n == m
        x, _ = _pair(op, dtype, n, m, count, seed)
        y = np.zeros((count, m), dt)
        k = min(n, m)
        y[:, :k] = -x[:, :k]
        if name == "cancellation":
            tiny = random_terms(count, 1, dtype, seed=seed + 2, exponent_range=(-60, -30))[:, 0]
            y[:, k - 1] = np.where(y[:, k - 1] == 0, tiny, y[:, k - 1] + tiny)
        else:
            tiny = random_terms(count, 1, dtype, seed=seed + 3, exponent_range=(-60, -30),
                                min_exponent=_min_exponent(op, dtype))[:, 0]
            y[:, k - 1] = np.where(y[:, k - 1] == 0, tiny, y[:, k - 1])
        if op.startswith("sub"):
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
    if name == "overflow":  # leading terms near the overflow threshold (products: beyond it)
        lo = (big - 3) if not _is_product(op) else (big // 2 + 8)
        return _pair(op, dtype, n, m, count, seed, exponent_range=(lo, lo + 3), min_exponent=None)
    if name == "overflow_threshold":  # leading terms whose sums (products) straddle the threshold
        rng_ = ((500, 520) if _is_product(op) else (1000, 1023)) if dt == np.float64 else \
            ((60, 70) if _is_product(op) else (120, 127))
        return _pair(op, dtype, n, m, count, seed, exponent_range=rng_, min_exponent=None)
    if name == "underflow":  # terms down to the subnormal floor (2Sum stays exact there)
        lo = -1000 if dt == np.float64 else -100
        return _pair(op, dtype, n, m, count, seed, exponent_range=(lo, lo + 20), min_exponent=None)
    if name == "near_underflow":  # x near the underflow threshold: a quotient's lower terms fall below it
        x, y = _pair(op, dtype, n, m, count, seed)
        return random_terms(count, n, dt, seed=seed, exponent_range=(fmt.emin + 1, fmt.emin + fmt.p)), y
    if name == "signed_zeros":
        x = np.where(rng.random((count, n)) < 0.5, -0.0, 0.0).astype(dt)
        y = np.where(rng.random((count, m)) < 0.5, -0.0, 0.0).astype(dt)
        return x, y
    if name == "subnormal_terms":  # ulp-nonoverlapping, the smallest subnormal repeated: not positional
        x = random_terms(count, n, dt, seed=seed, exponent_range=(fmt.emin, fmt.emin + 2))
        eta = np.ldexp(1.0, fmt.emin - fmt.p + 1)
        x[:, 1:] = np.where(rng.random((count, n - 1)) < 0.7, eta, 0.0) * np.sign(x[:, :1])
        y = random_terms(count, m, dt, seed=seed + 1, exponent_range=(-fmt.emin - 12, -fmt.emin - 4))
        y[:, 4:] = 0  # y's lower terms (at large R far below y_0) would make the two-products' errors
        # underflow, where the FMA and Dekker's product may differ (the documented exception)
        return x, y
    if name == "shuffled":  # random expansions with their terms in random order
        x, y = _pair(op, dtype, n, m, count, seed)
        return np.take_along_axis(x, rng.permuted(np.tile(np.arange(n), (count, 1)), axis=1), 1), y
    if name == "ties":  # y = x up to signs: every x_i ties with y_i in magnitude (m <= n)
        x, _ = _pair(op, dtype, n, m, count, seed)
        return x, np.ascontiguousarray(x[:, :m] * rng.choice(np.array([-1.0, 1.0], dtype=dt), size=(count, m)))
    raise ValueError(f"unknown family {name!r}")


#: The kernel-input families every kernel is compared on (the GPU tests and the runbook's sets).
FAMILIES = ("random", "ulp_zero_same_sign", "wide_gaps", "cancellation", "sterbenz", "arbitrary",
            "close_magnitudes", "nonfinite", "overflow", "underflow", "signed_zeros")
#: More kernel-input families (the warp emulator's): exact total cancellation, sums and products
#: straddling the overflow threshold, x near the underflow threshold, subnormal lower terms, terms in
#: random order, ties in magnitude between x and y.
MORE_FAMILIES = ("exact_cancellation", "overflow_threshold", "near_underflow", "subnormal_terms", "shuffled", "ties")


def skip_family(name, op, dtype) -> bool:
    """Where a family does not apply: float64 products below the underflow threshold (the twin's
    Dekker product may differ from the FMA there)."""
    return name == "underflow" and _is_product(op) and np.dtype(dtype) == np.float64


# ---------------------------------------------------------------------------------------------
# the elementary functions' arguments (tests/test_elementary_emulated.py, tests/test_gpu_elementary.py,
# the runbook's bitexact and elementary parts)


def rows(values, R, dtype):
    """Rows of R terms from leading terms, or tuples of leading terms (the rest zero)."""
    out = np.zeros((len(values), R), dtype=dtype)
    for i, v in enumerate(values):
        v = v if isinstance(v, tuple) else (v,)
        out[i, : len(v)] = v[:R]
    return out


def elementary_domain(f, count, R, dtype, rng):
    """Random arguments (and second arguments, else None) of the elementary function ``f`` over its
    domain, every term used; ``rng`` a numpy Generator."""
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
    """The special and edge arguments of ``f`` (zeros, infinities, NaN in any term, the extreme
    floats, the thresholds of its ranges, points next to its poles and its exact cases), and second
    arguments (atan2, pow) or None."""
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


# ---------------------------------------------------------------------------------------------
# hypothesis strategies (ExpansionArrays)


def _strategies():
    if st is None:
        raise ImportError("the strategies of expansions.testing need hypothesis (pip install 'expansions[test]')")
    return st


def valid_expansions(terms=None, dtypes=("float64", "float32"), families=None, count: int = 1):
    """A hypothesis strategy of 1-D ExpansionArrays of ``count`` valid expansions: a family of
    :data:`VALID_FAMILIES` (or of ``families``), a seed, R from ``terms`` (a strategy; 2..32 by
    default) and a dtype of ``dtypes``.  Hypothesis shrinks towards the first family (random), the
    smallest R and seed 0."""
    s = _strategies()
    names = list(families or VALID_FAMILIES)
    terms = s.integers(2, 32) if terms is None else terms

    def build(name, seed, R, dtype, which):
        return from_terms(np.ascontiguousarray(VALID_FAMILIES[name](count, R, dtype, seed)[which]))

    return s.builds(build, s.sampled_from(names), s.integers(0, 2**32 - 1), terms, s.sampled_from(dtypes),
                    s.integers(0, 1))


def _dyadic(s, top=1200):
    """Dyadic rationals m 2^e, |m| <= 2^300, -1500 <= e <= top (by default far beyond both formats' ranges)."""
    return s.builds(lambda m, e: Fraction(m) * Fraction(2) ** e, s.integers(-(2**300), 2**300), s.integers(-1500, top))


def arbitrary_expansions(finite: bool = False, terms=None, dtypes=("float64", "float32")):
    """A hypothesis strategy of 0-d ExpansionArrays with arbitrary terms: any floats (overlapping or
    not, unordered), chains of terms near half an ulp of the one before (ties) with zeros and signed
    zeros, subnormals, non-finite terms, and correctly rounded rationals (overflowing to ±inf);
    ``finite``: finite terms only."""
    s = _strategies()
    terms = s.integers(2, 32) if terms is None else terms

    @s.composite
    def draw_one(draw):
        R = draw(terms)
        dtype = draw(s.sampled_from(dtypes))
        width = 64 if dtype == "float64" else 32
        kind = draw(s.sampled_from(["random", "chained", "greedy"]))
        if kind == "random":
            fl = s.floats(width=width, allow_nan=not finite, allow_infinity=not finite)
            t = [draw(fl) for _ in range(R)]
        elif kind == "greedy":
            if not finite:
                return _array(draw(s.one_of(_dyadic(s), s.fractions())), terms=R, dtype=dtype)
            largest = Fraction(float(np.finfo(dtype).max))  # finite: rationals the format's range holds
            q = s.one_of(_dyadic(s, format_of(dtype).emax - 301), s.fractions()).filter(lambda q: abs(q) < largest)
            return _array(draw(q), terms=R, dtype=dtype)
        else:
            fmt = format_of(dtype)
            t = [draw(s.floats(width=width, allow_nan=False, allow_infinity=False))]
            for _ in range(R - 1):
                prev = t[-1]
                if prev == 0 or draw(s.integers(0, 5)) == 0:
                    t.append(draw(s.sampled_from([0.0, -0.0])))
                    continue
                _, e = math.frexp(prev)
                half_ulp = math.ldexp(1.0, max(e - 1, fmt.emin) - fmt.p)
                m = draw(s.sampled_from([1.0, -1.0, 0.5, -0.75, 1 - 2.0**-20])) if draw(s.booleans()) else \
                    draw(s.floats(-1, 1, width=width))
                t.append(float(np.asarray(half_ulp * m, dtype=dtype)))
        return from_terms(np.array(t, dtype=dtype))

    return draw_one()
