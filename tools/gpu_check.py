"""Run the GPU tests and write paper_repro/results/gpu_tests_<device>.json.

    python tools/gpu_check.py [-k EXPR] [extra pytest arguments]

Runs ``tests/test_gpu.py``, ``test_gpu_newton.py`` and ``test_gpu_reduce.py`` (kernels against their
twins, bit for bit) on the current CuPy device and records the device, driver, CUDA runtime, NVRTC,
CuPy and NumPy versions, the git commit, the number of expansions compared and every test's outcome.
Exit status: pytest's.  Without a GPU the tests are skipped, and nothing is written.
"""

from __future__ import annotations

import datetime
import json
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GPU_TEST_FILES = ("test_gpu.py", "test_gpu_newton.py", "test_gpu_reduce.py")
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy  # noqa: E402 - after the path set-up above

from expansions import cuda  # noqa: E402
from expansions.cuda import build  # noqa: E402

RESULTS = ROOT / "paper_repro" / "results"


class Collector:
    """pytest plugin: outcome, duration and recorded ``expansions`` of every test."""

    def __init__(self):
        self.tests = {}

    def pytest_runtest_logreport(self, report):
        entry = self.tests.setdefault(report.nodeid, {"outcome": "passed", "duration_s": 0.0, "expansions": 0})
        entry["duration_s"] += report.duration
        props = dict(report.user_properties)
        if "expansions" in props:
            entry["expansions"] = int(props["expansions"])
        if report.failed:
            entry["outcome"] = "failed" if report.when == "call" else "error"
        elif report.skipped and entry["outcome"] == "passed":
            entry["outcome"] = "skipped"
            entry["reason"] = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else ""


def _git(*args) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    except Exception:
        return ""


def environment() -> dict:
    import cupy  # optional dependency: present where a GPU was found

    dev = cupy.cuda.Device()
    return {
        "device": cuda.device_name(),
        "compute_capability": dev.compute_capability,
        "driver_version": cupy.cuda.runtime.driverGetVersion(),
        "runtime_version": cupy.cuda.runtime.runtimeGetVersion(),
        "nvrtc_version": ".".join(map(str, build.nvrtc_version())),
        "arch": build.device_kernels(dev.id).arch,
        "cupy_version": cupy.__version__,
        "numpy_version": numpy.__version__,
        "python": platform.python_version(),
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
    }


def main(argv=None) -> int:
    import pytest  # a test dependency, not the library's

    argv = list(sys.argv[1:] if argv is None else argv)
    if not cuda.available():
        print("no CUDA GPU visible to CuPy: the GPU tests would all be skipped; nothing written")
        return 0
    collector = Collector()
    t0 = time.time()
    status = pytest.main(
        [*(str(ROOT / "tests" / f) for f in GPU_TEST_FILES), "-q", "-p", "no:cacheprovider", *argv],
        plugins=[collector]
    )
    elapsed = time.time() - t0
    tests = collector.tests
    counts = {k: sum(1 for t in tests.values() if t["outcome"] == k) for k in ("passed", "failed", "error", "skipped")}
    env = environment()
    summary = {
        **env,
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(["python", "tools/gpu_check.py", *argv]),
        "pytest_exit_status": int(status),
        "outcome": "passed" if int(status) == 0 and counts["passed"] > 0 else "failed",
        "counts": counts,
        "expansions_compared": sum(t["expansions"] for t in tests.values() if t["outcome"] == "passed"),
        "elapsed_s": round(elapsed, 1),
        "tests": tests,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = re.sub(r"[^A-Za-z0-9]+", "_", env["device"]).strip("_")
    path = RESULTS / f"gpu_tests_{name}.json"
    path.write_text(json.dumps(summary, indent=1) + "\n")
    print(f"wrote {path.relative_to(ROOT)}: {counts}, {summary['expansions_compared']} expansions compared")
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
