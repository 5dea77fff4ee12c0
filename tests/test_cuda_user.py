"""The C++ API for users' kernels (expansions/cuda/user.cuh, ``expansions::Expansion<T, R>``).

* g++ compiles the header with a test kernel against the warp emulator (tests/emulation/emu.h), and
  every operator's result equals its NumPy twin (expansions.baselines.cpu / thread) bit for bit on
  random, cancelling, arbitrary, non-finite, overflowing and zero operands;
* the twins of division, reciprocal and square root are within 2^(4 - (p-1)R) of the exact value
  (Fractions) on random operands, and the comparisons agree with the exact order;
* NVRTC compiles the header and the example kernel (examples/user_kernel.py) for sm_90 with the
  library's options, and refuses float terms under -ftz=true (what CuPy's RawKernel adds) with the
  header's message.
"""

from __future__ import annotations

import ctypes
import importlib
import shutil
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from helpers import emulated_library, nvrtc_available

from expansions import cuda
from expansions.baselines import cpu as certified
from expansions.baselines import thread
from expansions.cuda import user as U
from expansions.generate import random_terms

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CTYPE = {"float64": "double", "float32": "float"}
RS = {"float64": (2, 3, 4, 8), "float32": (2, 3, 4)}
OPS = ("add", "sub", "mul", "div", "sqrt", "reciprocal", "compare")
KINDS = ("random", "cancel", "arbitrary", "nonfinite", "overflow", "zeros", "underflow")

KERNEL = r"""
template <class T, int R, int OP>
__global__ void user_op(const T* x, const T* y, T* o, long long n) {
    using E = expansions::Expansion<T, R>;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const E a = E::load(x, i), b = E::load(y, i);
        E r;
        if (OP == 0) r = a + b;
        if (OP == 1) r = a - b;
        if (OP == 2) r = a * b;
        if (OP == 3) r = a / b;
        if (OP == 4) r = sqrt(a);
        if (OP == 5) r = reciprocal(a);
        if (OP == 6) r = E(T((a < b) + 2 * (a <= b) + 4 * (a == b) + 8 * (a != b) + 16 * (a > b) + 32 * (a >= b)));
        r.store(o, i);
    }
}
"""


def _codes(c):
    """The comparison kernel's output for the twin's order c (-1, 0, 1, 2 = unordered)."""
    lt, eq, gt = c == -1, c == 0, c == 1
    return lt * 1 + (lt | eq) * 2 + eq * 4 + (c != 0) * 8 + gt * 16 + (gt | eq) * 32


def twin(op, x, y, R):
    if op == "add":
        return certified.certified_add(x, y, R)
    if op == "sub":
        return certified.certified_add(x, -y, R)
    if op == "mul":
        return certified.certified_mul(x, y, R)
    if op == "div":
        return thread.div(x, y, R)
    if op == "sqrt":
        return thread.sqrt(x, R)
    if op == "reciprocal":
        return thread.reciprocal(x, R)
    out = np.zeros_like(x)
    out[:, 0] = _codes(thread.compare(x, y, R).astype(np.int64))
    return out


