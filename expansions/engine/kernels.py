"""What the compiled engine's modules share (numba, nopython): the compile options, the operands'
checks, and the one renormalization of a single expansion that the exact-slice products finish with
(:func:`renormalize_row`, :mod:`expansions.engine.slices`).  The operations on arrays are
:mod:`expansions.engine.fused` (blocks of expansions on SIMD lanes) and, at R = 2,
:mod:`expansions.engine.fused_dw`; both are tested bit-identical to the twins of
:mod:`expansions.cpu.kernels`.

:func:`renormalize_row` takes the arguments of its twin for one expansion (a row, its number of
terms, output and scratch rows) and returns the twin's bits (``kernels.renormalize``): every
floating-point operation is the twin's, on the same operands in the same order, compiled without
``fastmath`` (one IEEE rounding to nearest even per ``+ - * /``, no reassociation, no contraction of
a multiply-add into an FMA, subnormals kept), ``error_model="numpy"`` (a division by zero is IEEE);
where the twin decides per row (a vote and a global ``break`` once no row is active) the loop here
stops for its own row: a row whose vote fails is left unchanged by the twin.  The float32 terms are
computed in float32: every constant is made of the terms' type (:func:`_const`).  ``cache=True``
keeps the machine code on disk; sizes are runtime arguments, so each function is compiled once per
dtype.
"""

from __future__ import annotations

import hashlib
import math
import os
from pathlib import Path

import numpy as np
from numba import njit, types
from numba.core.caching import FunctionCache
from numba.extending import overload

from ..formats import FLOAT32, FLOAT64
from .limits import TINY_EXPONENT32, TINY_EXPONENT64

# numba's OpenMP threading layer (its choice where libgomp is present) leaves its worker threads spinning
# after a parallel loop; where other processes share the cores, a spinning worker uses up its turn and the
# next loop waits for the scheduler's tick before the worker runs its share: milliseconds per call whatever
# the size (R = 2 addition of 4096 expansions on 2 busy cores: 8-20 ms instead of 0.07-0.1 ms; python -m
# bench.parallel_wait).  Workers that sleep at once and are woken cost microseconds instead.  libgomp reads
# the variable when numba first starts its threads, after this import; a user's own setting is kept.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

#: Options of every compiled function: no fastmath (IEEE operations, no contraction), IEEE division.
OPTIONS = {"cache": True, "error_model": "numpy"}
#: Options of the parallel kernels (a ``prange`` over blocks of expansions).
PARALLEL = {**OPTIONS, "parallel": True}


# ---------------------------------------------------------------------------------------------
# the disk cache kept true to the sources


_HERE = Path(__file__).resolve().parent
#: The sources whose code the compiled functions hold: every module of the engine (they call and
#: inline each other) and the tables they read at compile time.
_SOURCES = (*sorted(_HERE.glob("*.py")), _HERE.parent / "formats.py", _HERE.parent / "dw" / "__init__.py")


def _stamp_anchor():
    """A function of this module: numba's cache locator gives the engine's cache folder for it."""


def source_stamp() -> str:
    """A digest of :data:`_SOURCES`."""
    digest = hashlib.sha256()
    for path in _SOURCES:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:20]


def clear_stale_cache() -> bool:
    """Remove the engine's cached machine code when the sources changed since it was written; whether
    it removed any.  numba checks a cached function against its own file only, but the engine's
    functions inline each other across modules: after an edit of ``fused.py`` alone, the cached program
    loop of ``program.py`` would still run the old ``operation_block`` (a checkout updated in place, an
    edit during development).  A stamp of every source (:func:`source_stamp`) sits beside the cache;
    on a mismatch the engine's cache files go (each function compiles again once).  Nothing happens
    where the cache folder cannot be written (numba then keeps no cache either)."""
    try:
        folder = Path(FunctionCache(_stamp_anchor)._cache_path)
        stamp = folder / "expansions-engine.stamp"
        want = source_stamp()
        if stamp.exists() and stamp.read_text() == want:
            return False
        modules = {p.stem for p in _HERE.glob("*.py")}
        removed = False
        for f in folder.glob("*.nb[ic]") if folder.is_dir() else ():
            if f.name.split(".")[0] in modules:
                f.unlink(missing_ok=True)
                removed = True
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f"expansions-engine.stamp.{os.getpid()}"
        tmp.write_text(want)
        os.replace(tmp, stamp)  # atomic: processes importing at once see one stamp or the other
        return removed
    except (OSError, AttributeError, TypeError):  # a read-only install, or a numba without this locator
        return False


