"""Error-free transforms on exact reference values (Handbook of Floating-Point Arithmetic, ch. 4).

Each function takes values of :mod:`expansions.reference.fp` and a :class:`~expansions.formats.Format`.
"""

from __future__ import annotations

from .fp import add, fma, mul, neg, sub


def two_sum(a, b, fmt):
    """Knuth's 2Sum: ``(s, e)`` with ``s = RN(a + b)`` and ``s + e = a + b`` exactly (6 operations,
    no precondition on the operands, exact also when the sum is subnormal)."""
    s = add(a, b, fmt)
    bb = sub(s, a, fmt)
    e = add(sub(a, sub(s, bb, fmt), fmt), sub(b, bb, fmt), fmt)
    return s, e


def fast_two_sum(a, b, fmt):
    """Dekker's Fast2Sum: ``(s, e)`` with ``s + e = a + b`` exactly when ``|a| >= |b|`` (or a = 0)."""
    s = add(a, b, fmt)
    z = sub(s, a, fmt)
    e = sub(b, z, fmt)
    return s, e


def two_prod(a, b, fmt):
    """2ProdFMA: ``(p, e)`` with ``p = RN(a*b)`` and ``e = RN(a*b - p)``; ``p + e = a*b`` exactly unless
    ``e`` falls below the smallest subnormal (then it loses less than half of it)."""
    p = mul(a, b, fmt)
    e = fma(a, b, neg(p), fmt)
    return p, e


def vec_sum(xs, fmt):
    """VecSum (Ogita, Rump, Oishi 2005; Algorithm 3 of Joldes et al. 2016): a chain of 2Sum from the
    last term up.  Returns ``e`` with ``e[0]`` the approximate sum and ``sum(e) == sum(xs)`` exactly."""
    n = len(xs)
    e = [0.0] * n
    s = xs[n - 1]
    for i in range(n - 2, -1, -1):
        s, e[i + 1] = two_sum(xs[i], s, fmt)
    e[0] = s
    return e
