"""The instruction model of the kernels (design decision 12, issue 13): an upper bound of each kernel's
Mop/s on an H100 SXM and an H200 from its compiled SASS, without a GPU.

    python -m bench.model [--only SUBSTRING] [--rs 2,3,4,8,16,32] [--output bench/results/model_sm90]

For every kernel the library launches (:data:`expansions.cuda.build.OPERATIONS`) and every benchmark
kernel (``bench/kernels.cu``), R in {2, 3, 4, 8, 16, 32}, float64 and float32:

1. NVRTC 13 compiles it for sm_90 with the library's options and nvdisasm prints its SASS
   (:mod:`bench.sass`);
2. the steady state of one operation is walked (:func:`bench.sass.walk`): the body of the benchmark's
   loop of K operations in registers, or of a library kernel's grid-stride loop (load, operate,
   store), with the data-dependent loops (``warp_any`` exits) run as the CPU twins run them on the
   benchmark's own inputs, warp by warp (:mod:`bench.model.votes`: the twins themselves, recorded
   through the seam of :mod:`expansions.cpu.lanes`);
3. the warp instructions per operation are counted by class, and the bound is
   SMs x clock x min over the resources (issue slots, FP64 pipe, FP32 pipe, shuffle unit, and for the
   library kernels memory bandwidth) of rate / use per operation (:mod:`bench.model.core`).

4. the floor of each cell (:func:`bench.model.core.floor_per_op`): the algorithm's own floating-point
   operations, shuffles and votes per operation, charged per event as the twins run
   (:mod:`bench.model.votes`), its bound, and the counted instructions over it, with the reasons and
   fixes of the misses (:data:`bench.model.report.REASONS`).  The operations that renormalize in
   registers have two cells: the raw kernel (``…, false>``, the paper's, with the K40 column) and the
   renormalizing one (``…, true>``, what the library launches: the votes and the floor are the
   operation's, then the renormalization's).

5. at R = 2, the library's double-word kernels (one thread per number, ``bench::best_dw`` in
   bench/kernels.cu, every name of ``expansions.dispatch.R2_METHODS``) beside NVIDIA CCCL ``fpmp``'s
   double-double figures, with issue 13's goal for the H100 (:func:`bench.model.report.r2_section`,
   :data:`bench.model.core.FPMP`).

Writes ``<output>.json`` (every cell, the counts, the tools' versions, the date, the commit, the
command) and ``<output>.md`` (:mod:`bench.model.report`).  Cells whose code the walk cannot account
for (calls, per-thread data-dependent branches) are listed as not modeled, with the reason.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import time
from pathlib import Path

from bench import sass
from bench.model import core, votes
from bench.model.report import markdown
from expansions.cuda import build

OUTPUT = core.ROOT / "bench" / "results" / "model_sm90"


def meta(argv) -> dict:
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=core.ROOT, capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = None
    return {"nvrtc": sass.nvrtc_version(), "nvdisasm": sass.nvdisasm_version(), "arch": sass.ARCH,
            "options": list(build.OPTIONS), "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds"), "commit": commit, "command": " ".join(["python -m bench.model", *argv]),
            "rates_per_sm_clock": core.RATES, "devices": core.DEVICES, "goal_over_k40": core.GOAL_OVER_K40,
            "fpmp": core.FPMP,
            "inputs": {"best": {"blocks": votes.BEST_BLOCKS, "threads": votes.BEST_THREADS, "K": votes.BEST_K,
                                "seeds": [3, 4]},
                       "stream": {"count": votes.STREAM_COUNT, "seeds": [1, 2]}, "sample": core.SAMPLE,
                       "newton_sample": core.NEWTON_SAMPLE}}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(prog="python -m bench.model", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default=None, help="model only the kernels whose name expression contains this")
    ap.add_argument("--rs", default=",".join(map(str, core.RS)), help="comma-separated R values")
    ap.add_argument("--dtypes", default=",".join(core.DTYPES))
    ap.add_argument("--output", type=Path, default=OUTPUT, help="path without suffix (.json and .md are written)")
    ap.add_argument("--out", type=Path, default=None, help="a folder: write model_sm90.json and .md there instead")
    ap.add_argument("--measured", type=Path, default=None,
                    help="paper_repro's results.json from a GPU: measured Mop/s beside the bound")
    ap.add_argument("--ncu-worst", type=int, default=0, help="(for tools/gpu_run.py; Nsight Compute runs are not "
                    "implemented yet: the option is accepted and says so)")
    ap.add_argument("--render", action="store_true", help="rewrite the .md from the .json, computing nothing")
    args = ap.parse_args(argv)
    if args.render:
        data = json.loads(args.output.with_suffix(".json").read_text())
        args.output.with_suffix(".md").write_text(markdown(data["records"], data["meta"]))
        return 0
    if args.out is not None:
        args.output = args.out / OUTPUT.name
    why = sass.missing_tools()
    if why:
        print(why, file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    records = core.run(tuple(int(r) for r in args.rs.split(",")), tuple(args.dtypes.split(",")), args.only)
    info = meta(argv)
    info["seconds"] = round(time.perf_counter() - t0, 1)
    if args.measured is not None:
        info["measured"] = {"path": str(args.measured), "cells": core.add_measured(records, args.measured)}
    if args.ncu_worst:
        print(f"--ncu-worst {args.ncu_worst}: Nsight Compute runs are not implemented in bench.model yet")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.with_suffix(".json").write_text(json.dumps({"meta": info, "records": records}, indent=1) + "\n")
    args.output.with_suffix(".md").write_text(markdown(records, info))
    print(f"{len(records)} cells in {info['seconds']} s: wrote {args.output.with_suffix('.md')} and .json")
    return 0
