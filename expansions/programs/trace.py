"""Tracing a Python function of expansions into a graph of the library's operations.

:func:`trace` calls the user's function once with :class:`Tracer` objects in place of its
ExpansionArray and float-array arguments.  Every operation on a tracer (the operators, the public
functions :func:`expansions.add` ... :func:`expansions.where`, which hand a tracer to
``HANDLED["traced"]``, and the NumPy ufuncs) appends a :class:`Node` to a :class:`Graph` and returns
a new tracer; nothing is computed.  Each node records what the op-by-op call would have done: the
operation, its operands, ``method``/``renormalize``/``terms``/``dtype``, and the format (R, dtype)
the public dispatch (:func:`expansions.operations.operands`) gives its result.

What cannot be traced raises :class:`FuseError` naming the construct and the user's source line:
Python control flow on a traced value (``if x > 0:``), a function or attribute the programs do not
support, an operation without an expansion operand.
"""

from __future__ import annotations

import contextvars
import linecache
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import dispatch
from .. import formats as F
from ..arraytype import HANDLED, ExpansionArray, Traced
from ..elementwise import binary_powering

_PACKAGE = str(Path(__file__).resolve().parents[1])
_NUMPY = str(Path(np.__file__).resolve().parent)

BINARY = ("add", "sub", "mul", "div")
COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")
UNARY = ("sqrt", "reciprocal", "negative", "absolute")
#: The elementary functions (:mod:`expansions.elementary`) of one operand, and of two (``atan2(y, x)``,
#: ``pow(x, y)`` for an exponent that is not an integer: an integer one becomes its products).
ELEMENTARY = ("exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "atan", "asin", "acos",
              "sinh", "cosh", "tanh")
ELEMENTARY2 = ("atan2", "pow")

#: NumPy ufuncs a tracer takes, and the operation each stands for.
UFUNCS = {np.add: "add", np.subtract: "sub", np.multiply: "mul", np.true_divide: "div", np.sqrt: "sqrt",
          np.negative: "negative", np.absolute: "absolute", np.equal: "eq",
          np.not_equal: "ne", np.less: "lt", np.less_equal: "le", np.greater: "gt", np.greater_equal: "ge",
          np.exp: "exp", np.expm1: "expm1", np.log: "log", np.log1p: "log1p", np.log2: "log2", np.log10: "log10",
          np.sin: "sin", np.cos: "cos", np.tan: "tan", np.arctan: "atan", np.arcsin: "asin", np.arccos: "acos",
          np.sinh: "sinh", np.cosh: "cosh", np.tanh: "tanh", np.arctan2: "atan2", np.power: "power"}

_OPERATOR_TEXT = {"add": "+", "sub": "-", "mul": "*", "div": "/", "eq": "==", "ne": "!=", "lt": "<", "le": "<=",
                  "gt": ">", "ge": ">="}


class FuseError(TypeError):
    """A construct ``expansions.fuse`` cannot trace; the message names it and the user's source line."""


def user_line() -> str:
    """'file:line: source' of the innermost frame outside the expansions package and NumPy (the user's
    line being traced)."""
    f = sys._getframe(1)
    while f is not None:
        name = f.f_code.co_filename
        if not name.startswith(_PACKAGE) and _NUMPY not in name and not name.startswith("<__array"):
            src = linecache.getline(name, f.f_lineno).strip()
            return f"{name}:{f.f_lineno}: {src}" if src else f"{name}:{f.f_lineno}"
        f = f.f_back
    return "<unknown line>"


def fail(what: str, hint: str = ""):
    raise FuseError(f"expansions.fuse cannot trace {what} at {user_line()}" + (f" ({hint})" if hint else ""))


