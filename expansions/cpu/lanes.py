"""Lane-group primitives of the GPU kernels, on NumPy arrays whose last axis holds the W lanes of one
expansion's group (W = next power of two >= R).  Each mirrors one CUDA intrinsic of
``expansions/cuda/lanes.cuh`` with ``width = W``:

* :func:`shfl_up` is ``__shfl_up_sync(FULL, v, d, W)``: lane l gets lane l-d; lanes l < d keep theirs.
* :func:`shfl_down` is ``__shfl_down_sync(FULL, v, d, W)``: lane l gets lane l+d; lanes l >= W-d keep theirs.
* :func:`shfl` is ``__shfl_sync(FULL, v, src, W)``: every lane gets lane ``src`` of its group.
* :func:`group_any` is ``group_any<R>(pred)`` of the kernels: the OR of the predicate over the R lanes
  of the group that hold terms (padding lanes R..W-1 never vote).

The warp-level control flow of the kernels (the twins have no warps: one row is one group) is written
with the functions of the second part, which cost the twins one context-variable lookup per call and
let a :class:`Recorder` (:func:`recording`; the instruction model of ``bench/model``) see what every
warp of the kernel votes and runs:

* :func:`rounds` is a data-dependent loop of the kernels, ``for (k = 0; k < n; ++k) { if
  (!warp_any(p)) break; ... }``, whose exit test is :func:`round_any`;
* :func:`warp_any` is a ``warp_any(p)`` the kernel branches on (as the twin does, on every row);
* :func:`record_vote` is a vote of the kernel that the twin need not take, as it gives the same bits
  either way (the sorting network's ``warp_needs_sort``): its predicate is computed only while recording;
* :func:`branch` is the code under ``if (warp_any(p))``: the twin runs it on the rows of ``p``, the
  kernel (and the twin while recording) on every group of the warps that take it;
* :func:`entry` marks the entry of a kernel's group function, for the work it does whatever the votes.
"""

from __future__ import annotations

import contextlib
import contextvars

import numpy as np


def array_module(a):
    """NumPy, or CuPy for CuPy arrays: the twins run unchanged on either (same operations).

    On CuPy the twins equal the NumPy twins except on float32 subnormals: CuPy compiles its own
    element-wise kernels with flush-to-zero for float32, so tests that run the twins on the GPU keep
    float32 terms and products above the subnormal range."""
    if type(a) is np.ndarray:  # the common case first: this runs on every operation
        return np
    if type(a).__module__.split(".")[0] == "cupy":
        import cupy  # optional dependency: CuPy is needed only on the GPU path

        return cupy
    return np


def lane_ids(W: int, xp=np):
    return xp.arange(W)


def shfl_up(v: np.ndarray, d: int) -> np.ndarray:
    out = v.copy()
    out[..., d:] = v[..., :-d]
    return out


def shfl_down(v: np.ndarray, d: int) -> np.ndarray:
    out = v.copy()
    out[..., :-d] = v[..., d:]
    return out


def shfl(v, src: int):
    return array_module(v).repeat(v[..., src : src + 1], v.shape[-1], axis=-1)


def group_any(pred: np.ndarray, R: int) -> np.ndarray:
    return pred[..., :R].any(axis=-1)


def load_lanes(x: np.ndarray, W: int) -> np.ndarray:
    """Terms of shape (N, n) into lanes (N, W): lane l holds term l, padding lanes hold +0."""
    N, n = x.shape
    out = array_module(x).zeros((N, W), dtype=x.dtype)
    k = min(n, W)
    out[:, :k] = x[:, :k]
    return out


# ---------------------------------------------------------------------------------------------
# warp-level control flow, and its recorder


class Recorder:
    """What the twins report while :func:`recording` (the default methods ignore it all).  Rows are
    groups in the order of the array the outermost call of a twin got; ``site`` names the kernel's
    vote or function (``"add_fast"``, ``"propagate"``, ``"renormalize.sort"``, ...), ``info`` its sizes.

    * ``rounds(n, site, info)``: an iterator over the rounds of a data-dependent loop (the twin breaks
      out of it at the first :func:`round_any` that returns False; any other break closes it too);
    * ``round_any(act, site, info)``: that loop's exit vote, ``act`` the groups' predicate;
    * ``warp_any(act, site, info)``: a vote the kernel branches on;
    * ``branch(taken)``: a context manager around the code the kernel runs in the warps where some
      group has ``taken``;
    * ``entry(site, info)``: the entry of a group function."""

    def rounds(self, n: int, site: str, info: dict):
        return range(n)

    def round_any(self, act, site: str, info: dict) -> None:
        pass

    def warp_any(self, act, site: str, info: dict) -> None:
        pass

    def branch(self, taken):
        return contextlib.nullcontext()

    def entry(self, site: str, info: dict) -> None:
        pass


_RECORDER: contextvars.ContextVar = contextvars.ContextVar("expansions_lanes_recorder", default=None)


@contextlib.contextmanager
def recording(recorder: Recorder):
    """Report the twins' warp-level events to ``recorder`` inside the block (bits unchanged)."""
    token = _RECORDER.set(recorder)
    try:
        yield recorder
    finally:
        _RECORDER.reset(token)


def rounds(n: int, site: str, **info):
    """The rounds 0..n-1 of a data-dependent loop of the kernels (see :func:`round_any`)."""
    rec = _RECORDER.get()
    return range(n) if rec is None else rec.rounds(n, site, info)


def round_any(act, site: str, **info) -> bool:
    """The exit test at the head of a round of :func:`rounds`, ``if (!warp_any(p)) break;``: whether
    some group (row) has ``act``; the twin breaks when none has."""
    rec = _RECORDER.get()
    if rec is not None:
        rec.round_any(act, site, info)
    return bool(act.any())


def warp_any(act, site: str | None = None, **info) -> bool:
    """A vote the kernel branches on, ``warp_any(p)``: whether some group (row) has ``act``.  ``site``:
    its name for a recorder (None: not one of the kernel's votes, nothing recorded)."""
    if site is not None:
        rec = _RECORDER.get()
        if rec is not None:
            rec.warp_any(act, site, info)
    return bool(act.any())


def record_vote(site: str, predicate, **info) -> None:
    """A vote of the kernel the twin does not take (it computes the same bits either way): the groups'
    predicate ``predicate()`` is computed and recorded only while recording."""
    rec = _RECORDER.get()
    if rec is not None:
        rec.warp_any(predicate(), site, info)


@contextlib.contextmanager
def branch(taken):
    """The code the kernel runs under ``if (warp_any(taken))``: yields the rows it runs on, ``taken``
    (the twin computes the rows that need it, the others keep their values), or while recording every
    row (the kernel runs every group of a warp that takes the branch; same bits for the taken rows)."""
    rec = _RECORDER.get()
    if rec is None:
        yield taken
        return
    with rec.branch(taken):
        yield slice(None)


def entry(site: str, **info) -> None:
    """The entry of a kernel's group function ``site`` with the sizes ``info``, for a recorder."""
    rec = _RECORDER.get()
    if rec is not None:
        rec.entry(site, info)
