"""CPU twin of the reduction kernels ``reduce_sum`` and ``reduce_dot`` (``expansions/cuda/reduce.cuh``).

Every reduction of n expansions is the canonical pairwise tree "adjacent pairs, odd last carried",
whose node is ``renormalize(add_safe(a, b, R), R)`` (:func:`node`).  A pass reduces, for each of
``batch`` rows, every aligned chunk of C = 2**k consecutive elements with a binary-counter stack
(:func:`reduce_pass`, the twin of ``reduce_body``); :func:`reduce` repeats passes on the partials
until one element per row remains (the twin of ``expansions.cuda.reduce_launch.reduce``).  Aligned
power-of-two chunks make every pass return a level of the canonical tree (see the proof at the top
of ``reduce.cuh``), so the result does not depend on the chunk sizes: the twin's default (C = 2,
one level per pass, each a few calls on wide arrays; larger only to bound memory, see
:func:`cpu_chunk`) and the GPU's give the same bits.

The kernel loops over the elements j = 0 .. C-1 of its chunk; the twin runs the same loop once for
all chunks of all rows at the same time (lanes on the last axis, groups on the first), calling the
twins :func:`~expansions.cpu.kernels.add_safe`, :func:`~expansions.cpu.kernels.mul_truncated` and
:func:`~expansions.cpu.kernels.renormalize`.  Where a kernel group computes a node that it then
discards (its chunk has ended while others of its warp go on), the twin computes nothing: every
node is a row-wise function, so the bits kept are the same.  Array-module generic (NumPy or CuPy).
"""

from __future__ import annotations

import numpy as np

from ..formats import check_terms, group_width
from .kernels import add_safe, mul_truncated, renormalize
from .lanes import array_module

#: Lane values (groups x W) that a CPU pass may hold in one array: the automatic chunk size grows
#: beyond 2 only to keep a pass's arrays under this (memory), e.g. for large matrix products.
CPU_LANES_PER_PASS = 1 << 22


def node(a, b, R):
    """Twin of ``reduce_node<T, R, W>``: ``renormalize(add_safe(a, b, R), R)`` on (N, R) arrays."""
    return renormalize(add_safe(a, b, R), R)


def product(x, y, R):
    """Twin of ``reduce_product<T, R, W>``: ``renormalize(mul_truncated(x, y, R), R)``."""
    return renormalize(mul_truncated(x, y, R), R)


def chunk_levels(C: int) -> int:
    """Stack slots of a chunk of C = 2**k elements, levels 0..k (``chunk_levels`` of reduce.cuh)."""
    return int(C).bit_length()


def check_chunk(C) -> int:
    C = int(C)
    if C < 2 or C & (C - 1):
        raise ValueError(f"the chunk size must be a power of two >= 2, got {C}")
    return C


def check_addressing(count: int, batch: int, n: int, n2: int, strides, name: str = "x"):
    """Raise unless every element ``b1*s1 + b2*s2 + j*sj`` of rows b < batch, (b1, b2) = divmod(b, n2),
    j < n lies in 0..count-1 (strides >= 0): the kernels read no memory outside the array."""
    if batch < 0 or n < 0 or n2 < 1:
        raise ValueError(f"bad reduction shape: batch = {batch}, n = {n}, n2 = {n2}")
    s1, s2, sj = (int(s) for s in strides)
    if min(s1, s2, sj) < 0:
        raise ValueError(f"{name}: strides must be >= 0, got {strides}")
    if batch == 0 or n == 0:
        return
    b1, b2 = divmod(batch - 1, n2)  # the last row; the row before b1's block ends its b2 range
    last = max(b1 * s1 + b2 * s2, (b1 - 1) * s1 + (n2 - 1) * s2 if b1 else 0) + (n - 1) * sj
    if last >= count:
        raise ValueError(f"{name}: the reduction addresses expansion {last}, the array holds {count}")


