"""The public API beside its native peers, QD and MPFR, in one run (issue 28, item 4).

What a user gets from ``x + y``, ``x - y``, ``x * y``, ``x / y``, ``ex.sqrt(x)``, ``ex.exp(x)``,
``ex.log(x)``, ``ex.sin(x)`` on arrays of ``--n`` expansions of R float64 terms (R in 2, 3, 4, 8, 16,
32), against a small C++ program built here at run time (``bench/native/peers.cpp``, ``g++ -O3
-march=native``) that times the same operations on the same values with

* QD 2.3 (Debian's ``libqd-dev``): ``dd_real`` at R = 2 and ``qd_real`` at R = 4 (QD has no other
  R), through its operators and functions as installed (Debian's ``qd_config.h`` leaves
  ``QD_IEEE_ADD`` undefined: ``+`` and ``-`` are QD's sloppy additions; the column ``QD ieee add``
  times ``dd_real::ieee_add`` / ``qd_real::ieee_add``, the accurate one);
* MPFR (Debian's ``libmpfr-dev``) at 53 R bits: ``mpfr_add``, ``mpfr_sub``, ``mpfr_mul``,
  ``mpfr_div``, ``mpfr_sqrt``, ``mpfr_exp``, ``mpfr_log``, ``mpfr_sin`` with ``MPFR_RNDN`` over arrays
  of preinitialised ``mpfr_t``.

A missing compiler or library skips its columns, with the reason in the output and the results.

Values.  x and y: ``ex.array(v, terms=R)`` of random values v with full tails: v is an expansion of
R + 1 float64 terms (``expansions.generate.random_terms``, leading exponent in [-1, 1], so |v| in
[0.5, 4), random signs, each next term 53 to 57 binades lower), correctly rounded by ``ex.array`` to
R terms.  At R = 32 the values are random 32-term expansions as they are (their tails reach the
float64 underflow threshold, where ``ex.array``'s vectorized rounding cannot certify its results),
with the terms below 2^-1022 zero.  The square root and the logarithm take |x| (``abs(x)``), the
others x; sin and exp therefore see moderate arguments, |x| < 4.  The C++ program reads the same
terms: QD takes them as they are (correctly rounded expansions are QD's normalized form, so the
values are the same), MPFR takes their exact sum rounded once to 53 R bits (``mpfr_sum``).

Timing.  Mop/s = elements / second / 10^6, the median of ``--repeats`` timed calls.  Each cell is
sized first: one untimed call on 64 elements (the library compiles there), then calls from 64
elements up, at most 16x more a step, until one call on the count takes about ``--budget`` seconds
or the count reaches ``--n``; the repeats then run on that count, fewer where one call on 64
elements already takes more than twice the budget (``repeats * budget / seconds``, at least one).  The
counts, the sizing calls' times and every timed call are recorded per cell.  The C++ program sizes
its cells the same way.

* One core: the library with ``numba.set_num_threads(1)`` (its NumPy steps are single threaded);
  the peers are plain loops in one thread (no parallel region is entered).
* All cores: the library on ``--n-all`` elements (10^6) with one thread and with all of numba's
  threads, on the same count, and the ratio; ``--peers-all-cores`` also runs the peers' loops under
  OpenMP on all cores.

Sanity check: the results of the first ``--check`` elements of every peer cell, printed exactly by
the C++ program, against the library's on the same elements: the largest relative difference and
the bits of agreement, flagged where fewer than 3/4 of min(53 R, 1074) bits agree (a check that both
time the same operation; the library and the peers round differently).

Goals: the issue's "Goals" section as data (:data:`GOALS`), evaluated on the one-core ratios (met,
or missed by a factor); the explanations of misses are read from ``bench/native/explanations.json``
(filled from measurements: instructions per element, vector width; none is invented here).

    python -m bench.native [--quick] [--terms 2,3,4,8,16,32] [--ops add,sub,mul,div,sqrt,exp,log,sin]
                           [--n 100000] [--n-all 1000000] [--repeats 5] [--budget 0.25]
                           [--check 8] [--peers-all-cores] [--no-all-cores] [--note TEXT]

writes ``bench/results/native_cpu-<machine>.json`` (every timing, the environment), ``.md`` (the
tables, the goals' verdicts) and ``.log`` (the raw output of the run).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import math
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

import expansions as ex
from expansions.__main__ import environment
from expansions.generate import random_terms

from . import cpu_model

OPS = ("add", "sub", "mul", "div", "sqrt", "exp", "log", "sin")
TERMS = (2, 3, 4, 8, 16, 32)
QD_TERMS = {2: "dd_real", 4: "qd_real"}
HERE = Path(__file__).resolve().parent
SOURCE = HERE / "native" / "peers.cpp"
EXPLANATIONS = HERE / "native" / "explanations.json"
FLAGS = ("-O3", "-march=native", "-std=c++17")
PEERS = ("qd", "qd_ieee", "mpfr")
PEER_NAMES = {"qd": "QD", "qd_ieee": "QD ieee add", "mpfr": "MPFR"}

# The goals of issue 28 (one core, public API, same run as the peers): (R, operations, peer, the
# required ratio expansions / peer).  The scaling goal: all threads over one thread on 10^6
# elements, stated for two cores.
GOALS = (
    (2, ("add", "mul"), "qd", 0.8),
    (2, ("div", "sqrt"), "qd", 0.5),
    (2, ("exp", "log", "sin"), "qd", 0.2),
    (2, ("exp", "log", "sin"), "mpfr", 2.0),
    (4, ("add", "mul"), "qd", 1.0),
    (4, ("div", "sqrt"), "qd", 0.5),
    (4, ("exp", "log", "sin"), "mpfr", 1.0),
    (8, ("add", "mul", "div", "sqrt"), "mpfr", 1.0),
    (16, ("add", "mul", "div", "sqrt"), "mpfr", 1.0),
    (32, ("add", "mul"), "mpfr", 0.5),
)
SCALING_GOAL = (2, 1.8)  # (threads, required speedup over one thread)


# ---------------------------------------------------------------------------------------------
# the operands and the public operations


def values(n: int, R: int, seed: int) -> ex.ExpansionArray:
    """n random float64 expansions of R terms with full tails (see the module's doc)."""
    if R < 32:
        raw = random_terms((n,), R + 1, "float64", seed=seed, exponent_range=(-1, 1))
        return ex.array(ex.from_terms(raw), terms=R)
    return ex.from_terms(random_terms((n,), R, "float64", seed=seed, exponent_range=(-1, 1), min_exponent=-1022))


def operands(n: int, R: int, seed: int = 0):
    """x, y and p = |x| (for sqrt and log)."""
    x = values(n, R, seed=2 * seed + R)
    y = values(n, R, seed=2 * seed + R + 1000)
    return x, y, abs(x)


def public(op: str, x, y, p):
    """The public call of ``op`` on the operands, as a function of nothing (timed as it is)."""
    return {"add": lambda: x + y, "sub": lambda: x - y, "mul": lambda: x * y, "div": lambda: x / y,
            "sqrt": lambda: ex.sqrt(p), "exp": lambda: ex.exp(x), "log": lambda: ex.log(p),
            "sin": lambda: ex.sin(x)}[op]


# ---------------------------------------------------------------------------------------------
# timing (the C++ program sizes its cells by the same rule)


def measure(make, n: int, repeats: int, budget: float, start: int = 64) -> dict:
    """Time ``make(k)()`` for a count k <= n: one untimed call on ``start`` elements (the library
    compiles there), then sizing calls from ``start`` elements up, at most 16x a step, until a call
    takes about ``budget`` seconds or k = n; then ``repeats`` timed calls on k, fewer where one call
    takes more than twice ``budget`` (:func:`repeats_within`).  Returns n (= k), mops
    (of the median), seconds, sizing_seconds."""
    with np.errstate(all="ignore"):
        make(min(n, start))()
        k = min(n, start)
        sizing = [_seconds(make(k))]
        while k < n:
            nxt = min(n, 16 * k, int(k * budget / max(sizing[-1], 1e-9)))
            if nxt <= k:
                break
            k = nxt
            sizing.append(_seconds(make(k)))
        f = make(k)
        secs = [_seconds(f) for _ in range(repeats_within(repeats, budget, sizing[-1]))]
    return {"n": k, "mops": k / statistics.median(secs) / 1e6, "seconds": secs, "sizing_seconds": sizing}


def repeats_within(repeats: int, budget: float, seconds: float) -> int:
    """The timed calls of a cell whose one call takes ``seconds``: ``repeats``, or where a call takes
    more than twice ``budget``, ``repeats * budget / seconds`` (at least one): such a cell takes about
    ``repeats * budget``."""
    return repeats if seconds <= 2 * budget else max(1, min(repeats, int(repeats * budget / seconds)))


def _seconds(f) -> float:
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def spread(seconds) -> float:
    """max / min - 1 of a cell's timed calls: the noise of the run."""
    return max(seconds) / min(seconds) - 1 if seconds and min(seconds) > 0 else float("nan")


# ---------------------------------------------------------------------------------------------
# the peers' program


def compiler() -> tuple[str | None, str]:
    """The C++ compiler ($CXX or g++) and its version line, or (None, why)."""
    cxx = os.environ.get("CXX") or "g++"
    path = shutil.which(cxx)
    if path is None:
        return None, f"no C++ compiler: {cxx} is not on PATH (set CXX or install g++)"
    out = subprocess.run([path, "--version"], capture_output=True, text=True)
    return path, (out.stdout.splitlines() or ["unknown"])[0]


PROBES = {
    "qd": ("#include <qd/dd_real.h>\n#include <qd/qd_real.h>\nint main() { qd_real a(2.0); dd_real b(2.0);"
           " return to_double(sqrt(a)) + to_double(exp(b)) > 0 ? 0 : 1; }\n",
           ["-lqd"], "install libqd-dev"),
    "mpfr": ("#include <mpfr.h>\nint main() { mpfr_t a; mpfr_init2(a, 106); mpfr_set_d(a, 2.0, MPFR_RNDN);"
             " mpfr_sqrt(a, a, MPFR_RNDN); mpfr_clear(a); return 0; }\n",
             ["-lmpfr", "-lgmp"], "install libmpfr-dev"),
    "openmp": ("#include <omp.h>\nint main() { return omp_get_max_threads() > 0 ? 0 : 1; }\n", ["-fopenmp"], ""),
}


def probe(cxx: str, what: str, folder: Path) -> str | None:
    """None when ``what`` (a key of :data:`PROBES`) compiles and links, else the reason."""
    src, libs, hint = PROBES[what]
    (folder / f"{what}.cpp").write_text(src)
    cmd = [cxx, "-O1", str(folder / f"{what}.cpp"), "-o", str(folder / what), *libs]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode == 0:
        return None
    lines = [ln for ln in out.stderr.splitlines() if "error" in ln] or out.stderr.splitlines() or ["failed"]
    return f"{lines[0].strip()}" + (f" ({hint})" if hint else "")


def cache_root() -> Path:
    env = os.environ.get("EXPANSIONS_CACHE_DIR")
    return (Path(env) if env else Path.home() / ".cache" / "expansions") / "bench_native"


def build(cache: Path | None = None, source: Path = SOURCE) -> dict:
    """Build the peers' program (``source``: bench/native/peers.cpp, or another benchmark's) with the
    libraries present.  Returns {binary (None when nothing could be built), command, compiler,
    available: {qd, mpfr, openmp: bool}, reasons: {lib: why}}."""
    cxx, cxx_version = compiler()
    info = {"binary": None, "command": None, "compiler": cxx_version,
            "available": {"qd": False, "mpfr": False, "openmp": False}, "reasons": {}}
    if cxx is None:
        info["reasons"] = {"qd": cxx_version, "mpfr": cxx_version}
        return info
    cache = Path(cache) if cache is not None else cache_root()
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for what in PROBES:
            why = probe(cxx, what, Path(tmp))
            info["available"][what] = why is None
            if why is not None:
                info["reasons"][what] = why
    if not (info["available"]["qd"] or info["available"]["mpfr"]):
        return info
    flags = list(FLAGS) + (["-fopenmp"] if info["available"]["openmp"] else [])
    defines = [f"-DBENCH_{lib.upper()}" for lib in ("qd", "mpfr") if info["available"][lib]]
    libs = (["-lqd"] if info["available"]["qd"] else []) + (["-lmpfr", "-lgmp"] if info["available"]["mpfr"] else [])
    key = hashlib.sha256("\0".join([Path(source).read_text(), cxx, cxx_version, cpu_model(), *flags, *defines,
                                    *libs]).encode())  # -march=native: the CPU is part of the key
    binary = cache / key.hexdigest()[:16] / "peers"
    cmd = [cxx, *flags, *defines, str(source), "-o", str(binary), *libs]
    info["command"] = " ".join(cmd)
    if not binary.exists():
        binary.parent.mkdir(parents=True, exist_ok=True)
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            why = f"the peers' program did not build: {out.stderr.strip()[-500:]}"
            info["reasons"].update({"qd": why, "mpfr": why})
            info["available"].update({"qd": False, "mpfr": False})
            return info
    info["binary"] = str(binary)
    info["libraries"] = json.loads(subprocess.run([str(binary), "info"], capture_output=True, text=True,
                                                  check=True).stdout)
    return info


def run_peers(binary: str, R: int, folder: Path, n: int, libs, ops, repeats: int, budget: float, check: int,
              threads: int, log) -> list[dict]:
    """Run the program on the terms in ``folder`` (x.bin, y.bin, p.bin): its JSON lines, parsed."""
    cmd = [binary, str(R), str(n), str(folder), ",".join(libs), ",".join(ops), str(repeats), str(budget),
           str(check), str(threads)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    for line in out.stdout.splitlines():
        log(line)
    if out.stderr.strip():
        log(out.stderr.strip())
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited with {out.returncode}: {out.stderr.strip()[-300:]}")
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def write_terms(folder: Path, x, y, p) -> None:
    for name, a in (("x", x), ("y", y), ("p", p)):
        np.ascontiguousarray(a.terms, dtype="<f8").tofile(folder / f"{name}.bin")


# ---------------------------------------------------------------------------------------------
# the sanity check: a peer's results against the library's, exactly


def exact_terms(row) -> Fraction | float:
    """The exact sum of float terms (a non-finite sum as that float)."""
    row = [float(t) for t in row]
    if not all(math.isfinite(t) for t in row):
        return sum(row)
    return sum((Fraction(t) for t in row), Fraction(0))


def exact_peer(lib: str, item) -> Fraction | float:
    """The exact value of a peer's printed result: QD's doubles (%a), MPFR's base-16 digits and
    exponent (0.digits * 16^exponent)."""
    if lib.startswith("qd"):
        return exact_terms([float.fromhex(s) for s in item])
    digits, e = item
    if "@" in digits:  # @NaN@, @Inf@, -@Inf@
        return float(digits.replace("@", "").lower())
    sign = -1 if digits.startswith("-") else 1
    digits = digits.lstrip("-")
    return sign * int(digits, 16) * Fraction(16) ** (int(e) - len(digits))


def relative_difference(peer, lib) -> float | None:
    """|peer - lib| / |lib| (|peer| where lib = 0) as log2; None where they are equal.  Non-finite:
    None if the same, +inf otherwise."""
    if isinstance(peer, float) or isinstance(lib, float):
        same = (peer == lib) or (isinstance(peer, float) and isinstance(lib, float) and math.isnan(peer)
                                 and math.isnan(lib))
        return None if same else math.inf
    if peer == lib:
        return None
    d = abs(peer - lib) / (abs(lib) if lib != 0 else 1)
    return math.log2(d.numerator) - math.log2(d.denominator)


def expected_bits(R: int) -> float:
    """The agreement the sanity check asks for: 3/4 of min(53 R, 1074) bits."""
    return 0.75 * min(53 * R, 1074)


def sanity(cell: dict, lib_terms: np.ndarray) -> dict:
    """The check of one peer cell: elements compared, the largest log2 relative difference (None:
    all equal), the bits of agreement and whether they reach :func:`expected_bits`."""
    diffs = [relative_difference(exact_peer(cell["lib"], item), exact_terms(row))
             for item, row in zip(cell["check"], lib_terms)]
    worst = max((d for d in diffs if d is not None), default=None)
    bits = math.inf if worst is None else -worst
    return {"R": cell["R"], "op": cell["op"], "lib": cell["lib"], "elements": len(diffs),
            "max_log2_relative_difference": worst, "agreement_bits": None if worst is None else bits,
            "expected_bits": expected_bits(cell["R"]), "ok": bool(diffs) and bits >= expected_bits(cell["R"])}


# ---------------------------------------------------------------------------------------------
# the goals


def goal_rows(terms, ops) -> list[dict]:
    """The goals of :data:`GOALS` that fall on the measured R and operations, one row each."""
    return [{"R": R, "op": op, "peer": peer, "required": req}
            for R, gops, peer, req in GOALS if R in terms for op in gops if op in ops]


def verdict(ratio: float | None, required: float, why_absent: str = "not measured") -> dict:
    """met / missed by a factor (required / ratio), or not measured."""
    if ratio is None:
        return {"status": "not measured", "ratio": None, "factor": None, "text": why_absent}
    if ratio >= required:
        return {"status": "met", "ratio": ratio, "factor": ratio / required,
                "text": f"met: {ratio:.3g}x >= {required:g}x"}
    return {"status": "missed", "ratio": ratio, "factor": required / ratio,
            "text": f"missed by {required / ratio:.3g}x: {ratio:.3g}x < {required:g}x"}


def evaluate_goals(mops: dict, terms, ops, reasons: dict | None = None) -> list[dict]:
    """Each goal row with its verdict; ``mops[(R, op, executor)]``, executor ``expansions`` or a peer;
    ``reasons[peer]`` says why a peer is absent."""
    reasons = reasons or {}
    out = []
    for g in goal_rows(terms, ops):
        e, p = mops.get((g["R"], g["op"], "expansions")), mops.get((g["R"], g["op"], g["peer"]))
        why = ("expansions not measured" if e is None else
               f"{PEER_NAMES[g['peer']]} not measured" + (f": {reasons[g['peer']]}" if g["peer"] in reasons else ""))
        out.append({**g, **verdict(e / p if e and p else None, g["required"], why)})
    return out


def evaluate_scaling(all_cores: list[dict]) -> list[dict]:
    """The scaling goal on each all-cores cell: evaluated where all threads are two (the goal's
    statement), otherwise recorded as not evaluated."""
    threads, required = SCALING_GOAL
    out = []
    for c in all_cores:
        row = {"R": c["R"], "op": c["op"], "n": c["n"], "threads": c["threads"], "required": required}
        if c["threads"] != threads:
            row.update(verdict(None, required, f"not evaluated: the goal is stated for {threads} threads, this run "
                                               f"had {c['threads']} (NUMBA_NUM_THREADS={threads} evaluates it)"))
            row["ratio"] = c["speedup"]
        else:
            row.update(verdict(c["speedup"], required))
        out.append(row)
    return out


def explanations() -> dict:
    """The explanations of missed goals, keyed ``"R op peer"`` (``"R op scaling"``), from
    bench/native/explanations.json (filled from measurements)."""
    try:
        data = json.loads(EXPLANATIONS.read_text())
    except FileNotFoundError:
        return {}
    return {k: v for k, v in data.items() if not k.startswith("_")}


# ---------------------------------------------------------------------------------------------
# the run


def versions() -> dict:
    v = {}
    for dist in ("numpy", "numba", "llvmlite"):
        try:
            v[dist] = version(dist)
        except PackageNotFoundError:
            v[dist] = "absent"
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Package} ${Version}, ", "libqd-dev", "libmpfr-dev",
                              "libgmp-dev"], capture_output=True, text=True)
        v["debian packages"] = out.stdout.strip(" ,") or out.stderr.strip()
    except OSError as exc:
        v["debian packages"] = f"unknown ({exc})"
    return v