clear_stale_cache()


# ---------------------------------------------------------------------------------------------
# typed constants and the 2Sum (twin of expansions/cpu/eft.py)


def _const(like, value):
    """``value`` as a float of the type of ``like`` (compiled code only)."""
    raise NotImplementedError


@overload(_const)
def _const_impl(like, value):
    if isinstance(like, types.Float) and like.bitwidth == 32:
        return lambda like, value: np.float32(value)
    return lambda like, value: np.float64(value)


@njit(**OPTIONS)
def two_sum(a, b):
    """Knuth's 2Sum: ``s = RN(a+b)``, ``e = a + b - s`` exactly (twin of ``eft.two_sum``)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


# ---------------------------------------------------------------------------------------------
# the non-finite rule


@njit(**OPTIONS)
def all_finite(x, n):
    """Whether the first n terms of x are finite."""
    for t in range(n):
        if not np.isfinite(x[t]):
            return False
    return True


@njit(**OPTIONS)
def epilogue(out, R, xbad, x0, ybad, y0, leading):
    """Twin of ``kernels.nonfinite_epilogue`` on one row (one or two operands; pass ``ybad=False``
    for one): an operand with a non-finite term gives ``(w, 0, ..., 0)``, w = ``leading`` or NaN
    where that operand's leading term is finite; else a non-finite term of ``out`` gives
    ``(±inf, 0, ..., 0)`` with the sign of ``leading``.  A NaN is the canonical quiet NaN."""
    if xbad or ybad:
        w = np.float64(leading)
        if xbad and np.isfinite(x0):
            w = np.nan
        if ybad and np.isfinite(y0):
            w = np.nan
    else:
        if all_finite(out, R):
            return
        w = -np.inf if leading < 0 else np.inf
    if np.isnan(w):
        w = np.nan
    out[0] = w  # exact: w is leading itself, an infinity or NaN
    for t in range(1, R):
        out[t] = 0


# ---------------------------------------------------------------------------------------------
# one expansion (a row): the renormalization


@njit(**OPTIONS)
def _before(a, b):
    """The twin's sort order (``argsort(-abs(v), kind="stable")``): a strictly before b when |a| > |b|,
    or when b is NaN and a is not (NumPy sorts NaN keys last)."""
    return abs(a) > abs(b) or (np.isnan(b) and not np.isnan(a))


def _ulp_floor(like):
    """(p, smallest subnormal as a float64) of the type of ``like`` (compiled code only)."""
    raise NotImplementedError


@overload(_ulp_floor)
def _ulp_floor_impl(like):
    if isinstance(like, types.Float) and like.bitwidth == 32:
        return lambda like: (FLOAT32.p, 2.0**TINY_EXPONENT32)
    return lambda like: (FLOAT64.p, 2.0**TINY_EXPONENT64)


@njit(**OPTIONS)
def _ulp(a):
    """Twin of ``kernels.ulp`` on one finite term: ``2**(e - p + 1)`` for ``2**e <= |a| < 2**(e+1)``, at
    least the smallest subnormal (the smallest subnormal for zero), as a float64: a power of two
    that the terms' type holds, so comparisons give the twin's answers."""
    p, tiny = _ulp_floor(a)
    if a == 0:
        return tiny
    ex = math.frexp(np.float64(a))[1]
    return max(math.ldexp(1.0, ex - p), tiny)


@njit(**OPTIONS)
def _nonoverlapping(r, R):
    """Twin of ``kernels._adjacent_nonoverlapping`` on one row."""
    if not all_finite(r, R):
        return False
    for t in range(1, R):
        if r[t] != 0 and not abs(r[t]) <= _ulp(r[t - 1]):
            return False
    return True


@njit(**OPTIONS)
def renormalize_row(x, n, R, out, cur, srt, e):
    """Twin of ``kernels.renormalize`` on one row (Joldes, Marty, Muller, Popescu, IEEE TC 2016): at
    most R rounds of stable sort by decreasing magnitude, VecSum from the bottom, VecSumErrBranch
    from the top into R terms, until the terms are ulp-nonoverlapping.  ``out`` may be x;
    cur, srt, e: scratch of max(n, R) terms."""
    xbad = not all_finite(x, n)
    x0 = x[0]
    zero = _const(x0, 0.0)
    for t in range(n):
        cur[t] = x[t]
    k = n
    leading = x0
    for rnd in range(R):
        # stable insertion sort of cur[0:k] into srt
        for i in range(k):
            v = cur[i]
            j = i
            while j > 0 and _before(v, srt[j - 1]):
                srt[j] = srt[j - 1]
                j -= 1
            srt[j] = v
        # VecSum, from the bottom
        sv = srt[k - 1]
        for i in range(k - 2, -1, -1):
            sv, e[i + 1] = two_sum(srt[i], sv)
        e[0] = sv
        if rnd == 0:
            leading = sv
        # VecSumErrBranch, from the top, into out[0:R]
        for t in range(R):
            out[t] = zero
        j = 0
        eps = e[0]
        done = False
        for i in range(1, k):
            rj, eps_new = two_sum(eps, e[i])
            out[j] = rj
            if eps_new != 0:
                if j >= R - 1:
                    done = True
                    break
                j += 1
                eps = eps_new
            else:
                eps = rj
        if not done:
            out[j] = eps
        if _nonoverlapping(out, R):
            break
        for t in range(R):
            cur[t] = out[t]
        k = R
    epilogue(out, R, xbad, x0, False, x0, leading)


@njit(**OPTIONS)
def leading_exponent(a0):
    """Twin of ``newton.leading_exponent``: ilogb(a0) for finite nonzero a0, else 0."""
    if np.isfinite(a0) and a0 != 0:
        return math.frexp(np.float64(a0))[1] - 1
    return 0


# ---------------------------------------------------------------------------------------------
# the twins' interface


def readonly(a: np.ndarray) -> np.ndarray:
    """``a`` as a read-only view (no copy; ``a`` itself when it is read-only already).  The engine passes
    every operand read-only to its compiled loops: numba compiles one specialization per array type,
    and a writable and a read-only array are two types, so that a read-only operand (a broadcast view,
    an array over a read-only buffer) would cost a second compilation of the same loop (seconds; the
    fused engine's loop about ten)."""
    if not a.flags.writeable:
        return a
    view = a.view()
    view.flags.writeable = False
    return view


def terms_array(x, name="x"):
    """x as a C-contiguous 2-D float64/float32 array with at least one term per row."""
    x = np.ascontiguousarray(x)
    if x.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D (count, terms) array, got shape {x.shape}")
    if x.dtype not in (np.float64, np.float32):
        raise TypeError(f"{name}: terms must be float64 or float32, got {x.dtype}")
    if x.shape[1] < 1:
        raise ValueError(f"{name}: every expansion needs at least one term")
    return x


def operands(x, y):
    """x and y checked (:func:`terms_array`) and matched: same dtype, same number of expansions."""
    x, y = terms_array(x, "x"), terms_array(y, "y")
    if x.dtype != y.dtype:
        raise TypeError(f"x and y must have the same dtype, got {x.dtype} and {y.dtype}")
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"x and y must hold as many expansions, got {x.shape[0]} and {y.shape[0]}")
    return x, y


def negate(x):
    """Every term negated (exact); the bits of ``cpu.kernels.negate``."""
    return -x
