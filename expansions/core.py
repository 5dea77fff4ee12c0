"""The array type and the public operations.

An :class:`ExpansionArray` of logical shape S holds one C-contiguous array of terms of shape
S + (R,), float64 or float32, NumPy on the CPU (CuPy on the GPU): term 0 is the most significant.
Operators go through one dispatch helper, :func:`_binary`, which coerces the operands exactly,
broadcasts them, and calls the backend's kernel (the NumPy twins in :mod:`expansions.cpu.kernels`,
or the CUDA launchers in :mod:`expansions.cuda.launch`).

Non-finite values (design decision 6): a result whose leading term is not finite is
``(that IEEE value, 0, ..., 0)``; see :func:`expansions.reference.algorithms.nonfinite_epilogue`.
"""

from __future__ import annotations

import decimal
import math
import numbers
from fractions import Fraction

import mpmath
import numpy as np

from . import formats as F
from .cpu import kernels as _cpu
from .generate import random_terms
from .reference import fp as _fp
from .reference.exact import exact_rows, fraction_from_mpf, mpf_from_fraction, round_to_expansion

ADD_METHODS = ("safe", "fast")
MUL_METHODS = ("truncated",)
DEVICES = ("cpu", "cuda")

# R = 2: the double-word algorithms (expansions.dw) selectable by name, and the default of each
# operation: the fastest algorithm with a proven bound, as measured by `python -m bench.r2_defaults`
# (bench/results/r2_defaults_cpu-x86_64.md: on the CPU, Algorithm 6 adds 7x faster than the safe
# parallel addition with a 10x tighter bound, Algorithm 10 is the fastest product and Algorithm 17
# the fastest quotient, for float64 and float32 alike).  To be measured again on a GPU.
R2_METHODS = {
    "add": ("dw_add_accurate", "dw_add_sloppy", "qd_add_ieee", "qd_add_sloppy", "dg_add22"),
    "mul": ("dw_times_dw1", "dw_times_dw2", "dw_times_dw3", "dg_mul22", "ww_mul"),
    "div": ("dw_div_dw1", "dw_div_dw2", "dw_div_dw3", "ww_div"),
    "sqrt": ("dw_sqrt",),
}
R2_DEFAULTS = {"add": "dw_add_accurate", "mul": "dw_times_dw1", "div": "dw_div_dw2", "sqrt": "dw_sqrt"}


# ----------------------------------------------------------------------------------------------
# backends


def _xp_of(a):
    return _cpu.array_module(a)


def _device_of(terms) -> str:
    return "cuda" if _xp_of(terms) is not np else "cpu"


def _check_device(device) -> str:
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r}: use 'cpu' or 'cuda'")
    if device == "cuda":
        from .__main__ import gpu_environment

        env = gpu_environment()
        if not env.get("gpu_available"):
            raise RuntimeError(f"device='cuda' needs CuPy and a CUDA GPU: {env.get('gpu_reason')}")
    return device


def _backend(device: str):
    if device == "cpu":
        return _cpu
    from .cuda import launch

    return launch


# ----------------------------------------------------------------------------------------------
# the array type


