"""The kernel families of the bit-exactness comparison (the ``bitexact`` parts and ``elementary``):
for each, its input sets (:mod:`expansions.testing`), its launch on the device, its CPU side (the engine,
or the twins for the ``dw.cuh`` kernels) and the compile units it needs."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import expansions as ex
from expansions import backends, dispatch
from expansions import testing as input_families
from expansions.baselines import BASELINES
from expansions.cuda import build, dw_kernels
from expansions.dw import ALGORITHMS
from expansions.dw import cpu as dw_twins

from .common import DTYPES
from .units import PROGRAMS, Unit, kernel_unit

BITEXACT_RS = (2, 3, 4, 8, 16, 32)
#: Random operands per (family, R, dtype); the special and adversarial sets come on top.
BITEXACT_COUNT = 100_000
#: Rows of each special and adversarial set (:data:`expansions.testing.FAMILIES` other than "random").
SPECIAL_ROWS = 1024
#: Chunk size of the reductions' passes in the comparison (one kernel instance per R and dtype).
REDUCE_CHUNK = 64


def input_sets(flavour: str, R: int, dtype: str, count: int, special: int, seed: int):
    """[(set name, x, y)]: the input families of tests/test_gpu.py (:mod:`expansions.testing`: random,
    ulp/zero/same sign, wide gaps, cancellation, Sterbenz, arbitrary floats, close magnitudes, NaN/Inf,
    overflow, underflow, signed zeros) for the operation ``flavour`` (its float64 product rules: no term
    below 2^-450, no underflow family), ``count`` random rows and ``special`` rows of each other family."""
    out = []
    for k, name in enumerate(input_families.FAMILIES):
        if input_families.skip_family(name, flavour, dtype):
            continue
        rows = count if name == "random" else special
        x, y = input_families.family(name, flavour, dtype, R, R, R, rows, seed + 1000 * k)
        out.append((name, np.ascontiguousarray(x), np.ascontiguousarray(y)))
    return out


@dataclass(frozen=True)
class Family:
    """A kernel family of the comparison: ``inputs(R, dtype, count, special, seed)`` -> [(set, *arrays)],
    ``gpu(dev, R, *arrays)`` and ``cpu(R, *arrays)`` -> terms (host), ``units(R, dtype)``."""

    name: str
    inputs: Callable
    gpu: Callable
    cpu: Callable
    units: Callable
    rs: tuple = BITEXACT_RS
    doc: str = ""
    #: names of the result's column blocks (R columns each) when one row holds several results
    labels: Callable | None = None


def _engine():
    return backends.engine_backend()


def _dispatch_family(name, op, alg, kernel, flavour, unary=False):
    def inputs(R, dtype, count, special, seed):
        sets = input_sets(flavour, R, dtype, count, special, seed)
        if op == "sqrt":  # radicands: nonnegative, but NaN/Inf and signed zeros as drawn, and a negative set
            sets = [(s, x if s in ("nonfinite", "signed_zeros") else np.where(x[:, :1] < 0, -x, x), y)
                    for s, x, y in sets] + [("negative", -np.abs(sets[0][1][:special]), sets[0][2][:special])]
        return [(s, x) for s, x, _ in sets] if unary else sets

    def gpu(dev, R, *arrays):
        return dev.to_host(dispatch.run(op, alg, dev.backend, True, *[dev.to_device(a) for a in arrays], R))

    def cpu(R, *arrays):
        return dispatch.run(op, alg, _engine(), True, *arrays, R)

    def units(R, dtype):
        return [kernel_unit(build.instance(kernel, dtype, R, renormalize=True))]

    return Family(name, inputs, gpu, cpu, units,
                  doc=f"dispatch.run({op!r}, {alg!r}, renormalize=True): the {kernel} instance the library launches")


def _plain_family(name, flavour, method):
    """renormalize / negate: the backend function on one operand."""
    def inputs(R, dtype, count, special, seed):
        return [(s, x) for s, x, _ in input_sets(flavour, R, dtype, count, special, seed)]

    def gpu(dev, R, x):
        f = getattr(dev.backend, method)
        return dev.to_host(f(dev.to_device(x)) if method == "negate" else f(dev.to_device(x), R))

    def cpu(R, x):
        f = getattr(_engine(), method)
        return f(x) if method == "negate" else f(x, R)

    def units(R, dtype):
        return [kernel_unit(build.instance(name, dtype, R))]

    return Family(name, inputs, gpu, cpu, units, doc=f"backend.{method}")


def _reduce_family(name, dot):
    def inputs(R, dtype, count, special, seed):
        sets = input_sets("mul_truncated" if dot else "add_safe", R, dtype, count, special, seed)
        return [(s, x, y) for s, x, y in sets] if dot else [(s, x) for s, x, _ in sets]

    def _shape(x):
        batch = 8
        n = x.shape[0] // batch
        return batch, n

    def gpu(dev, R, x, y=None):
        batch, n = _shape(x)
        kw = dict(n2=1, xs=(n, 0, 1), ys=(n, 0, 1), y=dev.to_device(y[:batch * n])) if dot else {}
        return dev.to_host(dev.backend.reduce(dev.to_device(x[:batch * n]), batch, n, R, chunk=REDUCE_CHUNK, **kw))

    def cpu(R, x, y=None):
        batch, n = _shape(x)
        kw = dict(n2=1, xs=(n, 0, 1), ys=(n, 0, 1), y=y[:batch * n]) if dot else {}
        return _engine().reduce(x[:batch * n], batch, n, R, chunk=REDUCE_CHUNK, **kw)

    def units(R, dtype):
        out = [kernel_unit(build.instance("reduce_sum", dtype, R, C=REDUCE_CHUNK))]
        return out + ([kernel_unit(build.instance("reduce_dot", dtype, R, C=REDUCE_CHUNK))] if dot else [])

    return Family(name, inputs, gpu, cpu, units, doc=f"backend.reduce{' with y (dot)' if dot else ''}, "
                  f"chunk {REDUCE_CHUNK}, 8 rows; the result rows (not the elements) are compared")


def _baseline_family(name):
    b = BASELINES[name]
    flavour = "mul_truncated" if b.operation == "mul" else "add_safe"

    def inputs(R, dtype, count, special, seed):
        return input_sets(flavour, R, dtype, count, special, seed)

    def gpu(dev, R, x, y):
        f = dev.launcher(name)
        args = (dev.to_device(x), dev.to_device(y)) + (() if b.terms else (R,))
        return dev.to_host(f(*args))

    def cpu(R, x, y):
        engine_baselines = importlib.import_module("expansions.engine.baselines")  # imports numba: the CPU side only
        return getattr(engine_baselines, name)(x, y, *(() if b.terms else (R,)))

    def units(R, dtype):
        return [kernel_unit(build.instance(name, dtype, R))]

    return Family(name, inputs, gpu, cpu, units, rs=(b.terms,) if b.terms else BITEXACT_RS,
                  doc=f"the sequential baseline {name} (AoS launcher)")


def elementary_inputs(f, R, dtype, count, seed):
    """tests/test_elementary_emulated.py's domain of ``f`` (``count`` random rows) and its special values
    (:mod:`expansions.testing`)."""
    x, y = input_families.elementary_domain(f, count, R, dtype, np.random.default_rng(seed))
    sx, sy = input_families.elementary_specials(f, R, dtype)
    sets = [("domain", x) + (() if y is None else (y,)), ("specials", sx) + (() if sy is None else (sy,))]
    return [tuple([s] + [np.ascontiguousarray(a) for a in arrays]) for s, *arrays in sets]


def _elementary_family(fname):
    def inputs(R, dtype, count, special, seed):
        return elementary_inputs(fname, R, dtype, count, seed)

    def gpu(dev, R, *arrays):
        return dev.to_host(dev.backend.elementary(fname)(*[dev.to_device(a) for a in arrays], R))

    def cpu(R, *arrays):
        return _engine().elementary(fname)(*arrays, R)

    def units(R, dtype):
        return [kernel_unit(build.instance(fname, dtype, R))]

    return Family(fname, inputs, gpu, cpu, units, doc=f"the elementary function {fname} (elementary.cuh), "
                  "on tests/test_elementary_emulated.py's domain and special values")


def _dw_family():
    """R = 2: every kernel of dw.cuh against its twin, and every dw_operation instance (the library's
    R = 2 operations) against the engine's composition."""
    def inputs(R, dtype, count, special, seed):
        return input_sets("mul_truncated", 2, dtype, count, special, seed)

    def _cases(dtype):
        for name, kind in dw_kernels.library_algorithms().items():
            for op, renorm in ((("sqrt", False),) if kind == "sqrt" else
                               ((kind, False), (kind, True)) + ((("sub", True),) if kind == "add" else ())):
                yield name, op, renorm

    def gpu(dev, R, x, y):
        outs = []
        for name, op, renorm in _cases(x.dtype):
            ops = (np.where(x[:, :1] < 0, -x, x),) if op == "sqrt" else (x, y)
            outs.append(dev.to_host(dispatch.run(op, name, dev.backend, renorm, *[dev.to_device(a) for a in ops], 2)))
        for name in dw_kernels.KERNEL_ALGORITHMS:
            outs.append(dev.to_host(dev.dw_run(name, *[dev.to_device(a) for a in _dw_operands(name, x, y)])))
        return np.concatenate(outs, axis=1)

    def cpu(R, x, y):
        outs = []
        for name, op, renorm in _cases(x.dtype):
            ops = (np.where(x[:, :1] < 0, -x, x),) if op == "sqrt" else (x, y)
            outs.append(dispatch.run(op, name, _engine(), renorm, *ops, 2))
        for name in dw_kernels.KERNEL_ALGORITHMS:
            ops = _dw_operands(name, x, y)
            cols = [c for a in ops for c in ((a[:, 0], a[:, 1]) if a.ndim == 2 else (a,))]
            hi, lo = getattr(dw_twins, name)(*cols)
            outs.append(np.stack([hi, lo], axis=1))
        return np.concatenate(outs, axis=1)

    def _dw_operands(name, x, y):
        kinds = ALGORITHMS[name].operands
        ops = [(x if i == 0 else y) if k == "dw" else np.ascontiguousarray((x if i == 0 else y)[:, 0])
               for i, k in enumerate(kinds)]
        return [np.abs(a) if name.endswith("sqrt") else a for a in ops]

    def labels():
        return ([f"dw_operation {name} {op} renormalize={renorm}" for name, op, renorm in _cases(None)]
                + [f"dw.cuh {name}" for name in dw_kernels.KERNEL_ALGORITHMS])

    return Family("dw", inputs, gpu, cpu, lambda R, dtype: [Unit("dw")], rs=(2,), labels=labels,
                  doc="R = 2: every dw_operation instance (the library's + - * / sqrt at R = 2, each algorithm of "
                      "R2_METHODS, with and without renormalization) against dispatch.run on the engine, and every "
                      "kernel of dw.cuh against its twin; one row of the result holds all of them")


