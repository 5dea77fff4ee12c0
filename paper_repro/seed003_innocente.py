"""Innocente, "Using float-pair for precise and fast arithmetic on GPU", CERN 2025 (seed 003): the
5x5 symmetric positive-definite Cholesky inversion benchmark, CPU table (precision and cost).

The benchmark inverts a random 5x5 SPD matrix twice, by Cholesky without pivoting, rescaling or
square root, and reports the precision ``max |A - inv(inv(A))|`` over the elements, in float,
float-pair ("2float", sloppy and precise sum), double and double-pair.  Here:

* the inversion is the square-root-free Cholesky ``A = L D L^T`` (5 divisions: the reciprocals of
  ``D``), ``L^-1`` by forward substitution, ``inv(A) = L^-T D^-1 L^-1``, written once for every number
  system (only + - * and one division per pivot);
* the number systems: float32 and float64 (NumPy), and pairs of them through the twins of
  :mod:`expansions.dw.cpu`: "sloppy" adds with SloppyDWPlusDW (JMP Algorithm 5), "precise" with
  AccurateDWPlusDW (Algorithm 6); both multiply with DWTimesDW3 (Algorithm 12) and divide with
  DWDivDW2 (Algorithm 17); a difference is the sum with the negation;
* matrices: drawn in float64 as the CMSSW test behind the benchmark draws them (:func:`random_spd`);
  double-pair takes them exactly, float-pair as FP64ToEP pairs (``hi = float32(a)``,
  ``lo = float32(a - hi)``), float as float32; the precision is measured against the matrix as the
  system holds it;
* "precision" is reported as the mean over matrices of ``max |A - inv(inv(A))|`` and the largest
  over all matrices (the paper prints two figures per column without naming them);
* cost: matrices per second of the double inversion on this CPU, vectorized over all matrices with
  NumPy (the paper counts cycles and instructions per matrix on an AMD Bergamo; those figures are in
  the table beside ours, labelled).
"""

from __future__ import annotations

import csv
import time
from pathlib import Path

import numpy as np

from expansions.dw import cpu

ANCHORS = Path(__file__).resolve().parent / "anchors" / "innocente2025_tables.csv"
N = 5
SYSTEMS = ("float", "2float sloppy", "2float precise", "double", "2double sloppy", "2double precise")


def paper_cpu_table() -> dict:
    """{column: {precision, cycles, instructions, arith_instructions}} as printed (CPU, AMD Bergamo)."""
    with open(ANCHORS) as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    return {r["column"]: {k: v for k, v in r.items() if k != "column"} for r in rows}


class Plain:
    """A hardware float type: values are arrays."""

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)

    def from_f64(self, a):
        return a.astype(self.dtype)

    def to_f64_diff(self, x, y):
        return x.astype(np.float64) - y.astype(np.float64)

    def add(self, x, y):
        return x + y

    def sub(self, x, y):
        return x - y

    def mul(self, x, y):
        return x * y

    def recip(self, x):
        return self.dtype.type(1) / x


class Pair:
    """Double-word numbers (hi, lo) of ``dtype``, through the twins of :mod:`expansions.dw.cpu`."""

    def __init__(self, dtype, precise):
        self.dtype = np.dtype(dtype)
        self._add = cpu.dw_add_accurate if precise else cpu.dw_add_sloppy
        self._mul = cpu.dw_times_dw3
        self._div = cpu.dw_div_dw2

    def from_f64(self, a):
        hi = a.astype(self.dtype)
        return hi, (a - hi.astype(np.float64)).astype(self.dtype)

    def to_f64_diff(self, x, y):
        f = np.float64
        return (x[0].astype(f) - y[0].astype(f)) + (x[1].astype(f) - y[1].astype(f))

    def add(self, x, y):
        return self._add(x[0], x[1], y[0], y[1])

    def sub(self, x, y):
        return self._add(x[0], x[1], -y[0], -y[1])

    def mul(self, x, y):
        return self._mul(x[0], x[1], y[0], y[1])

    def recip(self, x):
        one = np.ones_like(x[0])
        return self._div(one, np.zeros_like(one), x[0], x[1])


def system(name):
    dtype = np.float32 if "float" in name else np.float64
    if name in ("float", "double"):
        return Plain(dtype)
    return Pair(dtype, precise=name.endswith("precise"))


