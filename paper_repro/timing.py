"""Timing for the seed reproductions: median seconds of a call, with CUDA events on the GPU (after
warm-up) and ``time.perf_counter`` on the CPU."""

from __future__ import annotations

import statistics
import time

from bench.gpu import _time  # CUDA events on the current stream, the harness's own timing


def gpu_available() -> bool:
    try:
        import cupy  # optional dependency: CuPy is needed only on the GPU path

        return bool(cupy.cuda.is_available())
    except Exception:
        return False


def median_seconds(f, device: str = "cpu", repeats: int = 5, warmup: int = 1) -> float:
    """Median wall time of ``f()`` over ``repeats`` calls, after ``warmup`` calls."""
    if device == "cuda":
        return statistics.median(_time(f, repeats, warmup))
    for _ in range(warmup):
        f()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)
