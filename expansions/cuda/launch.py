"""Launchers of the GPU kernels, with the signatures of their CPU twins (:mod:`expansions.cpu.kernels`,
and :mod:`expansions.baselines.cpu` for the sequential baselines).

The launchers are generated from the table :data:`expansions.cuda.build.OPERATIONS` (the kernel, its
twin and its contract), one per kernel, with the names of the table: ``launch.add_safe(x, y, R)``,
``launch.renormalize(x, R)``, ``launch.negate(x)``, ``launch.dd_mul(x, y)``, ...  Each takes 2-D
C-contiguous CuPy arrays of terms, shape (count, n), float64 or float32, one expansion per row, and
returns a new (count, R) CuPy array with the same bits as the twin.  The operations whose table row
has ``renormalizes`` (additions, multiplication, Newton kernels) take ``renormalize=True`` too: one
kernel then returns the renormalized result (the twin, then ``renormalize``), which is how the
library runs them (:func:`expansions.dispatch.operation`).  The
``*_soa`` baselines take and return the transposed layout, shape (R, count): term k of every expansion
contiguous, which makes the loads of one-thread-per-expansion kernels coalesced.  Kernels run on the
current CuPy device and stream; they are compiled on first use (see :func:`expansions.cuda.build.kernels`).
"""

from __future__ import annotations

import functools

import numpy as np

from ..formats import check_terms
from . import build, elementary

#: Upper bound on blocks per launch, per streaming multiprocessor (the grid-stride loop does the rest).
BLOCKS_PER_SM = 32


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


def _binary(op, x, y, R, renormalize=False):
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
    _launch(build.instance(op, x.dtype, R, N=x.shape[1], M=y.shape[1], renormalize=renormalize), count, (x, y, out))
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
    info = build.OPERATIONS[inst.op]
    mapping = info.mapping
    per_block = build.BLOCK // inst.group_width if mapping == "group" else build.BLOCK
    total = count * inst.R if mapping == "term" else count
    blocks = min(-(-total // per_block), _max_blocks(device))
    table = (elementary.device_table(inst.R, inst.dtype),) if info.table else ()
    kernel((blocks,), (build.BLOCK,), (*arrays, np.int64(count), *table))


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


def _unary(op, x, R, renormalize=False):
    cp = _cupy()
    R = check_terms(R)
    _check_array(x, "x")
    count, n = x.shape
    out = cp.empty((count, R), dtype=x.dtype)
    _launch(build.instance(op, x.dtype, R, N=n, renormalize=renormalize), count, (x, out))
    return out


def _elementwise(op, x):
    """A kernel with R-term input and output, one thread per term (``mapping == "term"``)."""
    cp = _cupy()
    _check_array(x, "x")
    count, n = x.shape
    out = cp.empty((count, n), dtype=x.dtype)
    _launch(build.instance(op, x.dtype, n), count, (x, out))
    return out


def _elementary(op, R, *operands):
    """An elementary function (``table`` kernels): operands and result of R terms, one expansion per row."""
    cp = _cupy()
    R = check_terms(R)
    for name, a in zip("xy", operands):
        _check_array(a, name)
        if a.shape[1] != R:
            raise ValueError(f"{op}: {name} must have R = {R} terms, got {a.shape[1]}")
    first = operands[0]
    if any(a.dtype != first.dtype for a in operands):
        raise TypeError(f"{op}: the operands must have the same dtype")
    if any(a.shape[0] != first.shape[0] for a in operands):
        raise ValueError(f"{op}: the operands must hold as many expansions")
    if any(a.device.id != first.device.id for a in operands):
        raise ValueError(f"{op}: the operands are on different devices")
    count = first.shape[0]
    out = cp.empty((count, R), dtype=first.dtype)
    _launch(build.instance(op, first.dtype, R), count, (*operands, out))
    return out


def _launcher(op: build.Operation):
    """The launcher of ``op``, with the signature of its twin: ``f(x, y, R)`` for binary kernels,
    ``f(x, R)`` for unary ones, ``f(x)`` for term-wise ones, ``f(x, y)`` for the fixed-size baselines."""
    name = op.name
    if op.mapping == "thread" and op.terms:
        def launcher(x, y):
            return _thread_binary(name, x, y, op.terms)
    elif op.mapping == "thread":
        def launcher(x, y, R):
            return _thread_binary(name, x, y, R)
    elif op.table and op.operands == 2:
        def launcher(x, y, R):
            return _elementary(name, R, x, y)
    elif op.table:
        def launcher(x, R):
            return _elementary(name, R, x)
    elif op.mapping == "term":
        def launcher(x):
            return _elementwise(name, x)
    elif op.operands == 2 and op.renormalizes:
        def launcher(x, y, R, *, renormalize=False):
            return _binary(name, x, y, R, renormalize)
    elif op.operands == 2:
        def launcher(x, y, R):
            return _binary(name, x, y, R)
    elif op.renormalizes:
        def launcher(x, R, *, renormalize=False):
            return _unary(name, x, R, renormalize)
    else:
        def launcher(x, R):
            return _unary(name, x, R)
    launcher.__name__ = launcher.__qualname__ = name
    launcher.__doc__ = f"{op.doc}.  Twin: ``expansions.{op.twin}``."
    if op.renormalizes:
        launcher.__doc__ += ("  With ``renormalize=True`` the same kernel renormalizes its result in registers "
                             "(one launch; the bits of the twin followed by ``renormalize``, "
                             ":func:`expansions.dispatch.operation`).")
    return launcher


#: One launcher per kernel of :data:`expansions.cuda.build.OPERATIONS` (the reductions have their
#: multi-pass driver in :mod:`expansions.cuda.reduce_launch`).
LAUNCHERS = {name: _launcher(op) for name, op in build.OPERATIONS.items() if op.params != "RC"}
globals().update(LAUNCHERS)

__all__ = list(LAUNCHERS)
