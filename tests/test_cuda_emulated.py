"""The CUDA kernels, compiled by g++ for the host against a warp emulator, against their twins.

CI has no GPU.  tests/emulation/emu.h runs the 32 lanes of a warp as coroutines and turns every
shuffle and vote into a rendezvous of the whole warp (with CUDA's ``width`` rules, failing if a lane
misses a full-mask collective); the intrinsics ``__dadd_rn`` etc. are the host's IEEE operations and
``__fma_rn`` is ``std::fma``.  g++ compiles the kernels' own source (``expansions.cuda.build.source``)
with ``-ffp-contract=off``, so every operation is the one the GPU performs.  This checks the kernel
code (lane logic, loops, votes, epilogue) bit for bit against the NumPy twins; what it cannot check
is the GPU itself (tests/test_gpu.py does that where a GPU is present).  The sequential baselines
(one thread per expansion, no collectives) run here too, both layouts, against expansions.baselines.cpu.
"""

from __future__ import annotations

import ctypes
import dataclasses
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import emulated_library

from expansions import backends, dispatch
from expansions.baselines import cpu as baseline_twin
from expansions.cpu import kernels as twin
from expansions.cpu import newton as newton_twin
from expansions.cuda import build as B
from expansions.testing import family

HERE = Path(__file__).resolve().parent
RS = (2, 3, 4, 5, 8, 13, 16, 31, 32)
MIXED = ((2, 4, 4), (4, 2, 8), (8, 8, 4), (1, 3, 2), (16, 8, 32), (3, 1, 2), (5, 7, 3), (32, 1, 4))
#: The input families (:mod:`expansions.testing`); the baselines also get "ties", the check that the
#: renormalizing kernels do not return the raw output also "near_underflow".
KINDS = ("random", "ulp_zero_same_sign", "exact_cancellation", "sterbenz", "arbitrary", "nonfinite",
         "overflow_threshold", "signed_zeros", "shuffled", "subnormal_terms")

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed to build the warp emulator")


#: The Newton kernels (several products and renormalizations per step: g++ and the emulator are slow
#: on them, so fewer sizes), with divisors and radicands of one term (division/square root of a float).
NEWTON_RS = (2, 3, 5, 8)
NEWTON_MIXED = {"NMR": ((3, 1, 2), (5, 7, 3), (4, 1, 5), (8, 8, 4)), "NR": ((1, 0, 4), (3, 0, 2), (8, 0, 5))}


#: Sizes of the renormalizing instances (the operation and the renormalization in one kernel): R,
#: and mixed (N, M, R) whose lanes R..W-1 hold the raw operation's leftovers (W > R).
RENORM_RS = (2, 3, 5, 8, 32)
RENORM_MIXED = ((2, 4, 4), (8, 8, 4), (1, 3, 2), (32, 1, 4), (5, 7, 3))
NEWTON_RENORM = {"NMR": ((2, 2, 2), (3, 3, 3), (5, 5, 5), (3, 1, 2), (8, 8, 4)),
                 "NR": ((2, 0, 2), (3, 0, 3), (5, 0, 5), (1, 0, 4), (8, 0, 5))}


def renormalizing_instances():
    """The renormalizing instances of the operations that have one (build.Operation.renormalizes)."""
    out = []
    for op, info in B.OPERATIONS.items():
        if not info.renormalizes:
            continue
        sizes = NEWTON_RENORM[info.params] if info.newton else [(R, R, R) for R in RENORM_RS] + list(RENORM_MIXED)
        for dt in B.CTYPES:
            out += [B.instance(op, dt, R, N, M or None, renormalize=True) for N, M, R in sizes]
    return sorted(set(out))


def instances():
    out = renormalizing_instances()
    for op, info in B.OPERATIONS.items():
        if info.params == "RC" or info.table:  # tests/test_reduce_emulated.py, tests/test_elementary_emulated.py
            continue
        if info.newton:
            for dt in B.CTYPES:
                out += [B.instance(op, dt, R) for R in NEWTON_RS]
                out += [B.instance(op, dt, R, N, M if M else None) for N, M, R in NEWTON_MIXED[info.params]]
            continue
        for dt in B.CTYPES:
            out += [B.instance(op, dt, R) for R in ((info.terms,) if info.terms else RS)]
            if info.params == "NMR":
                out += [B.instance(op, dt, R, N, M) for N, M, R in MIXED]
            elif info.params == "NR":
                out += [B.instance(op, dt, R, N) for N, _, R in MIXED] + [B.instance(op, dt, 3, 1)]
    return sorted(set(out))


