"""The operations and their dispatch to a backend.

:func:`binary` is the one dispatch helper of the arithmetic: it promotes the operands exactly to one
format (:func:`operands`), broadcasts them, and calls the kernel :mod:`expansions.dispatch` chooses on
the operands' backend (:mod:`expansions.backends`).  The operators of
:class:`~expansions.arraytype.ExpansionArray` reach it through the array type's table
(``HANDLED["binary"]``), so ``x + y`` reaches the backend in three calls.

Formats: operands of different formats are promoted exactly to the wider one: R and S terms give
max(R, S) terms, float32 and float64 terms give float64 terms (each float32 term is exact in
float64; the terms are renormalized, error-free, to be ulp-nonoverlapping in float64).  ``terms=``
and ``dtype=`` on :func:`add`, :func:`sub`, :func:`mul`, :func:`div` set the format the operation
runs in instead; an operand of a wider format is then rounded as :func:`expansions.array` rounds it.

The public functions (:func:`add`, ..., :func:`sqrt`, :func:`negative`, :func:`absolute`,
:func:`renormalize`) are thin entry points over these helpers.
"""

from __future__ import annotations

import numpy as np

from . import dispatch
from . import formats as F
from .arraytype import HANDLED, ExpansionArray, implements, traced
from .backends import cpu as twins
from .backends import cpu_backend, for_terms, to_numpy, xp_of
from .promote import _EXACT_INT, _scalar_terms, operand_terms

__all__ = ["add", "sub", "mul", "div", "reciprocal", "sqrt", "negative", "absolute", "renormalize", "binary",
           "unary", "compare", "operands", "flat_pair", "broadcast_flat"]


# ----------------------------------------------------------------------------------------------
# the dispatch of the operations: exact promotion, broadcasting, the backend's kernel


def _wider(x: ExpansionArray, y: ExpansionArray):
    """The format (R, dtype) both x and y convert to exactly: the larger R, float64 if either is."""
    dt = np.dtype(np.float64) if np.float64 in (x.dtype, y.dtype) else np.dtype(np.float32)
    return max(x.nterms, y.nterms), dt


def _as_format(x: ExpansionArray, R: int, dt: np.dtype) -> ExpansionArray:
    """x with R terms of dtype dt, where that format is at least as wide as x's (exact): float32 terms
    become float64 ones (renormalized, error-free, to be ulp-nonoverlapping in float64), then zero
    terms are appended."""
    if (x.nterms, x.dtype) == (R, dt):
        return x
    xp = xp_of(x.terms)
    t = x.terms
    if x.dtype != dt:
        flat = t.reshape(-1, x.nterms).astype(dt)
        with np.errstate(all="ignore"):
            t = for_terms(flat).renormalize(flat, x.nterms).reshape(t.shape)
    if R > x.nterms:
        t = xp.concatenate([t, xp.zeros(t.shape[:-1] + (R - x.nterms,), dtype=dt)], axis=-1)
    return ExpansionArray(t)


def _same_format(x, y) -> bool:
    """Whether x and y are ExpansionArrays of one format (R, dtype) on one device."""
    if type(x) is not ExpansionArray or type(y) is not ExpansionArray:
        return False
    xt, yt = x.terms, y.terms
    return type(xt) is type(yt) and xt.shape[-1] == yt.shape[-1] and xt.dtype == yt.dtype


def operands(x, y, terms=None, dtype=None):
    """x and y as ExpansionArrays of one format on one device: the wider of the expansions' formats
    (see :func:`_wider`), or ``terms``/``dtype`` when given; an operand that is not an expansion is
    promoted exactly (:func:`expansions.promote.operand_terms`).  An expansion of a wider format than
    an explicit ``terms``/``dtype`` is rounded as :func:`expansions.array` rounds it."""
    if terms is None and dtype is None and _same_format(x, y):
        return x, y  # the common case: nothing to promote
    ex = [v for v in (x, y) if isinstance(v, ExpansionArray)]
    if not ex:
        raise TypeError("at least one operand must be an ExpansionArray")
    if len(ex) == 2 and ex[0].device != ex[1].device:
        raise ValueError(f"operands on different devices: {ex[0].device} and {ex[1].device}")
    R, dt = _wider(ex[0], ex[-1])
    R = R if terms is None else F.check_terms(terms)
    dt = dt if dtype is None else F.canonical_dtype(dtype)
    device = ex[0].device

    def convert(v):
        if not isinstance(v, ExpansionArray):
            return ExpansionArray(operand_terms(v, R, dt, device))
        if v.nterms <= R and (v.dtype == dt or dt == np.float64):
            return _as_format(v, R, dt)
        return HANDLED["array"](v, terms=R, dtype=dt.name, device=device)

    return convert(x), convert(y)