def _program_family(name):
    def inputs(R, dtype, count, special, seed):
        a = input_sets("mul_truncated", R, dtype, count, special, seed)
        b = input_sets("mul_truncated", R, dtype, count, special, seed + 77)
        return [(s, x, y, z) for (s, x, y), (_, z, _) in zip(a, b)]

    def gpu(dev, R, x, y, z):
        out = ex.fuse(PROGRAMS[name])(*[dev.expansion(a) for a in (x, y, z)])
        return dev.to_host(out.terms)

    def cpu(R, x, y, z):
        return ex.fuse(PROGRAMS[name], cpu="plan")(*[ex.from_terms(a) for a in (x, y, z)]).terms

    return Family(f"fuse_{name}", inputs, gpu, cpu, lambda R, dtype: [Unit("program", (name, R, dtype))],
                  doc=f"expansions.fuse of {name} (x * y + z): one generated CUDA kernel, against the fused CPU plan")


@functools.cache
def families() -> tuple:
    """The kernel families of the comparison, most valuable first."""
    return (
        _dispatch_family("add_safe", "add", "safe", "add_safe", "add_safe"),
        _dispatch_family("mul_truncated", "mul", "truncated", "mul_truncated", "mul_truncated"),
        _dw_family(),
        _dispatch_family("add_fast", "add", "fast", "add_fast", "add_fast"),
        _dispatch_family("sub_safe", "sub", "safe", "sub_safe", "sub_safe"),
        _dispatch_family("sub_fast", "sub", "fast", "sub_fast", "sub_fast"),
        _plain_family("renormalize", "renormalize", "renormalize"),
        _dispatch_family("newton_div", "div", "newton", "newton_div", "mul_truncated"),
        _dispatch_family("newton_reciprocal", "reciprocal", "newton", "newton_reciprocal", "mul_truncated", unary=True),
        _dispatch_family("newton_sqrt", "sqrt", "newton", "newton_sqrt", "mul_truncated", unary=True),
        _reduce_family("reduce_sum", dot=False),
        _reduce_family("reduce_dot", dot=True),
        _program_family("fma"),
        _plain_family("negate", "add_safe", "negate"),
        _elementary_family("exp"),
        _baseline_family("certified_add"),
        _baseline_family("certified_mul"),
        *(_baseline_family(n) for n in ("dd_add_ieee", "dd_add_sloppy", "dd_mul", "qd_add_ieee", "qd_add_sloppy",
                                         "qd_mul")),
    )


def bitexact_configs():
    """(family, R, dtype) in the order of the comparison."""
    for fam in families():
        for dtype in DTYPES:
            for R in fam.rs:
                yield fam, R, dtype


def family(name: str) -> Family:
    """A family of the comparison by name (an elementary function's name gives its family)."""
    for fam in families():
        if fam.name == name:
            return fam
    return _elementary_family(name)


def random_rows(fam: Family, R: int) -> int:
    """Random operands of one (family, R, dtype) comparison: :data:`BITEXACT_COUNT`, except where the
    family says fewer (:data:`EXP_ROWS`)."""
    return EXP_ROWS.get(R, BITEXACT_COUNT) if fam.name == "exp" else BITEXACT_COUNT


#: Random operands of the exponential's comparison at large R: its CPU reference (the twin's algorithm
#: on the engine's operations) takes about 6 ms per argument at R = 32 on this project's CPU machine
#: (630 s for 10^5); 10^5 at R = 8, 16, 32 is the third stage's (``bitexact_exp``, in chunks).
EXP_ROWS = {8: 10_000, 16: 2_000, 32: 1_000}