@dataclass(frozen=True)
class Node:
    """One value of a program.  ``op``: 'input' (argument ``index``), 'const' (``value``), 'promote' (a
    non-expansion operand ``args[0]`` promoted exactly to ``fmt``, as the public dispatch does), or an
    operation of BINARY, COMPARE, UNARY, ELEMENTARY, ELEMENTARY2, 'where' or 'power_finish' (the end
    of ``x ** n`` for n < 0 on (x, reciprocal of the products), params (n,)) on the values ``args``
    (node ids).  ``kind``: 'exp' (an expansion of format ``fmt`` = (R, dtype name)), 'bool' or 'float' (a NumPy array).
    ``params``: (method, renormalize, terms, dtype) of the arithmetic; ``one_term``: a division whose
    divisor is not an expansion (the cheaper one-term kernel may run, as in the public dispatch)."""

    op: str
    args: tuple = ()
    kind: str = "exp"
    fmt: tuple | None = None
    ndim: int = 0
    params: tuple = ()
    index: int = -1
    one_term: bool = False
    line: str = ""

    def key(self):
        """The node without its source line (what the program's signature is made of)."""
        return (self.op, self.args, self.kind, self.fmt, self.ndim, self.params, self.index, self.one_term)


class Graph:
    """The nodes of a program in the order the user's function created them, and the constants."""

    def __init__(self):
        self.nodes: list[Node] = []
        self.consts: dict[int, object] = {}
        self._const_ids: dict[int, int] = {}

    def add(self, node: Node) -> int:
        self.nodes.append(node)
        return len(self.nodes) - 1

    def const(self, value) -> int:
        """The node of a constant (a Python or NumPy scalar or array, or an ExpansionArray closed over)."""
        if id(value) in self._const_ids:
            return self._const_ids[id(value)]
        if isinstance(value, ExpansionArray):
            node = Node("const", kind="exp", fmt=(value.nterms, value.dtype.name), ndim=value.ndim)
        elif isinstance(value, bool):
            node = Node("const", kind="bool")
        elif isinstance(value, (int, float, str)) or hasattr(value, "_mpf_"):  # promoted as op by op does
            node = Node("const", kind="float")
        else:
            a = np.asarray(value)
            if a.dtype == object or a.dtype.kind not in "biuf":
                fail(f"an operand of type {type(value).__name__}", "operands are expansions, numbers or arrays of them")
            node = Node("const", kind="bool" if a.dtype == bool else "float", ndim=a.ndim)
        i = self.add(node)
        self.consts[i] = value
        self._const_ids[id(value)] = i
        return i

    def signature(self):
        """What the compiled programs are cached by: the nodes (operations, formats, ranks) and the
        constants' values."""
        consts = tuple(sorted((i, _const_key(v)) for i, v in self.consts.items()))
        return tuple(n.key() for n in self.nodes), consts


def _const_key(v):
    if isinstance(v, (int, float, str)) or hasattr(v, "_mpf_"):
        return (type(v).__name__, repr(v), float(v).hex() if isinstance(v, float) else None)
    if isinstance(v, ExpansionArray):
        t = np.asarray(v.terms) if v.device == "cpu" else v.terms.get()
        return ("exp", t.shape, t.dtype.str, t.tobytes())
    a = np.asarray(v)
    return (type(v).__name__, a.shape, a.dtype.str, a.tobytes())


