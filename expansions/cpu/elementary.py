"""CPU twins of the elementary functions of expansions, for any R (2..32) and both term types.

Every function takes (count, R) arrays of ulp-nonoverlapping terms (one expansion per row, like the
other twins) and returns (count, R) terms.  Only the library's own operations on expansions are
used: the safe addition and the truncated product, each followed by the renormalization
(:mod:`expansions.cpu.kernels`), the Newton division and square root (:mod:`expansions.cpu.newton`),
exact scalings by powers of two, and operations on the leading term (a float) to pick a branch or a
starting value; so a CUDA kernel can mirror each function line for line (see "GPU" below).

Working precision.  The body runs on W = min(R + 1, 32) terms (one guard term) and the result is
rounded to R terms by the renormalization at the end, so that the rounding errors of the argument
reduction and of the O(sqrt(bits)) operations stay below one unit 2^-(p-1)R of the result.

Algorithms (the bounds are empirical: :data:`expansions.bounds.ELEMENTARY`, measured by
``python -m expansions verify --elementary``):

* exp: x = k ln2 + r, |r| <= ln2/2 (Cody and Waite's additive reduction, ln2 to W terms); expm1 of
  r 2^-s by its Taylor series (n terms), then s doublings expm1(2a) = 2 expm1(a) + expm1(a)^2 (the
  reduction by 2^k and squaring of Hida, Li and Bailey's QD library, in the expm1 form that keeps the
  relative accuracy; Muller, "Elementary Functions: Algorithms and Implementation", 3rd ed., 2016,
  chapter 11 on range reduction);
  exp = (1 + expm1(r)) 2^k.  s and n are chosen per (W, format) by :func:`_exp_plan` to minimize the
  number of operations under the truncation error 2^-(bits + 4) (Brent and Zimmermann, "Modern
  Computer Arithmetic", 2010, chapter 4: argument reduction by 2^s, then O(sqrt(bits)) terms).  A row
  whose r is already small takes fewer halvings (:func:`_halvings`), so that r 2^-s does not fall
  below the underflow threshold.
* log: x = m 2^e with m in [sqrt(1/2), sqrt(2)); a table-based reduction (Tang's method; Muller,
  chapter 6): the centre c = i 2^-b nearest m (b = :data:`LOG_CENTRE_BITS` = 7, i = rint(m0 2^b),
  exact; 93 centres), log c from a table rounded to W terms (``constants.log_centres``, exact from
  mpmath), t = (m - c)/(m + c) (m plus the float -c or c, then the library's division), |t| <= 2^-8.49,
  and log m = log c + 2 atanh t = log c + 2t (1 + t^2/3 + t^4/5 + ...); log = log m + e ln2.  Near 1
  the centre is 1 itself (log c = 0, t = (m - 1)/(m + 1)): the relative accuracy is kept.  The series
  has n = ceil(bits / 16.99) terms and runs by a tapered Horner rule (as in MultiFloats.jl): step k
  (the coefficient 1/(2k+1), t^2 and the accumulator) at only the terms its contribution (t^2)^k
  needs, ceil((bits - 16.99 k)/(p - 1)), rounded up to 1, 2, 4, ..., W (:func:`log_plan`; one plan per
  (W, format) that the engine and the CUDA table read).  Operation count at W terms: 2 additions of a
  float, one Newton division, 2 products, the n Horner steps (a product and an addition each, at
  their widths: float64 W = 3: n = 10, widths[k] 3 for k < 4, 2 for k < 7, then 1; n at W = 5: 16;
  W = 9: 28; W = 17: 53; W = 32: 64, of which 15 at W), a product and an addition for log c, 2 for e ln2; the former
  Newton iteration on expm1 ran W = 3 as three steps each with an expm1 series, its halvings and a
  Newton division.  log1p: for |x| <= 1/4 the same series without forming 1 + x: j = rint(x0 2^b),
  c = 1 + j 2^-b, t = (x - j 2^-b) / (x + (2 + j 2^-b)) (both floats exact; t = x / (2 + x) for
  tiny x); beyond, log(1 + x).  log2 = e + log(m)/ln2 (exact at powers of two); log10 = log x / ln 10.
* pow(x, y) = exp(y log |x|) with the signs and special cases of IEEE 754 pow; integer exponents
  also by binary powering (:func:`expansions.elementwise.power`).
* sin, cos, tan: reduction modulo pi/2 by a Payne–Hanek method on each term (:func:`_reduce_half_pi`,
  with 2/pi to (emax + W p) bits: sin(1e300) is correct), then sin and 1 - cos of r 2^-s by their
  Taylor series and s doublings sin 2a = 2 sin a (1 - versin a), versin 2a = 2 sin^2 a (versin =
  1 - cos, which keeps the relative accuracy); tan = sin / cos.
* atan: |x| > 1 by atan x = sign(x) pi/2 - atan(1/x); then Newton's iteration on tan,
  y <- y + cos y (x cos y - sin y) (Newton on the inverse function again), terms doubling per step.
  atan2 by the quadrant rules of IEEE 754; asin x = atan(x / sqrt((1 - x)(1 + x))),
  acos x = 2 atan(sqrt((1 - x) / (1 + x))), with 1 - x lifted by a power of two (:func:`_lift`).
* sinh, cosh: (e^|x| 2^-1 -+ e^-|x| 2^-1) from the exp reduction (no overflow before the result
  overflows); sinh x for |x| <= 1/2 as e (e + 2) / (2 (e + 1)) with e = expm1 x.
  tanh |x| = -e / (2 + e) with e = expm1(-2|x|).

Special values follow IEEE 754 and the library's non-finite rule (:func:`nonfinite_epilogue`): an
operand with a non-finite term gives (w, 0, ..., 0), w the IEEE result of the leading terms (NaN
where the leading term is finite); a domain error gives NaN; an overflowing result gives ±inf.
Every loop has a bound fixed by (R, format); the only data-dependent count, the halvings per row,
is at most the plan's s.

GPU.  ``expansions/cuda/elementary.cuh`` mirrors these twins function for function (entry points in
``kernels.cu``, rows of ``expansions.cuda.build.OPERATIONS``): the group add/mul/renorm/Newton device
functions at the same widths, the constants of :mod:`expansions.cpu.constants`, the plans and the
thresholds (:func:`thresholds`) in one device array (:func:`expansions.cuda.elementary.table`; the
Payne–Hanek table is 969 x 32 float64 at most), per-group branches where the twins select rows
(``_rows``; warp-uniform, every group computes a branch that any group of its warp takes), the same
special rows.  Nothing here calls libm on a value that reaches the result (the Newton start
:func:`_atan_start` uses IEEE operations only), so the kernels give the same
bits (tests/test_elementary_emulated.py in the warp emulator, tests/test_gpu_elementary.py on a GPU).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..formats import MAX_TERMS, Format, format_of
from . import constants as C
from .kernels import add_safe, mul_truncated, nonfinite_epilogue, renormalize
from .newton import div as _newton_div
from .newton import leading_exponent, scale
from .newton import sqrt as _newton_sqrt

GUARD = 1


def working_terms(R: int) -> int:
    """Terms of the body of every function: one guard term, at most the kernels' 32."""
    return min(R + GUARD, MAX_TERMS)


