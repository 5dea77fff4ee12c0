"""expansions.fuse: a traced program gives the same bits as its operations run one by one.

Hypothesis builds random programs (a list of operations of the library over the inputs and earlier
results, with methods, renormalize=, terms=, scalar constants and the elementary functions), random
R, dtypes and broadcast shapes, on input families with NaN, Inf, overflow, signed zeros and the
verification's adversarial pairs; the same interpreter runs op by op and under ``expansions.fuse``,
and every output must agree bit for bit (shape, dtype and the bytes of the terms).
"""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path

import numpy as np
import pytest
from helpers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import expansions as ex
from expansions import backends
from expansions.formats import format_of
from expansions.generate import random_terms
from expansions.programs import _PLANS
from expansions.programs.cpu import Plan
from expansions.programs.loop import LoopPlan
from expansions.testing import mixed_pairs

ROOT = Path(__file__).resolve().parents[1]
RS = (2, 3, 4, 5, 8, 13, 16, 32)
FAMILIES = ("random", "verify", "nonfinite", "overflow", "zeros")


def terms_of(shape, R, dtype, family, seed):
    """Terms of shape ``shape + (R,)`` from one input family."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape, dtype=np.int64))
    if family == "verify" and n:
        return mixed_pairs(max(n, 8), R, dtype, rng)[int(rng.integers(2))][:n].reshape(shape + (R,))
    t = random_terms((n,), R, dtype, seed=seed, p_zero=0.2)
    fmt = format_of(dtype)
    if family == "nonfinite":
        special = np.array([np.nan, np.inf, -np.inf], dtype=dtype)
        rows = rng.random(n) < 0.5
        t[rows, 0] = rng.choice(special, size=int(rows.sum()))
        t[rows, 1:] = 0
        tail = rng.random(n) < 0.2  # a non-finite value below a finite leading term
        t[tail, -1] = np.nan
    elif family == "overflow":
        t = random_terms((n,), R, dtype, seed=seed, exponent_range=(fmt.emax - 3, fmt.emax))
    elif family == "zeros":
        t[rng.random(n) < 0.5] = 0
        t[rng.random(n) < 0.3] = -0.0
    return t.reshape(shape + (R,))


def bits(v):
    if isinstance(v, ex.ExpansionArray):
        v = v.terms
    if isinstance(v, (bool, np.bool_)):
        return ("bool", bool(v))
    a = np.asarray(v)
    return type(v).__name__, a.shape, a.dtype.str, a.tobytes()


def assert_same(fused, direct):
    assert type(fused) is type(direct)
    if isinstance(direct, tuple):
        assert len(fused) == len(direct)
        for k, (f, d) in enumerate(zip(fused, direct)):
            assert bits(f) == bits(d), f"output {k} differs"
    else:
        assert bits(fused) == bits(direct)


# -- random programs ------------------------------------------------------------------------------

OPS = ("add", "sub", "mul", "div", "sqrt", "reciprocal", "negative", "absolute", "where", "scalar", "elementary")
ELEMENTARY = ("exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "atan", "asin", "acos", "sinh",
              "cosh", "tanh", "atan2", "pow")


def interpret(program, n_out):
    """The function a program stands for: each step appends a value computed from earlier ones."""

    def fn(*inputs):
        vals = list(inputs)
        for op, i, j, k, opt in program:
            a, b, c = vals[i % len(vals)], vals[j % len(vals)], vals[k % len(vals)]
            if op in ("add", "sub", "mul", "div"):
                method, renorm, terms = opt
                if method == "op":
                    vals.append({"add": a + b, "sub": a - b, "mul": a * b, "div": a / b}[op])
                else:
                    vals.append(getattr(ex, op)(a, b, method=method, renormalize=renorm, terms=terms))
            elif op == "scalar":
                s, side = opt
                vals.append(s * a if side else a - s)
            elif op == "elementary":
                f = getattr(ex, opt)
                vals.append(f(a, b) if opt in ("atan2", "pow") else f(a))
            elif op in ("sqrt", "reciprocal", "negative", "absolute"):
                vals.append(getattr(ex, op)(a) if opt else {"sqrt": np.sqrt, "reciprocal": lambda v: 1 / v,
                                                             "negative": np.negative, "absolute": abs}[op](a))
            else:
                cmp = [a < b, a >= b, a == b, a != b][opt % 4]
                vals.append(ex.where(cmp, c, a))
        return tuple(vals[-n_out:]) if n_out > 1 else vals[-1]

    return fn


@st.composite
def programs(draw):
    R = draw(st.sampled_from(RS))
    dtype = draw(st.sampled_from(("float64", "float32")))
    n_in = draw(st.integers(1, 3))
    steps = []
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(OPS))
        i, j, k = (draw(st.integers(0, 20)) for _ in range(3))
        if op in ("add", "sub", "mul", "div"):
            kind = "add" if op in ("add", "sub") else op
            methods = {"add": ["op", "auto", "safe", "fast"], "mul": ["op", "auto", "truncated"],
                       "div": ["op", "auto", "newton"]}[kind]
            if R == 2:
                methods += {"add": ["qd_add_sloppy", "dw_add_sloppy"], "mul": ["dw_times_dw3"],
                            "div": ["dw_div_dw3"]}[kind]
            terms = draw(st.sampled_from((None, None, None, 2, 4)))
            if terms is not None and draw(st.booleans()) and methods[-1].startswith(("dw", "qd")):
                terms = None
            method = draw(st.sampled_from(methods))
            if terms not in (None, 2) and method.startswith(("dw", "qd")):
                method = "auto"
            opt = (method, draw(st.booleans()), terms)
        elif op == "elementary":
            opt = draw(st.sampled_from(ELEMENTARY))
        elif op == "scalar":
            opt = (draw(st.sampled_from((0.5, -3.0, 0.0, 1.0, 2))), draw(st.booleans()))
        else:
            opt = draw(st.integers(0, 3))
        steps.append((op, i, j, k, opt))
    shapes = draw(st.lists(st.sampled_from(((), (3,), (1,), (2, 3), (2, 1), (0,))), min_size=n_in, max_size=n_in))
    families_ = draw(st.lists(st.sampled_from(FAMILIES), min_size=n_in, max_size=n_in))
    n_out = draw(st.integers(1, 2))
    return R, dtype, shapes, families_, steps, n_out, draw(st.integers(0, 2**20))


def _run_both(fn, args):
    try:
        direct = fn(*args)
    except ValueError:  # shapes that do not broadcast, a method at the wrong R: the program refuses too
        with pytest.raises((ValueError, ex.FuseError)):
            ex.fuse(fn)(*args)
        return None
    fused = ex.fuse(fn)(*args)
    assert_same(fused, direct)
    return fused


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_programs_are_bit_identical(prog):
    R, dtype, shapes, fams, steps, n_out, seed = prog
    args = [ex.from_terms(terms_of(s, R, dtype, f, seed + k)) for k, (s, f) in enumerate(zip(shapes, fams))]
    _run_both(interpret(steps, n_out), args)


# -- the cases named in the issue -----------------------------------------------------------------


def _henon(x, y, a, b):
    return 1 - a * x * x + y, b * x


def _horner(x, coefficients):
    def poly(x):
        acc = x * coefficients[0]
        for c in coefficients[1:]:
            acc = acc * x + c
        return acc

    return poly


@pytest.fixture(params=["engine", "twins"])
def cpu_backend(request):
    """Each CPU backend in turn (the plan runs whichever is chosen when it is built)."""
    backends.set_cpu_backend(request.param)
    yield request.param
    backends.set_cpu_backend(None)


@pytest.mark.parametrize("R", (2, 4, *(pytest.param(R, marks=pytest.mark.slow) for R in (8, 16, 32))))
@pytest.mark.parametrize("dtype", ("float64", "float32"))
def test_henon_horner_fma(R, dtype, cpu_backend):
    x = ex.from_terms(terms_of((5,), R, dtype, "random", R))
    y = ex.from_terms(terms_of((5,), R, dtype, "verify", R + 1))
    z = ex.from_terms(terms_of((1,), R, dtype, "zeros", R + 2))
    assert_same(ex.fuse(_henon)(x, y, 1.375, 0.3125), _henon(x, y, 1.375, 0.3125))
    poly = _horner(x, [1.0, -0.5, 0.25, 3.0, -2.0, 0.125, 1.5, -1.0, 0.75])
    assert_same(ex.fuse(poly)(x), poly(x))
    fma = ex.fuse(lambda x, y, z: x * y + z)
    assert_same(fma(x, y, z), x * y + z)


def test_shapes_zero_d_empty_and_outputs_of_different_shapes():
    R = 4
    x0 = ex.from_terms(terms_of((), R, "float64", "random", 1))
    x = ex.from_terms(terms_of((2, 1), R, "float64", "random", 2))
    y = ex.from_terms(terms_of((3,), R, "float64", "random", 3))
    e = ex.from_terms(terms_of((0,), R, "float64", "random", 4))
    f = ex.fuse(lambda a, b: (a * a, a + b, a < b, b))  # outputs (2, 1), (2, 3), (2, 3), the input itself
    assert_same(f(x, y), (x * x, x + y, x < y, y))
    assert f(x, y)[3] is y
    assert_same(ex.fuse(lambda a: (a * a, a > 0))(x0), (x0 * x0, x0 > 0))  # 0-d: a Python bool, as op by op
    assert_same(f(x0, e), (x0 * x0, x0 + e, x0 < e, e))  # an empty output beside a non-empty one
    g = ex.fuse(lambda a, b, c: (a * a, b * c))  # outputs whose shapes do not broadcast together
    z = ex.from_terms(terms_of((4,), R, "float64", "random", 5))
    assert_same(g(y, z, z), (y * y, z * z))
    with pytest.raises(ValueError):
        ex.fuse(lambda a, b: a + b)(y, z)


def test_float_and_bool_arrays_scalars_and_mixed_formats():
    x = ex.from_terms(terms_of((3,), 4, "float64", "random", 1))
    h = ex.from_terms(terms_of((3,), 2, "float32", "random", 2))
    a = np.array([0.5, -1.25, 3.0])
    mask = np.array([True, False, True])

    def fn(x, h, a, mask, s):
        return ex.where(mask, x * a + s, h / a), x + h, ex.mul(x, h, terms=3), a - x, np.float64(2.0) * h

    assert_same(ex.fuse(fn)(x, h, a, mask, 0.1), fn(x, h, a, mask, 0.1))
    assert_same(ex.fuse(fn)(x, h, a[:1], mask[:1], 7), fn(x, h, a[:1], mask[:1], 7))
    assert_same(ex.fuse(fn)(x, h, np.array(2.0), True, 7), fn(x, h, np.array(2.0), True, 7))
    big = ex.fuse(lambda x, s: (x + 2**70 + 3, x * s, x - "0.1"))  # exact big ints, decimal strings rounded
    assert_same(big(x, "0.5"), (x + 2**70 + 3, x * "0.5", x - "0.1"))


def test_programs_are_cached_by_signature():
    f = ex.fuse(lambda x, y: x * y + 1)
    x = ex.from_terms(terms_of((3,), 4, "float64", "random", 1))
    f(x, x)
    n = len(_PLANS)
    y = ex.from_terms(terms_of((7,), 4, "float64", "random", 2))
    f(y, y)  # another size, the same rank
    assert len(_PLANS) == n
    f(ex.from_terms(terms_of((7,), 8, "float64", "random", 2)), y)  # another R
    assert len(_PLANS) == n + 1


# -- errors ---------------------------------------------------------------------------------------


def _line_of(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, s in enumerate(lines) if text in s)


def control_flow(x):
    if x > 0:
        return x
    return -x


def other_function(x):
    return np.cbrt(x)


def attribute(x):
    return x.sum()


def indexing(x):
    return x[0] * 2


def floats_only(x, a):
    return x + a * a


def bad_method(x):
    return ex.add(x, x, method="truncated")


def bad_condition(x):
    return ex.where(x, x, x)


def power(x):
    return x ** 2.5


@pytest.mark.parametrize("fn, text, construct", [
    (control_flow, "if x > 0", "control flow"),
    (other_function, "np.cbrt", "numpy.cbrt"),
    (attribute, "x.sum()", "`.sum`"),
    (indexing, "x[0]", "indexing"),
    (floats_only, "a * a", "without an expansion operand"),
    (bad_method, "method=", "method='truncated'"),
    (bad_condition, "ex.where", "not boolean"),
    (power, "x ** 2.5", "`**`"),
])
def test_errors_name_the_construct_and_the_line(fn, text, construct):
    x = ex.from_terms(terms_of((3,), 4, "float64", "random", 1))
    with pytest.raises(ex.FuseError) as info:
        ex.fuse(fn)(x, np.ones(3)) if fn is floats_only else ex.fuse(fn)(x)
    msg = str(info.value)
    assert construct in msg
    assert f"{__file__}:{_line_of(fn, text)}:" in msg


def test_numpy_functions_and_ufuncs():
    x = ex.from_terms(terms_of((4,), 3, "float64", "verify", 1))
    y = ex.from_terms(terms_of((4,), 3, "float64", "nonfinite", 2))

    def fn(x, y):
        return (np.where(np.greater(x, y), np.sqrt(np.absolute(x)), np.negative(y)), np.add(x, 2.0),
                np.true_divide(y, x), np.multiply(x, y) != np.subtract(y, x), 1.5 <= x)

    assert_same(ex.fuse(fn)(x, y), fn(x, y))


def test_bad_arguments():
    x = ex.from_terms(terms_of((3,), 4, "float64", "random", 1))
    with pytest.raises(ex.FuseError, match="object"):
        ex.fuse(lambda x, s: x)(x, object())
    with pytest.raises(ex.FuseError, match="complex"):
        ex.fuse(lambda x, a: x * a)(x, np.ones(3, dtype=complex))
    with pytest.raises(ex.FuseError, match="keyword arguments"):
        ex.fuse(lambda x, s=1: x * s)(x, s=2)
    with pytest.raises(ex.FuseError, match="terms=1"):
        ex.fuse(lambda x: ex.mul(x, x, terms=1))(x)


def test_henon_example_as_a_program_prints_the_same(capsys):
    """examples/henon.py --fused (each step one program) prints what the op-by-op run prints."""
    spec = importlib.util.spec_from_file_location("henon_example", ROOT / "examples" / "henon.py")
    henon = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(henon)
    outs = []
    for extra in ([], ["--fused"]):
        assert henon.main(["--orbits", "4", "--steps", "20", *extra]) == 0
        outs.append([ln for ln in capsys.readouterr().out.splitlines() if not ln.startswith("time:")])
    assert outs[0] == outs[1]


# -- cpu="loop": one numba loop -------------------------------------------------------------------


def _loop_cases(x, y, z):
    def mix(x, y):
        return -ex.sub(x, y, method="fast", renormalize=False), ex.add(x, y, renormalize=False) * x - 0.5

    def newton(x, y, z):
        q = x / y
        return (ex.sqrt(q * q + z) - ex.reciprocal(y), ex.div(z, x, renormalize=False),
                q * 2.0 / 3.0, ex.sqrt(y) / 0.1, 1.0 / ex.reciprocal(x, renormalize=False))

    return [(lambda x, y, z: ex.mul(x, y, method="truncated") + z, (x, y, z)),
            (_horner(x, [1.0, -0.5, 0.25, 3.0, -2.0, 0.125, 1.5, -1.0, 0.75]), (x,)),
            (_henon, (x, y, 1.375, 0.3125)), (mix, (x, y)), (newton, (x, y, z))]


@pytest.mark.parametrize("R, dtype", [(3, "float64"), pytest.param(8, "float32", marks=pytest.mark.slow)])
def test_loop_programs_are_bit_identical(R, dtype):
    fams = ("random", "verify", "nonfinite", "overflow", "zeros")
    x = ex.from_terms(np.concatenate([terms_of((6,), R, dtype, f, R + k) for k, f in enumerate(fams)]))
    y = ex.from_terms(np.concatenate([terms_of((6,), R, dtype, f, 2 * R + k) for k, f in enumerate(fams[::-1])]))
    z = ex.from_terms(terms_of((1,), R, dtype, "random", 3))
    for fn, args in _loop_cases(x, y, z):
        assert_same(ex.fuse(fn, cpu="loop")(*args), fn(*args))
    b = ex.from_terms(terms_of((2, 1), R, dtype, "random", 4))  # broadcasting, and an empty input
    assert_same(ex.fuse(_loop_cases(x, y, z)[0][0], cpu="loop")(b, y, z), _loop_cases(x, y, z)[0][0](b, y, z))
    e = ex.from_terms(terms_of((0,), R, dtype, "random", 5))
    assert_same(ex.fuse(_henon, cpu="loop")(e, e, 1.375, 0.3125), _henon(e, e, 1.375, 0.3125))


def _edge_terms(n, R, dtype, seed):
    """n expansions of each edge family: random, the verification's pairs, non-finite terms, near
    overflow, zeros of both signs, near the underflow threshold (subnormal terms and tails)."""
    fmt = format_of(dtype)
    parts = [terms_of((n,), R, dtype, f, seed + k) for k, f in enumerate(FAMILIES)]
    parts.append(random_terms((n,), R, dtype, seed=seed + 7, exponent_range=(fmt.emin - 4, fmt.emin + 2 * fmt.p)))
    signed = np.zeros((4, R), dtype=dtype)
    signed[1, 0] = signed[2, :] = signed[3, 1:] = -0.0
    parts.append(signed)
    return np.concatenate(parts)


def _every_node(x, y, s):
    """Every node a loop runs: the safe and fast additions and subtractions, the truncated product,
    the Newton division (by an expansion and by a float: the one-term kernel), reciprocal and square
    root, renormalized or not; negation; the defaults (at R = 2 the double-word algorithms); a 0-d
    operand s and Python floats broadcast."""
    outs = []
    for ren in (True, False):
        for m in ("safe", "fast"):
            outs += [ex.add(x, y, method=m, renormalize=ren), ex.sub(x, y, method=m, renormalize=ren)]
        outs += [ex.mul(x, y, method="truncated", renormalize=ren), ex.div(x, y, method="newton", renormalize=ren),
                 ex.div(x, 0.75, method="newton", renormalize=ren), ex.reciprocal(y, renormalize=ren),
                 ex.add(x, y, renormalize=ren), ex.sub(s, y, renormalize=ren), ex.mul(x, s, renormalize=ren),
                 ex.div(x, y, renormalize=ren)]
    outs += [ex.sqrt(x, method="newton"), ex.sqrt(y), -x, x * x - y * 3.0 + 0.5, s / (y + s) - 1.5, -(x - s)]
    return tuple(outs)


@pytest.mark.parametrize("R, dtype", [(2, "float64"), (3, "float64"), (4, "float32"),
                                      pytest.param(8, "float64", marks=pytest.mark.slow),
                                      pytest.param(2, "float32", marks=pytest.mark.slow)])
def test_loop_every_node_type_and_edge_value(R, dtype):
    """Every node type on every edge family, with 0-d and float operands broadcast: the loop's bits
    are op by op's, on as many expansions as the serial loop and the parallel loop run."""
    x = _edge_terms(8, R, dtype, R)
    y = _edge_terms(8, R, dtype, 3 * R)[::-1]
    rng = np.random.default_rng(R)
    pairs = rng.permutation(len(x) * len(y))[:300]  # pairs of edges, the blocks mixing them
    x = ex.from_terms(np.ascontiguousarray(x[pairs // len(y)]))
    y = ex.from_terms(np.ascontiguousarray(y[pairs % len(y)]))
    s = ex.from_terms(terms_of((), R, dtype, "random", 11))
    assert_same(ex.fuse(_every_node, cpu="loop")(x, y, s), _every_node(x, y, s))
    for v in (s, ex.from_terms(terms_of((), R, dtype, "zeros", 1) * 0 - 0.0)):  # a 0-d y, and -0
        assert_same(ex.fuse(_every_node, cpu="loop")(x, v, s), _every_node(x, v, s))
    big = ex.from_terms(np.tile(x.terms, (20, 1)))  # 6000 expansions: the parallel loop
    big_y = ex.from_terms(np.tile(y.terms, (20, 1)))
    assert_same(ex.fuse(_every_node, cpu="loop")(big, big_y, s), _every_node(big, big_y, s))


def test_loop_instructions_are_the_engines():
    """The instructions programs.loop writes are the ones engine.program runs (their numbers)."""
    from expansions.engine import fused, program  # numba (optional): the compiled engine
    from expansions.programs import loop

    names = ("SPLAT", "LOAD", "STORE", "NEGATE", "OPERATION", "DOUBLE_WORD", "WIDTH", "VARIANTS")
    assert [getattr(loop, k) for k in names] == [getattr(program, k) for k in names]
    ops = ("ADD_SAFE", "ADD_FAST", "MUL", "RENORMALIZE", "RECIPROCAL", "DIV", "SQRT")
    assert [getattr(loop, k) for k in ops] == [getattr(fused, k) for k in ops]


def test_loop_compiles_once_per_machine():
    """The loop that runs every program is compiled once per dtype and kept in numba's cache on disk:
    another process runs a program that no process has run before, and compiles nothing for it."""
    import subprocess  # only here: the second process
    import sys

    x = ex.from_terms(terms_of((3,), 3, "float64", "random", 1))
    ex.fuse(lambda a: a * a + a, cpu="loop")(x)  # compiled, or loaded from the cache, here
    script = ("import numpy as np, expansions as ex\n"
              "from expansions.engine import program\n"
              "x = ex.from_terms(np.array([[1.5, 2.0**-60, 2.0**-120]] * 10))\n"
              f"y = ex.fuse(lambda a: ex.sqrt(a - {np.random.default_rng().random()}) / a, cpu='loop')(x)\n"
              "st = program._run.stats\n"
              "print(sum(st.cache_misses.values()), sum(st.cache_hits.values()))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    misses, hits = map(int, out.stdout.split())
    assert (misses, hits) == (0, 1)


def test_default_runs_the_loop_where_it_runs_and_wins(cpu_backend):
    """cpu="auto" (the default): the loop for the programs it runs at R >= 3 on the compiled engine, the
    plan for the others (R = 2, the twins backend, nodes the loop does not run); the bits of op by op."""
    def poly(a):
        return (a * 0.75 - 0.5) * a + ex.sqrt(a * a) / 3.0

    for R, dtype in ((3, "float64"), (4, "float32"), (2, "float64")):
        x = ex.from_terms(terms_of((9,), R, dtype, "zeros", R))
        plans = {type(ex.fuse(f).plan(x)) for f in (poly, lambda a: -a)}
        assert plans == {LoopPlan if R >= 3 and cpu_backend == "engine" else Plan}
        assert_same(ex.fuse(poly)(x), poly(x))
        assert type(ex.fuse(loop_where).plan(x)) is Plan  # a comparison and where: the plan
        assert_same(ex.fuse(loop_where)(x), loop_where(x))


def loop_where(x):
    return ex.where(x < 0, x, x * x)


def test_loop_refuses_what_it_does_not_run():
    x = ex.from_terms(terms_of((3,), 4, "float64", "random", 1))
    with pytest.raises(ex.FuseError, match=f"`lt` at {__file__}:{_line_of(loop_where, 'ex.where')}:"):
        ex.fuse(loop_where, cpu="loop")(x)
    d = ex.from_terms(terms_of((3,), 2, "float64", "random", 1))
    with pytest.raises(ex.FuseError, match="dw_times_dw2"):  # R = 2: the double-word defaults only
        ex.fuse(lambda a: ex.mul(a, a, method="dw_times_dw2"), cpu="loop")(d)
    with pytest.raises(ValueError, match="cpu="):
        ex.fuse(lambda a: a, cpu="numba")


# -- the elementary functions in programs ----------------------------------------------------------

UNARY_ELEMENTARY = ("exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "atan", "asin", "acos",
                    "sinh", "cosh", "tanh")
UFUNC_OF = {"atan": np.arctan, "asin": np.arcsin, "acos": np.arccos}


def _elementary_args(R, dtype, seed):
    """Arguments over the functions' domains, with specials: zeros, +-inf, NaN, huge, tiny."""
    rng = np.random.default_rng(seed)
    with np.errstate(over="ignore"):
        v = np.concatenate([rng.uniform(-3, 3, 9), rng.uniform(-1, 1, 4), [0.0, -0.0, np.inf, -np.inf, np.nan, 1e300,
                                                                            -1e-300, 700.0, 1.0]]).astype(dtype)
    return ex.array(v, dtype=dtype, terms=R) + ex.array(rng.uniform(-1, 1, v.size) * 2.0**-40, dtype=dtype, terms=R)


@pytest.mark.parametrize("R, dtype", [(2, "float64"), *(pytest.param(*c, marks=pytest.mark.slow)
                                                       for c in ((4, "float64"), (3, "float32"), (8, "float64")))])
def test_elementary_functions_in_programs_are_bit_identical(R, dtype):
    """Every elementary function, called as ex.f and as its ufunc, inside a program with arithmetic
    around it, against the same calls op by op."""
    x = _elementary_args(R, dtype, R)
    y = _elementary_args(R, dtype, R + 7)

    def fn(x, y):
        outs = []
        for name in UNARY_ELEMENTARY:
            f = getattr(ex, name)
            u = UFUNC_OF.get(name, getattr(np, name))
            outs.append(f(x * y) + u(y))
        outs.append(ex.atan2(y, x) - np.arctan2(x, 0.5))
        outs.append(ex.pow(x, y) * ex.pow(y, 2.0) + ex.pow(x, 3) + x ** -2 + np.power(y, 5))
        return tuple(outs)

    assert_same(ex.fuse(fn)(x, y), fn(x, y))


def test_elementary_functions_of_mixed_formats_and_broadcasts():
    """Two operands of different formats are promoted as op by op; broadcasting with a 0-d array."""
    x = _elementary_args(4, "float64", 1).reshape(22, 1)
    y = ex.array(0.75, terms=2, dtype="float32")

    def fn(x, y):
        return ex.atan2(x, y), ex.pow(y, x), ex.exp(y) * x

    assert_same(ex.fuse(fn)(x, y), fn(x, y))


def test_integer_powers_are_the_products_of_power():
    """``x ** n`` in a program is recorded as expansions.elementwise.power computes it (the same
    truncated products and reciprocal); ``x ** 0`` and non-integer ``**`` are refused."""
    x = ex.from_terms(terms_of((6,), 4, "float64", "verify", 3))
    for n in (1, 2, 3, 7, 16, -1, -5, np.int64(6)):
        assert_same(ex.fuse(lambda x, n=n: x ** n + 1.0)(x), x ** n + 1.0)
    graph, _ = ex.fuse(lambda x: x ** 7).trace(x)
    assert [n.op for n in graph.nodes].count("mul") == 4  # x^2, x^4, x^3 = x x^2, x^7 = x^3 x^4
    with pytest.raises(ex.FuseError, match="x \\*\\* 0"):
        ex.fuse(lambda x: x ** 0)(x)


def test_elementary_refusals():
    x = ex.from_terms(terms_of((3,), 4, "float64", "random", 1))
    with pytest.raises(ex.FuseError, match="`exp` of a traced bool"):
        ex.fuse(lambda x: ex.exp(x > 0))(x)
    with pytest.raises(ex.FuseError, match="cpu='loop'"):
        ex.fuse(lambda x: ex.sin(x), cpu="loop")(x)
