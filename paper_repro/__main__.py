"""``python -m paper_repro``: the project's main job.

Runs, on the GPU when CuPy sees one and on the CPU otherwise: Tables I-IV of the primary paper with
the paper's K40 figures beside ours, a log-scale plot of Mop/s against R, the bound verification
table, and the seeds' reproductions; writes Markdown, JSON (device, driver, CuPy version, commit,
raw timings, the mode and each part's time) and PNG under ``paper_repro/results/<device>/``.

Three sizes, recorded in every file it writes:

- default: a few minutes on a 2-core CPU: Tables I-IV, the plot, the verification table at a
  size that runs in about a minute, the double-word bounds and one seed's application (seed 003's
  Cholesky inversions); on a GPU the default is the full job;
- ``--full``: every part at the sizes of the committed results (about half an hour on the CPU);
- ``--quick``: the smallest run of every part, a smoke test (CI runs it).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from pathlib import Path

from tqdm import tqdm

from expansions import backends, verify
from expansions.__main__ import device_slug, environment
from expansions.dw import verify as dw_verify

from . import collange2016

SEED_MODULES = ("seed002_dagraca", "seed000_warwick", "seed003_innocente", "seed004_surineni", "seed004_gpu",
                "seed004_tuning")
RESULTS = Path(__file__).resolve().parent / "results"
VERIFY_TERMS = (2, 3, 4, 8, 16, 32)

#: What each mode runs: the tables' size (quick: fewer expansions and repeats), cases per row of the
#: verification table, the double-word verification's cases and hill-climbing rounds, the seeds and
#: their size.
MODES = {
    "quick": {"tables_quick": True, "verify_samples": 1000, "dw": (500, 5), "seeds": SEED_MODULES, "seeds_quick": True},
    "default": {"tables_quick": True, "verify_samples": 1000, "dw": (500, 5), "seeds": ("seed003_innocente",),
                "seeds_quick": True},
    "full": {"tables_quick": False, "verify_samples": 10000, "dw": (3000, 40), "seeds": SEED_MODULES,
             "seeds_quick": False},
}


def _mode(args, backend: str) -> str:
    if args.quick:
        return "quick"
    if args.full or backend == "cuda":  # on a GPU the default is the full job
        return "full"
    return "default"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m paper_repro", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="the smallest run of every part (a smoke test)")
    size.add_argument("--full", action="store_true", help="every part at full size (about half an hour on a CPU)")
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
    mode = _mode(args, backend)
    plan = MODES[mode]
    device_label = env["gpu_name"] if backend == "cuda" else f"CPU {env['processor']}"
    out = args.out or RESULTS / (device_slug() if backend == "cuda" else f"cpu-{env['machine']}".lower())
    out.mkdir(parents=True, exist_ok=True)
    skip = set(filter(None, args.skip.split(",")))
    progress = not args.no_progress
    t_start = time.time()
    command = "python -m paper_repro " + " ".join(argv if argv is not None else sys.argv[1:])
    summary = {"environment": env, "backend": backend, "device_label": device_label, "mode": mode,
               "quick": mode == "quick", "command": command.strip()}
    md = [f"# Reproduction results: {device_label}", "",
          f"Command: `{summary['command']}`; commit {env['commit']}; backend {backend}; mode **{mode}** "
          f"({_describe(mode, plan)}).", ""]
    if backend == "cpu":
        summary["cpu_backend"] = collange2016.backend_label(backends.cpu_backend())
        md += ["No GPU was visible: every figure below was measured on the CPU and says what ran it. Tables "
               "I-IV and the plot: the default CPU backend (`expansions.backends.cpu_backend()`: "
               f"{summary['cpu_backend']}), what users run, with the NumPy twins (the executable specification) "
               "in columns of their own; the K40 columns are the paper's own figures, for scale.", ""]

    parts = []
    if "tables" not in skip:
        parts.append("tables")
    if "verify" not in skip:
        parts.append("verify")
    if "dw" not in skip:
        parts.append("dw")
    if "seeds" not in skip:
        parts += [f"seed:{name}" for name in plan["seeds"]]
    seconds, cpu_seconds = {}, {}
    bar = tqdm(parts, disable=not progress, unit="part", desc="paper_repro", position=0)
    for part in bar:
        bar.set_postfix_str(part)
        t0, c0 = time.perf_counter(), time.process_time()
        if part == "tables":
            md += _tables(summary, out, backend, plan, device_label, progress)
        elif part == "verify":
            md += _verify(summary, out, backend, plan, env, mode, progress)
        elif part == "dw":
            md += _dw(summary, out, plan, env, mode)
        else:
            md += _seed(summary, out, part.split(":", 1)[1], plan)
        seconds[part], cpu_seconds[part] = time.perf_counter() - t0, time.process_time() - c0
    bar.close()

    summary["part_seconds"] = seconds
    summary["part_cpu_seconds"] = cpu_seconds  # CPU time of this process (all its threads)
    summary["seconds"] = time.time() - t_start
    md += ["## Time of each part", "", f"Mode {mode}, {summary['seconds']:.0f} s in all on {device_label}.", "",
           "| part | seconds | CPU seconds (all threads of this process) |", "|---|---|---|"]
    md += [f"| {p} | {s:.1f} | {cpu_seconds[p]:.1f} |" for p, s in seconds.items()] + [""]
    (out / "results.json").write_text(json.dumps(summary, indent=1, default=str))
    (out / "tables.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    print(f"wrote {out}/tables.md, results.json" + (", mops_vs_R.png" if (out / "mops_vs_R.png").exists() else "")
          + (", verification.md" if "verify" not in skip else ""))
    print(f"mode {mode}: " + ", ".join(f"{p} {s:.0f} s" for p, s in seconds.items())
          + f"; {summary['seconds']:.0f} s in all (CPU {sum(cpu_seconds.values()):.0f} s)")
    return 1 if summary.get("verification_violations") else 0


def _describe(mode: str, plan: dict) -> str:
    samples, climb = plan["dw"]
    tables = "quick" if plan["tables_quick"] else "full"
    return (f"tables {tables}, verification {plan['verify_samples']} cases per row, "
            f"double-word bounds {samples} cases and {climb} hill-climbing rounds, seeds: "
            f"{', '.join(plan['seeds'])} ({'quick' if plan['seeds_quick'] else 'full'})")


def _tables(summary, out, backend, plan, device_label, progress) -> list[str]:
    quick = plan["tables_quick"]
    records = collange2016.measure(quick, backend, progress)
    summary["collange2016"] = records
    md = ["## Collange et al. 2016, Tables I-IV", "", collange2016.markdown(records, device_label)]
    png = collange2016.plot(records, out / "mops_vs_R.png", device_label)
    if png:
        md += [f"![Mop/s against R]({png.name})", ""]
    if backend == "cuda":
        stream = collange2016.measure_stream(quick, progress)
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
    return md


def _verify(summary, out, backend, plan, env, mode, progress) -> list[str]:
    samples = plan["verify_samples"]
    rows = verify.run(VERIFY_TERMS, ("float64", "float32"), verify.OPERATIONS, samples, 2016, backend,
                      progress=progress)
    rows += verify.run(VERIFY_TERMS, ("float64", "float32"), verify.NEWTON_OPERATIONS, samples, 2016, backend,
                       progress=progress)  # division, reciprocal, square root (Newton)
    header = {"command": f"python -m paper_repro, mode {mode} (verification, {samples} samples)", "mode": mode,
              "backend": backend}
    header.update(env)
    verify.write(rows, header, out)
    summary["verification_violations"] = sum(r.violations for r in rows)
    blind = [f"{r.operation} R={r.R} {r.dtype}" for r in rows if r.status == verify.NO_ERROR_MEASURED]
    summary["verification_rows_without_error"] = blind
    return ["## Bound verification", "", f"See [verification.md](verification.md): "
            f"{sum(r.cases for r in rows)} cases, {summary['verification_violations']} violations; "
            f"{len(blind)} rows measured no error.", ""]


def _dw(summary, out, plan, env, mode) -> list[str]:
    samples, climb = plan["dw"]
    rows = dw_verify.run(samples=samples, climb=climb, seed=2017, progress=False)
    header = {"command": f"python -m paper_repro, mode {mode} (double-word verification, {samples} samples, "
                         f"{climb} hill-climbing rounds)", "mode": mode} | env
    dw_verify.write(rows, header, out)
    bad = sum(r.violations for r in rows)
    summary["dw_verification_violations"] = bad
    summary["verification_violations"] = summary.get("verification_violations", 0) + bad
    return ["## Double-word bounds (JMP 2017 Table 1)", "",
            f"See [dw_verification.md](dw_verification.md): {len(rows)} rows, {bad} violations.", ""]


def _seed(summary, out, name, plan) -> list[str]:
    try:
        mod = importlib.import_module(f"paper_repro.{name}")
    except ImportError:
        return []
    res = mod.run(quick=plan["seeds_quick"])
    summary[name] = res
    md = [mod.markdown(res), ""]
    png = mod.plot(res, out) if hasattr(mod, "plot") else None
    if png:
        md += [f"![{name}]({png.name})", ""]
    return md


if __name__ == "__main__":
    sys.exit(main())
