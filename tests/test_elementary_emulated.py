"""The elementary-function kernels (expansions/cuda/elementary.cuh, entry points in kernels.cu), compiled
by g++ against the warp emulator (tests/emulation), against their twins (expansions.cpu.elementary).

Each (R, dtype) is compiled once with all 17 functions in one library.  Every function runs on random
arguments over its domain (random tails: every term is used) and on special values: zeros of both
signs, infinities, NaN (leading and in the tail), domain errors, the overflow and underflow edges,
huge trigonometric arguments (1e300, 2^1023), arguments at the branch thresholds (both from
:mod:`expansions.testing`, which the GPU runbook draws from too).  The result must be the twin's, bit for
bit.  The emulator checks that every collective is reached by the whole warp, so the per-group
branches (the twin's per-row branches) are also checked to keep the warp uniform.
"""

from __future__ import annotations

import ctypes
import shutil

import numpy as np
import pytest
from helpers import emulated_library

from expansions.cpu import elementary as E
from expansions.cuda import build as B
from expansions.cuda.elementary import table
from expansions.testing import elementary_domain, elementary_specials

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed to build the warp emulator")

UNARY = ("exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "atan", "asin", "acos", "sinh",
         "cosh", "tanh")
BINARY = ("atan2", "pow")
FUNCTIONS = UNARY + BINARY
#: (R, dtype) compiled with every function; the emulator is slow on wide groups (and on the Newton
#: iterations), so the larger R run fewer random rows (RANDOM_ROWS) and every FEW-th special value
#: (all of them at R = 2 and 3).
CONFIGS = ((2, "float64"), (3, "float64"), (4, "float64"), (8, "float64"), (2, "float32"), (4, "float32"))
RANDOM_ROWS = {2: 24, 3: 12, 4: 6, 8: 2, 16: 2}
FEW = {2: 1, 3: 1, 4: 2, 8: 5, 16: 4}
#: One function at R = 16 (its own library).
WIDE = (16, "float64", "exp")

_LIBS: dict = {}


def library(R, dtype, functions, tmp_path_factory):
    key = (R, dtype, functions)
    if key not in _LIBS:
        ct = B.CTYPES[dtype]
        lines = ['#include "emu.h"', B.source()]
        for f in functions:
            args = "x, y, o, n, t" if f in BINARY else "x, o, n, t"
            lines.append(f'extern "C" void emu_{f}(const {ct}* x, const {ct}* y, {ct}* o, long long n, '
                         f"const {ct}* t, unsigned g, unsigned bl) "
                         f"{{ emu::launch(g, bl, [=]{{ expansions::{f}<{ct}, {R}>({args}); }}); }}")
        _LIBS[key] = emulated_library("\n".join(lines) + "\n", tmp_path_factory.mktemp("elem"), name=f"elem{R}{dtype}")
    return _LIBS[key]


def run(lib, f, x, y, R, dtype, grid, block):
    p = lambda a: a.ctypes.data_as(ctypes.c_void_p) if a is not None else None  # noqa: E731
    out = np.full((x.shape[0], R), 12345.0, dtype=dtype)
    tab = table(R, dtype)
    getattr(lib, f"emu_{f}")(p(x), p(y), p(out), ctypes.c_longlong(x.shape[0]), p(tab), ctypes.c_uint(grid),
                              ctypes.c_uint(block))
    return out


def specials(f, R, dtype):
    """Special and edge arguments of f (rows of R terms): every FEW[R]-th of them (the first five,
    zeros, infinity and NaN, always)."""
    rx, ry = elementary_specials(f, R, dtype)
    keep = np.arange(rx.shape[0])
    keep = keep[(keep < 5) | (keep % FEW[R] == 0)]
    return rx[keep], (None if ry is None else ry[keep])


def _bits(a):
    return a.view(np.uint64 if a.dtype == np.float64 else np.uint32)


def check(lib, f, R, dtype, rng, random_rows):
    x, y = elementary_domain(f, random_rows, R, dtype, rng)
    sx, sy = specials(f, R, dtype)
    x = np.ascontiguousarray(np.concatenate([x, sx]))
    y = None if y is None else np.ascontiguousarray(np.concatenate([y, sy]))
    grid, block = [(1, 32), (2, 64), (3, 96)][int(rng.integers(3))]
    got = run(lib, f, x, y, R, dtype, grid, block)
    with np.errstate(all="ignore"):
        want = getattr(E, f)(x, y, R) if f in BINARY else getattr(E, f)(x, R)
    bad = np.flatnonzero((_bits(got) != _bits(want)).any(axis=1))
    return [f"{f} R={R} {dtype} row {i}: x={x[i]}" + ("" if y is None else f" y={y[i]}") +
            f" got={got[i]} want={want[i]}" for i in bad[:3]]


@pytest.mark.parametrize("R,dtype", [c if c == CONFIGS[0] else pytest.param(*c, marks=pytest.mark.slow)
                                     for c in CONFIGS])  # R = 2 float64 by default, the others slow
def test_elementary_kernels_equal_twins(R, dtype, tmp_path_factory):
    lib = library(R, dtype, FUNCTIONS, tmp_path_factory)
    rng = np.random.default_rng([R, len(dtype)])
    failures = []
    for f in FUNCTIONS:
        failures += check(lib, f, R, dtype, rng, RANDOM_ROWS[R])
    assert not failures, "\n".join(failures[:12])


@pytest.mark.slow
def test_wide_expansion(tmp_path_factory):
    R, dtype, f = WIDE
    lib = library(R, dtype, (f,), tmp_path_factory)
    assert not check(lib, f, R, dtype, np.random.default_rng(16), RANDOM_ROWS[R])


def test_counts_that_are_not_whole_warps(tmp_path_factory):
    """0, 1, 5 and 9 expansions (groups past the end compute on zeros and store nothing)."""
    lib = library(2, "float64", FUNCTIONS, tmp_path_factory)
    rng = np.random.default_rng(5)
    for f in ("exp", "sin", "atan2"):
        for count in (0, 1, 5, 9):
            x, y = elementary_domain(f, count, 2, "float64", rng)
            got = run(lib, f, x, y, 2, "float64", 1 + count % 3, 32 * (1 + count % 2))
            want = E.atan2(x, y, 2) if f == "atan2" else getattr(E, f)(x, 2)
            assert np.array_equal(_bits(got), _bits(want)), (f, count)