class Tracer(Traced):
    """A traced value: a node of a graph.  Supports what a program may do with an ExpansionArray."""

    __slots__ = ("graph", "id")
    __array_priority__ = 200

    def __init__(self, graph: Graph, node_id: int):
        self.graph = graph
        self.id = node_id

    @property
    def node(self) -> Node:
        return self.graph.nodes[self.id]

    nterms = property(lambda self: self._exp("nterms").fmt[0], doc="R (static)")
    dtype = property(lambda self: np.dtype(self._exp("dtype").fmt[1]), doc="the terms' dtype (static)")
    ndim = property(lambda self: self.node.ndim, doc="the rank (static)")

    def _exp(self, what):
        if self.node.kind != "exp":
            fail(f"`.{what}` of a traced {self.node.kind} array")
        return self.node

    def __getattr__(self, name):
        if name.startswith("__"):  # a protocol probe (NumPy's, copy's): not there
            raise AttributeError(name)
        fail(f"the attribute `.{name}` of a traced value", "a program uses only the arithmetic, comparisons, "
             "sqrt, reciprocal, abs, negation, where and the elementary functions")

    def __bool__(self):
        fail("Python control flow on a traced value (`if`, `while`, `and`, `or`, `not`, bool())",
             "the value is not known while tracing: use expansions.where")

    def __float__(self):
        fail("float() of a traced value", "the value is not known while tracing")

    def __int__(self):
        fail("int() of a traced value", "the value is not known while tracing")

    def __index__(self):
        fail("a traced value used as an index or a size")

    def __len__(self):
        fail("len() of a traced value", "shapes are not static in a program: use ndim")

    def __iter__(self):
        fail("iteration over a traced value")

    def __getitem__(self, key):
        fail("indexing a traced value (`x[...]`)", "index outside the program")

    def __setitem__(self, key, value):
        fail("assignment into a traced value (`x[...] = ...`)")

    def __array__(self, dtype=None, copy=None):
        fail("the conversion of a traced value to a NumPy array")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        op = UFUNCS.get(ufunc)
        if op is None or method != "__call__" or kwargs:
            fail(f"numpy.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
                 + (f" with {sorted(kwargs)}" if kwargs else ""))
        return record(op, *inputs)

    def __array_function__(self, func, types, args, kwargs):
        if func is np.where and len(args) == 3 and not kwargs:
            return record("where", *args)
        fail(f"numpy.{func.__name__}")

    def __neg__(self):
        return record("negative", self)

    def __pos__(self):
        return self

    def __abs__(self):
        return record("absolute", self)

    def __pow__(self, other):
        return record("power", self, other)

    def __rpow__(self, other):
        fail("`**` with a traced exponent and a base that is not an expansion", "use expansions.pow(base, x)")

    def __matmul__(self, other):
        fail("`@`", "a program is elementwise")

    __rmatmul__ = __matmul__

    def __floordiv__(self, other):
        fail("`//`")

    __rfloordiv__ = __floordiv__

    def __mod__(self, other):
        fail("`%`")

    __rmod__ = __mod__

    __hash__ = None


def _operator(op, reflected=False):
    def method(self, other):
        return record(op, other, self) if reflected else record(op, self, other)

    method.__name__ = f"__{'r' if reflected else ''}{op}__"
    return method


for _op, _name in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("div", "truediv")):
    setattr(Tracer, f"__{_name}__", _operator(_op))
    setattr(Tracer, f"__r{_name}__", _operator(_op, reflected=True))
for _op in COMPARE:
    setattr(Tracer, f"__{_op}__", _operator(_op))


def _graph_of(values) -> Graph:
    graphs = {id(v.graph): v.graph for v in values if isinstance(v, Tracer)}
    if len(graphs) != 1:
        fail("a value traced by another program")
    return next(iter(graphs.values()))


def _node_id(g: Graph, v) -> int:
    return v.id if isinstance(v, Tracer) else g.const(v)


def _format(g: Graph, ids, terms=None, dtype=None, what="operation"):
    """The format (R, dtype name) of an operation on ``ids``, as :func:`expansions.operations.operands`
    gives it (the wider of the expansions' formats, or ``terms``/``dtype``)."""
    ex = [g.nodes[i].fmt for i in ids if g.nodes[i].kind == "exp"]
    if not ex:
        fail(f"`{what}` without an expansion operand", "plain float arithmetic happens outside a program: "
             "make one operand an expansion with expansions.array")
    R = max(f[0] for f in ex)
    dt = "float64" if any(f[1] == "float64" for f in ex) else "float32"
    try:
        R = R if terms is None else F.check_terms(terms)
        dt = dt if dtype is None else F.canonical_dtype(dtype).name
    except (ValueError, TypeError) as exc:
        fail(f"`{what}` with terms={terms!r}, dtype={dtype!r}", str(exc))
    return R, dt


