"""The proven bound composed along a program's graph (expansions.program_bound): it holds against the
exact error (mpmath at 6000 bits on the exact inputs) on random programs of + - * / sqrt with random
terms per operation, it fails when a propagation rule drops a term, and it is "not proven" where a
node has no proven bound."""

from __future__ import annotations

import random
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import expansions as ex
from expansions import program_bound as PB
from expansions.generate import random_terms

OPS = ("add", "sub", "mul", "div", "sqrt")


def _inputs(n=48, dtype="float64", seed=1):
    return tuple(ex.from_terms(random_terms((n,), 4, dtype, seed=seed + k, exponent_range=(-2, 3)))
                 for k in range(3))


def _program(spec):
    def f(a, b, c):
        vs = [a, b, c]
        for op, i, j, R, method in spec:
            x, y = vs[i], vs[j]
            if op == "sqrt":
                vs.append(ex.sqrt(abs(x)))
            else:
                vs.append(getattr(ex, op)(x, y, terms=R, method=method))
        return vs[-1]

    return f


_EXACT_OPS = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
              "div": lambda x, y: x / y, "sqrt": lambda x, y: mpmath.sqrt(abs(x))}


def _exact(spec, inputs, e):
    vs = [sum((mpmath.mpf(float(t)) for t in np.asarray(x.terms)[e]), mpmath.mpf(0)) for x in inputs]
    for op, i, j, _, _ in spec:
        vs.append(_EXACT_OPS[op](vs[i], vs[j]))
    return vs[-1]


def _random_spec(rng, steps, dtype):
    spec = []
    for k in range(steps):
        op = rng.choice(OPS)
        R = rng.choice((2, 3, 4, 6) if dtype == "float64" else (2, 3, 4))
        method = rng.choice(("auto", "safe")) if op in ("add", "sub") else "auto"
        i, j = rng.randrange(3 + k), rng.randrange(3 + k)
        spec.append((op, i, j, R, method))
    return spec


def _violations(fn, spec, inputs):
    """(elements checked, elements where the exact error exceeds the composed bound), or None if not proven."""
    b = PB.composed_bound(fn, inputs, elements=16)
    if not b.proven:
        return None
    (out,) = b.absolute
    bad = 0
    with mpmath.workprec(6000):
        for k, e in enumerate(b.indices):
            E, v = b.absolute[out][k], b.computed[out][k]
            err = abs(mpmath.mpf(v.numerator) / v.denominator - _exact(spec, inputs, e))
            bad += err > mpmath.mpf(E.numerator) / E.denominator
    return len(b.indices), bad


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_composed_bound_holds_on_random_programs(dtype):
    rng = random.Random(17 if dtype == "float64" else 18)
    inputs = _inputs(dtype=dtype)
    proven = 0
    for _ in range(10):
        spec = _random_spec(rng, rng.randrange(2, 6), dtype)
        got = _violations(_program(spec), spec, inputs)
        if got is not None:
            checked, bad = got
            assert bad == 0, spec
            proven += checked > 0
    assert proven >= 5  # most random programs have a proven bound (a division by a cancelled value may not)


def test_a_tuned_programs_bound_is_reported():
    from paper_repro.seed004_tuning import axpc, axpc_samples

    tuned = ex.tune(axpc, *axpc_samples(128), rel_error=2.0 ** -200, check_time=False, methods=False,
                    bound_elements=16)
    r = tuned.report
    assert r.proven_bound.proven and r.original_proven_bound.proven
    assert r.original_proven_bound.relative <= r.proven_bound.relative < 2.0 ** -190
    assert "Proven bound (composed along the graph): tuned 2^-" in r.markdown()


SPEC_MUL = [("add", 0, 1, 2, "auto"), ("mul", 3, 2, 4, "auto")]  # (a + b at R = 2) * c at R = 4
SPEC_ADD = [("mul", 0, 1, 2, "auto"), ("add", 3, 2, 4, "safe")]  # (a * b at R = 2) + c at R = 4


