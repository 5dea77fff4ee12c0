"""A traced program as one compiled loop over blocks of expansions: the block engine's operations
(:mod:`expansions.engine.fused`, at R = 2 also :mod:`expansions.engine.fused_dw`) run node after node
on a block's rows, every intermediate in the thread's workspace.

The program is data, not code: :func:`run` takes it as a table of instructions (one row each, built
by :mod:`expansions.programs.loop`) and the addresses of its arrays, and its loop, compiled once per
dtype and kept in numba's cache on disk, runs every program.  (A loop generated per program would be
compiled per program: numba compiles each new function together with the engine's block functions it
calls, seconds to tens of seconds whatever the program's size.)

The loop is the engine's (:func:`expansions.engine.fused._blocks`; the block operations in
:mod:`expansions.engine.blocks`, ``renorm``, ``arithmetic`` and ``newton``): the expansions in blocks
of L (the SIMD width), chunks of blocks over the cores (``prange``; one thread below
``fused.SERIAL_BELOW`` expansions), one workspace per chunk (rows of L terms: row t of a value holds
term t of the block's L expansions).  The instructions, each on rows of the workspace (every value
has R rows at a multiple of R; a row is not reused before the value in it has been read for the last
time):

* ``SPLAT a, r``: rows r.. := the terms of array a (one element: a scalar, a 0-d expansion) in every
  lane; run once per chunk, before the blocks;
* ``LOAD a, r``: rows r.. := the block's terms of array a (``blocks.load_block``); ``STORE r, a``: the
  block's terms of array a := rows r.. (``blocks.store_block``): each input read once, each output
  written once;
* ``NEGATE x, r``: rows r.. := rows x.. with the sign flipped (``blocks.negate_rows``);
* ``OPERATION op, x, n, y, m, renormalize, r``: ``fused.operation_block`` (the additions, the
  multiplication, the Newton reciprocal, division and square root, renormalized or not), the function
  the engine's own loop runs for each of its operations;
* ``DOUBLE_WORD variant, x, y, negate, r``: the library's R = 2 operation :data:`VARIANTS` [variant]
  (``fused_dw.rows_block``: the engine's R = 2 loop on a block's rows).

Same operations on the same operands as the engine's operations one by one: the same bits.
"""

from __future__ import annotations

import numpy as np
from numba import carray, njit, prange

from ..dw import R2_DEFAULTS
from .blocks import INNER, lanes_of, load_block, negate_rows, splat_block, store_block, workspace
from .dw import _OP
from .fused import _chunks, operation_block, operation_rows
from .fused_dw import rows_block
from .kernels import PARALLEL
from .simd import pointer_at

#: The instructions (column 0 of a program's table; the operands follow, see the module docstring).
SPLAT, LOAD, STORE, NEGATE, OPERATION, DOUBLE_WORD = range(6)
#: Columns of a program's table.
WIDTH = 8
#: The R = 2 operations the loop runs: (double-word algorithm, operation kind, renormalized), the
#: library's defaults (``expansions.dw.R2_DEFAULTS``); each is compiled into the loop (the algorithm
#: is a compile-time constant of ``fused_dw.rows_block``).
VARIANTS = ((R2_DEFAULTS["add"], 0, True), (R2_DEFAULTS["add"], 0, False), (R2_DEFAULTS["mul"], 1, True),
            (R2_DEFAULTS["mul"], 1, False), (R2_DEFAULTS["div"], 2, True), (R2_DEFAULTS["div"], 2, False),
            (R2_DEFAULTS["sqrt"], 3, False))
_ADD, _MUL, _DIV, _SQRT = (_OP[R2_DEFAULTS[k]] for k in ("add", "mul", "div", "sqrt"))


