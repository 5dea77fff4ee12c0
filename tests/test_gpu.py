"""GPU kernels against their twins, bit for bit (design decision 4).  Needs a CUDA GPU visible to CuPy.

* Families of random and adversarial expansions, R in {2, 3, 4, 5, 8, 13, 16, 31, 32} and mixed
  input sizes, float64 and float32: every kernel returns the bits of its NumPy twin
  (:mod:`expansions.cpu.kernels`).
* Large scale: >= 10^6 expansions per (operation, R, dtype), the kernel against the same twin
  functions run on CuPy arrays (the twins are array-module generic).
* Counts 0, 1, 31, 33 and 10^6 + 7 (not a multiple of any group count), a non-default stream, input
  validation.

Where the twin and the kernel legitimately differ the inputs avoid it, and say so:
* float64 products: the twin's Dekker product equals 2ProdFMA unless the product error falls below
  the smallest subnormal, so float64 multiplication inputs have no term below 2**-450
  (``min_exponent``);
* CuPy compiles its own element-wise kernels with ``-ftz=true``, so the twin on CuPy flushes float32
  subnormals; the large-scale float32 inputs have no term below 2**-50 (no subnormal arises).

``tools/gpu_check.py`` runs this file and writes paper_repro/results/gpu_tests_<device>.json.
"""

from __future__ import annotations

import functools
import os

import numpy as np
import pytest

from expansions import cuda
from expansions.cpu import kernels as twin
from expansions.generate import random_terms
from expansions.testing import FAMILIES, family, skip_family

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        not cuda.available(), reason="no CUDA GPU visible to CuPy (expansions.cuda.available() is False)"
    ),
]

RS = (2, 3, 4, 5, 8, 13, 16, 31, 32)
DTYPES = ("float64", "float32")
BINARY = ("add_safe", "add_fast", "sub_safe", "sub_fast", "mul_truncated")
OPS = BINARY + ("renormalize", "negate")
MIXED = ((2, 4, 4), (4, 2, 8), (8, 8, 4), (1, 3, 2), (16, 8, 32), (32, 1, 4))
#: expansions per family and configuration in the twin comparisons
FAMILY_COUNT = int(os.environ.get("EXPANSIONS_GPU_FAMILY", 1024))
#: expansions per (operation, R, dtype) in the large-scale comparison
LARGE_COUNT = int(os.environ.get("EXPANSIONS_GPU_LARGE", 10**6 + 7))
UINT = {np.dtype(np.float64): np.uint64, np.dtype(np.float32): np.uint32}


def _cp():
    import cupy

    return cupy


def _launch():
    from expansions.cuda import launch

    return launch


def _all_instances():
    from expansions.cuda import build

    out = []
    for dtype in DTYPES:
        for R in RS:
            out += [build.instance(op, dtype, R) for op in OPS]
        for N, M, R in MIXED:
            out += [build.instance(op, dtype, R, N, M) for op in BINARY]
            out.append(build.instance("renormalize", dtype, R, N))
        for N, M, R in [(R, R, R) for R in RS] + list(MIXED):
            out += [build.instance(op, dtype, R, N, M, renormalize=True) for op in BINARY]
    return out


@pytest.fixture(scope="module", autouse=True)
def compiled_kernels():
    """Compile every instance this module uses in one go (parallel NVRTC programs, disk cache)."""
    from expansions.cuda import build

    build.kernels(*_all_instances())


def _call(module, op, x, y, R):
    """``op`` of ``module`` (the launchers or the twins) with the twins' signature."""
    f = getattr(module, op)
    if op == "negate":
        return f(x)
    if op == "renormalize":
        return f(x, R)
    return f(x, y, R)


def _gpu(op, x, y, R):
    """The kernel on host arrays; returns a host array."""
    cp = _cp()
    return cp.asnumpy(_call(_launch(), op, cp.asarray(x), None if y is None else cp.asarray(y), R))


def _twin(op, x, y, R):
    return _call(twin, op, x, y, R)


def _assert_same_bits(got, ref, x, y, what):
    assert got.shape == ref.shape and got.dtype == ref.dtype, what
    u = UINT[ref.dtype]
    same = got.view(u) == ref.view(u)
    if same.all():
        return
    rows = np.nonzero(~same.all(axis=1))[0]
    lines = [f"{what}: {len(rows)} of {len(ref)} expansions differ; first ones:"]
    for r in rows[:4]:
        lines += [f"  row {r}", f"    x   = {x[r].tolist()}"]
        if y is not None:
            lines.append(f"    y   = {y[r].tolist()}")
        lines += [f"    twin = {ref[r].tolist()}", f"    gpu  = {got[r].tolist()}"]
    pytest.fail("\n".join(lines))


