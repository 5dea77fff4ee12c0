"""The library's R = 2 operations on the GPU are one launch each (issue 13): ``dw_operation`` of
expansions/cuda/dw.cuh applies the double-word algorithm, the non-finite rule and the
renormalization in registers.  Checked without a GPU:

* ``renormalize_pair`` (the one-thread renormalization, twin in expansions/cpu/kernels.py) equals the
  library's ``renormalize(x, 2)`` bit for bit (a zero pair kept as it is, its signed zero), on
  adversarial pairs and on random ones (hypothesis);
* every ``dw_operation`` instance, compiled by g++ against the warp emulator (tests/emulation/emu.h),
  equals what the other backends run (the algorithm, the rule, then ``renormalize``:
  ``dispatch.run`` on the twins) bit for bit, NaN bits included, on random and special operands;
* the CUDA backend's dispatch of ``+ - * /`` and ``sqrt`` at R = 2 launches exactly one kernel, the
  right instance, and returns those bits (CuPy replaced by NumPy, the launch by the emulated kernel).
"""

from __future__ import annotations

import ctypes
import re
import shutil
import sys
import types

import numpy as np
import pytest
from helpers import emulated_library, examples
from hypothesis import given, settings
from hypothesis import strategies as st

from expansions import backends, dispatch
from expansions.cpu import kernels as twin
from expansions.cpu.eft import two_sum
from expansions.cuda import dw_kernels

UINT = {"float64": np.uint64, "float32": np.uint32}
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed to build the warp emulator")


def _bits_equal(got, want, dtype):
    return np.array_equal(np.asarray(got).view(UINT[dtype]), np.asarray(want).view(UINT[dtype]))


def renormalize_keeping_zeros(x):
    """What renormalize_pair stands for: the library's renormalize(x, 2), a zero pair kept as it is."""
    return dispatch._renormalize_keeping_zeros(backends.cpu, x, 2)


def _special_pairs(dtype):
    """(count, 2) pairs that stress the renormalization: overlapping, reversed, zeros of both signs,
    NaN and infinities in either word, values near overflow and in the subnormal range."""
    f = np.finfo(dtype)
    big, tiny, eps = f.max, f.smallest_subnormal, f.eps
    vals = [0.0, -0.0, 1.0, -1.0, 1.5, eps, -eps / 2, eps / 2, 3 * eps / 4, 1e-30, big, -big, big * eps,
            tiny, -tiny, 4 * tiny, f.tiny, np.inf, -np.inf, np.nan]
    v = np.array(vals, dtype=dtype)
    a, b = np.meshgrid(v, v, indexing="ij")
    return np.ascontiguousarray(np.stack([a.ravel(), b.ravel()], axis=1))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_renormalize_pair_equals_renormalize_on_special_pairs(dtype):
    x = _special_pairs(dtype)
    with np.errstate(all="ignore"):
        want = renormalize_keeping_zeros(x)
        hi, lo = twin.renormalize_pair(x[:, 0], x[:, 1])
    assert _bits_equal(np.stack([hi, lo], axis=1), want, dtype)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.tuples(st.floats(width=64), st.floats(width=64)), min_size=1, max_size=40))
def test_renormalize_pair_equals_renormalize_random(pairs):
    x = np.array(pairs, dtype=np.float64).reshape(-1, 2)
    with np.errstate(all="ignore"):
        want = renormalize_keeping_zeros(x)
        hi, lo = twin.renormalize_pair(x[:, 0], x[:, 1])
    assert _bits_equal(np.stack([hi, lo], axis=1), want, "float64")


def test_renormalize_pair_can_fail():
    """A renormalization without the sort and the non-finite epilogue (a bare 2Sum) differs from
    renormalize on the special pairs: the comparison above has teeth."""
    x = _special_pairs("float64")
    with np.errstate(all="ignore"):
        want = twin.renormalize(x, 2)
        mutant = np.stack(two_sum(x[:, 0], x[:, 1]), axis=1)
    assert not _bits_equal(mutant, want, "float64")


# ---------------------------------------------------------------------------------------------
# The kernels in the warp emulator


