"""Shared test helpers: bit views, reference runs on arrays, adversarial inputs, failure tables."""

from __future__ import annotations

import numpy as np

from expansions.formats import format_of
from expansions.generate import random_terms
from expansions.reference import algorithms as A
from expansions.reference.fp import from_float, to_float

UINT = {np.dtype(np.float64): np.uint64, np.dtype(np.float32): np.uint32}

RS = (2, 3, 4, 5, 8, 13, 16, 31, 32)
DTYPES = ("float64", "float32")


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(UINT[a.dtype])


def reference(op: str, R: int, dtype: str, *arrays) -> np.ndarray:
    """Run the exact scalar reference on each row of the given (N, k) arrays."""
    fmt = format_of(dtype)
    f = getattr(A, op)
    out = []
    for rows in zip(*arrays):
        vals = [tuple(from_float(v) for v in r) for r in rows]
        if op in ("renormalize",):
            res = f(vals[0], R, fmt)
        else:
            res = f(vals[0], vals[1], R, fmt)
        out.append([to_float(v) for v in res])
    return np.array(out, dtype=dtype).reshape(-1, R)


def failure_table(inputs, got, want, limit=5) -> str:
    """Rows that differ, as hex, for an assertion message."""
    bad = np.flatnonzero((bits(got) != bits(want)).any(axis=1))
    lines = [f"{bad.size} of {got.shape[0]} rows differ; first {min(limit, bad.size)}:"]
    for i in bad[:limit]:
        lines.append("  inputs: " + " | ".join(" ".join(float(v).hex() for v in a[i]) for a in inputs))
        lines.append("  got   : " + " ".join(float(v).hex() for v in got[i]))
        lines.append("  want  : " + " ".join(float(v).hex() for v in want[i]))
    return "\n".join(lines)


def adversarial_pairs(N: int, R: int, dtype: str, seed: int):
    """x, y mixing random, cancellation, Sterbenz, gaps, zeros, ulp overlaps, same sign, near
    underflow (the verification's families), keeping 2Prod errors above the underflow threshold for
    float64 (where the twin's Dekker product and the FMA may differ)."""
    from expansions.verify import families

    x, y = families(N, R, dtype, np.random.default_rng(seed), "add_safe")
    if dtype == "float64":
        x = _flush_low(x, -480)
        y = _flush_low(y, -480)
    return x, y


def _flush_low(a, emin_keep):
    """Zero the terms below 2**emin_keep (keeps products' errors representable)."""
    a = a.copy()
    a[np.abs(a) < np.ldexp(1.0, emin_keep)] = 0
    return a


def safe_random(N, R, dtype, seed, **kw):
    """Random expansions whose float64 products keep representable errors (see adversarial_pairs)."""
    kw.setdefault("min_exponent", -400 if dtype == "float64" else None)
    return random_terms((N,), R, dtype, seed=seed, **kw)


def nvrtc_available() -> bool:
    """Whether CuPy's NVRTC binding and the NVRTC library (the nvidia-cuda-nvrtc wheel) load."""
    try:
        from cupy.cuda import nvrtc

        nvrtc.getVersion()
        return True
    except Exception:
        return False


def emulated_library(text: str, directory, name: str = "emu"):
    """g++ compiles ``text`` (kernel sources with ``#include "emu.h"`` and ``extern "C"`` launchers)
    against the warp emulator (tests/emulation) into a shared library, loaded with ctypes.  Every
    operation is the one the GPU performs: no contraction, no fast math."""
    import ctypes
    import subprocess
    from pathlib import Path

    src, so = Path(directory) / f"{name}.cpp", Path(directory) / f"lib{name}.so"
    src.write_text(text)
    cmd = ["g++", "-O1", "-std=c++17", "-ffp-contract=off", "-fno-fast-math", "-fPIC", "-shared",
           "-Wno-unknown-pragmas", f"-I{Path(__file__).resolve().parent / 'emulation'}", str(src), "-o", str(so)]
    subprocess.run(cmd, check=True, capture_output=True)
    return ctypes.CDLL(str(so))
