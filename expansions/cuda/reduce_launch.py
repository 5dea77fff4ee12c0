"""Launchers of the reduction kernels ``reduce_sum`` and ``reduce_dot`` (``expansions/cuda/reduce.cuh``),
with the signatures of their CPU twins (:mod:`expansions.cpu.reduce`).

:func:`reduce_pass` runs one kernel pass; :func:`reduce` repeats passes until one element per row
is left.  Every pass returns a level of the canonical pairwise tree (aligned power-of-two chunks),
so the result is the same bits whatever the chunk sizes, and the same bits as the twin
(:func:`expansions.cpu.reduce.reduce`).  Arrays are 2-D C-contiguous CuPy arrays of R-term
expansions, on the current device and stream; kernels are compiled on first use.
"""

from __future__ import annotations

import numpy as np

from ..cpu.reduce import _chunk_of, check_addressing, check_chunk
from ..formats import check_terms, group_width
from . import build
from .launch import _check_array, _cupy, _max_blocks

#: Chunk sizes the launcher chooses from (each is one compiled instance per R, dtype and mode).
CHUNKS = (4, 16, 64, 256)


def reduce_pass(x, batch, n, n2, xs, R, C, y=None, ys=None):
    """One pass of ``reduce_sum<T, R, C>`` (``y`` None) or ``reduce_dot<T, R, C>``: (batch * ceil(n / C), R),
    row ``b * chunks + c`` the canonical tree of chunk c of row b.  Addressing as in the twin
    :func:`expansions.cpu.reduce.reduce_pass`."""
    cp = _cupy()
    R = check_terms(R)
    C = check_chunk(C)
    batch, n, n2 = int(batch), int(n), int(n2)
    arrays = (x,) if y is None else (x, y)
    for a, name in zip(arrays, ("x", "y")):
        _check_array(a, name)
        if a.shape[1] != R:
            raise ValueError(f"{name} must have R = {R} terms per expansion, got {a.shape[1]}")
    if y is not None:
        if x.dtype != y.dtype:
            raise TypeError(f"x and y must have the same dtype, got {x.dtype} and {y.dtype}")
        if x.device.id != y.device.id:
            raise ValueError(f"x is on device {x.device.id}, y on device {y.device.id}")
    check_addressing(x.shape[0], batch, n, n2, xs, "x")
    if y is not None:
        check_addressing(y.shape[0], batch, n, n2, ys, "y")
    chunks = -(-n // C)
    count = batch * chunks
    out = cp.empty((count, R), dtype=x.dtype)
    if count == 0:
        return out
    device = x.device.id
    if device != cp.cuda.Device().id:
        raise ValueError(f"the arrays are on device {device}, the current device is {cp.cuda.Device().id}")
    op = "reduce_sum" if y is None else "reduce_dot"
    inst = build.instance(op, x.dtype, R, C=C)
    (kernel,) = build.kernels(inst)
    per_block = build.BLOCK // inst.group_width
    blocks = min(-(-count // per_block), _max_blocks(device))
    ints = [np.int64(v) for v in (batch, n, n2, *xs)]
    if y is None:
        kernel((blocks,), (build.BLOCK,), (x, out, *ints))
    else:
        kernel((blocks,), (build.BLOCK,), (x, y, out, *ints, *(np.int64(v) for v in ys)))
    return out


def choose_chunk(batch: int, n: int, R: int, device_id: int | None = None) -> int:
    """The chunk size of a pass: the largest of :data:`CHUNKS` that still gives at least as many lane
    groups as the device holds resident threads (2048 per SM) / W, so that fewer passes and smaller
    partial arrays do not cost parallelism; the smallest one if none does."""
    cp = _cupy()
    dev = cp.cuda.Device() if device_id is None else cp.cuda.Device(device_id)
    target = dev.attributes["MultiProcessorCount"] * 2048 // group_width(R)
    for C in sorted(CHUNKS, reverse=True):
        if batch * -(-n // C) >= target:
            return C
    return CHUNKS[0]


def reduce(x, batch, n, R, n2=1, xs=None, y=None, ys=None, chunk=None):
    """The canonical tree of each of ``batch`` rows of ``n`` elements: (batch, R).  Twin:
    :func:`expansions.cpu.reduce.reduce` (same arguments; ``chunk`` None: :func:`choose_chunk` per pass)."""
    cp = _cupy()
    R = check_terms(R)
    batch, n = int(batch), int(n)
    if xs is None:
        xs, n2 = (n, 0, 1), 1
    if y is not None and ys is None:
        raise ValueError("ys (the strides of y) must be given with y")
    if n == 0 or batch == 0:
        _check_array(x, "x")
        return cp.zeros((batch, R), dtype=x.dtype)
    k = 0
    while True:
        C = choose_chunk(batch, n, R, x.device.id) if chunk is None else _chunk_of(chunk, k)
        x = reduce_pass(x, batch, n, n2, xs, R, C, y, ys)
        n, k = -(-n // C), k + 1
        if n == 1:
            return x
        n2, xs, y, ys = 1, (n, 0, 1), None, None


__all__ = ["reduce_pass", "reduce", "choose_chunk", "CHUNKS"]
