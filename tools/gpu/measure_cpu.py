"""The CPU side of the GPU runbook's estimates, measured on this machine (no GPU):
``python tools/gpu_run.py --measure-cpu`` writes ``tools/gpu_budget/cpu.json`` and the raw log ``cpu.log``.

What a part does on the CPU is run here exactly as the part runs it, at its sizes, and timed:

* ``bitexact``: for each (family, R, dtype), the input sets and the engine's result
  (:func:`tools.gpu.bitexact.bitexact_cpu_side`), one thread (``NUMBA_NUM_THREADS=1``, as in the part's pool of
  processes), in a fresh process reading a numba cache that other processes filled (as the compile
  pool fills it on the GPU machine: its cost is the compile estimate's);
* ``elementary_compare_seconds``: for each (function, dtype) at R = 2, the same, one thread;
* ``verify_seconds_per_case``: :func:`expansions.verify.verify_one` per case and (operation, R) on the
  engine (input families, the operation, the exact errors; on the GPU the operation is the GPU's);
* ``random_terms_seconds_per_term`` and ``dw_inputs_seconds_per_number``: the benchmarks' operand
  generation;
* ``process_start_seconds``: a part's process importing what the parts import (no CUDA).

The GPU machine has 16 cores to this machine's few, and the engine uses all of them: the figures
are conservative there for the engine, equal for the single-threaded rest.  This machine is shared:
the load averages are recorded, the timings are noisy.
"""

from __future__ import annotations

import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench import dw_gpu
from expansions import verify
from expansions.generate import random_terms

from . import bitexact, elementary, families, verification
from .common import BUDGET, ROOT
from .compilation import ENTRY as COMPILE_ENTRY

#: What a part's process imports (``tools/gpu_run.py --run-part``).
IMPORTS = "import numpy, expansions, expansions.backends, expansions.verify, bench.gpu, tools.gpu.run"


