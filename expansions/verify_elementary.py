"""Accuracy of the elementary functions against mpmath: ``python -m expansions verify --elementary``.

For each (function, R, dtype): random arguments over the function's domain (:func:`random_arguments`,
R-term expansions with random tails) and hard cases (:func:`hard_arguments`: near the zeros of sin,
cos and tan, near 1 for log, the overflow and underflow edges of exp, subnormal results, huge
arguments such as 1e300, exact cases such as exp(0), log(1), sin(0)).  Each argument is exact (the
sum of its terms), mpmath evaluates f at ``effective_bits + 80`` bits (mpmath reduces huge
trigonometric arguments with the precision they need), and the error of the result y is

    |y - f(x)| / max(unit |f(x)|, eta, eta |f'(x)| for tan)

with ``unit = expansions.bounds.elementary_unit(R, fmt)`` (u_R = 2^-(p-1)R, or the format's floor
where the underflow threshold limits an expansion near 1) and eta the smallest subnormal.  A
result that must overflow (f beyond the largest float) or underflow to zero must be exactly inf or
0 (else an infinite error).  A tan case whose allowance eta |f'(x)| exceeds |f(x)| >= 1 (x within
about eta of a pole, where the reduced argument is not representable) is not counted.  The stated
bound is :func:`expansions.bounds.elementary` (empirical).
"""

from __future__ import annotations

import json
import math
import pathlib
import time
from dataclasses import asdict, dataclass, field

import mpmath
import numpy as np
from tqdm import tqdm

from . import backends
from . import bounds as B
from .cpu.kernels import renormalize
from .formats import effective_bits, format_of
from .reference.exact import exact_rows, round_to_expansion, to_floats
from .reference.mpf import fraction_from_mpf, mpf_from_fraction

FUNCTIONS = B.ELEMENTARY

_MP = {
    "exp": mpmath.exp, "expm1": mpmath.expm1, "log": mpmath.log, "log1p": mpmath.log1p,
    "log2": lambda x: mpmath.log(x, 2), "log10": mpmath.log10, "sin": mpmath.sin, "cos": mpmath.cos,
    "tan": mpmath.tan, "atan": mpmath.atan, "asin": mpmath.asin, "acos": mpmath.acos, "sinh": mpmath.sinh,
    "cosh": mpmath.cosh, "tanh": mpmath.tanh, "atan2": mpmath.atan2, "pow": mpmath.power,
}


@dataclass
class Row:
    function: str
    R: int
    dtype: str
    random_cases: int = 0
    hard_cases: int = 0
    bound_units: float = 0.0
    unit: str = ""
    max_error_units: float = 0.0
    max_error_hard_units: float = 0.0
    violations: int = 0
    seconds: float = 0.0
    worst: dict = field(default_factory=dict)


# ----------------------------------------------------------------------------------------------
# arguments


def _expansions(lead, R, dt, rng):
    """R-term expansions with the given leading values and random tails (renormalized)."""
    dt = np.dtype(dt)
    p = format_of(dt).p
    lead = np.asarray(lead, dtype=np.float64).astype(dt)
    t = np.zeros((lead.size, R), dtype=dt)
    t[:, 0] = lead
    for i in range(1, R):
        t[:, i] = (t[:, i - 1].astype(np.float64) * rng.uniform(-1, 1, lead.size) * 2.0 ** -p).astype(dt)
    with np.errstate(all="ignore"):
        return renormalize(np.where(np.isfinite(t), t, 0), R)


def _log_uniform(rng, n, lo, hi, signed=True):
    v = 2.0 ** rng.uniform(lo, hi, n)
    return v * rng.choice([-1.0, 1.0], n) if signed else v


def _exact(values, R, dt):
    """R-term expansions of exact values (mpmath numbers or callables returning them), rounded."""
    fmt = format_of(dt)
    with mpmath.workprec(6000):
        return np.array([to_floats(round_to_expansion(fraction_from_mpf(v() if callable(v) else mpmath.mpf(v)), R,
                                                      fmt), dt) for v in values]).reshape(-1, R)


