"""Verification of the proven bounds: exact errors of the kernels' results against expansions.bounds.

For each (operation, R, dtype) the inputs are drawn from the adversarial families of the design
notes (:func:`expansions.testing.mixed_pairs`) and the edge families
(:func:`expansions.testing.edge_pairs`: interior zeros, subnormal terms, the top and the bottom of
the range), at leading exponents chosen so that every term is
exercised (:func:`centers`); the backend (the NumPy twins, the engine, or the GPU kernels) computes
the results, and the error of every result is computed exactly with rationals.  A row that measured
no error at all has the status :data:`NO_ERROR_MEASURED` (:func:`status`).  A case violates the bound when
its exact error exceeds the proven bound for that case:

* ``add_safe``: ``|x + y - s| <= B |x + y|`` (Prop. III.1); also counted: cases where ``s_0`` is not
  the correctly rounded sum (the paper states it is) and cases breaking the shape property
  ``|s_i| <= 2**(-(p-1)i + 2R-1) |s_0|`` stated after Prop. III.1;
* ``add_fast``: no bound (the row shows the observed error only);
* ``mul``: ``|xy - pi| <= B |x0 y0| + R(R+1)/2 * eta`` (Prop. IV.2 plus the underflow term of
  :func:`expansions.bounds.mul_underflow_term`);
* ``renormalize``: error-free (bound 0) for R-term input, and the output ulp-nonoverlapping;
* ``div``, ``reciprocal``, ``sqrt`` (Newton iterations, :mod:`expansions.cpu.newton`):
  ``|exact - q| <= B |exact| + R eta`` (:func:`expansions.bounds.div`, ``reciprocal``, ``sqrt``, plus
  :func:`expansions.bounds.newton_underflow_term`); the square root's check is decided exactly by
  comparing squares.
"""

from __future__ import annotations

import json
import math
import pathlib
import time
from dataclasses import asdict, dataclass, field
from fractions import Fraction

import mpmath
import numpy as np
from tqdm import tqdm

from . import backends
from . import bounds as B
from .formats import format_of
from .reference.exact import exact_rows
from .reference.fp import exponent, round_fraction, to_float
from .testing import SPREAD, edge_pairs, mixed_pairs

OPERATIONS = ("add_safe", "add_fast", "mul", "renormalize")
NEWTON_OPERATIONS = ("div", "reciprocal", "sqrt")
ALL_OPERATIONS = OPERATIONS + NEWTON_OPERATIONS


@dataclass
class Row:
    operation: str
    R: int
    dtype: str
    backend: str
    cases: int = 0
    nonfinite_cases: int = 0
    bound_log2: float | None = None
    bound_relative_to: str = ""
    bound_hypotheses_hold: bool = True
    max_error_log2: float | None = None  # largest observed error, relative to the bound's quantity
    max_ratio_log2: float | None = None  # largest error / bound (<= 0 means within the bound)
    violations: int = 0
    underflow_term: bool = False
    underflow_cases: int = 0  # cases whose bound is dominated by the underflow term (not in max error)
    s0_not_rn: int = 0
    property_violations: int = 0
    note: str = ""
    seconds: float = 0.0
    counterexample: dict = field(default_factory=dict)
    status: str = ""  # see :func:`status`


#: A row's status: its cases broke the bound (or the output property); it measured no error at all
#: (every result exact, or every case underflow-dominated: the row shows nothing about the bound);
#: every case within the bound, with errors measured.
VIOLATED, NO_ERROR_MEASURED, OK = "VIOLATED", "NO ERROR MEASURED", "ok"


def status(row: Row) -> str:
    """The row's status (:data:`VIOLATED`, :data:`NO_ERROR_MEASURED` or :data:`OK`).  The
    renormalization is error-free by its bound: an error of zero is what it measures."""
    if row.violations or (row.operation == "renormalize" and row.property_violations):
        return VIOLATED
    if row.operation != "renormalize" and (row.cases == 0 or row.max_error_log2 in (None, -math.inf)):
        return NO_ERROR_MEASURED
    return OK


