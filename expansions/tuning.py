"""Precision tuning of programs: the auto-tuner of Surineni 2017 (seed 004, chapters 6 and 7) for
programs of this library.

The thesis's tuner takes a program, a target device and an error threshold, lowers the precision of
individual operations along the data flow (its Figures 28 and 31: in ``a*b + c`` the product can run
at a lower precision than the sum) and validates each candidate by running it.  Here a program is a
Python function of expansions, traced by :func:`expansions.fuse`; its arithmetic operations
(``+ - * /``, in the order the function performs them) are the tunable nodes, and a candidate gives
each node a number of terms R (``terms=`` of the operation, as a user would write it) and, for
additions and subtractions with R > 2, the safe or the fast algorithm.  Square roots, reciprocals
and negations run at the format of their operand, as in the library; they follow the choices above
them.

:func:`tune` measures, on the sample inputs:

1. the reference: the program with every operation at ``reference_terms`` (default twice the widest
   declared R, at most 32) in the widest declared dtype: the arithmetic by its ``terms``/``dtype``, and
   the inputs widened exactly to that format (zero terms appended), so that square roots,
   reciprocals and elementary functions, which run at the format of their operands, run at it too;
2. the original program's error against it, and its true error against an evaluation in mpmath on
   ``exact_elements`` sample elements (:mod:`expansions.program_exact`): a threshold the original
   does not meet on either is refused;
3. a greedy search along the data flow: the nodes in decreasing order of cost (R^2 for products and
   quotients, R for sums), each lowered to the smallest R of :data:`LADDER` that keeps the program's
   error within ``margin * rel_error`` with the choices made so far (by bisection, as the error falls
   when R grows); for a node of float64 terms (``dtypes``), also the fewest float32 terms that keep
   it (searched from the float64 choice r up to 3r terms), chosen when they are no more terms than
   the float64 choice (half the bytes per term), or, with ``check_time``, when the profile says so
   (the operands are converted at the node's boundaries: float64 to float32 rounds, as
   ``expansions.astype`` does, and is part of the measured error; float32 to float64 is exact; the
   other nodes keep their declared dtype explicitly); then the fast addition where it keeps it, as
   the thesis lowers one instruction at a time and keeps what validates (the report's "lowest R
   within the threshold"); then, by profiling (``check_time``), each lowered node is put back to
   its declared precision where that makes the program faster (rounding an operand to fewer terms
   has a cost of its own), and if the result is not faster than the original, the original is
   kept, as the thesis validates its candidates by profiling;
4. every candidate is measured on the samples and on inputs near them (each input term multiplied by
   1 + d, |d| < 2^-20, renormalized); the result is validated on other inputs near them, against the
   reference at those inputs, and on the samples against mpmath: the largest relative error must
   stay within ``rel_error``;
5. the time of the original and the tuned program (fused, median of ``repeats``).

The error of a program is the largest relative error of its expansion outputs over the elements
(absolute where the reference is zero; boolean outputs must be equal; non-finite outputs must be the
reference's).  The reference has an error of its own, so errors measured against it are resolved
only down to that: the report gives the true errors of the original, the tuned program and the
reference against mpmath on sample elements, and says so where an error measured against the
reference is below the true one.  The result, :class:`Tuned`, is callable like the program and
carries the report.
Limits, said plainly: the search is greedy (one pass over the nodes), and the threshold holds for the
samples and the inputs near them, not for every input.  Where the operations' proven bounds compose
(safe additions, truncated products, Newton divisions and square roots, the double-word algorithms
with a proven bound), the report also gives the proven bound of the tuned program and of the
original, composed along the graph on sample elements (:mod:`expansions.program_bound`: an
a-posteriori bound, rigorous for those elements); a fast addition, a comparison or ``where`` makes it
"not proven", naming the node.  On the GPU the same search runs with the programs' CUDA kernels.
"""

from __future__ import annotations

import dataclasses
import statistics
import time

import numpy as np

from . import operations
from .arraytype import ExpansionArray
from .backends import to_numpy
from .cuda import build, occupancy
from .program_bound import composed_bound
from .program_exact import true_error
from .programs import Program
from .programs.cuda import compile_program, program_format
from .programs.trace import BINARY, FuseError, argument_key