# ----------------------------------------------------------------------------------------------
# the library's operations at w terms (w = the operands' width)


@dataclass(frozen=True)
class Arithmetic:
    """The library's operations the functions are built of, on (count, w) terms: the safe addition,
    the truncated product, the renormalization, the Newton division and square root, with the twins'
    signatures.  :data:`TWINS` (the NumPy twins) is the specification; any other set must return the
    same bits (the compiled engine's, :func:`expansions.backends.engine_backend`, is tested bit-identical
    to the twins in tests/test_engine.py, and the functions on it in tests/test_elementary.py)."""

    add_safe: Callable
    mul_truncated: Callable
    renormalize: Callable
    div: Callable
    sqrt: Callable


TWINS = Arithmetic(add_safe, mul_truncated, renormalize, _newton_div, _newton_sqrt)
_ARITHMETIC: contextvars.ContextVar = contextvars.ContextVar("expansions_elementary_arithmetic", default=TWINS)


@contextlib.contextmanager
def arithmetic(ops: Arithmetic):
    """Run the functions on ``ops`` (for example the engine's compiled operations) inside the block."""
    token = _ARITHMETIC.set(ops)
    try:
        yield ops
    finally:
        _ARITHMETIC.reset(token)


def _renormalize(x, w):
    return _ARITHMETIC.get().renormalize(x, w)


def _add(x, y):
    w = max(x.shape[1], y.shape[1])
    a = _ARITHMETIC.get()
    return a.renormalize(a.add_safe(x, y, w), w)


def _mul(x, y):
    w = max(x.shape[1], y.shape[1])
    a = _ARITHMETIC.get()
    return a.renormalize(a.mul_truncated(x, y, w), w)


def _div(x, y):
    w = max(x.shape[1], y.shape[1])
    a = _ARITHMETIC.get()
    return a.renormalize(a.div(x, y, w), w)


def _sqrt(x):
    a = _ARITHMETIC.get()
    return a.renormalize(a.sqrt(x, x.shape[1]), x.shape[1])


def _scale(x, k):
    """x 2^k, k an int or an int array per row (exact but below the underflow threshold)."""
    return scale(x, np.broadcast_to(np.asarray(k, dtype=np.int32), (x.shape[0],)))


def _const(name, n, w, dt):
    return np.repeat(C.constant(name, w, dt.name), n, axis=0)


def _float_col(v, w, dt):
    """A column of floats as (n, w) expansions (the value in term 0)."""
    out = np.zeros((v.shape[0], w), dtype=dt)
    out[:, 0] = v
    return out


def _width(x, w):
    """x with w terms: truncated (x's tail below is dropped) or padded with zeros."""
    if x.shape[1] >= w:
        return np.ascontiguousarray(x[:, :w])
    return np.concatenate([x, np.zeros((x.shape[0], w - x.shape[1]), dtype=x.dtype)], axis=1)


def _rows(mask, fn, *arrays, w=None):
    """fn on the rows where mask holds (a branch per row in a kernel), zeros elsewhere."""
    first = arrays[0]
    w = first.shape[1] if w is None else w
    out = np.zeros((first.shape[0], w), dtype=first.dtype)
    if mask.any():
        out[mask] = fn(*[np.ascontiguousarray(a[mask]) for a in arrays])
    return out


def _horner(coeffs, t):
    """sum_k c_k t^k by Horner's rule (coeffs: (n, w) constants)."""
    n, w = coeffs.shape
    acc = np.repeat(coeffs[n - 1 : n], t.shape[0], axis=0)
    for k in range(n - 2, -1, -1):
        acc = _add(_mul(acc, t), np.repeat(coeffs[k : k + 1], t.shape[0], axis=0))
    return acc


# ----------------------------------------------------------------------------------------------
# evaluation plans: the number of halvings s and of Taylor terms n, from w and the format


def _bits(w: int, fmt: Format) -> int:
    """Target bits of a w-term body near 1: the nominal w(p-1) + 1, at most the underflow floor."""
    return min(w * (fmt.p - 1) + 1, fmt.p - fmt.emin) + 4


def _max_halvings(w: int, fmt: Format) -> int:
    """Halvings that keep the argument's w terms above the underflow threshold (at least 3)."""
    return max(3, (fmt.p - fmt.emin) - 1 - w * (fmt.p - 1))


@functools.cache
def _exp_plan(w: int, fmt: Format) -> tuple:
    """(s, n) for expm1 of |r| <= 1/2: |t| = |r| 2^-s <= 2^-(s+1), the series' remainder after n terms
    is below |t|^n/(n+1)! relative to t; minimize n + 2s (Horner: n products, a doubling: 2 ops)."""
    bits = _bits(w, fmt)
    best = None
    for s in range(0, _max_halvings(w, fmt) + 1):
        n = 1
        while n * (s + 1) + math.lgamma(n + 2) / math.log(2) < bits:
            n += 1
        if best is None or n + 2 * s < best[1] + 2 * best[0]:
            best = (s, n)
    return best


