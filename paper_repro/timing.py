"""Timing for the seed reproductions: median seconds of a call, with CUDA events on the GPU (after
warm-up) and ``time.perf_counter`` on the CPU."""

from __future__ import annotations

import statistics
import time


def gpu_available() -> bool:
    try:
        import cupy

        return bool(cupy.cuda.is_available())
    except Exception:
        return False


def median_seconds(f, device: str = "cpu", repeats: int = 5, warmup: int = 1) -> float:
    """Median wall time of ``f()`` over ``repeats`` calls, after ``warmup`` calls."""
    for _ in range(warmup):
        f()
    out = []
    if device == "cuda":
        import cupy

        stream = cupy.cuda.get_current_stream()
        for _ in range(repeats):
            start, stop = cupy.cuda.Event(), cupy.cuda.Event()
            start.record(stream)
            f()
            stop.record(stream)
            stop.synchronize()
            out.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
    else:
        for _ in range(repeats):
            t0 = time.perf_counter()
            f()
            out.append(time.perf_counter() - t0)
    return statistics.median(out)