#: The numbers of terms the search tries, lowest first.
LADDER = (2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32)


@dataclasses.dataclass
class NodeChoice:
    """One arithmetic operation of the program: what it declared and what the tuner chose."""

    index: int
    op: str
    line: str
    declared_terms: int
    terms: int  # the R the tuned program runs it with (traced: without a choice of its own, the wider operand's)
    method: str
    lowest_terms: int  # the fewest float64 terms within the threshold, given the nodes searched before it
    lowest_method: str
    dtype: str = "float64"  # the terms' dtype it runs with (float32 terms: see tune's ``dtypes``)
    declared_dtype: str = "float64"
    lowest_float32_terms: int | None = None  # the fewest float32 terms within the threshold (None: none, or not tried)


@dataclasses.dataclass
class Report:
    rel_error: float
    reference_terms: int
    original_error: float
    tuned_error: float
    validation_error: float
    original_seconds: float
    tuned_seconds: float
    nodes: list
    candidates_tried: int
    #: the proven bounds composed along the graph (:mod:`expansions.program_bound`), None if not computed
    proven_bound: object = None
    original_proven_bound: object = None
    #: the CUDA kernel's launch configuration (expansions.cuda.occupancy.LaunchChoice), None if not computed
    launch: object = None
    launch_note: str = ""
    #: the true errors against mpmath on sample elements (expansions.program_exact.TrueError), None if not measured
    original_true: object = None
    tuned_true: object = None
    reference_true: object = None

    @property
    def speedup(self) -> float:
        return self.original_seconds / self.tuned_seconds if self.tuned_seconds > 0 else float("inf")

    def _resolution(self) -> str:
        """Why an error measured against the reference may be below the true one: the reference's own."""
        low = [name for name, measured, true in (("original", self.original_error, self.original_true),
                                                 ("tuned", self.tuned_error, self.tuned_true))
               if measured < true.error / 2]
        if not low:
            return ""
        return (f" (the {' and '.join(low)} error measured against the reference is below the true one: the "
                "reference resolves errors only down to its own)")

    def markdown(self) -> str:
        lines = [f"Threshold {self.rel_error:.3g} (relative); reference: every operation at "
                 f"R = {self.reference_terms}.",
                 f"Error on the samples: original {self.original_error:.3g}, tuned {self.tuned_error:.3g}; "
                 f"on fresh inputs near them: {self.validation_error:.3g}.",
                 *([f"True error (against mpmath): original {self.original_true.text()}; tuned "
                    f"{self.tuned_true.error:.3g}; the reference's own {self.reference_true.error:.3g}"
                    + self._resolution() + "."] if self.tuned_true is not None else []),
                 f"Time (fused, samples): original {self.original_seconds:.4g} s, tuned {self.tuned_seconds:.4g} s "
                 f"({self.speedup:.2f}x); {self.candidates_tried} candidates run.",
                 *([f"Proven bound (composed along the graph): tuned {self.proven_bound.text()}; original "
                    f"{self.original_proven_bound.text()}."] if self.proven_bound is not None else []),
                 *([f"Launch configuration (CUDA): {self.launch.text()}."] if self.launch is not None else []),
                 *([f"Launch configuration (CUDA): {self.launch_note}."] if self.launch_note else []), "",
                 "| # | operation | line | declared R | lowest R within the threshold (method) | lowest float32 R "
                 "| tuned R (method) |",
                 "|---|---|---|---|---|---|---|"]
        for n in self.nodes:
            f32 = "-" if n.lowest_float32_terms is None else str(n.lowest_float32_terms)
            dts = {d: "" if d == "float64" else f" {d}" for d in (n.dtype, n.declared_dtype)}
            lines.append(f"| {n.index} | {n.op} | `{n.line}` | {n.declared_terms}{dts[n.declared_dtype]} | "
                         f"{n.lowest_terms} ({n.lowest_method}) | {f32} | {n.terms}{dts[n.dtype]} ({n.method}) |")
        return "\n".join(lines) + "\n"


