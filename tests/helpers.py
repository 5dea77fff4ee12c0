"""Shared test helpers: bit views, reference runs on arrays, failure tables, the warp emulator's build;
the adversarial inputs come from :mod:`expansions.testing`."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np

from expansions.formats import format_of
from expansions.reference import algorithms as A
from expansions.reference.fp import from_float, to_float

UINT = {np.dtype(np.float64): np.uint64, np.dtype(np.float32): np.uint32}

RS = (2, 3, 4, 5, 8, 13, 16, 31, 32)
DTYPES = ("float64", "float32")


def bits(a) -> np.ndarray:
    """The bits of a terms array, or of an ExpansionArray's terms, as unsigned integers."""
    a = getattr(a, "terms", a)
    return np.ascontiguousarray(a).view(UINT[a.dtype])


def same(a, b) -> bool:
    """Two ExpansionArrays equal bit for bit: shape, number of terms, term type and every term."""
    return a.shape == b.shape and a.nterms == b.nterms and a.dtype == b.dtype and np.array_equal(bits(a), bits(b))


def exact_array(x) -> np.ndarray:
    """An ExpansionArray's exact values as an object array of Fractions (a 0-d array for a 0-d x)."""
    return np.array(x.to_fraction(), dtype=object)


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


def nvrtc_available() -> bool:
    """Whether CuPy's NVRTC binding and the NVRTC library (the nvidia-cuda-nvrtc wheel) load."""
    try:
        from cupy.cuda import nvrtc

        nvrtc.getVersion()
        return True
    except Exception:
        return False


EMULATION = Path(__file__).resolve().parent / "emulation"
GXX = ["g++", "-O1", "-std=c++17", "-ffp-contract=off", "-fno-fast-math", "-fPIC", "-shared", "-Wno-unknown-pragmas"]


def emulator_cache_dir() -> Path:
    """Where the emulator's shared libraries are kept between tests and runs:
    ``$EXPANSIONS_EMULATOR_CACHE``, else ``emulator/`` beside the CUBIN cache
    (``$EXPANSIONS_CACHE_DIR`` or ``~/.cache/expansions``)."""
    env = os.environ.get("EXPANSIONS_EMULATOR_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("EXPANSIONS_CACHE_DIR")
    return (Path(base) if base else Path.home() / ".cache" / "expansions") / "emulator"


def _compiler_version() -> str:
    out = subprocess.run(["g++", "--version"], capture_output=True, text=True)
    return out.stdout.splitlines()[0] if out.returncode == 0 and out.stdout else "g++ unknown"


def emulated_library(text: str, directory=None, name: str = "emu"):
    """g++ compiles ``text`` (kernel sources with ``#include "emu.h"`` and ``extern "C"`` launchers)
    against the warp emulator (tests/emulation) into a shared library, loaded with ctypes.  Every
    operation is the one the GPU performs: no contraction, no fast math.

    The library is cached by a hash of everything that makes it (the text, emu.h, the flags and the
    compiler's version) in :func:`emulator_cache_dir`, so a kernel source is compiled once across
    tests, xdist workers and runs; a changed source has another key, never a stale library.  Workers
    that need the same library wait on a file lock while one builds it.  ``directory`` is not used
    (the cache holds the files); it stays for the callers' signature."""
    import ctypes
    import fcntl
    import hashlib

    key = hashlib.sha256("\0".join([text, (EMULATION / "emu.h").read_text(), *GXX, _compiler_version()])
                         .encode()).hexdigest()[:24]
    folder = emulator_cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    so = folder / f"lib{name}_{key}.so"
    if not so.exists():
        with open(folder / f"{name}_{key}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not so.exists():
                src = folder / f"{name}_{key}.{os.getpid()}.cpp"
                tmp = folder / f"lib{name}_{key}.{os.getpid()}.so.tmp"
                src.write_text(text)
                try:
                    subprocess.run([*GXX, f"-I{EMULATION}", str(src), "-o", str(tmp)], check=True, capture_output=True)
                    os.replace(tmp, so)
                finally:
                    src.unlink(missing_ok=True)
                    tmp.unlink(missing_ok=True)
    return ctypes.CDLL(str(so))


def examples(n: int) -> int:
    """``n`` property-test examples under the ``ci`` hypothesis profile, a fifth of them (at least 10)
    under ``dev`` (tests/conftest.py): the profile's max_examples over hypothesis' default of 100."""
    from hypothesis import settings

    return max(10, round(n * settings.default.max_examples / 100))
