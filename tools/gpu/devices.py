"""The device a part runs on: :class:`Gpu` (CuPy and the library's launchers) on a GPU machine,
:class:`Rehearsal` without one (``--rehearse``): the kernels replaced by their NumPy twins, as
``tests/test_gpu_runbook.py`` does (the bit-exactness comparisons then compare the twins with the
compiled engine, which CI already does), and the timings by records marked ``rehearsal`` without
figures.  A rehearsal runs every part end to end and writes every file; its figures mean nothing and
say so."""

from __future__ import annotations

import contextlib
import dataclasses
import statistics
import time

import numpy as np

import expansions as ex
from bench import baselines_gpu, dw_gpu, gpu, model
from expansions import backends
from expansions.cuda import build, dw_kernels, launch
from expansions.dw import cpu as dw_twins
from paper_repro import seed004_gpu

from .common import MODEL_DEVICE


class Gpu:
    """The GPU through CuPy and the library's launchers."""

    rehearsal = False
    label = "GPU"

    def __init__(self):
        import cupy  # optional dependency: present on the GPU machine

        self.cp = cupy
        self.backend = backends.cuda

    def to_device(self, a):
        return self.cp.asarray(a)

    def to_host(self, a):
        return self.cp.asnumpy(a)

    def launcher(self, name: str):
        return launch.LAUNCHERS[name]

    def dw_run(self, name, *operands):
        return dw_kernels.run(name, *operands)

    def expansion(self, terms):
        """An ExpansionArray of ``terms`` (host) on the device."""
        return ex.from_terms(terms).to_device("cuda")

    def time(self, fn, repeats: int) -> list[float]:
        return gpu._time(fn, repeats)

    def facts(self) -> dict:
        return gpu.device_facts()

    def synchronize(self):
        self.cp.cuda.get_current_stream().synchronize()

    def copy_bandwidth(self, nbytes: int = 1 << 30, repeats: int = 5) -> float:
        """Device-to-device copy (cudaMemcpy, no kernel to compile), bytes read and written per second."""
        cp = self.cp
        a = cp.empty(nbytes, dtype=cp.uint8)
        b = cp.empty_like(a)
        secs = self.time(lambda: b.data.copy_from_device(a.data, nbytes), repeats)
        return 2 * nbytes / statistics.median(secs)


class Rehearsal:
    """No GPU: the kernels replaced by their NumPy twins, timings by records without figures."""

    rehearsal = True
    label = "rehearsal (no GPU: the NumPy twins in place of the kernels, no timings)"

    def __init__(self, backend=None):
        # the twins; the elementary functions on the engine's operations (their twins take seconds a call)
        self.backend = backend or dataclasses.replace(backends.cpu, elementary=backends.engine_backend().elementary)

    def to_device(self, a):
        return np.asarray(a)

    def to_host(self, a):
        return np.asarray(a)

    def launcher(self, name: str):
        module, _, fn = f"expansions.{build.OPERATIONS[name].twin}".rpartition(".")
        return getattr(__import__(module, fromlist=[fn]), fn)

    def dw_run(self, name, *operands):
        cols = [c for a in operands for c in ((a[:, 0], a[:, 1]) if a.ndim == 2 else (a,))]
        hi, lo = getattr(dw_twins, name)(*cols)
        return np.stack([hi, lo], axis=1)

    def expansion(self, terms):
        return ex.from_terms(terms)

    def time(self, fn, repeats: int) -> list[float]:
        out = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
        return out

    def facts(self) -> dict:
        d = model.DEVICES[MODEL_DEVICE]
        return {"name": f"rehearsal ({MODEL_DEVICE} figures of bench.model)", "sms": d["sms"],
                "clock_khz": d["clock_hz"] / 1e3, "bandwidth_gbs": d["bandwidth_bytes_s"] / 1e9,
                "fp64_lanes_per_sm": 64, "fp32_lanes_per_sm": 128, "compute_capability": "9.0"}

    def synchronize(self):
        pass

    def copy_bandwidth(self, nbytes: int = 1 << 24, repeats: int = 3) -> float:
        return float("nan")

    @contextlib.contextmanager
    def installed(self):
        """The benchmark harnesses' GPU measurements replaced by records without figures (their
        callers' code runs as on a GPU)."""
        def fake(*args, **kwargs):
            return {"rehearsal": True, "note": "rehearsal: not measured"}

        saved = [(m, n, getattr(m, n)) for m, n in ((gpu, "measure"), (baselines_gpu, "measure"),
                                                     (dw_gpu, "measure"), (seed004_gpu, "measure"))]
        for m, n, _ in saved:
            setattr(m, n, fake)
        try:
            yield self
        finally:
            for m, n, v in saved:
                setattr(m, n, v)


def device(rehearse: bool):
    return Rehearsal() if rehearse else Gpu()