class Tuned:
    """The tuned program: call it like the original; ``overrides`` and ``report`` say what it does."""

    def __init__(self, fn, overrides: dict, report: Report, block: int | None = None):
        self.fn = fn
        self.overrides = overrides
        self.report = report
        self.block = block  # threads per block of the CUDA kernel (the report's launch configuration)
        self._programs: dict = {}

    def __call__(self, *args):
        return _program(self.fn, self.overrides, args, self.block, self._programs)(*args)


def _device(args) -> str:
    devices = {a.device for a in args if isinstance(a, ExpansionArray)}
    return "cuda" if "cuda" in devices else "cpu"


def _ancestors(graph, ids) -> list:
    seen, stack = set(), list(ids)
    while stack:
        j = stack.pop()
        if j not in seen:
            seen.add(j)
            stack.extend(graph.nodes[j].args)
    return sorted(seen)


def _kernel_graph(prog: Program, args):
    """(graph, wanted, outputs) of the one CUDA kernel of a program, or a FuseError saying why there is
    none (a graph of several formats, after lowering some of its operations, is not one kernel)."""
    graph, (_, items) = prog.trace(*args)
    outs = [i for kind, i in items if kind == "node" and graph.nodes[i].op not in ("input", "const")]
    wanted = _ancestors(graph, outs)
    program_format(graph, wanted)
    return graph, wanted, outs


def _program(fn, overrides, args, block=None, cache=None) -> Program:
    """The program with ``overrides``; on cuda arrays one kernel (of ``block`` threads per block) when
    the graph has one format, else the planned backend calls (one kernel per operation)."""
    key = tuple(argument_key(a) for a in args)
    if cache is not None and key in cache:
        return cache[key]
    prog = Program(fn, overrides=overrides, block=block)
    if _device(args) == "cuda":
        try:
            _kernel_graph(prog, args)
        except FuseError:
            prog = Program(fn, overrides=overrides, cuda="plan")
    if cache is not None:
        cache[key] = prog
    return prog


def _synchronize(args):
    if _device(args) == "cuda":
        import cupy  # optional dependency: CuPy is needed only on the GPU path

        cupy.cuda.Device().synchronize()


def launch_choice(fn, overrides: dict, samples, repeats: int = 3):
    """The launch configuration of the program's CUDA kernel (:mod:`expansions.cuda.occupancy`): the
    kernel compiled with NVRTC for the samples' GPU (for sm_90 without one: no GPU needed), its
    registers per thread from ptxas, the device's limits (CuPy's attributes, or the sm_90 table), the
    block size of highest occupancy, ties measured on the GPU when the samples are there.  Returns
    (LaunchChoice or None, a note: why there is no single kernel)."""
    prog = Program(fn, overrides=overrides)
    try:
        graph, wanted, outs = _kernel_graph(prog, samples)
    except FuseError as exc:
        return None, f"no single CUDA kernel ({exc}): the program runs one kernel per operation"
    on_gpu = _device(samples) == "cuda"
    device_id = None
    if on_gpu:
        import cupy  # optional dependency: CuPy is needed only on the GPU path

        device_id = cupy.cuda.Device().id
    arch = build.device_arch(device_id) if on_gpu else "sm_90"
    _, lowered, log = compile_program(graph, wanted, outs, arch=arch)
    registers = build.parse_ptxas_log(log)[lowered][0]
    measure = None
    if on_gpu:
        def measure(threads):
            return _timed_program(Program(fn, overrides=overrides, block=threads), samples, repeats)
    return occupancy.choose_block(registers, occupancy.device_limits(device_id), measure=measure), ""


def _outputs(result):
    return result if isinstance(result, tuple) else (result,)


