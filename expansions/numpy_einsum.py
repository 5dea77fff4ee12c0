"""``np.einsum`` on ExpansionArrays: the contractions of one or two operands, each computed as the
library's own sums and products (:mod:`expansions.reduce`, the element-wise multiplication), so that a
contraction has the bits, and the bound, of the equivalent :func:`expansions.matmul`,
:func:`expansions.sum` or ``*``.
"""

from __future__ import annotations

import math
import string

import numpy as np

from .arraytype import ExpansionArray, implements
from .backends import xp_of
from .manipulation import broadcast_to, transpose
from .numpy_protocol import write_out
from .operations import binary, operands
from .reduce import matmul as _matmul
from .reduce import sum as _sum

__all__ = ["einsum"]

_LETTERS = set(string.ascii_letters)
# NumPy's defaults of the arguments the expansions do not support
_DEFAULTS = {"dtype": None, "order": "K", "casting": "safe"}


def _subscripts_from_lists(args):
    """The interleaved form ``einsum(op0, sublist0, op1, sublist1, ..., [sublistout])`` as a
    subscripts string and the operands (ints 0..51 are the letters a..z, A..Z; ``...`` is Ellipsis)."""
    letters = string.ascii_lowercase + string.ascii_uppercase

    def text(sub):
        out = []
        for s in sub:
            if s is Ellipsis:
                out.append("...")
            elif isinstance(s, (int, np.integer)) and not isinstance(s, bool) and 0 <= s < len(letters):
                out.append(letters[int(s)])
            else:
                raise ValueError(f"einsum: a subscript must be an integer in [0, 52) or Ellipsis, got {s!r}")
        return "".join(out)

    ops, subs = list(args[0::2]), [text(s) for s in args[1::2]]
    output = None
    if len(ops) > len(subs):  # an odd count: the last item is the output's sublist
        output = text(ops.pop())
    spec = ",".join(subs) + ("" if output is None else "->" + output)
    return spec, ops


def _labels(term: str, ndim: int, width: int, where: str):
    """The labels of one operand's (or the output's) subscripts: letters, and for ``...`` the names
    ``...0`` .. of the broadcast dimensions, right-aligned to ``width`` of them."""
    if term.count("...") > 1 or "." in term.replace("...", ""):
        raise ValueError(f"einsum: invalid subscripts {term!r} in {where} (one '...' at most)")
    head, dots, tail = term.partition("...")
    for c in head + tail:
        if c not in _LETTERS:
            raise ValueError(f"einsum: invalid subscript {c!r} in {where} (letters a-z, A-Z and '...' only)")
    if not dots:
        if ndim is not None and len(head) != ndim:
            raise ValueError(f"einsum: {where} has {ndim} dimensions but {len(head)} subscripts {term!r} "
                             f"(and no '...' for the others)")
        return list(head)
    n = width if ndim is None else ndim - len(head) - len(tail)
    if n < 0:
        raise ValueError(f"einsum: {where} has {ndim} dimensions, fewer than its subscripts {term!r}")
    return list(head) + [f"...{i}" for i in range(width - n, width)] + list(tail)


def _parse(spec: str, ndims):
    """(labels of each operand, labels of the output) of the subscripts ``spec``."""
    if not isinstance(spec, str):
        raise TypeError(f"einsum: the subscripts must be a string, got {type(spec).__name__}")
    spec = spec.replace(" ", "")
    lhs, arrow, rhs = spec.partition("->")
    if arrow and "->" in rhs:
        raise ValueError("einsum: the subscripts have more than one '->'")
    terms = lhs.split(",")
    if len(terms) != len(ndims):
        raise ValueError(f"einsum: {len(terms)} operand subscripts for {len(ndims)} operands")
    dots = [t.replace("...", "") for t in terms]
    width = max([d - len(t) for d, t, s in zip(ndims, dots, terms) if "..." in s] + [0])
    ins = [_labels(t, d, width, f"operand {i}") for i, (t, d) in enumerate(zip(terms, ndims))]
    if arrow:
        if "..." not in rhs and width and any("..." in t for t in terms):
            raise ValueError("einsum: the output has no '...' for the operands' broadcast dimensions")
        out = _labels(rhs, None, width, "the output")
        if len(set(out)) != len(out):
            raise ValueError(f"einsum: a subscript appears more than once in the output {rhs!r}")
        known = {c for t in ins for c in t}
        for c in out:
            if c not in known:
                raise ValueError(f"einsum: output subscript {c!r} does not appear in the operands")
    else:  # implicit: the broadcast dimensions, then the letters seen once, in ASCII order
        every = [c for t in ins for c in t]
        out = [f"...{i}" for i in range(width)] + sorted(c for c in set(every) if len(c) == 1 and every.count(c) == 1)
    return ins, out


