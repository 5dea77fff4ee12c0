"""expansions: extended precision with floating-point expansions on GPUs (CuPy) and CPUs (NumPy).

A number is the unevaluated sum of R machine floats (R = 2..32, float64 or float32 terms), term 0
the most significant.  The algorithms are the data-parallel addition and multiplication of
Collange, Joldes, Muller and Popescu (ASAP 2016) and the renormalization of Joldes, Marty, Muller
and Popescu (IEEE TC 2016); every GPU kernel has a NumPy twin that returns the same bits, and a
pure-Python exact reference checks both and the proven error bounds.

    >>> import expansions as ex
    >>> x = ex.array("3.14159265358979323846264338327950288419716939937510", terms=4)
    >>> y = x * x - 9
    >>> float(y)
    0.8696044010893587
"""

# numpy_protocol, linalg, numpy_math, numpy_einsum and numpy_statistics register NumPy functions
from . import bounds, formats, linalg, numpy_einsum, numpy_math, numpy_protocol, numpy_statistics  # noqa: F401
from .arraytype import ExpansionArray
from .backends import set_cpu_backend
from .creation import array, empty, from_dlpack, from_terms, full, ones, random, zeros
from .elementary import (
    acos,
    asin,
    atan,
    atan2,
    cos,
    cosh,
    exp,
    expm1,
    log,
    log1p,
    log2,
    log10,
    pow,
    sin,
    sinh,
    tan,
    tanh,
)
from .elementwise import (
    ceil,
    clip,
    floor,
    floor_divide,
    fmod,
    isfinite,
    isinf,
    isnan,
    maximum,
    minimum,
    power,
    remainder,
    rint,
    sign,
    signbit,
    trunc,
)
from .formats import FLOAT32, FLOAT64, Format
from .manipulation import (
    astype,
    broadcast_to,
    concatenate,
    empty_like,
    expand_dims,
    full_like,
    moveaxis,
    ones_like,
    ravel,
    squeeze,
    stack,
    swapaxes,
    take,
    tolist,
    transpose,
    where,
    zeros_like,
)
from .operations import absolute, add, div, mul, negative, reciprocal, renormalize, sqrt, sub
from .programs import FuseError, fuse
from .reduce import (
    dot,
    inner,
    matmul,
    sum,  # noqa: A004 - expansions.sum, like numpy.sum
    tensordot,
    vdot,
)
from .statistics import (
    argmax,
    argmin,
    argsort,
    cumprod,
    cumsum,
    max,  # noqa: A004 - expansions.max, like numpy.max
    mean,
    min,  # noqa: A004 - expansions.min, like numpy.min
    prod,
    sort,
)
from .tuning import tune
from .ufuncs import copysign, fabs, fmax, fmin, frexp, heaviside, ldexp, modf, square

__version__ = "0.1.0"

__all__ = [
    "copysign",
    "fabs",
    "fmax",
    "fmin",
    "frexp",
    "heaviside",
    "ldexp",
    "modf",
    "square",
    "acos",
    "asin",
    "atan",
    "atan2",
    "cos",
    "cosh",
    "exp",
    "expm1",
    "log",
    "log1p",
    "log2",
    "log10",
    "pow",
    "sin",
    "sinh",
    "tan",
    "tanh",
    "tensordot",
    "vdot",
    "ExpansionArray",
    "FLOAT32",
    "FLOAT64",
    "Format",
    "absolute",
    "add",
    "argmax",
    "argmin",
    "argsort",
    "array",
    "astype",
    "bounds",
    "broadcast_to",
    "ceil",
    "clip",
    "concatenate",
    "cumprod",
    "cumsum",
    "div",
    "dot",
    "empty",
    "empty_like",
    "expand_dims",
    "floor",
    "floor_divide",
    "fmod",
    "formats",
    "from_dlpack",
    "from_terms",
    "full",
    "full_like",
    "fuse",
    "inner",
    "FuseError",
    "isfinite",
    "isinf",
    "isnan",
    "linalg",
    "matmul",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "moveaxis",
    "mul",
    "negative",
    "ones",
    "ones_like",
    "power",
    "prod",
    "random",
    "ravel",
    "reciprocal",
    "remainder",
    "renormalize",
    "rint",
    "set_cpu_backend",
    "sign",
    "signbit",
    "sort",
    "sqrt",
    "squeeze",
    "stack",
    "sub",
    "sum",
    "swapaxes",
    "take",
    "tolist",
    "transpose",
    "trunc",
    "tune",
    "where",
    "zeros",
    "zeros_like",
]
