"""The GPU runbook: the first contact with a GPU in two stages of at most 7 minutes each, planned on the CPU.

    PYTHONPATH=. python3 tools/gpu_run.py --stage first OUT      # on the GPU machine, timeout ~420 s
    PYTHONPATH=. python3 tools/gpu_run.py --stage second OUT
    python tools/gpu_run.py --stage first --dry-run              # the plan and its estimate (CI runs it)
    python tools/gpu_run.py --stage first OUT --rehearse         # end to end without a GPU (CUDA replaced)
    python tools/gpu_run.py --measure-cpu                        # the CPU side of the estimates, measured here

A stage compiles every kernel its parts launch with a pool of 16 processes (``tools/gpu_compile.py``,
:mod:`tools.gpu.compilation`: the disk cache filled before the first launch, while the environment is
recorded), then runs its parts (:mod:`tools.gpu.stages`) one after the other, each in its own process
(a crash or a sticky CUDA error ends that part only), each within what is left of ``--limit`` (default
400 s): a part whose estimate no longer fits is skipped and says so, a part that runs over is stopped.
Each part writes its JSON file as it goes; ``summary.json`` and ``summary.md`` are rewritten after each
part, and the stage ends by printing the summary (the last 12,000 characters of output come back even
when files do not).

=========  ===========================================================================  ==================
stage      parts (most valuable first)                                                  files (<= 8)
=========  ===========================================================================  ==================
first      env, bitexact, tables, r2, stream                                            summary.json/.md,
                                                                                        one JSON per part
second     model, sanitizer, verify, elementary, characterize                           the same
third      verify_full_{add_safe,add_fast,mul}, bitexact_exp, model_rest, gpu_tests,    the same, and
           synccheck, paper_repro (a later GPU: run with ``--part`` as time allows)    paper_repro.tar.gz
=========  ===========================================================================  ==================

``--dry-run`` prints each part with its estimate and the stage's total: the compile estimate from the
NVRTC times measured without a GPU (``tools/gpu_budget/compile.json``, ``tools/gpu_compile.py
--measure``), the run estimate of each part from its CPU side measured here (``tools/gpu_budget/cpu.json``,
``--measure-cpu``), the instruction model's bound of its kernels and the sizes it uses; it exits 1 when
the first or second stage's estimate passes 6 minutes, or when a measurement it needs is missing.
Run from the repository root with ``PYTHONPATH=.`` on the GPU machine (nothing is installed there).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

from expansions import backends, cuda
from expansions.__main__ import commit

from . import common, compilation, devices, measure_cpu, stages
from .common import ROOT

#: The command line of the runbook, which runs each part in a process of its own (``--run-part``).
ENTRY = ROOT / "tools" / "gpu_run.py"

STAGES = ("first", "second", "third")
#: A stage's estimate may not pass this (the lead calls each stage with a timeout of about 420 s).
STAGE_BUDGET_S = 360.0
#: The default internal deadline of a stage, from its start.
DEFAULT_LIMIT_S = 400.0
#: Kept in hand at the end of a stage for the summary.
SUMMARY_RESERVE_S = 8.0
#: The runner's own start-up and its summary (seconds, in the estimate).
RUNNER_OVERHEAD_S = 5.0
PASSING = ("passed", "measured")


def plan(stage: str, budget: dict | None = None) -> dict:
    """The stage's parts with their estimates, the compile estimate and the total (seconds)."""
    budget = common.load_budget() if budget is None else budget
    units = compilation.stage_units(stage)
    comp = compilation.estimate(units, budget.get("compile", {}))
    rows, missing = [], list(comp["missing"])
    for p in stages.parts(stage):
        est = p.estimate(budget)
        missing += [f"{p.name}: {m}" for m in est.get("missing", [])]
        rows.append({"part": p.name, "doc": p.doc, "estimate": est, "units": len(p.units())})
    env = next((r["estimate"]["seconds"] for r in rows if r["part"] == "env"), 0.0)
    rest = [r["estimate"]["seconds"] for r in rows if r["part"] != "env"]
    sized = all(s is not None for s in rest)
    total = RUNNER_OVERHEAD_S + max(comp["wall_seconds"], env or 0.0) + sum(s or 0.0 for s in rest)
    return {"stage": stage, "compile": comp, "parts": rows, "total_seconds": round(total, 1), "sized": sized,
            "missing": missing, "budget_seconds": STAGE_BUDGET_S}