def symbol(i):
    return f"emu_{i.op}_{i.dtype}_{i.N}_{i.M}_{i.R}" + ("_renormalize" if i.renormalize else "")


#: The instances are compiled in two libraries: sizes up to SMALL terms (the default selection:
#: every operation, mixed sizes, both dtypes), and the larger ones (marked slow: g++ and the emulator
#: take minutes on the wide groups).
SMALL = 4


def small(inst) -> bool:
    return max(inst.N, inst.M, inst.R) <= SMALL


def of_size(insts, size):
    return [i for i in insts if small(i) == (size == "small")]


@pytest.fixture(scope="module")
def libs():
    return {}


def library(libs, size):
    """The emulated library of the instances of one size (cached by source: helpers.emulated_library)."""
    if size not in libs:
        lines = ['#include "emu.h"', B.source()]
        for i in of_size(instances(), size):
            ct = B.CTYPES[i.dtype]
            call = f"{i.name_expression}(x, y, o, n)" if B.OPERATIONS[i.op].operands == 2 else \
                f"{i.name_expression}(x, o, n)"
            lines.append(f'extern "C" void {symbol(i)}(const {ct}* x, const {ct}* y, {ct}* o, long long n, '
                         f"unsigned g, unsigned bl) {{ emu::launch(g, bl, [=]{{ {call}; }}); }}")
        libs[size] = emulated_library("\n".join(lines) + "\n", name=f"emu_kernels_{size}")
    return libs[size]


def run(lib, inst, x, y, grid, block):
    """The kernel on (count, terms) rows; SoA kernels get (and give back) the transposed arrays."""
    count = x.shape[0]
    soa = B.OPERATIONS[inst.op].layout == "soa"
    if soa:
        x = np.ascontiguousarray(x.T)
        y = np.ascontiguousarray(y.T)
    out = np.full((inst.R, count) if soa else (count, inst.R), 12345.0, dtype=x.dtype)
    p = lambda a: a.ctypes.data_as(ctypes.c_void_p) if a is not None else None  # noqa: E731
    getattr(lib, symbol(inst))(p(x), p(y), p(out), ctypes.c_longlong(count), ctypes.c_uint(grid), ctypes.c_uint(block))
    return np.ascontiguousarray(out.T) if soa else out


def twin_of(inst, x, y):
    """The twin's output; for a renormalizing instance, the twin's output renormalized as the library
    did with two kernels (dispatch.renormalizer on the twins' backend: the specification)."""
    if inst.renormalize:
        raw = twin_of(B.Instance(inst.op, inst.dtype, inst.N, inst.M, inst.R), x, y)
        alg = "newton" if B.OPERATIONS[inst.op].newton else inst.op.split("_")[1]
        return dispatch.renormalizer(alg, backends.cpu)(raw, inst.R)
    info = B.OPERATIONS[inst.op]
    if info.mapping == "thread":  # baselines: the AoS twin (the SoA kernel's result is transposed back)
        f = getattr(baseline_twin, inst.op.removesuffix("_soa"))
        return f(x, y) if info.terms else f(x, y, inst.R)
    if info.newton:
        f = getattr(newton_twin, inst.op.removeprefix("newton_"))
        return f(x, inst.R) if info.operands == 1 else f(x, y, inst.R)
    f = getattr(twin, inst.op)
    if inst.op == "negate":
        return f(x)
    if inst.op == "renormalize":
        return f(x, inst.R)
    return f(x, y, inst.R)


def inputs(inst, count, rng, kind):
    """x, y of the family ``kind`` (:func:`expansions.testing.family`) for the instance's sizes."""
    info = B.OPERATIONS[inst.op]
    n, m = inst.N, (inst.M if info.params == "NMR" else inst.R if info.operands == 2 else 1)
    x, y = family(kind, inst.op, inst.dtype, n, m, inst.R, count, int(rng.integers(1 << 30)))
    if inst.op == "newton_sqrt" and kind not in ("nonfinite", "signed_zeros"):  # mostly nonnegative radicands
        x = np.where(rng.random((count, 1)) < 0.9, np.copysign(np.ones_like(x[:, :1]), x[:, :1]), 1) * x
    return np.ascontiguousarray(x), (np.ascontiguousarray(y) if info.operands == 2 else None)