def reduce_pass(x, batch, n, n2, xs, R, C, y=None, ys=None):
    """One pass; twin of kernel ``reduce_sum<T, R, C>`` (``y`` None) or ``reduce_dot<T, R, C>``
    (``reduce_body`` in ``expansions/cuda/reduce.cuh``).

    ``x`` (and ``y``): (count, R) arrays of expansions.  Row b < ``batch`` has ``n`` elements; with
    (b1, b2) = divmod(b, n2), element j is ``x[b1*xs[0] + b2*xs[1] + j*xs[2]]``, or, with ``y``,
    ``product(x[...], y[b1*ys[0] + b2*ys[1] + j*ys[2]])``.  Returns (batch * ceil(n / C), R): row
    ``b * chunks + c`` is the canonical tree of chunk c (elements cC .. cC+C-1) of row b."""
    xp = array_module(x)
    R = check_terms(R)
    C = check_chunk(C)
    n, batch, n2 = int(n), int(batch), int(n2)
    check_addressing(x.shape[0], batch, n, n2, xs, "x")
    if y is not None:
        check_addressing(y.shape[0], batch, n, n2, ys, "y")
    chunks = -(-n // C)
    G = batch * chunks
    L = chunk_levels(C)
    g = xp.arange(G, dtype=xp.int64)  # the lane groups: index of the for_each_group loop
    b = g // max(chunks, 1)
    first = (g - b * chunks) * C
    b1 = b // n2
    b2 = b - b1 * n2
    xbase = b1 * int(xs[0]) + b2 * int(xs[1])
    ybase = b1 * int(ys[0]) + b2 * int(ys[1]) if y is not None else None
    m = xp.minimum(n - first, C)
    slot = [xp.zeros((G, R), dtype=x.dtype) for _ in range(L)]
    for j in range(C):
        push = j < m
        if not push.any():  # the kernel: `if (!warp_any(push)) break;`
            break
        rows = xp.flatnonzero(push)
        e = first[rows] + j
        carry = x[xbase[rows] + e * int(xs[2])]
        if y is not None:
            carry = product(carry, y[ybase[rows] + e * int(ys[2])], R)
        level = 0
        while level < L - 1 and (j >> level) & 1:
            carry = node(slot[level][rows], carry, R)
            level += 1
        slot[level][rows] = carry
    acc = xp.zeros((G, R), dtype=x.dtype)
    have = xp.zeros(G, dtype=bool)
    for level in range(L):
        occupied = ((m >> level) & 1) != 0
        merge = occupied & have
        if merge.any():
            rows = xp.flatnonzero(merge)
            acc[rows] = node(slot[level][rows], acc[rows], R)
        take = occupied & ~have
        acc[take] = slot[level][take]
        have = have | occupied
    return acc


def _chunk_of(chunk, k):
    """The chunk size of pass k: ``chunk`` itself, or element k of a sequence (its last one beyond)."""
    if isinstance(chunk, (list, tuple)):
        return chunk[min(k, len(chunk) - 1)]
    return chunk


def cpu_chunk(batch: int, n: int, R: int) -> int:
    """The automatic chunk size of a CPU pass: 2 (one tree level per pass: the fewest, widest array
    operations), doubled while the pass would hold more than :data:`CPU_LANES_PER_PASS` lane values
    and the chunk is shorter than the rows."""
    limit = max(1, CPU_LANES_PER_PASS // group_width(R))
    C = 2
    while C < n and batch * -(-n // C) > limit:
        C *= 2
    return C


def reduce(x, batch, n, R, n2=1, xs=None, y=None, ys=None, chunk=None):
    """The canonical tree of each of ``batch`` rows of ``n`` elements: (batch, R).  Twin of
    ``expansions.cuda.reduce_launch.reduce`` (the same passes, on NumPy or CuPy arrays).

    The first pass reads the elements as :func:`reduce_pass` says (``xs`` defaults to contiguous rows,
    ``(n, 0, 1)`` with ``n2 = 1``; with ``y``, the elements are products); later passes sum the
    contiguous partials, ceil(n / C) per row, until one is left.  ``chunk``: C of every pass, or a
    sequence of per-pass sizes (the last one repeats), or None: :func:`cpu_chunk` for each pass.
    n = 0 gives +0; n = 1 gives the element itself (the product, with ``y``)."""
    xp = array_module(x)
    R = check_terms(R)
    batch, n = int(batch), int(n)
    if xs is None:
        xs, n2 = (n, 0, 1), 1
    if y is not None and ys is None:
        raise ValueError("ys (the strides of y) must be given with y")
    if n == 0 or batch == 0:
        return xp.zeros((batch, R), dtype=x.dtype)
    with np.errstate(all="ignore"):
        C = check_chunk(cpu_chunk(batch, n, R) if chunk is None else _chunk_of(chunk, 0))
        out = reduce_pass(x, batch, n, n2, xs, R, C, y, ys)
        n, k = -(-n // C), 1
        while n > 1:
            C = check_chunk(cpu_chunk(batch, n, R) if chunk is None else _chunk_of(chunk, k))
            out = reduce_pass(out, batch, n, 1, (n, 0, 1), R, C)
            n, k = -(-n // C), k + 1
    return out


__all__ = ["node", "product", "reduce_pass", "reduce", "check_addressing", "chunk_levels", "cpu_chunk"]
