"""The CUDA kernel of a traced program: it compiles with NVRTC for sm_90 (no GPU needed), and run in
the warp emulator (g++ on the kernel's own source, tests/emulation/emu.h) it gives the bits of the
fused CPU program, which tests/test_fuse.py shows equal to op by op.  On a GPU, the same through CuPy.
"""

from __future__ import annotations

import ctypes
import hashlib
import shutil

import numpy as np
import pytest
from helpers import emulated_library, examples
from hypothesis import HealthCheck, assume, given, settings
from test_fuse import assert_same, interpret, programs, terms_of

import expansions as ex
from expansions.programs import Program
from expansions.programs import cuda as C
from expansions.programs.trace import FuseError

CTYPES = {np.dtype(np.float64): "double", np.dtype(np.float32): "float", np.dtype(bool): "bool"}


def fma_truncated(x, y, z):
    return ex.mul(x, y, method="truncated") + z


def fma_default(x, y, z):  # at R = 2 the double-word algorithms
    return x * y + z, ex.add(x, z, method="qd_add_ieee" if x.nterms == 2 else "fast", renormalize=False) - y


def horner(x):
    acc = x * 0.75
    for c in (1.0, -0.5, 0.25, 3.0):
        acc = acc * x + c
    return acc


def mixed(x, y, c):
    w = ex.add(x, y, method="fast") - 0.5
    big = abs(w) > y
    return ex.where(big, ex.sqrt(abs(w)), -w / y), big, ex.where(c, 1 / x, ex.sub(x, y, renormalize=False))


def henon(x, y):
    return 1 - ex.mul(1.375 * x, x, method="truncated") + y, 0.3125 * x


def graph_of(fn, *args):
    graph, (_, items) = Program(fn).trace(*args)
    return graph, list(range(len(graph.nodes))), [i for kind, i in items if kind == "node"]


def _nvrtc_or_skip():
    try:
        from cupy.cuda import nvrtc  # noqa: F401  optional: NVRTC comes with CuPy

        from expansions.cuda import build

        build.nvrtc_version()
    except Exception as exc:
        pytest.skip(f"CuPy NVRTC unavailable ({type(exc).__name__}: {exc})")


@pytest.mark.slow  # NVRTC compiles each program's kernel
def test_program_kernels_compile_for_sm90():
    _nvrtc_or_skip()
    x = ex.from_terms(terms_of((3,), 4, "float64", "random", 1))
    graph, wanted, outs = graph_of(fma_truncated, x, x, x)
    binary, lowered, log = C.compile_program(graph, wanted, outs)
    assert binary and "program_" in lowered
    assert "spill stores" in log and " 0 bytes spill stores" in log
    assert C.compile_program(graph, wanted, outs, layouts=(("strided", "one", "full"), 2))[0]  # broadcasting
    f32 = ex.from_terms(terms_of((3,), 3, "float32", "random", 2))
    graph, wanted, outs = graph_of(mixed, f32, f32, np.ones(3, dtype=bool))
    binary, lowered, _ = C.compile_program(graph, wanted, outs)
    assert binary
    dw = ex.from_terms(terms_of((3,), 2, "float64", "random", 3))
    graph, wanted, outs = graph_of(fma_default, dw, dw, dw)  # the double-word algorithms of dw.cuh
    assert C.compile_program(graph, wanted, outs)[0]
    graph, wanted, outs = graph_of(negative_powers, f32)  # x ** -n: the scaled rows under warp_any
    binary, _, log = C.compile_program(graph, wanted, outs)
    assert binary and " 0 bytes spill stores" in log