@functools.cache
def _sin_plan(w: int, fmt: Format) -> tuple:
    """(s, n) for sin and 1 - cos of |r| <= pi/4 (< 2^-0.34): two series in t^2 of n terms each,
    remainder |t|^(2n)/(2n+1)! relative; s doublings of 3 operations; minimize 4n + 3s."""
    bits = _bits(w, fmt)
    best = None
    for s in range(0, _max_halvings(w, fmt) + 1):
        n = 1
        while 2 * n * (s + 0.34) + math.lgamma(2 * n + 2) / math.log(2) < bits:
            n += 1
        if best is None or 4 * n + 3 * s < 4 * best[1] + 3 * best[0]:
            best = (s, n)
    return best


def _newton_widths(w: int) -> list:
    """Terms of the Newton steps: doubling from 2, then w twice (the start is a float)."""
    steps, r = [], 2
    while r < w:
        steps.append(r)
        r *= 2
    return steps + [w, w]


def _halvings(r, s: int):
    """Halvings per row: the plan's s for |r| near its limit, fewer for a smaller r (down to 0), so
    that |r 2^-s_row| <= 2^-(s+1) still holds and a small r is not pushed below the underflow
    threshold (its relative accuracy kept); the doublings run s_row times (a per-row loop count)."""
    return np.clip(leading_exponent(r[:, 0]) + s + 2, 0, s).astype(np.int32)


# ----------------------------------------------------------------------------------------------
# exponential


def _expm1_small(r):
    """expm1(r) for |r| <= 1/2 (w terms): Taylor on r 2^-s, then s doublings."""
    n_rows, w = r.shape
    dt = r.dtype
    s, n = _exp_plan(w, format_of(dt))
    rows_s = _halvings(r, s)
    t = _scale(r, -rows_s)
    e = _mul(t, _horner(C.taylor("expm1", n, w, dt.name), t))
    for i in range(s):
        e = np.where((i < rows_s)[:, None], _add(e * dt.type(2), _mul(e, e)), e)
    return e


def _exp_parts(x):
    """(m, k) with exp(x) = m 2^k, m = 1 + expm1(x - k ln2) in [0.7, 1.42] (x finite, |x| < 2^12)."""
    n_rows, w = x.shape
    dt = x.dtype
    ln2 = _const("ln2", n_rows, w, dt)
    k = np.rint(x[:, 0] / ln2[:, 0])
    r = _add(x, -_mul(_float_col(k, 1, dt), ln2))
    m = _add(_const_one(n_rows, w, dt), _expm1_small(r))
    return m, k.astype(np.int32)


def _const_one(n, w, dt):
    return _float_col(np.ones(n, dtype=dt), w, dt)


def _exp_limits(fmt: Format) -> tuple:
    """(lo, hi): exp(x) is 0 below lo (under half the smallest subnormal), inf above hi."""
    return (fmt.emin - fmt.p - 1) * math.log(2), (fmt.emax + 1) * math.log(2)


def thresholds(dtype) -> dict:
    """The branch thresholds of the functions as terms of ``dtype`` (the comparisons of a term with
    them are in that format): the exp limits, the sinh/cosh overflow limit, sqrt(2) (log's mantissa
    range) and pi/4 (sin/cos without reduction).  The kernels receive the same values in their table
    (:func:`expansions.cuda.elementary.table`)."""
    dt = np.dtype(dtype)
    lo, hi = _exp_limits(format_of(dt))
    return {"exp_lo": dt.type(lo), "exp_hi": dt.type(hi), "hyp_limit": dt.type(hi + 1),
            "sqrt2": dt.type(math.sqrt(2)), "quarter_pi": dt.type(math.pi / 4), "pi": dt.type(math.pi),
            "half_pi": dt.type(math.pi / 2), "three_quarter_pi": dt.type(3 * math.pi / 4)}


def _exp_w(x):
    """exp of finite x at w terms, 0 and inf beyond the limits (inf: terms inf, for the epilogue)."""
    dt = x.dtype
    th = thresholds(dt)
    lo, hi = th["exp_lo"], th["exp_hi"]
    x0 = x[:, 0]
    mid = (x0 >= lo) & (x0 <= hi)

    def body(v):
        m, k = _exp_parts(v)
        return _scale(m, k)

    out = _rows(mid, body, x)
    out[x0 > hi, 0] = np.inf
    return out


def _expm1_w(x):
    """expm1 of finite x at w terms: the series for |x| <= 1/2, exp(x) - 1 beyond."""
    n_rows, w = x.shape
    small = np.abs(x[:, 0]) <= 0.5
    out = _rows(small, _expm1_small, x)
    big = _rows(~small, lambda v: _add(_exp_w(v), -_const_one(v.shape[0], w, v.dtype)), x)
    return np.where(small[:, None], out, big)


# ----------------------------------------------------------------------------------------------
# logarithm