class ExpansionArray:
    """An array of floating-point expansions (unevaluated sums of R floats, term 0 the largest).

    Build one with :func:`expansions.array`, :func:`expansions.from_terms` or the allocators.
    Attributes: ``terms`` (the raw (..., R) array, not a copy), ``nterms`` (R), ``dtype`` (of the
    terms), ``shape``, ``ndim``, ``size``, ``device``.
    """

    __slots__ = ("_terms",)
    __array_priority__ = 100

    def __init__(self, terms):
        self._terms = terms

    # -- attributes ------------------------------------------------------------------------
    @property
    def terms(self):
        return self._terms

    @property
    def nterms(self) -> int:
        return int(self._terms.shape[-1])

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self._terms.dtype)

    @property
    def format(self) -> F.Format:
        return F.format_of(self.dtype)

    @property
    def shape(self) -> tuple:
        return tuple(self._terms.shape[:-1])

    @property
    def ndim(self) -> int:
        return self._terms.ndim - 1

    @property
    def size(self) -> int:
        return int(math.prod(self.shape))

    @property
    def device(self) -> str:
        return _device_of(self._terms)

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d ExpansionArray")
        return self.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    # -- indexing ----------------------------------------------------------------------------
    @staticmethod
    def _term_key(key):
        key = key if isinstance(key, tuple) else (key,)
        if any(k is Ellipsis for k in key):
            return key + (slice(None),)
        return key + (Ellipsis, slice(None))

    def __getitem__(self, key):
        if isinstance(key, ExpansionArray):
            raise TypeError("an ExpansionArray cannot be used as an index")
        return ExpansionArray(self._terms[self._term_key(key)])

    def __setitem__(self, key, value):
        v = _coerce(value, self.nterms, self.dtype, self.device)
        self._terms[self._term_key(key)] = v._terms

    # -- conversions ---------------------------------------------------------------------------
    def to_fraction(self):
        """The exact value: a Fraction for a scalar, else a NumPy object array of Fractions.
        Non-finite values come out as Python floats (inf, -inf, nan)."""
        return self._map_exact(lambda q: q)

    def to_mpmath(self):
        """The exact value as mpmath mpf (exact, whatever mpmath's working precision): an mpf for a
        scalar, else a NumPy object array of mpf."""
        return self._map_exact(lambda q: mpf_from_fraction(q) if type(q) is Fraction else mpmath.mpf(q))

    def _map_exact(self, f):
        t = _to_numpy(self._terms)
        flat = t.reshape(-1, self.nterms)
        finite = np.isfinite(flat).all(axis=1)
        vals = np.empty(flat.shape[0], dtype=object)
        if finite.any():
            ex = exact_rows(flat[finite])
            idx = np.flatnonzero(finite)
            for k, q in zip(idx, ex):
                vals[k] = f(q)
        for k in np.flatnonzero(~finite):
            vals[k] = f(_nonfinite_value(flat[k]))
        if self.ndim == 0:
            return vals[0]
        return vals.reshape(self.shape)

    def __float__(self):
        if self.ndim != 0:
            raise TypeError("only a 0-d ExpansionArray converts to float")
        q = self.to_fraction()
        if type(q) is Fraction:
            return _fraction_to_float(q)
        return float(q)

    def to_float(self):
        """The value correctly rounded to float64, as a NumPy array of the logical shape."""
        q = self.to_fraction()
        if self.ndim == 0:
            return np.float64(_fraction_to_float(q) if type(q) is Fraction else q)
        return np.vectorize(lambda v: _fraction_to_float(v) if type(v) is Fraction else float(v),
                            otypes=[np.float64])(q)

    def to_device(self, device: str) -> ExpansionArray:
        """A copy on ``'cpu'`` (NumPy) or ``'cuda'`` (CuPy); the same array if already there."""
        _check_device(device)
        if device == self.device:
            return self
        if device == "cpu":
            return ExpansionArray(_to_numpy(self._terms))
        import cupy

        return ExpansionArray(cupy.asarray(self._terms))

    def effective_bits(self):
        """Bits each value carries: ``min(R(p-1)+1, bits from its leading term down to the smallest
        subnormal)`` (design decision 9); 0 for zeros and non-finite values."""
        t = _to_numpy(self._terms)[..., 0]
        fmt = self.format
        out = np.zeros(t.shape, dtype=np.int64)
        nz = np.isfinite(t) & (t != 0)
        _, ex = np.frexp(t[nz].astype(np.float64))
        out[nz] = [F.effective_bits(self.nterms, fmt, int(e) - 1) for e in ex]
        return out if self.ndim else int(out)

    def digits(self) -> int:
        """Decimal digits printed for this array: those its largest effective precision carries."""
        b = np.max(self.effective_bits()) if self.size else 0
        return max(1, int(b * math.log10(2)))

    def __str__(self):
        if self.ndim == 0:
            return _format_scalar(self)
        return np.array2string(
            np.asarray(self._str_items(), dtype=object), separator=", ", formatter={"all": str}
        )

    def _str_items(self):
        flat = self.reshape(-1)
        items = [_format_scalar(flat[i]) for i in range(flat.size)]
        return np.array(items, dtype=object).reshape(self.shape)

    def __repr__(self):
        body = f"'{_format_scalar(self)}'" if self.ndim == 0 else str(self)
        dev = "" if self.device == "cpu" else f", device='{self.device}'"
        return f"expansions.array({body}, terms={self.nterms}, dtype='{self.dtype.name}'{dev})"

    def reshape(self, *shape) -> ExpansionArray:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return ExpansionArray(self._terms.reshape(tuple(shape) + (self.nterms,)))

    def copy(self) -> ExpansionArray:
        return ExpansionArray(self._terms.copy())

    # -- arithmetic --------------------------------------------------------------------------
    def __add__(self, other):
        return _binary("add", self, other, "auto")

    def __radd__(self, other):
        return _binary("add", other, self, "auto")

    def __sub__(self, other):
        return _binary("sub", self, other, "auto")

    def __rsub__(self, other):
        return _binary("sub", other, self, "auto")

    def __mul__(self, other):
        return _binary("mul", self, other, "auto")

    def __rmul__(self, other):
        return _binary("mul", other, self, "auto")

    def __truediv__(self, other):
        return _binary("div", self, other, "auto")

    def __rtruediv__(self, other):
        return _binary("div", other, self, "auto")

    def __neg__(self):
        return negative(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return absolute(self)

    def _compare(self, other, op):
        return _compare(self, other, op)

    def __eq__(self, other):
        return _compare(self, other, "eq")

    def __ne__(self, other):
        return _compare(self, other, "ne")

    def __lt__(self, other):
        return _compare(self, other, "lt")

    def __le__(self, other):
        return _compare(self, other, "le")

    def __gt__(self, other):
        return _compare(self, other, "gt")

    def __ge__(self, other):
        return _compare(self, other, "ge")

    __hash__ = None

    def __bool__(self):
        if self.size != 1:
            raise ValueError("the truth value of an ExpansionArray with more than one element is ambiguous")
        return bool(_to_numpy(self._terms).reshape(-1, self.nterms)[0].any())


# ----------------------------------------------------------------------------------------------
# helpers: conversions


def _to_numpy(a):
    if _xp_of(a) is np:
        return np.asarray(a)
    return a.get()


def _fraction_to_float(q: Fraction) -> float:
    try:
        return float(q)  # correctly rounded
    except OverflowError:
        return math.inf if q > 0 else -math.inf


def _nonfinite_value(row):
    """The IEEE value a row with a non-finite term stands for (decision 6)."""
    lead = float(row[0])
    if not math.isfinite(lead):
        return lead
    return math.nan


def _format_scalar(x: ExpansionArray) -> str:
    q = x.to_fraction()
    if type(q) is not Fraction:
        return str(q)
    if q == 0:
        lead = float(_to_numpy(x.terms).reshape(-1)[0])
        return "-0.0" if math.copysign(1.0, lead) < 0 else "0.0"
    digits = x.digits()
    with mpmath.workprec(int(digits * 3.33) + 16):
        return mpmath.nstr(mpf_from_fraction(q), digits, strip_zeros=False)


def _exact_scalar(v, prec: int = 2200):
    """An exact rational (or a float special) for a Python/NumPy/mpmath scalar or a decimal string.

    mpmath constants (``mpmath.pi``) and other objects with an ``_mpf_`` are evaluated with ``prec``
    bits; mpf values are taken exactly."""
    if isinstance(v, Fraction):
        return v
    if isinstance(v, (bool, np.bool_)):
        return Fraction(int(v))
    if isinstance(v, numbers.Integral):
        return Fraction(int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v) if not isinstance(v, np.floating) else v
        if not np.isfinite(f) or f == 0:
            return float(f)
        return Fraction(f) if isinstance(f, float) else Fraction(*f.as_integer_ratio())
    if isinstance(v, decimal.Decimal):
        if not v.is_finite():
            return float(v)
        return Fraction(v)
    if isinstance(v, mpmath.mpf) or hasattr(v, "_mpf_"):
        if not isinstance(v, mpmath.mpf):
            with mpmath.workprec(prec):
                v = mpmath.mpf(v)
        if not mpmath.isfinite(v):
            return float(v)
        return fraction_from_mpf(v)
    if isinstance(v, str):
        s = v.strip().lower().replace("_", "")
        if s in ("inf", "+inf", "infinity", "+infinity"):
            return math.inf
        if s in ("-inf", "-infinity"):
            return -math.inf
        if s == "nan":
            return math.nan
        try:
            q = Fraction(s)
        except (ValueError, ZeroDivisionError) as exc:
            raise ValueError(f"cannot parse {v!r} as a decimal number") from exc
        if q == 0 and s.startswith("-"):
            return -0.0
        return q
    if isinstance(v, ExpansionArray):
        raise TypeError("nested ExpansionArray")
    raise TypeError(f"cannot convert {type(v).__name__} {v!r} to an expansion")


def _expansion_of_exact(q, R: int, fmt: F.Format):
    """Terms (floats) of the exact value q correctly rounded to R terms (greedy, then ulp-nonoverlapping)."""
    if type(q) is not Fraction:
        return [q] + [0.0] * (R - 1)
    if q == 0:
        return [0.0] * R
    return [_fp.to_float(t) for t in round_to_expansion(q, R, fmt)]


def _terms_from_floats(a: np.ndarray, R: int, dtype: np.dtype) -> np.ndarray:
    """Exact expansions of a float array: each float64/float32 value split greedily into R terms."""
    out = np.zeros(a.shape + (R,), dtype=dtype)
    if dtype == np.float64 or a.dtype == np.float32:
        out[..., 0] = a.astype(dtype)
        return out
    # float64 values into float32 terms: each term is RN of what remains (exact in float64)
    rest = a.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(R):
            t = rest.astype(np.float32)
            out[..., k] = t
            if k == 0:
                nonfinite = ~np.isfinite(t)
            rest = np.where(np.isfinite(t), rest - t.astype(np.float64), 0.0)
        out[nonfinite, 1:] = 0
    return out


def array(obj, terms: int = 2, dtype="float64", device: str = "cpu") -> ExpansionArray:
    """An ExpansionArray from numbers, decimal strings, mpmath numbers, Fractions, nested lists or
    float/int arrays (and from an ExpansionArray, re-rounded to ``terms`` and ``dtype``).

    Each value is correctly rounded to ``terms`` terms: the leading term is the float nearest to
    the value, each next term the float nearest to what remains, so the terms are ulp-nonoverlapping.
    Floats are represented exactly whenever ``terms`` suffice (a float64 needs 3 float32 terms).
    """
    R = F.check_terms(terms)
    dt = F.canonical_dtype(dtype)
    _check_device(device)
    fmt = F.format_of(dt)
    if isinstance(obj, ExpansionArray):
        if obj.nterms == R and obj.dtype == dt:
            return obj.to_device(device).copy()
        if obj.dtype == dt and R < obj.nterms:
            return renormalize(obj, terms=R).to_device(device)
        if obj.dtype == dt:
            t = _to_numpy(obj.terms)
            pad = np.zeros(t.shape[:-1] + (R - obj.nterms,), dtype=dt)
            return ExpansionArray(np.concatenate([t, pad], axis=-1)).to_device(device)
        obj = obj.to_fraction()
    if _xp_of(obj) is not np:
        obj = obj.get()
    if isinstance(obj, np.ndarray) and obj.dtype.kind == "f" and obj.dtype.itemsize <= 8:
        return ExpansionArray(_terms_from_floats(obj, R, dt)).to_device(device)
    a = np.asarray(obj, dtype=object) if not isinstance(obj, np.ndarray) else obj.astype(object)
    flat = a.reshape(-1)
    out = np.zeros((flat.size, R), dtype=dt)
    for i, v in enumerate(flat):
        out[i] = _expansion_of_exact(_exact_scalar(v, R * fmt.p + 64), R, fmt)
    return ExpansionArray(out.reshape(a.shape + (R,))).to_device(device)


def from_terms(terms) -> ExpansionArray:
    """Wrap a raw (..., R) array of float64 or float32 terms (NumPy or CuPy) as it is, without a copy
    (a C-contiguous copy is made only when the array is not C-contiguous).  The terms need not be
    ulp-nonoverlapping: :func:`renormalize` makes them so."""
    xp = _xp_of(terms)
    if xp is np:
        terms = np.asarray(terms)
    if terms.ndim < 1:
        raise ValueError("terms must have at least one axis: the last axis holds the R terms")
    F.check_terms(terms.shape[-1])
    F.canonical_dtype(terms.dtype)
    if not terms.flags.c_contiguous:
        terms = xp.ascontiguousarray(terms)
    return ExpansionArray(terms)


def _coerce(v, R: int, dt: np.dtype, device: str) -> ExpansionArray:
    if isinstance(v, ExpansionArray):
        if v.nterms != R:
            raise ValueError(f"mismatched number of terms: {v.nterms} and {R}")
        if v.dtype != dt:
            raise TypeError(f"mismatched term dtype: {v.dtype} and {dt}")
        if v.device != device:
            raise ValueError(f"operands on different devices: {v.device} and {device}")
        return v
    return array(v, terms=R, dtype=dt, device=device)


def _flat_pair(x: ExpansionArray, y: ExpansionArray):
    try:
        shape = np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        raise ValueError(f"shapes {x.shape} and {y.shape} do not broadcast") from None
    xp = _xp_of(x.terms)
    R = x.nterms
    xt = xp.ascontiguousarray(xp.broadcast_to(x.terms, shape + (R,))).reshape(-1, R)
    yt = xp.ascontiguousarray(xp.broadcast_to(y.terms, shape + (y.nterms,))).reshape(-1, y.nterms)
    return xt, yt, shape


def _operands(x, y):
    if isinstance(x, ExpansionArray):
        lead = x
    elif isinstance(y, ExpansionArray):
        lead = y
    else:
        raise TypeError("at least one operand must be an ExpansionArray")
    return (_coerce(x, lead.nterms, lead.dtype, lead.device),
            _coerce(y, lead.nterms, lead.dtype, lead.device))


def _method(op: str, method: str, R: int) -> str:
    """The algorithm a method name stands for at R terms ('auto': the default), or a ValueError."""
    kind = "add" if op == "sub" else op
    general = {"add": ADD_METHODS, "mul": MUL_METHODS, "div": (), "sqrt": ()}[kind]
    if method == "auto":
        if R == 2:
            return R2_DEFAULTS[kind]
        if not general:
            raise NotImplementedError(f"{kind} is implemented for R = 2 (double-word algorithms) only, "
                                      f"not yet for R = {R}")
        return general[0]
    if method in general:
        return method
    if method in R2_METHODS[kind]:
        if R != 2:
            raise ValueError(f"method {method!r} is a double-word algorithm: it needs R = 2, not {R}")
        return method
    names = ("auto",) + general + R2_METHODS[kind]
    what = {"add": "addition", "mul": "multiplication", "div": "division", "sqrt": "square root"}[kind]
    raise ValueError(f"unknown {what} method {method!r}: use one of {names}")


def _double_word(kind: str, name: str, xt, yt=None):
    """A double-word algorithm of expansions.dw on (N, 2) terms, then the library's non-finite rule
    (the leading-term IEEE result decides; 0/0 and the square root of a negative number are NaN)."""
    from .cpu.kernels import nonfinite_epilogue
    from .dw import cpu as D

    xp = _xp_of(xt)
    operands = (xt,) if kind == "sqrt" else (xt, yt)
    if xp is np:
        zh, zl = getattr(D, name)(*[a[:, k] for a in operands for k in (0, 1)])
        z = np.stack([zh, zl], axis=1)
    else:  # the kernels of expansions/cuda/dw.cuh, one thread per number
        from .cuda import dw_kernels

        z = dw_kernels.run(name, *operands)
    if kind == "sqrt":
        leading = xp.sqrt(xt[:, 0])
    else:
        x0, y0 = xt[:, 0], yt[:, 0]
        leading = {"add": x0 + y0, "mul": x0 * y0, "div": x0 / y0}[kind]
    out = nonfinite_epilogue(z, operands, leading)
    invalid = xp.isnan(leading)[:, None] & xp.asarray([True, False])
    return xp.where(invalid, xp.asarray(xp.nan, dtype=out.dtype), xp.where(xp.isnan(leading)[:, None], 0, out))


def _binary(op: str, x, y, method: str, renorm: bool = True) -> ExpansionArray:
    """The one dispatch helper of the arithmetic: coerce exactly, broadcast, run the kernel."""
    x, y = _operands(x, y)
    R = x.nterms
    alg = _method(op, method, R)
    be = _backend(x.device)
    xt, yt, shape = _flat_pair(x, y)
    with np.errstate(all="ignore"):
        if alg in ADD_METHODS + MUL_METHODS:
            fn = {"add": {"safe": be.add_safe, "fast": be.add_fast},
                  "sub": {"safe": be.sub_safe, "fast": be.sub_fast},
                  "mul": {"truncated": be.mul_truncated}}[op][alg]
            out = fn(xt, yt, R)
        else:
            kind = "add" if op == "sub" else op
            out = _double_word(kind, alg, xt, -yt if op == "sub" else yt)
        if renorm:
            out = be.renormalize(out, R)
    return ExpansionArray(out.reshape(shape + (R,)))


# ----------------------------------------------------------------------------------------------
# public operations


def add(x, y, method: str = "auto", renormalize: bool = True) -> ExpansionArray:
    """x + y with R terms.

    ``method``: ``'safe'`` is Algorithm 1 (proven bound, :func:`expansions.bounds.add_safe`);
    ``'fast'`` is Fig. 5 (no bound under cancellation); at R = 2 also the double-word algorithms
    ``'dw_add_accurate'`` (JMP 2017 Algorithm 6, bound 3u^2 + 13u^3), ``'dw_add_sloppy'``
    (Algorithm 5, no bound), ``'qd_add_ieee'``, ``'qd_add_sloppy'``, ``'dg_add22'``.  ``'auto'`` (the
    default, and what ``+`` does) is ``'safe'``, and ``'dw_add_accurate'`` at R = 2 (the fastest with a
    proven bound, see ``R2_DEFAULTS``).  With ``renormalize=True`` (the default) the result is
    renormalized, which is error-free and makes it ulp-nonoverlapping; ``False`` returns the
    algorithm's raw output."""
    return _binary("add", x, y, method, renormalize)


def sub(x, y, method: str = "auto", renormalize: bool = True) -> ExpansionArray:
    """x - y, as ``add(x, -y)``; same methods and options as :func:`add`."""
    return _binary("sub", x, y, method, renormalize)


def mul(x, y, method: str = "auto", renormalize: bool = True) -> ExpansionArray:
    """x * y with R terms.  ``'truncated'``: the truncated parallel multiplication (Algorithm 2;
    proven bound :func:`expansions.bounds.mul_truncated`); at R = 2 also ``'dw_times_dw1'``,
    ``'dw_times_dw2'``, ``'dw_times_dw3'`` (JMP 2017 Algorithms 10-12, bounds 7u^2, 6u^2, 5u^2),
    ``'dg_mul22'``, ``'ww_mul'``.  ``'auto'`` is ``'truncated'``, and ``'dw_times_dw1'`` at R = 2.
    ``renormalize`` as in :func:`add` (the raw output of Algorithm 2 may be unordered under
    cancellation, as the paper notes)."""
    return _binary("mul", x, y, method, renormalize)


def div(x, y, method: str = "auto", renormalize: bool = True) -> ExpansionArray:
    """x / y, for R = 2 (double-word): ``'dw_div_dw1'``, ``'dw_div_dw2'``, ``'dw_div_dw3'`` (JMP 2017
    Algorithms 16-18, bounds 15u^2 + 56u^3, the same, 9.8u^2), ``'ww_div'``; ``'auto'`` is
    ``'dw_div_dw2'``.  Division by zero gives ±inf, 0/0 NaN.  Other R: NotImplementedError."""
    return _binary("div", x, y, method, renormalize)


def sqrt(x: ExpansionArray, method: str = "auto") -> ExpansionArray:
    """The square root, for R = 2 (double-word): ``'dw_sqrt'`` (Lefèvre, Louvet, Muller, Picot,
    Rideau 2023, Algorithm 8, bound 25/8 u^2).  Negative input: NaN.  Other R: NotImplementedError."""
    if not isinstance(x, ExpansionArray):
        raise TypeError("sqrt expects an ExpansionArray")
    alg = _method("sqrt", method, x.nterms)
    with np.errstate(all="ignore"):
        out = _double_word("sqrt", alg, x.terms.reshape(-1, 2))
    return ExpansionArray(out.reshape(x.terms.shape))


def negative(x: ExpansionArray) -> ExpansionArray:
    """-x (exact: every term negated)."""
    return ExpansionArray(_backend(x.device).negate(x.terms.reshape(-1, x.nterms)).reshape(x.terms.shape))


def renormalize(x: ExpansionArray, terms: int | None = None) -> ExpansionArray:
    """x as an ulp-nonoverlapping expansion of ``terms`` terms (default: x's own R), from any terms.

    Error-free when ``terms >= x.nterms``; with fewer terms, the least significant part is dropped.
    """
    if not isinstance(x, ExpansionArray):
        raise TypeError("renormalize expects an ExpansionArray (use from_terms for a raw array)")
    R = x.nterms if terms is None else F.check_terms(terms)
    be = _backend(x.device)
    with np.errstate(all="ignore"):
        out = be.renormalize(x.terms.reshape(-1, x.nterms), R)
    return ExpansionArray(out.reshape(x.shape + (R,)))


def _sign(x: ExpansionArray):
    """-1, 0 or +1 (NaN for NaN) per element: the sign of the exactly renormalized value."""
    r = renormalize(x).terms[..., 0]
    xp = _xp_of(r)
    return xp.sign(r)


def absolute(x: ExpansionArray) -> ExpansionArray:
    """|x| (exact): x negated where its value is negative."""
    xp = _xp_of(x.terms)
    neg = _sign(x) < 0
    return ExpansionArray(xp.where(neg[..., None], -x.terms, x.terms))


def _compare(x, y, op):
    """Exact comparisons: the sign of x - y, computed error-free by renormalizing the 2R terms
    (x, -y) to 2R terms.  Where a leading term is not finite, the IEEE comparison of the leading
    terms decides (an expansion with a non-finite leading term is that IEEE value)."""
    try:
        x, y = _operands(x, y)
    except TypeError:
        return NotImplemented
    xt, yt, shape = _flat_pair(x, y)
    xp = _xp_of(xt)
    with np.errstate(all="ignore"):
        both = xp.concatenate([xt, -yt], axis=1)
        if xp is np:
            d = _cpu.renormalize(both, 2 * x.nterms)[:, 0]
        elif 2 * x.nterms <= F.MAX_TERMS:
            d = _backend("cuda").renormalize(both, 2 * x.nterms)[:, 0]
        else:  # more than 32 terms do not fit a warp: the twin on the host
            d = xp.asarray(_cpu.renormalize(both.get(), 2 * x.nterms)[:, 0])
        x0, y0 = xt[:, 0], yt[:, 0]
        special = ~(xp.isfinite(x0) & xp.isfinite(y0))
        res = {
            "eq": xp.where(special, x0 == y0, d == 0),
            "ne": xp.where(special, x0 != y0, d != 0),
            "lt": xp.where(special, x0 < y0, d < 0),
            "le": xp.where(special, x0 <= y0, d <= 0),
            "gt": xp.where(special, x0 > y0, d > 0),
            "ge": xp.where(special, x0 >= y0, d >= 0),
        }[op]
    nan_row = ~xp.isfinite(xt).all(axis=1) & xp.isfinite(x0) | ~xp.isfinite(yt).all(axis=1) & xp.isfinite(y0)
    res = xp.where(nan_row, op == "ne", res)
    res = res.reshape(shape)
    return res if shape else bool(res)


# ----------------------------------------------------------------------------------------------
# allocation


def _alloc(shape, R, dtype, device, fill):
    R = F.check_terms(R)
    dt = F.canonical_dtype(dtype)
    _check_device(device)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    t = np.zeros(shape + (R,), dtype=dt) if fill is None else fill(shape, R, dt)
    return ExpansionArray(t).to_device(device)


def zeros(shape, terms: int = 2, dtype="float64", device: str = "cpu") -> ExpansionArray:
    return _alloc(shape, terms, dtype, device, None)


def empty(shape, terms: int = 2, dtype="float64", device: str = "cpu") -> ExpansionArray:
    """Like :func:`zeros` (terms are initialised: an expansion of garbage would not be one)."""
    return _alloc(shape, terms, dtype, device, None)


def full(shape, value, terms: int = 2, dtype="float64", device: str = "cpu") -> ExpansionArray:
    v = array(value, terms=terms, dtype=dtype)
    if v.ndim != 0:
        raise ValueError("full() needs a scalar value")
    return _alloc(shape, terms, dtype, device,
                  lambda s, R, dt: np.ascontiguousarray(np.broadcast_to(v.terms, s + (R,))))


def ones(shape, terms: int = 2, dtype="float64", device: str = "cpu") -> ExpansionArray:
    return full(shape, 1, terms=terms, dtype=dtype, device=device)


def random(shape, terms: int = 2, dtype="float64", seed=None, device: str = "cpu",
           exponent_range=(-8, 8), max_gap: int = 4, **options) -> ExpansionArray:
    """Random ulp-nonoverlapping expansions (see :func:`expansions.generate.random_terms`): leading
    exponents uniform in ``exponent_range``, each next term ``p + g`` binades lower with ``g``
    uniform in ``0..max_gap``; options ``p_ulp``, ``p_zero``, ``same_sign``, ``min_exponent``."""
    R = F.check_terms(terms)
    dt = F.canonical_dtype(dtype)
    _check_device(device)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    t = random_terms(shape, R, dt.name, seed=seed, exponent_range=exponent_range, max_gap=max_gap, **options)
    return ExpansionArray(np.ascontiguousarray(t)).to_device(device)