def _expr_parts(expr):
    m = re.fullmatch(r"expansions::dw_operation<(\w+), expansions::(\w+), (\d), (true|false), (true|false)>", expr)
    assert m, expr
    return m.groups()


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    """{instance expression: emulated entry point} for every ``dw_operation`` instance."""
    exprs = dw_kernels.operation_instances()
    lines = ['#include "emu.h"', dw_kernels.source()]
    for k, expr in enumerate(exprs):
        ct = _expr_parts(expr)[0]
        lines.append(f'extern "C" void emu_op{k}(const {ct}* x, const {ct}* y, {ct}* o, long long n) '
                     f"{{ emu::launch(2, 64, [=]{{ {expr}(x, y, o, n); }}); }}")
    for ct, dtype in (("double", "float64"), ("float", "float32")):  # the device function alone
        lines.append(f'extern "C" void emu_pair_{dtype}(const {ct}* x, const {ct}* y, {ct}* o, long long n) '
                     f"{{ for (long long i = 0; i < n; ++i) {{ const auto z = expansions::renormalize_pair<{ct}>("
                     f"{{x[2 * i], x[2 * i + 1]}}); o[2 * i] = z.hi; o[2 * i + 1] = z.lo; }} }}")
    lib = emulated_library("\n".join(lines) + "\n", tmp_path_factory.mktemp("emu_dw_operation"), "emu_dw_operation")
    out = {expr: getattr(lib, f"emu_op{k}") for k, expr in enumerate(exprs)}
    out.update({f"renormalize_pair {d}": getattr(lib, f"emu_pair_{d}") for d in ("float64", "float32")})
    return out


def _run_emulated(fn, x, y, out):
    p = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    fn(p(x), p(y), p(out), ctypes.c_longlong(x.shape[0]))


