"""The exact reference arithmetic against the machine's IEEE arithmetic (NumPy), bit for bit."""

import math
from fractions import Fraction

import numpy as np
import pytest
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from expansions.formats import FLOAT32, FLOAT64, tiny_format
from expansions.reference import fp
from expansions.reference.eft import fast_two_sum, two_prod, two_sum

FMTS = {np.float64: FLOAT64, np.float32: FLOAT32}


def _specials(dt):
    fi = np.finfo(dt)
    return [0.0, -0.0, np.inf, -np.inf, np.nan, float(fi.tiny), float(fi.smallest_subnormal), float(fi.max),
            -float(fi.max), 1.0, -1.0, float(fi.eps), 3 * float(fi.smallest_subnormal)]


def _sample(dt, n, rng):
    ex = rng.integers(np.finfo(dt).minexp - np.finfo(dt).nmant - 2, np.finfo(dt).maxexp + 1, size=n)
    v = np.ldexp(rng.random(n) + 0.5, ex).astype(dt)
    v *= rng.choice([-1, 1], size=n).astype(dt)
    return np.concatenate([v, np.array(_specials(dt), dtype=dt)])


def _same(a, b):
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1, a) == math.copysign(1, b)


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_add_sub_mul_match_hardware(dt):
    rng = np.random.default_rng(1)
    fmt = FMTS[dt]
    a = _sample(dt, 600, rng)
    b = _sample(dt, 600, rng)
    rng.shuffle(b)
    sp = np.array(_specials(dt), dtype=dt)
    pa, pb = np.meshgrid(sp, sp)
    near = (a[:100] * dt(1.0000001)).astype(dt)  # close pairs: Sterbenz and cancellation
    a = np.concatenate([a, pa.ravel(), a[:100]])
    b = np.concatenate([b, pb.ravel(), -near])
    with np.errstate(all="ignore"):
        hw = {"add": a + b, "sub": a - b, "mul": a * b}
    for name, f in (("add", fp.add), ("sub", fp.sub), ("mul", fp.mul)):
        for i in range(a.size):
            got = fp.to_float(f(fp.from_float(a[i]), fp.from_float(b[i]), fmt))
            assert _same(got, hw[name][i]), (name, a[i], b[i], got, hw[name][i])


def test_fma_matches_exact_rounding_and_float64_where_available():
    rng = np.random.default_rng(2)
    for _ in range(2000):
        a, b, c = (float(v) for v in _sample(np.float64, 3, rng)[:3])
        r = fp.fma(fp.from_float(a), fp.from_float(b), fp.from_float(c), FLOAT64)
        if all(math.isfinite(v) for v in (a, b, c)):
            q = Fraction(a) * Fraction(b) + Fraction(c)
            want = fp.round_fraction(q, FLOAT64) if q != 0 else 0.0
            assert _same(fp.to_float(r), fp.to_float(want))
        if hasattr(math, "fma"):  # Python >= 3.13
            assert _same(fp.to_float(r), math.fma(a, b, c))


@given(st.fractions(), st.sampled_from([4, 5, 8, 24, 53]))
def test_round_fraction_is_nearest_even(q, p):
    fmt = tiny_format(p)
    r = fp.round_fraction(q, fmt)
    if q == 0:
        assert r == 0
        return
    v = fp.exact(r)
    # the neighbours of v are at one ulp; no representable number is closer to q
    u = fp.ulp(r, fmt)
    assert abs(v - q) <= u / 2
    if abs(v - q) == u / 2:
        m = v / u if abs(v) >= fmt.smallest_normal else v / fmt.eta
        assert m.denominator == 1 and m.numerator % 2 == 0


def test_round_fraction_subnormal_and_overflow():
    f = FLOAT64
    assert fp.round_fraction(Fraction(1, 2**1075), f) == 0.0  # tie to even (zero)
    assert fp.round_fraction(Fraction(3, 2**1076), f) == Fraction(1, 2**1074)
    z = fp.round_fraction(-Fraction(1, 2**1076), f)
    assert z == 0.0 and math.copysign(1, z) < 0
    big = Fraction(2**1024) - Fraction(2**970)  # exactly halfway between max and 2^1024: rounds to even -> inf
    assert fp.round_fraction(big, f) == math.inf
    assert fp.round_fraction(big - 1, f) == Fraction(float.fromhex("0x1.fffffffffffffp+1023"))


@pytest.mark.parametrize("p", [4, 6, 8, 24, 53])
@given(data=st.data())
@settings(max_examples=examples(200))
def test_eft_are_error_free(p, data):
    fmt = tiny_format(p, -60, 60)
    def value():
        m = data.draw(st.integers(-(2**p) + 1, 2**p - 1))
        e = data.draw(st.integers(-70, 50))
        return fp.round_fraction(Fraction(m) * Fraction(2) ** e, fmt) if m else 0.0
    a, b = value(), value()
    if not (fp.is_finite(a) and fp.is_finite(b)):
        return
    s, e = two_sum(a, b, fmt)
    if fp.is_finite(s):
        assert fp.exact(s) + fp.exact(e) == fp.exact(a) + fp.exact(b)
        assert s == fp.add(a, b, fmt) or (fp.is_zero(s) and fp.is_zero(fp.add(a, b, fmt)))
    if abs(fp.exact(a)) >= abs(fp.exact(b)):
        s2, e2 = fast_two_sum(a, b, fmt)
        if fp.is_finite(s2):
            assert fp.exact(s2) + fp.exact(e2) == fp.exact(a) + fp.exact(b)
    pr, pe = two_prod(a, b, fmt)
    if fp.is_finite(pr):
        err = fp.exact(a) * fp.exact(b) - fp.exact(pr)
        if fp.is_representable(err, fmt):
            assert fp.exact(pe) == err
        else:
            assert abs(fp.exact(pe) - err) <= fmt.eta / 2
