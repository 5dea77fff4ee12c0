"""Exhaustive runs of the exact reference in tiny formats (p = 4..8), R = 2 and 3.

The domain, for each p: every leading term x0 in [1, 2) and y0 in ±[1, 2) (and ±[1/2, 1) for
p <= 6; for p = 8 and R = 3 only y0 in -[1, 2), the cancelling sign), all p-bit significands; the lower
terms come from the set T(v) = {0, ±ulp(v)/2, ±3ulp(v)/4, ±(1 - 2^-p) ulp(v), ±ulp(v)} of each
previous term (the boundary cases of Definition II.2): every combination for p = 4 and R = 2, else
8 (p = 4, 5), 2 (p = 6) or 1 (p = 7, 8) combinations per leading pair, taken in turn.

Checked: the safe addition's error against Prop. III.1 where its hypothesis 2^(R+1) <= 2^p/7 holds;
the multiplication against Prop. IV.2; the renormalization of the 2R terms of (x, y), unordered,
error-free and ulp-nonoverlapping.
"""

import itertools
from fractions import Fraction

import pytest

from expansions import bounds as B
from expansions.formats import tiny_format
from expansions.reference import algorithms as A
from expansions.reference.fp import exact, ulp


def _tails(v, fmt):
    u = ulp(v, fmt)
    mags = [u / 2, 3 * u / 4, u * (1 - Fraction(1, 2**fmt.p)), u]
    return [0.0] + [s * m for m in mags for s in (1, -1)]


def _domain(p, R):
    fmt = tiny_format(p, -80, 80)
    half = 2 ** (p - 1)
    x0s = [Fraction(m, half) for m in range(half, 2 * half)]
    signs = (1, -1) if (p, R) != (8, 3) else (-1,)
    scales = (1, Fraction(1, 2)) if p <= 6 else (1,)
    y0s = [s * Fraction(m, half) * k for m in range(half, 2 * half) for s in signs for k in scales]
    reps = {4: 8, 5: 8, 6: 2}.get(p, 1)
    k = 0
    for x0, y0 in itertools.product(x0s, y0s):
        xs, ys = _expand(x0, R, fmt), _expand(y0, R, fmt)
        if p == 4 and R == 2:
            combos = list(itertools.product(xs, ys))
        else:
            combos = []
            for _ in range(reps):
                combos.append((xs[k % len(xs)], ys[(k // len(xs)) % len(ys)]))
                k += 1
        for x, y in combos:
            yield tuple(x), tuple(y)


def _expand(lead, R, fmt):
    seqs = [[lead]]
    for _ in range(R - 1):
        seqs = [s + [t] for s in seqs for t in _tails(_last_nonzero(s), fmt)]
    return seqs


def _last_nonzero(s):
    for v in reversed(s):
        if v != 0:
            return v
    return s[0]


@pytest.mark.parametrize("R", (2, 3))
@pytest.mark.parametrize("p", (4, *(pytest.param(p, marks=pytest.mark.slow) for p in (5, 6, 7, 8))))
def test_exhaustive_tiny(p, R):
    fmt = tiny_format(p, -80, 80)
    add_b = B.add_safe(R, p)
    mul_b = B.mul_truncated(R, p)
    cases = add_viol = mul_viol = ren_bad = 0
    for x, y in _domain(p, R):
        cases += 1
        ex = sum(map(exact, x)) + sum(map(exact, y))
        s = A.add_safe(x, y, R, fmt)
        if abs(ex - sum(map(exact, s))) > add_b.value * abs(ex):
            add_viol += 1
        m = A.mul_truncated(x, y, R, fmt)
        exm = sum(map(exact, x)) * sum(map(exact, y))
        if abs(exm - sum(map(exact, m))) > mul_b.value * abs(exact(x[0]) * exact(y[0])):
            mul_viol += 1
        both = x + y[::-1]
        r = A.renormalize(both, 2 * R, fmt)
        if sum(map(exact, r)) != ex or not B.ulp_nonoverlapping(r, fmt):
            ren_bad += 1
    assert cases > 1000
    assert ren_bad == 0
    assert mul_viol == 0
    if add_b.hypotheses_hold:
        assert add_viol == 0
