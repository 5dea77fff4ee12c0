"""Dask arrays of expansions (expansions.dask): reductions bit-identical to the single-device result
whatever the chunking, the number of worker processes and the scheduler; clear errors for bad input;
a killed worker never gives wrong bits."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")

import expansions as ex  # noqa: E402
import expansions.dask as exd  # noqa: E402


def same(a, b) -> bool:
    return a.terms.shape == b.terms.shape and np.array_equal(a.terms.view(np.uint8), b.terms.view(np.uint8))


#: clusters of worker processes (and the killed worker, the process scheduler) are slow; the default
#: selection runs the reductions on the threads and synchronous schedulers (test_local_schedulers)
@pytest.fixture(scope="module", params=[pytest.param(n, marks=pytest.mark.slow) for n in (1, 2, 3)])
def client(request):
    with distributed.LocalCluster(n_workers=request.param, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=40) as cluster, \
            distributed.Client(cluster) as c:
        yield c


@pytest.mark.parametrize("R", [2, 4, 8])
def test_reductions_bit_identical_on_a_cluster(client, R):
    n = 301
    x = ex.random((n,), terms=R, seed=R)
    y = ex.random((n,), terms=R, seed=R + 1)
    A = ex.random((3, n), terms=R, seed=R + 2)
    B = ex.random((n, 2), terms=R, seed=R + 3)
    want = {"sum": ex.sum(x), "dot": ex.dot(x, y, method="elementwise"),
            "matmul": ex.matmul(A, B, method="elementwise"), "sum1": ex.sum(A, axis=1)}
    for chunks in (n, 64, 37):
        dx, dy = exd.from_array(x, chunks), exd.from_array(y, chunks)
        dA, dB = exd.from_array(A, (2, chunks)), exd.from_array(B, (chunks, 2))
        got = {"sum": exd.sum(dx), "dot": exd.dot(dx, dy), "matmul": dA @ dB, "sum1": dA.sum(axis=1)}
        for k, v in got.items():
            assert same(v.compute(), want[k]), (k, chunks)


@pytest.mark.parametrize("scheduler", ["threads", pytest.param("processes", marks=pytest.mark.slow), "synchronous"])
def test_local_schedulers(scheduler):
    """Sums, dot and matrix products in chunks give the one-device bits (of the element-wise products,
    which Dask's products are) on each local scheduler."""
    x, y = ex.random((200,), terms=3, seed=1), ex.random((200,), terms=3, seed=2)
    A, B = ex.random((3, 200), terms=3, seed=3), ex.random((200, 2), terms=3, seed=4)
    assert same(exd.sum(exd.from_array(x, 23)).compute(scheduler=scheduler), ex.sum(x))
    assert same(exd.dot(exd.from_array(x, 23), exd.from_array(y, 23)).compute(scheduler=scheduler),
                ex.dot(x, y, method="elementwise"))
    got = (exd.from_array(A, (2, 37)) @ exd.from_array(B, (37, 2))).compute(scheduler=scheduler)
    assert same(got, ex.matmul(A, B, method="elementwise"))  # Dask's products are element-wise


def test_elementwise_and_blockwise_functions():
    x = ex.random((50,), terms=4, seed=2, same_sign=True)
    dx = exd.from_array(x, 9)
    assert same((dx * dx + 1 - dx / 3).compute(), x * x + 1 - x / 3)
    assert same(abs(-dx).sqrt().compute(), ex.sqrt(abs(-x)))
    assert same(dx.map_blocks(lambda b: ex.renormalize(b * 2)).compute(), ex.renormalize(x * 2))
    r = exd.random((40, 6), terms=2, seed=9, chunks=(7, 4))
    assert same(r.compute(), exd.random((40, 6), terms=2, seed=9, chunks=(7, 4)).compute())  # reproducible


def test_from_floats_is_exact():
    a = np.random.default_rng(4).standard_normal(77)
    assert same(exd.from_floats(a, terms=3, chunks=10).compute(), ex.array(a, terms=3))
    f32 = exd.from_floats(a, terms=3, dtype="float32", chunks=10).compute()
    assert same(f32, ex.array(a, terms=3, dtype="float32"))


def test_npy_stack_round_trip(tmp_path):
    x = exd.random((30, 4), terms=3, seed=3, chunks=(8, 4))
    x.to_npy_stack(str(tmp_path / "x"))
    assert same(exd.from_npy_stack(str(tmp_path / "x")).compute(), x.compute())


def test_bad_input():
    import dask.array as da

    with pytest.raises(ValueError, match="term axis must be one chunk"):
        exd.ExpansionDaskArray(da.zeros((10, 4), chunks=(5, 2)))
    x2, x4 = exd.random((10,), terms=2, seed=1, chunks=5), exd.random((10,), terms=4, seed=1, chunks=5)
    with pytest.raises(ValueError, match="mixed formats"):
        exd.dot(x2, x4)
    with pytest.raises(ValueError, match="mixed formats"):
        exd.dot(x2, exd.random((10,), terms=2, dtype="float32", seed=1, chunks=5))
    with pytest.raises(ValueError, match="mismatched chunks"):
        exd.dot(x2, exd.random((10,), terms=2, seed=1, chunks=3))
    with pytest.raises(TypeError):
        exd.from_array(np.zeros(3))


@pytest.mark.slow
def test_a_killed_worker_never_gives_wrong_bits():
    """A worker process killed while the reduction runs: the computation either fails with Dask's
    error or is recomputed elsewhere, and then gives exactly the single-device bits."""
    x = ex.random((4000,), terms=4, seed=11)
    want = ex.sum(x)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=50) as cluster, distributed.Client(cluster) as c:
        dx = exd.from_array(x, 50).map_blocks(_slow_identity)
        fut = c.compute(exd.sum(dx).terms)
        time.sleep(1.0)
        pid = next(iter(c.run(os.getpid).values()))
        os.kill(pid, signal.SIGKILL)
        try:
            got = fut.result(timeout=120)
        except Exception as exc:  # Dask's error (KilledWorker, CommClosedError, ...): acceptable
            assert "expansions" not in type(exc).__module__
            return
        assert same(ex.ExpansionArray(got), want)


def _slow_identity(b):
    time.sleep(0.05)
    return b