def _measured(what: str, log) -> dict:
    """Warm numba's cache in one fresh process (as the compile pool does), then run
    ``python -m tools.gpu.measure_cpu --what`` in another, reading that cache, as the parts' processes do."""
    with tempfile.TemporaryDirectory(prefix="expansions-numba-") as tmp:
        env = dict(os.environ, NUMBA_CACHE_DIR=tmp, PYTHONPATH=str(ROOT))
        names = ["elementary"] if what == "elementary" else [f.name for f in families.families()]  # the numba units
        for name in names:
            subprocess.run([sys.executable, str(COMPILE_ENTRY), "--warm", name], cwd=ROOT, env=env, check=True)
        out = Path(tmp) / "out.json"
        env["NUMBA_NUM_THREADS"] = "1"
        p = subprocess.Popen([sys.executable, "-m", "tools.gpu.measure_cpu", f"--{what}", str(out)], cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in p.stdout:
            log(line.rstrip())
        if p.wait() != 0:
            raise RuntimeError(f"--{what} failed (exit {p.returncode})")
        return json.loads(out.read_text())


def measure_bitexact(path: Path):
    """Each comparison's CPU side, one thread (as in the part's pool)."""
    res = {}
    for fam, R, dtype in families.bitexact_configs():
        t0 = time.perf_counter()
        bitexact.bitexact_cpu_side(fam, R, dtype, families.random_rows(fam, R), families.SPECIAL_ROWS)
        res[f"{fam.name} {R} {dtype}"] = round(time.perf_counter() - t0, 3)
        print(f"bitexact {fam.name} R={R} {dtype}: {res[f'{fam.name} {R} {dtype}']} s", flush=True)
    path.write_text(json.dumps(res))


def measure_elementary(path: Path):
    """Each comparison's CPU side, one thread (as in the part's pool)."""
    compare = {}
    for f, dtype in elementary.elementary_configs():
        t0 = time.perf_counter()
        bitexact.bitexact_cpu_side(families.family(f), 2, dtype, elementary.ELEMENTARY_COUNT, 0)
        compare[f"{f} {dtype}"] = round(time.perf_counter() - t0, 3)
        print(f"elementary {f} {dtype}: comparison {compare[f'{f} {dtype}']} s (one thread)", flush=True)
    path.write_text(json.dumps({"compare": compare}))


def main(only: str | None = None) -> int:
    """Measure everything (``only`` None), or only ``bitexact`` or ``elementary``, updating cpu.json."""
    BUDGET.mkdir(parents=True, exist_ok=True)
    if only is not None:
        rec = json.loads((BUDGET / "cpu.json").read_text())
        with open(BUDGET / "cpu.log", "a") as logf:
            def log(line):
                print(line, flush=True)
                logf.write(line + "\n")

            log(f"--- remeasured: {only} ({datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}"
                f", load average {[round(v, 2) for v in os.getloadavg()]})")
            res = _measured(only, log)
            if only == "bitexact":
                rec["bitexact"] = res
            else:
                rec["elementary_compare_seconds"] = res["compare"]
                rec.pop("elementary_speed_seconds", None)
            rec.setdefault("remeasured", []).append({"what": only, "date": datetime.datetime.now(
                datetime.timezone.utc).isoformat(timespec="seconds"), "command": f"python tools/gpu_run.py "
                f"--measure-cpu {only}"})
        (BUDGET / "cpu.json").write_text(json.dumps(rec, indent=1) + "\n")
        return 0
    logf = open(BUDGET / "cpu.log", "w")

    def log(line):
        print(line, flush=True)
        logf.write(line + "\n")
        logf.flush()

    rec = {"command": "python tools/gpu_run.py --measure-cpu",
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "cpus_here": os.cpu_count(), "load_average_before": [round(v, 2) for v in os.getloadavg()]}
    starts = []
    for _ in range(3):
        t0 = time.perf_counter()
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        subprocess.run([sys.executable, "-c", IMPORTS], cwd=ROOT, env=env, check=True)
        starts.append(time.perf_counter() - t0)
    rec["process_start_seconds"] = round(statistics.median(starts), 2)
    log(f"process start (imports): {starts}")

    t0 = time.perf_counter()
    random_terms((1 << 20,), 8, "float64", seed=1)
    rec["random_terms_seconds_per_term"] = (time.perf_counter() - t0) / (8 << 20)
    t0 = time.perf_counter()
    dw_gpu.inputs("dw_add_accurate", 1 << 20, "float64")
    rec["dw_inputs_seconds_per_number"] = (time.perf_counter() - t0) / (1 << 20)
    log(f"random_terms {rec['random_terms_seconds_per_term']:.3g} s/term, dw inputs "
        f"{rec['dw_inputs_seconds_per_number']:.3g} s/number")

    rates = {}
    with np.errstate(all="ignore"):
        verify.verify_one("add_safe", 2, "float64", 1000, 1, "engine")  # compile the engine first
        for op in verification.VERIFY_OPS:
            for R in verification.VERIFY_RS:
                n = 20_000
                t0 = time.perf_counter()
                row = verify.verify_one(op, R, "float64", n, 2016, "engine")
                rates[f"{op} {R}"] = (time.perf_counter() - t0) / max(1, row.cases)
                log(f"verify {op} R={R}: {rates[f'{op} {R}'] * 1e6:.1f} us per case")
    rec["verify_seconds_per_case"] = rates
    rec["bitexact"] = _measured("bitexact", log)
    elem = _measured("elementary", log)
    rec["elementary_compare_seconds"] = elem["compare"]
    rec["load_average_after"] = [round(v, 2) for v in os.getloadavg()]
    (BUDGET / "cpu.json").write_text(json.dumps(rec, indent=1) + "\n")
    log(f"wrote {BUDGET / 'cpu.json'}")
    logf.close()
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] in ("--bitexact", "--elementary"):
        {"--bitexact": measure_bitexact, "--elementary": measure_elementary}[sys.argv[1]](Path(sys.argv[2]))
        sys.exit(0)
    sys.exit(main())
