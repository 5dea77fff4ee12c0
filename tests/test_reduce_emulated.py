"""The reduction kernels (expansions/cuda/reduce.cuh), compiled by g++ for the host against the warp
emulator (tests/emulation/emu.h, as in test_cuda_emulated.py), against their NumPy twin
(expansions.cpu.reduce), bit for bit: one pass for several R, both dtypes, chunk sizes, row lengths
around the chunk size, strided addressing and grids; and the passes of the launcher (driven here with
the emulated kernel) against the twin's canonical tree, whatever the chunk sizes.  Also: every
reduction instance the launcher uses compiles with NVRTC (skipped without CuPy's NVRTC), without
spills up to R = 16 and without flushing subnormals.
"""

from __future__ import annotations

import ctypes
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from helpers import bits, emulated_library, nvrtc_available

from expansions.cpu import reduce as twin
from expansions.cuda import build as B
from expansions.generate import random_terms
from expansions.testing import flush_below

HERE = Path(__file__).resolve().parent
RS = (2, 3, 4, 8, 13, 16, 32)
#: chunk sizes per R (the emulator is slow for large R: one group per warp, long collectives)
CHUNKS = {R: ((2, 8) if R <= 8 else (4,)) for R in RS}
KINDS = ("random", "cancel", "zeros", "nonfinite", "spread", "overflow")

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed to build the warp emulator")


def symbol(i):
    return f"emu_{i.op}_{i.dtype}_{i.R}_{i.C}"


def emu_instances():
    out = [B.instance(op, dt, R, C=C) for op in ("reduce_sum", "reduce_dot") for dt in B.CTYPES for R in RS
           for C in CHUNKS[R]]
    out += [B.instance(op, "float64", R, C=32) for op in ("reduce_sum", "reduce_dot") for R in (3, 8)]
    return out


def _wrapper(i):
    ct = B.CTYPES[i.dtype]
    ll = "long long"
    if i.op == "reduce_sum":
        args, call = "", "x, o, b, n, n2, a1, a2, a3"
    else:
        args, call = f", {ll} c1, {ll} c2, {ll} c3", "x, y, o, b, n, n2, a1, a2, a3, c1, c2, c3"
    return (f'extern "C" void {symbol(i)}(const {ct}* x, const {ct}* y, {ct}* o, {ll} b, {ll} n, {ll} n2, '
            f"{ll} a1, {ll} a2, {ll} a3{args}, unsigned g, unsigned bl) "
            f"{{ emu::launch(g, bl, [=]{{ {i.name_expression}({call}); }}); }}")


@pytest.fixture(scope="module")
def lib():
    """{instance: ctypes function}.  The instances are compiled in two shared libraries built in
    parallel, cached by their source (helpers.emulated_library: once across workers and runs)."""
    insts = emu_instances()
    parts = [insts[k::2] for k in range(2)]
    texts = ["\n".join(['#include "emu.h"', B.source(), *map(_wrapper, part)]) + "\n" for part in parts]
    with ThreadPoolExecutor(2) as pool:
        libs = list(pool.map(lambda k: emulated_library(texts[k], name=f"reduce_{k}"), range(2)))
    return {i: getattr(libs[k], symbol(i)) for k in range(2) for i in parts[k]}