def _diagonal(x: ExpansionArray, labels: list):
    """x with every repeated label of one operand reduced to its diagonal (exact: whole expansions are
    moved), and its labels."""
    xp = xp_of(x.terms)
    t, labels = x.terms, list(labels)
    while len(set(labels)) != len(labels):
        c = next(c for c in labels if labels.count(c) > 1)
        a = labels.index(c)
        b = labels.index(c, a + 1)
        if t.shape[a] != t.shape[b]:
            raise ValueError(f"einsum: dimensions {a} and {b} of an operand share subscript {c!r} but differ in size "
                             f"({t.shape[a]} != {t.shape[b]})")
        # the diagonal goes last (after the terms' axis), then back to position a
        t = xp.moveaxis(xp.diagonal(t, axis1=a, axis2=b), -1, a)
        del labels[b]
    return ExpansionArray(xp.ascontiguousarray(t)), labels


def _sum_out(x: ExpansionArray, labels: list, keep) -> tuple:
    """x summed (:func:`expansions.sum`) over the labels not in ``keep``, and the labels left."""
    axes = tuple(i for i, c in enumerate(labels) if c not in keep)
    if not axes:
        return x, labels
    return _sum(x, axis=axes), [c for c in labels if c in keep]


def _arrange(x: ExpansionArray, labels: list, order: list) -> ExpansionArray:
    """x's axes in the order of ``order`` (a permutation of ``labels``)."""
    perm = [labels.index(c) for c in order]
    return x if perm == list(range(len(perm))) else transpose(x, perm)


def _sizes(ops, ins):
    """The size of every label: equal in every operand, or 1 where it broadcasts (as NumPy)."""
    sizes = {}
    for i, (x, labels) in enumerate(zip(ops, ins)):
        for c, n in zip(labels, x.shape):
            m = sizes.get(c, 1)
            if n != 1 and m != 1 and n != m:
                shown = "'...'" if c.startswith("...") else repr(c)
                raise ValueError(f"einsum: operands could not be broadcast: subscript {shown} has size {m} and "
                                 f"{n} (operand {i})")
            sizes[c] = n if m == 1 else m
    return sizes


def _two(x, lx, y, ly, out_labels, sizes):
    """The contraction of two operands (repeated labels and labels of one operand only already gone)."""
    batch = [c for c in out_labels if c in lx and c in ly]
    contracted = [c for c in lx if c in ly and c not in out_labels]
    fx = [c for c in out_labels if c in lx and c not in ly]
    fy = [c for c in out_labels if c in ly and c not in lx]
    if not contracted:
        # element-wise and outer products: both aligned on the output's labels, then one broadcasting '*'
        def aligned(v, labels):
            order = [c for c in out_labels if c in labels]
            v = _arrange(v, labels, order)
            return v.reshape(tuple(v.shape[order.index(c)] if c in labels else 1 for c in out_labels))

        return binary("mul", aligned(x, lx), aligned(y, ly))
    # a contracted label of size 1 in one operand broadcasts to the other's size
    for c in contracted:
        if x.shape[lx.index(c)] != sizes[c]:
            x = broadcast_to(x, tuple(sizes[d] if d == c else n for d, n in zip(lx, x.shape)))
        if y.shape[ly.index(c)] != sizes[c]:
            y = broadcast_to(y, tuple(sizes[d] if d == c else n for d, n in zip(ly, y.shape)))
    x = _arrange(x, lx, batch + fx + contracted)
    y = _arrange(y, ly, batch + contracted + fy)
    bx, by = x.shape[:len(batch)], y.shape[:len(batch)]
    P, K, Q = (math.prod(sizes[c] for c in g) for g in (fx, contracted, fy))
    r = _matmul(x.reshape(bx + (P, K)), y.reshape(by + (K, Q)))
    r = r.reshape(r.shape[:len(batch)] + tuple(sizes[c] for c in fx + fy))
    return _arrange(r, batch + fx + fy, out_labels)


