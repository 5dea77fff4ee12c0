"""The CPU side of the GPU runbook's estimates, measured on this machine (no GPU):
``python tools/gpu_run.py --measure-cpu`` writes ``tools/gpu_budget/cpu.json`` and the raw log ``cpu.log``.

What a part does on the CPU is run here exactly as the part runs it, at its sizes, and timed:

* ``bitexact``: for each (family, R, dtype), the input sets and the engine's result
  (:func:`gpu_parts.bitexact_cpu_side`), in a fresh process with an empty numba cache, so that the
  engine's compilation (cold on the GPU machine) is counted where it happens;
* ``elementary_seconds``: for each (function, dtype) at R = 2, the same, plus the engine's call on
  the 2^20 timed arguments (also a fresh process);
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

ROOT = Path(__file__).resolve().parents[1]
for _p in (str(ROOT), str(ROOT / "tools")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

BUDGET = ROOT / "tools" / "gpu_budget"
IMPORTS = "import numpy, expansions, expansions.backends, expansions.verify, bench.gpu, gpu_parts"


def _cold(what: str, log) -> dict:
    """Run ``python tools/gpu_budget.py --what`` in a fresh process with an empty numba cache."""
    with tempfile.TemporaryDirectory(prefix="expansions-numba-") as tmp:
        env = dict(os.environ, NUMBA_CACHE_DIR=tmp, PYTHONPATH=str(ROOT))
        out = Path(tmp) / "out.json"
        p = subprocess.Popen([sys.executable, __file__, f"--{what}", str(out)], cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in p.stdout:
            log(line.rstrip())
        if p.wait() != 0:
            raise RuntimeError(f"--{what} failed (exit {p.returncode})")
        return json.loads(out.read_text())


def measure_bitexact(path: Path):
    import gpu_parts

    res = {}
    for fam, R, dtype in gpu_parts.bitexact_configs():
        t0 = time.perf_counter()
        gpu_parts.bitexact_cpu_side(fam, R, dtype, gpu_parts.BITEXACT_COUNT, gpu_parts.SPECIAL_ROWS)
        res[f"{fam.name} {R} {dtype}"] = round(time.perf_counter() - t0, 3)
        print(f"bitexact {fam.name} R={R} {dtype}: {res[f'{fam.name} {R} {dtype}']} s", flush=True)
    path.write_text(json.dumps(res))


def measure_elementary(path: Path):
    import gpu_parts
    import numpy as np

    from expansions.cuda import build

    res = {}
    for f, _, _ in build.ELEMENTARY:
        fam = gpu_parts._elementary_family(f)
        for dtype in gpu_parts.DTYPES:
            t0 = time.perf_counter()
            gpu_parts.bitexact_cpu_side(fam, 2, dtype, gpu_parts.ELEMENTARY_COUNT, 0)
            n = gpu_parts.ELEMENTARY_TIMED
            sets = fam.inputs(2, dtype, min(n, 1 << 16), 0, 11)
            arrays = [np.ascontiguousarray(np.tile(a, (-(-n // len(a)), 1))[:n]) for a in sets[0][1:]]
            with np.errstate(all="ignore"):
                fam.cpu(2, *arrays)
            res[f"{f} {dtype}"] = round(time.perf_counter() - t0, 3)
            print(f"elementary {f} {dtype}: {res[f'{f} {dtype}']} s", flush=True)
    path.write_text(json.dumps(res))


def main() -> int:
    import numpy as np

    BUDGET.mkdir(parents=True, exist_ok=True)
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
        env = dict(os.environ, PYTHONPATH=f"{ROOT}:{ROOT}/tools")
        subprocess.run([sys.executable, "-c", IMPORTS], cwd=ROOT, env=env, check=True)
        starts.append(time.perf_counter() - t0)
    rec["process_start_seconds"] = round(statistics.median(starts), 2)
    log(f"process start (imports): {starts}")

    from bench import dw_gpu
    from expansions import verify
    from expansions.generate import random_terms

    t0 = time.perf_counter()
    random_terms((1 << 20,), 8, "float64", seed=1)
    rec["random_terms_seconds_per_term"] = (time.perf_counter() - t0) / (8 << 20)
    t0 = time.perf_counter()
    dw_gpu.inputs("dw_add_accurate", 1 << 20, "float64")
    rec["dw_inputs_seconds_per_number"] = (time.perf_counter() - t0) / (1 << 20)
    log(f"random_terms {rec['random_terms_seconds_per_term']:.3g} s/term, dw inputs "
        f"{rec['dw_inputs_seconds_per_number']:.3g} s/number")

    import gpu_parts

    rates = {}
    with np.errstate(all="ignore"):
        verify.verify_one("add_safe", 2, "float64", 1000, 1, "engine")  # compile the engine first
        for op in gpu_parts.VERIFY_OPS:
            for R in gpu_parts.VERIFY_RS:
                n = 20_000
                t0 = time.perf_counter()
                row = verify.verify_one(op, R, "float64", n, 2016, "engine")
                rates[f"{op} {R}"] = (time.perf_counter() - t0) / max(1, row.cases)
                log(f"verify {op} R={R}: {rates[f'{op} {R}'] * 1e6:.1f} us per case")
    rec["verify_seconds_per_case"] = rates
    rec["bitexact"] = _cold("bitexact", log)
    rec["elementary_seconds"] = _cold("elementary", log)
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
