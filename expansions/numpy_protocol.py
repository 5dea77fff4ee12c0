"""The NumPy protocols for ExpansionArrays: ``__array_ufunc__`` and ``__array_function__``.

Ufuncs (method ``__call__``): the entries of :data:`UFUNCS` (add, subtract, multiply, true_divide,
negative, positive, absolute, sqrt, matmul, the six comparisons, and what other modules register
with :func:`register_ufunc`), plus ``add.reduce``; ``out=`` a single ExpansionArray of the result's
shape/R/dtype/device (a boolean array for comparisons).  Functions: the entries registered in
:data:`expansions.arraytype.HANDLED` (np.sum, np.dot, np.inner, np.vdot, np.tensordot, np.matmul, np.shape,
np.ndim, np.size here, and those of the modules that implement more).  A NumPy function or ufunc
without an entry raises a TypeError that names it.

Mixed operands are promoted exactly (:mod:`expansions.promote`); no silent device transfers;
``np.asarray(x)`` raises instead of dropping terms (see ``ExpansionArray.__array__``).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from . import reduce
from .arraytype import HANDLED, ExpansionArray, implements
from .backends import xp_of
from .convert import Unsupported
from .operations import absolute, binary, compare, negative, operands, unary
from .promote import operand_terms

_NOVALUE = object()
# keyword arguments NumPy's ufuncs accept that change nothing at their default value
_UFUNC_DEFAULTS = {"where": True, "casting": "same_kind", "order": "K", "dtype": None, "subok": True,
                   "signature": None}
_COMPARISONS = {"equal": "eq", "not_equal": "ne", "less": "lt", "less_equal": "le", "greater": "gt",
                "greater_equal": "ge"}


def _expansion_input(x, name):
    if not isinstance(x, ExpansionArray):
        raise TypeError(f"np.{name} of a non-ExpansionArray into an ExpansionArray out is not supported")
    return x


#: The ufuncs, by NumPy name: the function that computes them on ExpansionArray operands.
UFUNCS = {
    "add": lambda a, b: binary("add", a, b),
    "subtract": lambda a, b: binary("sub", a, b),
    "multiply": lambda a, b: binary("mul", a, b),
    "true_divide": lambda a, b: binary("div", a, b),
    "divide": lambda a, b: binary("div", a, b),  # np.true_divide's name in NumPy 2
    "matmul": lambda a, b: reduce.matmul(*operands(a, b)),
    "negative": lambda x: negative(_expansion_input(x, "negative")),
    "positive": lambda x: _expansion_input(x, "positive").copy(),
    "absolute": lambda x: absolute(_expansion_input(x, "absolute")),
    "sqrt": lambda x: unary("sqrt", _expansion_input(x, "sqrt")),
    **{name: partial(compare, op) for name, op in _COMPARISONS.items()},
}


def register_ufunc(ufunc: np.ufunc, fn):
    """Make ``ufunc(...)`` on ExpansionArrays call ``fn`` with the same positional operands."""
    UFUNCS[ufunc.__name__] = fn


def write_out(out, r, what: str):
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
        out.terms[...] = r.terms
        return out
    shape = tuple(getattr(r, "shape", ()))
    same_device = not hasattr(r, "shape") or xp_of(out) is xp_of(r)
    if isinstance(out, ExpansionArray) or getattr(out, "dtype", None) != np.bool_ or \
            tuple(out.shape) != shape or not same_device:
        raise TypeError(f"{what}: out must be a boolean array of shape {shape} on the operands' device")
    out[...] = r
    return out


def _reject_kwargs(what, kwargs, allowed=()):
    for k, v in kwargs.items():
        if k in allowed:
            continue
        if k in _UFUNC_DEFAULTS and (v is _UFUNC_DEFAULTS[k] or (isinstance(v, str) and v == _UFUNC_DEFAULTS[k])):
            continue
        raise TypeError(f"{what}: the keyword argument {k}={v!r} is not supported for ExpansionArray operands"
                        + (f" (supported: {', '.join(allowed)})" if allowed else ""))


@implements("__array_ufunc__")
def array_ufunc(ufunc, method, inputs, kwargs):
    """NumPy's ufunc protocol (see the module docstring).  Everything else returns NotImplemented, so
    NumPy raises its TypeError."""
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
        return np_sum(x, axis=axis, out=out, keepdims=keepdims)
    if method == "__call__" and name not in UFUNCS:
        unsupported_function(ufunc)
    if method != "__call__":
        return NotImplemented
    if name == "matmul":
        kwargs = {k: v for k, v in kwargs.items() if not (k in ("axes", "axis") and v is None)}
    _reject_kwargs(what, kwargs, ("out",))
    if out is not None and not any(isinstance(v, ExpansionArray) for v in inputs):
        lead = out[0] if isinstance(out, tuple) else out
        if isinstance(lead, ExpansionArray) and len(inputs) == 2:  # np.add(a, b, out=expansion)
            inputs = (ExpansionArray(operand_terms(inputs[0], lead.nterms, lead.dtype, lead.device)), inputs[1])
    try:
        r = UFUNCS[name](*inputs)
    except Unsupported:
        return NotImplemented
    if r is NotImplemented or out is None:
        return r
    return write_out(out, r, what)


# elementary functions without an expansion implementation (exp, log, sin, ... are in expansions.elementary)
_ELEMENTARY = ("exp2", "arcsinh", "arccosh", "arctanh", "hypot", "cbrt", "logaddexp", "logaddexp2", "float_power",
               "deg2rad", "rad2deg", "degrees", "radians")
#: What to use instead of common NumPy functions that have no expansion implementation.
UNSUPPORTED_HINTS = {
    **{name: "this elementary function is not implemented for expansions yet (expansions.elementary has exp, log, "
             "sin, ...): evaluate it with mpmath on x.to_mpmath() (exact input), or in float64 on x.to_float()"
       for name in _ELEMENTARY},
    "round": "use np.rint(x) (exact, to integers) or round(x, n) on a 0-d array",
    "around": "use np.rint(x) (exact, to integers) or round(x, n) on a 0-d array",
    "var": "use expansions.mean and the arithmetic: ((x - x.mean()) ** 2).mean()",
    "std": "use expansions.sqrt(((x - x.mean()) ** 2).mean())",
    "median": "use expansions.sort (exact) and index the middle",
    "percentile": "use expansions.sort (exact) and index it",
    "quantile": "use expansions.sort (exact) and index it",
    "diff": "use x[1:] - x[:-1]",
    "cbrt": "use expansions.power for integer powers; roots other than sqrt are not implemented",
    "nansum": "use np.sum on the non-NaN elements (x[~np.isnan(x)])",
    "reciprocal": "use expansions.reciprocal(x) or 1 / x",
    "square": "use x * x or x ** 2",
    "copysign": "use np.where(np.signbit(y), -abs(x), abs(x))",
    "fabs": "use abs(x) or np.absolute(x)",
    "divmod": "use x // y and x % y",
    "modf": "use np.trunc(x) and x - np.trunc(x)",
    "isclose": "compare exactly with ==, or abs(x - y) <= tol",
    "allclose": "compare exactly with ==, or (abs(x - y) <= tol).all()",
    "asarray": "use expansions.array, or x.terms / x.to_float() for NumPy arrays",
}


@implements("unsupported_function")
def unsupported_function(func):
    """The TypeError of a NumPy function (or ufunc) that has no implementation for ExpansionArrays,
    with what to use instead (:data:`UNSUPPORTED_HINTS`; for a ``numpy.linalg`` function, what
    ``expansions.linalg`` has)."""
    module = getattr(func, "__module__", None) or "numpy"
    short = getattr(func, "__name__", str(func))
    name = module + "." + short
    if module.startswith("numpy.linalg"):
        hint = ("expansions.linalg has no equivalent yet (it has solve, lu, lu_factor, det, inv, cholesky, qr, "
                "norm, lstsq); use mpmath on x.to_mpmath() for it")
    else:
        hint = UNSUPPORTED_HINTS.get(short, "use the functions of the expansions package (expansions.*), or "
                                            "x.to_float() / x.terms to work with NumPy arrays")
    raise TypeError(f"{name} is not supported for ExpansionArray operands: {hint}")


@implements(np.sum)
def np_sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NOVALUE, where=_NOVALUE):
    if not isinstance(a, ExpansionArray):
        raise TypeError("np.sum: only the summand may be an ExpansionArray")
    if initial is not _NOVALUE and initial is not np._NoValue:
        raise TypeError("np.sum: initial= is not supported for ExpansionArray operands")
    if where is not _NOVALUE and where is not np._NoValue and where is not True:
        raise TypeError("np.sum: where= is not supported for ExpansionArray operands")
    if keepdims is np._NoValue:
        keepdims = False
    if dtype is not None and np.dtype(dtype) != a.dtype:
        raise TypeError(f"sum: dtype={dtype!r} is not supported (the result has the operand's {a.nterms} "
                        f"{a.dtype} terms)")
    r = reduce.sum(a, axis=axis, keepdims=keepdims)
    return r if out is None else write_out(out, r, "sum")


@implements(np.dot)
def np_dot(a, b, out=None):
    r = reduce.dot(*operands(a, b))
    return r if out is None else write_out(out, r, "np.dot")


@implements(np.inner)
def np_inner(a, b):
    return reduce.inner(*operands(a, b))


@implements(np.vdot)
def np_vdot(a, b):
    return reduce.vdot(*operands(a, b))


@implements(np.tensordot)
def np_tensordot(a, b, axes=2):
    return reduce.tensordot(*operands(a, b), axes=axes)


@implements(np.matmul)  # np.matmul is a ufunc (it reaches __array_ufunc__); this entry serves `@` too
def np_matmul(a, b, out=None, **kwargs):
    return array_ufunc(np.matmul, "__call__", (a, b), dict(kwargs, out=out))


HANDLED[np.shape] = lambda a: a.shape
HANDLED[np.ndim] = lambda a: a.ndim
HANDLED[np.size] = lambda a, axis=None: a.size if axis is None else a.shape[axis]
