"""Launchers of the GPU kernels, with the signatures of their CPU twins (:mod:`expansions.cpu.kernels`,
and :mod:`expansions.baselines.cpu` for the sequential baselines).

Each takes 2-D C-contiguous CuPy arrays of terms, shape (count, n), float64 or float32, one
expansion per row, and returns a new (count, R) CuPy array with the same bits as the twin.  The
``*_soa`` baselines take and return the transposed layout, shape (R, count): term k of every expansion
contiguous, which makes the loads of one-thread-per-expansion kernels coalesced.  Kernels run on the
current CuPy device and stream; they are compiled on first use (see :func:`expansions.cuda.build.kernels`).
"""

from __future__ import annotations

import functools

import numpy as np

from ..formats import check_terms
from . import build

#: Upper bound on blocks per launch, per streaming multiprocessor (the grid-stride loop does the rest).
BLOCKS_PER_SM = 32


def add_safe(x, y, R):
    """x + y in R terms, safe parallel addition (Algorithm 1).  Twin: ``cpu.kernels.add_safe``."""
    return _binary("add_safe", x, y, R)


def add_fast(x, y, R):
    """x + y in R terms, fast parallel addition (Fig. 5).  Twin: ``cpu.kernels.add_fast``."""
    return _binary("add_fast", x, y, R)


def sub_safe(x, y, R):
    """x - y as ``add_safe(x, -y)``.  Twin: ``cpu.kernels.sub_safe``."""
    return _binary("sub_safe", x, y, R)


def sub_fast(x, y, R):
    """x - y as ``add_fast(x, -y)``.  Twin: ``cpu.kernels.sub_fast``."""
    return _binary("sub_fast", x, y, R)


def mul_truncated(x, y, R):
    """x * y in R terms, truncated parallel multiplication (Algorithm 2).
    Twin: ``cpu.kernels.mul_truncated``."""
    return _binary("mul_truncated", x, y, R)


def newton_reciprocal(x, R):
    """1/x in R terms by Newton iterations.  Twin: ``cpu.newton.reciprocal``."""
    return _unary("newton_reciprocal", x, R)


def newton_div(x, y, R):
    """x/y in R terms, x times the Newton reciprocal of y (y may have one term: division by a float).
    Twin: ``cpu.newton.div``."""
    return _binary("newton_div", x, y, R)


def newton_sqrt(x, R):
    """sqrt(x) in R terms by the Newton iteration for 1/sqrt(x).  Twin: ``cpu.newton.sqrt``."""
    return _unary("newton_sqrt", x, R)


def _unary(op, x, R):
    cp = _cupy()
    R = check_terms(R)
    _check_array(x, "x")
    count, n = x.shape
    out = cp.empty((count, R), dtype=x.dtype)
    _launch(build.instance(op, x.dtype, R, N=n), count, (x, out))
    return out


def renormalize(x, R):
    """x renormalized to R ulp-nonoverlapping terms.  Twin: ``cpu.kernels.renormalize``."""
    return _unary("renormalize", x, R)


def negate(x):
    """-x, every term negated (exact).  Twin: ``cpu.kernels.negate``."""
    cp = _cupy()
    _check_array(x, "x")
    count, n = x.shape
    out = cp.empty((count, n), dtype=x.dtype)
    _launch(build.instance("negate", x.dtype, n), count, (x, out))
    return out


def dd_add_sloppy(x, y):
    """Double-double x + y, QD sloppy addition, one thread per expansion.  Twin: ``baselines.cpu.dd_add_sloppy``."""
    return _thread_binary("dd_add_sloppy", x, y, 2)


def dd_add_ieee(x, y):
    """Double-double x + y, QD IEEE addition.  Twin: ``baselines.cpu.dd_add_ieee``."""
    return _thread_binary("dd_add_ieee", x, y, 2)


def dd_mul(x, y):
    """Double-double x * y.  Twin: ``baselines.cpu.dd_mul``."""
    return _thread_binary("dd_mul", x, y, 2)


def qd_add_sloppy(x, y):
    """Quad-double x + y, QD's sloppy addition.  Twin: ``baselines.cpu.qd_add_sloppy``."""
    return _thread_binary("qd_add_sloppy", x, y, 4)


def qd_add_ieee(x, y):
    """Quad-double x + y, QD-Add-Accurate.  Twin: ``baselines.cpu.qd_add_ieee``."""
    return _thread_binary("qd_add_ieee", x, y, 4)


def qd_mul(x, y):
    """Quad-double x * y, QD's accurate multiplication.  Twin: ``baselines.cpu.qd_mul``."""
    return _thread_binary("qd_mul", x, y, 4)


def certified_add(x, y, R):
    """x + y in R terms, certified (merge, VecSum, VecSumErrBranch).  Twin: ``baselines.cpu.certified_add``."""
    return _thread_binary("certified_add", x, y, R)


def certified_mul(x, y, R):
    """x * y in R terms, certified.  Twin: ``baselines.cpu.certified_mul``."""
    return _thread_binary("certified_mul", x, y, R)


def dd_add_sloppy_soa(x, y):
    """:func:`dd_add_sloppy` on (2, count) arrays.  Twin: ``baselines.cpu.dd_add_sloppy_soa``."""
    return _thread_binary("dd_add_sloppy_soa", x, y, 2)


def dd_add_ieee_soa(x, y):
    """:func:`dd_add_ieee` on (2, count) arrays.  Twin: ``baselines.cpu.dd_add_ieee_soa``."""
    return _thread_binary("dd_add_ieee_soa", x, y, 2)


def dd_mul_soa(x, y):
    """:func:`dd_mul` on (2, count) arrays.  Twin: ``baselines.cpu.dd_mul_soa``."""
    return _thread_binary("dd_mul_soa", x, y, 2)


