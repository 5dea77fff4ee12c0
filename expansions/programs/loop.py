"""A traced program as ONE compiled CPU loop on the block engine (``expansions.fuse(fn, cpu="loop")``).

:func:`loop_code` turns the program into the instructions of :mod:`expansions.engine.program`, whose
one compiled loop runs it the way the engine runs one operation: the expansions in blocks of L (the
SIMD width), chunks of blocks over the cores, one workspace per chunk.  Per block each input is loaded
once (an input of one element, a scalar or a 0-d expansion, is broadcast into its rows once per
chunk), every node runs on workspace rows, and each output is stored once: no temporary array, every
intermediate in the workspace, whose rows a value frees after its last use.

Each node runs the engine's own compiled code for its operation, so the bits are those of op by op:

* ``+ - *`` by the safe, fast or truncated algorithms, with or without the renormalization, and the
  Newton reciprocal, division and square root (with the Newton renormalizer of the dispatch):
  ``fused.operation_block``, the function the engine's loop runs for every operation (``x - y`` is
  ``x + (-y)``, y's sign flipped as the engine flips it when it loads y; a divisor given as floats
  whose terms past the first are all zero takes the one-term division, decided per call on the whole
  array as :func:`expansions.operations.binary` decides it);
* negation (the sign flipped);
* at R = 2 the library's double-word defaults (``+ - * /`` and sqrt, ``expansions.dw.R2_DEFAULTS``,
  renormalized or not): ``fused_dw.rows_block``, the engine's R = 2 loop on a block's rows.

Programs of one format (R, dtype) made of these nodes run; anything else raises :class:`FuseError`
naming the node's line (the planned routine, ``cpu="plan"``, runs every program).

Nothing is compiled per program: the program is a table of instructions, and the loop that runs
every table is compiled once per dtype and kept in numba's cache on disk (``python -m expansions
warm`` compiles it ahead), so a new program, in this process or another, runs at once.
"""

from __future__ import annotations

import numpy as np

from .. import dispatch
from .. import engine as _engine
from ..bounds import newton_steps
from ..dw import R2_DEFAULTS
from ..formats import format_of
from ..promote import operand_terms
from .cpu import Plan, _flat
from .trace import FuseError, Graph

_GENERAL = ("safe", "fast", "truncated", "newton", "reciprocal")
_OPS = ("add", "sub", "mul", "div", "reciprocal", "sqrt")
_KIND = {"add": "add", "sub": "add", "mul": "mul", "div": "div", "sqrt": "sqrt"}
#: Instructions and operations of :mod:`expansions.engine.program` and :mod:`expansions.engine.fused`
#: (their numbers, which are those modules' constants: ``tests/test_fuse.py`` checks it).
SPLAT, LOAD, STORE, NEGATE, OPERATION, DOUBLE_WORD = range(6)
WIDTH = 8
ADD_SAFE, ADD_FAST, MUL, RENORMALIZE, RECIPROCAL, DIV, SQRT = range(7)
#: The double-word operations the loop runs, as :data:`expansions.engine.program.VARIANTS` lists them.
VARIANTS = ((R2_DEFAULTS["add"], 0, True), (R2_DEFAULTS["add"], 0, False), (R2_DEFAULTS["mul"], 1, True),
            (R2_DEFAULTS["mul"], 1, False), (R2_DEFAULTS["div"], 2, True), (R2_DEFAULTS["div"], 2, False),
            (R2_DEFAULTS["sqrt"], 3, False))


def _refuse(node, why):
    where = node.line or f"argument {node.index}"
    raise FuseError(f"expansions.fuse(cpu='loop') cannot run `{node.op}` at {where}: {why}")


def _algorithm(n, R: int) -> str:
    return "reciprocal" if n.op == "reciprocal" else dispatch.method(n.op, n.params[0], R)


def loop_format(graph: Graph, wanted) -> tuple:
    """(R, dtype name) of the loop of the nodes ``wanted``; FuseError for what it cannot run."""
    nodes = graph.nodes
    exps = [nodes[i] for i in wanted if nodes[i].kind == "exp"]
    if not exps:
        raise FuseError("expansions.fuse(cpu='loop'): the program computes no expansion")
    for n in exps:
        if n.fmt != exps[0].fmt:
            _refuse(n, f"a loop has one format; this graph mixes {exps[0].fmt} and {n.fmt}")
    R = exps[0].fmt[0]
    for i in wanted:
        n = nodes[i]
        if n.op in ("input", "const", "promote", "negative"):
            continue
        if n.op not in _OPS:
            _refuse(n, "a loop runs + - * /, sqrt, reciprocal and negation; use cpu='plan' for this program")
        alg = _algorithm(n, R)
        if alg not in _GENERAL and alg != R2_DEFAULTS[_KIND[n.op]]:
            _refuse(n, f"a loop runs the safe, fast, truncated and Newton algorithms and the default double-word "
                       f"ones, not {alg!r} (use cpu='plan' for this program)")
    return exps[0].fmt