@njit(**INNER)
def _double_word(variant, ws, x, y, negate, out):
    """:data:`VARIANTS` [variant] on rows x, y into rows out (one branch per variant: the algorithm's
    number must be a constant)."""
    if variant == 0:
        rows_block(_ADD, 0, True, ws, x, y, negate, out)
    elif variant == 1:
        rows_block(_ADD, 0, False, ws, x, y, negate, out)
    elif variant == 2:
        rows_block(_MUL, 1, True, ws, x, y, negate, out)
    elif variant == 3:
        rows_block(_MUL, 1, False, ws, x, y, negate, out)
    elif variant == 4:
        rows_block(_DIV, 2, True, ws, x, y, negate, out)
    elif variant == 5:
        rows_block(_DIV, 2, False, ws, x, y, negate, out)
    else:
        rows_block(_SQRT, 3, False, ws, x, y, negate, out)


@njit(**INNER)
def _program_blocks(code, addresses, counts, like, R, rows, count, steps, kmin, kmax, lo, hi):
    """Blocks lo .. hi-1 of the program ``code`` on one thread with one workspace (``rows`` rows for
    the values, then the scratch of ``fused.operation_block``)."""
    arrays = [carray(pointer_at(like, addresses[a]), (counts[a], R)) for a in range(len(addresses))]
    L = lanes_of(like)
    no = R < 0
    buf, ws = workspace(rows + operation_rows(R, R, R), like)
    for i in range(code.shape[0]):  # the operands of one element, once per chunk
        if code[i, 0] == SPLAT:
            splat_block(arrays[code[i, 1]], R, ws, code[i, 2])
    for b in range(lo, hi):
        first = b * L
        for i in range(code.shape[0]):
            c = code[i]
            kind = c[0]
            if kind == LOAD:
                load_block(arrays[c[1]], first, count, R, no, ws, c[2])
            elif kind == STORE:
                store_block(ws, c[1], R, arrays[c[2]], first, count)
            elif kind == NEGATE:
                negate_rows(ws, c[1], R, c[2])
            elif kind == OPERATION:
                operation_block(c[1], ws, c[2], c[3], c[4], c[5], R, c[6] != 0, steps, kmin, kmax, c[7], rows)
            elif kind == DOUBLE_WORD:
                _double_word(c[1], ws, c[2], c[3], c[4] != 0, c[5])
    buf[0] = 0  # the workspace stays alive until here (ws points into it)


@njit(**PARALLEL)
def _run(code, addresses, counts, like, R, rows, count, steps, kmin, kmax, chunks):
    """All blocks of the program: on this thread (chunks <= 1), else in ``chunks`` chunks of blocks
    over the cores (``prange``)."""
    blocks = (count + lanes_of(like) - 1) // lanes_of(like)
    if chunks <= 1:
        _program_blocks(code, addresses, counts, like, R, rows, count, steps, kmin, kmax, 0 * blocks, blocks)
        return
    for c in prange(chunks):
        _program_blocks(code, addresses, counts, like, R, rows, count, steps, kmin, kmax, c * blocks // chunks,
                        (c + 1) * blocks // chunks)


def run(code: np.ndarray, arrays: list, R: int, rows: int, count: int, steps: np.ndarray, kmin: int, kmax: int):
    """Run the program ``code`` ((instructions, :data:`WIDTH`) int64) on ``arrays`` (C-contiguous
    (count, R) or (1, R) terms of one dtype, the inputs and the outputs, numbered as ``code`` numbers
    them; kept alive by the caller) with ``rows`` rows of values per workspace, on ``count``
    expansions; ``steps``, ``kmin``, ``kmax``: the Newton operations' (``fused.run``)."""
    if not count:
        return
    addresses = np.array([a.ctypes.data for a in arrays], dtype=np.int64)
    counts = np.array([a.shape[0] for a in arrays], dtype=np.int64)
    for a in arrays:
        if not (a.flags.c_contiguous and a.ndim == 2 and a.shape[1] == R and a.dtype == arrays[0].dtype):
            raise ValueError("program arrays: C-contiguous (count, R) terms of one dtype")
    _run(code, addresses, counts, arrays[-1], R, rows, count, steps, kmin, kmax, _chunks(count))


run_program = run  # its name in expansions.engine
