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
   benchmark's own inputs, warp by warp (:class:`Votes`; the mirrors below follow
   ``expansions.cpu.kernels.add_fast``, ``mul_truncated`` with ``_propagate``, and ``renormalize``
   operation for operation, and tests/test_model.py checks that they return the twins' bits);
3. the warp instructions per operation are counted by class, and the bound is
   SMs x clock x min over the resources (issue slots, FP64 pipe, FP32 pipe, shuffle unit, and for the
   library kernels memory bandwidth) of rate / use per operation.

4. the floor of each cell (:func:`floor_per_op`): the algorithm's own floating-point operations,
   shuffles and votes per operation, charged by the same mirrors as they run (:meth:`Votes.cost`), its
   bound, and the counted instructions over it, with the reasons and fixes of the misses
   (:data:`REASONS`).  The operations that renormalize in registers have two cells: the raw kernel
   (``…, false>``, the paper's, with the K40 column) and the renormalizing one (``…, true>``, what the
   library launches: the votes and the floor are the operation's, then the renormalization's).

5. at R = 2, the library's double-word kernels (one thread per number, ``bench::best_dw`` in
   bench/kernels.cu, every name of ``expansions.dispatch.R2_METHODS``) beside NVIDIA CCCL ``fpmp``'s
   double-double figures, with issue 13's goal for the H100 (:func:`r2_section`, :data:`FPMP`).

Writes ``<output>.json`` (every cell, the counts, the tools' versions, the date, the commit, the
command) and ``<output>.md``.  Cells whose code the walk cannot account for (calls, per-thread
data-dependent branches) are listed as not modeled, with the reason.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench import baselines_gpu, dw_gpu, gpu, sass
from expansions.cpu import kernels as K
from expansions.cpu import newton as N
from expansions.cpu.eft import two_prod, two_sum
from expansions.cpu.lanes import group_any, shfl, shfl_down, shfl_up
from expansions.cuda import build
from expansions.formats import group_width
from expansions.generate import random_terms

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "bench" / "results" / "model_sm90"
RS = (2, 3, 4, 8, 16, 32)
DTYPES = ("float64", "float32")
ANCHORS = ROOT / "paper_repro" / "anchors" / "collange2016_tables.csv"

#: Per SM and clock, in warp instructions, on compute capability 9.0 (Hopper).  Issue: four warp
#: schedulers per SM, each dispatching one warp instruction per clock (NVIDIA H100 Tensor Core GPU
#: Architecture whitepaper, "H100 SM architecture": four processing blocks per SM, each with a warp
#: scheduler and dispatch unit of 32 threads/clock).  FP64: 64 results per clock per SM = 2 warp
#: instructions, FP32: 128 = 4, warp shuffle: 32 = 1 (CUDA C++ Programming Guide, "Arithmetic
#: Instructions", throughput table, column 9.0).  Votes, selects and integer instructions are
#: charged to the issue slots only.
RATES = {"issue": 4.0, "fp64": 2.0, "fp32": 4.0, "shfl": 1.0}

#: Devices.  H100 SXM5: 132 SMs, boost clock 1.98 GHz, 3.35 TB/s HBM3 (NVIDIA H100 Tensor Core GPU
#: datasheet; its FP64 34 TFLOPS = 132 SMs x 64 FMA x 2 flops x 1.98 GHz, and the whitepaper's table
#: of H100 SXM5 SMs).  H200 SXM: the same GH100 SM count and clocks (NVIDIA H200 Tensor Core GPU
#: datasheet: FP64 34 TFLOPS, as the H100 SXM), 4.8 TB/s HBM3e.
DEVICES = {
    "H100 SXM": {"sms": 132, "clock_hz": 1.98e9, "bandwidth_bytes_s": 3.35e12},
    "H200": {"sms": 132, "clock_hz": 1.98e9, "bandwidth_bytes_s": 4.8e12},
}

#: The issue's goal (issue 13, item 2): the bound at least this many times the paper's K40 figure.
GOAL_OVER_K40 = 25.0

#: Benchmark inputs (bench/gpu.py, best case): the paper's launch shape, 1024 blocks of 256 threads,
#: seeds 3 and 4, K = 16 operations per load; library kernels (streaming): seeds 1 and 2 as
#: bench/gpu.py's stream scenario, 2^15 expansions instead of its 2^24 (the trip counts are a mean).
BEST_BLOCKS, BEST_THREADS, BEST_K = 1024, 256, 16
STREAM_COUNT = 1 << 15
#: At most this many warp-iterations are walked per cell (all of them when they have fewer
#: distinct vote sequences); the mean is over the sample, chosen with a fixed seed.
SAMPLE = 256
#: The Newton kernels' walks are long (every step's products, additions and renormalizations): fewer.
NEWTON_SAMPLE = 32


# ---------------------------------------------------------------------------------------------
# Trip counts: the twins' data-dependent loops, with the vote of each warp (32/W groups).