def qd_add_sloppy_soa(x, y):
    """:func:`qd_add_sloppy` on (4, count) arrays.  Twin: ``baselines.cpu.qd_add_sloppy_soa``."""
    return _thread_binary("qd_add_sloppy_soa", x, y, 4)


def qd_add_ieee_soa(x, y):
    """:func:`qd_add_ieee` on (4, count) arrays.  Twin: ``baselines.cpu.qd_add_ieee_soa``."""
    return _thread_binary("qd_add_ieee_soa", x, y, 4)


def qd_mul_soa(x, y):
    """:func:`qd_mul` on (4, count) arrays.  Twin: ``baselines.cpu.qd_mul_soa``."""
    return _thread_binary("qd_mul_soa", x, y, 4)


def certified_add_soa(x, y, R):
    """:func:`certified_add` on (R, count) arrays.  Twin: ``baselines.cpu.certified_add_soa``."""
    return _thread_binary("certified_add_soa", x, y, R)


def certified_mul_soa(x, y, R):
    """:func:`certified_mul` on (R, count) arrays.  Twin: ``baselines.cpu.certified_mul_soa``."""
    return _thread_binary("certified_mul_soa", x, y, R)


def _thread_binary(op, x, y, R):
    """A one-thread-per-expansion baseline: both operands and the result have R terms, as rows
    (count, R), or as columns (R, count) for the ``_soa`` kernels."""
    cp = _cupy()
    R = check_terms(R)
    soa = build.OPERATIONS[op].layout == "soa"
    _check_array(x, "x", any_width=soa)
    _check_array(y, "y", any_width=soa)
    if x.dtype != y.dtype:
        raise TypeError(f"{op}: x and y must have the same dtype, got {x.dtype} and {y.dtype}")
    shape = (R, x.shape[1]) if soa else (x.shape[0], R)
    if x.shape != shape or y.shape != shape:
        raise ValueError(f"{op}: x and y must both have shape {'(R, count)' if soa else '(count, R)'} with R = {R}, "
                         f"got {x.shape} and {y.shape}")
    if x.device.id != y.device.id:
        raise ValueError(f"{op}: x is on device {x.device.id}, y on device {y.device.id}")
    out = cp.empty(shape, dtype=x.dtype)
    _launch(build.instance(op, x.dtype, R), shape[1] if soa else shape[0], (x, y, out))
    return out


def _binary(op, x, y, R):
    cp = _cupy()
    R = check_terms(R)
    _check_array(x, "x")
    _check_array(y, "y")
    if x.dtype != y.dtype:
        raise TypeError(f"{op}: x and y must have the same dtype, got {x.dtype} and {y.dtype}")
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"{op}: x and y must hold as many expansions, got {x.shape[0]} and {y.shape[0]}")
    if x.device.id != y.device.id:
        raise ValueError(f"{op}: x is on device {x.device.id}, y on device {y.device.id}")
    count = x.shape[0]
    out = cp.empty((count, R), dtype=x.dtype)
    _launch(build.instance(op, x.dtype, R, N=x.shape[1], M=y.shape[1]), count, (x, y, out))
    return out


def _launch(inst, count, arrays):
    """Run `inst` over `count` expansions: `arrays` are the inputs then the output."""
    cp = _cupy()
    if count == 0:
        return
    device = arrays[0].device.id
    if device != cp.cuda.Device().id:
        raise ValueError(f"{inst.op}: the arrays are on device {device}, the current device is {cp.cuda.Device().id}")
    (kernel,) = build.kernels(inst)
    mapping = build.OPERATIONS[inst.op].mapping
    per_block = build.BLOCK // inst.group_width if mapping == "group" else build.BLOCK
    total = count * inst.R if mapping == "term" else count
    blocks = min(-(-total // per_block), _max_blocks(device))
    kernel((blocks,), (build.BLOCK,), (*arrays, np.int64(count)))


@functools.cache
def _max_blocks(device_id: int) -> int:
    cp = _cupy()
    sms = cp.cuda.Device(device_id).attributes["MultiProcessorCount"]
    return max(1, sms * BLOCKS_PER_SM)


def _check_array(a, name, any_width=False):
    cp = _cupy()
    if not isinstance(a, cp.ndarray):
        raise TypeError(
            f"{name} must be a CuPy array, got {type(a).__module__}.{type(a).__name__} "
            "(NumPy arrays go to expansions.cpu.kernels)"
        )
    if a.ndim != 2:
        raise ValueError(f"{name} must be 2-D (count, terms), got shape {a.shape}")
    if a.dtype not in (np.float64, np.float32):
        raise TypeError(f"{name} must be float64 or float32, got {a.dtype}")
    if not any_width and not 1 <= a.shape[1] <= 32:
        raise ValueError(f"{name} must have 1..32 terms per expansion, got {a.shape[1]}")
    if not a.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous (use cupy.ascontiguousarray)")


def _cupy():
    try:
        import cupy  # optional dependency: CuPy is needed only on the GPU path
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise RuntimeError("expansions.cuda.launch needs CuPy (pip install 'expansions[cuda12]')") from exc
    return cupy


BASELINE_LAUNCHERS = (
    "dd_add_sloppy", "dd_add_ieee", "dd_mul", "qd_add_sloppy", "qd_add_ieee", "qd_mul", "certified_add",
    "certified_mul",
)

__all__ = ["add_safe", "add_fast", "sub_safe", "sub_fast", "mul_truncated", "newton_reciprocal", "newton_div",
           "newton_sqrt", "renormalize", "negate",
           *BASELINE_LAUNCHERS, *(f"{name}_soa" for name in BASELINE_LAUNCHERS)]