def _promoted(g: Graph, i: int, fmt) -> int:
    """Node i as an expansion of format fmt: itself when it is one (the operation converts it), else
    a 'promote' node (the exact promotion of the public dispatch)."""
    n = g.nodes[i]
    if n.kind == "exp":
        return i
    if n.kind == "bool":
        fail("a boolean array as an arithmetic operand")
    return g.add(Node("promote", (i,), "exp", fmt, n.ndim, line=user_line()))


#: While :func:`trace` runs with overrides (``expansions.tune``): {"count": k, "by_index": {k: changes}},
#: the changes ({"terms": R, "method": name, "dtype": ...}) to the k-th arithmetic operation recorded.
_OVERRIDES = contextvars.ContextVar("expansions_trace_overrides", default=None)


def record(op: str, *operands, method="auto", renormalize=True, terms=None, dtype=None):
    """Append the node of ``op`` on ``operands`` to their graph; the tracer of its result."""
    overrides = _OVERRIDES.get()
    if overrides is not None and op in BINARY:
        change = overrides["by_index"].get(overrides["count"], {})
        overrides["count"] += 1
        terms, method, dtype = change.get("terms", terms), change.get("method", method), change.get("dtype", dtype)
    if op in ("pow", "power") and _integer(operands[1]):
        return _integer_power(operands[0], int(operands[1]))
    g = _graph_of(operands)
    ids = [_node_id(g, v) for v in operands]
    ndim = max(g.nodes[i].ndim for i in ids)
    line = user_line()
    text = _OPERATOR_TEXT.get(op, op)
    if op in BINARY or op in COMPARE:
        fmt = _format(g, ids, terms, dtype, text)
        if op in BINARY:
            try:
                dispatch.method(op, method, fmt[0])
            except ValueError as exc:
                fail(f"`{text}` with method={method!r}", str(exc))
        one_term = op == "div" and g.nodes[ids[1]].kind != "exp"
        args = tuple(_promoted(g, i, fmt) for i in ids)
        params = (method, bool(renormalize), terms, dtype) if op in BINARY else ()
        node = Node(op, args, "bool" if op in COMPARE else "exp", None if op in COMPARE else fmt, ndim, params,
                    one_term=one_term, line=line)
    elif op in UNARY:
        (i,) = ids
        if g.nodes[i].kind != "exp":
            fail(f"`{op}` of a traced {g.nodes[i].kind} array", "its operand must be an expansion")
        fmt = g.nodes[i].fmt
        if op == "sqrt":
            try:
                dispatch.method("sqrt", method, fmt[0])
            except ValueError as exc:
                fail(f"`sqrt` with method={method!r}", str(exc))
        node = Node(op, (i,), "exp", fmt, ndim, (method, bool(renormalize)), line=line)
    elif op == "power":  # `**` and numpy.power take integer exponents (expansions.elementwise.power)
        fail("`**` (numpy.power) with an exponent that is not a Python or NumPy integer",
             "expansions.pow(x, y) takes any exponent")
    elif op in ELEMENTARY or op in ELEMENTARY2:
        if op in ELEMENTARY and g.nodes[ids[0]].kind != "exp":
            fail(f"`{op}` of a traced {g.nodes[ids[0]].kind} array", "its operand must be an expansion")
        fmt = _format(g, ids, what=op)
        node = Node(op, tuple(_promoted(g, i, fmt) for i in ids), "exp", fmt, ndim, line=line)
    elif op == "where":
        c, x, y = ids
        if g.nodes[c].kind != "bool":
            fail("`where` with a condition that is not boolean", "use a comparison")
        fmt = _format(g, (x, y), what="where")
        node = Node("where", (c, _promoted(g, x, fmt), _promoted(g, y, fmt)), "exp", fmt, ndim, line=line)
    else:
        fail(f"the operation {op!r}")
    return Tracer(g, g.add(node))