@pytest.mark.parametrize("spec, rule", [(SPEC_MUL, "mul"), (SPEC_ADD, "add")])
def test_dropping_a_term_makes_the_bound_fail(monkeypatch, spec, rule):
    """The propagated error of the first operation (about 2^-104 relative) dominates the second's
    local error (about 2^-200): a rule that forgets the operands' errors is violated."""
    inputs = _inputs()
    fn = _program(spec)
    checked, bad = _violations(fn, spec, inputs)
    assert checked == 16 and bad == 0
    mutated = {"mul": lambda x, ex_, y, ey: ex_ * ey, "add": lambda x, ex_, y, ey: Fraction(0)}[rule]
    monkeypatch.setitem(PB.PROPAGATE, rule, mutated)
    checked, bad = _violations(fn, spec, inputs)
    assert bad > checked // 2


def test_not_proven_names_the_node():
    a, b, c = _inputs()
    fast = PB.composed_bound(lambda a, b, c: ex.add(a * b, c, method="fast"), (a, b, c))
    assert not fast.proven and "fast addition" in fast.reason and "node" in fast.reason
    chosen = PB.composed_bound(lambda a, b, c: ex.where(a > b, a * c, b), (a, b, c))
    assert not chosen.proven and "comparison" in chosen.reason
    dw = PB.composed_bound(lambda a, b, c: ex.add(a, b, terms=2, method="dw_add_sloppy"), (a, b, c))
    assert not dw.proven and "dw_add_sloppy" in dw.reason
    for fn in (lambda a, b, c: ex.exp(a) * b + c, lambda a, b, c: a * ex.atan2(b, c)):
        elem = PB.composed_bound(fn, (a, b, c))
        assert not elem.proven and "elementary" in elem.reason and "node" in elem.reason


def test_constants_and_non_finite_inputs():
    a, b, c = _inputs()
    t = np.array(a.terms)
    t[::4, 0] = np.nan
    bad = ex.from_terms(t)
    spec = [("mul", 0, 1, 4, "auto")]
    res = PB.composed_bound(lambda a, b: a * b - "0.1", (bad, b))
    assert res.proven and res.skipped == 12 and res.elements == 36
    with mpmath.workprec(6000):
        for k, e in enumerate(res.indices):
            (out,) = res.absolute
            v, E = res.computed[out][k], res.absolute[out][k]
            want = _exact(spec, (bad, b, c), e) - mpmath.mpf(1) / 10
            assert abs(mpmath.mpf(v.numerator) / v.denominator - want) <= mpmath.mpf(E.numerator) / E.denominator
    # "0.1" is rounded to 4 terms: dropping its rounding error breaks the bound
    assert max(res.absolute[out]) > Fraction(1, 10) * Fraction(2) ** -220


@pytest.mark.parametrize("R", [2, 3, 5])
def test_division_by_a_float_and_a_reciprocal(R):
    """A divisor given as a float (the one-term Newton kernel at R > 2, the double-word quotient at R = 2)
    and a reciprocal: the bound holds against the exact quotient."""
    a, b, _ = _inputs()
    res = PB.composed_bound(lambda a, b: ex.div(a * b, 3.0, terms=R) + ex.reciprocal(b), (a, b))
    assert res.proven, res.reason
    (out,) = res.absolute
    with mpmath.workprec(6000):
        for k, e in enumerate(res.indices):
            x, y = (sum((mpmath.mpf(float(t)) for t in np.asarray(v.terms)[e]), mpmath.mpf(0)) for v in (a, b))
            v, E = res.computed[out][k], res.absolute[out][k]
            err = abs(mpmath.mpf(v.numerator) / v.denominator - (x * y / 3 + 1 / y))
            assert err <= mpmath.mpf(E.numerator) / E.denominator


def test_a_double_word_quotient_that_underflows_to_zero_is_not_proven():
    """float32 R = 2: the exact quotient (about 1.1e-48) is below the smallest subnormal, the result is 0;
    the double-word proofs assume no underflow of the result, so there is no bound (not L = b |z|)."""
    h = float.fromhex
    x = ex.from_terms(np.array([[h("-0x1.5e5ce2p-53"), h("0x1.c7b83ep-108")]], dtype=np.float32))
    y = ex.from_terms(np.array([[h("-0x1.b7d0a4p+106"), h("-0x1.a2bb1cp+49")]], dtype=np.float32))
    assert (np.asarray((x / y).terms) == 0).all()
    b = PB.composed_bound(lambda x, y: x / y, (x, y))
    assert not b.proven and "exact result is near underflow" in b.reason
    normal = ex.from_terms(np.array([[1.5, 2.0 ** -30]], dtype=np.float32))
    assert PB.composed_bound(lambda x, y: x / y, (normal, normal)).proven
