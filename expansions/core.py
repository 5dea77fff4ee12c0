"""The array type and the public operations.

An :class:`ExpansionArray` of logical shape S holds one C-contiguous array of terms of shape
S + (R,), float64 or float32, NumPy on the CPU (CuPy on the GPU): term 0 is the most significant.
Operators go through one dispatch helper, :func:`_binary`, which coerces the operands exactly,
broadcasts them, and calls the backend's kernel (the NumPy twins in :mod:`expansions.cpu.kernels`,
or the CUDA launchers in :mod:`expansions.cuda.launch`).

Non-finite values (design decision 6): a result whose leading term is not finite is
``(that IEEE value, 0, ..., 0)``; see :func:`expansions.reference.algorithms.nonfinite_epilogue`.

Mixed operands (operators, ufuncs, comparisons, dot/matmul, ``x[i] = v``) are promoted EXACTLY:
Python ints and floats, NumPy scalars and arrays (float, integer, bool), CuPy arrays (cuda arrays
only), Fractions, Decimals, mpmath mpf.  A value that R terms of the dtype cannot hold exactly is
a ValueError that suggests ``expansions.array(value, terms=..., dtype=...)``, which rounds.  Decimal
strings and mpmath constants (``mpmath.pi``) are not binary numbers: they are correctly rounded to
R terms, as by ``expansions.array``.  No silent device transfers: a NumPy array with a cuda
expansion, or a CuPy array with a cpu one, is a ValueError.

NumPy protocols: ``__array_ufunc__`` (add, subtract, multiply, true_divide, negative, positive,
absolute, sqrt, matmul, the comparisons, add.reduce), ``__array_function__`` (sum, dot, shape,
ndim, size), DLPack and the CUDA array interface on the terms array; ``np.asarray(x)`` is a
TypeError (use ``x.terms`` or ``x.to_float()``).

Printing: ``str`` shows ``x.digits()`` significant digits (``floor(effective_bits * log10 2)``),
``format`` follows Python's float format specs; both round the exact value (converted to an exact
Decimal) half to even.
"""

from __future__ import annotations

