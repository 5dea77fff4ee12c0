"""Random ulp-nonoverlapping expansions, for tests, verification and benchmarks.

The leading term has a random sign, a random p-bit significand and an exponent drawn uniformly from
``exponent_range``.  Each next term's exponent lies ``p + g`` below the previous one, ``g`` drawn
uniformly from ``0..max_gap``, so that ``|x_i| < 2**(e_{i-1} - p + 1) = ulp(x_{i-1})``; with
probability ``p_ulp`` a term is instead exactly ``±ulp(x_{i-1})`` (the one-bit overlap that
Definition II.2 allows).  Terms that fall below the smallest subnormal are zero, so an expansion
never claims more bits than the format can hold (design decision 9).
"""

from __future__ import annotations

import numpy as np

from .formats import format_of


def random_terms(
    shape,
    R: int,
    dtype="float64",
    seed=None,
    exponent_range=(-8, 8),
    max_gap: int = 4,
    p_ulp: float = 0.0,
    p_zero: float = 0.0,
    same_sign: bool = False,
    min_exponent: int | None = None,
) -> np.ndarray:
    """An array of shape ``shape + (R,)`` of valid ulp-nonoverlapping expansions (see module doc).

    ``p_zero`` is the probability that a term after the first is replaced by zero (interleaved
    zeros stay ulp-nonoverlapping); ``same_sign`` gives every term the sign of the leading term;
    terms whose exponent would be below ``min_exponent`` are zero (this keeps products and their
    rounding errors above the underflow threshold).
    """
    fmt = format_of(dtype)
    rng = np.random.default_rng(seed)
    shape = tuple(np.atleast_1d(shape)) if not isinstance(shape, tuple) else shape
    N = int(np.prod(shape, dtype=np.int64))
    p = fmt.p
    lo, hi = exponent_range
    exps = np.empty((N, R), dtype=np.int64)
    exps[:, 0] = rng.integers(lo, hi + 1, size=N)
    gaps = rng.integers(0, max_gap + 1, size=(N, R))
    for i in range(1, R):
        exps[:, i] = exps[:, i - 1] - p - gaps[:, i]
    mant = rng.integers(1 << (p - 1), 1 << p, size=(N, R), dtype=np.int64).astype(np.float64)
    signs = rng.choice(np.array([-1.0, 1.0]), size=(N, R))
    if same_sign:
        signs[:] = signs[:, :1]
    # significand scaled to [1, 2): exact in float64 for p <= 53
    vals = np.ldexp(signs * mant, (exps - (p - 1)).astype(np.int32))
    if p_ulp > 0:
        # exactly ±ulp of the previous term: 2**(e_{i-1} - p + 1)
        use = rng.random((N, R)) < p_ulp
        use[:, 0] = False
        prev = np.concatenate([exps[:, :1], exps[:, :-1]], axis=1).astype(np.int32)
        ulp_prev = np.ldexp(np.ones((N, R)), prev - (p - 1))
        vals = np.where(use, signs * ulp_prev, vals)
    terms = vals.astype(fmt_dtype(fmt))
    if min_exponent is not None:
        terms[exps < min_exponent] = 0
    if p_zero > 0:
        z = rng.random((N, R)) < p_zero
        z[:, 0] = False
        terms[z] = 0
    return terms.reshape(shape + (R,))


def fmt_dtype(fmt):
    return np.float64 if fmt.p == 53 else np.float32