def _log2(q: Fraction) -> float:
    if q == 0:
        return -math.inf
    return math.log2(q.numerator) - math.log2(q.denominator)


def _valid(terms) -> np.ndarray:
    return np.isfinite(terms).all(axis=1)


#: The largest exponent gap (bits beyond p) between the terms of :func:`expansions.generate.random_terms`.
GAP = 4
#: A result whose exponent is this far above ``emin + R p`` has an error above the underflow term.
ERROR_MARGIN = 64
ADDITIONS = ("add_safe", "add_fast", "renormalize")


def _pick(preferred: int, lo: int, hi: int) -> int:
    """``preferred`` clamped to [lo, hi]; ``hi`` (the result's side) when the interval is empty."""
    return hi if lo > hi else min(max(preferred, lo), hi)


def centers(op: str, R: int, dtype: str) -> tuple[int, int]:
    """The centers of the leading exponents of x and y for ``op`` at (R, dtype), chosen so that every
    term of an operand is a normal number (its last term ``(R-1)(p+GAP)`` bits below the leading one
    lies above ``emin``) and the result lies ``R p + ERROR_MARGIN`` bits above ``emin`` (its error is
    then above the underflow term), without overflow; 0 where that holds already.  Where the format
    cannot hold both (float32 beyond about R = 8, float64 beyond about R = 24), the result's side wins
    (its error is what the row measures) as far as the range allows."""
    fmt = format_of(dtype)
    operand = fmt.emin + (R - 1) * (fmt.p + GAP)  # lowest center whose operands' last terms are normal
    result = fmt.emin + R * fmt.p + ERROR_MARGIN  # lowest result exponent whose error is measurable
    top = fmt.emax - 4 - SPREAD  # leading exponents up to top + SPREAD: sums do not overflow
    if op in ADDITIONS:
        c = _pick(0, operand, top)
        return c, c
    if op == "mul":
        c = _pick(0, max(operand, -(-result // 2)), top // 2 - SPREAD)
        return c, c
    if op == "sqrt":
        c = _pick(0, max(operand, 2 * result), top)
        return c, c
    cy = _pick(0, operand, max(min(-result, top), fmt.emin + SPREAD))  # the divisor: 1/y near 2^-cy
    cx = _pick(cy, max(operand, cy + result), min(top, cy + top))
    return cx, cy


def inputs(N: int, R: int, dtype: str, rng: np.random.Generator, op: str, edge: bool = True):
    """The verification's pairs (x, y) for ``op``: the adversarial families
    (:func:`expansions.testing.mixed_pairs`) at the exponents of :func:`centers`, and (``edge``) a
    quarter of the cases from :func:`expansions.testing.edge_pairs` (the sparse rows at
    :func:`centers`, the partners of a multiplication where ``op`` is one)."""
    edge = N // 4 if edge else 0
    cx, cy = centers(op, R, dtype)
    x, y = mixed_pairs(N - edge, R, dtype, rng, center=cx)
    if cy != cx:
        y = mixed_pairs(N - edge, R, dtype, rng, center=cy)[1]
    if not edge:
        return x, y
    ex, ey = edge_pairs(edge, R, dtype, rng, centers=(cx, cy), product=op == "mul")
    return np.concatenate([x, ex]), np.concatenate([y, ey])


def _backend(name):
    """The backend of ``name`` and the function that moves a NumPy array to its device."""
    if name == "cpu":
        return backends.cpu, np.asarray
    if name == "engine":
        return backends.engine_backend(), np.asarray
    return backends.cuda, lambda a: backends.to_device(a, "cuda")


def verify_one(op: str, R: int, dtype: str, samples: int, seed: int, backend: str = "cpu", edge: bool = True) -> Row:
    """The row of ``op`` at (R, dtype) on ``samples`` cases of :func:`inputs` (``edge``: with the edge
    families)."""
    t0 = time.perf_counter()
    fmt = format_of(dtype)
    p = fmt.p
    row = Row(op, R, dtype, backend)
    rng = np.random.default_rng([seed, R, p, ALL_OPERATIONS.index(op)])
    if op in NEWTON_OPERATIONS:
        return _verify_newton(op, R, dtype, samples, rng, backend, row, t0, edge)
    x, y = inputs(samples, R, dtype, rng, op, edge)
    be, to_dev = _backend(backend)
    with np.errstate(all="ignore"):
        if op == "renormalize":
            raw = backends.cpu.add_fast(x, y, R)
            perm = rng.permuted(np.tile(np.arange(R), (raw.shape[0], 1)), axis=1)
            raw[::2] = np.take_along_axis(raw[::2], perm[::2], axis=1)  # unordered terms
            inp = (raw,)
            out = be.renormalize(to_dev(raw), R)
        else:
            inp = (x, y)
            fn = {"add_safe": be.add_safe, "add_fast": be.add_fast, "mul": be.mul_truncated}[op]
            out = fn(to_dev(x), to_dev(y), R)
    out = out.get() if hasattr(out, "get") else np.asarray(out)

    ok = _valid(out)
    for a in inp:
        ok &= _valid(a)
    row.nonfinite_cases = int((~ok).sum())
    idx = np.flatnonzero(ok)
    row.cases = int(idx.size)
    ex_out = exact_rows(out[idx])
    ex_in = [exact_rows(a[idx]) for a in inp]

    if op == "add_safe":
        bound = B.add_safe(R, p)
    elif op == "mul":
        bound = B.mul_truncated(R, p)
    else:
        bound = None
    if bound is not None:
        row.bound_log2 = bound.log2
        row.bound_relative_to = bound.relative_to
        row.bound_hypotheses_hold = bound.hypotheses_hold
        row.note = bound.note
    if op == "add_fast":
        row.note = "no proven bound (none under cancellation): observed error only"
        row.bound_relative_to = "|x + y|"
    if op == "renormalize":
        row.bound_log2 = -math.inf
        row.bound_relative_to = "|x|"
        row.note = "error-free for R-term input; property: output ulp-nonoverlapping"
    if op == "mul":
        row.underflow_term = True
        uterm = B.mul_underflow_term(R, fmt)

    worst_err = Fraction(0)
    worst_ratio = None
    shape_slack = 2 * R - 1
    for k, i in enumerate(idx):
        got = ex_out[k]
        if op in ("add_safe", "add_fast"):
            exact = ex_in[0][k] + ex_in[1][k]
            scale = abs(exact)
            case_bound = bound.value * scale if bound is not None else None
        elif op == "mul":
            exact = ex_in[0][k] * ex_in[1][k]
            scale = abs(Fraction(float(x[i, 0])) * Fraction(float(y[i, 0])))
            case_bound = bound.value * scale + uterm
        else:
            exact = ex_in[0][k]
            scale = abs(exact)
            case_bound = Fraction(0)
        err = abs(exact - got)
        if op == "mul" and uterm * (1 << 20) > case_bound - uterm:
            row.underflow_cases += 1
        elif scale:
            rel = err / scale
            if rel > worst_err:
                worst_err = rel
        elif err:
            worst_err = Fraction(10**9)
        if case_bound is not None:
            if err > case_bound:
                row.violations += 1
                if not row.counterexample:
                    row.counterexample = _case(inp, out, i)
            if case_bound > 0:
                ratio = err / case_bound
                worst_ratio = ratio if worst_ratio is None or ratio > worst_ratio else worst_ratio
        if op == "add_safe":
            rn = to_float(round_fraction(exact, fmt))
            if float(out[i, 0]) != rn:
                row.s0_not_rn += 1
                if "s0" not in row.counterexample:
                    row.counterexample["s0"] = _case(inp, out, i) | {"rn_of_exact_sum": float.hex(float(rn))}
            s0 = abs(Fraction(float(out[i, 0])))
            for t in range(1, R):
                if abs(Fraction(float(out[i, t]))) > s0 * Fraction(2) ** (-(p - 1) * t + shape_slack):
                    row.property_violations += 1
                    break
        if op == "renormalize":
            if not B.ulp_nonoverlapping([Fraction(float(v)) if v != 0 else 0.0 for v in out[i]], fmt):
                row.property_violations += 1
    row.max_error_log2 = _log2(worst_err)
    row.max_ratio_log2 = _log2(worst_ratio) if worst_ratio else (-math.inf if bound is not None else None)
    row.seconds = time.perf_counter() - t0
    row.status = status(row)
    return row


def _newton_inputs(op, x, y):
    if op == "div":
        return (x, y)
    if op == "reciprocal":
        return (y,)
    return (np.ascontiguousarray(np.where(x[:, :1] < 0, -x, x)),)  # sqrt: nonnegative radicands


def _verify_newton(op, R, dtype, samples, rng, backend, row, t0, edge=True):
    """div, reciprocal, sqrt: exact errors against bounds.div / reciprocal / sqrt + R eta."""
    fmt = format_of(dtype)
    x, y = inputs(samples, R, dtype, rng, op, edge)
    inp = _newton_inputs(op, x, y)
    with np.errstate(all="ignore"):
        be, to_dev = _backend(backend)
        out = backends.to_numpy(getattr(be, "newton_" + op)(*[to_dev(a) for a in inp], R))
    ok = _valid(out) & (out[:, 0] != 0)
    for a in inp:
        ok &= _valid(a) & (a[:, 0] != 0)
    row.nonfinite_cases = int((~ok).sum())
    idx = np.flatnonzero(ok)
    row.cases = int(idx.size)
    bound = {"div": B.div, "reciprocal": B.reciprocal, "sqrt": B.sqrt}[op](R, fmt)
    slack = B.newton_underflow_term(R, fmt)
    row.bound_log2, row.bound_relative_to = bound.log2, bound.relative_to
    row.bound_hypotheses_hold, row.underflow_term = bound.hypotheses_hold, True
    row.note = (bound.note + "; " if bound.note else "") + \
        "cases with a non-finite term or a zero leading term (operand or result) left out"
    ex_out = exact_rows(out[idx])
    ex_in = [exact_rows(a[idx]) for a in inp]
    worst_err, worst_ratio = -math.inf, -math.inf
    for k, i in enumerate(idx):
        got = ex_out[k]
        if op == "sqrt":
            a = ex_in[0][k]
            hi, lo, b = got - slack, got + slack, bound.value
            bad = (hi > 0 and hi * hi > (1 + b) ** 2 * a) or lo < 0 or lo * lo < (1 - b) ** 2 * a
            with mpmath.workprec(2 * R * fmt.p + 64):
                root = mpmath.sqrt(mpmath.mpf(a.numerator) / a.denominator)
                err = abs(mpmath.mpf(got.numerator) / got.denominator - root)
                rel = float(mpmath.log(err / root, 2)) if err else -math.inf
                ratio = float(mpmath.log(err / (root * mpmath.mpf(b.numerator) / b.denominator + mpmath.mpf(
                    slack.numerator) / slack.denominator), 2)) if err else -math.inf
        else:
            exact = ex_in[0][k] / ex_in[1][k] if op == "div" else 1 / ex_in[0][k]
            err = abs(exact - got)
            case_bound = bound.value * abs(exact) + slack
            bad = err > case_bound
            rel = _log2(err / abs(exact))
            ratio = _log2(err / case_bound)
        if bad:
            row.violations += 1
            if not row.counterexample:
                row.counterexample = _case(inp, out, i)
        size = ex_in[0][k] / ex_in[1][k] if op == "div" else (1 / ex_in[0][k] if op == "reciprocal" else None)
        if op == "sqrt":  # sqrt(a) >= a / 2**(e/2 + 1) for a in [2**e, 2**(e+1)): a lower bound of the root
            size = Fraction(2) ** ((exponent(ex_in[0][k]) >> 1) - 1)
        if slack * (1 << 20) > bound.value * abs(size):
            row.underflow_cases += 1  # the absolute term dominates: not in the max error column
        else:
            worst_err = max(worst_err, rel)
        worst_ratio = max(worst_ratio, ratio)
    row.max_error_log2, row.max_ratio_log2 = worst_err, worst_ratio
    row.seconds = time.perf_counter() - t0
    row.status = status(row)
    return row


def _case(inp, out, i):
    return {
        "inputs": [[float.hex(float(v)) for v in a[i]] for a in inp],
        "output": [float.hex(float(v)) for v in out[i]],
    }


def _fmt(v, nd=1):
    if v is None:
        return "-"
    if v == -math.inf:
        return "-inf"
    return f"{v:.{nd}f}"


def markdown(rows, header: dict) -> str:
    lines = [
        "# Bound verification",
        "",
        " ".join(f"{k}: {v};" for k, v in header.items()),
        "",
        "Errors are exact (rational arithmetic), relative to the quantity in `rel. to`. "
        "`ratio` = log2 of the largest error/bound over the cases (<= 0: every case within its bound). "
        "`mul` bounds include the underflow term R(R+1)/2*eta (design decision 9), the Newton operations "
        "(div, reciprocal, sqrt) the term R*eta of `bounds.newton_underflow_term`; `log2 max error` leaves out "
        "the `underflow` cases, where that term is more than 2^-20 of the bound. "
        "`s0!=RN`: cases where the safe addition's s0 is not the correctly rounded sum; "
        "`prop.`: cases breaking the output property (safe add: |s_i| <= 2^(-(p-1)i+2R-1)|s_0|; "
        "renormalize: ulp-nonoverlapping). "
        f"`status`: {VIOLATED} (a case beyond its bound), {NO_ERROR_MEASURED} (every result exact or every "
        "case underflow-dominated: the row shows nothing about the bound; the format cannot hold R terms "
        "of that result), ok.",
        "",
        "| operation | R | dtype | backend | status | cases | non-finite | log2 bound | rel. to | log2 max error "
        "| ratio | violations | underflow | s0!=RN | prop. | note |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.operation} | {r.R} | {r.dtype} | {r.backend} | {r.status or status(r)} | {r.cases} | "
            f"{r.nonfinite_cases} | "
            f"{_fmt(r.bound_log2)} | {r.bound_relative_to} | {_fmt(r.max_error_log2)} | "
            f"{_fmt(r.max_ratio_log2, 2)} | {r.violations} | "
            f"{r.underflow_cases if r.operation in ('mul',) + NEWTON_OPERATIONS else '-'} | "
            f"{r.s0_not_rn if r.operation == 'add_safe' else '-'} | "
            f"{r.property_violations if r.operation in ('add_safe', 'renormalize') else '-'} | {r.note} |"
        )
    blind = [f"{r.operation} R={r.R} {r.dtype}" for r in rows if (r.status or status(r)) == NO_ERROR_MEASURED]
    if blind:
        lines += ["", f"{len(blind)} rows measured no error ({NO_ERROR_MEASURED}): {', '.join(blind)}."]
    return "\n".join(lines) + "\n"


def run(terms, dtypes, operations, samples, seed, backend="cpu", progress=True):
    jobs = [(op, R, dt) for dt in dtypes for R in terms for op in operations]
    rows = []
    bar = tqdm(jobs, disable=not progress, unit="row", leave=False)
    for op, R, dt in bar:
        bar.set_description(f"{op} R={R} {dt}")
        rows.append(verify_one(op, R, dt, samples, seed, backend))
    return rows


def write(rows, header, out_dir):
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "verification.md").write_text(markdown(rows, header))
    data = {"header": header, "rows": [asdict(r) for r in rows]}
    (out / "verification.json").write_text(json.dumps(data, indent=1, default=str))
    return out