def random_arguments(name, n, R, dt, rng):
    """(n, R) arguments (a tuple of two arrays for atan2 and pow) over the function's domain."""
    fmt = format_of(dt)
    lo, hi = (fmt.emin - fmt.p - 1) * math.log(2), (fmt.emax + 1) * math.log(2)
    k = n // 2
    if name == "exp":
        lead = np.concatenate([rng.uniform(lo - 2, hi + 2, k), _log_uniform(rng, n - k, -60, 5)])
    elif name == "expm1":
        lead = np.concatenate([rng.uniform(lo, hi, k), _log_uniform(rng, n - k, -100, 2)])
    elif name in ("log", "log2", "log10"):
        lead = np.concatenate([2.0 ** rng.uniform(fmt.emin - fmt.p + 1, fmt.emax, k),
                               1 + _log_uniform(rng, n - k, -60, -1)])
    elif name == "log1p":
        lead = np.concatenate([2.0 ** rng.uniform(-10, fmt.emax, k), _log_uniform(rng, n - k, -100, -0.01)])
    elif name in ("sin", "cos", "tan"):
        a, b = n // 3, 2 * n // 3
        lead = np.concatenate([rng.uniform(-10, 10, a), _log_uniform(rng, b - a, -60, fmt.emax),
                               _log_uniform(rng, n - b, -30, 30)])
    elif name == "atan":
        lead = np.concatenate([_log_uniform(rng, k, -60, 60), rng.uniform(-2, 2, n - k)])
    elif name in ("asin", "acos"):
        lead = np.concatenate([rng.uniform(-1, 1, k), (1 - 2.0 ** -rng.uniform(1, fmt.p, n - k))
                               * rng.choice([-1.0, 1.0], n - k)])
    elif name in ("sinh", "cosh"):
        lead = np.concatenate([rng.uniform(-hi - 2, hi + 2, k), _log_uniform(rng, n - k, -60, 3)])
    elif name == "tanh":
        lead = _log_uniform(rng, n, -60, 9)
    elif name == "atan2":
        return (_expansions(_log_uniform(rng, n, -30, 30), R, dt, rng),
                _expansions(_log_uniform(rng, n, -30, 30), R, dt, rng))
    elif name == "pow":
        x = _log_uniform(rng, n, -20, 20, signed=False)
        y = rng.uniform(-1, 1, n) * rng.uniform(0, 0.95 * hi, n) / np.abs(np.log(x))
        neg = rng.random(n) < 0.2  # negative bases with integer exponents
        y = np.where(neg, np.rint(np.clip(y, -60, 60)), y)
        xs = _expansions(np.where(neg, -x, x), R, dt, rng)
        ys = _expansions(y, R, dt, rng)
        ys[neg] = 0
        ys[neg, 0] = np.rint(y[neg]).astype(dt)
        return xs, ys
    else:
        raise ValueError(name)
    return _expansions(lead, R, dt, rng)


