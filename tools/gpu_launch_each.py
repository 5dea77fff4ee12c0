"""One small launch of each kernel family, for compute-sanitizer (``tools/gpu_run.py --phase sanitizer``).

Runs, on the current CuPy device, 100 expansions through every launcher of
:data:`expansions.cuda.launch.LAUNCHERS` (the group kernels at R in {2, 3, 8, 32} with N = M = R and one
mixed size, the Newton kernels at R in {2, 5}, the sequential baselines at their sizes), the
reduction (sum, several passes), every double-word kernel of ``dw.cuh`` (on inputs of one sign,
nonnegative for the square root) and every ``dw_operation`` instance (the library's one-launch R = 2
operations); then checks each result against its twin bit for bit.  Exit status
0 when all agree, 1 otherwise, 2 without a GPU.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402 - after the path set-up above

from expansions import backends, cuda, dispatch  # noqa: E402
from expansions.cuda import build, dw_kernels, launch  # noqa: E402
from expansions.dw import ALGORITHMS  # noqa: E402
from expansions.dw import cpu as dw_twins  # noqa: E402
from expansions.generate import random_terms  # noqa: E402

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


def check_all(launchers, to_device, to_host, reduce, dw_run, dw_operation=None) -> list[str]:
    """Run every kernel family once through ``launchers`` (name -> function, as
    :data:`expansions.cuda.launch.LAUNCHERS`), ``reduce``, ``dw_run`` and ``dw_operation`` (as
    :func:`expansions.cuda.dw_kernels.operation`; skipped when None), on inputs moved by
    ``to_device``; the disagreements with the twins."""
    bad = []
    for name, op in build.OPERATIONS.items():
        if op.params == "RC":
            continue
        rs = (op.terms,) if op.terms else ((2, 5) if op.newton else ((2, 3) if op.table else (2, 3, 8, 32)))
        for dtype in ("float64", "float32"):
            for R in rs:
                sizes = [(R, R)] + ([(max(1, R - 1), R)] if op.params == "NMR" and not op.newton else [])
                for N, M in sizes:
                    x = random_terms((COUNT,), N, dtype, seed=R)
                    y = random_terms((COUNT,), M, dtype, seed=R + 1)
                    args = (x, y) if op.operands == 2 else (x,)
                    if op.layout == "soa":
                        args = tuple(np.ascontiguousarray(a.T) for a in args)
                    extra = () if op.mapping == "term" or (op.mapping == "thread" and op.terms) else (R,)
                    with np.errstate(all="ignore"):
                        got = to_host(launchers[name](*[to_device(a) for a in args], *extra))
                        want = _twin(name)(*args, *extra)
                    if not _same(got, want):
                        bad.append(f"{name} {dtype} N={N} M={M} R={R}")
                    if op.renormalizes:  # the renormalizing instance: the twin, then the renormalization
                        with np.errstate(all="ignore"):
                            got = to_host(launchers[name](*[to_device(a) for a in args], R, renormalize=True))
                            want = dispatch.renormalizer("newton" if op.newton else "safe", backends.cpu)(want, R)
                        if not _same(got, want):
                            bad.append(f"{name} renormalizing {dtype} N={N} M={M} R={R}")
    for R in (2, 3, 8):
        x = random_terms((3, 700), R, "float64", seed=7)
        with np.errstate(all="ignore"):
            got = to_host(reduce(to_device(x.reshape(-1, R)), 3, 700, R))
            want = backends.cpu.reduce(x.reshape(-1, R), 3, 700, R)
        if not _same(got, want):
            bad.append(f"reduce_sum R={R}")
    for name in dw_kernels.KERNEL_ALGORITHMS:
        kinds = ALGORITHMS[name].operands
        for dtype in ("float64", "float32"):
            ops = [random_terms((COUNT,), 2, dtype, seed=i, same_sign=True) if k == "dw" else
                   random_terms((COUNT,), 1, dtype, seed=i, same_sign=True)[:, 0] for i, k in enumerate(kinds)]
            ops = [np.abs(a) if name.endswith("sqrt") else a for a in ops]
            with np.errstate(all="ignore"):
                got = to_host(dw_run(name, *[to_device(a) for a in ops]))
                hi, lo = getattr(dw_twins, name)(*columns(ops))
            if not _same(got, np.stack([hi, lo], axis=1)):
                bad.append(f"dw {name} {dtype}")
    for name, kind in (dw_kernels.library_algorithms().items() if dw_operation is not None else ()):
        for dtype in ("float64", "float32"):
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


def main() -> int:
    if not cuda.available():
        print("no CUDA GPU visible to CuPy")
        return 2
    import cupy  # optional dependency, present: a GPU was found

    bad = check_all(launch.LAUNCHERS, cupy.asarray, cupy.asnumpy, backends.cuda.reduce, dw_kernels.run,
                    dw_kernels.operation)
    print(f"{len(bad)} disagreements" + "".join(f"\n  {b}" for b in bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