@implements(np.einsum)
def einsum(*args, out=None, optimize=False, **kwargs):
    """``np.einsum`` of one or two operands: the subscripts as a string (``"ij,jk->ik"``, implicit
    output ``"ij,jk"``, broadcast dimensions ``"...ij,...jk"``) or NumPy's interleaved lists; a label
    repeated in one operand takes the diagonal (``"ii->i"``, the trace ``"ii"``); a label of size 1
    broadcasts, as in NumPy.  Every contraction is composed of the library's own operations, in this
    order:

    1. a label repeated within an operand: its diagonal (exact);
    2. the labels of one operand only that are not in the output: that operand summed over them by
       :func:`expansions.sum` (the canonical pairwise tree), within ``bounds.sum_tree(n, R, p)`` relative
       to the sum of the n absolute values summed;
    3. one operand: its axes in the output's order (exact); two operands with no label in both and
       absent from the output (element-wise ``"i,i->i"`` and outer ``"i,j->ij"`` products, and their
       batched forms): one broadcasting ``*``, each entry one truncated product, within
       ``bounds.mul_relative_to_product(R, p)`` of the exact product (plus ``bounds.mul_underflow_term``
       near the underflow threshold); two operands with contracted labels: one :func:`expansions.matmul`
       of the operands rearranged to (batch..., P, K) and (batch..., K, Q): the labels in both and in
       the output are the batch, those of x only the P rows, those of y only the Q columns, the
       contracted labels (in x's order) the K inner dimension, so the result has the bits of the
       equivalent ``expansions.matmul`` (``"ij,jk->ik"`` is ``matmul(a, b)``, ``"bij,bjk->bik"`` the
       batched product, ``"ij,j->i"`` ``matmul(a, v)``, ``"i,i"`` ``dot(v, w)``), by exact slices
       where ``matmul`` takes them; every entry within matmul's componentwise bound
       ``bounds.matmul(K, R, fmt)`` relative to ``sum_k |a_ik b_kj|`` (the element-wise tree's
       ``bounds.dot(K, R, p)`` when P = Q = 1: a dot product keeps the tree).

    When step 2 sums before a product, the bounds compose: with ``s_x``, ``s_y`` the sums' bounds (0
    where an operand is not summed) and ``c`` the product's, every entry is within
    ``(1 + c)(1 + s_x)(1 + s_y) - 1`` of the exact value, relative to the sum over every summed and
    contracted label of ``|x| |y|``.  Operands of different formats, and NumPy arrays or Python numbers
    next to an expansion, are promoted exactly as for ``matmul``.  ``out=`` takes an ExpansionArray of
    the result's shape and format.  ``optimize`` is accepted and ignored (a contraction of at most two
    operands has one order).

    Restrictions: at most two operands (a ``TypeError`` says so: contract pairwise); ``dtype=``,
    ``order=`` and ``casting=`` other than NumPy's defaults raise a ``TypeError`` naming them (the
    result has the operands' format; convert with ``astype``)."""
    for name, value in kwargs.items():
        if name not in _DEFAULTS:
            raise TypeError(f"np.einsum: unexpected argument {name!r}")
        if value is not _DEFAULTS[name] and value != _DEFAULTS[name]:
            raise TypeError(f"np.einsum: {name}={value!r} is not supported for expansions (the result has the "
                            f"operands' format; convert it with astype)")
    if not args:
        raise TypeError("np.einsum: no subscripts and no operands")
    if isinstance(args[0], str):
        spec, ops = args[0], list(args[1:])
    else:
        spec, ops = _subscripts_from_lists(args)
    if len(ops) > 2:
        raise TypeError(f"np.einsum: {len(ops)} operands; the expansions' einsum takes one or two (contract them "
                        f"pairwise, one einsum per pair)")
    if not ops:
        raise ValueError("np.einsum: no operands")
    if len(ops) == 2:
        ops = list(operands(ops[0], ops[1]))
    elif not isinstance(ops[0], ExpansionArray):
        raise TypeError(f"np.einsum: the operand must be an ExpansionArray, got {type(ops[0]).__name__}")
    ins, out_labels = _parse(spec, [x.ndim for x in ops])
    pairs = [_diagonal(x, labels) for x, labels in zip(ops, ins)]
    sizes = _sizes([x for x, _ in pairs], [labels for _, labels in pairs])
    if len(pairs) == 1:
        (x, lx), = pairs
        x, lx = _sum_out(x, lx, out_labels)
        r = _arrange(x, lx, out_labels)
    else:
        (x, lx), (y, ly) = pairs
        x, lx = _sum_out(x, lx, set(out_labels) | set(ly))
        y, ly = _sum_out(y, ly, set(out_labels) | set(lx))
        r = _two(x, lx, y, ly, out_labels, sizes)
    return r if out is None else write_out(out, r, "np.einsum")