@implements("terms_in_format")
def terms_in_format(value, R: int, dt: np.dtype, device: str):
    """The terms of ``value`` in the format (R, dt) on ``device``, exactly (``x[key] = value``): an
    expansion of a wider format is a ValueError, any other value is promoted exactly."""
    if not isinstance(value, ExpansionArray):
        return operand_terms(value, R, dt, device)
    if value.nterms > R or (value.dtype == np.float64 and dt == np.float32):
        raise ValueError(f"cannot store {value.nterms} {value.dtype} terms into an array of {R} {dt} terms "
                         f"without rounding: round explicitly with expansions.array(value, terms={R}, "
                         f"dtype='{dt.name}')")
    if value.device != device:
        raise ValueError(f"operands on different devices: {value.device} and {device}")
    return _as_format(value, R, dt).terms


def flat_pair(x: ExpansionArray, y: ExpansionArray):
    """The broadcast terms of x and y as (count, R) C-contiguous arrays, and the broadcast shape."""
    xt, yt = x.terms, y.terms
    xp = xp_of(xt)
    if xt.shape == yt.shape:  # the common case: nothing to broadcast, and no copy when C-contiguous
        R = xt.shape[-1]
        return xp.ascontiguousarray(xt).reshape(-1, R), xp.ascontiguousarray(yt).reshape(-1, R), xt.shape[:-1]
    try:
        shape = np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        raise ValueError(f"shapes {x.shape} and {y.shape} do not broadcast") from None
    return broadcast_flat(x.terms, shape), broadcast_flat(y.terms, shape), shape


def broadcast_flat(t, shape):
    """The terms t (..., R) broadcast to ``shape`` as a (count, R) C-contiguous array.  Where t is
    broadcast along leading axes only (a 0-d or single expansion, a row against a matrix), its block
    is repeated whole (``tile``: several times faster than copying the strided broadcast view, which
    NumPy copies element by element)."""
    xp = xp_of(t)
    R = t.shape[-1]
    shape = tuple(shape)
    own = (1,) * (len(shape) - (t.ndim - 1)) + t.shape[:-1]  # t's logical shape, as broadcast aligns it
    for j in range(len(shape) + 1):  # own = (1, ..., 1) + shape[j:]: repeat the block of shape[j:]
        if all(d == 1 for d in own[:j]) and own[j:] == shape[j:]:
            block = xp.ascontiguousarray(t).reshape(-1, R)
            reps = int(np.prod(shape[:j], dtype=np.int64))
            return block if reps == 1 else xp.tile(block, (reps, 1))
    return xp.ascontiguousarray(xp.broadcast_to(t, shape + (R,))).reshape(-1, R)


_SAME: dict = {}  # (op, R, dtype char) -> (backend, run, then, direct): binary's common case, resolved once


def _common_case(op: str, R: int, be):
    """(run, then, direct) of :func:`binary`'s common case: ``dispatch.operation``'s pair, and where
    the backend has one (the engine at R = 2), its direct entry to the same renormalized double-word
    loop (``Backend.dw_direct``: the same bits, without the checks that cost a 0-d operation most of
    its time), else None."""
    alg = dispatch.method(op, "auto", R)
    run, then = dispatch.operation(op, alg, be)
    direct = None
    if be.dw_direct is not None and R == 2 and op in ("add", "sub", "mul", "div") and then is None and \
            alg in dispatch.R2_METHODS[op if op != "sub" else "add"]:
        direct = be.dw_direct(alg, negate_y=op == "sub")
    return run, then, direct


def _plain_scalar(v, like, op):
    """The terms (shaped as the float64 NumPy terms ``like``) of a Python float or an int of at most 53
    bits, as the promotion makes them (:func:`expansions.promote._scalar_terms`' one-term case), for
    :func:`binary`'s common case; None for anything else, and for a divisor at R >= 3 (the one-term
    Newton division)."""
    if type(like) is not np.ndarray or like.dtype != np.float64:
        return None
    if not (type(v) is float or (type(v) is int and -_EXACT_INT <= v <= _EXACT_INT)):
        return None
    if op == "div" and like.shape[-1] > 2:
        return None
    t = np.zeros(like.shape, np.float64)  # the promotion's one float64 term, the others zero (not a
    t[..., 0] = _scalar_terms(v, like.shape[-1], like.dtype)[0]  # broadcast assignment of R terms into
    return t  # every row, which doubled the time of x * 1.5 at R = 2: bench.workloads' mixed operands)