def dry_run(stage: str, limit: float) -> int:
    p = plan(stage)
    c = p["compile"]
    print(f"== stage {stage}: {len(p['parts'])} parts, {c['units']} kernel units to compile")
    print(f"[compile] python3 tools/gpu_compile.py --stage {stage} --arch auto --jobs {c['workers']}")
    print(f"    estimate {c['wall_seconds']} s: {c['one_core_seconds']} s on one core, {c['workers']} processes, "
          f"longest unit {c['longest_unit_seconds']} s (runs beside env)")
    for r in p["parts"]:
        est = r["estimate"]
        secs = "not sized" if est.get("seconds") is None else f"{est['seconds']} s"
        print(f"[{r['part']}] python3 tools/gpu_run.py --run-part {r['part']} OUT  -- estimate {secs}")
        print(f"    {r['doc']}")
        if est.get("detail"):
            print(f"    {est['detail']}")
    print(f"total estimate {p['total_seconds']} s (budget {STAGE_BUDGET_S:g} s, internal limit {limit:g} s)")
    status = 0
    if p["missing"] and stage != "third":
        print(f"NOT VALID: {len(p['missing'])} measurements missing (rerun python tools/gpu_compile.py --measure "
              f"and python tools/gpu_run.py --measure-cpu): {', '.join(p['missing'][:10])}")
        status = 1
    if stage != "third" and (p["total_seconds"] > STAGE_BUDGET_S or not p["sized"]):
        print(f"OVER BUDGET: stage {stage} is estimated at {p['total_seconds']} s > {STAGE_BUDGET_S:g} s")
        status = 1
    return status


# ---------------------------------------------------------------------------------------------
# running a stage