def inputs(kind, count, R, dtype, rng):
    dt = np.dtype(dtype)
    seed = int(rng.integers(1 << 30))
    kw = dict(dtype=dt, min_exponent=-400 if dt == np.float64 else -40)
    x = random_terms(count, R, seed=seed, **kw)
    y = random_terms(count, R, seed=seed + 1, **kw)
    if kind == "cancel":
        y[:, : R - 1] = -x[:, : R - 1]
    elif kind == "arbitrary":
        lo, hi = (-40, 40) if dt == np.float64 else (-20, 20)
        x = (rng.standard_normal((count, R)) * np.exp2(rng.integers(lo, hi, (count, R)))).astype(dt)
        y = (rng.standard_normal((count, R)) * np.exp2(rng.integers(lo, hi, (count, R)))).astype(dt)
        x[rng.random((count, R)) < 0.1] = 0
    elif kind == "nonfinite":
        vals = np.array([np.inf, -np.inf, np.nan], dtype=dt)
        for a in (x, y):
            mask = rng.random(a.shape) < 0.2
            a[mask] = vals[rng.integers(0, 3, mask.sum())]
    elif kind == "overflow":
        big = (1000, 1023) if dt == np.float64 else (120, 127)
        x = random_terms(count, R, seed=seed, exponent_range=big, dtype=dt)
        y = random_terms(count, R, seed=seed + 1, exponent_range=(-big[1], -big[0]), dtype=dt)
    elif kind == "underflow":  # subnormal and tiny leading terms: the scalings' extreme exponents
        tiny = (-1074, -1000) if dt == np.float64 else (-149, -120)
        x = random_terms(count, R, seed=seed, exponent_range=tiny, dtype=dt)
        y = random_terms(count, R, seed=seed + 1, exponent_range=tiny, dtype=dt)
    elif kind == "zeros":
        x = np.where(rng.random((count, R)) < 0.5, -0.0, 0.0).astype(dt)
        y[rng.random(count) < 0.5] = 0.0
    return np.ascontiguousarray(x), np.ascontiguousarray(y)


def _bits(a):
    return a.view(np.uint64 if a.dtype == np.float64 else np.uint32)


def _symbol(dtype, R, op):
    return f"user_{dtype}_{R}_{op}"


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    if shutil.which("g++") is None:
        pytest.skip("g++ is needed to build the warp emulator")
    lines = ['#include "emu.h"', U.source(), KERNEL]
    for dtype, rs in RS.items():
        ct = CTYPE[dtype]
        for R in rs:
            for k, op in enumerate(OPS):
                lines.append(f'extern "C" void {_symbol(dtype, R, op)}(const {ct}* x, const {ct}* y, {ct}* o, '
                             f"long long n, unsigned g, unsigned bl) {{ emu::launch(g, bl, [=]{{ "
                             f"user_op<{ct}, {R}, {k}>(x, y, o, n); }}); }}")
    return emulated_library("\n".join(lines) + "\n", tmp_path_factory.mktemp("emu_user"), "user")


def run(lib, dtype, R, op, x, y, grid=2, block=64):
    out = np.full_like(x, 12345.0)
    p = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    getattr(lib, _symbol(dtype, R, op))(p(x), p(y), p(out), ctypes.c_longlong(len(x)), ctypes.c_uint(grid),
                                        ctypes.c_uint(block))
    return out


@pytest.mark.parametrize("dtype", list(RS))
@pytest.mark.parametrize("op", OPS)
def test_emulated_user_kernel_equals_twins(lib, op, dtype):
    rng = np.random.default_rng(OPS.index(op) + 17 * len(dtype))
    failures = []
    with np.errstate(all="ignore"):
        for R in RS[dtype]:
            for kind in KINDS:
                x, y = inputs(kind, 96, R, dtype, rng)
                if op == "sqrt" and kind not in ("nonfinite", "zeros"):  # mostly positive radicands
                    flip = (x[:, 0] < 0) & (rng.random(len(x)) < 0.9)
                    x[flip] = -x[flip]
                got, want = run(lib, dtype, R, op, x, y), twin(op, x, y, R)
                bad = (_bits(got) != _bits(want)).any(axis=1)
                if bad.any():
                    r = int(np.flatnonzero(bad)[0])
                    failures.append(f"R={R} {kind} row {r}: x={x[r]} y={y[r]} got={got[r]} want={want[r]}")
    assert not failures, "\n".join(failures[:8])


def _value(row):
    return sum((Fraction(float(t)) for t in row), Fraction(0))


@pytest.mark.parametrize("dtype,R", [("float64", 2), ("float64", 3), ("float64", 4), ("float64", 8),
                                     ("float32", 2), ("float32", 4)])
