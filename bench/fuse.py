"""expansions.fuse against the same operations one by one, on the CPU: backend calls, bytes, time.

Programs (float64, R in ``--terms``, each of ``--n`` expansions per input: few, where the dispatch
of each operation dominates, and many, where the arithmetic does): ``x*y + z``; a degree-8 Horner
polynomial in x (constant coefficients); one Hénon step ``(1 - a x^2 + y, b x)`` with a = 1.375,
b = 0.3125 (exact in every format).  Each with the default methods (``'auto'``: at R = 2 the
double-word algorithms).

Columns:

- ``calls``: backend calls (each is one CUDA kernel launch or more on the GPU backend), counted by
  wrapping the CPU backend's functions, op by op and under the fused CPU plan (the same calls: the
  plan runs the same vectorized backend functions in the same order, which is what makes it
  bit-identical; what it saves is the per-operation dispatch: promotion, broadcasting, reshaping).
- ``bytes``: the bytes of the arrays each backend call reads and writes (its array arguments and its
  result), summed: what op by op and the CPU plan move through memory; and for the one CUDA kernel
  of the program, its inputs read once plus its outputs written once (every intermediate stays in
  registers), computed from the arrays the kernel is given.  A model from array sizes, not a
  hardware counter.
- ``loop``: ``expansions.fuse(fn, cpu="loop")``, the program as one compiled loop over blocks of
  expansions on the block engine (every intermediate in the workspace: its bytes are the CUDA
  program's, inputs once and outputs once).  ``ex.fuse``'s default, ``cpu="auto"``, runs it at R >= 3
  and the plan at R = 2; ``python -m bench.fuse_loop`` compares the two on longer programs.
- ``time``: per call, the median of ``--repeats`` samples after a warm-up (each sample a loop of
  calls lasting about 50 ms; op-by-op and fused samples interleaved), op by op and fused, on the
  default CPU backend (the compiled engine unless numba is missing), and the speedup.  The machine
  may be shared: see the load averages.
- ``bits``: fused == op by op, bit for bit, on these inputs.
- ``sm_90``: with ``--cuda-resources``, the registers per thread and spill stores/loads ptxas reports
  for the program's CUDA kernel compiled with NVRTC for sm_90 (no GPU needed; once per R, not per n).

    python -m bench.fuse [--n 100 100000] [--terms 2 4 8 16] [--repeats 5] [--cuda-resources]

Writes ``bench/results/fuse_<device>.md`` and ``.json`` (every measurement, raw).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import expansions as ex
from expansions import backends
from expansions.__main__ import device_slug, environment
from expansions.cuda.build import parse_ptxas_log
from expansions.programs import FuseError, Program
from expansions.programs.cpu import Plan
from expansions.programs.cuda import compile_program, kernel_inputs

HORNER = (0.75, 1.0, -0.5, 0.25, 3.0, -2.0, 0.125, 1.5, -1.0)  # degree 8, highest first


def fma(x, y, z):
    return x * y + z


def horner(x):
    acc = x * HORNER[0] + HORNER[1]
    for c in HORNER[2:]:
        acc = acc * x + c
    return acc


def henon(x, y):
    return 1 - 1.375 * x * x + y, 0.3125 * x


PROGRAMS = {"x*y + z": (fma, 3), "Horner degree 8": (horner, 1), "Henon step": (henon, 2)}

_FUNCTIONS = ("add_safe", "add_fast", "sub_safe", "sub_fast", "mul_truncated", "renormalize", "negate",
              "newton_reciprocal", "newton_div", "newton_sqrt", "dw_binary", "dw_unary")


class Counter:
    """A CPU backend whose functions count their calls and the bytes of their array arguments and
    results."""

    def __init__(self, backend):
        self.calls = 0
        self.bytes = 0
        self.backend = dataclasses.replace(backend, **{f: self._wrap(getattr(backend, f)) for f in _FUNCTIONS})

    def _wrap(self, fn):
        def counted(*args, **kwargs):
            out = fn(*args, **kwargs)
            self.calls += 1
            self.bytes += sum(a.nbytes for a in args if isinstance(a, np.ndarray)) + out.nbytes
            return out

        return counted


def _counted(run):
    """(calls, bytes) of ``run()`` with the counting backend in place of the CPU backend."""
    saved = dict(backends._cpu_state)
    counter = Counter(backends.cpu_backend())
    backends._cpu_state["backend"] = counter.backend
    try:
        run()
    finally:
        backends._cpu_state.clear()
        backends._cpu_state.update(saved)
    return counter.calls, counter.bytes


def _interleaved_times(fs, repeats, budget=0.05):
    """For each function of ``fs``: (median seconds per call, the samples, calls per sample).  After a
    warm-up call each, ``repeats`` rounds time one sample of each function in turn (interleaved, so
    that a change of the machine's load hits all of them alike); a sample is a loop of calls lasting
    about ``budget`` seconds (one call where one takes longer)."""
    calls = []
    for f in fs:
        f()
        t = time.perf_counter()
        f()
        calls.append(max(1, int(budget / max(time.perf_counter() - t, 1e-7))))
    samples = [[] for _ in fs]
    for _ in range(repeats):
        for f, k, out in zip(fs, calls, samples):
            t = time.perf_counter()
            for _ in range(k):
                f()
            out.append((time.perf_counter() - t) / k)
    return [(statistics.median(s), s, k) for s, k in zip(samples, calls)]


def _bits(v):
    return [np.asarray(a.terms).tobytes() for a in (v if isinstance(v, tuple) else (v,))]


def measure(name, R, n, repeats):
    fn, arity = PROGRAMS[name]
    args = [ex.random((n,), terms=R, seed=10 * R + k) for k in range(arity)]
    program = Program(fn, cpu="plan")
    graph, (_, items) = program.trace(*args)
    outputs = tuple(items)
    op_calls, op_bytes = _counted(lambda: fn(*args))
    plan_holder = {}
    fused_calls, fused_bytes = _counted(lambda: plan_holder.setdefault("r", Plan(graph, outputs, "cpu")(args)))
    wanted = list(range(len(graph.nodes)))
    itemsize = np.dtype(args[0].dtype).itemsize
    kernel_in = sum(n * R * itemsize if graph.nodes[i].op == "input" else R * itemsize
                    for i in kernel_inputs(graph, wanted))
    kernel_out = sum(n * R * itemsize for kind, _ in items if kind == "node")
    loop = Program(fn, cpu="loop")
    try:
        loop(*args)
        fs = [lambda: fn(*args), lambda: program(*args), lambda: loop(*args)]
    except FuseError:  # a program the loop does not run
        loop, fs = None, [lambda: fn(*args), lambda: program(*args)]
    timed = _interleaved_times(fs, repeats)
    (t_op, raw_op, k_op), (t_fused, raw_fused, k_fused) = timed[:2]
    same = _bits(fn(*args)) == _bits(program(*args)) and (loop is None or _bits(loop(*args)) == _bits(fn(*args)))
    return {"program": name, "R": R, "n": n, "calls_op_by_op": op_calls, "calls_fused_cpu": fused_calls,
            "calls_cuda_program": 1, "bytes_op_by_op": op_bytes, "bytes_fused_cpu": fused_bytes,
            "bytes_cuda_program": kernel_in + kernel_out, "time_op_by_op_s": t_op, "time_fused_s": t_fused,
            "times_op_by_op_s": raw_op, "times_fused_s": raw_fused, "calls_per_sample": [t[2] for t in timed],
            "time_loop_s": timed[2][0] if loop else None, "times_loop_s": timed[2][1] if loop else None,
            "bits_equal": same}


def cuda_resources(name, R):
    """ptxas's (registers, spill stores, spill loads) of the program's kernel for sm_90."""
    fn, arity = PROGRAMS[name]
    args = [ex.random((4,), terms=R, seed=k) for k in range(arity)]
    graph, (_, items) = Program(fn).trace(*args)
    outs = [i for kind, i in items if kind == "node"]
    _, lowered, log = compile_program(graph, list(range(len(graph.nodes))), outs)
    registers, _, stores, loads = parse_ptxas_log(log)[lowered]
    return {"registers": registers, "spill_stores": stores, "spill_loads": loads}


def _mb(b):
    return f"{b / 1e6:.3g}"


def _loop(r):
    if r.get("time_loop_s") is None:
        return "not run (refused) | -"
    return f"{1e3 * r['time_loop_s']:.3g} | {r['time_op_by_op_s'] / r['time_loop_s']:.2f}x"


def _resources(r):
    if not r:
        return ""
    return f"{r['registers']} registers, {r['spill_stores']}/{r['spill_loads']} B spills"


def markdown(rows, header):
    lines = ["# expansions.fuse against op by op (CPU)", "",
             "; ".join(f"{k}: {v}" for k, v in header.items()), "",
             __doc__.split("Columns:")[1].split("    python -m")[0].strip(), "",
             "| program | n | R | calls op by op | calls fused (CPU plan) | launches CUDA program | MB op by op | "
             "MB fused (CPU plan) | MB CUDA program or loop | time op by op (ms) | time fused (ms) | speedup | "
             "time loop (ms) | speedup loop | bits | sm_90 |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['program']} | {r['n']} | {r['R']} | {r['calls_op_by_op']} | {r['calls_fused_cpu']} | "
                     f"{r['calls_cuda_program']} | {_mb(r['bytes_op_by_op'])} | {_mb(r['bytes_fused_cpu'])} | "
                     f"{_mb(r['bytes_cuda_program'])} | {1e3 * r['time_op_by_op_s']:.3g} | "
                     f"{1e3 * r['time_fused_s']:.3g} | {r['time_op_by_op_s'] / r['time_fused_s']:.2f}x | "
                     f"{_loop(r)} | "
                     f"{'equal' if r['bits_equal'] else 'DIFFER'} | {_resources(r.get('sm_90'))} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[100, 100_000])
    ap.add_argument("--terms", type=int, nargs="+", default=[2, 4, 8, 16])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cuda-resources", action="store_true", help="compile each program's kernel for sm_90")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    args = ap.parse_args(argv)
    header = environment() | {"cpu_backend": backends.cpu_backend().name, "cpu_count": os.cpu_count(),
                              "command": "python -m bench.fuse " + " ".join(argv if argv is not None else sys.argv[1:]),
                              "load_average_before": " ".join(f"{v:.2f}" for v in os.getloadavg())}
    rows = []
    for n in args.n:
        for R in args.terms:
            for name in PROGRAMS:
                rows.append(measure(name, R, n, args.repeats))
                if args.cuda_resources and n == args.n[0]:
                    rows[-1]["sm_90"] = cuda_resources(name, R)
                print(json.dumps(rows[-1]), flush=True)
    header["load_average_after"] = " ".join(f"{v:.2f}" for v in os.getloadavg())
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"fuse_{device_slug()}"
    stem.with_suffix(".json").write_text(json.dumps({"environment": header, "rows": rows}, indent=1) + "\n")
    stem.with_suffix(".md").write_text(markdown(rows, header))
    print(markdown(rows, header))
    return 0 if all(r["bits_equal"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
