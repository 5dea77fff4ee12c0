"""How long a new user waits for the first calls: each call in a fresh Python process with an empty
numba cache (a temporary ``NUMBA_CACHE_DIR``), as on a new machine, a new version, a CI runner.

Measures the first ``import expansions``, the first ``x + y`` (R = 2), ``x * y + x`` (R = 4),
``np.sum(x)``, a comparison, ``ex.exp``, ``ex.log``, ``ex.sin``, and ``python -m expansions warm``
(the defaults) with an empty cache, against the goals: the first call of an arithmetic operation, a
comparison or a reduction at most 1 s, of an elementary function at most 5 s, the warm command at
most 60 s on 2 cores.  Each call's wall seconds (what a user waits), CPU seconds (of its process, all
threads) and numba's compilations during it (cache misses of its dispatchers), with the machine's
load; writes ``bench/results/first_calls_<device>.md`` / ``.json`` and the raw output of every
process in ``.log``.

    python -m bench.first_calls [--only add,exp] [--out FOLDER]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import load_note
from expansions.__main__ import device_slug, environment
from expansions.warm import cores

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
#: Expansions per operand of the calls.
COUNT = 1000
#: The goals: a call's kind -> its largest wall seconds (None: no goal).
GOALS = {"arithmetic": 1.0, "elementary": 5.0, "warm": 60.0, "import": None}

_RANDOM = "x, y = (ex.random(({count},), terms={R}, seed=s) for s in (1, 2))"
_UNIT = "x = ex.array(np.linspace(0.125, 0.875, {count}), terms=2)"
#: name -> (kind, setup, the call)
CASES = {
    "import": ("import", "", "import expansions"),
    "add": ("arithmetic", _RANDOM.format(count=COUNT, R=2), "x + y"),
    "mul_add_r4": ("arithmetic", _RANDOM.format(count=COUNT, R=4), "x * y + x"),
    "sum": ("arithmetic", _RANDOM.format(count=COUNT, R=2), "np.sum(x)"),
    "compare": ("arithmetic", _RANDOM.format(count=COUNT, R=2), "x < y"),
    "exp": ("elementary", _UNIT.format(count=COUNT), "ex.exp(x)"),
    "log": ("elementary", _UNIT.format(count=COUNT), "ex.log(x)"),
    "sin": ("elementary", _UNIT.format(count=COUNT), "ex.sin(x)"),
}

# The child: the setup (imports, operands), then the call, timed; then numba's cache misses (one per
# compiled signature: the call's compilations, since the setup runs no compiled code) if numba was
# loaded.  Prints one JSON line.
CHILD = """
import json, sys, time
setup, call = sys.argv[1], sys.argv[2]
if setup:
    import numpy as np
    import expansions as ex
    exec(setup)
t0, c0 = time.perf_counter(), time.process_time()
exec(call)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
compiles = 0
if "numba" in sys.modules:
    import gc
    from numba.core.dispatcher import Dispatcher
    compiles = sum(sum(d._cache_misses.values()) for d in gc.get_objects() if isinstance(d, Dispatcher))
print(json.dumps({"wall": wall, "cpu": cpu, "compiles": compiles}))
"""


def _run(cmd: list[str], cache: str) -> tuple[subprocess.CompletedProcess, float]:
    env = os.environ | {"NUMBA_CACHE_DIR": cache, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")]))}
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    return out, time.perf_counter() - t0


def measure(name: str, log: list[str]) -> dict:
    """One case in a fresh process with an empty numba cache."""
    kind, setup, call = CASES[name]
    with tempfile.TemporaryDirectory(prefix="numba-cache-") as cache:
        out, process = _run([sys.executable, "-c", CHILD, setup, call], cache)
    log += [f"$ {name}: {call} (setup: {setup or 'none'})", out.stdout + out.stderr]
    row = {"name": name, "kind": kind, "call": call, "setup": setup, "process_seconds": process,
           "returncode": out.returncode}
    if out.returncode == 0:
        row.update(json.loads(out.stdout.strip().splitlines()[-1]))
    return row


def measure_warm(log: list[str]) -> dict:
    """``python -m expansions warm`` (the defaults) with an empty numba cache: its wall time, the CPU
    time of its processes (``resource``'s children, the compiling processes included)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory(prefix="numba-cache-") as cache:
        out, wall = _run([sys.executable, "-m", "expansions", "warm", "--no-progress"], cache)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    log += ["$ python -m expansions warm --no-progress", out.stdout + out.stderr]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"name": "warm", "kind": "warm", "call": "python -m expansions warm", "setup": "",
            "returncode": out.returncode, "wall": wall, "cpu": cpu, "compiles": None, "cores": cores()}


