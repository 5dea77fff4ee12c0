"""The bound verification on the GPU's results (:mod:`expansions.verify`): ``verify`` (second stage,
10^6 cases per (operation, R)) and ``verify_full_<op>`` (third stage, 10^7), in chunks on a pool of
worker processes, each with its CUDA context."""

from __future__ import annotations

import dataclasses
import multiprocessing

from expansions import verify
from expansions.cuda import build

from .common import CUDA_INIT_S, RESERVE_S, Context, cpu_figure, part, process_start
from .units import kernel_unit

PARTS: dict = {}


VERIFY_OPS = ("add_safe", "add_fast", "mul")
VERIFY_RS = (2, 4, 8)
#: Cases per (operation, R) in the second stage (the issue's 10^7 is the third stage's: see
#: :func:`_verify_full_part`); chunks of :data:`VERIFY_CHUNK` cases, one per worker process.
VERIFY_CASES = 10**6
VERIFY_FULL_CASES = 10**7
VERIFY_CHUNK = 62_500
VERIFY_JOBS = 16


def _verify_instances():
    kernel = {"add_safe": "add_safe", "add_fast": "add_fast", "mul": "mul_truncated"}
    return [build.instance(kernel[op], "float64", R) for op in VERIFY_OPS for R in VERIFY_RS]


def _units_verify():
    return [kernel_unit(i) for i in _verify_instances()]


def _estimate_verify(budget, cases=VERIFY_CASES, ops=VERIFY_OPS):
    rates = cpu_figure(budget, "verify_seconds_per_case", {})
    cpu, missing = 0.0, []
    for op in ops:
        for R in VERIFY_RS:
            r = rates.get(f"{op} {R}")
            if r is None:
                missing.append(f"{op} {R}")
                r = 1e-4
            cpu += r * cases
    workers = VERIFY_JOBS
    wall = cpu / workers + process_start(budget) + CUDA_INIT_S + 2.0  # workers start in parallel
    return {"seconds": round(wall + process_start(budget), 1), "cpu": round(cpu, 1), "device": None,
            "missing": missing, "detail": f"{len(ops) * len(VERIFY_RS)} (operation, R) x {cases:.0e} cases, "
            f"float64, exact errors at the measured rate ({cpu:.0f} CPU seconds) on {workers} processes"}


def _verify_chunk(args):
    op, R, dtype, n, seed, backend = args
    row = verify.verify_one(op, R, dtype, n, seed, backend)
    return dataclasses.asdict(row)


def merge_rows(rows: list[dict]) -> dict:
    """One verification row from the rows of its chunks: counts summed, maxima taken, the first
    counterexample kept."""
    out = dict(rows[0])
    for key in ("cases", "nonfinite_cases", "violations", "underflow_cases", "s0_not_rn", "property_violations"):
        out[key] = sum(r[key] for r in rows)
    for key in ("max_error_log2", "max_ratio_log2"):
        vals = [r[key] for r in rows if r[key] is not None]
        out[key] = max(vals) if vals else None
    out["seconds"] = sum(r["seconds"] for r in rows)
    out["counterexample"] = next((r["counterexample"] for r in rows if r["counterexample"]), {})
    out["chunks"] = len(rows)
    return out


def _log(v) -> str:
    return "none (no bound)" if v is None else f"2^{v:.1f}"


def run_verification(ctx: Context, cases: int, name: str, ops=VERIFY_OPS):
    """The verification of ``ops`` at :data:`VERIFY_RS`, ``cases`` per (operation, R), float64, on the
    device's results, in chunks on a pool of worker processes (each with its CUDA context)."""
    backend = "cpu" if ctx.device.rehearsal else "cuda"
    cases = ctx.size(cases, 64)
    chunk = min(VERIFY_CHUNK, cases)
    rec = {"part": name, "device": ctx.device.label, "status": "partial", "cases_per_row": cases, "rows": []}
    jobs = [(op, R) for op in ops for R in VERIFY_RS]
    mp = multiprocessing.get_context("spawn")
    with mp.Pool(1 if ctx.device.rehearsal else VERIFY_JOBS) as pool:
        for op, R in jobs:
            if ctx.left() < RESERVE_S:
                rec["stopped"] = "deadline"
                break
            args = [(op, R, "float64", chunk, [2016, k], backend) for k in range(-(-cases // chunk))]
            parts = pool.map(_verify_chunk, args)
            rec["rows"].append(merge_rows(parts))
            ctx.save(name, rec)
    bad = sum(r["violations"] + r["property_violations"] for r in rec["rows"])
    if "stopped" not in rec:
        rec["status"] = "failed" if bad else "passed"
    total = sum(r["cases"] for r in rec["rows"])
    rec["summary"] = [f"{len(rec['rows'])} of {len(jobs)} (operation, R), {total} cases: {bad} violations"
                      + (" (rehearsal: the twins' results)" if ctx.device.rehearsal else "")]
    rec["summary"] += [f"{r['operation']} R={r['R']}: max error {_log(r['max_error_log2'])}, max error / bound "
                       f"{_log(r['max_ratio_log2'])}, violations {r['violations']}" for r in rec["rows"]]
    ctx.save(name, rec)


@part(PARTS, "verify", "second", f"the bound verification (expansions.verify) of the safe and fast additions and the "
      f"multiplication at R = 2, 4, 8, float64, {VERIFY_CASES:.0e} cases per (operation, R), on the GPU's results, "
      "16 processes", units=_units_verify, estimate=_estimate_verify)
def run_verify(ctx: Context):
    run_verification(ctx, VERIFY_CASES, "verify")


def _verify_full_part(op: str):
    """The third stage's verification of ``op`` at 10^7 cases per R (one part per operation: each fits a
    command)."""
    kernel = {"add_safe": "add_safe", "add_fast": "add_fast", "mul": "mul_truncated"}[op]
    name = f"verify_full_{op}"

    def units():
        return [kernel_unit(build.instance(kernel, "float64", R)) for R in VERIFY_RS]

    def run(ctx: Context):
        run_verification(ctx, VERIFY_FULL_CASES, name, (op,))

    part(PARTS, name, "third", f"the bound verification of {op} at {VERIFY_FULL_CASES:.0e} cases per R = 2, 4, 8 "
         "(the issue's size; the second stage runs 10^6)", units=units,
         estimate=lambda budget: _estimate_verify(budget, VERIFY_FULL_CASES, (op,)))(run)


for _op in VERIFY_OPS:
    _verify_full_part(_op)