@implements("binary")
def binary(op: str, x, y, method: str = "auto", renormalize: bool = True, terms=None, dtype=None):
    """The one dispatch helper of the arithmetic ('add', 'sub', 'mul', 'div'): promote exactly,
    broadcast, run the kernel the method stands for, renormalize.  An operand of a type the expansions
    do not know raises :class:`expansions.convert.Unsupported` (a TypeError)."""
    if method == "auto" and renormalize is True and terms is None and dtype is None:  # the common cases first
        xt = yt = None
        if type(x) is ExpansionArray:
            xt = x._terms
            yt = y._terms if type(y) is ExpansionArray else _plain_scalar(y, xt, op)
        elif type(y) is ExpansionArray:
            yt = y._terms
            xt = _plain_scalar(x, yt, op)
        if type(xt) is np.ndarray and type(yt) is np.ndarray and xt.shape == yt.shape and xt.dtype is yt.dtype:
            # two NumPy operands of one shape and format, the default method: no promotion, no
            # broadcasting, the backend's functions resolved once per format (the same functions as
            # below, so the same bits; a 0-d operation's cost is mostly what this skips)
            shape = xt.shape
            R = shape[-1]
            be = cpu_backend()
            hit = _SAME.get((op, R, xt.dtype.char))
            if hit is None or hit[0] is not be:
                hit = _SAME[op, R, xt.dtype.char] = (be, *_common_case(op, R, be))
            _, run, then, direct = hit
            xt, yt = np.ascontiguousarray(xt).reshape(-1, R), np.ascontiguousarray(yt).reshape(-1, R)
            if direct is not None and xt.flags.writeable and yt.flags.writeable:
                return ExpansionArray(direct(xt, yt).reshape(shape))  # R = 2: the engine's loop, unchecked
            if be.silent:
                out = run(xt, yt, R) if then is None else then(run(xt, yt, R), R)
            else:
                with np.errstate(all="ignore"):
                    out = run(xt, yt, R) if then is None else then(run(xt, yt, R), R)
            return ExpansionArray(out.reshape(shape))
    if traced(x, y):  # inside expansions.fuse: record the operation
        return HANDLED["traced"](op, x, y, method=method, renormalize=renormalize, terms=terms, dtype=dtype)
    one_term_divisor = op == "div" and not isinstance(y, ExpansionArray)
    x, y = operands(x, y, terms, dtype)
    R = x.nterms
    alg = dispatch.method(op, method, R)
    be = for_terms(x.terms)
    xt, yt, shape = flat_pair(x, y)
    if one_term_divisor and alg == "newton" and not bool((yt[:, 1:] != 0).any()):
        yt = yt[:, :1]  # a divisor given as floats: the cheaper one-term kernel
    run, then = dispatch.operation(op, alg, be, renormalize)
    if be.silent:  # compiled: no NumPy warnings to silence (np.errstate costs a microsecond)
        out = run(xt, yt, R) if then is None else then(run(xt, yt, R), R)
    else:
        with np.errstate(all="ignore"):
            out = run(xt, yt, R) if then is None else then(run(xt, yt, R), R)
    return ExpansionArray(out.reshape(shape + (R,)))


def unary(op: str, x, method: str = "auto", renormalize: bool = True) -> ExpansionArray:
    """'sqrt' and 'reciprocal' of an ExpansionArray through the kernel :mod:`expansions.dispatch` picks."""
    if traced(x):
        return HANDLED["traced"](op, x, method=method, renormalize=renormalize)
    if not isinstance(x, ExpansionArray):
        raise TypeError(f"{op} expects an ExpansionArray")
    R = x.nterms
    alg = "reciprocal" if op == "reciprocal" else dispatch.method(op, method, R)
    be = for_terms(x.terms)
    run, then = dispatch.operation(op, alg, be, renormalize)
    xt = x.terms.reshape(-1, R)
    if be.silent:
        out = run(xt, R) if then is None else then(run(xt, R), R)
    else:
        with np.errstate(all="ignore"):
            out = run(xt, R) if then is None else then(run(xt, R), R)
    return ExpansionArray(out.reshape(x.terms.shape))


