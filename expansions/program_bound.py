"""The proven error bound of a traced program, composed along its graph (``expansions.tune``'s report).

:func:`composed_bound` runs the program (as :class:`expansions.programs.cpu.Plan` runs it, bit for bit
the op-by-op result) on sample inputs and, for each of a few sample elements, carries along the graph
an upper bound ``E_v`` on ``|v~ - v|``, the distance between the value ``v~`` a node computed (the
exact sum of its terms) and the value ``v`` of the same expression in exact real arithmetic on the
same inputs.  Every quantity below is an exact rational: the computed values through the exact
conversion of their terms, the per-operation bounds from :mod:`expansions.bounds` and
:mod:`expansions.dw.bounds`, and every intermediate bound rounded up (:func:`expansions.bounds.round_up`;
square roots rounded outward by integer square roots), so the result is rigorous for those
elements (an a-posteriori bound: it uses the computed values).  What it is NOT: a bound for every
input; it says nothing about other elements.

Operands.  An operation runs in its format (R, dtype); an operand of another format is converted by
:func:`expansions.operations.operands` (exact when widening, rounded when narrowing).  With ``x~`` the
operand's computed value and ``x'`` the converted one, ``|x' - x| <= E'_x = E_x + |x' - x~|``.

Local error.  With ``z = x' op y'`` (exact), the operation's output ``v~`` satisfies
``|v~ - z| <= L``, ``L`` from the algorithm that ran (:func:`expansions.dispatch.method`):

* safe addition (R > 2): ``L = add_safe(R, p) |z|`` (Collange, Joldes, Muller, Popescu, ASAP 2016,
  Prop. III.1), operands ulp-nonoverlapping, the hypothesis 2^(R+1) <= 2^p / 7;
* fast addition: no proven bound (ibid., Fig. 5): the program's bound is not proven;
* truncated product: ``L = mul_truncated(R, p) |x'_0 y'_0| + mul_underflow_term(R)`` (ibid., Prop. IV.2,
  with the library's underflow accounting), operands ulp-nonoverlapping;
* Newton division, reciprocal, square root (any R): ``L = b |z| + newton_underflow_term(R)`` with ``b``
  from :func:`expansions.bounds.div`, :func:`~expansions.bounds.reciprocal`, :func:`~expansions.bounds.sqrt`
  (error recurrences on the proven bounds of the product and the safe addition);
* R = 2, double-word algorithms: ``L = b |z|`` with ``b`` of Joldes, Muller, Popescu, ACM TOMS 2017,
  Table 1 (Lefevre et al., ACM TOMS 2023 for the square root) where one is proven; their
  hypotheses are checked per element: double-word operands (``xh = RN(xh + xl)``) and no
  underflow or overflow (every nonzero leading term of the operands and the result, and the exact
  result of + - * / itself, so that a result that underflows to zero is caught, in
  [2^(emin+3p), 2^(emax-4)], a conservative margin of this library);
* renormalization after an operation: error-free (R terms into R terms; the 2Sums of VecSum and
  VecSumErrBranch, Joldes, Marty, Muller, Popescu, IEEE TC 2015); operands must be ulp-nonoverlapping
  (checked per element; an operation run with ``renormalize=False`` may break it downstream).

Propagation (first-order-free; ``dx = x' - x``, ``|dx| <= E'_x``, the same for y):

* ``x + y``, ``x - y``: ``|v~ - (x +- y)| <= E'_x + E'_y + L``;
* ``x * y``: ``x' y' - x y = x' dy + y' dx - dx dy``, so ``E <= |x'| E'_y + |y'| E'_x + E'_x E'_y + L``;
* ``x / y``: ``x'/y' - x/y = (y' dx - x' dy) / (y' (y' - dy))``, so, when ``E'_y < |y'|``,
  ``E <= (|y'| E'_x + |x'| E'_y) / (|y'| (|y'| - E'_y)) + L`` (the reciprocal: ``x' = 1``, ``E'_x = 0``);
  otherwise the divisor may be zero and the bound is not proven;
* ``sqrt(x)``: ``|sqrt(x') - sqrt(x)| = |dx| / (sqrt(x') + sqrt(x)) <= E'_x / sqrt(x')`` when
  ``E'_x <= x'`` (then x >= 0), 0 when ``x' = 0 = E'_x``; otherwise not proven;
* ``-x``, ``|x|``: exact, ``E`` unchanged (``||x~| - |x|| <= |x~ - x|``);
* a constant or a float-array input promoted to an expansion: ``E = |promoted - value|``, exactly
  (decimal strings and mpmath numbers by their exact rational value);
* comparisons and ``where``: no bound (a comparison of computed values may decide the other way):
  not proven, with the node named;
* the elementary functions: their bounds are stated, measured ones (``bounds.ELEMENTARY``), not
  proven: not proven, with the node named.

The output: ``E`` and the relative bound ``E / (|v~| - E)`` (>= |v~ - v| / |v|, since |v| >= |v~| - E),
infinite when ``E >= |v~|``.  Elements whose inputs are not finite are left out (the non-finite rule,
not a bound, governs them); a finite element with a non-finite intermediate is not proven (overflow).
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np

from . import bounds as B
from . import dispatch
from .arraytype import ExpansionArray
from .backends import to_numpy
from .dw import bounds as DW
from .formats import format_of
from .operations import operands
from .programs import Program
from .programs.cpu import Plan
from .programs.trace import BINARY, COMPARE, ELEMENTARY, ELEMENTARY2
from .reference.fp import round_fraction


class NotProven(Exception):
    """Why a node (hence the program) has no proven bound."""


@dataclasses.dataclass
class ComposedBound:
    """The composed bound of a program on sample elements (see the module docstring)."""

    proven: bool
    relative: float | None  # the largest relative bound over the outputs and elements (None: not proven)
    reason: str  # why not proven ('' when proven)
    elements: int  # sample elements evaluated
    skipped: int  # elements left out (non-finite inputs)
    absolute: dict = dataclasses.field(default_factory=dict)  # output node id: [E per element] (Fractions)
    computed: dict = dataclasses.field(default_factory=dict)  # output node id: [computed value per element]
    indices: list = dataclasses.field(default_factory=list)  # the flat indices of the elements

    def text(self) -> str:
        if not self.proven:
            return f"not proven: {self.reason}"
        rel = "0" if self.relative == 0 else (f"2^{math.log2(self.relative):.1f}" if self.relative != math.inf
                                              else "inf")
        return (f"{rel} relative (a-posteriori, composed from the operations' proven bounds on "
                f"{self.elements} sample elements)")


def _up(q: Fraction) -> Fraction:
    return B.round_up(q)


def _sqrt_down(q: Fraction) -> Fraction:
    """A rational <= sqrt(q), within about 2^-64 relative (q >= 0)."""
    if q <= 0:
        return Fraction(0)
    k = max(0, 64 - (q.numerator.bit_length() - q.denominator.bit_length()) // 2)
    return Fraction(math.isqrt((q.numerator << (2 * k)) // q.denominator), 1 << k)


def _sqrt_up(q: Fraction) -> Fraction:
    """A rational >= sqrt(q)."""
    if q <= 0:
        return Fraction(0)
    k = max(0, 64 - (q.numerator.bit_length() - q.denominator.bit_length()) // 2)
    return Fraction(math.isqrt(-((-q.numerator << (2 * k)) // q.denominator)) + 1, 1 << k)


def _float_up(q: Fraction) -> float:
    """The smallest float >= q >= 0 (inf beyond the float range)."""
    try:
        f = float(q)
    except OverflowError:
        return math.inf
    return float(np.nextafter(f, np.inf)) if Fraction(f) < q else f


def _value(row) -> Fraction:
    return sum((Fraction(float(t)) for t in row), Fraction(0))


def _exact_scalar(v) -> Fraction:
    """The exact rational value of a constant element (float, int, decimal string, mpmath number)."""
    if hasattr(v, "_mpf_"):
        man, exp = v.man_exp
        return Fraction(int(man)) * Fraction(2) ** int(exp)
    if isinstance(v, str):
        return Fraction(v.strip())
    return Fraction(float(v)) if isinstance(v, (float, np.floating)) else Fraction(v)


def _ulp_nonoverlapping(row, fmt) -> bool:
    return B.ulp_nonoverlapping([Fraction(float(t)) if t != 0 else 0.0 for t in row], fmt)


def _double_word(row, fmt) -> bool:
    hi, lo = Fraction(float(row[0])), Fraction(float(row[1]))
    return round_fraction(hi + lo, fmt) == hi or (hi == 0 and lo == 0)


def _in_range(lead, fmt) -> bool:
    a = abs(Fraction(float(lead)))
    return a == 0 or Fraction(2) ** (fmt.emin + 3 * fmt.p) <= a <= Fraction(2) ** (fmt.emax - 4)


def _exact_in_range(z: Fraction, fmt) -> bool:
    """|z| (an exact result) is 0 or within :func:`_in_range`'s margin: a nonzero result that rounds
    to zero (underflow) is not in range, although its computed leading term is 0."""
    return z == 0 or Fraction(2) ** (fmt.emin + 3 * fmt.p) <= z <= Fraction(2) ** (fmt.emax - 4)


def local_bound(op: str, alg: str, R: int, fmt, one_term: bool = False):
    """The local bound of algorithm ``alg``: (kind, relative factor, absolute term, hypotheses), kind
    'z' (relative to the exact result of the converted operands) or 'lead' (relative to
    ``|x'_0 y'_0|``), hypotheses 'nonoverlapping' or 'double-word'; NotProven where there is none.
    ``one_term``: a division whose divisor is not an expansion (the larger of the two Newton bounds)."""
    kind = "add" if op in ("add", "sub") else op
    if alg in DW._RELATIVE or alg in DW._NONE or alg == "dg_add22":
        b = DW.bound(alg, fmt.p)
        if b is None:
            raise NotProven(f"the double-word algorithm {alg} has no proven bound ({DW.no_bound_reason(alg)})")
        return "z", b.value, Fraction(0), "double-word"
    if kind == "add":
        if alg == "fast":
            raise NotProven("the fast addition has no proven bound (Collange et al. 2016, Fig. 5)")
        b = B.add_safe(R, fmt.p)
        if not b.hypotheses_hold:
            raise NotProven(f"the safe addition's hypotheses fail ({b.note})")
        return "z", b.value, Fraction(0), "nonoverlapping"
    if kind == "mul":
        return "lead", B.mul_truncated(R, fmt.p).value, B.mul_underflow_term(R, fmt), "nonoverlapping"
    b = {"div": B.div, "sqrt": B.sqrt, "reciprocal": B.reciprocal}[kind](R, fmt)
    value = b.value
    if kind == "div" and one_term:  # a divisor given as floats may take the one-term kernel (m = 1)
        one = B.div(R, fmt, m=1)
        value, b = max(value, one.value), (b if b.hypotheses_hold and one.hypotheses_hold else one)
    if not b.hypotheses_hold:
        raise NotProven(f"the Newton {kind}'s hypotheses fail ({b.note})")
    return "z", value, B.newton_underflow_term(R, fmt), "nonoverlapping"


def _check(hyp: str, rows, fmt, result_row):
    for row in rows:
        if hyp == "double-word":
            if not _double_word(row, fmt):
                raise NotProven("an operand is not a double word (xh = RN(xh + xl) fails)")
            if not _in_range(row[0], fmt):
                raise NotProven("an operand is near underflow or overflow (the double-word proofs assume neither)")
        elif not _ulp_nonoverlapping(row, fmt):
            raise NotProven("an operand is not ulp-nonoverlapping")
    if hyp == "double-word" and not _in_range(result_row[0], fmt):
        raise NotProven("the result is near underflow or overflow (the double-word proofs assume neither)")


# the propagation rules, one per operation (the module docstring): (x', E'_x, y', E'_y) -> propagated error


def propagate_add(x, ex, y, ey):
    return ex + ey


def propagate_mul(x, ex, y, ey):
    return abs(x) * ey + abs(y) * ex + ex * ey


def propagate_div(x, ex, y, ey):
    if not ey < abs(y):
        raise NotProven("the divisor's error bound reaches its value (it may be zero)")
    return (abs(y) * ex + abs(x) * ey) / (abs(y) * (abs(y) - ey))


def propagate_sqrt(x, ex):
    if not ex <= x:
        raise NotProven("the square root's operand may be negative (its error bound reaches its value)")
    return Fraction(0) if x == 0 else ex / _sqrt_down(x)


PROPAGATE = {"add": propagate_add, "sub": propagate_add, "mul": propagate_mul, "div": propagate_div,
             "sqrt": propagate_sqrt}


def _exact_result(op, x, y=None):
    """|z| for the local bound (an upper bound for the square root)."""
    if op in ("add", "sub"):
        return abs(x + y) if op == "add" else abs(x - y)
    if op == "mul":
        return abs(x * y)
    if op == "div":
        return abs(x / y) if y != 0 else None
    if op == "reciprocal":
        return abs(1 / x) if x != 0 else None
    return _sqrt_up(x)


def _node_name(k, node) -> str:
    line = node.line.split(": ", 1)[-1] if node.line else ""
    return f"node {k} ({node.op}{', `' + line + '`' if line else ''})"



def sample_values(fn, samples, overrides=None):
    """``fn`` traced on the samples (moved to the host) and run as the CPU plan keeping every node's
    value: (args, graph, outputs, plan, vals, shape, finite), ``finite`` the elements whose inputs and
    constants are all finite.  What the composed bound and the true error (:mod:`expansions.program_exact`)
    evaluate their nodes on."""
    args = tuple(a.to_device("cpu") if isinstance(a, ExpansionArray) else to_numpy(a)
                 if hasattr(a, "__cuda_array_interface__") else a for a in samples)
    graph, (_, items) = Program(fn, overrides=overrides).trace(*args)
    outputs = tuple(("node", v) if kind == "node" else ("value", v) for kind, v in items)
    plan = Plan(graph, outputs, "cpu")
    vals, shape = plan._run(plan.wanted, args, keep_all=True)
    nodes = graph.nodes
    count = int(np.prod(shape))
    finite = np.ones(count, dtype=bool)
    for j in plan.wanted:
        if nodes[j].op in ("input", "const") and nodes[j].kind in ("exp", "float"):
            finite &= np.isfinite(np.asarray(vals[j], dtype=np.float64).reshape(count, -1)).all(axis=1)
    return args, graph, outputs, plan, vals, shape, finite

def composed_bound(fn, samples, overrides=None, elements: int = 64) -> ComposedBound:
    """The proven bound of ``fn`` (with ``overrides``, as :func:`expansions.tune` chooses them) on up to
    ``elements`` of the sample elements (evenly spaced among those with finite inputs): see the module
    docstring."""
    args, graph, outputs, plan, vals, shape, finite = sample_values(fn, samples, overrides)
    nodes = graph.nodes
    count = int(np.prod(shape))
    good = np.flatnonzero(finite)
    chosen = good if len(good) <= elements else good[np.linspace(0, len(good) - 1, elements).astype(int)]
    out_nodes = [i for kind, i in outputs if kind == "node"]
    result = ComposedBound(True, 0.0, "", len(chosen), count - len(good), indices=[int(i) for i in chosen])
    try:
        for i in out_nodes:
            if nodes[i].kind != "exp":
                raise NotProven(f"output {_node_name(i, nodes[i])} is a comparison")
        local = {}
        for j in plan.wanted:
            n = nodes[j]
            if n.op in COMPARE or n.op == "where":
                if any(j in plan.ancestors[i] for i in out_nodes):
                    raise NotProven(f"{_node_name(j, n)}: a comparison of computed values may decide the other way")
            if n.op in ELEMENTARY or n.op in ELEMENTARY2:
                raise NotProven(f"{_node_name(j, n)}: the elementary functions have stated (empirical) bounds "
                                "only, expansions.bounds.ELEMENTARY")
            if n.op in BINARY or n.op in ("sqrt", "reciprocal"):
                R = n.fmt[0]
                alg = ("reciprocal" if n.op == "reciprocal" else
                       dispatch.method(n.op, n.params[0], R))
                try:
                    local[j] = local_bound(n.op, alg, R, format_of(n.fmt[1]), n.one_term)
                except NotProven as exc:
                    raise NotProven(f"{_node_name(j, n)}: {exc}") from None
        for i in out_nodes:
            result.absolute[i], result.computed[i] = [], []
        conv = {}  # the converted operands of each binary node at the chosen elements
        for j in plan.wanted:
            n = nodes[j]
            if n.op in BINARY:
                xa, ya = (ExpansionArray(np.ascontiguousarray(np.asarray(vals[a])[chosen])) for a in n.args)
                xc, yc = operands(xa, ya, n.params[2], n.params[3])
                conv[j] = (np.asarray(xc.terms), np.asarray(yc.terms))
        worst = Fraction(0)
        for k, e in enumerate(chosen):
            err, val = {}, {}
            for j in plan.wanted:
                n = nodes[j]
                try:
                    err[j], val[j] = _node_error(j, n, plan, vals, conv, args, shape, e, k, err, val, local)
                except NotProven as exc:
                    raise NotProven(f"{_node_name(j, n)}: {exc}") from None
            for i in out_nodes:
                E, v = err[i], val[i]
                result.absolute[i].append(E)
                result.computed[i].append(v)
                if E == 0:
                    continue
                worst = max(worst, _up(E / (abs(v) - E)) if abs(v) > E else Fraction(2) ** 1100)
        result.relative = _float_up(worst)
    except NotProven as exc:
        return ComposedBound(False, None, str(exc), len(chosen), count - len(good))
    return result


def _node_error(j, n, plan, vals, conv, args, shape, e, k, err, val, local):
    """(E, computed value) of node j at flat element e (the k-th chosen)."""
    if n.kind != "exp":
        return None, None
    row = np.asarray(vals[j][e])
    if not np.isfinite(row).all():
        raise NotProven("a non-finite intermediate at a finite input (overflow, or an invalid operation)")
    v = _value(row)
    if n.op in ("input", "const"):
        return Fraction(0), v
    if n.op == "promote":
        (src,) = n.args
        raw = plan._leaf_value(src, args)
        if isinstance(raw, (np.ndarray, list, tuple)) or hasattr(raw, "shape"):
            raw = np.broadcast_to(np.asarray(raw), shape).reshape(-1)[e]
        return _up(abs(v - _exact_scalar(raw))), v
    if n.op in ("negative", "absolute"):
        return err[n.args[0]], v
    if n.op == "power_finish":  # x ** n, n < 0: the reciprocal's bound where the unscaled rows were kept
        if not np.array_equal(row, np.asarray(vals[n.args[1]][e])):
            raise NotProven("x ** n near underflow or overflow (its scaled rows have no composed bound)")
        return err[n.args[1]], v
    fmt = format_of(n.fmt[1])
    kind, rel, absolute, hyp = local[j]
    if n.op in BINARY:
        xr, yr = conv[j][0][k], conv[j][1][k]
        if not (np.isfinite(xr).all() and np.isfinite(yr).all()):
            raise NotProven("an operand overflows in the operation's format")
        x, y = _value(xr), _value(yr)
        ex = _up(err[n.args[0]] + abs(x - val[n.args[0]]))
        ey = _up(err[n.args[1]] + abs(y - val[n.args[1]]))
        _check(hyp, (xr, yr), fmt, row)
        prop = PROPAGATE[n.op](x, ex, y, ey)
        if kind == "lead":
            L = rel * abs(Fraction(float(xr[0])) * Fraction(float(yr[0]))) + absolute
        else:
            z = _exact_result(n.op, x, y)
            if z is None:
                raise NotProven("division by zero")
            if hyp == "double-word" and not _exact_in_range(z, fmt):
                raise NotProven("the exact result is near underflow or overflow (the double-word proofs "
                                "assume neither)")
            L = rel * z + absolute
        return _up(prop + L), v
    # sqrt, reciprocal: the operand in the node's own format
    (a,) = n.args
    xr = np.asarray(vals[a][e])
    x, ex = val[a], err[a]
    _check(hyp, (xr,), fmt, row)
    if n.op == "reciprocal":
        prop = propagate_div(Fraction(1), Fraction(0), x, ex)
    else:
        prop = PROPAGATE["sqrt"](x, ex)
    z = _exact_result(n.op, x)
    if z is None:
        raise NotProven("division by zero")
    return _up(prop + rel * z + absolute), v
