"""Surineni 2017 (seed 004), chapters 6-7: the precision auto-tuner, reproduced with
:func:`expansions.tune` on this library's programs (CPU figures here).

* The thesis's example (its Figures 28 and 31): ``a*b + c``, where the product contributes little to
  the sum, so that the product can run at a lower precision than the addition.  Here a and b are
  random 4-term expansions of order 1 and c of order 2^100: the product at R = 2 (106 bits) errs by
  about 2^-106 of itself, 2^-206 of the sum, below a threshold of 2^-200.
* A real program tuned for two thresholds: eight steps of the Hénon map (x, y) -> (1 - 1.4 x^2 + y,
  0.3 x) at R = 8 (the application of the primary paper's reference [3]; examples/henon.py runs it
  for 1000 steps), tuned for relative errors of 1e-60 and 1e-100.

For each: the operations' declared and tuned numbers of terms, the error on the samples and on fresh
inputs near them against the program at twice the terms, and the fused program's time before and
after, measured on this machine's CPU.  Also the command-line form:
``python -m expansions tune paper_repro.seed004_tuning:axpc --rel-error 1e-60``.
"""

from __future__ import annotations

import numpy as np

import expansions as ex
from expansions.generate import random_terms

HENON_STEPS = 8


def axpc(a, b, c):
    """The thesis's example program."""
    return a * b + c


def axpc_samples(n: int = 4096, seed: int = 4):
    a = ex.from_terms(random_terms((n,), 4, "float64", seed=seed, exponent_range=(0, 1)))
    b = ex.from_terms(random_terms((n,), 4, "float64", seed=seed + 1, exponent_range=(0, 1)))
    c = ex.from_terms(random_terms((n,), 4, "float64", seed=seed + 2, exponent_range=(100, 101)))
    return a, b, c


def henon(x, y, steps: int = HENON_STEPS):
    """``steps`` steps of the Hénon map (a = 1.4, b = 0.3 as the floats nearest them)."""
    for _ in range(steps):
        x, y = 1.0 - 1.4 * (x * x) + y, 0.3 * x
    return x, y


def henon_samples(n: int = 4096, seed: int = 3):
    """Points near the attractor: 20 float64 steps from random starts, then 8 terms."""
    rng = np.random.default_rng(seed)
    x, y = rng.uniform(-0.1, 0.1, n), rng.uniform(-0.1, 0.1, n)
    for _ in range(20):
        x, y = 1 - 1.4 * x * x + y, 0.3 * x
    return ex.array(x, terms=8), ex.array(y, terms=8)


def _row(name, threshold, tuned):
    r = tuned.report
    return {"program": name, "rel_error": threshold, "report": r.markdown(), "original_error": r.original_error,
            "tuned_error": r.tuned_error, "validation_error": r.validation_error,
            "original_seconds": r.original_seconds, "tuned_seconds": r.tuned_seconds, "speedup": r.speedup,
            "terms": [(n.op, n.declared_terms, n.terms, n.method) for n in r.nodes]}


def run(quick: bool = True, seed: int = 2017) -> dict:
    n, steps = (256, 2) if quick else (8192, HENON_STEPS)
    rows = [_row("a*b + c", 2.0 ** -200, ex.tune(axpc, *axpc_samples(n), rel_error=2.0 ** -200))]
    for threshold in (1e-60, 1e-100):
        rows.append(_row(f"Hénon map, {steps} steps, R = 8", threshold,
                         ex.tune(lambda x, y: henon(x, y, steps), *henon_samples(n), rel_error=threshold)))
    return {"rows": rows, "samples": n, "device": "cpu (CPU figures)"}


def markdown(res: dict) -> str:
    out = ["## Seed 004 (Surineni 2017), chapters 6-7: the precision auto-tuner (expansions.tune)", "",
           f"CPU figures ({res['samples']} sample inputs; times of the fused program on this machine's CPU).", ""]
    for r in res["rows"]:
        out += [f"### {r['program']}, threshold {r['rel_error']:.3g}", "", r["report"]]
    return "\n".join(out) + "\n"