def run_terms(R: int, args, peers: dict, threads: int, log) -> dict:
    """Every cell at R: the library on one thread, the peers, the sanity checks, all cores."""
    import numba  # the engine's compiler: imported only when a benchmark runs

    out = {"one_core": [], "peers": [], "peers_all_cores": [], "all_cores": [], "checks": [], "notes": []}
    peers_all = args.all_cores and args.peers_all_cores and peers["available"]["openmp"]
    x, y, p = operands(max(args.n, args.n_all if args.all_cores else 0), R)

    def make(op):
        return lambda k: public(op, x[:k], y[:k], p[:k])

    numba.set_num_threads(1)
    for op in args.ops:  # the library, one thread
        cell = measure(make(op), args.n, args.repeats, args.budget)
        out["one_core"].append({"R": R, "op": op, "executor": "expansions", "threads": 1, **cell})
        log(f"R={R:2d} {op:4s} expansions 1T   n={cell['n']:7d} {cell['mops']:10.4g} Mop/s  "
            f"spread {spread(cell['seconds']):.1%}")
    libs = [lib for lib in ("qd", "qd_ieee") if R in QD_TERMS and peers["available"]["qd"]]
    libs += ["mpfr"] if peers["available"]["mpfr"] else []
    if peers["binary"] and libs:  # the peers on the first elements of the same operands
        with tempfile.TemporaryDirectory() as tmp:
            k = max(args.n, args.n_all if peers_all else 0)
            write_terms(Path(tmp), x[:k], y[:k], p[:k])
            try:
                out["peers"] = run_peers(peers["binary"], R, Path(tmp), args.n, libs, args.ops, args.repeats,
                                         args.budget, args.check, 1, log)
                if peers_all:
                    out["peers_all_cores"] = run_peers(peers["binary"], R, Path(tmp), args.n_all, libs, args.ops,
                                                       args.repeats, args.budget, 0, threads, log)
            except RuntimeError as exc:
                out["notes"].append(f"R = {R}: the peers' program failed: {exc}")
                log(f"note: {out['notes'][-1]}")
        for c in out["peers"]:
            with np.errstate(all="ignore"):
                mine = make(c["op"])(args.check)().terms
            out["checks"].append(sanity(c, mine))
    if args.all_cores:  # the library on all cores beside one core, on the same count
        for op in args.ops:
            cell = measure(make(op), args.n_all, args.repeats, args.budget)
            f = make(op)(cell["n"])
            numba.set_num_threads(threads)
            with np.errstate(all="ignore"):
                secs = [_seconds(f)]  # the first call on all threads, untimed
                secs = [_seconds(f) for _ in range(repeats_within(args.repeats, args.budget, secs[0]))]
            numba.set_num_threads(1)
            mops_all = cell["n"] / statistics.median(secs) / 1e6
            out["all_cores"].append({"R": R, "op": op, "n": cell["n"], "threads": threads, "mops_1t": cell["mops"],
                                     "seconds_1t": cell["seconds"], "sizing_seconds": cell["sizing_seconds"],
                                     "mops_all": mops_all, "seconds_all": secs, "speedup": mops_all / cell["mops"]})
            log(f"R={R:2d} {op:4s} expansions 1T/{threads}T n={cell['n']:7d} {cell['mops']:10.4g} / "
                f"{mops_all:.4g} Mop/s  x{mops_all / cell['mops']:.3g}")
    numba.set_num_threads(threads)
    return out