import builtins
import decimal
import math
import numbers
import re
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
DIV_METHODS = ("newton",)
SQRT_METHODS = ("newton",)
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
        """Significant decimal digits printed by ``str`` (and by ``format`` without a precision):
        ``max(1, floor(b log10(2)))`` where b is the largest :meth:`effective_bits` of the array.

        The digit rule: a decimal unit in the last place at that many digits is at least 5 times the
        expansion's own binary resolution, so every printed digit is carried by the terms; the digits
        are the exact value correctly rounded (half to even).  They are not enough to read the same
        terms back: ``format(x, f".{x.digits() + 1}e")`` shows more, ``x.to_decimal()`` all of them."""
        b = np.max(self.effective_bits()) if self.size else 0
        return max(1, int(b * math.log10(2)))

    def to_decimal(self):
        """The exact value as a :class:`decimal.Decimal` (a binary fraction has a finite decimal
        expansion, taken in full): a Decimal for a scalar, else a NumPy object array of Decimals.
        Signed zeros keep their sign; non-finite values are Decimal('Infinity'), ..., Decimal('NaN')."""
        q = self._map_exact(lambda v: _fraction_to_decimal(v) if type(v) is Fraction else decimal.Decimal(v))
        neg_zero = np.signbit(_to_numpy(self._terms)[..., 0])
        if self.ndim == 0:
            return decimal.Decimal("-0") if neg_zero and q.is_zero() else q
        for i in zip(*np.nonzero(neg_zero)):
            if q[i].is_zero():
                q[i] = decimal.Decimal("-0")
        return q

    def __str__(self):
        if self.ndim == 0:
            return _format_scalar(self)
        return np.array2string(
            np.asarray(self._str_items(), dtype=object), separator=", ", formatter={"all": str}
        )

    def __format__(self, spec: str) -> str:
        """Python's format-spec mini-language for floats (``[[fill]align][sign][z][#][0][width]
        [grouping][.precision][type]``, types e E f F g G %, and none) on the exact value, correctly
        rounded (half to even) from the exact decimal expansion of the terms.  Without a precision
        the digits the expansion carries (:meth:`digits`) are used: ``e`` shows ``digits()``
        significant digits, ``f``/``%`` as many fraction digits as make ``digits()`` significant ones,
        ``g`` ``digits()`` significant digits; with no type, the layout of ``str``.  Exponents have at
        least two digits, as for floats.  Non-finite values format as the float inf/-inf/nan do.
        Arrays with ndim > 0 accept only the empty spec (their ``str``)."""
        if spec == "":
            return str(self)
        if self.ndim != 0:
            raise TypeError("unsupported format string passed to ExpansionArray.__format__ (arrays accept "
                            "only ''; format the elements)")
        return _format_spec(self, spec)

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

    # -- arithmetic ------------------------------------------------------------------------
    # Operands that are not ExpansionArrays are promoted exactly (see _promote); an operand of an
    # unknown type makes the operator return NotImplemented (so Python raises its usual TypeError).
    def __add__(self, other):
        return _operator(_binary, "add", self, other, "auto")

    def __radd__(self, other):
        return _operator(_binary, "add", other, self, "auto")

    def __sub__(self, other):
        return _operator(_binary, "sub", self, other, "auto")

    def __rsub__(self, other):
        return _operator(_binary, "sub", other, self, "auto")

    def __mul__(self, other):
        return _operator(_binary, "mul", self, other, "auto")

    def __rmul__(self, other):
        return _operator(_binary, "mul", other, self, "auto")

    def __truediv__(self, other):
        return _operator(div, self, other)

    def __rtruediv__(self, other):
        return _operator(div, other, self)

    def __matmul__(self, other):
        return _operator(matmul, self, other)

    def __rmatmul__(self, other):
        return _operator(matmul, other, self)

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

    # -- reductions (expansions.reduce) -------------------------------------------------------
    def sum(self, axis=None, dtype=None, out=None, keepdims=False):
        """The sum over ``axis`` (None: all axes; an int or a tuple of ints) as an ExpansionArray of the
        same R and dtype, computed by :func:`expansions.reduce.sum`.  ``dtype`` must be None (or the
        term dtype): an expansion sum has no other result type.  ``out``: an ExpansionArray of the
        result's shape, R, dtype and device, whose terms are overwritten (and which is returned)."""
        if dtype is not None and np.dtype(dtype) != self.dtype:
            raise TypeError(f"ExpansionArray.sum: dtype={dtype!r} is not supported (the result has the "
                            f"operand's {self.nterms} {self.dtype} terms)")
        r = _reduce_module().sum(self, axis=axis, keepdims=keepdims)
        return r if out is None else _write_out(out, r, "sum")

    def dot(self, other, out=None):
        """``expansions.dot(self, other)`` (see :func:`dot`); ``out`` as in :meth:`sum`."""
        r = dot(self, other)
        return r if out is None else _write_out(out, r, "dot")

    # -- the NumPy protocols ------------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        raise TypeError(
            "an ExpansionArray does not convert implicitly to a NumPy array (that would drop all but the "
            "leading term, or mix the terms into the values): use x.terms for the (..., R) array of terms "
            "(no copy) or x.to_float() for the values correctly rounded to float64")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        impl = _ARRAY_FUNCTIONS.get(func)
        if impl is None:
            return NotImplemented
        return impl(*args, **kwargs)

    def __cupy_override_elementwise_kernel__(self, ufunc, *args, **kwargs):
        """CuPy's ufuncs (``cupy.add(a, x)``, and ``cupy_array + x``) hand over to the NumPy protocol."""
        name = getattr(ufunc, "name", "")
        np_ufunc = getattr(np, name[5:] if name.startswith("cupy_") else name, None)
        r = NotImplemented
        if isinstance(np_ufunc, np.ufunc):
            r = _array_ufunc(np_ufunc, "__call__", args, kwargs)
        if r is NotImplemented:
            raise TypeError(f"{name} is not supported with ExpansionArray operands")
        return r

    # -- DLPack and the CUDA array interface: the terms array, shared --------------------------
    def __dlpack__(self, **kwargs):
        """The DLPack capsule of the (..., R) terms array (no copy): ``np.from_dlpack(x)`` (cpu) or
        ``cupy.from_dlpack(x)`` (cuda) give the terms; :func:`expansions.from_dlpack` wraps them back."""
        return self._terms.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._terms.__dlpack_device__()

    @property
    def __cuda_array_interface__(self):
        """The CUDA array interface of the terms array (cuda arrays only; absent on cpu arrays)."""
        if self.device != "cuda":
            raise AttributeError("a cpu ExpansionArray has no __cuda_array_interface__")
        return self._terms.__cuda_array_interface__

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


def _fraction_to_decimal(q: Fraction) -> decimal.Decimal:
    """A dyadic rational as an exact Decimal: n / 2**k = n * 5**k / 10**k (string construction is exact
    whatever the context)."""
    n, d = q.numerator, q.denominator
    k = d.bit_length() - 1
    if d != 1 << k:
        raise ValueError("only dyadic rationals have a finite decimal expansion")
    return decimal.Decimal(f"{n * 5 ** k}E-{k}")


def _context(prec: int) -> decimal.Context:
    return decimal.Context(prec=max(1, prec), rounding=decimal.ROUND_HALF_EVEN, Emax=decimal.MAX_EMAX,
                           Emin=decimal.MIN_EMIN, traps=[decimal.InvalidOperation])


def _round_sig(a: decimal.Decimal, n: int):
    """|a| (finite) correctly rounded (half to even) to n significant digits: (digit string of length
    n, decimal exponent E of the first digit); zero gives ('00..0', 0)."""
    if a.is_zero():
        return "0" * n, 0
    r = _context(n).plus(a.copy_abs())
    return "".join(map(str, r.as_tuple().digits)).ljust(n, "0"), r.adjusted()


