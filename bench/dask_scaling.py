"""Dask scaling of a reproducible dot product: 1 against 2 worker processes, and Dask's overhead.

    python -m bench.dask_scaling [--n 10000000] [--terms 4] [--chunks 8] [--repeats 3] [--quick]

Times ``expansions.dask.dot`` of two n-element R-term float64 arrays (random expansions, the data
generated once in the parent and scattered, so generation is not timed) on a
``distributed.LocalCluster`` with 1 and with 2 worker processes (one Dask thread each, and
``--engine-threads`` threads of the compiled CPU engine in each worker, default 1, so that the
workers, not the engine's own threads, use the cores), and ``expansions.dot`` on the same data in
this process, with the engine on the same number of threads as one worker and on all threads;
checks that all results have the same bits.  Writes bench/results/dask_scaling_<device>.md and
.json (raw timings, machine, versions).
Goals (issue 18): 2 workers >= 1.7x faster than 1 on a 2-core machine; Dask with 1 worker at most
15 % slower than the single-device call.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import expansions as ex
import expansions.dask as exd
from expansions import engine
from expansions.__main__ import device_slug, environment

RESULTS = Path(__file__).resolve().parent / "results"


def _time(f, repeats):
    """One untimed call (compiles the engine, warms the workers), then ``repeats`` timed calls."""
    f()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        r = f()
        out.append(time.perf_counter() - t0)
    return out, r


def main(argv=None) -> int:
    import distributed  # optional dependency (the dask extra)

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10**7)
    ap.add_argument("--terms", type=int, default=4)
    ap.add_argument("--chunks", type=int, default=8, help="number of chunks")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--engine-threads", type=int, default=1,
                    help="threads of the compiled CPU engine in each worker and in the single-device call")
    ap.add_argument("--quick", action="store_true", help="n = 10^5, one repeat (a smoke run, not the figure)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    n, R = (10**5, args.terms) if args.quick else (args.n, args.terms)
    repeats = 1 if args.quick else args.repeats
    x = ex.random((n,), terms=R, seed=1)
    y = ex.random((n,), terms=R, seed=2)
    numba = None
    if engine.available():
        import numba  # the engine's compiler (available() checked that it imports)

    if numba is not None:
        all_threads = numba.config.NUMBA_NUM_THREADS
        numba.set_num_threads(all_threads)
        single_all, want_all = _time(lambda: ex.dot(x, y), repeats)
        numba.set_num_threads(min(args.engine_threads, all_threads))
    else:
        all_threads, single_all = 1, None
    single, want = _time(lambda: ex.dot(x, y), repeats)
    rec = {"n": n, "R": R, "chunks": args.chunks, "repeats": repeats, "engine_threads": args.engine_threads,
           "engine": numba is not None, "all_threads": all_threads, "single_device_s": single,
           "single_device_all_threads_s": single_all}
    same = single_all is None or bool(np.array_equal(want_all.terms, want.terms))
    for workers in (1, 2):
        with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                      dashboard_address=":0", silence_logs=40,
                                      env={"NUMBA_NUM_THREADS": str(args.engine_threads)}) as cluster, \
                distributed.Client(cluster) as client:
            size = -(-n // args.chunks)
            tx = client.scatter([x.terms[i:i + size] for i in range(0, n, size)], broadcast=False)
            ty = client.scatter([y.terms[i:i + size] for i in range(0, n, size)], broadcast=False)
            import dask.array as da  # optional dependency (the dask extra)

            dx = exd.ExpansionDaskArray(da.concatenate([da.from_delayed(t, (min(size, n - i * size), R), x.dtype)
                                                        for i, t in enumerate(tx)]))
            dy = exd.ExpansionDaskArray(da.concatenate([da.from_delayed(t, (min(size, n - i * size), R), y.dtype)
                                                        for i, t in enumerate(ty)]))
            secs, got = _time(lambda dx=dx, dy=dy: exd.dot(dx, dy).compute(), repeats)
            same &= bool(np.array_equal(got.terms, want.terms))
            rec[f"workers_{workers}_s"] = secs
    t1, t2, t0 = (statistics.median(rec[k]) for k in ("workers_1_s", "workers_2_s", "single_device_s"))
    rec.update(speedup_2_over_1=t1 / t2, overhead_1_worker=t1 / t0 - 1, same_bits=same, environment=environment())
    command = "python -m bench.dask_scaling " + " ".join(argv if argv is not None else sys.argv[1:])
    cpu = "the compiled engine" if numba is not None else "the NumPy twins (numba absent)"
    lines = [f"# Dask scaling of expansions.dask.dot (n = {n}, R = {R}, {args.chunks} chunks)", "",
             f"Command: `{command.strip()}`; median of {repeats}; machine {rec['environment']['processor']}, "
             f"{os.cpu_count()} cores, commit {rec['environment']['commit']}. CPU backend: {cpu}, "
             f"{args.engine_threads} thread(s) in each worker and in the single-device row.", "",
             "| run | seconds (median) | goal |", "| --- | --- | --- |"]
    if single_all is not None:
        lines.append(f"| expansions.dot, one process, engine on all {all_threads} threads | "
                     f"{statistics.median(single_all):.3f} | |")
    lines += [f"| expansions.dot, one process, {args.engine_threads} engine thread(s) | {t0:.3f} | |",
             f"| dask, 1 worker process | {t1:.3f} | overhead {100 * (t1 / t0 - 1):.1f} % (goal <= 15 %: "
             f"{'met' if t1 / t0 - 1 <= 0.15 else 'not met'}) |",
             f"| dask, 2 worker processes | {t2:.3f} | speed-up {t1 / t2:.2f}x (goal >= 1.7x: "
             f"{'met' if t1 / t2 >= 1.7 else 'not met'}) |", "",
             f"All results have the same bits: {same}."]
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"dask_scaling_{device_slug()}{'_quick' if args.quick else ''}"
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    stem.with_suffix(".json").write_text(json.dumps(rec, indent=1, default=str) + "\n")
    print("\n".join(lines))
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