def run(args, log) -> dict:
    """The whole run: build the peers' program, then every R (:func:`run_terms`), then the goals."""
    import numba  # the engine's compiler: imported only when a benchmark runs

    threads = numba.config.NUMBA_NUM_THREADS
    peers = build(args.cache_dir)
    notes = [f"{PEER_NAMES.get(k, k)} skipped: {why}" for k, why in peers["reasons"].items() if k != "openmp"]
    if args.peers_all_cores and not peers["available"]["openmp"]:
        notes.append(f"peers on all cores skipped: OpenMP unavailable ({peers['reasons'].get('openmp')})")
    for n in notes:
        log(f"note: {n}")
    log(f"peers' program: {peers['command']}")
    res = {"one_core": [], "peers": [], "peers_all_cores": [], "all_cores": [], "checks": [], "notes": notes}
    for R in args.terms:
        for key, cells in run_terms(R, args, peers, threads, log).items():
            res[key] += cells
    try:
        layer = numba.threading_layer()
    except ValueError:  # no parallel region ran
        layer = "none"
    mops = {(c["R"], c["op"], "expansions"): c["mops"] for c in res["one_core"]}
    mops.update({(c["R"], c["op"], c["lib"]): c["mops"] for c in res["peers"]})
    reasons = {lib: peers["reasons"][lib.split("_")[0]] for lib in PEERS if lib.split("_")[0] in peers["reasons"]}
    return {**res, "peers_build": peers, "threads": threads, "threading_layer": layer,
            "goals": evaluate_goals(mops, args.terms, args.ops, reasons), "scaling": evaluate_scaling(res["all_cores"])}


