"""The ``env`` part (first stage, beside the compile pool): the environment record (device, driver,
CUDA, NVRTC, CuPy, NumPy, numba, commit, CPUs, memory) and the versions of the tools on the machine."""

from __future__ import annotations

import contextlib
import os
import platform
import shutil
import subprocess

from expansions.__main__ import environment
from expansions.cuda import build

from .common import Context, part, process_start

PARTS: dict = {}


def _tool_version(cmd) -> str:
    if shutil.which(cmd[0]) is None:
        return f"{cmd[0]}: not on the PATH"
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        return (p.stdout + p.stderr).strip()[-2000:]
    except Exception as exc:
        return f"{cmd[0]}: {type(exc).__name__}: {exc}"


def environment_record() -> dict:
    """Device, driver, CUDA, NVRTC, CuPy, NumPy, numba, Python, commit, CPUs, memory, tools."""
    env = environment()
    try:
        env["nvrtc"] = ".".join(map(str, build.nvrtc_version()))
        env["nvrtc_archs"] = list(build.supported_archs())
    except Exception as exc:
        env["nvrtc"] = f"unavailable: {type(exc).__name__}: {exc}"
    try:
        import numba  # a dependency of the engine, recorded only if present

        env["numba"] = numba.__version__
    except ImportError:
        env["numba"] = "not installed"
    env["cpus"] = os.cpu_count()
    env["platform"] = platform.platform()
    with contextlib.suppress(OSError):
        env["memory_kb"] = next(int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal"))
    return env


def _estimate_env(budget):
    return {"seconds": process_start(budget) + 10.0, "detail": "nvidia-smi -q and the tools' versions (10 s)"}


@part(PARTS, "env", "first", "environment record: device, driver, CUDA, NVRTC, CuPy, NumPy, numba, commit, CPUs; "
      "nvidia-smi -q, lscpu and the versions of nvcc, compute-sanitizer, ncu", estimate=_estimate_env, needs="none")
def run_env(ctx: Context):
    rec = {"part": "env", "status": "measured", "environment": environment_record()}
    rec["tools"] = {name: _tool_version(cmd) for name, cmd in (
        ("nvidia-smi", ["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,"
                        "compute_cap", "--format=csv"]),
        ("nvcc", ["nvcc", "--version"]), ("compute-sanitizer", ["compute-sanitizer", "--version"]),
        ("ncu", ["ncu", "--version"]), ("uname", ["uname", "-a"]), ("lscpu", ["lscpu"]))}
    rec["nvidia_smi_q"] = _tool_version(["nvidia-smi", "-q"])[-12000:]
    env = rec["environment"]
    rec["summary"] = [f"{env.get('gpu_name', 'no GPU: ' + str(env.get('gpu_reason')))}, driver {env.get('driver')}, "
                      f"CUDA runtime {env.get('cuda_runtime')}, NVRTC {env.get('nvrtc')}, CuPy {env.get('cupy')}, "
                      f"NumPy {env.get('numpy')}, numba {env.get('numba')}, {env.get('cpus')} CPUs, commit "
                      f"{env.get('commit')}"]
    ctx.save("env", rec)

