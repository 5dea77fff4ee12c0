"""The votes of the kernels' data-dependent code, warp by warp, and the floor of each operation: the CPU
twins run on the benchmark's inputs while :class:`Votes` records what they report through the seam of
:mod:`expansions.cpu.lanes` (:func:`expansions.cpu.lanes.recording`): every ``warp_any`` of the kernel
the twin runs (the exits of the loops of ``add_fast``, ``propagate`` and ``renormalize``, the sort test
of a renormalization round, the operands' positional test, the non-finite rule's vote), with the warps
still in the code that votes.  No copy of a twin here: the twins themselves run, with their bits.

The floor (design decision 12: the algorithm's own floating-point operations, shuffles and votes) is
charged per event by the tables :data:`ENTRY_FLOOR`, :data:`ROUND_FLOOR` and :data:`VOTE_FLOOR`, counted
by hand from ``expansions/cuda/*.cuh``: what a group function does whatever the votes, what a round of a
loop costs the warps that vote and those that run it, what a branch costs the warps that vote and
those that take it.
"""

from __future__ import annotations

import contextlib

import numpy as np

from expansions.cpu import kernels as K
from expansions.cpu import newton as N
from expansions.cpu.lanes import Recorder, recording
from expansions.formats import group_width
from expansions.generate import random_terms

#: Benchmark inputs (bench/gpu.py, best case): the paper's launch shape, 1024 blocks of 256 threads,
#: seeds 3 and 4, K = 16 operations per load; library kernels (streaming): seeds 1 and 2 as
#: bench/gpu.py's stream scenario, 2^15 expansions instead of its 2^24 (the trip counts are a mean).
BEST_BLOCKS, BEST_THREADS, BEST_K = 1024, 256, 16
STREAM_COUNT = 1 << 15


# ---------------------------------------------------------------------------------------------
# The floor of each event (warp operations of one warp: a warp executes a step once for its groups).


def _entry_add_safe(n, m, R):
    """Algorithm 1: the 2Sum of x_0 + y_0, then per inserted term (x_i, y_i, i >= 1) the term brought to
    lane 0, the errors shifted up and a 2Sum, R - 2 steps of a shift and a 2Sum, a shift and a plain
    addition."""
    inserted = (n - 1) + (m - 1)
    return {"fp": 6 + 6 * inserted + 6 * (R - 2) + 1, "shfl": 2 * inserted + (R - 2) + 1}


def _entry_mul_truncated(n, m, R):
    """Algorithm 2 but its propagate loops: per step i < R - 1, y_i broadcast (while i < m), 2ProdFMA (2),
    2Sum (6), s_0 to lane i and s shifted down (2 shuffles); the last step's product, addition, y_{R-1}
    broadcast and s_0."""
    shfl = sum((1 if i < m else 0) + 2 for i in range(R - 1)) + (1 if R - 1 < m else 0) + 1
    return {"fp": 8 * (R - 1) + 2, "shfl": shfl}


#: What a group function does whatever the votes, from its sizes (n, m terms in, R out).
ENTRY_FLOOR = {
    "add_safe": _entry_add_safe,
    "add_fast": lambda n, m, R: {"fp": 6 + 1, "shfl": 1},  # the lane-wise 2Sum; the last shift and addition
    "mul_truncated": _entry_mul_truncated,
}


def _round_propagate(k, rounds, info):
    # the vote; a round: 2Sum, the errors shifted up.  The errors of round R are never used (the callers
    # keep s), so the algorithm's own work there is the sum alone (the compiler drops the rest where it
    # unrolls the last round)
    return {"vote": 1}, ({"fp": 6, "shfl": 1} if k < rounds - 1 else {"fp": 1})


#: A round k of a loop (of ``rounds`` at most): (floor of the warps that vote, of the warps that run it).
ROUND_FLOOR = {
    "add_fast": lambda k, rounds, info: ({"shfl": 1, "vote": 1}, {"fp": 6}),  # errors up, the vote; 2Sum
    "propagate": _round_propagate,
    "renormalize": lambda k, rounds, info: ({}, {}),  # the loop's own vote: bookkeeping
}