def run_pass(lib, x, batch, n, n2, xs, R, C, y=None, ys=None, grid=2, block=64):
    """One emulated kernel pass, with the launcher's arguments; out prefilled with garbage."""
    dt = x.dtype.name
    inst = B.instance("reduce_sum" if y is None else "reduce_dot", dt, R, C=C)
    twin.check_addressing(x.shape[0], batch, n, n2, xs)
    chunks = -(-n // C)
    out = np.full((batch * chunks, R), 12345.0, dtype=x.dtype)
    L = ctypes.c_longlong
    p = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    extra = [] if y is None else [L(int(s)) for s in ys]
    lib[inst](p(x), p(y if y is not None else x), p(out), L(batch), L(n), L(n2), *[L(int(s)) for s in xs], *extra,
              ctypes.c_uint(grid), ctypes.c_uint(block))
    return out


def emulated_reduce(lib, x, batch, n, R, chunks, n2=1, xs=None, y=None, ys=None):
    """The passes of expansions.cuda.reduce_launch.reduce, each on the emulated kernel."""
    xs = (n, 0, 1) if xs is None else xs
    k = 0
    while True:
        C = chunks[min(k, len(chunks) - 1)]
        x = run_pass(lib, x, batch, n, n2, xs, R, C, y, ys, grid=1 + k % 3, block=32 * (1 + k % 2))
        n, k = -(-n // C), k + 1
        if n == 1:
            return x
        n2, xs, y, ys = 1, (n, 0, 1), None, None


def elements(kind, N, R, dt, rng, product):
    seed = int(rng.integers(1 << 30))
    kw = dict(min_exponent=-400) if (product and dt == "float64") else {}
    x = random_terms((N,), R, dt, seed=seed, exponent_range=(-20, 20), **kw)
    if kind == "cancel":
        x[1::2] = -x[0::2][: N // 2]
        x[rng.random(N) < 0.2] *= 3
    elif kind == "zeros":
        x[rng.random(N) < 0.5] = 0
        x[rng.random((N, R)) < 0.3] *= -0.0
    elif kind == "nonfinite":
        vals = np.array([np.inf, -np.inf, np.nan], dtype=dt)
        hit = rng.random((N, R)) < 0.04
        x[hit] = vals[rng.integers(0, 3, int(hit.sum()))]
    elif kind == "spread":
        big = (-300, 300) if dt == "float64" else (-60, 60)
        x = random_terms((N,), R, dt, seed=seed, exponent_range=big, p_zero=0.2, **kw)
    elif kind == "overflow":
        emax = 1023 if dt == "float64" else 127
        hi = (emax // 2 - 1, emax // 2 + 1) if product else (emax - 2, emax)
        x = random_terms((N,), R, dt, seed=seed, exponent_range=hi, same_sign=True)
    if product and dt == "float64":
        x = flush_below(x, -480)  # the twin's Dekker product equals 2ProdFMA above the underflow range
    return np.ascontiguousarray(x)


def _diff(got, want):
    bad = np.flatnonzero((bits(got) != bits(want)).any(axis=1))
    return "" if not bad.size else f"{bad.size} rows differ, first {bad[0]}: got {got[bad[0]]} want {want[bad[0]]}"


@needs_gxx
@pytest.mark.parametrize("mode", ("sum", "dot"))
@pytest.mark.parametrize("dt", ("float64", "float32"))
def test_emulated_pass_equals_twin(lib, dt, mode):
    """One pass, contiguous rows: n = 1, C-1, C, C+1, 2C+3, for every R and chunk size, every family."""
    rng = np.random.default_rng([len(dt), len(mode)])
    product = mode == "dot"
    failures = []
    with np.errstate(all="ignore"):
        for R in RS:
            for C in CHUNKS[R]:
                for n in sorted({1 if C == 2 else C, C - 1, C + 1, 2 * C + 3}) if R <= 8 else (C - 1, C + 1):
                    batch = max(2, 24 // (C * R) + 1)
                    # the non-finite families run every loop to its bound: slow in the emulator for large R,
                    # they have their own test (test_emulated_families)
                    kinds = KINDS if R <= 8 else KINDS[:3] + ("spread",)
                    kind = kinds[int(rng.integers(len(kinds)))] if R > 4 else kinds[(n + C) % len(kinds)]
                    x = elements(kind, batch * n, R, dt, rng, product)
                    y = elements(kind, batch * n, R, dt, rng, product) if product else None
                    ys = (n, 0, 1) if product else None
                    grid, block = [(1, 32), (2, 64), (3, 96)][int(rng.integers(3))]
                    got = run_pass(lib, x, batch, n, 1, (n, 0, 1), R, C, y, ys, grid, block)
                    want = twin.reduce_pass(x, batch, n, 1, (n, 0, 1), R, C, y, ys)
                    if msg := _diff(got, want):
                        failures.append(f"R={R} C={C} n={n} {kind}: {msg}")
    assert not failures, "\n".join(failures[:8])


@needs_gxx
@pytest.mark.parametrize("dt", ("float64", "float32"))
def test_emulated_families(lib, dt):
    """Every adversarial family through one pass of both modes, R = 3 and 8 (C = 8); the non-finite
    ones also at R = 32 (C = 4), where every bounded loop runs to its bound."""
    rng = np.random.default_rng(len(dt) + 5)
    failures = []
    with np.errstate(all="ignore"):
        for R, C in ((3, 8), (8, 8), (32, 4)):
            for kind in KINDS if R < 32 else ("nonfinite", "overflow"):
                for product in (False, True):
                    n, batch = (11, 2) if R < 8 else (9, 2) if R == 8 else (3, 1)
                    x = elements(kind, batch * n, R, dt, rng, product)
                    y = elements(kind, batch * n, R, dt, rng, product) if product else None
                    ys = (n, 0, 1) if product else None
                    got = run_pass(lib, x, batch, n, 1, (n, 0, 1), R, C, y, ys)
                    want = twin.reduce_pass(x, batch, n, 1, (n, 0, 1), R, C, y, ys)
                    if msg := _diff(got, want):
                        failures.append(f"R={R} {kind} product={product}: {msg}")
    assert not failures, "\n".join(failures[:8])


@needs_gxx
def test_emulated_passes_give_the_canonical_tree(lib):
    """Multi-pass reductions on the emulated kernel, several chunkings, n around powers of two, equal
    the twin's one-level-per-pass tree (and so the canonical tree, see test_reduce.py)."""
    rng = np.random.default_rng(21)
    failures = []
    with np.errstate(all="ignore"):
        for R, dt in ((3, "float64"), (4, "float32")):
            for n in (2, 7, 8, 9, 16, 17, 33, 64, 65):
                batch = 2
                x = elements("cancel", batch * n, R, dt, rng, False)
                want = twin.reduce(x, batch, n, R, chunk=2)
                for chunks in ((2,), (8,), (8, 2), (2, 8)):
                    if msg := _diff(emulated_reduce(lib, x, batch, n, R, chunks), want):
                        failures.append(f"R={R} {dt} n={n} chunks={chunks}: {msg}")
        x = elements("random", 2 * 100, 8, "float64", rng, False)
        if msg := _diff(emulated_reduce(lib, x, 2, 100, 8, (32, 2)), twin.reduce(x, 2, 100, 8)):
            failures.append(f"R=8 n=100 chunks=(32, 2): {msg}")
    assert not failures, "\n".join(failures[:8])


@needs_gxx
def test_emulated_strided_addressing(lib):
    """Sum along the middle axis of (A, K, P) (n2 = P, strides (K*P, 1, P)) and the fused matmul
    (m, K) @ (K, N) (rows (i, l), x at i*K + j, y at j*N + l), through the emulated passes."""
    rng = np.random.default_rng(22)
    with np.errstate(all="ignore"):
        for R, dt in ((3, "float64"), (8, "float32"), (2, "float32")):
            A, K, P = 3, 11, 5
            x = elements("random", A * K * P, R, dt, rng, False)
            got = emulated_reduce(lib, x, A * P, K, R, (8, 2), n2=P, xs=(K * P, 1, P))
            want = twin.reduce(x, A * P, K, R, n2=P, xs=(K * P, 1, P))
            assert not _diff(got, want)
            # the strided rows are the explicitly gathered ones
            gathered = np.ascontiguousarray(x.reshape(A, K, P, R).transpose(0, 2, 1, 3)).reshape(-1, R)
            assert not _diff(want, twin.reduce(gathered, A * P, K, R))
            m, K, N = 3, 9, 4
            a = elements("random", m * K, R, dt, rng, True)
            b = elements("cancel", K * N, R, dt, rng, True)
            got = emulated_reduce(lib, a, m * N, K, R, (8, 2), n2=N, xs=(K, 0, 1), y=b, ys=(0, 1, N))
            want = twin.reduce(a, m * N, K, R, n2=N, xs=(K, 0, 1), y=b, ys=(0, 1, N))
            assert not _diff(got, want)
            rows = np.ascontiguousarray(np.repeat(a.reshape(m, 1, K, R), N, axis=1)).reshape(-1, R)
            cols = np.tile(b.reshape(K, N, R).transpose(1, 0, 2)[None], (m, 1, 1, 1)).reshape(-1, R)
            assert not _diff(want, twin.reduce(rows, m * N, K, R, xs=(K, 0, 1), y=cols, ys=(K, 0, 1)))


@needs_gxx
def test_emulated_empty_and_single(lib):
    rng = np.random.default_rng(23)
    x = elements("random", 6, 4, "float64", rng, False)
    got = run_pass(lib, x, 6, 1, 1, (1, 0, 1), 4, 8)  # n = 1: the element itself
    assert np.array_equal(bits(got), bits(x))
    assert run_pass(lib, x, 0, 5, 1, (5, 0, 1), 4, 8).shape == (0, 4)  # no rows: nothing written


# ---------------------------------------------------------------------------------------------
# NVRTC: the reduction instances compile (no GPU needed)


def _nvrtc_or_skip():
    if not nvrtc_available():
        pytest.skip("CuPy NVRTC unavailable; install expansions[cuda12]")


def test_reduce_instances_compile_without_spills():
    _nvrtc_or_skip()
    from expansions.cuda import reduce_launch

    insts = [B.instance("reduce_sum", "float64", 4, C=reduce_launch.CHUNKS[0]),
             B.instance("reduce_dot", "float64", 16, C=reduce_launch.CHUNKS[-1]),
             B.instance("reduce_dot", "float32", 8, C=reduce_launch.CHUNKS[1])]
    compiled = B.compile_instances(insts, "sm_90")
    assert set(compiled.resources) == set(insts)
    spills = [i.name_expression for i, r in compiled.resources.items() if i.R <= 16 and r.spills]
    assert not spills, spills
    ptx = B.compile_instances([B.instance("reduce_dot", "float32", 4)], "compute_90").binary.decode()
    assert ".ftz" not in ptx and "fma.rn.f32" in ptx


def test_reduce_instances_in_the_table():
    assert B.OPERATIONS["reduce_sum"].params == "RC" and B.OPERATIONS["reduce_dot"].operands == 2
    assert B.instance("reduce_sum", "float64", 4, C=16).name_expression == "expansions::reduce_sum<double, 4, 16>"
    assert B.instance("reduce_dot", "float32", 13).name_expression == \
        f"expansions::reduce_dot<float, 13, {B.DEFAULT_CHUNK}>"
    assert B.instance("reduce_dot", "float32", 13).group_width == 16
    for bad in (1, 3, 2048):
        with pytest.raises(ValueError):
            B.instance("reduce_sum", "float64", 4, C=bad)
    with pytest.raises(ValueError):
        B.instance("add_safe", "float64", 4, C=8)