def _operands(op, dtype, seed):
    """Random double-words (both signs, exponents over a wide range, some zeros, a fifth of pairs that are
    ulp-nonoverlapping but not double words) followed by
    the special pairs against fixed partners: NaN, infinities, overflow, 0/0, sqrt of negatives."""
    rng = np.random.default_rng(seed)
    n = 300
    f = np.finfo(dtype)

    def dws(spread):
        hi = (rng.standard_normal(n) * np.exp2(rng.integers(-spread, spread, n))).astype(dtype)
        lo = (hi.astype(np.float64) * rng.uniform(-0.5, 0.5, n) * float(f.eps)).astype(dtype)
        a = np.stack([hi + lo, (hi - (hi + lo)) + lo], axis=1).astype(dtype)
        # a fifth not double words (ulp(hi)/2 < |lo| < ulp(hi)): the operations make them double words
        other = rng.random(n) < 0.2
        a[other, 1] = (np.spacing(np.abs(a[other, 0])) * rng.uniform(0.5, 1, int(other.sum()))).astype(dtype)
        a[rng.random(n) < 0.05] = 0
        return a

    x, y = dws(40), dws(40)
    if op in ("div", "sqrt"):  # a fifth near the underflow threshold, where the operations run scaled
        near = np.ldexp(1.0, int(f.minexp) + 20)
        x[: n // 5] = (x[: n // 5] * near).astype(dtype)
        y[: n // 10] = (y[: n // 10] * near).astype(dtype)
    if op == "sqrt":
        x[:, :] = np.where(x[:, :1] < 0, -x, x)
    sp = _special_pairs(dtype)
    if op in ("add", "sub"):
        big = float(f.max) / 4
        partner = [[1.5, 2.0**-60], [-big, -big * float(f.eps) / 4], [0.0, 0.0], [-0.0, 0.0]]
    else:
        # the twins emulate the FMA by Dekker's product, which may differ from it within a factor
        # 2**-52 of the overflow threshold and where the error falls below the smallest subnormal
        # (expansions.cpu.eft.two_prod): products, quotients and roots keep away from those ranges,
        # or overflow outright (2**e times 2**e, 2**e over 2**-e)
        finite = np.where(np.isfinite(sp), np.abs(sp), 1)
        sp = sp[((finite == 0) | ((finite >= 2.0**-60) & (finite <= 2.0**60))).all(axis=1)]
        e = 600 if dtype == "float64" else 70
        small = 2.0**-e
        over = np.array([[2.0**e, 2.0**(e - 60)], [-(2.0**e), 2.0**(e - 61)]], dtype=dtype)
        sp = np.concatenate([sp, over])
        partner = [[1.5, 2.0**-60], [-(2.0**30), -(2.0**-25)], [0.0, 0.0], [-0.0, 0.0], [2.0**e, 0.0],
                   [small, small * float(f.eps) / 4]]
    partner = np.array(partner, dtype=dtype)
    xs = np.concatenate([np.repeat(sp, len(partner), axis=0), np.tile(partner, (len(sp), 1))])
    ys = np.concatenate([np.tile(partner, (len(sp), 1)), np.repeat(sp, len(partner), axis=0)])
    if op == "div":  # 2**-e over 2**e underflows: not where the emulation is exact
        keep = ~((np.abs(xs[:, 0]) == small) & (np.abs(ys[:, 0]) == 2.0**e))
        xs, ys = xs[keep], ys[keep]
    return np.ascontiguousarray(np.concatenate([x, xs])), np.ascontiguousarray(np.concatenate([y, ys]))


def _library_cases():
    """(expression, op the dispatch names, algorithm, renormalize) of every instance."""
    ops = {"0": "add", "1": "mul", "2": "div", "3": "sqrt"}
    names = {dw_kernels.functor(n): n for n in dw_kernels.library_algorithms()}
    out = []
    for expr in dw_kernels.operation_instances():
        ct, fn, kind, neg, ren = _expr_parts(expr)
        op = "sub" if neg == "true" else ops[kind]
        out.append((expr, op, names[fn], ren == "true", "float64" if ct == "double" else "float32"))
    return out


@needs_gxx
@pytest.mark.parametrize("case", _library_cases(), ids=lambda c: c[0].removeprefix("expansions::dw_operation"))
def test_dw_operation_equals_the_twins_composition(emu, case):
    expr, op, alg, renormalize, dtype = case
    x, y = _operands(op, dtype, abs(hash(expr)) % 2**32)
    out = np.full_like(x, 7)
    _run_emulated(emu[expr], x, y, out)
    operands = (x, 2) if op == "sqrt" else (x, y, 2)
    with np.errstate(all="ignore"):
        want = dispatch.run(op, alg, backends.cpu, renormalize, *operands)
    bad = np.flatnonzero((out.view(UINT[dtype]) != want.view(UINT[dtype])).any(axis=1))
    assert bad.size == 0, (f"{bad.size} rows differ; first: x={x[bad[0]]} y={y[bad[0]]} got {out[bad[0]]} "
                           f"want {want[bad[0]]}")


@needs_gxx
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_renormalize_pair_kernel_equals_renormalize(emu, dtype):
    """The device function on any pair (not only the algorithms' normalized outputs): the special pairs
    and random unnormalized ones."""
    rng = np.random.default_rng(8)
    rand = (rng.standard_normal((500, 2)) * np.exp2(rng.integers(-60, 60, (500, 2)))).astype(dtype)
    x = np.ascontiguousarray(np.concatenate([_special_pairs(dtype), rand]))
    out = np.full_like(x, 7)
    _run_emulated(emu[f"renormalize_pair {dtype}"], x, x, out)
    with np.errstate(all="ignore"):
        want = renormalize_keeping_zeros(x)
    assert _bits_equal(out, want, dtype)


@needs_gxx
def test_the_emulated_comparison_can_fail(emu):
    """The renormalizing instance's bits are not the raw one's on the same data (zero signs, special
    operands): the comparison above tells the RENORMALIZE flag's instances apart."""
    x, y = _operands("div", "float64", 5)
    raw, ren = np.full_like(x, 7), np.full_like(x, 7)
    _run_emulated(emu[dw_kernels.operation_expression("dw_div_dw2", "float64", False, False)], x, y, raw)
    _run_emulated(emu[dw_kernels.operation_expression("dw_div_dw2", "float64", False, True)], x, y, ren)
    assert not _bits_equal(raw, ren, "float64")


# ---------------------------------------------------------------------------------------------
# The CUDA backend's dispatch: one launch, the right instance


@pytest.fixture
def fake_gpu(emu, monkeypatch):
    """CuPy replaced by NumPy, and dw_kernels' launch by the emulated kernel; records the launches."""
    record = []
    fake = types.SimpleNamespace(ascontiguousarray=np.ascontiguousarray, empty=np.empty)
    monkeypatch.setitem(sys.modules, "cupy", fake)

    def launch(expression, x, y, out, count):
        record.append(expression)
        _run_emulated(emu[expression], x, y, out)

    monkeypatch.setattr(dw_kernels, "_launch", launch)
    return record


@needs_gxx
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "sqrt"])
def test_cuda_dispatch_at_r2_is_one_launch(fake_gpu, op, dtype):
    x, y = _operands(op, dtype, 11)
    operands = (x, 2) if op == "sqrt" else (x, y, 2)
    alg = dispatch.method(op, "auto", 2)
    for renormalize in (True, False):
        fake_gpu.clear()
        fn, then = dispatch.operation(op, alg, backends.cuda, renormalize)
        assert then is None, "the CUDA backend renormalizes in the double-word kernel"
        got = fn(*operands)
        negate, ren = op == "sub", renormalize and op != "sqrt"
        assert fake_gpu == [dw_kernels.operation_expression(alg, dtype, negate, ren)]
        with np.errstate(all="ignore"):
            want = dispatch.run(op, alg, backends.cpu, renormalize, *operands)
        assert _bits_equal(got, want, dtype)