# ---------------------------------------------------------------------------------------------
# the results files


def _f(v) -> str:
    return "-" if v is None else f"{v:.3g}"


SUMMARY_GROUPS = (("add", "mul", "div", "sqrt"), ("exp", "log", "sin"))


def summary(res: dict, terms, ops) -> list[str]:
    """The compact table (the README's): per R and group of operations, Mop/s on one core of the
    library, QD and MPFR, slash-separated."""
    mops = {(c["R"], c["op"], "expansions"): c["mops"] for c in res["one_core"]}
    mops.update({(c["R"], c["op"], c["lib"]): c["mops"] for c in res["peers"]})
    lines = ["| R (bits) | op | expansions | QD | MPFR |", "|---|---|---|---|---|"]
    for R in terms:
        for group in SUMMARY_GROUPS:
            g = [op for op in group if op in ops]
            if not g:
                continue
            cols = [" / ".join(_f(mops.get((R, op, who))) for op in g) for who in ("expansions", "qd", "mpfr")]
            if R not in QD_TERMS:
                cols[1] = "-"
            lines.append(f"| {R} ({53 * R}) | {' / '.join(g)} | " + " | ".join(cols) + " |")
    return lines


def markdown(res: dict, meta: dict) -> str:
    """The results as Markdown: header, one-core table with ratios, all cores, goals, sanity."""
    one = {(c["R"], c["op"]): c for c in res["one_core"]}
    peer = {(c["R"], c["op"], c["lib"]): c for c in res["peers"]}
    build_info, env = res["peers_build"], meta["environment"]
    terms = meta["args"]["terms"]
    ops = meta["args"]["ops"]
    lines = [f"# The public API beside QD and MPFR ({env['machine']})", "",
             f"`{meta['command']}`, {meta['date']}, commit {env['commit']}.", ""]
    if meta["args"].get("note"):
        lines += [f"**{meta['args']['note']}**", ""]
    lib = build_info.get("libraries", {})
    lines += [
        f"- CPU: {meta['cpu']}; {meta['cores']} cores available; {platform.system()} {platform.release()}; "
        f"Python {env['python']}; load average {meta['load_before']} before, {meta['load_after']} after.",
        "- Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
        + (f"; QD config: {lib.get('qd_config')}; MPFR {lib.get('mpfr')} (GMP {lib.get('gmp')})" if lib else "") + ".",
        f"- Peers' program: `{build_info['command']}` ({build_info['compiler']})." if build_info["command"] else
        "- Peers' program: not built.",
        f"- One core: the library with `numba.set_num_threads(1)`; QD and MPFR in plain single-threaded loops. "
        f"Mop/s = elements / s / 10^6, median of {meta['args']['repeats']} calls on up to {meta['args']['n']} "
        f"elements (fewer where a call took more than {meta['args']['budget']} s: the counts are in the JSON and in "
        "brackets below); the library's values: `ex.array(v, terms=R)` of random full-tail v, |x| < 4 (sqrt, log: "
        "|x|); the peers: the same values (QD exactly, MPFR rounded to 53 R bits).",
        f"- Noise: the timed calls' spread (max / min - 1) per cell, median {meta['spread_median']:.1%}, largest "
        f"{meta['spread_max']:.1%} (the machine: {meta['cores']} cores shared with other work unless stated).", ""]
    for note in res["notes"]:
        lines.append(f"- Note: {note}")
    lines += ["", "## Summary: one core, Mop/s", "", *summary(res, terms, ops)]
    cols = ["expansions", "QD", "QD ieee add", "MPFR", "expansions / QD", "expansions / MPFR"]
    lines += ["", "## One core, Mop/s", "", "| R | bits | op | " + " | ".join(cols) + " |",
              "|---|---|---|" + "---|" * len(cols)]

    def shown(c, full):
        if c is None:
            return "-"
        return f"{c['mops']:.3g}" + ("" if c["n"] >= full else f" ({c['n']})")

    for R in terms:
        for op in ops:
            e = one.get((R, op))
            q, qi, m = (peer.get((R, op, k)) for k in PEERS)
            rq = e["mops"] / q["mops"] if e and q else None
            rm = e["mops"] / m["mops"] if e and m else None
            lines.append(f"| {R} | {53 * R} | {op} | {shown(e, meta['args']['n'])} | {shown(q, meta['args']['n'])} | "
                         f"{shown(qi, meta['args']['n'])} | {shown(m, meta['args']['n'])} | {_f(rq)} | {_f(rm)} |")
    if res["all_cores"]:
        T = res["threads"]
        lines += ["", f"## All cores: the library with {T} threads against one, Mop/s", "",
                  f"| R | op | elements | 1 thread | {T} threads | speedup |", "|---|---|---|---|---|---|"]
        for c in res["all_cores"]:
            lines.append(f"| {c['R']} | {c['op']} | {c['n']} | {c['mops_1t']:.3g} | {c['mops_all']:.3g} | "
                         f"{c['speedup']:.3g}x |")
    if res["peers_all_cores"]:
        lines += ["", f"## Peers on all cores (OpenMP, {res['threads']} threads), Mop/s", "",
                  "| R | op | peer | elements | Mop/s |", "|---|---|---|---|---|"]
        for c in res["peers_all_cores"]:
            lines.append(f"| {c['R']} | {c['op']} | {PEER_NAMES[c['lib']]} | {c['n']} | {c['mops']:.3g} |")
    why = explanations()
    lines += ["", "## Goals (issue 28; one core unless stated)", "",
              "| R | op | goal | measured | verdict | explanation of a miss |", "|---|---|---|---|---|---|"]
    for g in res["goals"]:
        ex_text = why.get(f"{g['R']} {g['op']} {g['peer']}", "not yet measured") if g["status"] == "missed" else ""
        lines.append(f"| {g['R']} | {g['op']} | >= {g['required']:g}x {PEER_NAMES[g['peer']]} | "
                     f"{_f(g['ratio'])}{'x' if g['ratio'] is not None else ''} | {g['text']} | {ex_text} |")
    for g in res["scaling"]:
        ex_text = why.get(f"{g['R']} {g['op']} scaling", "not yet measured") if g["status"] == "missed" else ""
        lines.append(f"| {g['R']} | {g['op']} | >= {g['required']:g}x one core on {SCALING_GOAL[0]} threads, "
                     f"{g['n']} elements | {_f(g['ratio'])}x | {g['text']} | {ex_text} |")
    verdicts = [g["status"] for g in res["goals"] + res["scaling"]]
    counts = {s: verdicts.count(s) for s in ("met", "missed", "not measured")}
    lines += ["", f"{counts['met']} met, {counts['missed']} missed, {counts['not measured']} not measured or not "
              "evaluated. A miss's explanation (instructions per element, vector width achieved, what would "
              "close it) comes from measurements, in `bench/native/explanations.json`."]
    lines += ["", "## Sanity: the peers' results against the library's", "",
              f"The first {meta['args']['check']} elements of each peer cell, exactly; agreement = -log2 of the "
              "largest relative difference; expected: at least 3/4 of min(53 R, 1074) bits.", "",
              "| R | op | peer | elements | agreement (bits) | expected | ok |", "|---|---|---|---|---|---|---|"]
    for s in res["checks"]:
        a = "equal" if s["agreement_bits"] is None and s["elements"] else _f(s["agreement_bits"])
        lines.append(f"| {s['R']} | {s['op']} | {PEER_NAMES[s['lib']]} | {s['elements']} | {a} | "
                     f"{s['expected_bits']:g} | {'yes' if s['ok'] else 'NO'} |")
    return "\n".join(lines) + "\n"