def _python_env() -> dict:
    """The environment of the stage's processes: the repository on the path, and one numba cache for all of
    them (the compile pool fills it, the parts read it; kept between stages on a warm machine)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), PYTHONUNBUFFERED="1")
    env.setdefault("NUMBA_CACHE_DIR", str(Path(tempfile.gettempdir()) / "expansions-numba-cache"))
    return env


def _tail(path: Path, n: int = 4000) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return ""


class Stage:
    """One stage's run: its parts in subprocesses, the summary rewritten after each."""

    def __init__(self, stage, out: Path, limit: float, rehearse: bool, scale: float, only=None, jobs=16):
        self.stage, self.out, self.rehearse, self.scale, self.jobs = stage, out, rehearse, scale, jobs
        self.t0 = time.time()
        self.deadline = self.t0 + limit
        self.plan = plan(stage)
        self.parts = [p for p in stages.parts(stage) if not only or p.name in only]
        self.logs = Path(tempfile.mkdtemp(prefix=f"expansions-gpu-{stage}-"))
        self.summary = {"stage": stage, "command": " ".join(["python3", "tools/gpu_run.py", *sys.argv[1:]]),
                        "rehearsal": rehearse, "scale": scale, "limit_seconds": limit,
                        "estimate_seconds": self.plan["total_seconds"], "parts": [], "compile": None}

    def left(self) -> float:
        return self.deadline - time.time()

    def write_summary(self):
        self.summary["commit"] = self.summary.get("commit") or commit()
        self.summary["elapsed_seconds"] = round(time.time() - self.t0, 1)
        self.out.mkdir(parents=True, exist_ok=True)
        tmp = self.out / ".summary.json.tmp"
        tmp.write_text(json.dumps(self.summary, indent=1, default=str) + "\n")
        os.replace(tmp, self.out / "summary.json")
        (self.out / "summary.md").write_text(self.markdown())

    def markdown(self) -> str:
        s = self.summary
        lines = [f"# GPU runbook, stage {s['stage']}" + (" (REHEARSAL: no GPU, figures meaningless)"
                                                        if s["rehearsal"] else ""), "",
                 f"commit {s.get('commit')}, {s['elapsed_seconds']} s of {s['limit_seconds']:g} s "
                 f"(estimate {s['estimate_seconds']} s)", ""]
        c = s["compile"]
        if c and "units" in c:
            lines.append(f"- compile: {c.get('status')}, {c['units']} units in {c.get('wall_seconds')} s with "
                         f"{c.get('jobs')} processes ({c.get('errors', 0)} errors; estimate "
                         f"{self.plan['compile']['wall_seconds']} s)")
        elif c:
            lines.append(f"- compile: {c.get('status')}" + (f" ({c['reason']})" if c.get("reason") else ""))
        for r in s["parts"]:
            est = r.get("estimate")
            lines.append(f"- {r['part']}: {r['status']}, {r.get('seconds', 0)} s (estimate "
                         + (f"{est} s)" if est is not None else "not sized)")
                         + (f": {r['reason']}" if r.get("reason") else ""))
            lines += [f"    {line}" for line in r.get("summary", [])]
        done = {r["part"] for r in s["parts"]}
        for p in self.parts:
            if p.name not in done:
                lines.append(f"- {p.name}: not reached")
        return "\n".join(lines) + "\n"

    def start_compile(self):
        if self.rehearse:
            self.summary["compile"] = {"status": "skipped", "reason": "rehearsal: nothing is launched"}
            return None
        reason = _gpu_reason()
        if reason:
            self.summary["compile"] = {"status": "skipped", "reason": reason}
            return None
        names = {p.name for p in self.parts}
        cmd = [sys.executable, str(ROOT / "tools" / "gpu_compile.py"), "--stage", self.stage, "--arch", "auto",
               "--jobs", str(self.jobs), "--out", str(self.logs / "compile.json")]
        if names != {p.name for p in stages.parts(self.stage)}:
            cmd += ["--parts", ",".join(sorted(names))]
        log = open(self.logs / "compile.log", "w")
        print(f"[compile] {' '.join(cmd)}", flush=True)
        return subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=_python_env()), log

    def finish_compile(self, started):
        if started is None:
            return
        proc, log = started
        try:
            proc.wait(timeout=max(1.0, self.left() - SUMMARY_RESERVE_S))
            status = "done" if proc.returncode == 0 else f"errors (exit {proc.returncode})"
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            status = "stopped at the deadline"
        log.close()
        rec = {"status": status, "log_tail": _tail(self.logs / "compile.log", 3000)}
        path = self.logs / "compile.json"
        if path.exists():
            rec |= json.loads(path.read_text())
        self.summary["compile"] = rec
        print(f"[compile] {status}: {rec.get('units', '?')} units, {rec.get('wall_seconds', '?')} s, "
              f"{rec.get('errors', '?')} errors", flush=True)
        self.write_summary()

    def run_part(self, part, background: bool = False):
        est = next(r["estimate"] for r in self.plan["parts"] if r["part"] == part.name).get("seconds")
        row = {"part": part.name, "estimate": est}
        left = self.left() - SUMMARY_RESERVE_S
        if est is not None and est > left:
            row.update(status="skipped", reason=f"would not fit: estimated {est} s, {left:.0f} s left")
            return self._done(row)
        reason = None if (self.rehearse or part.needs == "none") else _gpu_reason()
        if reason:
            row.update(status="skipped", reason=reason)
            return self._done(row)
        cmd = [sys.executable, str(ENTRY), "--run-part", part.name, str(self.out),
               "--deadline", f"{self.deadline - SUMMARY_RESERVE_S:.3f}"]
        if self.rehearse:
            cmd += ["--rehearse", "--scale", str(self.scale)]
        log_path = self.logs / f"{part.name}.log"
        print(f"[{part.name}] {' '.join(cmd[1:])}", flush=True)
        log = open(log_path, "w")
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=_python_env())
        started = time.time()
        if background:
            return proc, log, row, started, log_path
        return self._wait(proc, log, row, started, log_path)

    def _wait(self, proc, log, row, started, log_path):
        try:
            proc.wait(timeout=max(1.0, self.left() - SUMMARY_RESERVE_S + 2.0))
            row["exit_status"] = proc.returncode
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            row["stopped"] = "at the stage's deadline"
        log.close()
        row["seconds"] = round(time.time() - started, 1)
        path = self.out / f"{row['part']}.json"
        rec = json.loads(path.read_text()) if path.exists() else {}
        row["status"] = rec.get("status", "error")
        if "stopped" in row and row["status"] in PASSING:
            row["status"] = "partial"
        if row.get("exit_status") not in (0, None) and row["status"] in PASSING:
            row["status"] = "error"
        row["summary"] = rec.get("summary", [])
        if row["status"] not in PASSING:
            row["log_tail"] = _tail(log_path)
            if not rec:
                row["summary"] = ["no result file; the end of its output:"] + row["log_tail"][-600:].splitlines()[-8:]
        return self._done(row)

    def _done(self, row):
        self.summary["parts"].append(row)
        print(f"[{row['part']}] {row['status']}" + (f" ({row['reason']})" if row.get("reason") else "")
              + (f", {row['seconds']} s" if "seconds" in row else ""), flush=True)
        for line in row.get("summary", []):
            print(f"    {line}", flush=True)
        self.write_summary()
        return row

    def run(self) -> int:
        self.write_summary()
        started = self.start_compile()
        parts = list(self.parts)
        env = next((p for p in parts if p.name == "env"), None)
        if env is not None:  # the environment record runs beside the compile pool
            self._wait(*self.run_part(env, background=True))
            parts.remove(env)
        self.finish_compile(started)
        for p in parts:
            self.run_part(p)
        self.write_summary()
        print()
        print(self.markdown())
        ok = all(r["status"] in PASSING for r in self.summary["parts"])
        return 0 if ok and len(self.summary["parts"]) == len(self.parts) else 1


