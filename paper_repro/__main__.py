"""``python -m paper_repro``: the project's main job.

Runs, on the GPU when CuPy sees one and on the CPU otherwise: Tables I-IV of the primary paper with
the paper's K40 figures beside ours, a log-scale plot of Mop/s against R, the bound verification
table, and the double-word seeds' reproductions that are present; writes Markdown, JSON (device,
driver, CuPy version, commit, raw timings) and PNG under ``paper_repro/results/<device>/``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from pathlib import Path

from expansions import verify
from expansions.__main__ import device_slug, environment
from expansions.dw import verify as dw_verify

from . import collange2016

SEED_MODULES = ("seed002_dagraca", "seed000_warwick", "seed003_innocente", "seed004_surineni", "seed004_gpu",
                "seed004_tuning")
RESULTS = Path(__file__).resolve().parent / "results"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m paper_repro", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a run of a few minutes (fewer cases and repeats)")
    ap.add_argument("--backend", default="auto", choices=("auto", "cpu", "cuda"))
    ap.add_argument("--out", type=Path, default=None, help="results folder (default paper_repro/results/<device>)")
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: tables, verify, dw, seeds")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)

    env = environment()
    backend = args.backend
    if backend == "auto":
        backend = "cuda" if env.get("gpu_available") else "cpu"
    if backend == "cuda" and not env.get("gpu_available"):
        print("paper_repro: --backend cuda needs a GPU visible to CuPy", file=sys.stderr)
        return 2
    device_label = env["gpu_name"] if backend == "cuda" else f"CPU {env['processor']}"
    out = args.out or RESULTS / (device_slug() if backend == "cuda" else f"cpu-{env['machine']}".lower())
    out.mkdir(parents=True, exist_ok=True)
    skip = set(filter(None, args.skip.split(",")))
    progress = not args.no_progress
    t_start = time.time()
    summary = {"environment": env, "backend": backend, "device_label": device_label, "quick": args.quick,
               "command": "python -m paper_repro " + " ".join(argv if argv is not None else sys.argv[1:])}
    md = [f"# Reproduction results: {device_label}", "",
          f"Command: `{summary['command']}`; commit {env['commit']}; backend {backend}; "
          f"{'quick run' if args.quick else 'full run'}.", ""]
    if backend == "cpu":
        md += ["No GPU was visible: every figure below was measured on the CPU (the NumPy twins of the "
               "kernels) and is labelled so; the K40 columns are the paper's own figures, for scale.", ""]

    if "tables" not in skip:
        records = collange2016.measure(args.quick, backend, progress)
        summary["collange2016"] = records
        md += ["## Collange et al. 2016, Tables I-IV", "", collange2016.markdown(records, device_label)]
        png = collange2016.plot(records, out / "mops_vs_R.png", device_label)
        if png:
            md += [f"![Mop/s against R]({png.name})", ""]
        if backend == "cuda":
            stream = collange2016.measure_stream(args.quick, progress)
            summary["streaming"] = stream
            md += ["### Streaming (load two arrays, one operation, store)", "",
                   "| operation | algorithm | R | Mop/s | GB/s | fraction of bandwidth |", "|---|---|---|---|---|---|"]
            md += [f"| {r['operation']} | {r['algorithm']} | {r['R']} | {r.get('mops', 0):.4g} | "
                   f"{r.get('gbs', 0):.4g} | {r.get('fraction_of_bandwidth') or 0:.2f} |" for r in stream]
            checks = collange2016.aims(records, stream)
            summary["aims"] = checks
            md += ["", "### Aims (H100/H200)", "", "| aim | measured | met |", "|---|---|---|"]
            md += [f"| {c['aim']} | {c['measured']} | {'yes' if c['met'] else 'no'} |" for c in checks]
            md += [""]

    if "verify" not in skip:
        samples = 1000 if args.quick else 10000
        rows = verify.run((2, 3, 4, 8, 16, 32), ("float64", "float32"), verify.OPERATIONS, samples, 2016,
                          backend, progress=progress)
        rows += verify.run((2, 3, 4, 8, 16, 32), ("float64", "float32"), verify.NEWTON_OPERATIONS, samples, 2016,
                           backend, progress=progress)  # division, reciprocal, square root (Newton)
        header = {"command": f"python -m paper_repro (verification, {samples} samples)", "backend": backend}
        header.update(env)
        verify.write(rows, header, out)
        summary["verification_violations"] = sum(r.violations for r in rows)
        md += ["## Bound verification", "", f"See [verification.md](verification.md): "
               f"{sum(r.cases for r in rows)} cases, {summary['verification_violations']} violations.", ""]

    if "dw" not in skip:
        samples, climb = (500, 5) if args.quick else (3000, 40)
        rows = dw_verify.run(samples=samples, climb=climb, seed=2017, progress=progress)
        header = {"command": f"python -m paper_repro (double-word verification, {samples} samples, "
                             f"{climb} hill-climbing rounds)"} | env
        dw_verify.write(rows, header, out)
        bad = sum(r.violations for r in rows)
        summary["dw_verification_violations"] = bad
        summary["verification_violations"] = summary.get("verification_violations", 0) + bad
        md += ["## Double-word bounds (JMP 2017 Table 1)", "",
               f"See [dw_verification.md](dw_verification.md): {len(rows)} rows, {bad} violations.", ""]

    if "seeds" not in skip:
        for name in SEED_MODULES:
            try:
                mod = importlib.import_module(f"paper_repro.{name}")
            except ImportError:
                continue
            res = mod.run(quick=args.quick)
            summary[name] = res
            md += [mod.markdown(res), ""]
            png = mod.plot(res, out) if hasattr(mod, "plot") else None
            if png:
                md += [f"![{name}]({png.name})", ""]

    summary["seconds"] = time.time() - t_start
    (out / "results.json").write_text(json.dumps(summary, indent=1, default=str))
    (out / "tables.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    print(f"wrote {out}/tables.md, results.json" + (", mops_vs_R.png" if (out / "mops_vs_R.png").exists() else "")
          + (", verification.md" if "verify" not in skip else ""))
    return 1 if summary.get("verification_violations") else 0


if __name__ == "__main__":
    sys.exit(main())
