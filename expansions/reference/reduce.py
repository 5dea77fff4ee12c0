"""Exact reference of the reductions: the canonical pairwise tree on reference values.

The tree of n expansions x_0 .. x_{n-1} is built level by level: element j of the next level is
``node(x[2j], x[2j+1])`` and an odd last element is carried unchanged; ``node(a, b)`` is
``renormalize(add_safe(a, b, R), R)`` (:mod:`expansions.reference.algorithms`).  n = 0 gives +0,
n = 1 the element itself.  The dot product's elements are ``renormalize(mul_truncated(x_i, y_i, R), R)``.
Written from the definition, with no chunks and no stack: the GPU kernel (``expansions/cuda/reduce.cuh``)
and its twin (:mod:`expansions.cpu.reduce`) must return these bits.
"""

from __future__ import annotations

from .algorithms import add_safe, mul_truncated, renormalize


def node(a, b, R, fmt):
    """One node of the tree: the safe addition, then the (error-free) renormalization."""
    return renormalize(add_safe(a, b, R, fmt), R, fmt)


def product(x, y, R, fmt):
    """An element of a dot product: the truncated product, then the renormalization."""
    return renormalize(mul_truncated(x, y, R, fmt), R, fmt)


def tree(elements, R, fmt):
    """The canonical tree of a list of R-term expansions (tuples of reference values)."""
    level = [tuple(e) for e in elements]
    if not level:
        return tuple([0.0] * R)
    while len(level) > 1:
        nxt = [node(level[j], level[j + 1], R, fmt) for j in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]


def sum_expansions(elements, R, fmt):
    """The reduction sum of expansions: :func:`tree` of the elements."""
    return tree(elements, R, fmt)


def dot(xs, ys, R, fmt):
    """The reduction dot product: :func:`tree` of the elements ``product(x_i, y_i)``."""
    if len(xs) != len(ys):
        raise ValueError(f"dot: {len(xs)} and {len(ys)} elements")
    return tree([product(x, y, R, fmt) for x, y in zip(xs, ys)], R, fmt)


__all__ = ["node", "product", "tree", "sum_expansions", "dot"]