def _gpu_reason() -> str | None:
    if cuda.available():
        return None
    return f"no GPU: {backends.gpu_environment().get('gpu_reason', 'CuPy sees none')}"


def run_one_part(name: str, out: Path, deadline: float, rehearse: bool, scale: float) -> int:
    """Run part ``name`` in this process (the stage's subprocess)."""
    part = stages.PARTS[name]
    # a part that needs no GPU (the environment record) runs without CuPy too: no device object
    dev = devices.device(rehearse) if rehearse or part.needs != "none" else None
    ctx = common.Context(out, deadline, dev, scale)
    with np.errstate(all="ignore"), (dev.installed() if rehearse else _nothing()):
        try:
            part.run(ctx)
        except Exception as exc:
            traceback.print_exc()
            path = out / f"{name}.json"
            rec = json.loads(path.read_text()) if path.exists() else {"part": name}
            rec.update(status="error", error=f"{type(exc).__name__}: {exc}")
            rec.setdefault("summary", []).append(f"ERROR {type(exc).__name__}: {str(exc)[:300]}")
            ctx.save(name, rec)
            return 1
    return 0


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python tools/gpu_run.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, nargs="?", help="the folder every result file goes into ($OUT)")
    ap.add_argument("--stage", choices=STAGES)
    ap.add_argument("--part", action="append", help="run only these parts of the stage")
    ap.add_argument("--dry-run", action="store_true", help="print the plan and its estimate, run nothing")
    ap.add_argument("--limit", type=float, default=DEFAULT_LIMIT_S, help="the stage's internal deadline, seconds")
    ap.add_argument("--rehearse", action="store_true", help="no GPU: the CUDA calls replaced (see tools.gpu.devices)")
    ap.add_argument("--scale", type=float, default=1.0, help="size factor of a rehearsal")
    ap.add_argument("--jobs", type=int, default=common.GPU_MACHINE_JOBS, help="compile processes")
    ap.add_argument("--measure-cpu", nargs="?", const="all", choices=("all", "bitexact", "elementary"),
                    help="measure the CPU side of the estimates here (all, or one part's, updating cpu.json)")
    ap.add_argument("--run-part", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--deadline", type=float, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.measure_cpu:
        return measure_cpu.main(None if args.measure_cpu == "all" else args.measure_cpu)
    if args.run_part:
        return run_one_part(args.run_part, args.out, args.deadline or time.time() + args.limit, args.rehearse,
                            args.scale)
    if not args.stage:
        ap.error("--stage is needed")
    if args.dry_run:
        return dry_run(args.stage, args.limit)
    if args.out is None:
        ap.error("OUT is needed to run a stage")
    if args.part:
        unknown = set(args.part) - {p.name for p in stages.parts(args.stage)}
        if unknown:
            ap.error(f"not parts of stage {args.stage}: {', '.join(sorted(unknown))}")
    return Stage(args.stage, args.out, args.limit, args.rehearse, args.scale, args.part, args.jobs).run()
