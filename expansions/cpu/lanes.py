"""Lane-group primitives of the GPU kernels, on NumPy arrays whose last axis holds the W lanes of one
expansion's group (W = next power of two >= R).  Each mirrors one CUDA intrinsic of
``expansions/cuda/lanes.cuh`` with ``width = W``:

* :func:`shfl_up` is ``__shfl_up_sync(FULL, v, d, W)``: lane l gets lane l-d; lanes l < d keep theirs.
* :func:`shfl_down` is ``__shfl_down_sync(FULL, v, d, W)``: lane l gets lane l+d; lanes l >= W-d keep theirs.
* :func:`shfl` is ``__shfl_sync(FULL, v, src, W)``: every lane gets lane ``src`` of its group.
* :func:`group_any` is ``group_any<R>(pred)`` of the kernels: the OR of the predicate over the R lanes
  of the group that hold terms (padding lanes R..W-1 never vote).
"""

from __future__ import annotations

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