@implements(np.negative)
def negative(x: ExpansionArray) -> ExpansionArray:
    """-x (exact: every term negated)."""
    if traced(x):
        return HANDLED["traced"]("negative", x)
    return ExpansionArray(for_terms(x.terms).negate(x.terms.reshape(-1, x.nterms)).reshape(x.terms.shape))


def renormalize(x, terms: int | None = None) -> ExpansionArray:
    """x as an ulp-nonoverlapping expansion of ``terms`` terms (default: x's own R), from any terms.

    Error-free when ``terms >= x.nterms``; with fewer terms, the least significant part is dropped.
    """
    if not isinstance(x, ExpansionArray):
        raise TypeError("renormalize expects an ExpansionArray (use from_terms for a raw array)")
    R = x.nterms if terms is None else F.check_terms(terms)
    with np.errstate(all="ignore"):
        out = for_terms(x.terms).renormalize(x.terms.reshape(-1, x.nterms), R)
    return ExpansionArray(out.reshape(x.shape + (R,)))


def sign(x: ExpansionArray):
    """-1, 0 or +1 (NaN for NaN) per element, as a terms-dtype array: the sign of the exactly
    renormalized value; a row with a non-finite term has the sign of its value by the non-finite rule
    (its leading term, or NaN where that is finite)."""
    be = for_terms(x.terms)
    xp = xp_of(x.terms)
    with np.errstate(all="ignore"):
        r = be.renormalize(x.terms.reshape(-1, x.nterms), x.nterms)[:, 0].reshape(x.shape)
        lead = x.terms[..., 0]
        special = ~xp.isfinite(x.terms).all(axis=-1)
        r = xp.where(special, xp.where(xp.isfinite(lead), xp.asarray(np.nan, dtype=lead.dtype), lead), r)
    return xp.sign(r)


@implements(np.absolute)
def absolute(x: ExpansionArray) -> ExpansionArray:
    """|x| (exact): x negated where its value is negative or a zero with its sign bit set (|-0| = +0)."""
    if traced(x):
        return HANDLED["traced"]("absolute", x)
    xp = xp_of(x.terms)
    s = sign(x)
    negative = (s < 0) | (s == 0) & xp.signbit(x.terms[..., 0])
    return ExpansionArray(xp.where(negative[..., None], -x.terms, x.terms))


@implements("compare")
def compare(op: str, x, y):
    """Exact comparisons ('eq', 'ne', 'lt', 'le', 'gt', 'ge'): the sign of x - y, computed error-free by
    renormalizing the 2R terms (x, -y) to 2R terms.  Where a leading term is not finite, the IEEE
    comparison of the leading terms decides (an expansion with a non-finite leading term is that IEEE
    value); a row whose leading term is finite but a lower term is not counts as NaN (every comparison
    but 'ne' false).  An operand of a type the
    expansions do not know raises :class:`expansions.convert.Unsupported`."""
    if traced(x, y):
        return HANDLED["traced"](op, x, y)
    x, y = operands(x, y)
    xt, yt, shape = flat_pair(x, y)
    xp = xp_of(xt)
    R2 = 2 * x.nterms
    with np.errstate(all="ignore"):
        both = xp.concatenate([xt, -yt], axis=1)
        if R2 <= F.MAX_TERMS:
            d = for_terms(both).renormalize(both, R2)[:, 0]
        else:  # more than 32 terms: beyond the kernels and the engine; the NumPy twin takes any number
            d = xp.asarray(twins.renormalize(to_numpy(both), R2)[:, 0])
        x0, y0 = xt[:, 0], yt[:, 0]
        special = ~(xp.isfinite(x0) & xp.isfinite(y0))
        ieee = {"eq": x0 == y0, "ne": x0 != y0, "lt": x0 < y0, "le": x0 <= y0, "gt": x0 > y0, "ge": x0 >= y0}[op]
        exact = {"eq": d == 0, "ne": d != 0, "lt": d < 0, "le": d <= 0, "gt": d > 0, "ge": d >= 0}[op]
        res = xp.where(special, ieee, exact)
    nan_row = ~xp.isfinite(xt).all(axis=1) & xp.isfinite(x0) | ~xp.isfinite(yt).all(axis=1) & xp.isfinite(y0)
    res = xp.where(nan_row, op == "ne", res).reshape(shape)
    return res if shape else bool(res)


# ----------------------------------------------------------------------------------------------
# public operations