def _format_scalar(x: ExpansionArray) -> str:
    """str() of a scalar: ``x.digits()`` significant digits, correctly rounded from the exact value,
    fixed-point when the leading digit's exponent E satisfies min(-(d//3), -5) < E < d (the layout
    of mpmath.nstr), else d.ddd...e+E."""
    d = x.to_decimal()
    if not d.is_finite():
        return str(float(d))
    if d.is_zero():
        return "-0.0" if d.is_signed() else "0.0"
    n = x.digits()
    digits, E = _round_sig(d, n)
    sign = "-" if d.is_signed() else ""
    if min(-(n // 3), -5) < E < n:
        if E < 0:
            return sign + "0." + "0" * (-E - 1) + digits
        return sign + digits[:E + 1] + "." + digits[E + 1:]
    return sign + digits[0] + "." + digits[1:] + f"e{E:+}"


_SPEC = re.compile(r"(?:(?P<fill>.)?(?P<align>[<>=^]))?(?P<sign>[-+ ])?(?P<z>z)?(?P<alt>\#)?(?P<zero>0)?"
                   r"(?P<width>[0-9]+)?(?P<grouping>[,_])?(?:\.(?P<prec>[0-9]+))?(?P<type>.)?", re.DOTALL)


def _emit(mant: decimal.Decimal, k: int, suffix: str, f: dict) -> str:
    """Lay out a signed mantissa exactly representable with k fraction digits, followed by suffix
    (an exponent or '%'), with the spec's fill, align, sign, z, #, 0, width and grouping (Decimal's
    own layout of the mantissa, which follows the float rules; the suffix is kept out of padding)."""
    if f["alt"] and k == 0:
        suffix = "." + suffix  # '#': the point even without fraction digits (Decimal lacks '#')
    flags = (f["sign"] or "") + (f["z"] or "")
    tail = ("," if f["grouping"] else "") + f".{k}f"
    under = f["grouping"] == "_"
    width = int(f["width"]) if f["width"] else None
    fill, align = f["fill"], f["align"]
    if width is None or align in ("<", "^") or (under and fill == ","):
        body = format(mant, flags + tail)
        body = (body.replace(",", "_") if under else body) + suffix
        pad = 0 if width is None else width - len(body)
        if pad <= 0:
            return body
        ch = fill if fill is not None else ("0" if f["zero"] else " ")
        if align == "<":
            return body + ch * pad
        if align == "^":
            return ch * (pad // 2) + body + ch * (pad - pad // 2)
        if align == "=" or (align is None and f["zero"]):
            lead = body[0] if body[0] in "+- " else ""
            return lead + ch * pad + body[len(lead):]
        return ch * pad + body
    w = width - len(suffix)
    spec = (fill or "") + (align or "") + flags + ((f["zero"] or "") + str(w) if w > 0 else "") + tail
    body = format(mant, spec)
    return (body.replace(",", "_") if under else body) + suffix


def _format_spec(x: ExpansionArray, spec: str) -> str:
    m = _SPEC.fullmatch(spec)
    if m is None:
        raise ValueError(f"Invalid format specifier '{spec}' for object of type 'ExpansionArray'")
    f = m.groupdict()
    if f["fill"] == "0" and f["align"] == "=":  # the same as the '0' flag (which also groups the padding)
        f.update(fill=None, align=None, zero="0")
    t = f["type"]
    if t is not None and t not in "eEfFgG%":
        raise ValueError(f"Unknown format code '{t}' for object of type 'ExpansionArray'")
    d = x.to_decimal()
    if not d.is_finite():
        return format(float(d), spec)
    neg, a = d.is_signed(), d.copy_abs()
    n = x.digits()
    prec = int(f["prec"]) if f["prec"] is not None else None
    sign = "-" if neg else ""
    if t in ("f", "F", "%"):
        if t == "%":
            sg, dg, ex = a.as_tuple()
            a = decimal.Decimal((sg, dg, ex + 2))  # 100 |x|, exactly
        if prec is None:
            prec = 1 if a.is_zero() else max(0, n - 1 - _round_sig(a, n)[1])
        r = _context(max(a.adjusted(), 0) + prec + 2).quantize(a, decimal.Decimal((0, (1,), -prec)))
        return _emit(r.copy_negate() if neg else r, prec, "%" if t == "%" else "", f)
    if t in ("e", "E"):
        if prec is None:
            prec = 1 if a.is_zero() else n - 1
        digits, E = _round_sig(a, prec + 1)
        mant = decimal.Decimal(sign + digits[0] + "." + digits[1:])
        return _emit(mant, prec, f"{t}{E:+03d}", f)
    if t is None and prec is None:  # the layout of str(), with the spec's padding and sign
        body = _format_scalar(x).lstrip("-")
        mant, _, ex = body.partition("e")
        frac = mant.partition(".")[2]
        return _emit(decimal.Decimal(sign + mant), len(frac), f"e{ex}" if ex else "", f)
    P = max(1, prec if prec is not None else n)
    digits, E = _round_sig(a, P)
    if -4 <= E < (P if t is not None else P - 1):  # fixed-point (no type: as floats do, one digit less)
        ip, fp = (digits[:E + 1], digits[E + 1:]) if E >= 0 else ("0", "0" * (-E - 1) + digits)
        suffix = ""
    else:
        ip, fp = digits[0], digits[1:]
        suffix = ("E" if t == "G" else "e") + f"{E:+03d}"
    if not f["alt"]:
        fp = fp.rstrip("0")
        if t is None and not suffix and not fp:
            fp = "0"  # no type: a fixed-point number keeps one digit after the point
    return _emit(decimal.Decimal(sign + ip + ("." + fp if fp else "")), len(fp), suffix, f)


# Strings: decimal ("3.14159", "-1.5e-20", "1_000.5"), hexadecimal floats as float.hex writes them
# ("0x1.8p-3", "-0X1P+10", "0x.8", any number of hex digits, taken exactly), ratios ("1/3"), and
# "inf", "-inf", "nan".  Values whose magnitude lies beyond 10**±20000 (2**±20000 for hex) are
# replaced by a value just as far beyond every format's range (so that rounding gives the same result
# and exactness checks the same verdict) instead of building a gigantic integer.
_HEX = re.compile(r"([+-]?)0x([0-9a-f]*)(?:\.([0-9a-f]*))?(?:p([+-]?[0-9]+))?")
_FAR = 20000
_STRING_HELP = ("expected a decimal number such as '3.14159' or '-1.5e-20', a hexadecimal float such as "
                "'0x1.8p-3', a ratio such as '1/3', or 'inf', '-inf', 'nan'")


def _parse_hex(s: str, original):
    m = _HEX.fullmatch(s)
    if m is None or not (m.group(2) or m.group(3)):
        raise ValueError(f"cannot parse {original!r} as a hexadecimal float: {_STRING_HELP}")
    sign, ip, fp, ex = m.group(1), m.group(2), m.group(3) or "", m.group(4)
    e = int(ex) if ex is not None else 0
    mant = int(ip + fp or "0", 16)
    e -= 4 * len(fp)
    if mant == 0:
        return -0.0 if sign == "-" else Fraction(0)
    top = mant.bit_length() + e  # the value lies in [2**(top-1), 2**top)
    if top > _FAR:
        mant, e = 1, _FAR + 1
    elif top < -_FAR:
        mant, e = 1, -_FAR - 1
    q = Fraction(mant) * Fraction(2) ** e
    return -q if sign == "-" else q


def _parse_string(v: str):
    """The exact value of a numeric string (see the comment above), or a float special."""
    s = v.strip().lower().replace("_", "")
    if s in ("inf", "+inf", "infinity", "+infinity"):
        return math.inf
    if s in ("-inf", "-infinity"):
        return -math.inf
    if s in ("nan", "+nan", "-nan"):
        return math.nan
    if s.lstrip("+-").startswith("0x"):
        return _parse_hex(s, v)
    if "/" in s:
        try:
            q = Fraction(s)
        except (ValueError, ZeroDivisionError) as exc:
            raise ValueError(f"cannot parse {v!r} as a number: {_STRING_HELP}") from exc
        return -0.0 if q == 0 and s.startswith("-") else q
    try:
        d = decimal.Decimal(s)
    except decimal.InvalidOperation:
        d = None
    if d is None or not d.is_finite():
        raise ValueError(f"cannot parse {v!r} as a number: {_STRING_HELP}")
    if d.is_zero():
        return -0.0 if d.is_signed() else Fraction(0)
    if d.adjusted() > _FAR:
        d = decimal.Decimal((d.is_signed(), (1,), _FAR + 1))
    elif d.adjusted() < -_FAR:
        d = decimal.Decimal((d.is_signed(), (1,), -_FAR - 1))
    return Fraction(d)


def _exact_scalar(v, prec: int = 2200):
    """An exact rational (or a float special) for a Python/NumPy/mpmath scalar or a numeric string.

    mpmath constants (``mpmath.pi``) and other objects with an ``_mpf_`` are evaluated with ``prec``
    bits; mpf values are taken exactly.  Strings: see :func:`_parse_string` (decimal strings are
    exact rationals, hexadecimal floats exact dyadic values)."""
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
        if v.is_zero() and v.is_signed():
            return -0.0
        return Fraction(v)
    if isinstance(v, mpmath.mpf) or hasattr(v, "_mpf_"):
        if not isinstance(v, mpmath.mpf):
            with mpmath.workprec(prec):
                v = mpmath.mpf(v)
        if not mpmath.isfinite(v):
            return float(v)
        return fraction_from_mpf(v)
    if isinstance(v, str):
        return _parse_string(v)
    if isinstance(v, ExpansionArray):
        raise TypeError("nested ExpansionArray")
    raise _Unsupported(f"cannot convert {type(v).__name__} {v!r} to an expansion")


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


# ----------------------------------------------------------------------------------------------
# exact promotion of the other operand of an operation
#
# An operand that is not an ExpansionArray joins the expansion's format (R terms of its dtype) only
# when its value is representable there EXACTLY: its greedy correctly rounded R-term expansion (what
# expansions.array gives) must equal it.  Otherwise a ValueError says so and suggests rounding it
# explicitly with expansions.array.  Two kinds of value are not binary numbers and are rounded
# correctly to R terms instead, as expansions.array does: decimal strings ("0.1") and mpmath
# constants (mpmath.pi).  Hexadecimal strings are binary numbers and must be exact.
# Devices: a NumPy array (ndim >= 1) never joins a cuda expansion and a CuPy array never joins a cpu
# one (no silent transfers); scalars, 0-d NumPy arrays and Python lists are literals and go anywhere.


class _Unsupported(TypeError):
    """An operand of a type the expansions do not know (the operators return NotImplemented)."""


def _inexact(value, R: int, dt: np.dtype, extra: str = ""):
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return ValueError(
        f"{shown}{extra} cannot be represented exactly by {R} {dt.name} terms, and operands are never "
        f"rounded silently: round it explicitly with expansions.array(value, terms={R}, dtype='{dt.name}')"
        f" (or use more terms)")


def _rounding_allowed(v) -> bool:
    """Decimal strings and mpmath constants are rounded correctly to R terms (not binary numbers)."""
    if isinstance(v, str):
        return not v.strip().lower().lstrip("+-").startswith("0x")
    return hasattr(v, "_mpf_") and not isinstance(v, mpmath.mpf)


def _scalar_terms(v, R: int, dt: np.dtype) -> list:
    """The R terms of a scalar operand: exact, or rounded where allowed; else ValueError."""
    fmt = F.format_of(dt)
    q = _exact_scalar(v, R * fmt.p + 64)
    terms = _expansion_of_exact(q, R, fmt)
    if type(q) is Fraction and q != 0 and not _rounding_allowed(v):
        if not all(math.isfinite(t) for t in terms) or \
                builtins.sum((Fraction(t) for t in terms), Fraction(0)) != q:
            raise _inexact(v, R, dt)
    return terms


def _object_terms(a: np.ndarray, R: int, dt: np.dtype) -> np.ndarray:
    """Terms of a host array of arbitrary scalars, element by element (exact or allowed rounding)."""
    flat = a.reshape(-1)
    out = np.zeros((flat.size, R), dtype=dt)
    for i, v in enumerate(flat):
        if isinstance(v, (np.ndarray, list, tuple)):
            raise ValueError("ragged nested sequences cannot be operands of an ExpansionArray")
        out[i] = _scalar_terms(v.item() if isinstance(v, np.generic) and v.dtype.kind in "biu" else v, R, dt)
    return out.reshape(a.shape + (R,))


def _check_split(a, ok, R, dt):
    bad = ~ok
    if bool(bad.any()):
        first = _to_numpy(a[bad].reshape(-1)[:1])[0].item()
        n = int(bad.sum())
        raise _inexact(first, R, dt, f" (and {n - 1} more element(s) of the {a.dtype} operand)" if n > 1 else
                       f" (an element of the {a.dtype} operand)")


def _array_terms(a, R: int, dt: np.dtype):
    """Exact terms (shape a.shape + (R,), same array module as a) of a NumPy or CuPy array."""
    xp = _xp_of(a)
    kind, size = a.dtype.kind, a.dtype.itemsize
    out = xp.zeros(a.shape + (R,), dtype=dt)
    if kind == "b" or (kind == "f" and (size <= dt.itemsize or size <= 2)) or \
            (kind in "iu" and (size <= 2 or (size <= 4 and dt == np.float64))):
        out[..., 0] = a.astype(dt)  # exact: the values fit one term
        return out
    if kind == "f" and size == 8:  # float64 values into float32 terms: greedy split, remainder exact
        rest = a.astype(np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            for k in range(R):
                t = rest.astype(np.float32)
                out[..., k] = t
                if k == 0:
                    lead_ok = xp.isfinite(t) | ~xp.isfinite(a)
                rest = xp.where(xp.isfinite(t), rest - t.astype(np.float64), 0.0)
        _check_split(a, lead_ok & (rest == 0), R, dt)
        out[~xp.isfinite(out[..., 0]), 1:] = 0
        return out
    if kind in "iu" and size == 8 and dt == np.float64:
        # hi has at most 32 significant bits, lo < 2**32: both exact; their 2Sum is the value's
        # greedy 2-term expansion (s = RN(a), e = a - s)
        hi = (a >> 32) << 32
        hf, lf = hi.astype(np.float64), (a - hi).astype(np.float64)
        s = hf + lf
        bb = s - hf
        out[..., 0] = s
        out[..., 1] = (hf - (s - bb)) + (lf - bb)
        return out
    if kind in "iu":  # large integers into float32 terms: the few that need it one by one
        limit = 1 << F.format_of(dt).p
        small = (a < limit) & (a > -limit) if kind == "i" else (a < limit)
        out[..., 0] = xp.where(small, a, 0).astype(dt)
        if not bool(small.all()):
            big = _to_numpy(a[~small])
            tb = _object_terms(np.array([int(v) for v in big], dtype=object), R, dt)
            out[~small] = xp.asarray(tb)
        return out
    if kind == "c":
        raise _Unsupported("complex values have no expansion")
    if xp is not np or kind not in "fOUS":
        raise _Unsupported(f"cannot use an array of dtype {a.dtype} as an expansion operand")
    return _object_terms(a.astype(object), R, dt)


def _promote(v, R: int, dt: np.dtype, device: str) -> ExpansionArray:
    """The operand v as an ExpansionArray with R terms of dtype dt on device, exactly (see above)."""
    if isinstance(v, ExpansionArray):
        if v.nterms != R:
            raise ValueError(f"mismatched number of terms: {v.nterms} and {R}")
        if v.dtype != dt:
            raise TypeError(f"mismatched term dtype: {v.dtype} and {dt}")
        if v.device != device:
            raise ValueError(f"operands on different devices: {v.device} and {device}")
        return v
    xp = _xp_of(v)
    if xp is not np:  # a CuPy array
        if device != "cuda":
            raise ValueError("a CuPy array cannot be an operand of an ExpansionArray on the 'cpu' device (no "
                             "silent device transfers): move one of them explicitly (a.get(), or "
                             "x.to_device('cuda'))")
        return ExpansionArray(_array_terms(v, R, dt))
    if isinstance(v, np.ndarray):
        if v.ndim == 0:
            v = v[()]
        elif device != "cpu":
            raise ValueError("a NumPy array cannot be an operand of an ExpansionArray on the 'cuda' device (no "
                             "silent device transfers): move it explicitly (cupy.asarray(a), or "
                             "expansions.array(a, terms=..., dtype=..., device='cuda'))")
        else:
            return ExpansionArray(_array_terms(v, R, dt))
    if isinstance(v, (list, tuple)):
        t = _object_terms(np.array(v, dtype=object), R, dt)
    else:
        t = np.asarray(_scalar_terms(v, R, dt), dtype=dt)
    return ExpansionArray(t).to_device(device) if device != "cpu" else ExpansionArray(t)


def _coerce(v, R: int, dt: np.dtype, device: str) -> ExpansionArray:
    return _promote(v, R, dt, device)


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
    general = {"add": ADD_METHODS, "mul": MUL_METHODS, "div": DIV_METHODS, "sqrt": SQRT_METHODS}[kind]
    if method == "auto":
        if R == 2:
            return R2_DEFAULTS[kind]
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


def _newton(device: str, name: str):
    """The Newton operation ``name`` ('reciprocal', 'div', 'sqrt') of a backend: the twins of
    :mod:`expansions.cpu.newton` or the launchers of :mod:`expansions.cuda.launch`."""
    if device == "cpu":
        from .cpu import newton

        return getattr(newton, name)
    from .cuda import launch

    return getattr(launch, "newton_" + name)


def _renormalize_newton(device: str, out, R: int):
    """Renormalize the R-term output of a Newton kernel (error-free; the kernel's last step is
    renormalized before the scaling back, which can break the nonoverlap only below the underflow
    threshold), keeping the signed zeros of the kernel's zero results (sqrt(-0) = -0, 0/-y = -0)."""
    xp = _xp_of(out)
    r = _backend(device).renormalize(out, R)
    return xp.where((out[:, :1] == 0) & (r[:, :1] == 0), out, r)


def _one_term(v, e: ExpansionArray) -> bool:
    """Whether operand v (before promotion to e) is a float or an array of floats: not an
    ExpansionArray, and every promoted value has a single nonzero term."""
    if isinstance(v, ExpansionArray):
        return False
    return not bool((e.terms[..., 1:] != 0).any())


def _binary(op: str, x, y, method: str, renorm: bool = True) -> ExpansionArray:
    """The one dispatch helper of the arithmetic: coerce exactly, broadcast, run the kernel."""
    y_given = y
    x, y = _operands(x, y)
    one_term_y = op == "div" and _one_term(y_given, y)
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
        elif alg == "newton":  # division; a divisor of one term (a float) takes the cheaper kernel
            out = _newton(x.device, "div")(xt, yt[:, :1] if one_term_y else yt, R)
        else:
            kind = "add" if op == "sub" else op
            out = _double_word(kind, alg, xt, -yt if op == "sub" else yt)
        if renorm:
            out = _renormalize_newton(x.device, out, R) if alg == "newton" else be.renormalize(out, R)
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
    return _binary("div", x, y, method, renormalize)


def reciprocal(x: ExpansionArray, renormalize: bool = True) -> ExpansionArray:
    """1/x with R terms by Newton iterations (any R); proven bound :func:`expansions.bounds.reciprocal`
    relative to |1/x|, plus :func:`expansions.bounds.newton_underflow_term` absolute.  1/±0 is ±inf,
    1/±inf is ±0."""
    if not isinstance(x, ExpansionArray):
        raise TypeError("reciprocal expects an ExpansionArray")
    R = x.nterms
    with np.errstate(all="ignore"):
        out = _newton(x.device, "reciprocal")(x.terms.reshape(-1, R), R)
        if renormalize:
            out = _renormalize_newton(x.device, out, R)
    return ExpansionArray(out.reshape(x.terms.shape))


def sqrt(x: ExpansionArray, method: str = "auto") -> ExpansionArray:
    """The square root with R terms.

    ``'newton'`` (any R): x times 1/sqrt(x), the latter by Newton iterations on the truncated
    multiplication and the safe addition (:mod:`expansions.cpu.newton`); proven bound
    :func:`expansions.bounds.sqrt` relative to sqrt(x), plus ``newton_underflow_term`` absolute.  At
    R = 2 also ``'dw_sqrt'`` (Lefèvre, Louvet, Muller, Picot, Rideau 2023, Algorithm 8, bound
    25/8 u^2), the default there; ``'auto'`` is ``'newton'`` for R != 2.  sqrt(±0) = ±0, sqrt(inf) =
    inf, a negative input gives NaN."""
    if not isinstance(x, ExpansionArray):
        raise TypeError("sqrt expects an ExpansionArray")
    R = x.nterms
    alg = _method("sqrt", method, R)
    with np.errstate(all="ignore"):
        if alg == "newton":
            out = _renormalize_newton(x.device, _newton(x.device, "sqrt")(x.terms.reshape(-1, R), R), R)
        else:
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
    except _Unsupported:
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


def _operator(fn, *args):
    """An operator's result, or NotImplemented when an operand's type is unknown to the expansions."""
    try:
        return fn(*args)
    except _Unsupported:
        return NotImplemented


# ----------------------------------------------------------------------------------------------
# reductions and products: expansions.reduce (imported when first used)


def _reduce_module():
    try:
        from . import reduce as _reduce
    except ModuleNotFoundError as exc:
        if exc.name != f"{__package__}.reduce":
            raise
        raise NotImplementedError("sum, dot and matmul need the module expansions.reduce, which this "
                                  "installation lacks") from exc
    return _reduce


def _sum(x, axis=None, keepdims=False) -> ExpansionArray:
    """The sum of x over ``axis`` (None: every axis; an int or a tuple of ints), with x's R and dtype,
    as computed by :func:`expansions.reduce.sum`; ``keepdims`` as in NumPy."""
    if not isinstance(x, ExpansionArray):
        raise TypeError("expansions.sum expects an ExpansionArray (build one with expansions.array)")
    return _reduce_module().sum(x, axis=axis, keepdims=keepdims)


_sum.__name__ = _sum.__qualname__ = "sum"


def dot(x, y) -> ExpansionArray:
    """The dot product (NumPy's ``dot`` semantics) of x and y, computed by :func:`expansions.reduce.dot`.
    One of them must be an ExpansionArray; the other is promoted exactly (like the operators' operands)."""
    x, y = _operands(x, y)
    return _reduce_module().dot(x, y)


def matmul(x, y) -> ExpansionArray:
    """The matrix product (NumPy's ``matmul`` semantics, ``x @ y``) computed by
    :func:`expansions.reduce.matmul`; the operand that is not an ExpansionArray is promoted exactly."""
    x, y = _operands(x, y)
    return _reduce_module().matmul(x, y)


# ----------------------------------------------------------------------------------------------
# the NumPy protocols: __array_ufunc__ and __array_function__


def _write_out(out, r, what: str):
    """Store the result r in ``out`` (a single ExpansionArray of r's shape, R, dtype and device; or for
    comparisons a boolean NumPy/CuPy array of r's shape on r's device) and return ``out``."""
    if isinstance(out, tuple):
        if len(out) != 1:
            raise TypeError(f"{what}: out must be a single array")
        out = out[0]
    if isinstance(r, ExpansionArray):
        if not isinstance(out, ExpansionArray):
            raise TypeError(f"{what}: out must be an ExpansionArray (the result is one), not {type(out).__name__}")
        if (out.shape, out.nterms, out.dtype, out.device) != (r.shape, r.nterms, r.dtype, r.device):
            raise ValueError(
                f"{what}: out has shape {out.shape}, {out.nterms} {out.dtype} terms on {out.device}; the "
                f"result has shape {r.shape}, {r.nterms} {r.dtype} terms on {r.device}")
        out._terms[...] = r._terms
        return out
    shape = tuple(getattr(r, "shape", ()))
    same_device = not hasattr(r, "shape") or _xp_of(out) is _xp_of(r)
    if isinstance(out, ExpansionArray) or getattr(out, "dtype", None) != np.bool_ or \
            tuple(out.shape) != shape or not same_device:
        raise TypeError(f"{what}: out must be a boolean array of shape {shape} on the operands' device")
    out[...] = r
    return out


_NOVALUE = object()
# keyword arguments NumPy's ufuncs accept that change nothing at their default value
_UFUNC_DEFAULTS = {"where": True, "casting": "same_kind", "order": "K", "dtype": None, "subok": True,
                   "signature": None}
_UFUNC_BINARY = {"add": lambda a, b: _binary("add", a, b, "auto"),
                 "subtract": lambda a, b: _binary("sub", a, b, "auto"),
                 "multiply": lambda a, b: _binary("mul", a, b, "auto"),
                 "true_divide": lambda a, b: div(a, b),
                 "divide": lambda a, b: div(a, b),  # np.true_divide's name in NumPy 2
                 "matmul": lambda a, b: matmul(a, b)}
_UFUNC_COMPARE = {"equal": "eq", "not_equal": "ne", "less": "lt", "less_equal": "le", "greater": "gt",
                  "greater_equal": "ge"}


def _unary_input(x, name):
    if not isinstance(x, ExpansionArray):
        raise TypeError(f"np.{name} of a non-ExpansionArray into an ExpansionArray out is not supported")
    return x


_UFUNC_UNARY = {"negative": lambda x: negative(_unary_input(x, "negative")),
                "positive": lambda x: _unary_input(x, "positive").copy(),
                "absolute": lambda x: absolute(_unary_input(x, "absolute")),
                "sqrt": lambda x: sqrt(_unary_input(x, "sqrt"))}


def _reject_kwargs(what, kwargs, allowed=()):
    for k, v in kwargs.items():
        if k in allowed:
            continue
        if k in _UFUNC_DEFAULTS and (v is _UFUNC_DEFAULTS[k] or (isinstance(v, str) and v == _UFUNC_DEFAULTS[k])):
            continue
        raise TypeError(f"{what}: the keyword argument {k}={v!r} is not supported for ExpansionArray operands"
                        + (f" (supported: {', '.join(allowed)})" if allowed else ""))


def _array_ufunc(ufunc, method, inputs, kwargs):
    """NumPy's ufunc protocol.  Supported: add, subtract, multiply, true_divide, negative, positive,
    absolute, sqrt, matmul, the six comparisons (method ``__call__``) and ``add.reduce``; ``out=`` a
    single ExpansionArray of the result's shape/R/dtype/device (a boolean array for comparisons).
    Everything else returns NotImplemented, so NumPy raises its TypeError."""
    name = ufunc.__name__
    kwargs = dict(kwargs)
    out = kwargs.pop("out", None)
    what = f"np.{name}" if method == "__call__" else f"np.{name}.{method}"
    if method == "reduce" and name == "add":
        (x,) = inputs
        if not isinstance(x, ExpansionArray):
            return NotImplemented
        axis = kwargs.pop("axis", 0)
        keepdims = kwargs.pop("keepdims", False)
        if kwargs.pop("initial", np._NoValue) is not np._NoValue:
            raise TypeError(f"{what}: initial= is not supported for ExpansionArray operands")
        _reject_kwargs(what, kwargs, ("axis", "keepdims", "out"))
        return x.sum(axis=axis, out=out, keepdims=keepdims)
    if method != "__call__" or not (name in _UFUNC_BINARY or name in _UFUNC_UNARY or name in _UFUNC_COMPARE):
        return NotImplemented
    if name == "matmul":
        kwargs = {k: v for k, v in kwargs.items() if not (k in ("axes", "axis") and v is None)}
    _reject_kwargs(what, kwargs, ("out",))
    if out is not None and not any(isinstance(v, ExpansionArray) for v in inputs):
        lead = out[0] if isinstance(out, tuple) else out
        if isinstance(lead, ExpansionArray) and len(inputs) == 2:  # np.add(a, b, out=expansion)
            inputs = (_promote(inputs[0], lead.nterms, lead.dtype, lead.device), inputs[1])
    try:
        if name in _UFUNC_COMPARE:
            r = _compare(*inputs, _UFUNC_COMPARE[name])
        elif name in _UFUNC_UNARY:
            r = _UFUNC_UNARY[name](*inputs)
        else:
            r = _UFUNC_BINARY[name](*inputs)
    except _Unsupported:
        return NotImplemented
    if r is NotImplemented or out is None:
        return r
    return _write_out(out, r, what)


def _np_sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NOVALUE, where=_NOVALUE):
    if not isinstance(a, ExpansionArray):
        raise TypeError("np.sum: only the summand may be an ExpansionArray")
    if initial is not _NOVALUE and initial is not np._NoValue:
        raise TypeError("np.sum: initial= is not supported for ExpansionArray operands")
    if where is not _NOVALUE and where is not np._NoValue and where is not True:
        raise TypeError("np.sum: where= is not supported for ExpansionArray operands")
    if keepdims is np._NoValue:
        keepdims = False
    return a.sum(axis=axis, dtype=dtype, out=out, keepdims=keepdims)


def _np_dot(a, b, out=None):
    r = dot(a, b)
    return r if out is None else _write_out(out, r, "np.dot")


def _np_matmul(a, b, out=None, **kwargs):
    return _array_ufunc(np.matmul, "__call__", (a, b), dict(kwargs, out=out))


# np.matmul is a ufunc (it reaches __array_ufunc__); the entry here serves NumPy versions where it is not
_ARRAY_FUNCTIONS = {np.sum: _np_sum, np.dot: _np_dot, np.matmul: _np_matmul,
                    np.shape: lambda a: a.shape, np.ndim: lambda a: a.ndim,
                    np.size: lambda a, axis=None: a.size if axis is None else a.shape[axis]}


# ----------------------------------------------------------------------------------------------
# DLPack


def from_dlpack(obj) -> ExpansionArray:
    """Wrap a DLPack-capable (..., R) float64/float32 terms array (NumPy, CuPy, PyTorch, JAX, or an
    ExpansionArray) without a copy, like :func:`from_terms`: CPU memory becomes a NumPy array, CUDA
    memory a CuPy array."""
    if not hasattr(obj, "__dlpack_device__"):
        raise TypeError(f"{type(obj).__name__} does not support the DLPack protocol (__dlpack_device__)")
    kind = int(obj.__dlpack_device__()[0])
    if kind in (1, 3):  # kDLCPU, kDLCUDAHost
        terms = np.from_dlpack(obj)
    elif kind in (2, 13):  # kDLCUDA, kDLCUDAManaged
        import cupy

        terms = cupy.from_dlpack(obj)
    else:
        raise ValueError(f"DLPack device type {kind} is neither CPU nor CUDA")
    return from_terms(terms)


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