def _vote_sort(info):
    """A renormalization round on w terms: the sort's test costs nothing of the algorithm's; the w terms
    gathered, VecSum and VecSumErrBranch (w - 1 2Sums each), the nonoverlap test (the term above, a compare,
    one vote); where a group needs it, the sort's exchanges, one shuffle per stage of the bitonic network
    over the group's lanes."""
    w = info["terms"]
    stages = int(np.log2(group_width(max(info["n"], info["R"]))))
    return {"fp": 12 * (w - 1) + 1, "shfl": w + 1, "vote": 1}, {"shfl": stages * (stages + 1) // 2}


#: A branch's vote: (floor of the warps that vote, of the warps that take it).
VOTE_FLOOR = {
    "positional": lambda info: ({"fp": 1, "shfl": 1, "vote": 2}, {}),  # the term above, a product, two votes
    "renormalize.sort": _vote_sort,
    "nonfinite": lambda info: ({}, {}),  # the non-finite rule's vote: not the algorithm's
}


class Votes(Recorder):
    """The ``warp_any`` outcomes of every warp of ``warps`` warps of ``groups_per_warp`` groups (rows), one
    column per vote: 1 (some group has the predicate: the loop goes on, the branch is taken), 0,
    :data:`END_CODE` (the loop ran its bound of rounds), -1 (this warp is not in the code that votes);
    and the floor of every warp, ``floor`` (``"fp"``, ``"shfl"``, ``"vote"``).  A region is the warps in
    a loop or a branch; a vote with no warp in its region is not recorded (the kernel does not run it:
    only the twin, which runs the rows of warps that have left, as their bits stay)."""

    END_CODE = 2

    def __init__(self, groups_per_warp: int, warps: int):
        self.G = groups_per_warp
        self.cols: list = []
        self.floor: dict = {}
        self._regions = [{"live": np.ones(warps, dtype=bool)}]

    def cost(self, where, **ops):
        """Charge warp operations (``fp``, ``shfl``, ``vote``) to the warps of the mask ``where``."""
        for k, v in ops.items():
            if v:
                self.floor[k] = self.floor.get(k, 0) + np.where(where, v, 0)

    def _vote(self, act, live):
        wa = np.asarray(act).reshape(-1, self.G).any(axis=1)
        self.cols.append(np.where(live, wa.astype(np.int8), np.int8(-1)))
        return live & wa

    def rounds(self, n, site, info):
        region = {"live": self._regions[-1]["live"].copy(), "k": 0, "rounds": n}
        self._regions.append(region)
        try:
            for k in range(n):
                region["k"] = k
                yield k
                assert self._regions[-1] is region, "a region left open inside a round"
            if n and region["live"].any():
                self.cols.append(np.where(region["live"], np.int8(self.END_CODE), np.int8(-1)))
        finally:  # also when the twin breaks out of the loop (the generator is closed)
            assert self._regions.pop() is region, "regions closed out of order"

    def round_any(self, act, site, info):
        region = self._regions[-1]
        live = region["live"]
        if not live.any():
            return
        on_vote, on_go = ROUND_FLOOR[site](region["k"], region["rounds"], info)
        self.cost(live, **on_vote)
        region["live"] = self._vote(act, live)
        self.cost(region["live"], **on_go)

    def warp_any(self, act, site, info):
        live = self._regions[-1]["live"]
        if not live.any():
            return
        on_vote, on_taken = VOTE_FLOOR[site](info)
        self.cost(live, **on_vote)
        self.cost(self._vote(act, live), **on_taken)

    @contextlib.contextmanager
    def branch(self, taken):
        region = {"live": self._regions[-1]["live"] & np.asarray(taken).reshape(-1, self.G).any(axis=1)}
        self._regions.append(region)
        try:
            yield
        finally:
            assert self._regions.pop() is region, "regions closed out of order"

    def entry(self, site, info):
        if site in ENTRY_FLOOR:
            self.cost(self._regions[-1]["live"], **ENTRY_FLOOR[site](info["n"], info["m"], info["R"]))

    def matrix(self) -> np.ndarray:
        warps = len(self._regions[0]["live"])
        return np.stack(self.cols, axis=1) if self.cols else np.zeros((warps, 0), dtype=np.int8)


# ---------------------------------------------------------------------------------------------
# The operations with votes or a floor, on the benchmark's inputs.


#: The twin of each operation (x, y, R) whose votes and floor are counted: the kernels the library
#: launches (``op`` of build.OPERATIONS) and the benchmark's functors (bench/gpu.py); the renormalization's
#: input is the product of x and y (made before the recording, :func:`record`).
TWINS = {"add_safe": K.add_safe, "sub_safe": K.sub_safe, "SafeAdd": K.add_safe,
         "add_fast": K.add_fast, "sub_fast": K.sub_fast, "FastAdd": K.add_fast,
         "mul_truncated": K.mul_truncated, "TruncMul": K.mul_truncated,
         "renormalize": lambda x, y, R: K.renormalize(x, R),
         "newton_reciprocal": lambda x, y, R: N.reciprocal(x, R), "newton_div": N.div,
         "newton_sqrt": lambda x, y, R: N.sqrt(np.abs(x), R)}


def _padded(a, G):
    """Rows of ``a`` padded with zero expansions to whole warps (groups past the end compute on zeros)."""
    extra = (-len(a)) % G
    return np.concatenate([a, np.zeros((extra, a.shape[1]), a.dtype)]) if extra else a


def record(op: str, x, y, R: int, renormalize: bool = False) -> tuple[np.ndarray, Votes]:
    """The twin of ``op`` on (x, y), then with ``renormalize`` the renormalization (a renormalizing library
    instance), recorded (the rows a whole number of warps): (its result, the :class:`Votes`)."""
    G = 32 // group_width(R)
    votes = Votes(G, len(x) // G)
    with np.errstate(all="ignore"):
        if op == "renormalize":
            x = K.mul_truncated(x, y, R)
        with recording(votes):
            out = TWINS[op](x, y, R)
            if renormalize:
                out = K.renormalize(out, R)
    return out, votes


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
        _, votes = record(op, a, b, R, renormalize)
        rows.append(votes.matrix())
        if floor is not None:
            warps = len(a) // G
            for k in ("fp", "shfl", "vote"):
                floor[k] = floor.get(k, 0.0) + float(np.sum(np.broadcast_to(votes.floor.get(k, 0), (warps,))))
            floor["warp_iterations"] = floor.get("warp_iterations", 0) + warps
    width = max(r.shape[1] for r in rows)
    return np.concatenate([np.pad(r, ((0, 0), (0, width - r.shape[1])), constant_values=-1) for r in rows])


def summary(seqs: np.ndarray, sample: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """The distinct rows of ``seqs``, the ones walked (all of them, or those of ``sample`` warp-iterations
    drawn with a fixed seed) with their weights, and the record's ``votes`` field."""
    uniq, inverse = np.unique(seqs, axis=0, return_inverse=True)
    inverse = np.asarray(inverse).reshape(-1)
    if len(uniq) <= sample:
        picks, weights = np.arange(len(uniq)), np.bincount(inverse, minlength=len(uniq))
    else:
        chosen = np.random.default_rng(0).choice(len(seqs), sample, replace=False)
        picks, weights = np.unique(inverse[chosen], return_counts=True)
    checks = (seqs >= 0).sum(axis=1)
    return uniq, picks, weights, {"warp_iterations": int(len(seqs)), "distinct": int(len(uniq)),
                                  "walked": int(len(picks)), "sampled": bool(len(uniq) > sample),
                                  "mean_checks": float(checks.mean()), "max_checks": int(checks.max())}
