"""The elementary functions compiled per block (expansions.engine.elementary) against the NumPy twins
(expansions.cpu.elementary), bit for bit: random arguments over each domain, the hard cases of
verify_elementary, the branch thresholds of the twins' ``thresholds()``, special values (±0, ±inf,
NaN, a non-finite tail), blocks that mix branches, array sizes that are not a multiple of the block,
operands of fewer or more terms than R, and an array large enough for the parallel loop."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from expansions.cpu import elementary as E
from expansions.formats import format_of
from expansions.generate import random_terms
from expansions.reference.exact import round_to_expansion, to_floats
from expansions.reference.mpf import fraction_from_mpf
from expansions.verify_elementary import hard_arguments

engine = pytest.importorskip("expansions.engine.elementary", reason="no numba")

# leading values of random arguments per function (inside and across the branches)
DOMAIN = {"exp": (-40, 40), "expm1": (-3, 3), "sin": (-40, 40), "cos": (-40, 40), "tan": (-40, 40),
          "log": (-3, 60), "log2": (-3, 60), "log10": (-3, 60), "sinh": (-12, 12), "cosh": (-12, 12),
          "tanh": (-5, 5), "log1p": (-1.6, 5)}
FAST = [(2, "float64"), (3, "float64"), (4, "float64"), (5, "float64"), (8, "float64"),
        (2, "float32"), (3, "float32"), (8, "float32")]
SLOW = [(6, "float64"), (9, "float64"), (13, "float64"), (16, "float64"), (31, "float64"), (32, "float64"),
        (4, "float32"), (5, "float32"), (16, "float32"), (32, "float32")]
#: R = 32 in the default run for a representative of each body (exp's series, log's centred atanh series,
#: the trigonometric reduction, the hyperbolic branches)
FAST_32 = ("exp", "log", "sin", "sinh")


def same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a.view(np.uint8), b.view(np.uint8))


def check(name, x, R):
    with np.errstate(all="ignore"):
        want = getattr(E, name)(x, R)
    got = engine.compiled_elementary(name)(x, R)
    if not same_bits(got, want):
        bad = np.nonzero((got.view(np.uint8) != want.view(np.uint8)).any(axis=1))[0]
        raise AssertionError(f"{name} R={R} {x.dtype}: {len(bad)} rows differ, first {bad[:4]}: "
                             f"x={x[bad[:2]]!r} engine={got[bad[:2]]!r} twin={want[bad[:2]]!r}")


def edge_rows(name, R, dtype):
    """The branch thresholds of ``name`` and their neighbours, special values, non-finite tails."""
    dt = np.dtype(dtype)
    th = E.thresholds(dt)
    fmt = format_of(dt)
    lead = [0.0, -0.0, np.inf, -np.inf, np.nan, float(fmt.largest)]
    if name == "log1p":  # -1 (exactly: -inf; a tail below: NaN; above: finite), the centred series' range |x| <= 1/4
        for v in (dt.type(-1), dt.type(0.25), dt.type(-0.25), dt.type(-0.5)):
            lead += [v, np.nextafter(v, dt.type(np.inf)), np.nextafter(v, dt.type(-np.inf))]
        lead += [dt.type(2.0**-30), dt.type(-(2.0**-30)), dt.type(np.finfo(dt).tiny), dt.type(-2), dt.type(1e30)]
    if name in ("sinh", "cosh", "tanh"):  # the overflow limit, the exp limits of tanh's expm1(-2|x|)
        for v in (th["hyp_limit"], th["exp_hi"], th["exp_lo"] / dt.type(-2)):
            lead += [v, np.nextafter(v, dt.type(np.inf)), np.nextafter(v, dt.type(-np.inf)), -v]
        lead += [dt.type(2.0**-30), dt.type(-(2.0**-30)), dt.type(np.finfo(dt).tiny), dt.type(20), dt.type(-400)]
    if name in ("expm1", "sinh", "cosh", "tanh"):  # the series' range |x| <= 1/2
        for v in (dt.type(0.5), dt.type(-0.5)):
            lead += [v, np.nextafter(v, dt.type(np.inf)), np.nextafter(v, dt.type(-np.inf))]
    if name in ("exp", "expm1"):
        for v in (th["exp_lo"], th["exp_hi"]):
            lead += [v, np.nextafter(v, dt.type(np.inf)), np.nextafter(v, dt.type(-np.inf)), -v]
        lead += [dt.type(0.5), dt.type(-0.5), dt.type(2.0**-30), dt.type(np.finfo(dt).tiny),
                 dt.type(np.finfo(dt).smallest_subnormal), dt.type(700 if dt == np.float64 else 80)]
    if name in ("log", "log2", "log10"):  # sqrt(2) (the mantissa's range), 1, the format's extremes, negative numbers
        for v in (th["sqrt2"], dt.type(1), dt.type(2), dt.type(0.5)):
            lead += [v, np.nextafter(v, dt.type(np.inf)), np.nextafter(v, dt.type(-np.inf)), -v]
        lead += [dt.type(np.finfo(dt).tiny), dt.type(np.finfo(dt).smallest_subnormal), dt.type(np.finfo(dt).max),
                 dt.type(2.0**-30), dt.type(1e30), dt.type(-1e-30), dt.type(1024), dt.type(1000), dt.type(0.1)]
    if name in ("sin", "cos", "tan"):
        for v in (th["quarter_pi"], th["half_pi"], th["three_quarter_pi"], th["pi"]):
            lead += [v, np.nextafter(v, dt.type(np.inf)), np.nextafter(v, dt.type(-np.inf)), -v]
        lead += [dt.type(1e300 if dt == np.float64 else 1e38), dt.type(2.0**1023 if dt == np.float64 else 2.0**127),
                 dt.type(-(2.0**100)), dt.type(np.finfo(dt).tiny), dt.type(np.finfo(dt).smallest_subnormal),
                 dt.type(355), dt.type(103993)]
        # the Payne–Hanek switch: a term m 2^E with E = 2 (times 2/pi) or E = 3 (the table's first row)
        lead += [dt.type(2.0 ** (fmt.p + k)) * f for k in (1, 2, 3) for f in (dt.type(1), dt.type(1.75))]
    rows = np.zeros((len(lead), R), dtype=dt)
    with np.errstate(all="ignore"):
        rows[:, 0] = np.array([float(v) for v in lead], dtype=dt)
        # a tail just below the leading term's ulp (finite rows), so that every term is used
        tail = rows[:, 0] * dt.type(2.0 ** -(fmt.p + 1))
        if R > 1:
            rows[:, 1] = np.where(np.isfinite(tail), -tail, 0)
    bad_tail = np.zeros((4, R), dtype=dt)
    bad_tail[:, 0] = [1.0, -3.0, th["exp_hi"], 0.0]
    if R > 1:
        bad_tail[:, R - 1] = [np.nan, np.inf, -np.inf, np.nan]  # a non-finite tail: the non-finite rule
        rows = np.concatenate([rows, bad_tail])
    if name in ("sin", "cos", "tan"):
        rows = np.concatenate([rows, near_ties(R, dt)])
    if name == "log1p" and R > 1:  # -1 with a tail below and above
        minus_one = np.zeros((2, R), dtype=dt)
        minus_one[:, 0] = -1
        minus_one[:, 1] = [dt.type(-(2.0 ** -(fmt.p + 2))), dt.type(2.0 ** -(fmt.p + 2))]
        rows = np.concatenate([rows, minus_one])
    return rows


def near_ties(R, dt):
    """x = (j + 1/2 ± 1.5 2^-(p+1)) pi/2: the reduction's first nearest integer is taken at a tie of its
    leading term, and the second one (k2) is then ±1 (the tail pushes the rest past a half)."""
    fmt = format_of(dt)
    rows = []
    with mpmath.workprec(fmt.p * R + 200):
        for j in (0, 1, 2, 3, 4, 5, 10, 101):
            for d in (1, -1):
                v = (j + mpmath.mpf(1) / 2 + d * mpmath.mpf(3) * mpmath.mpf(2) ** -(fmt.p + 2)) * mpmath.pi / 2
                for sign in (1, -1):
                    rows.append(to_floats(round_to_expansion(fraction_from_mpf(sign * v), R, fmt), dt))
    return np.array(rows, dtype=dt)


def arguments(name, R, dtype, count=45):
    lo, hi = DOMAIN[name]
    rng = np.random.default_rng([R, len(name), ord(name[0])])
    x = random_terms((count,), R, dtype, seed=R, exponent_range=(-3, 3))
    scale = rng.uniform(lo, hi, count).astype(dtype)
    x = (x * scale[:, None]).astype(dtype)  # exact scalings would be nicer; the twins renormalize anyway
    with np.errstate(all="ignore"):
        x = E._renormalize(x, R)
    return np.concatenate([x, hard_arguments(name, R, dtype), edge_rows(name, R, dtype)])


@pytest.mark.parametrize("R,dtype", FAST)
@pytest.mark.parametrize("name", engine.COMPILED)
def test_compiled_gives_the_twins_bits(name, R, dtype):
    x = arguments(name, R, dtype, count=45 if R < 8 else 20)
    check(name, x, R)
    # blocks that mix branches and sizes that are not a multiple of the block (8 or 16 lanes)
    perm = np.random.default_rng(R).permutation(len(x))
    for size in (1, 7, 9, 17, 33) if R <= 3 else ():
        check(name, np.ascontiguousarray(x[perm[:size]]), R)


@pytest.mark.parametrize("name", FAST_32)
def test_compiled_gives_the_twins_bits_without_guard_term(name):
    """R = 32: the body runs on W = R terms, so that a change in the body shows in the result rather
    than being rounded away by the last renormalization."""
    check(name, arguments(name, 32, "float64", count=16), 32)


@pytest.mark.parametrize("R,dtype", [(2, "float64"), (5, "float64"), (3, "float32")])
@pytest.mark.parametrize("name", engine.COMPILED)
def test_operands_of_other_widths(name, R, dtype):
    """An operand of n != R terms: the body's width W = R + 1 from R, the operand truncated or padded."""
    x = arguments(name, R + 3, dtype, count=20)
    check(name, x, R)
    check(name, np.ascontiguousarray(x[:, :1]), R)
    check(name, np.ascontiguousarray(x[:, : max(1, R - 1)]), R)


