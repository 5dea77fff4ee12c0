"""Compile the CPU engine's code into numba's disk cache ahead of use: ``python -m expansions warm``.

The compiled engine (:mod:`expansions.engine`) compiles each of its loops on the first call that
needs it and keeps the machine code in numba's disk cache (``NUMBA_CACHE_DIR`` when set, else
``__pycache__`` beside the engine's modules), so a new cache makes the first calls wait for the
compiler.  :func:`warm` pays that cost once, ahead of use: it runs a few calls of each *unit* (a
family of operations in one dtype, :data:`FAMILIES`) in one process per core, the costliest units
first, so that later processes (a user's session, the tests' workers, the main job) load the
compiled code instead of compiling it.

A unit only calls operations (and checks their results' dtype): what it compiles is what those calls
compile, so it stays right whichever loops the engine compiles for an operation.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import time

import numpy as np
from tqdm import tqdm

import expansions as ex

from . import backends
from . import elementary as E
from .dw import ALGORITHMS
from .slices import SCHEMES, matmul_terms

#: The library's defaults (``expansions.array``: two float64 terms; R >= 3 runs the general loops,
#: R = 2 the double-word ones): what ``python -m expansions warm`` compiles without options.
DEFAULT_FAMILIES = ("arithmetic", "elementary", "programs")
DEFAULT_DTYPES = ("float64",)
DEFAULT_TERMS = (2, 4)

#: Expansions per operand of a unit's calls (a few blocks of the engine's loops).
COUNT = 64


def _pair(R: int, dtype: str):
    return (ex.random((COUNT,), terms=R, dtype=dtype, seed=1), ex.random((COUNT,), terms=R, dtype=dtype, seed=2))


def _in_unit_interval(R: int, dtype: str):
    """Expansions of values in (0, 1) (in every elementary function's domain), exactly representable."""
    return ex.array(np.linspace(0.125, 0.875, COUNT).astype(dtype), terms=R, dtype=dtype)


def arithmetic(dtype: str, terms) -> None:
    """The operators (+, -, *, /, negation, comparisons), the fast addition, the square root, the
    renormalization, the reductions (sum, np.sum, dot) and the cumulative sum and product, at each R
    of ``terms``."""
    for R in terms:
        x, y = _pair(R, dtype)
        results = (x + y, x - y, x * y, x / y, x * y + x, -x, ex.sqrt(abs(x)), ex.sum(x), np.sum(x), ex.dot(x, y),
                   ex.add(x, y, method="fast"), ex.renormalize(ex.from_terms(x.terms[:, ::-1].copy())),
                   np.cumsum(x), np.cumprod(x))
        for z in results:
            assert z.terms.dtype == x.terms.dtype
        for c in (x < y, x <= y, x == y, x > y):
            assert c.dtype == np.bool_


def elementary(dtype: str, terms) -> None:
    """Every elementary function of :mod:`expansions.elementary`, at each R of ``terms``."""
    for R in terms:
        x = _in_unit_interval(R, dtype)
        for name in E.__all__:
            f = getattr(ex, name)
            z = f(x, x) if name in ("atan2", "pow") else f(x)
            assert z.terms.dtype == x.terms.dtype, name


def double_word(dtype: str, terms) -> None:
    """Every double-word x double-word algorithm (``method=`` of :func:`expansions.add`, ``mul``,
    ``div``, ``sqrt`` at R = 2), raw and renormalized; the library's defaults among them are also
    compiled by :func:`arithmetic` at R = 2.  ``terms`` does not apply (R = 2)."""
    x, y = _pair(2, dtype)
    operations = {"add": ex.add, "mul": ex.mul, "div": ex.div}
    for name, algorithm in ALGORITHMS.items():
        if algorithm.operands == ("dw", "dw"):
            for renormalize in (False, True):
                z = operations[algorithm.operation](x, y, method=name, renormalize=renormalize)
                assert z.terms.dtype == x.terms.dtype, name
        elif algorithm.operands == ("dw",):
            assert ex.sqrt(abs(x), method=name).terms.dtype == x.terms.dtype, name


def programs(dtype: str, terms) -> None:
    """The loop that runs every program of :func:`expansions.fuse` (``cpu="loop"``, the default at R >=
    3; one compiled loop per dtype, whatever the program), with every kind of node it runs: the
    additions, products, Newton operations and negation, and at R = 2 the double-word defaults."""
    for R in terms:
        x, y = _pair(R, dtype)
        z = ex.fuse(lambda a, b: (-a * b + a) / b - ex.sqrt(b * b), cpu="loop")(x, y)
        assert z.terms.dtype == x.terms.dtype


def _engine_module(name: str):
    """A module of the compiled engine (it imports numba: only in the units that call it directly)."""
    return importlib.import_module(f"expansions.engine.{name}")


def baselines(dtype: str, terms) -> None:
    """The compiled twins of the baselines (double-double, quad-double, certified; the benchmarks' and
    the main job's comparisons) and the double-word algorithms' element-wise functions; ``terms``
    does not apply (the baselines' own R, 2 and 4)."""
    EB, EDW = _engine_module("baselines"), _engine_module("dw")
    x, y = (p.terms for p in _pair(2, dtype))
    assert EDW.two_sum(x[:, 0], y[:, 0])[0].dtype == x.dtype
    X, Y = (p.terms for p in _pair(4, dtype))
    for z in (EB.dd_add_sloppy(x, y), EB.dd_add_ieee(x, y), EB.dd_mul(x, y), EB.qd_add_ieee(X, Y), EB.qd_mul(X, Y),
              EB.certified_add(X, Y, 4), EB.certified_mul(X, Y, 4)):
        assert z.dtype == x.dtype


def slices(dtype: str, terms) -> None:
    """The slice products' compiled steps (both schemes; the steps run in float64), at each R of ``terms``."""
    for R in terms:
        a = ex.random((4, 3), terms=R, dtype=dtype, seed=1).terms
        b = ex.random((3, 5), terms=R, dtype=dtype, seed=2).terms
        for scheme in SCHEMES:
            assert matmul_terms(a, b, R, dtype, scheme=scheme).shape == (4, 5, R)


#: family -> (function(dtype, terms), CPU seconds per dtype on a cold cache, measured on a 2-core x86_64
#: machine and used only to start the costliest units first)
FAMILIES = {
    "elementary": (elementary, 64.0),
    "double_word": (double_word, 29.0),
    "programs": (programs, 35.0),
    "arithmetic": (arithmetic, 28.0),
    "baselines": (baselines, 12.5),
    "slices": (slices, 10.7),
}
DTYPES = ("float64", "float32")


def units(families=DEFAULT_FAMILIES, dtypes=DEFAULT_DTYPES) -> list[str]:
    """The units ``family:dtype`` of ``families`` x ``dtypes`` (ValueError for an unknown family or dtype)."""
    for f in families:
        if f not in FAMILIES:
            raise ValueError(f"unknown family {f!r}: choose from {', '.join(FAMILIES)}")
    for d in dtypes:
        if d not in DTYPES:
            raise ValueError(f"unknown dtype {d!r}: choose from {', '.join(DTYPES)}")
    return [f"{f}:{d}" for f in dict.fromkeys(families) for d in dict.fromkeys(dtypes)]


def warm_unit(unit: str, terms=DEFAULT_TERMS) -> tuple[str, float, float]:
    """Run the calls of ``unit`` (``family:dtype``) in this process, on the compiled engine whatever
    ``EXPANSIONS_CPU`` says (the backend in use is restored after): (unit, wall seconds, CPU seconds)."""
    family, dtype = unit.split(":")
    before = "engine" if backends.cpu_backend().name == "engine" else "twins"
    backends.set_cpu_backend("engine")
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        FAMILIES[family][0](dtype, tuple(terms))
        return unit, time.perf_counter() - t0, time.process_time() - c0
    finally:
        backends.set_cpu_backend(before)


def _warm_unit(job):
    return warm_unit(*job)


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def cache_dir() -> str:
    """Where numba keeps the compiled code: ``NUMBA_CACHE_DIR``, else beside the engine's modules."""
    from numba.core import config  # numba: the engine's dependency, imported only when asked

    return config.CACHE_DIR or "__pycache__ beside the modules of expansions/engine (numba's default)"


def warm(unit_names, terms=DEFAULT_TERMS, processes: int | None = None, progress: bool = True) -> dict:
    """Run ``unit_names`` (see :func:`units`) in ``processes`` new processes (default: one per core, at
    most one per unit), the costliest first, each to the next free process, with a progress bar:
    {unit: (wall seconds, CPU seconds)} in the order they finished.  An exception in a unit (its
    operation failed) is raised here."""
    unit_names = sorted(unit_names, key=lambda u: -FAMILIES[u.split(":")[0]][1])
    processes = max(1, min(processes or cores(), len(unit_names) or 1))
    done = {}
    with multiprocessing.get_context("spawn").Pool(processes) as pool, \
            tqdm(total=len(unit_names), unit="unit", desc="compiling", disable=not progress) as bar:
        for unit, wall, cpu in pool.imap_unordered(_warm_unit, [(u, tuple(terms)) for u in unit_names], chunksize=1):
            done[unit] = (wall, cpu)
            bar.set_postfix_str(f"{unit} {wall:.0f} s")
            bar.update()
    return done