def _bits(a):
    return a.view(np.uint64 if a.dtype == np.float64 else np.uint32)


def _failures(lib, insts, rng, twin=twin_of, kinds=KINDS) -> list:
    """Every instance on every kind of input (and on counts that are not multiples of a warp, odd
    grids) against ``twin``: the rows whose bits differ."""
    failures = []
    with np.errstate(all="ignore"):
        for inst in insts:
            per = max(4, 256 // inst.group_width)
            for kind in kinds + (("ties",) if B.OPERATIONS[inst.op].mapping == "thread" else ()):
                x, y = inputs(inst, per, rng, kind)
                grid, block = [(1, 32), (2, 64), (3, 96)][int(rng.integers(3))]
                got, want = run(lib, inst, x, y, grid, block), twin(inst, x, y)
                bad = (_bits(got) != _bits(want)).any(axis=1)
                if bad.any():
                    r = int(np.flatnonzero(bad)[0])
                    failures.append(f"{inst.name_expression} {kind} row {r}: x={x[r]} got={got[r]} want={want[r]}")
            for count in (0, 1, 31, 33):
                if inst.R in (2, 3, 8, 32):
                    x, y = inputs(inst, count, rng, "random")
                    got, want = run(lib, inst, x, y, 1 + count % 3, 32 * (1 + count % 2)), twin(inst, x, y)
                    if not np.array_equal(_bits(got), _bits(want)):
                        failures.append(f"{inst.name_expression} count {count}")
    return failures


def _cases(renormalizing: bool):
    """(op, size) with instances of that size; the large ones marked slow."""
    insts = renormalizing_instances() if renormalizing else [i for i in instances() if not i.renormalize]
    ops = sorted({i.op for i in insts}, key=list(B.OPERATIONS).index)
    return [pytest.param(op, size, marks=[pytest.mark.slow] if size == "large" else [], id=f"{op}-{size}")
            for op in ops for size in ("small", "large") if of_size([i for i in insts if i.op == op], size)]


@pytest.mark.parametrize("op, size", _cases(False))
def test_emulated_kernels_equal_twins(libs, op, size):
    rng = np.random.default_rng([list(B.OPERATIONS).index(op), 0 if size == "small" else 1])
    insts = of_size([i for i in instances() if i.op == op and not i.renormalize], size)
    failures = _failures(library(libs, size), insts, rng)
    assert not failures, "\n".join(failures[:10])


@pytest.mark.parametrize("op, size", _cases(True))
def test_renormalizing_kernels_equal_twin_then_renormalize(libs, op, size):
    """One launch per operation: the renormalizing instance (the operation, then the renormalization
    in registers) gives the bits of the twin followed by the twins' renormalization, as the library
    computed with two kernels (random, adversarial and non-finite inputs; mixed sizes whose padding
    lanes hold the raw operation's leftovers)."""
    rng = np.random.default_rng([100 + list(B.OPERATIONS).index(op), 0 if size == "small" else 1])
    insts = of_size([i for i in renormalizing_instances() if i.op == op], size)
    assert {i.dtype for i in insts} == set(B.CTYPES) and len({i.R for i in insts}) >= (2 if size == "small" else 1)
    lib = library(libs, size)
    failures = _failures(lib, insts, rng)
    assert not failures, "\n".join(failures[:10])
    # the check can fail: the raw output is not what these kernels return (the Newton operations
    # renormalize their operands first, so their raw output differs only where the scaling back
    # rounds below the underflow threshold, which the square root's result never reaches)
    if op == "newton_sqrt":
        return
    raw = _failures(lib, insts[:4], rng, lambda inst, x, y: twin_of(B.Instance(*dataclasses.astuple(inst)[:-1]), x, y),
                    KINDS + ("near_underflow",))
    assert raw, f"{op}: the renormalizing kernels returned the raw output"