def program_error(got, want) -> float:
    """The largest relative error of ``got`` against ``want`` (outputs of one program), see the module
    docstring."""
    worst = 0.0
    for g, w in zip(_outputs(got), _outputs(want)):
        g, w = (v.to_device("cpu") if isinstance(v, ExpansionArray) else to_numpy(v) for v in (g, w))
        if not isinstance(w, ExpansionArray):
            if not np.array_equal(np.asarray(g), np.asarray(w)):
                return float("inf")
            continue
        wf = np.asarray(w.to_float(), dtype=np.float64)
        g_terms = np.asarray(g.terms)
        finite_w = np.isfinite(np.asarray(w.terms)).all(axis=-1)
        finite_g = np.isfinite(g_terms).all(axis=-1)
        if not np.array_equal(finite_w, finite_g):
            return float("inf")
        if not finite_w.all():  # the non-finite rule: the same leading value where the reference is not finite
            lead_g, lead_w = g_terms[..., 0][~finite_w], np.asarray(w.terms)[..., 0][~finite_w]
            if not np.array_equal(lead_g, lead_w, equal_nan=True):
                return float("inf")
        if not finite_w.any():
            continue
        with np.errstate(all="ignore"):
            d = np.abs(np.asarray(operations.sub(g, w, terms=w.nterms, dtype=w.dtype).to_float(), dtype=np.float64))
            scale = np.where(wf == 0, 1.0, np.abs(wf))
            e = np.where(finite_w, d / scale, 0.0)
        worst = max(worst, float(np.max(e)) if e.size else 0.0)
    return worst


def _declared(fn, samples):
    """The arithmetic nodes of the program as declared: [(op, line, R, dtype name)]."""
    graph, _ = Program(fn).trace(*samples)
    return [(n.op, n.line, n.fmt[0], n.fmt[1]) for n in graph.nodes if n.op in BINARY]


def _pinned(overrides: dict, declared) -> dict:
    """``overrides`` where some node runs in another dtype, with every other node's dtype given
    explicitly as declared: an operation whose operands all come from float32 nodes would otherwise
    run in float32 too (the format of an operation is the wider of its operands')."""
    if not any("dtype" in c for c in overrides.values()):
        return overrides
    return {k: dict({"dtype": declared[k][3]}, **overrides.get(k, {})) for k in range(len(declared))}


def _run(fn, overrides, args):
    return _program(fn, overrides, args)(*args)


def _timed_program(prog, args, repeats: int) -> float:
    prog(*args)  # traces and plans (and compiles), untimed
    _synchronize(args)
    secs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        prog(*args)
        _synchronize(args)
        secs.append(time.perf_counter() - t0)
    return statistics.median(secs)


def _timed(fn, overrides, args, repeats: int) -> float:
    return _timed_program(_program(fn, overrides, args), args, repeats)


def _nearby(args, seed: int):
    """The arguments with every expansion term multiplied by 1 + d, |d| < 2^-20 (fresh nearby inputs)."""
    rng = np.random.default_rng(seed)
    out = []
    for a in args:
        if isinstance(a, ExpansionArray):
            t = to_numpy(a.terms)
            d = (1 + rng.uniform(-1, 1, t.shape) * 2.0 ** -20).astype(t.dtype)
            out.append(operations.renormalize(ExpansionArray(t * d)).to_device(a.device))
        else:
            out.append(a)
    return tuple(out)


def _widened(args, terms: int, dtype: str):
    """The arguments with every expansion widened exactly to ``terms`` terms of ``dtype`` (zero terms
    appended; float32 terms into float64 ones), so that every node of the reference, square roots,
    reciprocals and elementary functions included, runs at the reference's format."""
    out = []
    for a in args:
        if isinstance(a, ExpansionArray) and (a.nterms < terms or a.dtype.name != dtype):
            t = to_numpy(a.terms)
            wide = np.zeros(t.shape[:-1] + (max(terms, a.nterms),), dtype=np.result_type(t.dtype, dtype))
            wide[..., :a.nterms] = t
            out.append(ExpansionArray(wide).to_device(a.device))
        else:
            out.append(a)
    return tuple(out)