def hard_arguments(name, R, dt):
    """The hard and exact cases of the function (see the module docstring), as R-term expansions."""
    fmt = format_of(dt)
    big = 1e300 if fmt.p == 53 else 1e38
    lo, hi = (fmt.emin - fmt.p + 1) * math.log(2), fmt.emax * math.log(2)
    tiny = 2.0 ** (fmt.emin - fmt.p + 1)
    near_pi = [lambda k=k: k * mpmath.pi / 2 for k in (1, 2, 3, 4, 5, 100, 12345678, 2**20 + 1)]
    table = {
        "exp": [0, 1, -1, 2.0**-60, -(2.0**-60), hi, hi + 0.5, lo, lo + 1, lo - 1, lo + 20, 0.9 * lo,
                lambda: 10 * mpmath.log(2), lambda: -100 * mpmath.log(2), tiny],
        "expm1": [0, 2.0**-80, -(2.0**-80), tiny, 0.5, -0.5, lambda: mpmath.log(2), hi, lo],
        "log": [1, lambda: mpmath.e, 2, 0.5, tiny, 2.0**fmt.emax, lambda: 1 + mpmath.mpf(2) ** -(fmt.p * R // 2),
                lambda: 1 - mpmath.mpf(2) ** -(fmt.p * R // 2), lambda: 1 + mpmath.mpf(2) ** -((fmt.p - 1) * R - 2),
                lambda: mpmath.sqrt(2), lambda: 1 / mpmath.sqrt(2)],
        "log1p": [0, 2.0**-80, -(2.0**-80), -0.5, 0.5, 1, tiny, lambda: mpmath.e - 1],
        "log2": [1, 2, 0.5, 2.0**fmt.emax, tiny, 3, lambda: 1 + mpmath.mpf(2) ** -(fmt.p * R // 2)],
        "log10": [1, 10, 1000, 0.1, 1e22 if fmt.p == 53 else 1e10, tiny, 2.0**fmt.emax],
        "sin": [0, tiny, big, -big, 2.0 ** (fmt.emax - 23), 1e22 if fmt.p == 53 else 1e20, *near_pi],
        "atan": [0, 1, -1, tiny, 2.0**60, -(2.0**60), lambda: mpmath.tan(1), 2.0 ** (fmt.emax - 1)],
        "asin": [0, 1, -1, 0.5, tiny, lambda: mpmath.sin(mpmath.mpf(1) / 2),
                 lambda: 1 - mpmath.mpf(2) ** -(fmt.p * R // 2), lambda: -1 + mpmath.mpf(2) ** -(fmt.p * R // 2)],
        "sinh": [0, tiny, 2.0**-60, 0.5, -0.5, hi, -hi, hi + 0.6, 20, -20],
        "tanh": [0, tiny, 2.0**-60, 0.5, -0.5, 20, -20, 400, -400],
    }
    table["cos"] = table["tan"] = table["sin"]
    table["acos"] = table["asin"]
    table["cosh"] = table["sinh"]
    if name == "atan2":
        ys = [0, 1, 1, -1, tiny, -tiny, 1, lambda: mpmath.sin(1), 2.0**60]
        xs = [1, 0, -1, -1, -1, -1, 2.0**-60, lambda: mpmath.cos(1), 1]
        return _exact(ys, R, dt), _exact(xs, R, dt)
    if name == "pow":
        # and near 1: x = 1 -+ 2^-k, y = +-20 / log x with |y| about a quarter of the exponent limit up to
        # which the stated bound holds (bounds.pow_exponent_limit)
        limit = B.pow_exponent_limit(R, fmt)
        k = min(-fmt.emin - 2, limit.numerator.bit_length() - limit.denominator.bit_length() - 9)
        near = [lambda s=s: 1 + s * mpmath.mpf(2) ** -k for s in (-1, 1)]
        xs = [2, 2, 10, -2, 2, 0.5, lambda: mpmath.e, 3, 1.5, *near]
        ys = [0.5, -(fmt.p - fmt.emin - 1), 3, 3, fmt.emax, 2, lambda: mpmath.log(2), -2, lambda: mpmath.pi,
              *[lambda v=v: 20 / mpmath.log(v()) for v in near]]
        return _exact(xs, R, dt), _exact(ys, R, dt)
    return _exact(table[name], R, dt)


# ----------------------------------------------------------------------------------------------
# errors against mpmath


def _mpf_rows(terms):
    out = []
    for q, row in zip(exact_rows(np.where(np.isfinite(terms), terms, 0)), terms):
        out.append(mpf_from_fraction(q) if np.isfinite(row).all() else mpmath.mpf(float(row[0])))
    return out


def errors(name, args, out, R, dt):
    """Errors of the results ``out`` (N, R) of ``name`` on ``args`` in units (see the module docstring);
    a case whose exact f is not a finite real (a domain edge) is skipped (NaN)."""
    fmt = format_of(dt)
    unit = mpf_from_fraction(B.elementary_unit(R, fmt))
    eta = mpf_from_fraction(fmt.eta)
    largest = mpf_from_fraction(fmt.largest)
    prec = effective_bits(R, fmt, 0) + 80
    ins = [_mpf_rows(a) for a in args]
    res = _mpf_rows(out)
    errs = np.full(out.shape[0], np.nan)
    for i in range(out.shape[0]):
        wp = prec
        if name in ("sin", "cos", "tan"):  # room for the cancellation near multiples of pi/2
            wp = 2 * prec + max(0, int(mpmath.mag(ins[0][i])) if ins[0][i] else 0)
        with mpmath.workprec(wp):
            try:
                f = _MP[name](*[a[i] for a in ins])
            except (ValueError, ZeroDivisionError):
                continue
        if not isinstance(f, mpmath.mpf) or not mpmath.isfinite(f):
            continue
        y = res[i]
        if name == "tan" and abs(f) >= 1 and eta * (1 + f * f) >= abs(f):
            continue  # x within about eta of a pole: the reduced argument is not representable; not counted
        if abs(f) > largest:
            errs[i] = 0.0 if mpmath.isinf(y) and mpmath.sign(y) == mpmath.sign(f) else math.inf
            continue
        if not mpmath.isfinite(y):
            errs[i] = math.inf
            continue
        with mpmath.workprec(64):
            scale = max(unit * abs(f), eta)
            if name == "tan":
                scale = max(scale, eta * (1 + f * f))
        with mpmath.workprec(2 * prec + 2200):
            d = abs(y - f)
        with mpmath.workprec(64):
            errs[i] = float(d / scale)
    return errs


def verify_one(name, R, dtype, samples, seed) -> Row:
    dt = np.dtype(dtype)
    rng = np.random.default_rng([seed, R, FUNCTIONS.index(name), dt.itemsize])
    t0 = time.perf_counter()
    rand = random_arguments(name, samples, R, dt, rng)
    hard = hard_arguments(name, R, dt)
    rand, hard = (rand if isinstance(rand, tuple) else (rand,)), (hard if isinstance(hard, tuple) else (hard,))
    fn = backends.cpu_backend().elementary(name)  # the twin, on the engine's operations by default (same bits)
    with np.errstate(all="ignore"):
        out_r, out_h = fn(*rand, R), fn(*hard, R)
    er, eh = errors(name, rand, out_r, R, dt), errors(name, hard, out_h, R, dt)
    bound = B.elementary(name, R, format_of(dt))
    units = float(bound.value / B.elementary_unit(R, format_of(dt)))
    row = Row(name, R, dt.name, int(np.sum(~np.isnan(er))), int(np.sum(~np.isnan(eh))), units,
              "u_R" if "u_R" in bound.note else "floor")
    allerr = np.concatenate([er, eh])
    row.max_error_units = float(np.nanmax(er)) if np.any(~np.isnan(er)) else 0.0
    row.max_error_hard_units = float(np.nanmax(eh)) if np.any(~np.isnan(eh)) else 0.0
    row.violations = int(np.sum(allerr > units))
    if np.any(~np.isnan(allerr)):
        i = int(np.nanargmax(allerr))
        ins = [np.concatenate([a, b]) for a, b in zip(rand, hard)]
        outs = np.concatenate([out_r, out_h])
        row.worst = {"inputs": [[float.hex(float(v)) for v in a[i]] for a in ins],
                     "output": [float.hex(float(v)) for v in outs[i]], "error_units": float(allerr[i])}
    row.seconds = round(time.perf_counter() - t0, 2)
    return row


def _fmt(v):
    if v == 0:
        return "0"
    if math.isinf(v):
        return "inf"
    return f"{v:.3g}"


def markdown(rows, header: dict) -> str:
    lines = [
        "# Elementary functions: accuracy against mpmath",
        "",
        " ".join(f"{k}: {v};" for k, v in header.items()),
        "",
        "Errors in units of `max(unit |f(x)|, eta)` (`eta |f'(x)|` too for tan): `unit` is u_R = 2^-(p-1)R, or "
        "the format's floor 2^-(effective bits near 1 - 1) where R(p-1)+1 bits do not fit above the underflow "
        "threshold (`floor`: float32 R >= 7, float64 R >= 21).  `bound` is `expansions.bounds.elementary` "
        "(EMPIRICAL, not proven).  `random`: random arguments over the domain; `hard`: the hard and exact cases "
        "of `expansions.verify_elementary.hard_arguments`.",
        "",
        "| function | R | dtype | random | hard | unit | bound | max error (random) | max error (hard) "
        "| violations | seconds |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r.function} | {r.R} | {r.dtype} | {r.random_cases} | {r.hard_cases} | {r.unit} | "
                     f"{_fmt(r.bound_units)} | {_fmt(r.max_error_units)} | {_fmt(r.max_error_hard_units)} | "
                     f"{r.violations} | {r.seconds} |")
    return "\n".join(lines) + "\n"


def samples_for(R: int, samples: int, by_terms: dict | None) -> int:
    """The random cases of a row: ``by_terms[R]`` when given, else ``samples``."""
    return (by_terms or {}).get(R, samples)


def run(terms, dtypes, functions, samples, seed, by_terms=None, progress=True):
    jobs = [(f, R, dt) for dt in dtypes for R in terms for f in functions]
    rows = []
    bar = tqdm(jobs, disable=not progress, unit="row", leave=False)
    for f, R, dt in bar:
        bar.set_description(f"{f} R={R} {dt}")
        rows.append(verify_one(f, R, dt, samples_for(R, samples, by_terms), seed))
    return rows


def write(rows, header, out_dir):
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "elementary.md").write_text(markdown(rows, header))
    data = {"header": header, "rows": [asdict(r) for r in rows]}
    (out / "elementary.json").write_text(json.dumps(data, indent=1, default=str))
    return out


def summary(out_dir) -> str:
    """The README's table from a run's elementary.json: per function, the largest error (random and
    hard cases) over the rows whose unit is u_R, per dtype, and over the floor-limited rows, with the
    rows' R values.  ``python -m expansions.verify_elementary <dir>`` writes it to <dir>/summary.md."""
    data = json.loads((pathlib.Path(out_dir) / "elementary.json").read_text())
    rows = [Row(**r) for r in data["rows"]]
    groups = [("float64", "u_R"), ("float32", "u_R"), (None, "floor")]
    heads = []
    for dt, unit in groups:
        Rs = sorted({r.R for r in rows if r.unit == unit and (dt is None or r.dtype == dt)})
        kinds = sorted({r.dtype for r in rows if r.unit == unit and (dt is None or r.dtype == dt)})
        heads.append(f"{'/'.join(kinds)} R = {','.join(map(str, Rs))} ({unit})")
    lines = ["| function | " + " | ".join(heads) + " | random cases per row | violations |",
             "|---|" + "---|" * (len(groups) + 2)]
    for name in FUNCTIONS:
        cells = []
        for dt, unit in groups:
            sel = [r for r in rows if r.function == name and r.unit == unit and (dt is None or r.dtype == dt)]
            worst = max((max(r.max_error_units, r.max_error_hard_units) for r in sel), default=None)
            bound = max((r.bound_units for r in sel), default=None)
            cells.append("-" if worst is None else f"{_fmt(worst)} (bound {_fmt(bound)})")
        mine = [r for r in rows if r.function == name]
        if not mine:
            continue
        counts = sorted({r.random_cases for r in mine}, reverse=True)
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {', '.join(map(str, counts))} | "
                     f"{sum(r.violations for r in mine)} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    import sys

    target = pathlib.Path(sys.argv[1])
    (target / "summary.md").write_text(summary(target))
    print(summary(target))