def test_twins_are_accurate(dtype, R):
    """Relative error of division, reciprocal and square root within 2^(4 - (p-1)R) of the exact
    value; comparisons equal the exact order."""
    p = 53 if dtype == "float64" else 24
    tol = Fraction(2) ** (4 - (p - 1) * R)
    rng = np.random.default_rng(R)
    x, y = inputs("random", 200, R, dtype, rng)
    x[x[:, 0] < 0] *= -1  # positive radicands
    q, rec, s = thread.div(x, y, R), thread.reciprocal(y, R), thread.sqrt(x, R)
    c = thread.compare(x, y, R)
    worst = Fraction(0)
    for i in range(len(x)):
        vx, vy = _value(x[i]), _value(y[i])
        for got, exact in ((q[i], vx / vy), (rec[i], 1 / vy)):
            worst = max(worst, abs(_value(got) - exact) / abs(exact))
        vs = _value(s[i])
        # |s - sqrt(x)| / sqrt(x) = |s^2 - x| / (x + s sqrt(x)) <= |s^2 - x| / x  (s > 0)
        worst = max(worst, abs(vs * vs - vx) / vx)
        assert c[i] == (vx > vy) - (vx < vy)
    assert worst <= tol, f"largest relative error 2^{np.log2(float(worst)):.1f} above 2^{4 - (p - 1) * R}"


def test_compare_on_equal_and_unordered():
    x = random_terms(20, 4, seed=3)
    assert (thread.compare(x, x.copy(), 4) == 0).all()
    y = x.copy()
    y[:, 1] = np.nan  # a finite leading term and a NaN below: unordered
    assert (thread.compare(x, y, 4) == 2).all()
    inf = np.zeros((1, 4))
    inf[0, 0] = np.inf
    assert thread.compare(inf, inf.copy(), 4)[0] == 0


def _nvrtc_or_skip():
    if not nvrtc_available():
        pytest.skip("CuPy NVRTC unavailable; install expansions[cuda12]")


def _example(name: str = "user_kernel"):
    """An example program of examples/ as a module (its KERNEL, twin and main)."""
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.pop(0)


@pytest.mark.slow  # NVRTC, about 20 CPU seconds
def test_nvrtc_compiles_header_and_example():
    _nvrtc_or_skip()
    names = [f"user_op<{ct}, {R}, {k}>" for ct in ("double", "float") for R in (2, 4) for k in range(len(OPS))]
    cubin, lowered, _ = U.compile(U.source() + KERNEL, names)
    assert cubin and set(lowered) == set(names)
    ex_mod = _example()
    cubin, lowered, _ = U.compile(ex_mod.KERNEL, [ex_mod.name(R) for R in (2, 4, 8)])
    assert len(lowered) == 3


def test_float_terms_refused_under_ftz():
    _nvrtc_or_skip()
    from cupy.cuda import nvrtc  # optional dependency, present when NVRTC is

    code = U.source() + KERNEL
    prog = nvrtc.createProgram(code, "user.cu", [], [])
    try:
        nvrtc.addNameExpression(prog, "user_op<float, 2, 0>")
        with pytest.raises(nvrtc.NVRTCError):
            nvrtc.compileProgram(prog, ["-arch=sm_90", "-std=c++17", "-ftz=true"])
        assert "needs --ftz=false" in nvrtc.getProgramLog(prog)
    finally:
        nvrtc.destroyProgram(prog)


def test_example_kernel_in_emulator_equals_its_twin(tmp_path):
    """The example's own kernel source, compiled by g++ against the emulator, gives the bits of its
    NumPy twin."""
    if shutil.which("g++") is None:
        pytest.skip("g++ is needed to build the warp emulator")
    ex_mod = _example()
    R, threads, per = 4, 64, 7
    lib = emulated_library('#include "emu.h"\n' + U._inline(ex_mod.KERNEL) +
                           f'\nextern "C" void run(double* o, long long t, long long m) {{ emu::launch(1, {threads}, '
                           f"[=]{{ leibniz<{R}>(o, t, m); }}); }}\n", tmp_path, "leibniz")
    out = np.zeros((threads, R))
    lib.run(out.ctypes.data_as(ctypes.c_void_p), ctypes.c_longlong(threads), ctypes.c_longlong(per))
    want = ex_mod.leibniz_twin(threads, per, R)
    assert np.array_equal(_bits(out), _bits(want))