def _met(row: dict) -> str:
    goal = GOALS[row["kind"]]
    if row["returncode"] != 0:
        return "failed"
    if goal is None:
        return "no goal"
    return "yes" if row["wall"] <= goal else "no"


def markdown(rows: list[dict], header: dict) -> str:
    env = header["environment"]
    lines = [f"# First calls with an empty numba cache: {env['processor']}", "",
             f"`{header['command']}`, commit {env['commit']}, numba {header['numba']}, {header['cores']} cores; "
             f"{header['load_note']}.", "",
             "Each call in a fresh Python process with an empty `NUMBA_CACHE_DIR`; wall seconds of the call "
             "(what a user waits), CPU seconds of its process (all threads), numba's compilations during it.",
             "", "| first call | setup | wall s | CPU s | numba compilations | goal (wall) | met |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        goal = GOALS[r["kind"]]
        wall = f"{r['wall']:.2f}" if "wall" in r else "—"
        cpu = f"{r['cpu']:.2f}" if "cpu" in r else "—"
        compiles = "—" if r.get("compiles") is None else str(r["compiles"])
        on = f" on {r['cores']} cores" if r["kind"] == "warm" else ""
        goal_text = "—" if goal is None else f"<= {goal:g} s{on}"
        setup = f"`{r['setup']}`" if r["setup"] else "—"
        lines.append(f"| `{r['call']}` | {setup} | {wall} | {cpu} | {compiles} | {goal_text} | {_met(r)} |")
    met = [r for r in rows if GOALS[r["kind"]] is not None]
    lines += ["", f"Goals met: {sum(_met(r) == 'yes' for r in met)} of {len(met)}; the raw output of every process "
                  f"is in the .log file beside this one.", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.first_calls", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="", help=f"comma-separated, of {', '.join([*CASES, 'warm'])} (default: all)")
    ap.add_argument("--out", type=Path, default=RESULTS, help="folder of the results (default: bench/results)")
    args = ap.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or [*CASES, "warm"]
    unknown = [n for n in names if n not in CASES and n != "warm"]
    if unknown:
        ap.error(f"unknown case(s) {', '.join(unknown)}")
    import numba  # the engine's dependency: its version for the header

    load = {"start": list(os.getloadavg())}
    log, rows = [], []
    for name in names:
        rows.append(measure_warm(log) if name == "warm" else measure(name, log))
        r = rows[-1]
        print(f"{name}: {r.get('wall', float('nan')):.2f} s wall, {r.get('cpu', float('nan')):.2f} s CPU, "
              f"compilations {r.get('compiles')}, goal met: {_met(r)}", flush=True)
    load["end"] = list(os.getloadavg())
    header = {"command": "python -m bench.first_calls " + " ".join(argv if argv is not None else sys.argv[1:]),
              "environment": environment(), "numba": numba.__version__, "cores": cores(), "load": load,
              "load_note": load_note(load, cores())}
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"first_calls_{device_slug()}"
    Path(f"{stem}.json").write_text(json.dumps({**header, "goals": GOALS, "rows": rows}, indent=1))
    Path(f"{stem}.md").write_text(markdown(rows, header))
    Path(f"{stem}.log").write_text("\n".join(log) + "\n")
    print(f"wrote {stem}.md, .json, .log")
    return 0 if all(r["returncode"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