@pytest.mark.parametrize("name", engine.COMPILED)
def test_parallel_loop(name):
    """Arrays of SERIAL_BELOW expansions and more run in chunks over the cores (up to CHUNKS_PER_THREAD
    per thread, never more than the blocks): the same bits as the twin on each side of the threshold,
    with fewer blocks than chunks, and on a large array."""
    from expansions.engine.elementary import SERIAL_BELOW, _chunks

    assert _chunks(SERIAL_BELOW - 1, 8) == 1 and _chunks(SERIAL_BELOW, 8) >= 1
    assert _chunks(SERIAL_BELOW + 1, 8) <= (SERIAL_BELOW + 8) // 8
    for count in (SERIAL_BELOW - 1, SERIAL_BELOW + 1, 4196):
        check(name, arguments(name, 3, "float64", count=count), 3)


def test_empty_and_bad_input():
    fn = engine.compiled_elementary("exp")
    assert fn(np.zeros((0, 3)), 3).shape == (0, 3)
    with pytest.raises((ValueError, TypeError)):
        fn(np.zeros((4, 3), dtype=np.int64), 3)
    with pytest.raises(ValueError):
        fn(np.zeros((4, 3)), 0)
    assert engine.compiled_elementary("atan2") is None
    x = arguments("exp", 3, "float64", count=9)
    x.setflags(write=False)  # read-only input: copied, the same bits
    check("exp", x, 3)


def test_the_engine_backend_runs_the_compiled_functions():
    from expansions import backends

    for name in engine.COMPILED:
        assert backends.engine_backend().elementary(name) is engine.compiled_elementary(name)


@pytest.mark.slow
@pytest.mark.parametrize("R,dtype", SLOW)
@pytest.mark.parametrize("name", engine.COMPILED)
def test_compiled_gives_the_twins_bits_more_terms(name, R, dtype):
    check(name, arguments(name, R, dtype, count=60), R)
