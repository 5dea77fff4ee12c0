"""The true error of a traced program on sample elements, against an evaluation in mpmath
(``expansions.tune``'s independent check).

:func:`true_error` runs the program (as :class:`expansions.programs.cpu.Plan` runs it, bit for bit the
op-by-op result) and evaluates the same graph, element by element, in mpmath: every input and
constant by its exact value (the sum of an expansion's terms, a decimal string by its decimal value),
every operation, square root, reciprocal and elementary function by mpmath's correctly rounded
counterpart at ``bits`` bits, doubled until the outputs of two successive precisions agree to
:data:`AGREEMENT` relative (at most :data:`MAX_BITS`).  Comparisons and ``where`` take the branch of
the exact values.  The error of an element is ``|computed - exact| / |exact|`` (absolute where the exact
value is zero), over the expansion outputs.

Left out, and counted: elements with a non-finite input, a non-finite computed output, or an exact
value that is undefined (a division by zero, the square root or logarithm of a negative number, an
exact ``pow`` that is not real); boolean outputs are not compared.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import mpmath
import numpy as np

from .program_bound import sample_values

#: Two successive precisions must give every output to this relative difference.
AGREEMENT = mpmath.mpf(2) ** -40
#: The highest precision the evaluation doubles to, in bits.
MAX_BITS = 1 << 16

_FUNCTIONS = {"exp": mpmath.exp, "expm1": mpmath.expm1, "log": mpmath.log, "log1p": mpmath.log1p,
              "log2": lambda x: mpmath.log(x, 2), "log10": mpmath.log10, "sin": mpmath.sin, "cos": mpmath.cos,
              "tan": mpmath.tan, "atan": mpmath.atan, "asin": mpmath.asin, "acos": mpmath.acos,
              "sinh": mpmath.sinh, "cosh": mpmath.cosh, "tanh": mpmath.tanh, "atan2": mpmath.atan2,
              "pow": mpmath.power, "sqrt": mpmath.sqrt, "reciprocal": lambda x: 1 / x,
              "power_finish": lambda x, r: r,
              "negative": lambda x: -x, "absolute": abs, "add": lambda x, y: x + y, "sub": lambda x, y: x - y,
              "mul": lambda x, y: x * y, "div": lambda x, y: x / y, "eq": lambda x, y: x == y,
              "ne": lambda x, y: x != y, "lt": lambda x, y: x < y, "le": lambda x, y: x <= y,
              "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y}


class _Undefined(Exception):
    """The exact value of an element is not a real number."""


@dataclasses.dataclass
class TrueError:
    """The largest true relative error of a program's expansion outputs on sample elements."""

    error: float  # the largest relative error (absolute where the exact value is zero)
    elements: int  # elements compared
    skipped: int  # elements left out (see the module docstring)
    bits: int  # the precision the evaluation settled at

    def text(self) -> str:
        return f"{self.error:.3g} on {self.elements} sample elements (mpmath, {self.bits} bits)"


def _exact(v) -> Fraction:
    if hasattr(v, "_mpf_"):
        man, exp = v.man_exp
        return Fraction(int(man)) * Fraction(2) ** int(exp)
    if isinstance(v, str):
        return Fraction(v.strip())
    if isinstance(v, (bool, np.bool_)):
        return v
    return Fraction(float(v)) if isinstance(v, (float, np.floating)) else Fraction(int(v))


def _row_value(row) -> Fraction:
    return sum((Fraction(float(t)) for t in row), Fraction(0))


def _mp(q: Fraction):
    return mpmath.mpf(q.numerator) / q.denominator


def _leaves(graph, plan, vals, args, shape, e):
    """The exact values (Fractions, or bools) of the leaves of the graph at flat element e."""
    out = {}
    for j in plan.wanted:
        n = graph.nodes[j]
        if n.op in ("input", "const"):
            if n.kind == "exp":
                out[j] = _row_value(np.asarray(vals[j][e]))
            else:
                raw = plan._leaf_value(j, args)
                if isinstance(raw, (np.ndarray, list, tuple)) or hasattr(raw, "shape"):
                    raw = np.broadcast_to(np.asarray(raw), shape).reshape(-1)[e]
                out[j] = _exact(raw)
    return out


def _evaluate(graph, wanted, leaves, bits: int) -> dict:
    """The values of the nodes at ``bits`` bits (mpmath numbers; bools for comparisons)."""
    val = {}
    with mpmath.workprec(bits):
        for j in wanted:
            n = graph.nodes[j]
            if j in leaves:
                v = leaves[j]
                val[j] = v if isinstance(v, (bool, np.bool_)) else _mp(v)
            elif n.op == "promote":
                val[j] = val[n.args[0]]
            elif n.op == "where":
                c, x, y = n.args
                val[j] = val[x] if val[c] else val[y]
            else:
                try:
                    v = _FUNCTIONS[n.op](*[val[a] for a in n.args])
                except (ZeroDivisionError, ValueError):
                    raise _Undefined from None
                if isinstance(v, mpmath.mpc) or (isinstance(v, mpmath.mpf) and not mpmath.isfinite(v)):
                    raise _Undefined
                val[j] = v
    return val


def true_error(fn, samples, overrides=None, elements: int = 64, bits: int = 256) -> TrueError:
    """The true error of ``fn`` (with ``overrides``, as :func:`expansions.tune` chooses them) on up to
    ``elements`` of the sample elements (evenly spaced among those with finite inputs), evaluated in
    mpmath from ``bits`` bits up (see the module docstring)."""
    args, graph, outputs, plan, vals, shape, finite = sample_values(fn, samples, overrides)
    nodes = graph.nodes
    count = int(np.prod(shape))
    out_nodes = [i for kind, i in outputs if kind == "node" and nodes[i].kind == "exp"]
    for i in out_nodes:
        finite &= np.isfinite(np.asarray(vals[i], dtype=np.float64).reshape(count, -1)).all(axis=1)
    good = np.flatnonzero(finite)
    chosen = good if len(good) <= elements else good[np.linspace(0, len(good) - 1, elements).astype(int)]
    worst, compared, top_bits = 0.0, 0, bits
    for e in chosen:
        leaves = _leaves(graph, plan, vals, args, shape, e)
        b = bits
        try:
            exact = _evaluate(graph, plan.wanted, leaves, b)
            while b < MAX_BITS:
                b *= 2
                finer = _evaluate(graph, plan.wanted, leaves, b)
                with mpmath.workprec(b):
                    settled = all(abs(finer[i] - exact[i]) <= AGREEMENT * abs(finer[i]) for i in out_nodes)
                exact = finer
                if settled:
                    break
        except _Undefined:
            continue
        top_bits = max(top_bits, b)
        compared += 1
        with mpmath.workprec(b):
            for i in out_nodes:
                got = _mp(_row_value(np.asarray(vals[i][e])))
                d = abs(got - exact[i])
                worst = max(worst, float(d if exact[i] == 0 else d / abs(exact[i])))
    return TrueError(worst, compared, count - compared, top_bits)
