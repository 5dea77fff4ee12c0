"""One kernel launch per operation on the CUDA backend, counted without a GPU.

The launcher layer (:mod:`expansions.cuda.launch`) runs against a stand-in for CuPy: device arrays
are NumPy arrays of a subclass with a ``device``, and ``build.kernels`` hands out recording kernels
that compute their instance's result with the twins (the renormalizing instance: the twin, then the
twins' renormalization).  So this checks what the library asks the GPU for (which instances, how
many launches) and that the dispatch returns what it returned with two launches; the kernels' own
bits are checked in the warp emulator (tests/test_cuda_emulated.py) and on a GPU (tests/test_gpu.py).
"""

from __future__ import annotations

import types

import numpy as np
import pytest

from expansions import backends, dispatch
from expansions.cpu import kernels as twin
from expansions.cpu import newton as newton_twin
from expansions.cuda import build, launch
from expansions.generate import random_terms


class DeviceArray(np.ndarray):
    """A NumPy array standing in for a CuPy array on device 0."""

    @property
    def device(self):
        return types.SimpleNamespace(id=0)


def on_device(a):
    return np.ascontiguousarray(a).view(DeviceArray)


def _twin_result(inst, arrays):
    info = build.OPERATIONS[inst.op]
    ops = [np.asarray(a) for a in arrays]
    if info.newton:
        raw = getattr(newton_twin, inst.op.removeprefix("newton_"))(*ops, inst.R)
    elif inst.op == "renormalize":
        raw = twin.renormalize(ops[0], inst.R)
    else:
        raw = getattr(twin, inst.op)(*ops, inst.R)
    if inst.renormalize:
        alg = "newton" if info.newton else "safe"
        raw = dispatch.renormalizer(alg, backends.cpu)(raw, inst.R)
    return raw


@pytest.fixture
def launches(monkeypatch):
    """The instances launched, in order, with CuPy and the compiled kernels replaced."""
    record = []
    fake = types.SimpleNamespace(
        ndarray=DeviceArray,
        empty=lambda shape, dtype: np.empty(shape, dtype).view(DeviceArray),
        cuda=types.SimpleNamespace(Device=lambda *a: types.SimpleNamespace(id=0)),
    )

    def kernels(*instances):
        def make(inst):
            def kernel(grid, block, args):
                *arrays, out, count = args
                record.append(inst)
                with np.errstate(all="ignore"):
                    out[...] = _twin_result(inst, arrays)
            return kernel
        return [make(i) for i in instances]

    monkeypatch.setattr(launch, "_cupy", lambda: fake)
    monkeypatch.setattr(launch, "_max_blocks", lambda device_id: 4)
    monkeypatch.setattr(build, "kernels", kernels)
    return record


CASES = [("add", "safe"), ("sub", "safe"), ("add", "fast"), ("sub", "fast"), ("mul", "truncated"),
         ("div", "newton"), ("sqrt", "newton"), ("reciprocal", "reciprocal")]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("R", [3, 4])
@pytest.mark.parametrize("op,alg", CASES)
def test_one_launch_per_operation(launches, op, alg, R, dtype):
    x = random_terms((40,), R, dtype, seed=1)
    y = random_terms((40,), R, dtype, seed=2)
    if op == "sqrt":
        x = np.abs(x[:, :1]) * np.sign(x)  # positive radicands
    operands = (x, R) if op in ("sqrt", "reciprocal") else (x, y, R)
    for renormalize in (True, False):
        launches.clear()
        fn, then = dispatch.operation(op, alg, backends.cuda, renormalize)
        assert then is None, "the CUDA backend renormalizes in the operation's kernel"
        got = fn(*[on_device(a) if isinstance(a, np.ndarray) else a for a in operands])
        assert len(launches) == 1, [i.name_expression for i in launches]
        assert launches[0].renormalize is renormalize
        with np.errstate(all="ignore"):
            want = dispatch.run(op, alg, backends.cpu, renormalize, *operands)  # two calls on the twins
        np.testing.assert_array_equal(np.asarray(got).view(np.uint8), want.view(np.uint8))


def test_one_term_divisor_is_one_launch(launches):
    x = random_terms((33,), 4, "float64", seed=3)
    y = random_terms((33,), 1, "float64", seed=4)
    fn, then = dispatch.operation("div", "newton", backends.cuda)
    fn(on_device(x), on_device(y), 4)
    assert then is None and [(i.op, i.M, i.renormalize) for i in launches] == [("newton_div", 1, True)]


def test_the_twins_backend_still_composes():
    """On the CPU the specification runs as it stands: the kernel, then renormalize (a second call)."""
    for be in (backends.cpu,):
        fn, then = dispatch.operation("add", "safe", be)
        assert fn is be.add_safe and then is be.renormalize
        assert dispatch.operation("add", "safe", be, renormalize=False) == (be.add_safe, None)
        assert dispatch.operation("sqrt", "dw_sqrt", be)[1] is None  # the double-word sqrt is not renormalized


def test_the_launch_count_can_fail(launches):
    """The counter sees a composed path: the raw kernel, then renormalize, is two launches."""
    x = on_device(random_terms((8,), 4, "float64", seed=5))
    launch.renormalize(launch.add_safe(x, x, 4), 4)
    assert [i.op for i in launches] == ["add_safe", "renormalize"]
