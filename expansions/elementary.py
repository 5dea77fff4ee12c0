"""The elementary functions of ExpansionArrays: ``ex.exp(x)``, ..., and the NumPy ufuncs ``np.exp(x)``.

exp, expm1, log, log1p, log2, log10, pow, sin, cos, tan, atan (``np.arctan``), atan2
(``np.arctan2``), asin (``np.arcsin``), acos (``np.arccos``), sinh, cosh, tanh, for every R in 2..32
and float64 or float32 terms; the result has the operand's format (the wider one for two operands,
as the arithmetic).  The algorithms, the special values and the accuracy are in
:mod:`expansions.cpu.elementary`; the stated (empirical) bounds are
:data:`expansions.bounds.ELEMENTARY`, the measured errors ``python -m expansions verify --elementary``.

Backends.  On the CPU both backends run the NumPy twins of :mod:`expansions.cpu.elementary`; the
engine (the default) runs them on its compiled operations (:class:`expansions.cpu.elementary.Arithmetic`:
the same bits, tests/test_elementary.py), the algorithms' own steps staying NumPy.  On
the GPU (an array of CuPy terms) the CUDA kernels of ``expansions/cuda/elementary.cuh`` run, one per
function, bit-identical to the twins (tested in the warp emulator, tests/test_elementary_emulated.py,
and on a GPU by tests/test_gpu_elementary.py); the first call of a function for an (R, dtype)
compiles its kernel with NVRTC (seconds to tens of seconds), cached on disk.
"""

from __future__ import annotations

import numpy as np

from .arraytype import HANDLED, ExpansionArray, traced
from .backends import for_terms
from .elementwise import power
from .numpy_protocol import register_ufunc
from .operations import flat_pair, operands

__all__ = ["exp", "expm1", "log", "log1p", "log2", "log10", "pow", "sin", "cos", "tan", "atan", "atan2", "asin",
           "acos", "sinh", "cosh", "tanh"]


def _kernel(name: str, terms):
    """The function that runs ``name`` on the backend of ``terms``: the CPU twin (engine or twins) or
    the CUDA kernel's launcher, with the same signature and bits."""
    return for_terms(terms).elementary(name)


def _unary(name: str, x) -> ExpansionArray:
    if traced(x):  # inside expansions.fuse: record the function
        return HANDLED["traced"](name, x)
    if not isinstance(x, ExpansionArray):
        raise TypeError(f"{name} expects an ExpansionArray, got {type(x).__name__} (make one with "
                        f"expansions.array)")
    fn = _kernel(name, x.terms)
    R = x.nterms
    with np.errstate(all="ignore"):
        out = fn(x.terms.reshape(-1, R), R)
    return ExpansionArray(out.reshape(x.terms.shape))


def _binary(name: str, a, b) -> ExpansionArray:
    """Two operands promoted exactly to one format and broadcast, as the arithmetic does."""
    if traced(a, b):
        return HANDLED["traced"](name, a, b)
    a, b = operands(a, b)
    at, bt, shape = flat_pair(a, b)
    fn = _kernel(name, at)
    with np.errstate(all="ignore"):
        out = fn(at, bt, a.nterms)
    return ExpansionArray(out.reshape(shape + (a.nterms,)))


def exp(x):
    """e^x; exp(-inf) = 0, exp(inf) = inf, overflow to inf, underflow to 0 (or a subnormal)."""
    return _unary("exp", x)


def expm1(x):
    """e^x - 1, relatively accurate near 0."""
    return _unary("expm1", x)


def log(x):
    """The natural logarithm; log(±0) = -inf, log(x < 0) = NaN, log(inf) = inf."""
    return _unary("log", x)


def log1p(x):
    """log(1 + x), relatively accurate near 0; log1p(-1) = -inf, NaN below -1."""
    return _unary("log1p", x)


def log2(x):
    """The base-2 logarithm (exact at powers of two)."""
    return _unary("log2", x)


def log10(x):
    """The base-10 logarithm."""
    return _unary("log10", x)


def sin(x):
    """The sine, any finite argument (Payne–Hanek reduction: sin(1e300) is correct); sin(±inf) = NaN."""
    return _unary("sin", x)


def cos(x):
    """The cosine, any finite argument; cos(±inf) = NaN."""
    return _unary("cos", x)


def tan(x):
    """The tangent, any finite argument; tan(±inf) = NaN."""
    return _unary("tan", x)


def atan(x):
    """The arctangent, in [-pi/2, pi/2]; atan(±inf) = ±pi/2 (to R terms)."""
    return _unary("atan", x)


def asin(x):
    """The arcsine on [-1, 1] (NaN outside)."""
    return _unary("asin", x)


def acos(x):
    """The arccosine on [-1, 1] (NaN outside)."""
    return _unary("acos", x)


def sinh(x):
    """The hyperbolic sine."""
    return _unary("sinh", x)


def cosh(x):
    """The hyperbolic cosine."""
    return _unary("cosh", x)


def tanh(x):
    """The hyperbolic tangent."""
    return _unary("tanh", x)


def atan2(y, x):
    """The angle of the point (x, y), in [-pi, pi], with the quadrants and special cases of IEEE 754;
    y and x are promoted exactly to one format and broadcast."""
    return _binary("atan2", y, x)


def pow(x, y):  # noqa: A001 - the elementary function's name, as math.pow
    """x ** y.  An integer y (a Python or NumPy integer) takes binary powering
    (:func:`expansions.elementwise.power`, with its proven bound); any other y (an ExpansionArray, a
    float, an array) takes exp(y log|x|) with the signs and special cases of IEEE 754 pow (x < 0 needs
    an integer y, else NaN).  The stated bound of the latter (:func:`expansions.bounds.elementary`)
    holds for ``|y| <= expansions.bounds.pow_exponent_limit(R, fmt)`` only: near x = 1 a larger |y|
    multiplies the absolute error of log x at the underflow threshold (about the smallest subnormal)
    into a relative error of about |y| times it (:func:`expansions.bounds.pow_bound`)."""
    if isinstance(y, (int, np.integer)) and not isinstance(y, bool):
        if traced(x):
            return HANDLED["traced"]("pow", x, y)
        if not isinstance(x, ExpansionArray):
            raise TypeError(f"pow expects an ExpansionArray base, got {type(x).__name__}")
        return power(x, y)
    return _binary("pow", x, y)


for _ufunc, _fn in [(np.exp, exp), (np.expm1, expm1), (np.log, log), (np.log1p, log1p), (np.log2, log2),
                    (np.log10, log10), (np.sin, sin), (np.cos, cos), (np.tan, tan), (np.arctan, atan),
                    (np.arcsin, asin), (np.arccos, acos), (np.sinh, sinh), (np.cosh, cosh), (np.tanh, tanh),
                    (np.arctan2, atan2)]:
    register_ufunc(_ufunc, _fn)
