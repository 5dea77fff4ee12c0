"""The compute-sanitizer parts: ``sanitizer`` (second stage: memcheck and racecheck) and ``synccheck``
(third: synccheck and initcheck), each on one launch of every kernel family
(:mod:`tools.gpu.launch_each`, run as ``tools/gpu_launch_each.py --one-per-family``, results checked
against the twins).  In a rehearsal the same launches run on the twins, without the sanitizer."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np

from expansions import backends

from . import launch_each
from .common import CUDA_INIT_S, RESERVE_S, ROOT, Context, part, process_start, run_command
from .units import Unit, kernel_unit

PARTS: dict = {}


SANITIZER_TOOLS = ("memcheck", "racecheck")


def _units_sanitizer():
    return [kernel_unit(i) for i in launch_each.family_instances()] + [Unit("dw")]


def _estimate_sanitizer(budget):
    n = len(launch_each.family_instances()) + 2
    per_tool = process_start(budget) + CUDA_INIT_S + 10.0 + n * 0.3
    return {"seconds": round(len(SANITIZER_TOOLS) * per_tool, 1), "cpu": None, "device": None,
            "detail": f"{len(SANITIZER_TOOLS)} tools x ({n} launches under the sanitizer, 0.3 s each; 10 s of the "
                      "sanitizer's own start)"}


@part(PARTS, "sanitizer", "second", "compute-sanitizer memcheck and racecheck on one launch of each kernel family "
      "(tools/gpu_launch_each.py --one-per-family, results checked against the twins)", units=_units_sanitizer,
      estimate=_estimate_sanitizer)
def run_sanitizer(ctx: Context):
    rec = {"part": "sanitizer", "device": ctx.device.label, "status": "partial", "tools": {}}
    if ctx.device.rehearsal:
        bad = launch_each.check_all(launch_each.twin_launchers(), np.asarray, np.asarray, backends.cpu.reduce,
                                    launch_each.twin_dw_run, launch_each.twin_dw_operation, one_per_family=True)
        rec["tools"]["rehearsal"] = {"note": "rehearsal: the launches run by the twins, no compute-sanitizer",
                                     "disagreements": bad}
        rec["status"] = "failed" if bad else "passed"
        rec["summary"] = [f"rehearsal: {len(bad)} disagreements, compute-sanitizer not run"]
        ctx.save("sanitizer", rec)
        return
    launch = [sys.executable, str(ROOT / "tools" / "gpu_launch_each.py"), "--one-per-family"]
    if shutil.which("compute-sanitizer") is None:
        rec.update(status="skipped", summary=["compute-sanitizer is not on the PATH"])
        ctx.save("sanitizer", rec)
        return
    failed = False
    for tool in SANITIZER_TOOLS:
        left = ctx.left() - RESERVE_S
        if left <= 10:
            rec["tools"][tool] = {"status": "not run: deadline"}
            failed = True
            continue
        cmd = ["compute-sanitizer", f"--tool={tool}", "--error-exitcode=3", *launch]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=left, cwd=ROOT,
                               env=dict(os.environ, PYTHONPATH=str(ROOT)))
            out = p.stdout + p.stderr
            rec["tools"][tool] = {"command": " ".join(cmd), "exit_status": p.returncode, "log_tail": out[-6000:],
                                  "errors_reported": _sanitizer_errors(out)}
            failed |= p.returncode != 0
        except subprocess.TimeoutExpired:
            rec["tools"][tool] = {"command": " ".join(cmd), "status": f"stopped after {left:.0f} s"}
            failed = True
        ctx.save("sanitizer", rec)
    rec["status"] = "failed" if failed else "passed"
    rec["summary"] = [f"{t}: " + (f"exit {v['exit_status']}, {v['errors_reported']}" if "exit_status" in v
                                   else v.get("status", "")) for t, v in rec["tools"].items()]
    ctx.save("sanitizer", rec)


def _sanitizer_errors(text: str) -> str:
    for line in reversed(text.splitlines()):
        if "ERROR SUMMARY" in line or "RACECHECK SUMMARY" in line:
            return line.strip()
    return "no summary line (see log_tail)"


@part(PARTS, "synccheck", "third", "compute-sanitizer synccheck and initcheck on the one-launch-per-family script",
      units=_units_sanitizer, estimate=_estimate_sanitizer)
def run_synccheck(ctx: Context):
    rec = {"part": "synccheck", "tools": {}}
    for tool in ("synccheck", "initcheck"):
        rec["tools"][tool] = run_command(ctx, ["compute-sanitizer", f"--tool={tool}", "--error-exitcode=3",
                                               sys.executable, str(ROOT / "tools" / "gpu_launch_each.py"),
                                               "--one-per-family"], f"compute-sanitizer {tool}")
        ctx.save("synccheck", rec)
    states = [t["status"] for t in rec["tools"].values()]
    rec["status"] = "passed" if all(s == "passed" for s in states) else (
        "skipped" if all(s == "skipped" for s in states) else "failed")
    rec["summary"] = [line for t in rec["tools"].values() for line in t["summary"]]
    ctx.save("synccheck", rec)