def test_what_a_cuda_program_refuses_names_the_line():
    x = ex.from_terms(terms_of((3,), 2, "float64", "random", 1))
    graph, wanted, outs = graph_of(lambda a, b: ex.mul(a, b, terms=3) + a, x, x)
    with pytest.raises(FuseError, match=r"`mul` at .*terms=3.*one format"):
        C.kernel_source(graph, wanted, outs)
    y = ex.from_terms(terms_of((3,), 4, "float64", "random", 1))
    graph, wanted, outs = graph_of(lambda a, b: ex.mul(a, b, method="truncated"), x, y)
    with pytest.raises(FuseError, match="one format"):
        C.kernel_source(graph, wanted, outs)
    z = ex.from_terms(terms_of((3,), 32, "float64", "random", 1))
    graph, wanted, outs = graph_of(lambda a: a < 1, z)
    with pytest.raises(FuseError, match="2R = 64"):
        C.kernel_source(graph, wanted, outs)


# -- the warp emulator ----------------------------------------------------------------------------


class Emulator:
    """``launch`` for :class:`expansions.programs.cuda.KernelPlan`: g++ builds the program's source
    with the emulator and a C entry point that unpacks the arrays, and runs it on (grid, block)."""

    def __init__(self, grid=3, block=64):
        self.grid, self.block = grid, block
        self.libs = {}

    def launch(self, name, text, params, count):
        args = [f"n[{j}]" if isinstance(a, int) else f"({CTYPES[a.dtype]}*)p[{j}]" for j, a in enumerate(params)]
        entry = (f'extern "C" void run(void** p, long long* n, long long count, unsigned g, unsigned b) '
                 f'{{ emu::launch(g, b, [=]{{ {name}({", ".join(args + ["count"])}); }}); }}\n')
        code = '#include "emu.h"\n' + C.full_source(text) + entry
        key = hashlib.sha256(code.encode()).hexdigest()[:16]
        if key not in self.libs:
            self.libs[key] = emulated_library(code, name="fuse")
        ptrs = (ctypes.c_void_p * len(params))(*[None if isinstance(a, int) else a.ctypes.data for a in params])
        ns = (ctypes.c_longlong * len(params))(*[a if isinstance(a, int) else 0 for a in params])
        self.libs[key].run(ptrs, ns, ctypes.c_longlong(count), ctypes.c_uint(self.grid), ctypes.c_uint(self.block))


@pytest.fixture(scope="module")
def emulator():
    if shutil.which("g++") is None:
        pytest.skip("g++ is needed to build the warp emulator")
    return Emulator()


def emulated(fn, emulator, *args):
    program = Program(fn)
    graph, (many, items) = program.trace(*args)
    plan = C.KernelPlan(graph, tuple(items), "cpu", emulator.launch)
    out = plan(args)
    return tuple(out) if many == "tuple" else out[0]


@pytest.mark.parametrize("R, dtype", [(2, "float64"), (2, "float32"), (3, "float64"),
                                      *(pytest.param(*c, marks=pytest.mark.slow)
                                        for c in ((4, "float64"), (8, "float32"), (16, "float64")))])
def test_emulated_program_kernels_equal_the_cpu(emulator, R, dtype):
    fams = ("random", "verify", "nonfinite", "overflow", "zeros")
    x = ex.from_terms(np.concatenate([terms_of((7,), R, dtype, f, R + k) for k, f in enumerate(fams)]))
    y = ex.from_terms(np.concatenate([terms_of((7,), R, dtype, f, 2 * R + k) for k, f in enumerate(fams[::-1])]))
    z = ex.from_terms(terms_of((1,), R, dtype, "random", 3))
    c = np.arange(35) % 3 == 0
    cases = [(fma_truncated, (x, y, z)), (horner, (x,)), (henon, (x, y)), (fma_default, (x, y, z))]
    if 2 * R <= 32:
        cases.append((mixed, (x, y, c)))
    for fn, args in cases:
        assert_same(emulated(fn, emulator, *args), ex.fuse(fn)(*args))


def negative_powers(x):
    return x ** -1, x ** -2 + 1.0, x ** -3, x ** -7


