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

from . import bounds, formats, numpy_protocol  # noqa: F401 - numpy_protocol registers the NumPy protocol
from .arraytype import ExpansionArray
from .creation import array, empty, from_dlpack, from_terms, full, ones, random, zeros
from .formats import FLOAT32, FLOAT64, Format
from .operations import absolute, add, div, mul, negative, reciprocal, renormalize, sqrt, sub
from .reduce import (
    dot,
    matmul,
    sum,  # noqa: A004 - expansions.sum, like numpy.sum
)

__version__ = "0.1.0"

__all__ = [
    "ExpansionArray",
    "FLOAT32",
    "FLOAT64",
    "Format",
    "absolute",
    "add",
    "array",
    "bounds",
    "div",
    "dot",
    "empty",
    "formats",
    "from_dlpack",
    "from_terms",
    "full",
    "matmul",
    "mul",
    "negative",
    "ones",
    "random",
    "reciprocal",
    "renormalize",
    "sqrt",
    "sub",
    "sum",
    "zeros",
]