META = ("command", "date", "environment", "versions", "cpu", "cores", "args", "load_before", "load_after",
        "spread_median", "spread_max")


def render(path: Path) -> int:
    """Rewrite the .md beside a results .json from its data (and today's explanations.json)."""
    data = json.loads(path.read_text())
    meta = {k: data[k] for k in META}
    path.with_suffix(".md").write_text(markdown({k: v for k, v in data.items() if k not in META}, meta))
    print(f"wrote {path.with_suffix('.md')}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="a short run: n 10000, n-all 100000, 3 repeats, budget 0.05 s, terms 2,4,8")
    ap.add_argument("--terms", default=",".join(map(str, TERMS)), help="comma-separated R values")
    ap.add_argument("--ops", default=",".join(OPS), help="comma-separated operations")
    ap.add_argument("--n", type=int, default=100_000, help="elements of the one-core cells")
    ap.add_argument("--n-all", type=int, default=1_000_000, help="elements of the all-cores cells")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--budget", type=float, default=0.25, help="seconds of one call above which fewer elements run")
    ap.add_argument("--check", type=int, default=8, help="elements of the sanity check per peer cell")
    ap.add_argument("--peers-all-cores", action="store_true", help="also time the peers under OpenMP on all cores")
    ap.add_argument("--no-all-cores", dest="all_cores", action="store_false", help="skip the all-cores cells")
    ap.add_argument("--note", default="", help="a sentence for the top of the .md (e.g. what the run is of)")
    ap.add_argument("--cache-dir", default=None, help="where the peers' program is built (default: "
                    "$EXPANSIONS_CACHE_DIR/bench_native or ~/.cache/expansions/bench_native)")
    ap.add_argument("--out", default=str(HERE / "results"))
    ap.add_argument("--render", metavar="JSON", default=None,
                    help="only rewrite the .md beside a results .json (e.g. after filling explanations.json)")
    args = ap.parse_args(argv)
    if args.render:
        return render(Path(args.render))
    if args.quick:
        args.n, args.n_all, args.repeats, args.budget = 10_000, 100_000, 3, 0.05
        if "--terms" not in (argv if argv is not None else sys.argv[1:]):
            args.terms = "2,4,8"
    args.terms = [int(r) for r in str(args.terms).split(",") if r]
    args.ops = [o for o in str(args.ops).split(",") if o]
    if set(args.ops) - set(OPS):
        ap.error(f"unknown operations {sorted(set(args.ops) - set(OPS))}; use {','.join(OPS)}")
    if [R for R in args.terms if not 2 <= R <= 32]:
        ap.error("terms must be in 2..32")
    if min(args.n, args.n_all, args.repeats, args.check + 1) < 1 or args.budget <= 0:
        ap.error("--n, --n-all, --repeats must be positive, --check >= 0, --budget > 0")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"native_cpu-{platform.machine()}"
    command = ("python -m bench.native " + shlex.join(argv if argv is not None else sys.argv[1:])).strip()
    env = environment()  # before the log is opened: writing it would mark the checkout dirty
    with open(f"{stem}.log", "w") as logfile:
        def log(line: str) -> None:
            print(line, flush=True)
            logfile.write(line + "\n")
            logfile.flush()

        log(f"$ {command}")
        load_before = " ".join(f"{v:.2f}" for v in os.getloadavg())
        t0 = time.perf_counter()
        res = run(args, log)
        load_after = " ".join(f"{v:.2f}" for v in os.getloadavg())
        log(f"took {time.perf_counter() - t0:.0f} s; load average {load_before} before, {load_after} after")
    spreads = [spread(c["seconds"]) for c in res["one_core"] + res["peers"]]
    meta = {"command": command, "date": f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
            "environment": env, "versions": versions(), "cpu": cpu_model(),
            "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
            "args": vars(args), "load_before": load_before, "load_after": load_after,
            "spread_median": statistics.median(spreads) if spreads else float("nan"),
            "spread_max": max(spreads) if spreads else float("nan")}
    Path(f"{stem}.json").write_text(json.dumps({**meta, **res}, indent=1, default=str))
    text = markdown(res, meta)
    Path(f"{stem}.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