@pytest.mark.parametrize("R, dtype", [(2, "float64"), (3, "float32"), (4, "float64")])
def test_emulated_negative_powers_near_the_range_ends(emulator, R, dtype):
    """``x ** -n`` where x^n leaves the range (the scaled rows of elementwise.power_finish, under
    warp_any in the kernel) and where it does not, with the signs of zero and infinite results: the
    kernel's bits are the CPU program's, which are op by op's."""
    fmt = ex.formats.format_of(dtype)
    rng = np.random.default_rng(R)
    lead = np.concatenate([rng.uniform(0.5, 2, 6), [2.0 ** (fmt.emin // 2 + 3), -(2.0 ** (fmt.emin // 3)),
                           2.0 ** (fmt.emax // 2 + 2), -(2.0 ** (fmt.emax // 3)), 2.0 ** fmt.emin, 0.0, -0.0,
                           np.inf, -np.inf, np.nan, 2.0 ** (fmt.emin // 5), -(2.0 ** (fmt.emax // 7 + 1))]])
    with np.errstate(all="ignore"):
        lead = lead.astype(dtype)
        tail = (lead * rng.uniform(-1, 1, lead.size) * 2.0 ** -(fmt.p + 1)).astype(dtype)
    x = ex.array(lead, dtype=dtype, terms=R) + ex.array(np.where(np.isfinite(lead), tail, 0), dtype=dtype, terms=R)
    want = negative_powers(x)
    assert_same(ex.fuse(negative_powers)(x), want)
    assert_same(emulated(negative_powers, emulator, x), want)


def test_emulated_shapes_and_one_term_divisor(emulator):
    x = ex.from_terms(terms_of((2, 1), 4, "float64", "random", 1))
    y = ex.from_terms(terms_of((3,), 4, "float64", "random", 2))
    a = np.array([3.0, -0.5, 7.0])

    def fn(x, y, a):
        return x / a, ex.mul(x, y, method="truncated"), y * y

    assert_same(emulated(fn, emulator, x, y, a), ex.fuse(fn)(x, y, a))
    e = ex.from_terms(terms_of((0,), 4, "float64", "random", 3))
    assert_same(emulated(fn, emulator, x, e, a), ex.fuse(fn)(x, e, a))


@pytest.mark.slow  # g++ builds each random program's kernel
@settings(max_examples=examples(25), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                 HealthCheck.function_scoped_fixture])
@given(programs())
def test_emulated_random_programs(emulator, prog):
    """Random programs of one format (test_fuse's generator, R <= 8) as kernels in the emulator."""
    R, dtype, shapes, fams, steps, n_out, seed = prog
    assume(R <= 8 and all(opt[2] is None for op, _, _, _, opt in steps if op in ("add", "sub", "mul", "div")))
    args = [ex.from_terms(terms_of(s, R, dtype, f, seed + k)) for k, (s, f) in enumerate(zip(shapes, fams))]
    fn = interpret(steps, n_out)
    try:
        want = ex.fuse(fn)(*args)
    except (ValueError, FuseError):  # shapes that do not broadcast, a method at another R
        assume(False)
    assert_same(emulated(fn, emulator, *args), want)


@pytest.mark.gpu
def test_gpu_program_equals_the_cpu():
    from expansions import cuda

    if not cuda.available():
        pytest.skip("no CUDA GPU visible to CuPy")
    R = 4
    x = ex.from_terms(terms_of((1000,), R, "float64", "random", 1))
    y = ex.from_terms(terms_of((1000,), R, "float64", "verify", 2))
    for fn, args in [(fma_truncated, (x, y, y)), (horner, (x,)), (mixed, (x, y, np.arange(1000) % 2 == 0))]:
        want = ex.fuse(fn)(*args)
        gpu_args = [a.to_device("cuda") if isinstance(a, ex.ExpansionArray) else a for a in args]
        if fn is mixed:
            import cupy  # optional: present where a GPU is

            gpu_args[2] = cupy.asarray(args[2])
        got = ex.fuse(fn)(*gpu_args)
        got = got if isinstance(got, tuple) else (got,)
        want = want if isinstance(want, tuple) else (want,)
        for g, w in zip(got, want):
            g = g.to_device("cpu") if isinstance(g, ex.ExpansionArray) else ex.backends.to_numpy(g)
            assert_same(g, w)


def test_emulated_program_returning_inputs(emulator):
    x = ex.from_terms(terms_of((3,), 4, "float64", "random", 1))
    assert emulated(lambda a: a, emulator, x) is x
    out = emulated(lambda a, b: (a, a * b), emulator, x, x)
    assert out[0] is x
    assert_same(out, ex.fuse(lambda a, b: (a, a * b))(x, x))


def _elementary_program(R, dtype, functions):
    """A graph whose nodes are elementary functions of two inputs x, y (and exp(sin x), a composition):
    what the tracer records for ex.exp(x), ex.atan2(y, x), ... (node op = the function's name)."""
    from expansions.programs.trace import Graph, Node

    g = Graph()
    fmt = (R, dtype)
    x = g.add(Node("input", kind="exp", fmt=fmt, ndim=1, index=0))
    y = g.add(Node("input", kind="exp", fmt=fmt, ndim=1, index=1))
    outs = [g.add(Node(f, args=(y, x) if f == "atan2" else (x, y) if f == "pow" else (x,), fmt=fmt, ndim=1))
            for f in functions]
    outs.append(g.add(Node("exp", args=(g.add(Node("sin", args=(x,), fmt=fmt, ndim=1)),), fmt=fmt, ndim=1)))
    return g, outs


@pytest.mark.parametrize("R, dtype", [(2, "float64"), pytest.param(3, "float32", marks=pytest.mark.slow)])
def test_emulated_program_of_elementary_functions_equals_the_twins(emulator, R, dtype):
    """The group functions of elementary.cuh inside one program kernel (group widened for sin's
    Payne-Hanek sums, the function table as the last argument) give the twins' bits."""
    from expansions.cpu import elementary as twin
    from expansions.cuda.elementary import table

    functions = ("exp", "log1p", "cos", "atan", "atan2", "pow")
    graph, outs = _elementary_program(R, dtype, functions)
    wanted = list(range(len(graph.nodes)))
    assert C.program_format(graph, wanted)[2] == C.group_width(2 * (R + 1) + 2)
    name, text = C.kernel_source(graph, wanted, outs)
    x = np.concatenate([terms_of((9,), R, dtype, "random", 1), terms_of((7,), R, dtype, "nonfinite", 2)])
    y = np.concatenate([terms_of((9,), R, dtype, "random", 3), terms_of((7,), R, dtype, "zeros", 4)])
    x, y = np.ascontiguousarray(x), np.ascontiguousarray(y)
    results = [np.full((x.shape[0], R), 7.0, dtype=dtype) for _ in outs]
    emulator.launch(name, text, [x, y, *results, table(R, dtype)], x.shape[0])
    with np.errstate(all="ignore"):
        want = [twin.atan2(y, x, R) if f == "atan2" else twin.pow(x, y, R) if f == "pow" else getattr(twin, f)(x, R)
                for f in functions] + [twin.exp(twin.sin(x, R), R)]
    for f, got, w in zip(functions + ("exp(sin)",), results, want):
        u = np.uint64 if dtype == "float64" else np.uint32
        assert np.array_equal(got.view(u), w.view(u)), f


@pytest.mark.parametrize("R, dtype", [(2, "float64"), (2, "float32"), (3, "float64")])
def test_emulated_programs_keep_the_signs_of_zeros(emulator, R, dtype):
    """Signed zeros, infinities and NaN through a program (|x|, the double-word algorithms at R = 2 with
    their zero-keeping renormalizer): the kernel's bits are op by op's."""
    v = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 0.5, -2.0], dtype=dtype)
    a, b = np.meshgrid(v, v)
    ta, tb = np.zeros((a.size, R), dtype), np.zeros((b.size, R), dtype)
    ta[:, 0], tb[:, 0] = a.ravel(), b.ravel()
    x, y = ex.from_terms(ta), ex.from_terms(tb)

    def fn(x, y):
        return abs(x), x * y, x + y, x - y, x / y, 0.3125 * x

    assert_same(emulated(fn, emulator, x, y), ex.fuse(fn)(x, y))
