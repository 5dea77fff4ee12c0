"""The array type: :class:`ExpansionArray`, and the dispatch of its operators.

An ExpansionArray of logical shape S holds one C-contiguous array of terms of shape S + (R,),
float64 or float32, NumPy on the CPU (CuPy on the GPU): term 0 is the most significant.

The array type is thin: its operators and the methods that compute go to implementations that the
modules above it register in :data:`HANDLED` (:func:`implements`, NEP 18's pattern for
``__array_function__``): the arithmetic to :func:`expansions.operations.binary`, which promotes the
operands exactly, broadcasts them and calls the kernel :mod:`expansions.dispatch` chooses on the
operands' backend, so ``x + y`` reaches the backend in three calls (``__add__``, ``binary``, the
kernel); the reductions to :mod:`expansions.reduce`; the NumPy protocols to
:mod:`expansions.numpy_protocol`.  The array type imports none of them: there is no import circle.

Non-finite values (design decision 6): a result whose leading term is not finite is
``(that IEEE value, 0, ..., 0)``; see :func:`expansions.reference.algorithms.nonfinite_epilogue`.
"""

from __future__ import annotations

import decimal
import math
from fractions import Fraction

import mpmath
import numpy as np

from . import formats as F
from .backends import check_device, device_of, to_device, to_numpy
from .convert import Unsupported, exact_values, fraction_to_decimal, fraction_to_float
from .reference.exact import mpf_from_fraction
from .text import format_scalar, format_spec

#: Implementations registered by the modules above the array type: NumPy functions (np.sum, ...)
#: for ``__array_function__`` and the methods that share them, and ``("ufunc", method)`` for
#: ``__array_ufunc__`` (see :func:`implements`).
HANDLED: dict = {}


class Traced:
    """Marker base of the tracers of :mod:`expansions.programs`: a public operation that receives one
    hands its call to ``HANDLED["traced"]`` (the tracer records it in a program's graph)."""

    __slots__ = ()


def traced(*values) -> bool:
    """Whether any of ``values`` is a tracer of :mod:`expansions.programs`."""
    for v in values:  # a loop, not any(...): this runs on every operation
        if isinstance(v, Traced):
            return True
    return False


def implements(key):
    """Register the decorated function as the implementation of ``key`` (a NumPy function, or the
    name of a protocol entry point) for ExpansionArrays."""

    def register(fn):
        HANDLED[key] = fn
        return fn

    return register


_OPERATOR_NAMES = {"div": "truediv", np.matmul: "matmul", np.power: "pow", np.floor_divide: "floordiv",
                   np.remainder: "mod"}


def _binary_operator(op, reflected: bool = False):
    """The operator method of ``op``: ``HANDLED[key](op, self, other)`` (``(op, other, self)`` when
    ``reflected``), where key is "binary" for the arithmetic ('add', 'sub', 'mul', 'div'), "compare"
    for the comparisons ('eq', ...) and ``op`` itself for a NumPy function (np.matmul);
    NotImplemented for an operand of a type the expansions do not know."""
    key = "compare" if op in ("eq", "ne", "lt", "le", "gt", "ge") else "binary" if isinstance(op, str) else op

    def operator(self, other):
        x, y = (other, self) if reflected else (self, other)
        try:
            return HANDLED[key](x, y) if key is op else HANDLED[key](op, x, y)
        except Unsupported:
            return NotImplemented

    operator.__name__ = f"__{'r' if reflected else ''}{_OPERATOR_NAMES.get(op, op)}__"
    return operator


