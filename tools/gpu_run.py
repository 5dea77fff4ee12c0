"""The GPU runbook: everything to run and measure when a GPU is lent, in phases of at most 9 minutes.

    python tools/gpu_run.py OUT [--phase PHASE ...] [--dry-run] [--pack] [--limit SECONDS]

Phases, most important first (``all``, the default, runs them in this order):

==============  ==================================================================================
``env``         device, driver, CUDA runtime, NVRTC, CuPy, NumPy, commit, ``nvidia-smi -q`` -> env.json
``tests``       every test marked ``gpu`` (kernels against their twins, bit for bit) -> tests.json, log
``sanitizer``   compute-sanitizer memcheck, racecheck and synccheck on one launch of each kernel
                family (``tools/gpu_launch_each.py``) -> sanitizer_<tool>.log
``tables``      ``python -m paper_repro --skip verify,dw,seeds``: Tables I-IV and streaming
``verify``      ``python -m paper_repro --skip tables,dw,seeds``: the bound verification on the kernels
``seeds``       ``python -m paper_repro --skip tables,verify``: the double-word and seed reproductions
``characterize`` ``python -m paper_repro.seed004_gpu``: seed 004's latencies and throughputs (Tables IV,
                V, IX) beside the thesis's figures -> seed004_gpu.md, seed004_gpu.json
``model``       ``python -m bench.model --measured``: the instruction model's bound beside the measured
                Mop/s (when bench/model.py exists), then ncu on the three worst cells; then
                ``python -m bench.dw_gpu --quick``: the R = 2 double-word kernels measured beside their bound
==============  ==================================================================================

Every phase writes into OUT/<phase>/ and records the environment (device, driver, CuPy, NVRTC,
commit) in each JSON file it writes.  A phase that cannot run here (no GPU, no compute-sanitizer, no
ncu, no bench/model.py) is skipped with its reason, in the output and in OUT/<phase>/skipped.txt.
``--dry-run`` prints each phase's commands and whether it would run, and runs nothing (CI runs it).
``--pack`` writes OUT/<phase>.tar.gz per phase (the device tool brings back at most 8 files).
Run from the repository root with ``PYTHONPATH=.`` on the GPU machine (nothing is installed there).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from expansions.__main__ import commit, environment  # noqa: E402 - after the path set-up above

PHASES = ("env", "tests", "sanitizer", "tables", "verify", "seeds", "characterize", "model")
SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck")
#: The parts of ``python -m paper_repro`` each paper phase skips (so that each fits in 9 minutes).
PAPER_PARTS = {"tables": "verify,dw,seeds", "verify": "tables,dw,seeds", "seeds": "tables,verify"}


def _gpu_reason() -> str | None:
    env = environment()
    return None if env.get("gpu_available") else env.get("gpu_reason", "no GPU")


def _plan(phase: str, out: Path) -> tuple[list[list[str]], str | None]:
    """The commands of a phase and the reason it cannot run here (None: it can)."""
    py = [sys.executable]
    gpu = _gpu_reason()
    if phase == "env":
        return [["nvidia-smi", "-q"]], None if shutil.which("nvidia-smi") else "nvidia-smi is not on the PATH"
    if phase == "tests":
        return [py + ["-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider", "tests",
                      f"--junitxml={out / 'junit.xml'}"]], gpu
    if phase == "sanitizer":
        launch = py + [str(ROOT / "tools" / "gpu_launch_each.py")]
        cmds = [launch] + [["compute-sanitizer", f"--tool={t}", "--error-exitcode=3", *launch] for t in SANITIZER_TOOLS]
        reason = gpu or (None if shutil.which("compute-sanitizer") else "compute-sanitizer is not on the PATH")
        return cmds, reason
    if phase in PAPER_PARTS:
        skip = PAPER_PARTS[phase]
        return [py + ["-m", "paper_repro", "--backend", "cuda", "--no-progress", "--out", str(out),
                      "--skip", skip]], gpu
    if phase == "characterize":
        return [py + ["-m", "paper_repro.seed004_gpu", "--out", str(out)]], gpu
    if phase == "model":
        if not (ROOT / "bench" / "model.py").exists():
            return [], "bench/model.py (the instruction model) is not in this tree"
        return [py + ["-m", "bench.model", "--measured", str(out.parent / "tables" / "results.json"),
                      "--out", str(out), "--ncu-worst", "3"],
                py + ["-m", "bench.dw_gpu", "--out", str(out), "--quick"]], gpu
    raise ValueError(f"unknown phase {phase!r}: one of {', '.join(PHASES)}")


def run_phase(phase: str, root_out: Path, dry_run: bool, limit: float) -> dict:
    out = root_out / phase
    cmds, reason = _plan(phase, out)
    record = {"phase": phase, "commands": [" ".join(c) for c in cmds], "commit": commit()}
    if dry_run:
        print(f"[{phase}] " + ("would run" if reason is None else f"would skip: {reason}"))
        for c in record["commands"]:
            print(f"    {c}")
        return record | {"status": "dry-run", "reason": reason}
    out.mkdir(parents=True, exist_ok=True)
    if phase == "env":
        (out / "env.json").write_text(json.dumps(environment(), indent=1, default=str) + "\n")
    if reason is not None:
        (out / "skipped.txt").write_text(reason + "\n")
        print(f"[{phase}] skipped: {reason}")
        return record | {"status": "skipped", "reason": reason}
    t0 = time.time()
    results = []
    for i, cmd in enumerate(cmds):
        left = limit - (time.time() - t0)
        if left <= 0:
            results.append({"command": " ".join(cmd), "status": "not started: the phase's time limit was reached"})
            continue
        log = out / (f"{Path(cmd[0]).name}_{i}.log" if phase != "sanitizer" or i == 0 else
                     f"sanitizer_{SANITIZER_TOOLS[i - 1]}.log")
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
                   PYTHONUNBUFFERED="1")
        try:
            with open(log, "w") as f:
                p = subprocess.run(cmd, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, env=env, timeout=left)
            results.append({"command": " ".join(cmd), "exit_status": p.returncode, "log": log.name})
        except subprocess.TimeoutExpired:
            results.append({"command": " ".join(cmd), "status": f"stopped after {left:.0f} s", "log": log.name})
        print(f"[{phase}] {results[-1]}")
    record |= {"status": "ran", "seconds": round(time.time() - t0, 1), "results": results, "environment": environment()}
    (out / f"{phase}.json").write_text(json.dumps(record, indent=1, default=str) + "\n")
    return record


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python tools/gpu_run.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, help="the folder every result file goes into")
    ap.add_argument("--phase", action="append", choices=PHASES + ("all",), help="phases to run (default all)")
    ap.add_argument("--dry-run", action="store_true", help="print the plan, run nothing")
    ap.add_argument("--pack", action="store_true", help="also write OUT/<phase>.tar.gz for each phase run")
    ap.add_argument("--limit", type=float, default=540.0, help="seconds per phase (default 540: 9 minutes)")
    args = ap.parse_args(argv)
    phases = PHASES if not args.phase or "all" in args.phase else tuple(p for p in PHASES if p in args.phase)
    failed = False
    for phase in phases:
        rec = run_phase(phase, args.out, args.dry_run, args.limit)
        failed |= any(r.get("exit_status", 0) != 0 for r in rec.get("results", []) if phase != "env")
        if args.pack and rec["status"] == "ran":
            with tarfile.open(args.out / f"{phase}.tar.gz", "w:gz") as tar:
                tar.add(args.out / phase, arcname=phase)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