# ---------------------------------------------------------------------------------------------
# On a GPU


def _cupy_or_skip():
    cupy = pytest.importorskip("cupy")
    if not cupy.cuda.is_available():
        pytest.skip("no CUDA GPU visible to CuPy")
    return cupy


@pytest.mark.gpu
@pytest.mark.parametrize("case", _library_cases(), ids=lambda c: c[0].removeprefix("expansions::dw_operation"))
def test_dw_operation_on_gpu_equals_the_twins_composition(case):
    """Every instance on the GPU: the twins' composition, bit for bit, on about 10^5 random and special
    operands."""
    cupy = _cupy_or_skip()
    expr, op, alg, renormalize, dtype = case
    parts = [_operands(op, dtype, seed) for seed in range(300)]
    x = np.ascontiguousarray(np.concatenate([p[0] for p in parts]))
    y = np.ascontiguousarray(np.concatenate([p[1] for p in parts]))
    got = cupy.asnumpy(dw_kernels.operation(alg, cupy.asarray(x), None if op == "sqrt" else cupy.asarray(y),
                                            negate_y=op == "sub", renormalize=renormalize))
    operands = (x, 2) if op == "sqrt" else (x, y, 2)
    with np.errstate(all="ignore"):
        want = dispatch.run(op, alg, backends.cpu, renormalize, *operands)
    bad = np.flatnonzero((got.view(UINT[dtype]) != want.view(UINT[dtype])).any(axis=1))
    assert bad.size == 0, f"{bad.size} rows differ; first: x={x[bad[0]]} y={y[bad[0]]} got {got[bad[0]]} " \
                          f"want {want[bad[0]]}"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_public_operations_at_r2_on_gpu_equal_the_cpu(dtype):
    """x + y, x - y, x * y, x / y and sqrt(x) of ExpansionArrays with two terms on the GPU (one launch
    each) have the bits of the same operations on the CPU."""
    _cupy_or_skip()
    import expansions as ex

    x = ex.from_terms(_operands("add", dtype, 1)[0])
    y = ex.from_terms(_operands("add", dtype, 2)[1][: x.shape[0]])
    xd, yd = x.to_device("cuda"), y.to_device("cuda")
    with np.errstate(all="ignore"):
        for f in (lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / b,
                  lambda a, b: ex.sqrt(abs(a))):
            want, got = f(x, y), f(xd, yd).to_device("cpu")
            assert _bits_equal(got.terms, want.terms, dtype)