def add(x, y, method: str = "auto", renormalize: bool = True, terms=None, dtype=None) -> ExpansionArray:
    """x + y with R terms.

    ``method``: ``'safe'`` is Algorithm 1 (proven bound, :func:`expansions.bounds.add_safe`);
    ``'fast'`` is Fig. 5 (no bound under cancellation); at R = 2 also the double-word algorithms
    ``'dw_add_accurate'`` (JMP 2017 Algorithm 6, bound 3u^2 + 13u^3), ``'dw_add_sloppy'``
    (Algorithm 5, no bound), ``'qd_add_ieee'``, ``'qd_add_sloppy'``, ``'dg_add22'``.  ``'auto'`` (the
    default, and what ``+`` does) is ``'safe'``, and ``'dw_add_accurate'`` at R = 2 (the fastest with a
    proven bound, see ``R2_DEFAULTS``).  With ``renormalize=True`` (the default) the result is
    renormalized, which is error-free and makes it ulp-nonoverlapping; ``False`` returns the
    algorithm's raw output."""
    return binary("add", x, y, method, renormalize, terms, dtype)


def sub(x, y, method: str = "auto", renormalize: bool = True, terms=None, dtype=None) -> ExpansionArray:
    """x - y, as ``add(x, -y)``; same methods and options as :func:`add`."""
    return binary("sub", x, y, method, renormalize, terms, dtype)


def mul(x, y, method: str = "auto", renormalize: bool = True, terms=None, dtype=None) -> ExpansionArray:
    """x * y with R terms.  ``'truncated'``: the truncated parallel multiplication (Algorithm 2;
    proven bound :func:`expansions.bounds.mul_truncated`); at R = 2 also ``'dw_times_dw1'``,
    ``'dw_times_dw2'``, ``'dw_times_dw3'`` (JMP 2017 Algorithms 10-12, bounds 7u^2, 6u^2, 5u^2),
    ``'dg_mul22'``, ``'ww_mul'``.  ``'auto'`` is ``'truncated'``, and ``'dw_times_dw1'`` at R = 2.
    ``renormalize`` as in :func:`add` (the raw output of Algorithm 2 may be unordered under
    cancellation, as the paper notes)."""
    return binary("mul", x, y, method, renormalize, terms, dtype)


def div(x, y, method: str = "auto", renormalize: bool = True, terms=None, dtype=None) -> ExpansionArray:
    """x / y with R terms.

    ``'newton'`` (any R): x times the reciprocal of y, computed by Newton iterations on the truncated
    multiplication and the safe addition with the number of terms growing at each step
    (:mod:`expansions.cpu.newton`, ``expansions/cuda/newton.cuh``); proven bound
    :func:`expansions.bounds.div`, relative to |x/y|, plus :func:`expansions.bounds.newton_underflow_term`
    absolute.  A divisor given as a float or an array of floats (not an ExpansionArray) is divided by
    as one term, which is cheaper (``bounds.div(R, fmt, m=1)``).  At R = 2 also the double-word
    algorithms ``'dw_div_dw1'``, ``'dw_div_dw2'``, ``'dw_div_dw3'`` (JMP 2017 Algorithms 16-18, bounds
    15u^2 + 56u^3, the same, 9.8u^2) and ``'ww_div'``.  ``'auto'``: ``'newton'``, and ``'dw_div_dw2'``
    at R = 2.  Division by zero gives ±inf, 0/0 and inf/inf NaN, 0/y a signed zero."""
    return binary("div", x, y, method, renormalize, terms, dtype)


def reciprocal(x: ExpansionArray, renormalize: bool = True) -> ExpansionArray:
    """1/x with R terms by Newton iterations (any R); proven bound :func:`expansions.bounds.reciprocal`
    relative to |1/x|, plus :func:`expansions.bounds.newton_underflow_term` absolute.  1/±0 is ±inf,
    1/±inf is ±0."""
    return unary("reciprocal", x, renormalize=renormalize)


def sqrt(x: ExpansionArray, method: str = "auto") -> ExpansionArray:
    """The square root with R terms.

    ``'newton'`` (any R): x times 1/sqrt(x), the latter by Newton iterations on the truncated
    multiplication and the safe addition (:mod:`expansions.cpu.newton`); proven bound
    :func:`expansions.bounds.sqrt` relative to sqrt(x), plus ``newton_underflow_term`` absolute.  At
    R = 2 also ``'dw_sqrt'`` (Lefèvre, Louvet, Muller, Picot, Rideau 2023, Algorithm 8, bound
    25/8 u^2), the default there; ``'auto'`` is ``'newton'`` for R != 2.  sqrt(±0) = ±0, sqrt(inf) =
    inf, a negative input gives NaN."""
    return unary("sqrt", x, method)