def invert(S, A):
    """Inverse of the symmetric positive-definite matrices ``A`` (a 5x5 nested list of values of the
    number system ``S``, each holding one element of every matrix): ``A = L D L^T`` without square
    roots, then ``inv(A) = L^-T D^-1 L^-1``."""
    L = [[None] * N for _ in range(N)]
    W = [[None] * N for _ in range(N)]  # W[i][j] = L[i][j] * d[j]
    r = [None] * N  # 1 / d[j]
    for j in range(N):
        d = A[j][j]
        for k in range(j):
            d = S.sub(d, S.mul(L[j][k], W[j][k]))
        r[j] = S.recip(d)
        for i in range(j + 1, N):
            t = A[i][j]
            for k in range(j):
                t = S.sub(t, S.mul(L[i][k], W[j][k]))
            W[i][j] = t
            L[i][j] = S.mul(t, r[j])
    # M = L^-1, unit lower triangular: M[i][j] = -sum_{k=j}^{i-1} L[i][k] M[k][j]
    M = [[None] * N for _ in range(N)]
    for j in range(N):
        for i in range(j + 1, N):
            t = L[i][j]
            for k in range(j + 1, i):
                t = S.add(t, S.mul(L[i][k], M[k][j]))
            M[i][j] = _neg(t)
    # inv(A)[i][j] = sum_{k >= max(i, j)} M[k][i] r[k] M[k][j]  (M[k][k] = 1)
    out = [[None] * N for _ in range(N)]
    for i in range(N):
        for j in range(i + 1):
            t = S.mul(M[i][j], r[i]) if i != j else r[i]
            for k in range(i + 1, N):
                t = S.add(t, S.mul(S.mul(M[k][i], r[k]), M[k][j]))
            out[i][j] = out[j][i] = t
    return out


def _neg(t):
    return (-t[0], -t[1]) if isinstance(t, tuple) else -t


def random_spd(n, rng):
    """``n`` random SPD matrices, shape (n, 5, 5), float64, drawn as the CMSSW test of the benchmark
    draws them (``genMatrix`` of the Cholesky-inversion tests): diagonal ``A_ii = U(0, 1) *
    (2500 i + 1)`` ("max condition is 10^4"), off-diagonal ``A_ij = A_ji = U(0, 1) * 0.3 *
    sqrt(A_ii A_jj)``; the rare draws that are not positive definite are drawn again."""
    out = np.empty((0, N, N))
    while out.shape[0] < n:
        m = n - out.shape[0] + 16
        d = rng.uniform(0.0, 1.0, size=(m, N)) * (np.arange(N) * 10000 // (N - 1) + 1)
        A = 0.3 * np.sqrt(d[:, :, None] * d[:, None, :]) * rng.uniform(0.0, 1.0, size=(m, N, N))
        A = np.tril(A, -1)
        A = A + A.transpose(0, 2, 1)
        A[:, np.arange(N), np.arange(N)] = d
        A = A[np.linalg.eigvalsh(A)[:, 0] > 0]
        out = np.concatenate([out, A])
    return out[:n]


def measure(name, A64, repeats=1):
    S = system(name)
    A = [[S.from_f64(A64[:, i, j]) for j in range(N)] for i in range(N)]
    with np.errstate(all="ignore"):
        t0 = time.perf_counter()
        for _ in range(repeats):
            back = invert(S, invert(S, A))
        dt = (time.perf_counter() - t0) / repeats
    diff = np.max(np.stack([np.abs(S.to_f64_diff(A[i][j], back[i][j])) for i in range(N) for j in range(N)]), axis=0)
    return {
        "system": name,
        "matrices": int(A64.shape[0]),
        "precision_mean": float(diff.mean()),
        "precision_max": float(diff.max()),
        "matrices_per_second_cpu": A64.shape[0] / dt,
        "seconds_per_double_inversion_batch": dt,
    }


def run(quick: bool = True, n: int | None = None, seed: int = 2025) -> dict:
    n = n or (20_000 if quick else 1_000_000)
    A64 = random_spd(n, np.random.default_rng(seed))
    rows = [measure(s, A64) for s in SYSTEMS]
    return {"paper": "Innocente 2025, CPU table", "device": "cpu", "matrices": n, "rows": rows,
            "paper_cpu": paper_cpu_table()}


def markdown(result: dict) -> str:
    paper = result["paper_cpu"]
    lines = [
        "### Innocente 2025: 5x5 SPD Cholesky inversion, done twice",
        "",
        f"{result['matrices']} random matrices; precision = max |A - inv(inv(A))| over the elements (mean over "
        "matrices / largest); our throughput is matrices per second on this CPU (NumPy twins, vectorized over "
        "the matrices); the paper's precision (two figures as printed) and cycles per matrix are from its AMD "
        "Bergamo CPU table.",
        "",
        "| system | ours: precision mean / max | ours: matrices/s (CPU) | paper: precision | paper: cycles/matrix |",
        "|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        p = paper.get(r["system"], {})
        lines.append(f"| {r['system']} | {r['precision_mean']:.2g} / {r['precision_max']:.2g} | "
                     f"{r['matrices_per_second_cpu']:.3g} | {p.get('precision', '-')} | {p.get('cycles', '-')} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(run(quick=False)))