def _integer(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _integer_power(x, n: int):
    """x ** n for an integer n, recorded as :func:`expansions.elementwise.power` computes it: binary
    powering by truncated products (:func:`expansions.elementwise.binary_powering`), for n < 0 the
    reciprocal and a ``power_finish`` node (params (n,): :func:`expansions.elementwise.power_finish`,
    the scaled rows near underflow or overflow and the sign), the same operations in the same order."""
    if not isinstance(x, Tracer) or x.node.kind != "exp":
        fail("`**` (pow) of a base that is not a traced expansion")
    if n == 0:
        fail("`x ** 0` in a program", "the result is 1 everywhere (NaN included): write the constant")
    result = binary_powering(x, abs(n), lambda a, b: record("mul", a, b))
    if n > 0:
        return result
    r = record("reciprocal", result)
    g = x.graph
    return Tracer(g, g.add(Node("power_finish", (x.id, r.id), "exp", r.node.fmt, r.node.ndim, (n,),
                                line=user_line())))


def _record_handled(op, *operands, **kwargs):
    """``HANDLED["traced"]``: the public operations hand a tracer here."""
    if op == "where" and (operands[1] is None or operands[2] is None):
        fail("the one-argument `where`")
    return record(op, *operands, **kwargs)


HANDLED["traced"] = _record_handled


def argument_key(v):
    """How an argument enters the program's cache key: expansions and float/bool arrays by format and
    rank (they are traced), Python and NumPy scalars by value (they are constants of the graph)."""
    if isinstance(v, ExpansionArray):
        return ("exp", v.nterms, v.terms.dtype, v.terms.ndim - 1, type(v.terms))
    if isinstance(v, np.ndarray) and v.ndim > 0:
        if v.dtype.kind not in "biuf":
            raise FuseError(f"expansions.fuse: an argument array of dtype {v.dtype} (use float or bool arrays)")
        return ("array", v.dtype.str, v.ndim)
    if isinstance(v, (bool, int, float, str, np.generic, np.ndarray)) or hasattr(v, "_mpf_"):
        return ("scalar", type(v).__name__, _const_key(v))
    if hasattr(v, "__cuda_array_interface__"):
        return ("array", v.dtype.str, v.ndim, "cuda")
    raise FuseError(f"expansions.fuse: an argument of type {type(v).__name__} (pass expansions, arrays or scalars)")


def trace(fn, args, overrides=None):
    """(graph, output structure) of ``fn(*args)``: the output structure is ('one', item) or ('tuple',
    items), each item ('node', id) for a traced result or ('value', v) for anything else.
    ``overrides``: {k: {"terms": R, "method": name, "dtype": dt}} replaces those parameters of the
    k-th arithmetic operation (+ - * /, in the order the function performs them) while tracing."""
    g = Graph()
    traced_args = []
    for k, v in enumerate(args):
        key = argument_key(v)
        if key[0] == "scalar":
            traced_args.append(v)
            continue
        if key[0] == "exp":
            node = Node("input", kind="exp", fmt=(v.nterms, v.dtype.name), ndim=v.ndim, index=k)
        else:
            node = Node("input", kind="bool" if v.dtype == bool else "float", ndim=v.ndim, index=k)
        traced_args.append(Tracer(g, g.add(node)))
    token = _OVERRIDES.set({"count": 0, "by_index": dict(overrides)}) if overrides else None
    try:
        result = fn(*traced_args)
    finally:
        if token is not None:
            _OVERRIDES.reset(token)
    many = isinstance(result, (tuple, list))
    items = tuple(("node", r.id) if isinstance(r, Tracer) else ("value", r) for r in (result if many else (result,)))
    for r in (result if many else (result,)):
        if isinstance(r, Tracer) and r.graph is not g:
            raise FuseError("expansions.fuse: a result traced by another program")
    return g, ("tuple" if many else "one", items)