def tune(program, *samples, rel_error: float, reference_terms: int | None = None, margin: float = 0.25,
         ladder=LADDER, methods: bool = True, dtypes: bool = True, check_time: bool = True, repeats: int = 3,
         seed: int = 0, bound_elements: int = 64, launch: bool | None = None, exact_elements: int = 64) -> Tuned:
    """Tune the precision of ``program`` (a function of expansions, or an ``expansions.fuse`` program)
    on the sample inputs ``samples`` for a largest relative error ``rel_error`` (see the module
    docstring).  Returns a :class:`Tuned` program with its :class:`Report`; raises ValueError when
    the program at its declared precision does not meet the threshold, or when the tuned program
    fails the validation.  ``methods``: try the fast addition; ``dtypes``: try float32 terms for the
    float64 nodes; ``check_time``: keep only what the profile says is faster.  ``bound_elements``: on
    how many sample elements the proven bound of the original and the tuned program is composed
    (:func:`expansions.program_bound.composed_bound`; 0: not at all).  ``exact_elements``: on how many
    sample elements the true error of the original, the tuned program and the reference is measured
    against mpmath (:func:`expansions.program_exact.true_error`; 0: not at all); a true error above
    ``rel_error`` refuses the program.  ``launch``: choose the CUDA
    kernel's block size (:func:`launch_choice`; default: when the samples are on a GPU; True on the CPU
    gives the choice for the sm_90 table, compiled with NVRTC, unmeasured)."""
    fn = program.fn if isinstance(program, Program) else program
    if not callable(fn):
        raise TypeError(f"expansions.tune: a function of expansions, not {type(program).__name__}")
    if not rel_error > 0:
        raise ValueError(f"rel_error must be positive, not {rel_error!r}")
    declared = _declared(fn, samples)
    if not declared:
        raise ValueError("expansions.tune: the program has no arithmetic operation to tune")
    widest = max(R for _, _, R, _ in declared)
    ref_R = reference_terms or min(32, 2 * widest)
    ref_dtype = "float64" if any(dt == "float64" for *_, dt in declared) else "float32"
    everything_at = {k: {"terms": ref_R, "dtype": ref_dtype} for k in range(len(declared))}

    def reference(args):
        return _run(fn, everything_at, _widened(args, ref_R, ref_dtype))

    # the search runs on the samples and on inputs near them; the validation on other inputs near them
    search = [(args, reference(args)) for args in (samples, _nearby(samples, seed))]
    fresh = _nearby(samples, seed + 1)
    fresh_reference = reference(fresh)

    def error_of(overrides) -> float:
        return max(program_error(_run(fn, _pinned(overrides, declared), args), ref) for args, ref in search)

    def timed(overrides) -> float:
        return _timed(fn, _pinned(overrides, declared), samples, repeats)

    original_error = error_of({})
    original_true = true_error(fn, samples, {}, elements=exact_elements) if exact_elements else None
    worst_original = max(original_error, original_true.error if original_true else 0.0)
    if not worst_original <= rel_error:
        raise ValueError(f"expansions.tune: the program at its declared precision has a relative error of "
                         f"{worst_original:.3g} on the samples, above the threshold {rel_error:.3g}: no lower "
                         "precision can meet it (raise the program's terms, or the threshold)")
    budget = margin * rel_error
    choice = {k: {} for k in range(len(declared))}
    lowest32: dict = {}
    lowest64: dict = {}
    tried = 0

    def error_with(k, change):
        nonlocal tried
        tried += 1
        trial = {j: c for j, c in choice.items() if c and j != k}
        trial[k] = change
        return error_of(trial)

    cost = {k: (R * R if op in ("mul", "div") else R) for k, (op, _, R, _) in enumerate(declared)}
    order = sorted(cost, key=lambda k: (-cost[k], k))
    for k in order:
        op, _, R, dt = declared[k]
        lower = [r for r in ladder if r < R]
        lo, hi = 0, len(lower)  # bisection for the fewest terms that keep the error (errors fall as R grows)
        while lo < hi:
            mid = (lo + hi) // 2
            if error_with(k, {"terms": lower[mid]}) <= budget:
                hi = mid
            else:
                lo = mid + 1
        if lo < len(lower):
            choice[k] = {"terms": lower[lo]}
        r = choice[k].get("terms", R)
        lowest64[k] = r
        if dtypes and dt == "float64":  # float32 terms: the fewest within the budget, by bisection
            # among r .. 3r terms (a float32 term carries 24 bits, a float64 term 53: fewer than r
            # float32 terms do not carry what r float64 terms must, and beyond about 2.2 r they carry more)
            rungs = [t for t in ladder if r <= t <= 3 * r]
            lo, hi = 0, len(rungs)
            while lo < hi:
                mid = (lo + hi) // 2
                if error_with(k, {"terms": rungs[mid], "dtype": "float32"}) <= budget:
                    hi = mid
                else:
                    lo = mid + 1
            if lo < len(rungs):
                lowest32[k] = rungs[lo]
                f32 = {"terms": rungs[lo], "dtype": "float32"}
                if rungs[lo] <= r:  # no more terms than float64 needs: half the bytes per term
                    choice[k] = f32
                elif check_time:  # more terms: the one the profile says is faster
                    others = {j: c for j, c in choice.items() if c and j != k}
                    tried += 2
                    if timed({**others, k: f32}) < timed({**others, **({k: choice[k]} if choice[k] else {})}):
                        choice[k] = f32
            r = choice[k].get("terms", R)
        if methods and op in ("add", "sub") and r > 2:
            fast = dict(choice[k], method="fast")
            if error_with(k, fast) <= budget:
                choice[k] = fast
    lowest = {k: dict(c) for k, c in choice.items()}
    if check_time:  # fewer terms can cost more (rounding the operands): keep a change only if it pays
        current = timed({j: c for j, c in choice.items() if c})
        for k in order:
            if not choice[k]:
                continue
            trial = {j: c for j, c in choice.items() if c and j != k}
            secs = timed(trial)
            tried += 1
            if secs < current and error_of(trial) <= budget:
                choice[k], current = {}, secs
    overrides = _pinned({k: c for k, c in choice.items() if c}, declared)
    original_seconds = timed({})
    tuned_seconds = timed(overrides) if overrides else original_seconds
    if check_time and tuned_seconds >= original_seconds:  # nothing that pays: the program as declared
        choice, overrides, tuned_seconds = {k: {} for k in choice}, {}, original_seconds
    tuned_error = error_of(overrides)
    validation_error = program_error(_run(fn, overrides, fresh), fresh_reference)
    tuned_true = reference_true = None
    if exact_elements:
        tuned_true = true_error(fn, samples, overrides, elements=exact_elements) if overrides else original_true
        reference_true = true_error(fn, _widened(samples, ref_R, ref_dtype), everything_at, elements=exact_elements)
    if not max(tuned_error, validation_error, tuned_true.error if tuned_true else 0.0) <= rel_error:
        raise ValueError(f"expansions.tune: the tuned program fails its validation ({tuned_error:.3g} on the "
                         f"samples, {validation_error:.3g} on fresh inputs near them"
                         + (f", a true error of {tuned_true.text()}" if tuned_true else "")
                         + f", threshold {rel_error:.3g})")
    # the format each operation runs in, as traced: an operation without an explicit choice takes the
    # wider of its operands' formats, so it may run with fewer terms when an operand was lowered
    ran = [n.fmt for n in Program(fn, overrides=overrides).trace(*samples)[0].nodes if n.op in BINARY]
    nodes = [NodeChoice(k, op, line.split(": ", 1)[-1] if line else "", R, ran[k][0],
                        choice[k].get("method", "auto"), lowest64[k], lowest[k].get("method", "auto"),
                        ran[k][1], dt, lowest32.get(k))
             for k, (op, line, R, dt) in enumerate(declared)]
    proven = original_proven = None
    if bound_elements:
        proven = composed_bound(fn, samples, overrides, elements=bound_elements)
        original_proven = composed_bound(fn, samples, {}, elements=bound_elements)
    report = Report(rel_error, ref_R, original_error, tuned_error, validation_error, original_seconds,
                    tuned_seconds, nodes, tried, proven, original_proven, original_true=original_true,
                    tuned_true=tuned_true, reference_true=reference_true)
    block = None
    if launch or (launch is None and _device(samples) == "cuda"):
        report.launch, report.launch_note = launch_choice(fn, overrides, samples, repeats)
        if report.launch is not None and _device(samples) == "cuda":
            block = report.launch.threads
            report.tuned_seconds = _timed_program(_program(fn, overrides, samples, block), samples, repeats)
    return Tuned(fn, overrides, report, block)