def _series_terms(p: int, log2_ratio: float) -> int:
    """Terms of a float series whose ratio is below 2^-log2_ratio, to 2^-(p+1)."""
    return -(-(p + 1) // int(log2_ratio))


def _atan_start(x0):
    """A float start for atan(x0), |x0| <= 1, from IEEE operations only: two halvings
    atan t = 2 atan(t / (1 + sqrt(1 + t^2))) to |t| <= tan(pi/16) < 0.2, the series
    t (1 - t^2/3 + t^4/5 - ...), times 4.  Twin of ``atan_start`` in elementary.cuh."""
    dt = x0.dtype
    t = x0
    for _ in range(2):
        t = t / (dt.type(1) + np.sqrt(dt.type(1) + t * t))
    t2 = t * t
    n = _series_terms(format_of(dt).p, 4)
    acc = np.full_like(x0, dt.type((-1) ** (n - 1)) / dt.type(2 * n - 1))
    for k in range(n - 2, -1, -1):
        acc = acc * t2 + dt.type((-1) ** k) / dt.type(2 * k + 1)
    return (t * acc) * dt.type(4)


#: The centres' spacing 2^-b of the logarithm's table (see :func:`log_plan`).
LOG_CENTRE_BITS = 7


@dataclass(frozen=True)
class LogPlan:
    """The logarithm's evaluation plan at w terms of a format (:func:`log_plan`): the centres
    c_i = i 2^-b, i = first .. first + count - 1 (the table ``constants.log_centres``), the n terms of
    the atanh series, ``ratio`` (t^2 <= 2^-ratio), and ``widths[k]``: the terms of the k-th Horner step
    (the coefficient 1/(2k+1), t^2 and the accumulator are truncated to it)."""

    b: int
    first: int
    count: int
    n: int
    ratio: float
    widths: tuple


def _taper_widths(w: int) -> tuple:
    """The widths a tapered step may take: 1 and the Newton steps' 2, 4, 8, ..., w (the widths at
    which the kernels already compile the library's operations)."""
    return tuple(sorted({1, *_newton_widths(w)}))


@functools.cache
def log_plan(w: int, fmt: Format) -> LogPlan:
    """The plan of the logarithm at w terms (read by the engine and the CUDA table too).

    m in [sqrt(1/2), sqrt(2)] (its leading term m0 <= RN(sqrt 2), above RN(sqrt 2)/2); the centre
    c = i 2^-b, i = rint(m0 2^b), so |m0 - c| <= 2^-(b+1), |m - c| <= 2^-(b+1) + ulp(m0) and
    m + c >= 2 RN(sqrt 2)/2 - 2^-(b+1); ``ratio`` = -2 log2 of the bound on |t| = |m - c| / (m + c),
    rounded down to 1/1024.  The series 1 + t^2/3 + ... after n terms leaves t^(2n)/(1 - t^2) relative
    (its sum is >= 1): n = ceil(bits / ratio), bits = :func:`_bits`.  The k-th Horner step contributes
    (t^2)^k times a value of order 1, so it needs bits - k ratio bits: ceil((bits - k ratio) / (p - 1))
    terms (an expansion of v terms carries v (p - 1) bits), at least 1, at most w, rounded up to one
    of :func:`_taper_widths` (the tapered Horner rule of MultiFloats.jl's elementary functions).  An
    operation at v terms errs by a few units of 2^-v(p-1) relative; its contribution times (t^2)^k
    stays below a few units of 2^-bits, bits = w (p - 1) + 5 (one guard term beyond R)."""
    b = LOG_CENTRE_BITS
    p = fmt.p
    sqrt2 = float(thresholds(fmt.name)["sqrt2"])
    lo = math.floor(sqrt2 / 2 * 2**b)  # rint(m0 2^b) for the smallest m0 (a tie may round down)
    hi = math.ceil(sqrt2 * 2**b)
    half = 2.0 ** -(b + 1)
    tmax = half * (1 + 2.0 ** -(p - 2)) / (sqrt2 - half)
    ratio = math.floor(-2 * math.log2(tmax) * 1024) / 1024
    bits = _bits(w, fmt)
    n = max(1, math.ceil(bits / ratio))
    allowed = _taper_widths(w)
    widths = []
    for k in range(n):
        v = min(max(math.ceil((bits - k * ratio) / (p - 1)), 1), w)
        widths.append(next(a for a in allowed if a >= v))
    widths[0] = w
    return LogPlan(b, lo, hi - lo + 1, n, ratio, tuple(widths))


def _log_series(num, den, logc):
    """log c + 2 atanh(t), t = num / den (w terms; |t| <= 2^-(ratio/2)): u (1 + t^2/3 + t^4/5 + ...)
    with u = 2t = (2 num) / den (so that u keeps the bits of a subnormal log1p x: x / (2 + x) would
    lose them) and t^2 = u^2 / 4 (both scalings exact, but for tail terms below the underflow
    threshold),
    by the tapered Horner rule of :func:`log_plan` (step k at ``widths[k]`` terms: the library's
    product and addition, each renormalized, at two or more terms; at one term plain floats, the
    product and the sum each rounded once)."""
    n_rows, w = num.shape
    dt = num.dtype
    plan = log_plan(w, format_of(dt))
    coef = C.atanh_coefficients(plan.n, w, dt.name)
    u = _div(num * dt.type(2), den)
    t2 = _mul(u, u) * dt.type(0.25)
    wk = plan.widths[plan.n - 1]
    acc = np.repeat(coef[plan.n - 1 : plan.n, :wk], n_rows, axis=0)
    for k in range(plan.n - 2, -1, -1):
        wk = plan.widths[k]
        if wk == 1:  # plain floats: two IEEE operations
            acc = _float_col(acc[:, 0] * t2[:, 0] + coef[k, 0], 1, dt)
            continue
        c = np.repeat(coef[k : k + 1, :wk], n_rows, axis=0)
        acc = _add(_mul(_width(acc, wk), _width(t2, wk)), c)
    return _add(logc, _mul(u, acc))


def _centre_logs(i, plan, w, dt):
    """The rows of the centres' table for the centre indices i (terms): row i - first, clamped to the
    table in the terms' type (NaN to the first row) before the conversion to integers; a body row is
    always inside, the clamp only keeps a garbage operand (a tail that is not ulp-nonoverlapping) from
    reading outside (the engine and the kernels clamp the same way)."""
    row = i - dt.type(plan.first)
    row = np.where(row > 0, row, dt.type(0))
    row = np.where(row < dt.type(plan.count - 1), row, dt.type(plan.count - 1))
    return C.log_centres(plan.b, plan.first, plan.count, w, dt.name)[row.astype(np.int64)]


def _log_centred(m):
    """log m for m0 in (RN(sqrt 2)/2, RN(sqrt 2)] (w terms): the centre c = i 2^-b nearest m0
    (i = rint(m0 2^b), exact), t = (m - c) / (m + c) (m - c and m + c: m plus the float -c or c),
    log m = log c + 2 atanh t (:func:`_log_series`, log c from the table)."""
    n_rows, w = m.shape
    dt = m.dtype
    plan = log_plan(w, format_of(dt))
    i = np.rint(m[:, 0] * dt.type(2.0**plan.b))
    c = i * dt.type(2.0**-plan.b)
    logc = _centre_logs(i, plan, w, dt)
    return _log_series(_add(m, _float_col(-c, 1, dt)), _add(m, _float_col(c, 1, dt)), logc)


def _log1p_centred(x):
    """log1p x for |x0| <= 1/4 without forming 1 + x (w terms): j = rint(x0 2^b), c = 1 + j 2^-b,
    t = (x - j 2^-b) / (x + (2 + j 2^-b)) (the floats -j 2^-b and 2 + j 2^-b are exact), log c from
    the table (0 for j = 0: then t = x / (2 + x), relatively accurate however small x is)."""
    n_rows, w = x.shape
    dt = x.dtype
    plan = log_plan(w, format_of(dt))
    j = np.rint(x[:, 0] * dt.type(2.0**plan.b))
    d = j * dt.type(2.0**-plan.b)
    logc = _centre_logs(j + dt.type(2**plan.b), plan, w, dt)
    return _log_series(_add(x, _float_col(-d, 1, dt)), _add(x, _float_col(dt.type(2) + d, 1, dt)), logc)


def _log_parts(x):
    """(y, e) with log x = y + e ln2, y = log(m), m = x 2^-e in [sqrt(1/2), sqrt(2)) (x > 0 finite)."""
    dt = x.dtype
    e = leading_exponent(x[:, 0])
    m = _scale(x, -e)
    up = m[:, 0] > thresholds(dt)["sqrt2"]
    e = e + up
    m = np.where(up[:, None], m * dt.type(0.5), m)
    return _log_centred(m), e


def _log_w(x):
    y, e = _log_parts(x)
    return _add(y, _mul(_float_col(e.astype(x.dtype), 1, x.dtype), _const("ln2", x.shape[0], x.shape[1], x.dtype)))


def _log1p_w(x):
    """log1p of finite x > -1: the centred series on x itself for |x| <= 1/4 (:func:`_log1p_centred`),
    log(1 + x) beyond (1 + x exact for x >= -1/2)."""
    w = x.shape[1]
    small = np.abs(x[:, 0]) <= 0.25
    a = _rows(small, _log1p_centred, x)
    b = _rows(~small, lambda v: _log_w(_add(v, _const_one(v.shape[0], w, v.dtype))), x)
    return np.where(small[:, None], a, b)


def _log2_w(x):
    y, e = _log_parts(x)
    return _add(_float_col(e.astype(x.dtype), 1, x.dtype), _mul(y, _const("inv_ln2", x.shape[0], x.shape[1], x.dtype)))


def _log10_w(x):
    return _mul(_log_w(x), _const("inv_ln10", x.shape[0], x.shape[1], x.dtype))


# ----------------------------------------------------------------------------------------------
# trigonometric functions


def _reduce_half_pi(x):
    """(r, q): x = r + (q + 4j) pi/2 for an integer j, |r| <= pi/4 (slightly more at rounding ties).

    Payne–Hanek on each term: x_j = m 2^E; for E > 2 (m an integer) x_j 2/pi = m F_E mod 4 with the
    table F_E = (2^E 2/pi mod 4) (:func:`expansions.cpu.constants.two_over_pi_table`), else
    x_j * 2/pi; every product is reduced mod 4, all are summed on M = min(2w + 2, 32) terms (the
    extra terms keep the relative accuracy of r when x is close to a multiple of pi/2), the nearest
    integer k is taken off, and the rest times pi/2 is r; q = k mod 4.  Everything is scaled by 2^S
    (S = p + 2) so that the table's tail stays above the underflow threshold."""
    n_rows, w = x.shape
    dt = x.dtype
    fmt = format_of(dt)
    M = min(2 * w + 2, MAX_TERMS)
    S = C.shift_of(fmt)
    table = C.two_over_pi_table(M, dt.name)
    scaled = np.repeat(C.constant("two_over_pi", M, dt.name, S), n_rows, axis=0)
    four = dt.type(2.0 ** (S + 2))
    acc = np.zeros((n_rows, M), dtype=dt)
    for j in range(w):
        xj = x[:, j]
        E = leading_exponent(xj) - (fmt.p - 1)
        big = (E > 2) & (xj != 0)
        m = np.where(big, np.ldexp(xj, -np.where(big, E, 0)), xj)
        F = np.where(big[:, None], table[np.clip(E - 3, 0, table.shape[0] - 1)], scaled)
        c = _mul(_float_col(m, 1, dt), F)
        c = _add(c, _float_col(-four * np.rint(c[:, 0] / four), 1, dt))
        acc = _add(acc, c)
    one = dt.type(2.0**S)
    k = np.rint(acc[:, 0] / one)
    acc = _add(acc, _float_col(-k * one, 1, dt))
    k2 = np.rint(acc[:, 0] / one)  # a tie broken the other way by the tail: at most one more
    acc = _add(acc, _float_col(-k2 * one, 1, dt))
    y = _scale(acc, -S)
    r = _width(_mul(y, _const("half_pi", n_rows, M, dt)), w)
    q = ((k + k2).astype(np.int64) % 4).astype(np.int32)
    return _renormalize(r, w), q


def _sincos_small(r):
    """(sin r, 1 - cos r) for |r| <= pi/4 (w terms): Taylor on r 2^-s, then s doublings."""
    n_rows, w = r.shape
    dt = r.dtype
    s, n = _sin_plan(w, format_of(dt))
    rows_s = _halvings(r, s)
    t = _scale(r, -rows_s)
    t2 = _mul(t, t)
    sn = _mul(t, _horner(C.taylor("sin", n, w, dt.name), t2))
    vc = _mul(t2, _horner(C.taylor("versin", n, w, dt.name), t2))
    one = _const_one(n_rows, w, dt)
    two = dt.type(2)
    for i in range(s):
        more = (i < rows_s)[:, None]
        sn, vc = (np.where(more, _mul(sn, _add(one, -vc)) * two, sn), np.where(more, _mul(sn, sn) * two, vc))
    return sn, vc


def _sincos_w(x):
    """(sin x, cos x) of finite x at w terms: no reduction for |x0| <= pi/4, else Payne–Hanek."""
    n_rows, w = x.shape
    dt = x.dtype
    near = np.abs(x[:, 0]) <= thresholds(dt)["quarter_pi"]
    r, q = x.copy(), np.zeros(n_rows, dtype=np.int32)
    if (~near).any():
        rr, qq = _reduce_half_pi(np.ascontiguousarray(x[~near]))
        r[~near], q[~near] = rr, qq
    sn, vc = _sincos_small(r)
    cs = _add(_const_one(n_rows, w, dt), -vc)
    qc = q[:, None]
    sin = np.where(qc == 0, sn, np.where(qc == 1, cs, np.where(qc == 2, -sn, -cs)))
    cos = np.where(qc == 0, cs, np.where(qc == 1, -sn, np.where(qc == 2, -cs, sn)))
    return sin, cos


def _tan_w(x):
    s, c = _sincos_w(x)
    return _div(s, c)


def _atan_unit(x):
    """atan(x) for |x| <= 1 (w terms): Newton on tan, y <- y + cos y (x cos y - sin y)."""
    n_rows, w = x.shape
    dt = x.dtype
    y = _float_col(_atan_start(x[:, 0]), 1, dt)
    for wi in _newton_widths(w):
        yi, xi = _width(y, wi), _width(x, wi)
        sn, vc = _sincos_small(yi)
        c = _add(_const_one(n_rows, wi, dt), -vc)
        y = _add(yi, _mul(c, _add(_mul(xi, c), -sn)))
    return y


def _atan_w(x):
    """atan of finite x at w terms (zeros keep their sign)."""
    n_rows, w = x.shape
    dt = x.dtype
    x0 = x[:, 0]
    small = np.abs(x0) <= 1
    a = _rows(small & (x0 != 0), _atan_unit, x)

    def outer(v):
        inv = _div(_const_one(v.shape[0], w, dt), v)
        hp = _const("half_pi", v.shape[0], w, dt) * np.sign(v[:, :1])
        return _add(hp, -_atan_unit(inv))

    b = _rows(~small, outer, x)
    out = np.where(small[:, None], a, b)
    out[x0 == 0] = x[x0 == 0]
    return out


def _lift(d):
    """k >= 0 per row with d 2^(2k) of order 1 (an exact scaling up): a small exact difference such as
    1 - x is lifted before it enters a product or a quotient, whose rounded result would otherwise
    keep only the bits above the underflow threshold (a relative loss of 2^(2k) near the floor)."""
    return np.maximum(-leading_exponent(d[:, 0]) // 2, 0).astype(np.int32)


def _asin_w(x):
    """asin of finite x with |x| < 1: sign(x) atan(|x| / sqrt((1 - |x|)(1 + |x|))) (odd bitwise),
    1 - |x| lifted by 2^(2k) (:func:`_lift`) and the quotient scaled back by 2^k."""
    one = _const_one(x.shape[0], x.shape[1], x.dtype)
    neg = x[:, :1] < 0
    ax = np.where(neg, -x, x)
    d = _add(one, -ax)
    k = _lift(d)
    z = _div(ax, _sqrt(_mul(_scale(d, 2 * k), _add(one, ax))))
    a = _atan_w(_scale(z, k))
    return np.where(neg, -a, a)


def _acos_w(x):
    """acos of finite x with -1 < x <= 1: 2 atan(sqrt((1 - x) / (1 + x))), 1 - x lifted by 2^(2k)
    (:func:`_lift`) and the square root scaled back by 2^-k."""
    one = _const_one(x.shape[0], x.shape[1], x.dtype)
    d = _add(one, -x)
    k = _lift(d)
    t = _scale(_sqrt(_div(_scale(d, 2 * k), _add(one, x))), -k)
    return _atan_w(t) * x.dtype.type(2)


def _atan2_w(y, x):
    """atan2 of finite y, x with y != 0 (the zeros are special values of :func:`atan2`)."""
    n_rows, w = x.shape
    dt = x.dtype
    y0, x0 = y[:, 0], x[:, 0]
    flat = np.abs(y0) <= np.abs(x0)

    def near_x_axis(yv, xv):
        a = _atan_w(_div(yv, xv))
        pi = _const("pi", yv.shape[0], w, dt) * np.where(np.signbit(yv[:, :1]), dt.type(-1), dt.type(1))
        left = xv[:, :1] < 0
        return np.where(left, _add(pi, a), a)

    def near_y_axis(yv, xv):
        hp = _const("half_pi", yv.shape[0], w, dt) * np.sign(yv[:, :1])
        return _add(hp, -_atan_w(_div(xv, yv)))

    a = _rows(flat, near_x_axis, y, x)
    b = _rows(~flat, near_y_axis, y, x)
    return np.where(flat[:, None], a, b)


# ----------------------------------------------------------------------------------------------
# hyperbolic functions


def _sinh_cosh_big(x, sign):
    """e^|x|/2 + sign e^-|x|/2 for finite x (w terms), from the exp reduction."""
    m, k = _exp_parts(np.where(x[:, :1] < 0, -x, x))
    inv = _div(_const_one(x.shape[0], x.shape[1], x.dtype), m)
    return _add(_scale(m, k - 1), _scale(inv, -k - 1) * x.dtype.type(sign))


def _sinh_w(x):
    w = x.shape[1]
    dt = x.dtype
    x0 = x[:, 0]
    small = np.abs(x0) <= 0.5
    limit = thresholds(dt)["hyp_limit"]

    def near(v):
        e = _expm1_small(v)
        one = _const_one(v.shape[0], w, dt)
        return _div(_mul(e, _add(e, one * dt.type(2))), _add(e, one)) * dt.type(0.5)

    a = _rows(small & (x0 != 0), near, x)
    mid = ~small & (np.abs(x0) <= limit)
    b = _rows(mid, lambda v: _sinh_cosh_big(v, -1) * np.sign(v[:, :1]), x)
    out = np.where(small[:, None], a, b)
    out[x0 == 0] = x[x0 == 0]
    big = np.abs(x0) > limit
    out[big, 0] = np.copysign(np.inf, x0[big])
    return out


def _cosh_w(x):
    x0 = x[:, 0]
    limit = thresholds(x.dtype)["hyp_limit"]
    out = _rows(np.abs(x0) <= limit, lambda v: _sinh_cosh_big(v, 1), x)
    out[np.abs(x0) > limit, 0] = np.inf
    return out


def _tanh_w(x):
    """tanh x = sign(x) (-e / (2 + e)), e = expm1(-2|x|); zeros keep their sign."""
    dt = x.dtype
    x0 = x[:, 0]
    ax = np.where(x[:, :1] < 0, -x, x)

    def body(v):
        e = _expm1_w(v * dt.type(-2))
        two = _const_one(v.shape[0], v.shape[1], dt) * dt.type(2)
        return -_div(e, _add(two, e))

    out = _rows(x0 != 0, body, ax) * np.where(x[:, :1] < 0, dt.type(-1), dt.type(1))
    out[x0 == 0] = x[x0 == 0]
    return out


# ----------------------------------------------------------------------------------------------
# power


def is_integer(y):
    """Rows whose (ulp-nonoverlapping) value is an integer, and those of odd integers."""
    finite = np.isfinite(y).all(axis=1)
    yy = np.where(finite[:, None], y, 0)
    integer = finite & (np.rint(yy) == yy).all(axis=1)
    odd = integer & ((np.fmod(yy, 2) != 0).sum(axis=1) % 2 == 1)
    return integer, odd


def _pow_w(x, y):
    """|x|^y for finite x != 0 and finite y (w terms): exp(y log|x|)."""
    ax = np.where(x[:, :1] < 0, -x, x)
    return _exp_w(_mul(y, _log_w(ax)))


# ----------------------------------------------------------------------------------------------
# the public twins: (count, R) in, (count, R) out; special values; rounding to R


def _finish(out_w, R, operands, leading, special, special_value):
    """Round the body's W terms to R; the non-finite rule (:func:`nonfinite_epilogue`: non-finite
    operands, overflow); then rows ``special`` (finite operands) get (special_value, 0, ...)."""
    with np.errstate(all="ignore"):
        out = _renormalize(out_w, R) if out_w.shape[0] else out_w[:, :R]
        out = nonfinite_epilogue(out, operands, leading).copy()
        out[special] = 0
        out[special, 0] = special_value[special]
        return out


def _unary(x, R, body, ieee, special_rows=None, special_value=None):
    """The frame of a unary function: finite rows that are not ``special_rows`` go through ``body``
    at W terms; the leading terms' IEEE result ``ieee(x0)`` is the value of the non-finite rule."""
    x = np.ascontiguousarray(x)
    dt = x.dtype
    W = working_terms(R)
    with np.errstate(all="ignore"):
        x0 = x[:, 0]
        leading = ieee(x0).astype(dt)
        finite = np.isfinite(x).all(axis=1)
        special = np.zeros(x.shape[0], dtype=bool) if special_rows is None else special_rows & finite
        value = leading if special_value is None else special_value
        out = _rows(finite & ~special, body, _width(x, W), w=W)
    return _finish(out, R, (x,), leading, special, value)


def exp(x, R):
    """exp(x) in R terms; exp(-inf) = 0, exp(inf) = inf, overflow inf, underflow 0 or subnormal."""
    return _unary(x, R, _exp_w, np.exp)


def expm1(x, R):
    """exp(x) - 1 in R terms, relatively accurate near 0; expm1(±0) = ±0."""
    return _unary(x, R, _expm1_w, np.expm1, x[:, 0] == 0)


def _log_domain(x):
    """Rows outside (0, inf) of a finite x: zero (-inf) and negative (NaN), as special values."""
    x0 = x[:, 0]
    value = np.where(x0 == 0, -np.inf, np.nan).astype(x.dtype)
    return x0 <= 0, value


def log(x, R):
    """Natural logarithm in R terms; log(±0) = -inf, log(x < 0) = NaN, log(inf) = inf."""
    rows, value = _log_domain(x)
    return _unary(x, R, _log_w, np.log, rows, value)


def log2(x, R):
    """Base-2 logarithm in R terms (exact at powers of two); special values as :func:`log`."""
    rows, value = _log_domain(x)
    return _unary(x, R, _log2_w, np.log2, rows, value)


def log10(x, R):
    """Base-10 logarithm in R terms; special values as :func:`log`."""
    rows, value = _log_domain(x)
    return _unary(x, R, _log10_w, np.log10, rows, value)


def log1p(x, R):
    """log(1 + x) in R terms, relatively accurate near 0; log1p(-1) = -inf, below -1 NaN."""
    x0 = x[:, 0]
    below = (x0 < -1) | ((x0 == -1) & (x.shape[1] > 1) & (x[:, min(1, x.shape[1] - 1)] < 0))
    at = (x0 == -1) & ~below & ((x[:, 1:] == 0).all(axis=1))
    value = np.where(at, -np.inf, np.where(below, np.nan, x0)).astype(x.dtype)
    return _unary(x, R, _log1p_w, np.log1p, at | below | (x0 == 0), value)


def _sin_w(x):
    return _sincos_w(x)[0]


def _cos_w(x):
    return _sincos_w(x)[1]


def sin(x, R):
    """sin(x) in R terms, any finite x (Payne–Hanek reduction); sin(±0) = ±0, sin(±inf) = NaN."""
    return _unary(x, R, _sin_w, np.sin, x[:, 0] == 0)


def cos(x, R):
    """cos(x) in R terms, any finite x; cos(±inf) = NaN."""
    return _unary(x, R, _cos_w, np.cos)


def tan(x, R):
    """tan(x) in R terms, any finite x; tan(±0) = ±0, tan(±inf) = NaN."""
    return _unary(x, R, _tan_w, np.tan, x[:, 0] == 0)


def _constant_rows(name, x, R, sign):
    return _const(name, x.shape[0], working_terms(R), x.dtype) * sign.astype(x.dtype)[:, None]


def atan(x, R):
    """atan(x) in R terms; atan(±inf) = ±pi/2 (to R terms), atan(±0) = ±0."""
    x = np.ascontiguousarray(x)
    out = _unary(x, R, _atan_w, np.arctan, x[:, 0] == 0)
    inf = np.isinf(x[:, 0])
    if inf.any():
        out[inf] = _renormalize(_constant_rows("half_pi", x[inf], R, np.sign(x[inf, 0])), R)
    return out


def _unit_domain(x):
    """(outside, at_one): rows with |x| > 1, and rows with |x| == 1 exactly (x finite)."""
    x0 = x[:, 0]
    tail = x[:, 1] if x.shape[1] > 1 else np.zeros_like(x0)
    a0 = np.abs(x0)
    outside = (a0 > 1) | ((a0 == 1) & (tail != 0) & (np.sign(tail) == np.sign(x0)))
    at_one = (a0 == 1) & (x[:, 1:] == 0).all(axis=1)
    return outside, at_one


def asin(x, R):
    """asin(x) in R terms; |x| > 1 gives NaN, asin(±1) = ±pi/2, asin(±0) = ±0."""
    x = np.ascontiguousarray(x)
    outside, at_one = _unit_domain(x)
    zero = x[:, 0] == 0
    value = np.where(outside, np.nan, x[:, 0]).astype(x.dtype)
    out = _unary(x, R, _asin_w, np.arcsin, outside | at_one | zero, value)
    if at_one.any():
        out[at_one] = _renormalize(_constant_rows("half_pi", x[at_one], R, np.sign(x[at_one, 0])), R)
    return out


def acos(x, R):
    """acos(x) in R terms; |x| > 1 gives NaN, acos(1) = 0, acos(-1) = pi."""
    x = np.ascontiguousarray(x)
    outside, at_one = _unit_domain(x)
    minus_one = at_one & (x[:, 0] < 0)
    value = np.where(outside, np.nan, 0).astype(x.dtype)
    out = _unary(x, R, _acos_w, np.arccos, outside | at_one, value)
    if minus_one.any():
        out[minus_one] = _renormalize(_constant_rows("pi", x[minus_one], R, np.ones(int(minus_one.sum()))), R)
    return out


def sinh(x, R):
    """sinh(x) in R terms; sinh(±0) = ±0, overflow ±inf."""
    return _unary(x, R, _sinh_w, np.sinh, x[:, 0] == 0)


def cosh(x, R):
    """cosh(x) in R terms; overflow inf."""
    return _unary(x, R, _cosh_w, np.cosh)


def tanh(x, R):
    """tanh(x) in R terms; tanh(±inf) = ±1, tanh(±0) = ±0."""
    return _unary(x, R, _tanh_w, np.tanh, x[:, 0] == 0)


_ATAN2_CONSTANTS = ("pi", "half_pi", "quarter_pi", "three_quarter_pi")


def atan2(y, x, R):
    """atan2(y, x) in R terms, IEEE 754 quadrants and special cases (atan2(±0, -0) = ±pi, atan2(±inf,
    -inf) = ±3pi/4, ...); the special results that are multiples of pi/4 are given to R terms."""
    y, x = np.ascontiguousarray(y), np.ascontiguousarray(x)
    dt = x.dtype
    W = working_terms(R)
    with np.errstate(all="ignore"):
        y0, x0 = y[:, 0], x[:, 0]
        leading = np.arctan2(y0, x0).astype(dt)
        finite = np.isfinite(y).all(axis=1) & np.isfinite(x).all(axis=1)
        special = ((y0 == 0) & finite) | np.isinf(y0) | np.isinf(x0)  # atan2(±0, x): ±0 or ±pi
        regular = finite & ~special
        out = _rows(regular, _atan2_w, _width(y, W), _width(x, W), w=W)
        out = _finish(out, R, (y, x), leading, special & ~np.isnan(y0) & ~np.isnan(x0), leading)
        # a result that underflowed to zero (x > 0, |y / x| below the range) is the zero of y's sign (IEEE)
        zero = regular & (out == 0).all(axis=1)
        out[zero, 0] = np.copysign(dt.type(0), y0[zero])
        for name in _ATAN2_CONSTANTS:
            rows = special & (np.abs(leading) == thresholds(dt)[name])
            if rows.any():
                out[rows] = _renormalize(_constant_rows(name, y[rows], R, np.sign(leading[rows])), R)
    return out


def pow(x, y, R):  # noqa: A001 - the elementary function's name
    """x ** y in R terms for an expansion exponent: exp(y log|x|) with the sign (-1)^y for x < 0 and an
    integer y, NaN for x < 0 and a non-integer y, and the special cases of IEEE 754 pow (pow(x, ±0) =
    1 and pow(1, y) = 1 even for NaN, pow(±0, y), pow(±inf, y), pow(x, ±inf))."""
    x, y = np.ascontiguousarray(x), np.ascontiguousarray(y)
    dt = x.dtype
    W = working_terms(R)
    with np.errstate(all="ignore"):
        x0, y0 = x[:, 0], y[:, 0]
        integer, odd = is_integer(y)
        one_x = (x0 == 1) & (x[:, 1:] == 0).all(axis=1)
        zero_y = y0 == 0
        # |x0|^y0 with the sign of x0 for an odd y (the parity of the whole expansion, not of y0); a
        # non-finite y0 takes x0 as it is (pow(-1, inf) = 1, pow(x, NaN) = NaN)
        base = np.where(~odd & ~np.isfinite(y0), x0, np.abs(x0))
        leading = np.power(base, y0).astype(dt)
        leading = np.where(odd & np.signbit(x0) & ~np.isnan(x0), -leading, leading)
        leading = np.where(one_x | zero_y, dt.type(1), leading)
        finite = np.isfinite(x).all(axis=1) & np.isfinite(y).all(axis=1)
        nonfinite_lead = ~np.isfinite(x0) | ~np.isfinite(y0)
        domain = finite & (x0 < 0) & ~integer
        special = (x0 == 0) | one_x | zero_y | domain | nonfinite_lead
        value = np.where(domain, np.nan, leading).astype(dt)
        regular = finite & ~special
        out = _rows(regular, _pow_w, _width(x, W), _width(y, W), w=W)
        out = np.where((regular & (x0 < 0) & odd)[:, None], -out, out)
        res = _finish(out, R, (x, y), leading, special & finite, value)
        underflow = regular & (x0 < 0) & odd & (res[:, 0] == 0)  # a negative result below the range: -0
        res[:, 0] = np.where(underflow, -np.abs(res[:, 0]), res[:, 0])
        keep = (one_x | zero_y) & ~finite  # pow(1, NaN) = pow(NaN, 0) = 1: not the non-finite rule
        res[keep] = 0
        res[keep, 0] = 1
        return res