def _method(key, doc: str | None = None):
    """A method that calls ``HANDLED[key](self, ...)``: ``key`` a NumPy function (the method is
    ``numpy.<name>(self, ...)``) or the name of an entry registered by a module above."""

    def method(self, *args, **kwargs):
        return HANDLED[key](self, *args, **kwargs)

    name = getattr(key, "__name__", key)
    method.__name__ = name if isinstance(key, str) and name.startswith("__") else str(name).split(".")[-1]
    method.__doc__ = doc or f"``numpy.{name}(self, ...)`` (see the implementation registered for it)."
    return method


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
        return device_of(self._terms)

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
        """``x[key] = value``: value is promoted exactly to x's format (a value of a wider format, or
        one that x's R terms cannot hold exactly, is a ValueError)."""
        self._terms[self._term_key(key)] = HANDLED["terms_in_format"](value, self.nterms, self.dtype, self.device)

    # -- conversions ---------------------------------------------------------------------------
    def to_fraction(self):
        """The exact value: a Fraction for a scalar, else a NumPy object array of Fractions.
        Non-finite values come out as Python floats (inf, -inf, nan)."""
        return exact_values(self._terms, lambda q: q)

    def to_mpmath(self):
        """The exact value as mpmath mpf (exact, whatever mpmath's working precision): an mpf for a
        scalar, else a NumPy object array of mpf."""
        return exact_values(self._terms, lambda q: mpf_from_fraction(q) if type(q) is Fraction else mpmath.mpf(q))

    def __float__(self):
        """The value correctly rounded to float64 (see :meth:`to_float`)."""
        if self.ndim != 0:
            raise TypeError("only a 0-d ExpansionArray converts to float")
        return float(self.to_float())

    def to_float(self):
        """The value correctly rounded to float64 (half to even; beyond the largest float64, ±inf), as a
        NumPy array of the logical shape.  A zero value gives the zero with its leading term's sign.
        Two finite terms: one float64 addition (it rounds their exact sum once); otherwise through
        the exact rational."""
        t = to_numpy(self._terms)
        lead = t[..., 0].astype(np.float64)
        if t.shape[-1] == 2:  # one float64 addition rounds the exact sum of two floats, once, to nearest even
            t64 = t.astype(np.float64)
            with np.errstate(over="ignore", invalid="ignore"):
                f = np.array(t64[..., 0] + t64[..., 1])  # an array also for 0-d values
            bad = ~np.isfinite(t64).all(axis=-1)  # non-finite terms: the library's rule, below
            if bool(bad.any()):
                f[bad] = ExpansionArray(t[bad])._rounded_values()
        else:
            f = self._rounded_values()
        return np.where(f == 0, np.copysign(f, lead), f)[()]

    def _rounded_values(self):
        """Each value correctly rounded to float64 through its exact rational (any R; non-finite values
        by the library's rule), as an array of the logical shape."""
        q = self.to_fraction()
        if self.ndim == 0:
            return np.float64(fraction_to_float(q) if type(q) is Fraction else q)
        return np.vectorize(lambda v: fraction_to_float(v) if type(v) is Fraction else float(v),
                            otypes=[np.float64])(q)

    def to_device(self, device: str) -> ExpansionArray:
        """A copy on ``'cpu'`` (NumPy) or ``'cuda'`` (CuPy); the same array if already there."""
        check_device(device)
        return self if device == self.device else ExpansionArray(to_device(self._terms, device))

    def effective_bits(self):
        """Bits each value carries: ``min(R(p-1)+1, bits from its leading term down to the smallest
        subnormal)`` (design decision 9); 0 for zeros and non-finite values."""
        t = to_numpy(self._terms)[..., 0]
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
        are the exact value correctly rounded (half to even).  They are not always enough to read the
        same value back: ``str`` prints more where needed (the fewest that read back, see
        :func:`expansions.text.round_trip_digits`); ``x.to_decimal()`` gives all of them."""
        b = np.max(self.effective_bits()) if self.size else 0
        return max(1, int(b * math.log10(2)))

    def to_decimal(self):
        """The exact value as a :class:`decimal.Decimal` (a binary fraction has a finite decimal
        expansion, taken in full): a Decimal for a scalar, else a NumPy object array of Decimals.
        Signed zeros keep their sign; non-finite values are Decimal('Infinity'), ..., Decimal('NaN')."""
        q = exact_values(self._terms, lambda v: fraction_to_decimal(v) if type(v) is Fraction else decimal.Decimal(v))
        neg_zero = np.signbit(to_numpy(self._terms)[..., 0])
        if self.ndim == 0:
            return decimal.Decimal("-0") if neg_zero and q.is_zero() else q
        for i in zip(*np.nonzero(neg_zero)):
            if q[i].is_zero():
                q[i] = decimal.Decimal("-0")
        return q

    # -- text ----------------------------------------------------------------------------------
    def _str_items(self):
        """``str`` of each element, as a NumPy object array of the logical shape."""
        n, R, fmt = self.digits(), self.nterms, self.format
        if self.ndim == 0:
            return np.array(format_scalar(self.to_decimal(), n, R, fmt), dtype=object)
        items = [format_scalar(d, n, R, fmt) for d in self.to_decimal().reshape(-1)]
        return np.array(items, dtype=object).reshape(self.shape)

    def __str__(self):
        if self.ndim == 0:
            return str(self._str_items()[()])
        return np.array2string(self._str_items(), separator=", ", formatter={"all": str})

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
        return format_spec(self.to_decimal(), self.digits(), spec, self.nterms, self.format)

    def __repr__(self):
        """``expansions.array('...', terms=R, dtype=...)``, each value a quoted string as ``str`` prints it,
        so that ``eval(repr(x))`` reads back to the same values (strings are read exactly; unquoted
        digits would be Python floats)."""
        if self.ndim == 0:
            body = f"'{self}'"
        else:
            body = np.array2string(self._str_items(), separator=", ", formatter={"all": lambda s: f"'{s}'"},
                                   prefix="expansions.array(")
        dev = "" if self.device == "cpu" else f", device='{self.device}'"
        return f"expansions.array({body}, terms={self.nterms}, dtype='{self.dtype.name}'{dev})"

    # -- shape ---------------------------------------------------------------------------------
    def reshape(self, *shape) -> ExpansionArray:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return ExpansionArray(self._terms.reshape(tuple(shape) + (self.nterms,)))

    def copy(self) -> ExpansionArray:
        return ExpansionArray(self._terms.copy())

    # -- NumPy's methods: implementations in expansions.manipulation, elementwise, statistics ----
    T = property(lambda self: HANDLED[np.transpose](self), doc="The transpose (a view of the terms).")
    transpose = _method(np.transpose)
    swapaxes = _method(np.swapaxes)
    squeeze = _method(np.squeeze)
    ravel = _method(np.ravel)
    flatten = _method("flatten", "a C-order 1-D copy")
    tolist = _method("tolist", "nested lists of exact values (Fractions, or mpf with kind='mpf')")
    astype = _method("astype", "x in another format (dtype=, terms=): exact if wider, else correctly rounded")
    take = _method(np.take)
    clip = _method(np.clip)
    mean = _method(np.mean)
    prod = _method(np.prod)
    cumsum = _method(np.cumsum)
    cumprod = _method(np.cumprod)
    min = _method(np.min)
    max = _method(np.max)
    argmin = _method(np.argmin)
    argmax = _method(np.argmax)
    sort = _method("sort_in_place", "sorts in place by exact value, NaN last (returns None)")
    argsort = _method(np.argsort)
    __int__ = _method("int", "the exact value truncated to a Python int")
    __trunc__ = _method("int", "the exact value truncated to a Python int")
    __round__ = _method("round", "round(x): the nearest int (ties to even); round(x, n): to n decimals")
    __floor__ = _method("math.floor", "math.floor(x): a Python int, exact")
    __ceil__ = _method("math.ceil", "math.ceil(x): a Python int, exact")

    # -- arithmetic: operands that are not ExpansionArrays are promoted exactly; an operand of an
    # unknown type makes the operator return NotImplemented (so Python raises its usual TypeError)
    __add__ = _binary_operator("add")
    __radd__ = _binary_operator("add", reflected=True)
    __sub__ = _binary_operator("sub")
    __rsub__ = _binary_operator("sub", reflected=True)
    __mul__ = _binary_operator("mul")
    __rmul__ = _binary_operator("mul", reflected=True)
    __truediv__ = _binary_operator("div")
    __rtruediv__ = _binary_operator("div", reflected=True)

    __pow__ = _binary_operator(np.power)
    __rpow__ = _binary_operator(np.power, reflected=True)
    __floordiv__ = _binary_operator(np.floor_divide)
    __rfloordiv__ = _binary_operator(np.floor_divide, reflected=True)
    __mod__ = _binary_operator(np.remainder)
    __rmod__ = _binary_operator(np.remainder, reflected=True)
    __matmul__ = _binary_operator(np.matmul)
    __rmatmul__ = _binary_operator(np.matmul, reflected=True)
    __eq__ = _binary_operator("eq")
    __ne__ = _binary_operator("ne")
    __lt__ = _binary_operator("lt")
    __le__ = _binary_operator("le")
    __gt__ = _binary_operator("gt")
    __ge__ = _binary_operator("ge")

    def __neg__(self):
        return HANDLED[np.negative](self)

    def __pos__(self):
        return self

    def __abs__(self):
        return HANDLED[np.absolute](self)

    # -- reductions and products (expansions.reduce, through the NumPy protocol's table) -------
    def sum(self, axis=None, dtype=None, out=None, keepdims=False):
        """``numpy.sum(self, ...)``: the canonical pairwise tree of :func:`expansions.sum`, with the same
        R and dtype (``dtype`` must be None or the term dtype).  ``out``: an ExpansionArray of the
        result's shape, R, dtype and device, whose terms are overwritten (and which is returned)."""
        return HANDLED[np.sum](self, axis=axis, dtype=dtype, out=out, keepdims=keepdims)

    def dot(self, other, out=None):
        """``expansions.dot(self, other)``; ``out`` as in :meth:`sum`."""
        return HANDLED[np.dot](self, other, out=out)

    # -- the NumPy protocols ------------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        raise TypeError(
            "an ExpansionArray does not convert implicitly to a NumPy array (that would drop all but the "
            "leading term, or mix the terms into the values): use x.terms for the (..., R) array of terms "
            "(no copy) or x.to_float() for the values correctly rounded to float64")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return HANDLED["__array_ufunc__"](ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        impl = HANDLED.get(func)
        if impl is None:
            return HANDLED["unsupported_function"](func)
        return impl(*args, **kwargs)

    def __cupy_override_elementwise_kernel__(self, ufunc, *args, **kwargs):
        """CuPy's ufuncs (``cupy.add(a, x)``, and ``cupy_array + x``) hand over to the NumPy protocol."""
        name = getattr(ufunc, "name", "")
        np_ufunc = getattr(np, name[5:] if name.startswith("cupy_") else name, None)
        r = NotImplemented
        if isinstance(np_ufunc, np.ufunc):
            r = HANDLED["__array_ufunc__"](np_ufunc, "__call__", args, kwargs)
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
        return bool(to_numpy(self._terms).reshape(-1, self.nterms)[0].any())
