"""Small launches of every kernel, for compute-sanitizer (the GPU runbook's ``sanitizer`` part).

    python tools/gpu_launch_each.py [--one-per-family]

Runs, on the current CuPy device, 100 expansions through every launcher of
:data:`expansions.cuda.launch.LAUNCHERS` (the group kernels at R in {2, 3, 8, 32} with N = M = R and one
mixed size, the Newton kernels at R in {2, 5}, the sequential baselines at their sizes), the
reduction (sum, several passes), every double-word kernel of ``dw.cuh`` (on inputs of one sign,
nonnegative for the square root) and every ``dw_operation`` instance (the library's one-launch R = 2
operations); then checks each result against its twin bit for bit.  With ``--one-per-family``: one
launch of each kernel of the table (float64, R = 3 or its fixed size, the renormalizing instance where
there is one; of the elementary functions exp alone, at R = 2), the sum and the dot product (R = 3,
chunk 64), every kernel of ``dw.cuh`` (one module) and one ``dw_operation``: the instances of
:func:`family_instances`, which the runbook compiles beforehand.  Exit status 0 when all agree, 1
otherwise, 2 without a GPU.
"""

from __future__ import annotations

import sys

import numpy as np

from expansions import backends, cuda, dispatch
from expansions.cuda import build, dw_kernels, launch
from expansions.dw import ALGORITHMS
from expansions.dw import cpu as dw_twins
from expansions.generate import random_terms

COUNT = 100


def _twin(name):
    module, _, fn = f"expansions.{build.OPERATIONS[name].twin}".rpartition(".")
    return getattr(__import__(module, fromlist=[fn]), fn)


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and np.array_equal(a.view(np.uint8), b.view(np.uint8))


def columns(operands):
    """The arguments of a double-word twin: (hi, lo) of each (count, 2) operand, a float array as is."""
    return [c for a in operands for c in ((a[:, 0], a[:, 1]) if a.ndim == 2 else (a,))]


#: The R of the one-launch-per-family run (a group of 4 lanes with a padding lane), and its chunk size
#: of the reductions.
FAMILY_R = 3
FAMILY_CHUNK = 64


def _family_selected(name, op) -> bool:
    return not op.table or name == "exp"


def family_instances() -> list:
    """The kernels.cu instances of the one-launch-per-family run (``--one-per-family``)."""
    out = []
    for name, op in build.OPERATIONS.items():
        if op.params == "RC" or not _family_selected(name, op):
            continue
        R = op.terms or (2 if op.table else FAMILY_R)
        out.append(build.instance(name, "float64", R, renormalize=op.renormalizes))
    return out + [build.instance(k, "float64", FAMILY_R, C=FAMILY_CHUNK) for k in ("reduce_sum", "reduce_dot")]