# ---------------------------------------------------------------------------------------------
# input families (expansions.testing: the GPU runbook's bitexact part draws the same ones)


def _check_families(op, dtype, n, m, R, record_property, seed):
    total = 0
    for k, name in enumerate(FAMILIES):
        if skip_family(name, op, dtype):
            continue
        x, y = family(name, op, dtype, n, m, R, FAMILY_COUNT, seed + 1000 * k)
        x = np.ascontiguousarray(x)
        y = np.ascontiguousarray(y)
        got = _gpu(op, x, y, R)
        ref = _twin(op, x, y, R)
        _assert_same_bits(got, ref, x, y, f"{op} {dtype} N={n} M={m} R={R} family={name}")
        total += len(x)
    record_property("expansions", total)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", RS)
@pytest.mark.parametrize("op", OPS)
def test_kernel_equals_numpy_twin(op, R, dtype, record_property):
    _check_families(op, dtype, R, R, R, record_property, seed=R * 7919 + OPS.index(op))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sizes", MIXED, ids=lambda s: "N{}-M{}-R{}".format(*s))
@pytest.mark.parametrize("op", BINARY + ("renormalize",))
def test_mixed_sizes_equal_numpy_twin(op, sizes, dtype, record_property):
    N, M, R = sizes
    _check_families(op, dtype, N, M, R, record_property, seed=N * 101 + M * 11 + R)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sizes", [(R, R, R) for R in RS] + list(MIXED), ids=lambda s: "N{}-M{}-R{}".format(*s))
@pytest.mark.parametrize("op", BINARY)
def test_renormalizing_kernel_equals_twin_then_renormalize(op, sizes, dtype, record_property):
    """One launch per operation: ``renormalize=True`` (the operation and the renormalization in one
    kernel) gives the bits of the twin followed by the twins' renormalization, and of the two
    launches (the operation, then ``renormalize``) the library made before."""
    cp = _cp()
    launch = _launch()
    N, M, R = sizes
    total = 0
    for k, name in enumerate(FAMILIES):
        if skip_family(name, op, dtype):
            continue
        x, y = family(name, op, dtype, N, M, R, FAMILY_COUNT, N * 37 + M * 5 + R + 1000 * k)
        x, y = np.ascontiguousarray(x), np.ascontiguousarray(y)
        xd, yd = cp.asarray(x), cp.asarray(y)
        one = cp.asnumpy(getattr(launch, op)(xd, yd, R, renormalize=True))
        two = cp.asnumpy(launch.renormalize(getattr(launch, op)(xd, yd, R), R))
        ref = twin.renormalize(_twin(op, x, y, R), R)
        _assert_same_bits(one, ref, x, y, f"{op} renormalizing {dtype} N={N} M={M} R={R} family={name} vs twin")
        _assert_same_bits(one, two, x, y, f"{op} renormalizing {dtype} N={N} M={M} R={R} family={name} vs two launches")
        total += len(x)
    record_property("expansions", total)


@pytest.mark.parametrize("count", [0, 1, 31, 33])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", [2, 3, 8, 32])
@pytest.mark.parametrize("op", OPS)
def test_small_counts(op, R, dtype, count, record_property):
    x, y = family("random", op, dtype, R, R, R, count, seed=count + R)
    got = _gpu(op, x, y, R)
    assert got.shape == (count, R)
    _assert_same_bits(got, _twin(op, x, y, R), x, y, f"{op} {dtype} R={R} count={count}")
    record_property("expansions", count)


# ---------------------------------------------------------------------------------------------
# large scale: kernel vs the twin run on CuPy


@functools.lru_cache(maxsize=1)
def _large_inputs(dtype, R):
    """>= 10^6 random expansions on the GPU, x and y, plus a float64 variant safe for products."""
    cp = _cp()
    min_exp = -50 if dtype == "float32" else None
    x = random_terms(LARGE_COUNT, R, dtype, seed=R, min_exponent=min_exp, p_zero=0.05)
    y = random_terms(LARGE_COUNT, R, dtype, seed=R + 1, min_exponent=min_exp, p_zero=0.05)
    if dtype == "float64":
        xm = np.where(np.abs(x) < 2.0**-450, 0.0, x)
        ym = np.where(np.abs(y) < 2.0**-450, 0.0, y)
    else:
        xm, ym = x, y
    return cp.asarray(x), cp.asarray(y), cp.asarray(xm), cp.asarray(ym)


