"""Instructions per expansion of the fused CPU engine, counted by valgrind's callgrind.

Timings on a shared machine are noisy; instruction counts are not.  For each (operation, R) this runs
fresh processes under ``valgrind --tool=callgrind``, calling the engine function ``--a`` times (twice)
and ``--b`` times on ``--n`` expansions (after one warm-up call), and reports
``(instructions(b) - instructions(a)) / ((b - a) n)``: the instructions of one expansion's operation,
Python's per-call overhead included (a few per expansion).  Two identical processes differ by a
few million instructions (``PYTHONHASHSEED=0`` does not remove it all): the spread of the two runs
with ``--a`` calls, divided by ``(b - a) n``, is reported as the uncertainty.  ``--n`` stays below
the engine's parallel threshold so that the calls run on one thread (no worker threads counted).

valgrind has no AVX-512: the engine is compiled for ``haswell`` (AVX2 and FMA: each 8-lane float64
vector operation is two 256-bit instructions) into a numba cache of its own, filled once before the
counted runs.  Operations: ``add``/``mul`` (``add_safe``/``mul_truncated`` with ``renormalize=True``,
what ``x + y`` and ``x * y`` run), ``rawadd``/``rawmul`` (the kernels alone), ``renorm`` (the
renormalization of ulp-nonoverlapping input), ``div``/``sqrt`` (Newton, renormalized).

Writes ``bench/results/engine_instructions_<device>.md`` and ``.json``.

    python -m bench.engine_instructions [--cases 4:add 4:mul 32:mul:1000:42 ...] [--n 4000] [--a 2] [--b 102]

A case ``R:op:n:b`` counts on ``n`` expansions with ``b`` calls instead of ``--n`` and ``--b``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from expansions.__main__ import device_slug, environment
from expansions.engine import fused

HASWELL = ("+64bit,+avx,+avx2,+bmi,+bmi2,+cmov,+cx16,+cx8,+f16c,+fma,+fxsr,+lzcnt,+mmx,+movbe,+popcnt,+sse,"
           "+sse2,+sse3,+sse4.1,+sse4.2,+ssse3,+xsave")

_CALLS = r"""
import sys
import numpy as np
import numba
numba.set_num_threads(1)
import expansions.engine as E
from expansions.generate import random_terms
R, op, n, calls = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
x = random_terms((n,), R, "float64", seed=1)
y = random_terms((n,), R, "float64", seed=2)
a = np.abs(x)
f = {"add": lambda: E.add_safe(x, y, R, renormalize=True), "mul": lambda: E.mul_truncated(x, y, R, renormalize=True),
     "rawadd": lambda: E.add_safe(x, y, R), "rawmul": lambda: E.mul_truncated(x, y, R),
     "renorm": lambda: E.renormalize(x, R), "div": lambda: E.newton_div(x, y, R, renormalize=True),
     "sqrt": lambda: E.newton_sqrt(a, R, renormalize=True)}[op]
f()
for _ in range(calls):
    f()
"""


def count(R, op, n, calls, env) -> int:
    """Instructions of a process that calls the operation ``calls`` times (after a warm-up call)."""
    p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", _CALLS,
                        str(R), op, str(n), str(calls)], env=env, capture_output=True, text=True, check=True)
    return int(re.search(r"Collected : (\d+)", p.stderr).group(1))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", nargs="+", default=["3:add", "3:mul", "4:add", "4:mul", "4:rawadd", "4:rawmul",
                                                   "4:renorm", "4:div", "4:sqrt", "8:add", "8:mul", "8:div",
                                                   "16:add", "16:mul:1000:42", "16:div:1000:22", "32:add:1000:42",
                                                   "32:mul:1000:22"])
    ap.add_argument("--n", type=int, default=4000)
    ap.add_argument("--a", type=int, default=2)
    ap.add_argument("--b", type=int, default=102)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = ap.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: nothing counted")
        return 1
    assert args.n < fused.SERIAL_BELOW, "the counted calls must run on one thread"
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CPU_NAME": "haswell", "NUMBA_CPU_FEATURES": HASWELL, "NUMBA_CACHE_DIR": cache,
               "OMP_WAIT_POLICY": "passive", "PYTHONHASHSEED": "0"}
        for case in args.cases:
            R, op, *rest = case.split(":")
            n, b = (int(rest[0]), int(rest[1])) if rest else (args.n, args.b)
            assert n < fused.SERIAL_BELOW, "the counted calls must run on one thread"
            subprocess.run([sys.executable, "-c", _CALLS, R, op, "100", "0"], env=env, check=True)  # compile
            lo1, lo2 = count(R, op, n, args.a, env), count(R, op, n, args.a, env)
            hi = count(R, op, n, b, env)
            scale = (b - args.a) * n
            row = {"R": int(R), "operation": op, "n": n, "calls": [args.a, args.a, b],
                   "instructions": [lo1, lo2, hi], "per_expansion": (hi - (lo1 + lo2) / 2) / scale,
                   "uncertainty": abs(lo1 - lo2) / scale}
            print(json.dumps(row), flush=True)
            rows.append(row)
    header = {**environment(), "target": "haswell (AVX2, FMA) under valgrind",
              "command": "python -m bench.engine_instructions " + " ".join(argv if argv is not None else sys.argv[1:])}
    lines = ["# Instructions per expansion of the fused CPU engine (callgrind)", "",
             " ".join(f"{k}: {v};" for k, v in header.items()), "",
             "float64, random ulp-nonoverlapping operands, one thread; the engine compiled for AVX2 (valgrind has no "
             "AVX-512): an 8-lane vector operation is two instructions here, one on AVX-512 hosts.", "",
             "| R | operation | instructions per expansion | ± | n | calls |", "|---|---|---|---|---|---|"]
    lines += [f"| {r['R']} | {r['operation']} | {r['per_expansion']:.0f} | {r['uncertainty']:.0f} | {r['n']} "
              f"| {r['calls'][-1]} |" for r in rows]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"engine_instructions_{device_slug()}"
    (out / f"{stem}.md").write_text("\n".join(lines) + "\n")
    (out / f"{stem}.json").write_text(json.dumps({"header": header, "rows": rows}, indent=1))
    print(f"wrote {out / stem}.md and .json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