def check_all(launchers, to_device, to_host, reduce, dw_run, dw_operation=None, one_per_family=False) -> list[str]:
    """Run every kernel family once through ``launchers`` (name -> function, as
    :data:`expansions.cuda.launch.LAUNCHERS`), ``reduce``, ``dw_run`` and ``dw_operation`` (as
    :func:`expansions.cuda.dw_kernels.operation`; skipped when None), on inputs moved by
    ``to_device``; the disagreements with the twins.  ``one_per_family``: the launches of
    :func:`family_instances` only (and every kernel of dw.cuh, one dw_operation)."""
    bad = []
    for name, op in build.OPERATIONS.items():
        if op.params == "RC" or (one_per_family and not _family_selected(name, op)):
            continue
        rs = (op.terms,) if op.terms else ((2, 5) if op.newton else ((2, 3) if op.table else (2, 3, 8, 32)))
        if one_per_family:
            rs = (op.terms or (2 if op.table else FAMILY_R),)
        for dtype in ("float64",) if one_per_family else ("float64", "float32"):
            for R in rs:
                sizes = [(R, R)] + ([(max(1, R - 1), R)] if op.params == "NMR" and not op.newton
                                    and not one_per_family else [])
                for N, M in sizes:
                    x = random_terms((COUNT,), N, dtype, seed=R)
                    y = random_terms((COUNT,), M, dtype, seed=R + 1)
                    args = (x, y) if op.operands == 2 else (x,)
                    if op.layout == "soa":
                        args = tuple(np.ascontiguousarray(a.T) for a in args)
                    extra = () if op.mapping == "term" or (op.mapping == "thread" and op.terms) else (R,)
                    with np.errstate(all="ignore"):
                        want = _twin(name)(*args, *extra)
                    if not (one_per_family and op.renormalizes):
                        with np.errstate(all="ignore"):
                            got = to_host(launchers[name](*[to_device(a) for a in args], *extra))
                        if not _same(got, want):
                            bad.append(f"{name} {dtype} N={N} M={M} R={R}")
                    if op.renormalizes:  # the renormalizing instance: the twin, then the renormalization
                        with np.errstate(all="ignore"):
                            got = to_host(launchers[name](*[to_device(a) for a in args], R, renormalize=True))
                            want = dispatch.renormalizer("newton" if op.newton else "safe", backends.cpu)(want, R)
                        if not _same(got, want):
                            bad.append(f"{name} renormalizing {dtype} N={N} M={M} R={R}")
    for R in (FAMILY_R,) if one_per_family else (2, 3, 8):
        x = random_terms((3, 700), R, "float64", seed=7).reshape(-1, R)
        y = random_terms((3, 700), R, "float64", seed=8).reshape(-1, R)
        kw = {"chunk": FAMILY_CHUNK} if one_per_family else {}
        for what, dot in (("reduce_sum", {}), ("reduce_dot", {"n2": 1, "xs": (700, 0, 1), "ys": (700, 0, 1)})):
            if dot and not one_per_family:
                continue
            with np.errstate(all="ignore"):
                got = to_host(reduce(to_device(x), 3, 700, R, **dot, **({"y": to_device(y)} if dot else {}), **kw))
                want = backends.cpu.reduce(x, 3, 700, R, **dot, **({"y": y} if dot else {}), **kw)
            if not _same(got, want):
                bad.append(f"{what} R={R}")
    for name in dw_kernels.KERNEL_ALGORITHMS:
        kinds = ALGORITHMS[name].operands
        for dtype in ("float64",) if one_per_family else ("float64", "float32"):
            ops = [random_terms((COUNT,), 2, dtype, seed=i, same_sign=True) if k == "dw" else
                   random_terms((COUNT,), 1, dtype, seed=i, same_sign=True)[:, 0] for i, k in enumerate(kinds)]
            ops = [np.abs(a) if name.endswith("sqrt") else a for a in ops]
            with np.errstate(all="ignore"):
                got = to_host(dw_run(name, *[to_device(a) for a in ops]))
                hi, lo = getattr(dw_twins, name)(*columns(ops))
            if not _same(got, np.stack([hi, lo], axis=1)):
                bad.append(f"dw {name} {dtype}")
    ops = list(dw_kernels.library_algorithms().items()) if dw_operation is not None else []
    for name, kind in ops[:1] if one_per_family else ops:
        for dtype in ("float64",) if one_per_family else ("float64", "float32"):
            x, y = (random_terms((COUNT,), 2, dtype, seed=i) for i in (5, 6))
            x = np.abs(x) if kind == "sqrt" else x
            for op, renormalize in ((("sqrt", False),) if kind == "sqrt" else
                                    ((kind, False), (kind, True)) + ((("sub", True),) if kind == "add" else ())):
                operands = (x, 2) if kind == "sqrt" else (x, y, 2)
                with np.errstate(all="ignore"):
                    got = to_host(dw_operation(name, to_device(x), None if kind == "sqrt" else to_device(y),
                                               negate_y=op == "sub", renormalize=renormalize))
                    want = dispatch.run(op, name, backends.cpu, renormalize, *operands)
                if not _same(got, want):
                    bad.append(f"dw_operation {name} {op} {dtype} renormalize={renormalize}")
    return bad


def twin_launchers() -> dict:
    """The twins with the launchers' signatures (``renormalize=True``: the twin, then the
    renormalization): what :func:`check_all` runs in place of the GPU (tests, the runbook's rehearsal)."""
    def launcher(name, op):
        twin = _twin(name)
        if not op.renormalizes:
            return twin
        ren = dispatch.renormalizer("newton" if op.newton else "safe", backends.cpu)

        def run(*args, renormalize=False):
            out = twin(*args)
            return ren(out, args[-1]) if renormalize else out

        return run

    return {name: launcher(name, op) for name, op in build.OPERATIONS.items() if op.params != "RC"}


def twin_dw_run(name, *ops):
    """:func:`expansions.cuda.dw_kernels.run` on the twins."""
    hi, lo = getattr(dw_twins, name)(*columns(ops))
    return np.stack([hi, lo], axis=1)


def twin_dw_operation(name, x, y=None, negate_y=False, renormalize=False):
    """:func:`expansions.cuda.dw_kernels.operation` on the twins (the composition it is tested against)."""
    op = "sub" if negate_y else dw_kernels.library_algorithms()[name]
    return dispatch.run(op, name, backends.cpu, renormalize, *((x, 2) if y is None else (x, y, 2)))


def main(argv=None) -> int:
    one = "--one-per-family" in (sys.argv[1:] if argv is None else argv)
    if not cuda.available():
        print("no CUDA GPU visible to CuPy")
        return 2
    import cupy  # optional dependency, present: a GPU was found

    bad = check_all(launch.LAUNCHERS, cupy.asarray, cupy.asnumpy, backends.cuda.reduce, dw_kernels.run,
                    dw_kernels.operation, one_per_family=one)
    print(f"{len(bad)} disagreements" + "".join(f"\n  {b}" for b in bad))
    return 1 if bad else 0