class Votes:
    """The ``warp_any`` outcomes of every warp, one column per check: 1 (some group active, go on),
    0 (stop), :data:`END_CODE` (the loop ran its bound of rounds), -1 (this warp has no check here)."""

    END_CODE = 2

    def __init__(self, groups_per_warp: int):
        self.G = groups_per_warp
        self.cols: list = []
        self.floor: dict = {}  # {"fp", "shfl", "vote"}: per warp, the algorithm's own operations (floor)

    def cost(self, where, fp: float = 0, shfl: float = 0, vote: float = 0):
        """Charge the algorithm's own warp operations to the warps ``where`` (a mask per warp, or None
        for all): ``fp`` floating-point operations, ``shfl`` shuffles of one term, ``vote`` votes.  A
        warp executes a step once for all its groups, so this is per warp, like the instructions."""
        for k, v in (("fp", fp), ("shfl", shfl), ("vote", vote)):
            if v:
                add = v if where is None else np.where(where, v, 0)
                self.floor[k] = self.floor.get(k, 0) + add

    def check(self, act, live):
        """Record the vote of every live warp on the group predicate ``act``; the warps still in the loop."""
        wa = act.reshape(-1, self.G).any(axis=1)
        self.cols.append(np.where(live, wa.astype(np.int8), np.int8(-1)))
        return live & wa

    def end(self, live):
        self.cols.append(np.where(live, np.int8(self.END_CODE), np.int8(-1)))

    def start(self, rows: int):
        return np.ones(rows // self.G, dtype=bool)

    def matrix(self, warps: int) -> np.ndarray:
        return np.stack(self.cols, axis=1) if self.cols else np.zeros((warps, 0), dtype=np.int8)


def nonfinite_check(votes: Votes, operands, out):
    """The kernels' one vote of the non-finite rule on the hot path (``warp_has_nonfinite`` in
    expansion.cuh): a group votes when a term of an operand or of its result is not finite (the
    result after the rule is non-finite exactly then).  Returns ``out``."""
    act = ~np.isfinite(out).all(axis=1)
    for a in operands:
        act |= ~np.isfinite(a).all(axis=1)
    votes.check(act, votes.start(len(out)))
    return out


def add_fast_votes(x, y, R, votes: Votes):
    """``expansions.cpu.kernels.add_fast`` with the loop's vote per warp recorded in ``votes``."""
    xp, n, m, X, Y, lane, zero = K._group_operands(x, y, R)
    if n > R:
        X = xp.where(lane < R, X, zero)
    if m > R:
        Y = xp.where(lane < R, Y, zero)
    s, e = two_sum(X, Y)
    votes.cost(None, fp=6)  # the lane-wise 2Sum
    leading = s[:, 0].copy()
    live = votes.start(len(x))
    for _ in range(R - 2):
        es = xp.where(lane == 0, zero, shfl_up(e, 1))
        act = group_any(es != 0, R)
        votes.cost(live, shfl=1, vote=1)  # the errors shifted up, the vote on them
        live = votes.check(act, live)
        if not live.any():
            break
        votes.cost(live, fp=6)  # the round's 2Sum
        ns, ne = two_sum(s, es)
        s = xp.where(act[:, None], ns, s)
        e = xp.where(act[:, None], ne, e)
    else:
        if R > 2:
            votes.end(live)
    s = s + xp.where(lane == 0, zero, shfl_up(e, 1))
    votes.cost(None, fp=1, shfl=1)  # the last shift and plain addition
    return nonfinite_check(votes, (x, y), K.nonfinite_epilogue(s[:, :R], (x, y), leading))


def _propagate_votes(s, e, R, lane, votes: Votes):
    """``expansions.cpu.kernels._propagate`` with the vote per warp."""
    zero = s.dtype.type(0)
    live = votes.start(len(s))
    for k in range(R):
        act = group_any(e != 0, R)
        votes.cost(live, vote=1)
        live = votes.check(act, live)
        if not live.any():
            break
        # 2Sum, the errors shifted up; the errors of round R are never used (the callers keep s), so
        # the algorithm's own work there is the sum alone (the compiler drops the rest where it unrolls
        # the last round)
        votes.cost(live, fp=6, shfl=1) if k < R - 1 else votes.cost(live, fp=1)
        ns, ne = two_sum(s, e)
        ne = np.where(lane == 0, zero, shfl_up(ne, 1))
        s = np.where(act[:, None], ns, s)
        e = np.where(act[:, None], ne, e)
    else:
        votes.end(live)
    return s, e


def positional_votes(x, votes: Votes):
    """``expansions.cpu.kernels.positional`` (``positional_group`` in mul.cuh, at the entry of the
    multiplication and of the Newton kernels) with its vote per warp: the chain test (the term above by
    a shuffle, a product, a compare, two group votes), then ``warp_any(fix)``; the renormalization
    (and its loop's votes) only in the warps where some group breaks the chain."""
    n = x.shape[1]
    if n < 2:
        return x
    top = x.dtype.type(2.0 ** np.finfo(x.dtype).nmant)
    with np.errstate(all="ignore"):
        a = np.abs(x)
        fix = ~(top * a[:, 1:] <= a[:, :-1]).all(axis=1) & np.isfinite(x).all(axis=1)
    votes.cost(None, fp=1, shfl=1, vote=2)
    need = votes.check(fix, votes.start(len(x)))
    if not need.any():
        return x
    return np.where(fix[:, None], renormalize_votes(x, n, votes, live=need, entry=False), x)


def mul_truncated_votes(x, y, R, votes: Votes):
    """``expansions.cpu.kernels.mul_truncated`` with the votes of its operands' positional checks and
    of its propagate loops."""
    x, y = positional_votes(x, votes), positional_votes(y, votes)
    xp, n, m, X, Y, lane, zero = K._group_operands(x, y, R)
    s = xp.zeros_like(X)
    pi = xp.zeros_like(X)
    leading = X[:, 0] * Y[:, 0]
    for i in range(R - 1):
        yi = shfl(Y, i) if i < m else xp.zeros_like(X)
        p, e = two_prod(X, yi)
        s, ep = two_sum(s, p)
        # y_i broadcast, 2ProdFMA (2), 2Sum (6), s_0 to lane i and s shifted down (2 shuffles)
        votes.cost(None, fp=8, shfl=(1 if i < m else 0) + 2)
        pi = xp.where(lane == i, shfl(s, 0), pi)
        s = xp.where(lane >= R - 1, zero, shfl_down(s, 1))
        s, e = _propagate_votes(s, e, R, lane, votes)
        s, ep = _propagate_votes(s, ep, R, lane, votes)
    yi = shfl(Y, R - 1) if R - 1 < m else xp.zeros_like(X)
    s = s + X * yi
    pi = xp.where(lane == R - 1, shfl(s, 0), pi)
    votes.cost(None, fp=2, shfl=(1 if R - 1 < m else 0) + 1)  # the last step: product, addition, s_0
    return nonfinite_check(votes, (x, y), K.nonfinite_epilogue(pi[:, :R], (x, y), leading))


def needs_sort(terms):
    """Per group, whether the sorting network of ``renormalize_round`` would move a term: some term's key
    (``sort_key`` in renorm.cuh: magnitude bits + 2, NaN 1) below the next one's."""
    u = np.uint64 if terms.dtype == np.float64 else np.uint32
    mag = np.abs(terms).view(u)
    key = np.where(np.isnan(terms), u(1), mag + u(2))
    return (key[:, :-1] < key[:, 1:]).any(axis=1)


def renormalize_votes(x, R, votes: Votes, live=None, entry: bool = True):
    """``expansions.cpu.kernels.renormalize`` with the vote per warp of ``renormalize_group``'s loop
    (the kernel votes before rounds 2..R; the twin tests after each round: the same rounds), in the
    warps ``live`` (default all); ``entry``: the renormalize kernel's non-finite vote too (not for
    the group function called inside another operation)."""
    xp = np
    N, n = x.shape
    cur, out, leading = x, None, None
    active = xp.ones(N, dtype=bool)
    live = votes.start(N) if live is None else live
    stages = int(np.log2(group_width(max(n, R))))
    stages = stages * (stages + 1) // 2  # of the bitonic sorting network over the group's lanes
    for k in range(R):
        if k > 0:
            live = votes.check(active, live)
            if not live.any():
                break
        sorting = votes.check(needs_sort(cur), live)  # renormalize_round's warp_needs_sort
        order = xp.argsort(-xp.abs(cur), axis=1, kind="stable")
        srt = xp.take_along_axis(cur, order, axis=1)
        w = srt.shape[1]
        # a round: the sort's exchanges where a group needs them (one shuffle of the term each), the w terms
        # gathered, VecSum and VecSumErrBranch (w - 1 2Sums each), the nonoverlap test (the term above, a
        # compare, one vote)
        votes.cost(live, fp=12 * (w - 1) + 1, shfl=w + 1, vote=1)
        votes.cost(sorting, shfl=stages)
        e = xp.empty_like(srt)
        s = srt[:, w - 1].copy()
        for i in range(w - 2, -1, -1):
            s, e[:, i + 1] = two_sum(srt[:, i], s)
        e[:, 0] = s
        if leading is None:
            leading = e[:, 0].copy()
        r = K._vec_sum_err_branch(e, R)
        out = r if out is None else xp.where(active[:, None], r, out)
        active = active & ~K._adjacent_nonoverlapping(out)
        cur = out
    else:
        if R > 1:
            votes.end(live)
    result = K.nonfinite_epilogue(out, (x,), leading)
    return nonfinite_check(votes, (x,), result) if entry else result


def add_safe_floor(x, y, R, votes: Votes):
    """``expansions.cpu.kernels.add_safe`` (no data-dependent loop; the non-finite rule's vote) with its
    own operations charged to ``votes``: Algorithm 1's 2Sum of x_0 + y_0, then per inserted term (x_i,
    y_i, i = 1..K-1) the term brought to lane 0, the errors shifted up and a 2Sum, R - 2 steps of a
    shift and a 2Sum, a shift and a plain addition."""
    n, m = x.shape[1], y.shape[1]
    inserted = (n - 1) + (m - 1)
    votes.cost(None, fp=6 + 6 * inserted + 6 * (R - 2) + 1, shfl=2 * inserted + (R - 2) + 1)
    return nonfinite_check(votes, (x, y), K.add_safe(x, y, R))


def sub_safe_floor(x, y, R, votes: Votes):
    return add_safe_floor(x, -y, R, votes)


def _newton_votes(name: str):
    """The Newton kernel ``newton_<name>`` (newton.cuh) as its twin :mod:`expansions.cpu.newton` runs it,
    with every truncated product, safe addition and renormalization replaced by its mirror above (the
    kernel calls the same group functions, in the twin's order): its votes and its floor."""
    def run(x, y, R, votes: Votes):
        saved = N.add_safe, N.mul_truncated, N.renormalize, N.positional
        N.add_safe = lambda a, b, r: add_safe_floor(a, b, r, votes)
        N.mul_truncated = lambda a, b, r: mul_truncated_votes(a, b, r, votes)
        N.renormalize = lambda a, r: renormalize_votes(a, r, votes)
        N.positional = lambda a: positional_votes(a, votes)
        try:
            return N.div(x, y, R) if name == "div" else getattr(N, name)(np.abs(x) if name == "sqrt" else x, R)
        finally:
            N.add_safe, N.mul_truncated, N.renormalize, N.positional = saved

    return run


MIRRORS = {"add_fast": add_fast_votes, "sub_fast": add_fast_votes, "mul_truncated": mul_truncated_votes,
           "FastAdd": add_fast_votes, "TruncMul": mul_truncated_votes,
           "newton_reciprocal": _newton_votes("reciprocal"), "newton_div": _newton_votes("div"),
           "newton_sqrt": _newton_votes("sqrt")}


def _padded(a, G):
    """Rows of ``a`` padded with zero expansions to whole warps (groups past the end compute on zeros)."""
    extra = (-len(a)) % G
    return np.concatenate([a, np.zeros((extra, a.shape[1]), a.dtype)]) if extra else a


#: The mirrors that charge the floor of the kernels without data-dependent loops.
FLOORS = {"add_safe": add_safe_floor, "sub_safe": sub_safe_floor, "SafeAdd": add_safe_floor}


def vote_sequences(op: str, dtype: str, R: int, best: bool, renormalize: bool = False, floor: dict | None = None):
    """One row per warp-iteration: its vote codes (see :class:`Votes`), on the benchmark's inputs;
    ``renormalize``: the operation, then the renormalization (a renormalizing library instance).
    ``floor``, a dict: gets the sums over the warp-iterations of the algorithm's own warp operations
    (:meth:`Votes.cost`) as ``"fp"``, ``"shfl"``, ``"vote"``, and their number, ``"warp_iterations"``."""
    G = 32 // group_width(R)
    if best:
        count = BEST_BLOCKS * BEST_THREADS // group_width(R)
        x, y = random_terms((count,), R, dtype, seed=3), random_terms((count,), R, dtype, seed=4)
        pairs = []
        for k in range(BEST_K):
            xk = x * x.dtype.type(1 + (k & 1))  # bench/kernels.cu's run_k: every term scaled by 1 or 2
            pairs.append((xk, y))
    else:
        pairs = [(random_terms((STREAM_COUNT,), R, dtype, seed=1), random_terms((STREAM_COUNT,), R, dtype, seed=2))]
    rows = []
    for a, b in pairs:
        a, b = _padded(a, G), _padded(b, G)
        if op in ("sub_fast",):
            b = -b
        votes = Votes(G)
        with np.errstate(all="ignore"):
            if op == "renormalize":
                renormalize_votes(K.mul_truncated(a, b, R), R, votes)
            else:
                raw = {**FLOORS, **MIRRORS}[op](a, b, R, votes)
                if renormalize:
                    renormalize_votes(raw, R, votes)
        rows.append(votes.matrix(len(a) // G))
        if floor is not None:
            warps = len(a) // G
            for k in ("fp", "shfl", "vote"):
                floor[k] = floor.get(k, 0.0) + float(np.sum(np.broadcast_to(votes.floor.get(k, 0), (warps,))))
            floor["warp_iterations"] = floor.get("warp_iterations", 0) + warps
    width = max(r.shape[1] for r in rows)
    return np.concatenate([np.pad(r, ((0, 0), (0, width - r.shape[1])), constant_values=-1) for r in rows])


def _events(row) -> list:
    return [sass.END if c == Votes.END_CODE else bool(c) for c in row if c >= 0]


# ---------------------------------------------------------------------------------------------
# Cells.


def cells(rs=RS, dtypes=DTYPES) -> list[dict]:
    """Every (kernel, dtype, R) of the model: name expression, kind of steady loop, the operation
    its votes follow, lanes per expansion and expansions per warp-iteration."""
    out = []
    for dtype in dtypes:
        for R in rs:
            W = group_width(R)
            for op, info in build.OPERATIONS.items():
                if info.terms is not None and info.terms != R:
                    continue
                if info.table:  # the elementary functions: sequences of the operations modeled here, and
                    continue    # NVRTC needs minutes per function at large R (build.ELEMENTARY_R)
                # the renormalizing instance is what the library launches; the raw one (renormalize=False)
                # is the paper's kernel (the K40 column); the Newton kernels: the renormalizing one only
                flags = ((True,) if info.newton else (False, True)) if info.renormalizes else (False,)
                for flag in flags:
                    inst = build.instance(op, dtype, R, renormalize=flag)
                    per_warp = {"group": 32 // W, "thread": 32, "term": 32 / R}[info.mapping]
                    out.append({"kernel": inst.name_expression, "source": "library", "op": op, "dtype": dtype,
                                "R": R, "W": W if info.mapping == "group" else None, "mapping": info.mapping,
                                "layout": info.layout, "kind": "grid", "per_warp_iteration": per_warp,
                                "operands": info.operands, "renormalize": flag})
            for (opn, alg), functor in gpu.OPS.items():
                out.append({"kernel": gpu.name_expression("best", opn, alg, dtype, R), "source": "bench",
                            "op": functor, "operation": opn, "algorithm": alg, "dtype": dtype, "R": R, "W": W,
                            "mapping": "group", "kind": "best", "per_warp_iteration": 32 // W})
            if R == 2:  # the library's R = 2 methods: the double-word kernels, one thread per number
                for opn, name in dw_gpu.METHODS:
                    out.append({"kernel": dw_gpu.name_expression(name, dtype), "source": "bench",
                                "op": dw_gpu.dw_kernels.functor(name), "operation": opn, "algorithm": name,
                                "dtype": dtype, "R": R, "W": None, "mapping": "thread", "kind": "best",
                                "per_warp_iteration": 32 * dw_gpu.OPS_PER_ITERATION, "double_word": True,
                                "default": name == dw_gpu.R2_DEFAULTS[opn]})
            for key in ("campary", "qd"):
                for opn in ("add", "mul"):
                    if baselines_gpu.functor(opn, key, R) is None:
                        continue
                    out.append({"kernel": baselines_gpu.name_expression("best", opn, key, dtype, R),
                                "source": "bench", "op": baselines_gpu.functor(opn, key, R), "operation": opn,
                                "algorithm": key, "dtype": dtype, "R": R, "W": None, "mapping": "thread",
                                "kind": "best", "per_warp_iteration": 32})
    return out


def paper_figures() -> dict:
    """{(operation, algorithm, R): K40 Mop/s, best case} from the anchors CSV (Tables I and III)."""
    with open(ANCHORS) as f:
        rows = [r for r in f if not r.startswith("#")]
    return {(r["operation"], r["algorithm"], int(r["R"])): float(r["mops"])
            for r in csv.DictReader(rows) if r["scenario"] == "best"}


#: The paper's algorithm of each library operation (for the K40 column).
LIBRARY_PAPER = {"add_safe": ("add", "safe"), "sub_safe": ("add", "safe"), "add_fast": ("add", "fast"),
                 "sub_fast": ("add", "fast"), "mul_truncated": ("mul", "parallel")}


def bound(per_op: dict, bytes_per_op: float | None) -> dict:
    """{device: {"mops", "binding", "cycles"}} from the warp instructions per operation by class."""
    use = {"issue": sum(per_op.values()), "fp64": per_op["fp64"], "fp32": per_op["fp32"], "shfl": per_op["shfl"]}
    out = {}
    for dev, d in DEVICES.items():
        cycles = {r: use[r] / RATES[r] for r in RATES}  # SM clocks per operation and resource
        rates = {r: d["sms"] * d["clock_hz"] / c for r, c in cycles.items() if c > 0}
        if bytes_per_op:
            rates["memory"] = d["bandwidth_bytes_s"] / bytes_per_op
        binding = min(rates, key=rates.get)
        out[dev] = {"mops": float(rates[binding] / 1e6), "binding": binding}
    return out


def floor_per_op(cell: dict, floor: dict, per_op: dict) -> dict | None:
    """The floor of a cell, in warp instructions per operation by class (:data:`sass.CLASSES`): the
    algorithm's own floating-point operations, shuffles and votes and nothing else (design decision
    12).  Parallel kernels: counted by the mirrors of the twins while they run on the benchmark's
    inputs (:meth:`Votes.cost`; the data-dependent loops charge their rounds as each warp runs them),
    per warp-iteration, divided by the expansions per warp-iteration; a float64 shuffle is two 32-bit
    SHFL instructions.  Sequential baselines (one thread per expansion, no collective): the
    floating-point instructions the compiler emitted (explicit intrinsics, nothing contracted or
    added), so their overhead is everything else.  None where the cell has no mirror."""
    out = {c: 0.0 for c in sass.CLASSES}
    fp = "fp64" if cell["dtype"] == "float64" else "fp32"
    if cell["mapping"] == "thread":
        out["fp64"], out["fp32"] = per_op["fp64"], per_op["fp32"]
        return out
    if not floor.get("warp_iterations"):
        return None
    n = floor["warp_iterations"] * cell["per_warp_iteration"]
    out[fp] = floor["fp"] / n
    out["shfl"] = floor["shfl"] / n * (2 if cell["dtype"] == "float64" else 1)
    out["vote"] = floor["vote"] / n
    return out


#: The operations whose first counted loop is the multiplication's loop over y_i (R - 1 steps).
MUL_OPS = ("mul_truncated", "TruncMul")


def _walk(func, events, cell: dict, info: dict) -> list:
    """:func:`bench.sass.walk` of one warp-iteration; where the compiler hid the trip count of the
    multiplication's loop over y_i (its code holds no constant bound, e.g. with the renormalization
    inlined after it), that count is given: R - 1 steps (Algorithm 2, lines 3-17)."""
    try:
        return sass.walk(func, events, kind=cell["kind"], info=info)
    except sass.ModelError as exc:
        if cell["op"] not in MUL_OPS or "no constant trip count" not in str(exc):
            raise
        return sass.walk(func, events, counted=(cell["R"] - 1,), kind=cell["kind"], info=info)


def model_cell(cell: dict, func, figures: dict) -> dict:
    """The modeled record of one cell (``func``: its parsed SASS)."""
    rec = dict(cell)
    renorm = bool(cell.get("renormalize"))
    votes_op = cell["op"] if (cell["op"] in MIRRORS or cell["op"] in FLOORS or cell["op"] == "renormalize") else None
    info: dict = {}
    floor: dict = {}
    try:
        if votes_op:
            seqs = vote_sequences(votes_op, cell["dtype"], cell["R"], cell["kind"] == "best", renorm, floor)
            uniq, inverse = np.unique(seqs, axis=0, return_inverse=True)
            inverse = np.asarray(inverse).reshape(-1)
            sample = NEWTON_SAMPLE if cell["op"].startswith("newton_") else SAMPLE
            if len(uniq) <= sample:
                picks, weights = np.arange(len(uniq)), np.bincount(inverse, minlength=len(uniq))
            else:
                chosen = np.random.default_rng(0).choice(len(seqs), sample, replace=False)
                picks, weights = np.unique(inverse[chosen], return_counts=True)
            walks = [(sass.counts(_walk(func, _events(uniq[p]), cell, info)), w) for p, w in zip(picks, weights)]
            total = sum(w for _, w in walks)
            per_iter = {c: sum(cnt[c] * w for cnt, w in walks) / total for c in sass.CLASSES}
            checks = (seqs >= 0).sum(axis=1)
            rec["votes"] = {"warp_iterations": int(len(seqs)), "distinct": int(len(uniq)),
                            "walked": int(len(picks)), "sampled": bool(len(uniq) > sample),
                            "mean_checks": float(checks.mean()), "max_checks": int(checks.max())}
        else:
            per_iter = sass.counts(sass.walk(func, kind=cell["kind"], info=info))
    except sass.ModelError as exc:
        rec["not_modeled"] = str(exc)
        return rec
    rec["per_lane_branches"] = info.get("per_lane_branches", 0)
    if cell.get("double_word"):
        rec["algorithm_ops"] = DW_OPS[cell["algorithm"]]
    G = cell["per_warp_iteration"]
    per_op = {c: float(v / G) for c, v in per_iter.items()}
    rec["per_warp_iteration"] = G
    rec["instructions_per_op"] = per_op
    rec["total_per_op"] = sum(per_op.values())
    item = np.dtype(cell["dtype"]).itemsize
    nbytes = None
    if cell["source"] == "library" and cell["mapping"] == "group":
        nbytes = (cell["operands"] + 1) * cell["R"] * item  # inputs read and output written, N = M = R
    rec["bytes_per_op"] = nbytes
    rec["bound"] = bound(per_op, nbytes)
    fl = floor_per_op(cell, floor, per_op)
    if fl is not None:
        rec["floor_per_op"] = fl
        rec["floor_total"] = sum(fl.values())
        rec["floor_bound"] = bound(fl, nbytes)
        rec["over_floor"] = rec["total_per_op"] / rec["floor_total"] if rec["floor_total"] else None
    key = (cell.get("operation"), cell.get("algorithm"), cell["R"]) if cell["source"] == "bench" else (
        *LIBRARY_PAPER.get(cell["op"] if not renorm else None, (None, None)), cell["R"])
    k40 = figures.get(key) if cell["dtype"] == "float64" else None
    rec["paper_k40_mops"] = k40
    if k40:
        rec["over_k40"] = {dev: b["mops"] / k40 for dev, b in rec["bound"].items()}
        if cell["source"] == "bench" and cell["mapping"] == "group":
            rec["meets_goal"] = bool(rec["over_k40"]["H100 SXM"] >= GOAL_OVER_K40)
    return r2_fields(rec) if cell.get("double_word") else rec


def _source_for(cell) -> str:
    return gpu._source() if cell["source"] == "bench" else build.source()


def run(rs=RS, dtypes=DTYPES, only: str | None = None, progress: bool = True) -> list[dict]:
    """Model every cell (or those whose kernel name contains ``only``): one NVRTC program per source,
    dtype and R."""
    todo = [c for c in cells(rs, dtypes) if not only or only in c["kernel"]]
    figures = paper_figures()
    records = []
    groups: dict = {}
    for c in todo:
        groups.setdefault((c["source"], c["dtype"], c["R"]), []).append(c)
    for (source, dtype, R), group in groups.items():
        t0 = time.perf_counter()
        names = [c["kernel"] for c in group]
        try:
            funcs = sass.sass(_source_for(group[0]), names)
        except RuntimeError:  # one kernel may not compile alone; compile one by one to say which
            funcs = {}
            for n in names:
                try:
                    funcs.update(sass.sass(_source_for(group[0]), [n]))
                except RuntimeError as exc:
                    funcs[n] = exc
        for c in group:
            f = funcs[c["kernel"]]
            records.append(dict(c, not_modeled=f"does not compile: {f}") if isinstance(f, Exception)
                           else model_cell(c, f, figures))
        if progress:
            print(f"{source} {dtype} R={R}: {len(group)} kernels in {time.perf_counter() - t0:.1f} s", flush=True)
    return records


# ---------------------------------------------------------------------------------------------
# Output.


def meta(argv) -> dict:
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = None
    return {"nvrtc": sass.nvrtc_version(), "nvdisasm": sass.nvdisasm_version(), "arch": sass.ARCH,
            "options": list(build.OPTIONS), "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds"), "commit": commit, "command": " ".join(["python -m bench.model", *argv]),
            "rates_per_sm_clock": RATES, "devices": DEVICES, "goal_over_k40": GOAL_OVER_K40, "fpmp": FPMP,
            "inputs": {"best": {"blocks": BEST_BLOCKS, "threads": BEST_THREADS, "K": BEST_K, "seeds": [3, 4]},
                       "stream": {"count": STREAM_COUNT, "seeds": [1, 2]}, "sample": SAMPLE,
                       "newton_sample": NEWTON_SAMPLE}}


def _fmt(v, digits=3):
    return "—" if v is None else f"{v:.{digits}g}"


def markdown(records: list[dict], info: dict) -> str:
    lines = ["# Instruction model of the kernels, sm_90 (H100 SXM, H200)", "",
             f"Generated by `{info['command']}` on {info['date']} (commit {info['commit']}), NVRTC {info['nvrtc']}, "
             f"nvdisasm {info['nvdisasm']}, options `{' '.join(info['options'])}`, no GPU.  Do not edit: rerun "
             "the command.", "",
             "Warp instructions per operation of each kernel's steady state (bench/model.py, bench/sass.py), the "
             "data-dependent loops run as the CPU twins run them on the benchmark's inputs; the bound is "
             "SMs x clock x min over resources of (rate per SM and clock / use per operation): issue 4 warp "
             "instructions, FP64 2, FP32 4, shuffle 1 (CUDA C++ Programming Guide throughput table, cc 9.0), "
             "and memory bandwidth for the library kernels (load x, y, store the result).  H100 SXM and H200 "
             "have the same SMs and clocks: their compute bounds are equal.", ""]
    bench_rs = sorted({r["R"] for r in records if r.get("paper_k40_mops")})
    lines += [f"## Bound / paper's K40 figure (H100 SXM, float64; goal >= {GOAL_OVER_K40:g}x)", "",
              "| kernel | " + " | ".join(f"R = {R}" for R in bench_rs) + " |", "|---" * (len(bench_rs) + 1) + "|"]
    for kern in dict.fromkeys((r["source"], r["op"]) for r in records if r.get("paper_k40_mops")):
        cells_ = []
        for R in bench_rs:
            rec = next((r for r in records if (r["source"], r["op"]) == kern and r["R"] == R
                        and r["dtype"] == "float64" and r.get("over_k40")), None)
            if rec is None:
                cells_.append("")
                continue
            ratio = rec["over_k40"]["H100 SXM"]
            mark = "" if "meets_goal" not in rec else (" ✓" if rec["meets_goal"] else " ✗")
            cells_.append(f"{ratio:.1f}×{mark}")
        name = f"{kern[1]} ({'benchmark, best case' if kern[0] == 'bench' else 'library, streaming'})"
        lines.append(f"| {name} | " + " | ".join(cells_) + " |")
    misses = [r for r in records if r.get("meets_goal") is False]
    lines += ["", f"Goal missed in {len(misses)} cells" + (":" if misses else "."), ""]
    lines += ["| kernel | R | bound/K40 | binding | instructions per op | of which FP / shuffle / vote / select / "
              "integer / branch | floor bound/K40 |", "|---|---|---|---|---|---|---|"] if misses else []
    for r in misses:
        per, tot = r["instructions_per_op"], r["total_per_op"]
        shares = " / ".join(f"{100 * per[c] / tot:.0f} %" for c in ("fp", "shfl", "vote", "select", "int", "branch")
                            if c != "fp") if tot else ""
        fp = 100 * (per["fp64"] + per["fp32"]) / tot if tot else 0
        floor_k40 = (f"{r['floor_bound']['H100 SXM']['mops'] / r['paper_k40_mops']:.1f}×" if r.get("floor_bound")
                     else "")
        lines.append(f"| {r['op']} | {r['R']} | {r['over_k40']['H100 SXM']:.1f}× | {r['bound']['H100 SXM']['binding']} "
                     f"| {tot:.4g} | {fp:.0f} % / {shares} | {floor_k40} |")
    lines += ["", "A miss bound by issue slots means the kernel executes more instructions per operation than the "
              "H100's issue rate allows for 25× the K40: fewer non-floating-point instructions is what would fix "
              "it (the vote and branch bookkeeping of the data-dependent loops, the shift's selects, the register "
              "moves; finished groups run on without selects and the non-finite rule is one vote on the hot path "
              "already): see the next section's reasons (issue 13, item 2).  The last column is the bound of a "
              "kernel that issued only the algorithm's own operations (the floor): where it is below 25× too, no "
              "code generation reaches the goal on these inputs, only fewer rounds of the data-dependent loop "
              "(the benchmark's random expansions keep the fast addition's loop running most of its R - 2 "
              "rounds; the paper's K40 figure implies fewer).", ""] if misses else []
    lines += floor_section(records)
    lines += r2_section(records)
    lines += ["## Every cell", "",
              "Per operation: warp instructions by class, total; bound in Mop/s (H100 SXM, H200) and the binding "
              "resource; the floor (the algorithm's own FP operations, shuffles and votes, warp instructions per "
              "operation, see floor_per_op in bench/model.py), the counted total over the floor, and the bound of "
              "a kernel that issued only its floor (H100 SXM); the paper's K40 figure and bound / K40 (H100 SXM).  "
              "`…, true>`: the renormalizing instance (the operation and the renormalization in one launch, what "
              "the library runs); `…, false>`: the raw operation (the paper's kernel).", "",
              "| kernel | dtype | R | " + " | ".join(sass.CLASSES) + " | total | H100 Mop/s | H200 Mop/s | binding "
              "| floor | total / floor | floor H100 Mop/s | K40 | bound/K40 | votes per warp-iteration |",
              "|---" * (len(sass.CLASSES) + 14) + "|"]
    lines[-2:-2] = ["† The code has per-lane (or per-thread) data-dependent branches: the walk keeps the shorter "
                    "side of each, so the count is a lower bound (and the Mop/s an upper bound) of what a warp "
                    "whose lanes disagree issues.", ""]
    for r in records:
        head = f"| `{r['kernel']}` | {r['dtype']} | {r['R']} |"
        if "not_modeled" in r:
            lines.append(head + f" not modeled: {r['not_modeled']} |")
            continue
        per = r["instructions_per_op"]
        b = r["bound"]
        v = r.get("votes")
        vtxt = f"{v['mean_checks']:.1f} (max {v['max_checks']}{', sampled' if v['sampled'] else ''})" if v else ""
        if "measured_mops" in r:
            vtxt += f" measured {r['measured_mops']:.4g} Mop/s = {r['measured_over_bound']:.2f} of the bound"
        dagger = " †" if r.get("per_lane_branches") else ""
        lines.append(head + " " + " | ".join(_fmt(per[c], 3) for c in sass.CLASSES)
                     + f" | {_fmt(r['total_per_op'], 4)}{dagger} | {_fmt(b['H100 SXM']['mops'], 4)} | "
                     f"{_fmt(b['H200']['mops'], 4)} | {b['H100 SXM']['binding']} | "
                     f"{_fmt(r.get('floor_total'), 4)} | {_fmt(r.get('over_floor'), 3)} | "
                     f"{_fmt((r.get('floor_bound') or {}).get('H100 SXM', {}).get('mops'), 4)} | "
                     f"{_fmt(r.get('paper_k40_mops'), 4)} | "
                     f"{_fmt((r.get('over_k40') or {}).get('H100 SXM'), 3)} | {vtxt} |")
    return "\n".join(lines) + "\n"


#: Goal of issue 13, item 2: every steady state within this factor of its floor, or a written reason.
GOAL_OVER_FLOOR = 1.3

#: Why each kernel family issues more than its floor, and what would bring it closer (issue 13, item 2;
#: read from the kernels' source and the classes of the counted instructions).
REASONS = {
    "safe addition (add_safe, sub_safe, SafeAdd)": (
        "per step the lane-0 select (`lane == 0 ? x_i : e_up`: two FSEL for a float64) and the lane test; the "
        "load and store addressing (library kernels); the negation of y (subtraction); the non-finite rule's one "
        "warp vote (warp_has_nonfinite: finite data skip the rest of the rule, its ballots and broadcasts); the "
        "x_i, y_i broadcasts that only lane 0 uses are the algorithm's own shuffles (in the floor)",
        "the select is the step itself (lane 0 takes the new term, the others the shifted error): one shuffle "
        "cannot carry both, so it stays; what is left is addressing and the loop of the grid"),
    "fast addition (add_fast, sub_fast, FastAdd)": (
        "each round of the error loop shifts the errors up (two SHFL and two FSEL for a float64: the zero into "
        "lane 0), compares them with zero (a DSETP) and votes once (VOTE, the exit branch, and the divergence "
        "check BRA.DIV that precedes every shuffle and vote); on the benchmark's inputs the loop runs most of its "
        "R - 2 rounds, so the 2Sum's six additions are about half of a round",
        "done: finished groups run on with the others (their round is 2Sum(s, +0), the same bits: see add.cuh), "
        "so a round has no group mask, no second vote and no selects that keep finished groups.  Left: the "
        "shift's selects and the BRA.DIV checks the compiler puts before every warp-synchronous shuffle and vote"),
    "multiplication (mul_truncated, TruncMul)": (
        "the two propagate loops per step (R - 1 steps), each round a 2Sum, the shift up with its zero in lane 0 "
        "(two SHFL, two FSEL), a DSETP and one vote with its branch and BRA.DIV checks, and register moves of "
        "s; the `lane == i` select of pi_i and the `lane >= R - 1` select of the shift",
        "done: finished groups run on (the same bits: see mul.cuh; no group mask, no selects that keep them) and "
        "the loop is unrolled by 2 or 4 (the counter and moves once per 2 or 4 rounds): 472 -> 335 instructions "
        "per operation at R = 8 float64.  Left: the shift's selects, the BRA.DIV checks and the moves of the "
        "loop-carried s"),
    "renormalization (renormalize, and the renormalizing instances `…, true>`)": (
        "the per-lane output index of VecSumErrBranch (integer and select work on every lane for every term), "
        "the nonoverlap test's ulp from the exponent bits, the loop's extra warp vote per round, the sort's "
        "test (a shuffle, the keys, a vote: the sorting network itself now runs only when a group of the warp "
        "is out of order, warp_needs_sort) and, where it runs, its integer keys and index shuffles",
        "the output index by one prefix count (a ballot and a popc) instead of per-term selects; the nonoverlap "
        "test and the loop's exit in one vote; the renormalizing instances then cost the operation plus "
        "about one round"),
    "Newton division, reciprocal, square root (newton_div, newton_reciprocal, newton_sqrt)": (
        "a sequence of the group operations above at r = 1, 2, 4, ... terms (truncated products, one safe "
        "addition and a renormalization after each, Algorithm 2 and 1 with the renormalization of JMMP 2016), so "
        "their overhead is that of those rows (1.3-5.4x their floors); plus the scaling by powers of two (the "
        "leading exponents, pow2 from the bits) and the Newton finish (non-finite epilogue and the NaN/zero "
        "leading results)",
        "the fixes of the rows above (renormalization, propagate loops); and since every step's product is "
        "renormalized at once, a product kernel whose output is already nonoverlapping would let those "
        "renormalizations go.  Not modeled: the square root from R = 8 (float64) or 16 (float32), and every "
        "Newton kernel at R = 32 float64 (the walk meets fewer votes than the mirror records: some vote of their "
        "longest code that the walk does not recognize yet)"),
    "sequential baselines (Cert*, Dd*, Qd*)": (
        "loop counters, the merge's comparisons and branches, addressing of the loads and stores (their floor is "
        "the FP instructions the compiler emitted)",
        "(not goals of the issue: the baselines are the paper's comparison points)"),
}


def floor_section(records: list[dict]) -> list[str]:
    """The floor table (counted total / floor, float64, per kernel and R) and the reasons for the misses."""
    rs = sorted({r["R"] for r in records})
    lines = [f"## Counted instructions over the floor (float64; goal <= {GOAL_OVER_FLOOR:g}x or a written reason)",
             "", "The floor of a kernel is its algorithm's own floating-point operations, shuffles (a float64 "
             "shuffle is two 32-bit SHFL) and votes per operation, counted by mirrors of the twins on the "
             "benchmark's inputs (floor_per_op in bench/model.py); the renormalizing instances' floor is the "
             "operation's plus the renormalization's.", "",
             "| kernel | " + " | ".join(f"R = {R}" for R in rs) + " |", "|---" * (len(rs) + 1) + "|"]
    def label(r):
        name = r["op"] if r["source"] == "bench" else r["kernel"].split("<")[0].split("::")[-1]
        kind = " (benchmark, best case)" if r["source"] == "bench" else ""
        return name + (" + renormalize" if r.get("renormalize") else "") + kind

    f64 = [r for r in records if r.get("over_floor") and r["dtype"] == "float64"]
    over = []
    for name in dict.fromkeys(label(r) for r in f64):
        row = []
        for R in rs:
            rec = next((r for r in f64 if label(r) == name and r["R"] == R), None)
            row.append("" if rec is None else f"{rec['over_floor']:.2f}")
            if rec is not None and rec["over_floor"] > GOAL_OVER_FLOOR:
                over.append(rec)
        lines.append(f"| {name} | " + " | ".join(row) + " |")
    lines += ["", f"Cells over {GOAL_OVER_FLOOR:g}x the floor (float64): {len(over)} of "
              f"{sum(1 for r in records if r.get('over_floor') and r['dtype'] == 'float64')}.  Why, and the fix:", "",
              "| kernel family | instructions beyond the floor | what would bring it to the floor |", "|---|---|---|"]
    lines += [f"| {k} | {why} | {fix} |" for k, (why, fix) in REASONS.items()]
    return lines + [""]


#: The double-word algorithms' own operations per operation, counted by hand from dw.cuh (and its
#: twins in expansions/dw/cpu.py): ``fp`` additions, subtractions, products, FMAs and comparisons
#: (2Sum 6, Fast2Sum 3, 2Prod 2 with the FMA; a negation is an operand modifier, free), ``div`` and
#: ``sqrt`` the IEEE divisions and square roots, each compiled to a sequence of instructions with a
#: slow path for special operands (the walk keeps the fast path: the cells are marked †).
DW_OPS = {
    "dw_add_accurate": {"fp": 20, "div": 0, "sqrt": 0},  # 2Sum, 2Sum, +, Fast2Sum, +, Fast2Sum
    "dw_add_sloppy": {"fp": 11, "div": 0, "sqrt": 0},  # 2Sum, +, +, Fast2Sum
    "qd_add_ieee": {"fp": 20, "div": 0, "sqrt": 0},  # 2Sum, 2Sum, +, Fast2Sum, +, Fast2Sum
    "qd_add_sloppy": {"fp": 11, "div": 0, "sqrt": 0},  # 2Sum, + (two), Fast2Sum
    "dg_add22": {"fp": 16, "div": 0, "sqrt": 0},  # +, two branches of 4, |a| >= |b|, Add12 (6)
    "dw_times_dw1": {"fp": 9, "div": 0, "sqrt": 0},  # 2Prod, x, x, +, +, Fast2Sum
    "dw_times_dw2": {"fp": 8, "div": 0, "sqrt": 0},  # 2Prod, x, FMA, +, Fast2Sum
    "dw_times_dw3": {"fp": 9, "div": 0, "sqrt": 0},  # 2Prod, x, FMA, FMA, +, Fast2Sum
    "dg_mul22": {"fp": 27, "div": 0, "sqrt": 0},  # Mul12 (x, two splits of 4, 3 x 2, 2), x, x, +, +, Add12
    "ww_mul": {"fp": 8, "div": 0, "sqrt": 0},  # 2Prod, 3 FMA, Fast2Sum
    "dw_div_dw1": {"fp": 22, "div": 2, "sqrt": 0},  # /, DWTimesFP1 (10), 2Sum, -, +, +, /, Fast2Sum
    "dw_div_dw2": {"fp": 16, "div": 2, "sqrt": 0},  # /, DWTimesFP1 (10), -, -, +, /, Fast2Sum
    "dw_div_dw3": {"fp": 30, "div": 1, "sqrt": 0},  # 1/y, FMA, x, Fast2Sum, DWTimesFP3 (6), DWPlusFP (10), Alg. 12 (9)
    "ww_div": {"fp": 9, "div": 2, "sqrt": 0},  # /, 2Prod, -, -, +, FMA, /, Fast2Sum
    "dw_sqrt": {"fp": 7, "div": 1, "sqrt": 1},  # sqrt, FMA, +, x, /, Fast2Sum, x_h == 0
}

#: NVIDIA CCCL ``fpmp`` (CUDA 13.6 documentation, as quoted by issue 13): double-double throughput on a
#: B200, high-accuracy addition 816 G/s and multiplication 1552 G/s; scaled to an H100 SXM per SM and
#: clock, the issue's figures 0.73 and 1.4 Tops/s (taken from the issue, not recomputed here: this
#: repository holds no B200 clock).  Goal of issue 13, item 4: the model's bound on an H100 at least
#: 0.8 Tops/s (addition) and 1.5 Tops/s (multiplication).
FPMP = {"source": "NVIDIA CCCL fpmp documentation, CUDA 13.6 (figures quoted by issue 13)", "device": "B200",
        "b200_gops": {"add": 816.0, "mul": 1552.0}, "h100_equivalent_tops": {"add": 0.73, "mul": 1.4},
        "h100_equivalent_note": "the issue's scaling per SM and clock to an H100 SXM (132 SMs, 1.98 GHz)",
        "goal_h100_tops": {"add": 0.8, "mul": 1.5}}

#: Why the chain's count can differ from the algorithm's (a note per algorithm in the section).
DW_NOTES = {
    "dg_mul22": "each result is an operand of two successive operations of the chain, and both split the high "
                "word of each operand: the compiler computes that split once for the two (2 of the 27 "
                "operations per product are shared), so the count is 2 below the algorithm's",
}


def r2_fields(rec: dict) -> dict:
    """The JSON fields of a double-word cell for the section: the bound in Tops/s per device, the
    algorithm's own FP operations (the floor) and the counted FP instructions over it, and for the
    additions and multiplications the fpmp figure (H100 equivalent), the goal and whether it is met."""
    # per thread and operation: a thread cell's warp instructions per operation times the warp's 32 threads
    fpc = 32 * (rec["instructions_per_op"]["fp64"] + rec["instructions_per_op"]["fp32"])
    rec["bound_tops"] = {d: b["mops"] / 1e6 for d, b in rec["bound"].items()}
    rec["fp_per_op"] = fpc
    ops = rec.get("algorithm_ops") or {}
    rec["fp_over_algorithm"] = fpc / ops["fp"] if ops.get("fp") and not ops.get("div") and not ops.get("sqrt") else None
    opn = rec["operation"]
    if opn in FPMP["goal_h100_tops"] and rec["dtype"] == "float64":
        rec["fpmp_h100_tops"] = FPMP["h100_equivalent_tops"][opn]
        rec["goal_h100_tops"] = FPMP["goal_h100_tops"][opn]
        rec["meets_r2_goal"] = bool(rec["bound_tops"]["H100 SXM"] >= rec["goal_h100_tops"])
        rec["over_fpmp"] = rec["bound_tops"]["H100 SXM"] / rec["fpmp_h100_tops"]
    return rec


def _binding_reason(r: dict) -> str:
    """Why a double-word cell's bound is what it is, from its counts and the rates (:data:`RATES`)."""
    per = r["instructions_per_op"]
    d = DEVICES["H100 SXM"]
    fp = "fp64" if r["dtype"] == "float64" else "fp32"
    n = per[fp] * 32
    pipe = RATES[fp] * 32 / (per[fp] * 32) * d["sms"] * d["clock_hz"] / 1e12 if per[fp] else None
    if r["bound"]["H100 SXM"]["binding"] == fp:
        return (f"{n:.4g} {fp.upper()} instructions per operation; {fp.upper()} pipe {RATES[fp] * 32:g}/clock/SM x "
                f"{d['sms']} x {d['clock_hz'] / 1e9:g} GHz => {pipe:.3g} Tops/s at best")
    tot = r["total_per_op"] * 32
    return (f"{tot:.4g} warp instructions per 32 operations ({n:.4g} {fp.upper()} each), issue {RATES['issue']:g} "
            f"per clock per SM: the issue slots bind before the {fp.upper()} pipe")


def r2_section(records: list[dict]) -> list[str]:
    """The section "R = 2: double-word kernels beside CCCL fpmp" (issue 13, item 4)."""
    dws = [r for r in records if r.get("double_word")]
    if not dws:
        return []
    lines = ["## R = 2: double-word kernels beside CCCL fpmp", "",
             "At R = 2 the library's `+ - * /` and sqrt run the double-word algorithms of `expansions/cuda/dw.cuh`, "
             "one thread per number (dispatch.R2_DEFAULTS: add dw_add_accurate = JMP 2017 Algorithm 6, mul "
             "dw_times_dw1 = Algorithm 10, div dw_div_dw2 = Algorithm 17, sqrt dw_sqrt; the other names of "
             "dispatch.R2_METHODS are selectable).  Benchmark kernel: `bench::best_dw` / `best_dw_unary` "
             "(bench/kernels.cu): K dependent operations in registers per number, z_{k+1} = F(z_k, z_{k-1}) "
             "(the square root: z_{k+1} = F(z_k)), two per loop iteration with the operands' roles alternating: "
             "no floating-point harness at all (no offset, "
             "no accumulator), so the FP instructions counted are the algorithm's own; besides them the loop "
             "costs its counter and branch (about 1.5 instructions per operation).  Bound = SMs x clock x min over "
             "issue, FP64, FP32 of rate / use, as above, in Tops/s (10^12 operations per second).", "",
             f"CCCL fpmp: {FPMP['source']}: {FPMP['device']} double-double high-accuracy addition "
             f"{FPMP['b200_gops']['add']:g} G/s, multiplication {FPMP['b200_gops']['mul']:g} G/s; per SM and clock "
             f"on an H100 SXM about {FPMP['h100_equivalent_tops']['add']:g} and "
             f"{FPMP['h100_equivalent_tops']['mul']:g} Tops/s ({FPMP['h100_equivalent_note']}: the issue's figures, "
             "not recomputed here).  Goal (issue 13, "
             f"item 4): bound >= {FPMP['goal_h100_tops']['add']:g} Tops/s addition and >= "
             f"{FPMP['goal_h100_tops']['mul']:g} Tops/s multiplication on the H100 SXM.", "",
             "Floor: the algorithm's own floating-point instructions per operation, i.e. the FP instructions "
             "compiled (the kernel has no others; for the divisions and the square root the IEEE division's and "
             "square root's instruction sequences are part of the algorithm), and total / floor the counted "
             "instructions over it.  Algorithm's ops: its operations counted by hand from dw.cuh (DW_OPS in "
             "bench/model.py: 2Sum 6, Fast2Sum 3, 2Prod 2, a comparison 1; a division or square root is listed "
             "apart); counted FP / algorithm is 1 where the compiled kernel issues exactly the algorithm's "
             "operations.  † the division's and square root's slow paths (called for special operands) are not "
             "walked: the count is the fast path's (a lower bound; the Tops/s an upper bound).", "",
             "### float64 (double-double)", "",
             "| operation | algorithm | FP64 / FP32 / select / int / branch per op | total | floor | total / floor | "
             "algorithm's ops | counted FP / algorithm | binding | H100 SXM Tops/s | H200 Tops/s | fpmp H100-equiv. "
             "| bound / fpmp | goal | met |", "|---" * 15 + "|"]

    def row(r):
        per = r["instructions_per_op"]
        G = 32
        cls = " / ".join(f"{per[c] * G:.3g}" for c in ("fp64", "fp32", "select", "int", "branch"))
        ops = r.get("algorithm_ops") or {}
        optxt = f"{ops.get('fp', 0)}" + (f" + {ops['div']} ÷" if ops.get("div") else "") + (
            f" + {ops['sqrt']} √" if ops.get("sqrt") else "")
        ratio = r.get("fp_over_algorithm")
        name = f"**{r['algorithm']}** (default)" if r.get("default") else r["algorithm"]
        dagger = " †" if r.get("per_lane_branches") else ""
        return (f"| {r['operation']} | {name} | {cls}{dagger} | {r['total_per_op'] * G:.3g} | "
                f"{_fmt((r.get('floor_total') or 0) * G or None, 3)} | {_fmt(r.get('over_floor'), 3)} | {optxt} | "
                f"{_fmt(ratio, 3)} | {r['bound']['H100 SXM']['binding']} | {r['bound_tops']['H100 SXM']:.3g} | "
                f"{r['bound_tops']['H200']:.3g} |")

    for r in (r for r in dws if r["dtype"] == "float64"):
        if "not_modeled" in r:
            lines.append(f"| {r['operation']} | {r['algorithm']} | not modeled: {r['not_modeled']} |")
            continue
        tail = (f" {r['fpmp_h100_tops']:g} | {r['over_fpmp']:.2f} | >= {r['goal_h100_tops']:g} | "
                f"{'✓ met' if r['meets_r2_goal'] else '✗ missed'} |") if "meets_r2_goal" in r else " — | — | — | — |"
        lines.append(row(r) + tail)
    lines += ["", "Per instruction class: warp instructions per 32 operations (one warp's worth), i.e. per thread and "
              "operation.", ""]
    goal = [r for r in dws if "meets_r2_goal" in r]
    for r in goal:
        if r.get("default"):
            verdict = "meets" if r["meets_r2_goal"] else "misses"
            lines.append(f"- {r['operation']} default {r['algorithm']}: {r['bound_tops']['H100 SXM']:.3g} Tops/s, "
                         f"{verdict} the goal of {r['goal_h100_tops']:g}: {_binding_reason(r)}.")
    for r in goal:
        if not r["meets_r2_goal"] and not r.get("default"):
            lines.append(f"- {r['algorithm']} misses the goal ({r['bound_tops']['H100 SXM']:.3g} Tops/s): "
                         f"{_binding_reason(r)}.")
    for name, note in DW_NOTES.items():
        if any(r["algorithm"] == name for r in dws):
            lines.append(f"- {name}: {note}.")
    lines += ["", "The QD library's double-double addition (ieee_add) and multiplication beside them, from the "
              "sequential baselines' benchmark (`bench::best_seq`, bench/kernels.cu): its harness adds k to x_0 and "
              "accumulates the result (3 FP additions per operation, charged), and y and x's low word are the same in "
              "every iteration, so the compiler may hoist what depends on them only: its counts are not the "
              "algorithm's op for op.", "",
              "| kernel | FP64 per op | total per op | binding | H100 SXM Tops/s |", "|---|---|---|---|---|"]
    for r in records:
        if r.get("op") in ("DdAddIeee", "DdMul") and r["dtype"] == "float64" and "bound" in r:
            lines.append(f"| `{r['kernel']}` | {r['instructions_per_op']['fp64'] * 32:.3g} | "
                         f"{r['total_per_op'] * 32:.3g} | {r['bound']['H100 SXM']['binding']} | "
                         f"{r['bound']['H100 SXM']['mops'] / 1e6:.3g} |")
    lines += ["", "### float32 (float-float)", "",
              "| operation | algorithm | FP64 / FP32 / select / int / branch per op | total | floor | total / floor | "
              "algorithm's ops | counted FP / algorithm | binding | H100 SXM Tops/s | H200 Tops/s |", "|---" * 11 + "|"]
    for r in (r for r in dws if r["dtype"] == "float32"):
        lines.append(f"| {r['operation']} | {r['algorithm']} | not modeled: {r['not_modeled']} |" if "not_modeled" in r
                     else row(r))
    lines += ["", "In float32 the FP32 pipe (4 warp instructions per clock) runs at the issue rate, so every "
              "instruction of the loop (counter, branch) costs as much as a floating-point one.", ""]
    return lines


def add_measured(records: list[dict], path: Path) -> int:
    """Put the measured Mop/s of ``paper_repro``'s results.json (its ``collange2016`` records, best
    case, float64, a GPU run) beside the bound of the benchmark cells: ``measured_mops`` and
    ``measured_over_bound`` (against the bound of the device the run names, H200 or else H100 SXM).
    Returns the number of cells matched."""
    summary = json.loads(path.read_text())
    measured = {(r["operation"], r["algorithm"], r["R"]): (r["mops"], r.get("device"))
                for r in summary.get("collange2016", []) if r.get("scenario") == "best" and r.get("mops")}
    if summary.get("backend") != "cuda":
        return 0  # CPU timings of the twins: nothing to compare with a GPU bound
    device = str(summary.get("device_label", ""))
    dev = "H200" if "H200" in device else "H100 SXM"
    n = 0
    for r in records:
        key = (r.get("operation"), r.get("algorithm"), r["R"])
        if r["source"] == "bench" and r["dtype"] == "float64" and key in measured and "bound" in r:
            r["measured_mops"] = measured[key][0]
            r["measured_over_bound"] = measured[key][0] / r["bound"][dev]["mops"]
            r["measured_device"] = dev
            n += 1
    return n


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default=None, help="model only the kernels whose name expression contains this")
    ap.add_argument("--rs", default=",".join(map(str, RS)), help="comma-separated R values")
    ap.add_argument("--dtypes", default=",".join(DTYPES))
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
    records = run(tuple(int(r) for r in args.rs.split(",")), tuple(args.dtypes.split(",")), args.only)
    info = meta(argv)
    info["seconds"] = round(time.perf_counter() - t0, 1)
    if args.measured is not None:
        info["measured"] = {"path": str(args.measured), "cells": add_measured(records, args.measured)}
    if args.ncu_worst:
        print(f"--ncu-worst {args.ncu_worst}: Nsight Compute runs are not implemented in bench.model yet")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.with_suffix(".json").write_text(json.dumps({"meta": info, "records": records}, indent=1) + "\n")
    args.output.with_suffix(".md").write_text(markdown(records, info))
    print(f"{len(records)} cells in {info['seconds']} s: wrote {args.output.with_suffix('.md')} and .json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