@pytest.mark.gpu
@pytest.mark.skipif(not cuda.available(), reason="no CUDA GPU visible to CuPy (expansions.cuda.available() is False)")
@pytest.mark.parametrize("dtype", list(RS))
def test_gpu_user_kernel_equals_twins(dtype):
    """The header's kernel on the GPU, compiled by expansions.cuda.user.load, gives its twins' bits."""
    import cupy  # optional dependency: present where a GPU is

    ct = CTYPE[dtype]
    names = [f"user_op<{ct}, {R}, {k}>" for R in RS[dtype] for k in range(len(OPS))]
    module = U.load(U.source() + KERNEL, names)
    rng = np.random.default_rng(11)
    failures = []
    with np.errstate(all="ignore"):
        for R in RS[dtype]:
            for k, op in enumerate(OPS):
                for kind in KINDS:
                    x, y = inputs(kind, 4096, R, dtype, rng)
                    out = cupy.full(x.shape, 12345.0, dtype=x.dtype)
                    module.get_function(f"user_op<{ct}, {R}, {k}>")(
                        (16,), (128,), (cupy.asarray(x), cupy.asarray(y), out, np.int64(len(x))))
                    got, want = out.get(), twin(op, x, y, R)
                    if not np.array_equal(_bits(got), _bits(want)):
                        failures.append(f"{op} R={R} {kind}")
    assert not failures, failures[:10]


@pytest.mark.gpu
@pytest.mark.skipif(not cuda.available(), reason="no CUDA GPU visible to CuPy (expansions.cuda.available() is False)")
def test_gpu_example_runs():
    ex_mod = _example()
    assert ex_mod.main(["--device", "cuda", "--quick"]) == 0


@pytest.mark.slow  # NVRTC, about 20 CPU seconds
def test_nvrtc_compiles_the_cholesky_kernel():
    _nvrtc_or_skip()
    mod = _example("cholesky_kernel")
    _, lowered, _ = U.compile(mod.KERNEL, [mod.name(2), mod.name(4)])
    assert len(lowered) == 2


@pytest.mark.parametrize("R", [2, 4])
def test_cholesky_kernel_in_emulator_equals_its_twin(tmp_path, R):
    """Seed 003's double 5x5 inversion, one matrix per thread with Expansion<double, R>: the kernel's
    own source in the warp emulator gives the bits of its twin (the paper_repro algorithm on the
    header's twins)."""
    if shutil.which("g++") is None:
        pytest.skip("g++ is needed to build the warp emulator")
    mod = _example("cholesky_kernel")
    from paper_repro.seed003_innocente import random_spd

    A = np.ascontiguousarray(random_spd(40, np.random.default_rng(R)))
    lib = emulated_library('#include "emu.h"\n' + U._inline(mod.KERNEL) +
                           f'\nextern "C" void run(const double* a, double* o, long long n) {{ emu::launch(2, 32, '
                           f"[=]{{ cholesky_twice<{R}>(a, o, n); }}); }}\n", tmp_path, f"cholesky{R}")
    out = np.zeros((40, 5, 5, R))
    lib.run(A.ctypes.data_as(ctypes.c_void_p), out.ctypes.data_as(ctypes.c_void_p), ctypes.c_longlong(40))
    assert np.array_equal(_bits(out), _bits(mod.cholesky_twice_twin(A, R)))


@pytest.mark.gpu
@pytest.mark.skipif(not cuda.available(), reason="no CUDA GPU visible to CuPy (expansions.cuda.available() is False)")
def test_gpu_cholesky_example_runs():
    assert _example("cholesky_kernel").main(["--device", "cuda", "--quick"]) == 0