LARGE_CASES = [(dtype, R, op) for dtype in DTYPES for R in RS for op in OPS]


@pytest.mark.parametrize("dtype,R,op", LARGE_CASES, ids=lambda v: str(v))
def test_large_scale_equals_cupy_twin(dtype, R, op, record_property):
    cp = _cp()
    x, y, xm, ym = _large_inputs(dtype, R)
    if op == "mul_truncated":
        x, y = xm, ym
    got = _call(_launch(), op, x, y, R)
    ref = _twin(op, x, y, R)
    assert isinstance(ref, cp.ndarray), "the twin did not run on CuPy"
    u = UINT[np.dtype(dtype)]
    differ = ~(got.view(u) == ref.view(u)).all(axis=1)
    n_differ = int(differ.sum())
    if n_differ:
        rows = cp.asnumpy(cp.nonzero(differ)[0][:4])
        _assert_same_bits(
            cp.asnumpy(got[rows]),
            cp.asnumpy(ref[rows]),
            cp.asnumpy(x[rows]),
            None if op in ("negate", "renormalize") else cp.asnumpy(y[rows]),
            f"large scale {op} {dtype} R={R}: {n_differ} of {len(x)} differ",
        )
    record_property("expansions", len(x))


# ---------------------------------------------------------------------------------------------
# launch behaviour


def test_runs_on_the_current_stream(record_property):
    cp = _cp()
    launch = _launch()
    x, y = family("random", "add_safe", "float64", 8, 8, 8, 5000, seed=3)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        xd, yd = cp.asarray(x), cp.asarray(y)
        out = launch.add_safe(xd, yd, 8)
        host = cp.asnumpy(out, stream=stream)
    stream.synchronize()
    _assert_same_bits(host, twin.add_safe(x, y, 8), x, y, "add_safe on a non-default stream")
    record_property("expansions", len(x))


def test_input_validation():
    cp = _cp()
    launch = _launch()
    a = cp.zeros((3, 4))
    with pytest.raises(TypeError, match="CuPy array"):
        launch.add_safe(np.zeros((3, 4)), a, 4)
    with pytest.raises(TypeError, match="same dtype"):
        launch.add_safe(a, cp.zeros((3, 4), cp.float32), 4)
    with pytest.raises(ValueError, match="as many expansions"):
        launch.add_fast(a, cp.zeros((2, 4)), 4)
    with pytest.raises(ValueError, match="C-contiguous"):
        launch.mul_truncated(cp.zeros((3, 8))[:, ::2], a, 4)
    with pytest.raises(ValueError, match="2-D"):
        launch.negate(cp.zeros(4))
    with pytest.raises(TypeError, match="float64 or float32"):
        launch.renormalize(cp.zeros((3, 4), cp.int32), 4)
    with pytest.raises(ValueError, match="1..32 terms"):
        launch.renormalize(cp.zeros((3, 33)), 4)
    with pytest.raises(ValueError, match="2..32"):
        launch.sub_safe(a, a, 33)


def test_expansion_array_on_the_gpu():
    """The array type on the GPU: construction, allocation, transfers, arithmetic dispatched to the
    kernels, comparisons, and the same bits as on the CPU."""
    import cupy

    import expansions as ex

    for dtype in ("float64", "float32"):
        a = ex.random((1000,), terms=4, dtype=dtype, seed=1)
        b = ex.random((1000,), terms=4, dtype=dtype, seed=2)
        ga, gb = a.to_device("cuda"), b.to_device("cuda")
        assert ga.device == "cuda" and isinstance(ga.terms, cupy.ndarray)
        for f in (lambda u, v: u + v, lambda u, v: u - v, lambda u, v: u * v,
                  lambda u, v: ex.add(u, v, method="fast"), lambda u, v: -u, lambda u, v: abs(u)):
            got = f(ga, gb).to_device("cpu").terms
            want = f(a, b).terms
            assert np.array_equal(got.view(np.uint8), want.view(np.uint8))
        assert np.array_equal(cupy.asnumpy(ga < gb), a < b) and np.array_equal(cupy.asnumpy(ga == ga), a == a)
        assert ex.zeros(3, terms=2, dtype=dtype, device="cuda").device == "cuda"
        g = ex.array("0.1", terms=3, dtype=dtype, device="cuda")
        assert g.to_device("cpu") == ex.array("0.1", terms=3, dtype=dtype)
        t = cupy.zeros((5, 3), dtype=dtype)
        assert ex.from_terms(t).terms is t
