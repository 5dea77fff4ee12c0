"""What every part of the runbook shares: the paths, the fixed costs of the estimates, a part's
:class:`Context` and its :class:`Part` record, the committed measurements and the instruction model's
bounds, the pools' schedule, the bit comparison of results, and the command a part runs.

Nothing here imports another module of the runbook.
"""

from __future__ import annotations

import functools
import heapq
import json
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
#: The committed measurements (``compile.json``, ``cpu.json``) and their logs and reports.
BUDGET = ROOT / "tools" / "gpu_budget"
MODEL_JSON = ROOT / "bench" / "results" / "model_sm90.json"
MODEL_DEVICE = "H100 SXM"

#: Fixed costs of the estimates, in seconds, that cannot be measured without a GPU (assumptions, kept
#: on the generous side): CUDA context creation and CuPy's first calls; loading one CUBIN; one launch
#: with its synchronization; host <-> device bytes per second (pageable memory over PCIe).
CUDA_INIT_S = 3.0
MODULE_LOAD_S = 0.02
LAUNCH_S = 30e-6
TRANSFER_BPS = 10e9
#: CuPy's own kernels (a comparison, ``isfinite``) compiled on first use by CuPy, each.
CUPY_KERNEL_S = 1.5
#: Seconds a part keeps in hand before the deadline to write its file.
RESERVE_S = 5.0

#: Processes of the compile pool on the GPU machine (its 16 CPU cores).
GPU_MACHINE_JOBS = 16
#: Processes of the CPU pool on the GPU machine (16 cores, one drives the GPU).
GPU_MACHINE_CPU_JOBS = 15

DTYPES = ("float64", "float32")


# ---------------------------------------------------------------------------------------------
# a part and what it runs with


@dataclass
class Context:
    """What a part runs with: the result folder, the absolute deadline (``time.time()``), the device,
    the size scale (1 on a GPU; a rehearsal may use less)."""

    out: Path
    deadline: float
    device: object
    scale: float = 1.0

    def left(self) -> float:
        return self.deadline - time.time()

    def save(self, name: str, record: dict) -> None:
        """Write ``OUT/<name>.json`` atomically (the part's file, rewritten as the part goes)."""
        self.out.mkdir(parents=True, exist_ok=True)
        tmp = self.out / f".{name}.json.tmp"
        tmp.write_text(json.dumps(record, indent=1, default=_json_default) + "\n")
        os.replace(tmp, self.out / f"{name}.json")

    def size(self, n: int, least: int = 8) -> int:
        return max(least, int(n * self.scale))


def _json_default(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, np.ndarray):
        return v.tolist()
    return str(v)


@dataclass(frozen=True)
class Part:
    """One part of a stage.  ``needs``: ``gpu`` (skipped, with the reason, when CuPy sees none and this
    is no rehearsal) or ``none``."""

    name: str
    stage: str
    doc: str
    run: Callable
    units: Callable = field(default=lambda: [])
    estimate: Callable = field(default=lambda budget: {"seconds": 0.0})
    needs: str = "gpu"


def part(parts: dict, name, stage, doc, units=None, estimate=None, needs="gpu"):
    """Decorator: the function is the run of part ``name``, recorded in ``parts`` (its module's table,
    which :mod:`tools.gpu.stages` puts in its stage's order)."""
    def register(fn):
        parts[name] = Part(name, stage, doc, fn, units or (lambda: []), estimate or (lambda b: {"seconds": 0.0}),
                           needs)
        return fn

    return register


# ---------------------------------------------------------------------------------------------
# the estimates' figures


def load_budget() -> dict:
    """The committed measurements: ``{"compile": tools/gpu_budget/compile.json, "cpu": cpu.json}``."""
    out = {}
    for key in ("compile", "cpu"):
        path = BUDGET / f"{key}.json"
        out[key] = json.loads(path.read_text()) if path.exists() else {}
    return out


@functools.cache
def model_bounds() -> dict:
    """{name expression: bound in Mop/s on the H100 SXM} of the committed instruction model."""
    if not MODEL_JSON.exists():
        return {}
    recs = json.loads(MODEL_JSON.read_text())["records"]
    return {r["kernel"]: r["bound"][MODEL_DEVICE]["mops"] for r in recs if "bound" in r}


def device_seconds(kernel: str, operations: float, fallback_mops: float = 50.0) -> float:
    """Seconds of ``operations`` operations of ``kernel`` at its modeled bound (an upper bound of its
    speed, so a lower bound of the time); kernels the model does not hold get ``fallback_mops``."""
    return operations / (model_bounds().get(kernel, fallback_mops) * 1e6)


def process_start(budget) -> float:
    """Seconds for a part's process to start (measured by ``--measure-cpu``)."""
    return budget.get("cpu", {}).get("process_start_seconds", 3.0)


def cpu_figure(budget, key, default=None):
    """A measured CPU figure of ``cpu.json`` (``default`` when not measured)."""
    return budget.get("cpu", {}).get(key, default)


def lpt_makespan(seconds, workers: int) -> float:
    """Wall time of ``seconds`` (independent jobs) on ``workers``, longest job first to the least
    loaded worker (the pools' order: the compile pool and the CPU pool sort by the measured times)."""
    loads = [0.0] * max(1, workers)
    for s in sorted(seconds, reverse=True):
        heapq.heapreplace(loads, loads[0] + s)
    return max(loads)


# ---------------------------------------------------------------------------------------------
# results


def same_rows(got, want):
    """Rows of ``got`` and ``want`` that agree: bit for bit, a NaN matching any NaN (the GPU's and the
    CPU's default NaN differ in sign and payload); signed zeros by their bits."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        raise ValueError(f"result shape/dtype {got.shape} {got.dtype}, CPU {want.shape} {want.dtype}")
    u = {np.dtype(np.float64): np.uint64, np.dtype(np.float32): np.uint32}[want.dtype]
    g2, w2 = got.reshape(len(got), -1), want.reshape(len(want), -1)
    bits = g2.view(u) == w2.view(u)
    nan = np.isnan(g2) & np.isnan(w2)
    return (bits | nan).all(axis=1), ((~bits) & nan).any(axis=1)


def hex_row(row) -> list[str]:
    return [float(v).hex() for v in np.asarray(row).reshape(-1)]


def run_command(ctx: Context, cmd: list, doc: str) -> dict:
    """A command of a third-stage part: its exit status, status and the end of its output."""
    rec = {"command": " ".join(cmd), "status": "partial"}
    if ctx.device.rehearsal:
        return rec | {"status": "skipped", "summary": [f"rehearsal: would run {' '.join(cmd)}"]}
    left = ctx.left() - RESERVE_S
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=max(1.0, left), cwd=ROOT,
                           env=dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1"))
        rec.update(exit_status=p.returncode, log_tail=(p.stdout + p.stderr)[-8000:],
                   status="passed" if p.returncode == 0 else "failed")
    except (subprocess.TimeoutExpired, OSError) as exc:
        rec.update(status="partial" if isinstance(exc, subprocess.TimeoutExpired) else "error",
                   stopped=f"{type(exc).__name__}", log_tail=str(getattr(exc, "stdout", "") or exc)[-8000:])
    rec["summary"] = [f"{doc}: {rec['status']}" + (f" (exit {rec['exit_status']})" if "exit_status" in rec else "")]
    return rec