def loop_code(graph: Graph, wanted, inputs, outputs, single=(), narrow=()) -> tuple:
    """(instructions, rows of values) of the loop computing ``wanted`` from the arrays ``inputs``
    (node ids: (count, R) terms, or (1, R) for those in ``single``: one element, broadcast) into the
    arrays ``outputs`` (node ids), numbered in that order (inputs, then outputs).  ``narrow``: the
    divisions whose divisor, given as floats, has one term (the one-term Newton division, as
    :func:`expansions.operations.binary` decides per call).  See :mod:`expansions.engine.program`."""
    R, _ = loop_format(graph, wanted)
    nodes = graph.nodes
    last = {}
    for i in wanted:
        for a in nodes[i].args:
            last[a] = i
    slots, free, where = [0], [], {}  # values of R rows: slots used, free slots, each value's slot

    def take() -> int:
        if free:
            return free.pop()
        slots[0] += 1
        return slots[0] - 1

    def row(i) -> int:
        return where[i] * R

    code = []
    for k, i in enumerate(inputs):
        where[i] = take()
        code.append((SPLAT if i in single else LOAD, k, row(i)))
    store = {i: len(inputs) + k for k, i in enumerate(outputs)}
    for i in wanted:
        n = nodes[i]
        if i in where or n.op in ("input", "const"):  # float constants enter through their promotions
            continue
        where[i] = take()
        x = row(n.args[0])
        if n.op == "negative":
            code.append((NEGATE, x, row(i)))
        else:
            alg = _algorithm(n, R)
            renormalize = bool(n.params[1])
            if alg not in _GENERAL:  # R = 2: the double-word default (the square root is not renormalized)
                kind = ("add", "mul", "div", "sqrt").index(_KIND[n.op])
                variant = VARIANTS.index((alg, kind, renormalize and n.op != "sqrt"))
                y = x if n.op == "sqrt" else row(n.args[1])
                code.append((DOUBLE_WORD, variant, x, y, int(n.op == "sub"), row(i)))
            elif n.op in ("reciprocal", "sqrt"):
                code.append((OPERATION, RECIPROCAL if n.op == "reciprocal" else SQRT, x, R, x, R, renormalize, row(i)))
            elif n.op == "div":
                code.append((OPERATION, DIV, x, R, row(n.args[1]), 1 if i in narrow else R, renormalize, row(i)))
            else:
                y = row(n.args[1])
                if n.op == "sub":  # x + (-y): y's sign flipped, as the engine flips it when it loads y
                    tmp = take()
                    code.append((NEGATE, y, tmp * R))
                    free.append(tmp)
                    y = tmp * R
                op = {"safe": ADD_SAFE, "fast": ADD_FAST, "truncated": MUL}[alg]
                code.append((OPERATION, op, x, R, y, R, renormalize, row(i)))
        if i in store:
            code.append((STORE, row(i), store[i]))
        for a in set(n.args):
            if last.get(a) == i and a not in single:
                free.append(where.pop(a))
        if i not in last:  # an output that no other node reads
            free.append(where.pop(i))
    table = np.zeros((len(code), WIDTH), dtype=np.int64)
    for k, c in enumerate(code):
        table[k, :len(c)] = c
    return table, slots[0] * R


class LoopPlan(Plan):
    """A program run as one compiled loop: the inputs flattened (broadcast where an input of several
    elements has another shape than the result; one-element operands read in place), non-expansion
    operands promoted exactly as the public dispatch promotes them, then one call of the loop."""

    def __init__(self, graph: Graph, outputs: tuple, device: str):
        super().__init__(graph, outputs, device)
        #: R: every expansion of the program has R terms (FuseError now for what a loop cannot run)
        self.terms = loop_format(graph, self.wanted)[0]

    def _run(self, wanted: list, args):
        nodes = self.graph.nodes
        outs = [i for i in wanted if nodes[i].op not in ("input", "const")
                and any(kind == "node" and j == i for kind, j in self.outputs)]
        if not outs:
            return {}, ()
        R, dt = loop_format(self.graph, wanted)
        leaves = [i for i in wanted if nodes[i].op in ("input", "const", "promote") and nodes[i].kind == "exp"]
        shape = np.broadcast_shapes(*[self._leaf_shape(j, args) for j in wanted if nodes[j].op in ("input", "const")])
        count = int(np.prod(shape, dtype=np.int64))
        vals, single = {}, []
        with np.errstate(all="ignore"):
            for i in leaves:  # read in place; one-element operands (scalars) are not broadcast
                n = nodes[i]
                if n.op == "promote":
                    t = operand_terms(self._leaf_value(n.args[0], args), R, np.dtype(dt), self.device)
                else:
                    t = self._leaf_value(i, args).terms
                if t.size == R:
                    vals[i] = np.ascontiguousarray(t).reshape(1, R)
                    single.append(i)
                else:
                    vals[i] = _flat(t, shape + (R,))
        narrow = tuple(i for i in wanted if nodes[i].one_term and _algorithm(nodes[i], R) == "newton"
                       and not bool((vals[nodes[i].args[1]][:, 1:] != 0).any()))
        results = [np.empty((count, R), dtype=dt) for _ in outs]
        code, rows = self._code(tuple(wanted), tuple(leaves), tuple(outs), tuple(single), narrow)
        fmt = format_of(np.dtype(dt))
        _engine.run_program(code, [vals[i] for i in leaves] + results, R, rows, count, self._steps(R, fmt),
                            2 * (fmt.emin - fmt.p + 1), 2 * fmt.emax)
        return dict(zip(outs, results)), shape

    def _steps(self, R, fmt):
        if "_newton_steps" not in self.__dict__:
            self._newton_steps = np.array(newton_steps(R, fmt), dtype=np.int64)
        return self._newton_steps

    def _code(self, *key):
        memo = self.__dict__.setdefault("_codes", {})
        if key not in memo:
            memo[key] = loop_code(self.graph, *key)
        return memo[key]
