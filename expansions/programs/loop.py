"""A traced program as ONE compiled CPU loop (``expansions.fuse(fn, cpu="loop")``, numba).

:func:`loop_source` writes a Python function over the expansions, compiled by numba with the
engine's options (no fastmath, no contraction): a ``prange`` over blocks of expansions, as the
engine's kernels run, and per expansion the engine's row functions (``add_safe_row``,
``add_fast_row``, ``mul_row``, ``renormalize_row`` of :mod:`expansions.engine.kernels`) in the
program's order on small local arrays, so every intermediate stays in the loop: each input is read
once and each output written once.  The row functions are the ones the engine's vectorized kernels
call with the same arguments, which is why the bits are those of op by op; the Newton division,
reciprocal and square root call the rows of :mod:`expansions.engine.newton` and then the Newton
renormalizer of :func:`expansions.dispatch.renormalizer` (renormalize, keep the kernel's zero
results), and a divisor given as floats whose terms past the first are all zero takes the one-term
division, decided per call on the whole array as :func:`expansions.operations.binary` decides it.

It runs the programs of one format (R, dtype) made of ``+``, ``-`` (safe or fast), ``*`` (truncated),
``/``, ``sqrt`` and ``reciprocal`` (Newton), with or without ``renormalize``, and negation; anything
else raises :class:`FuseError` naming the node's line (the planned routine, ``cpu="plan"``, runs every
program).
"""

from __future__ import annotations

import hashlib
import importlib

import numpy as np

from .. import dispatch
from ..bounds import newton_steps
from ..formats import format_of
from ..promote import operand_terms
from .cpu import Plan, _flat
from .trace import FuseError, Graph

_ALGORITHMS = ("safe", "fast", "truncated", "newton", "reciprocal")
_OPS = ("add", "sub", "mul", "div", "reciprocal", "sqrt")


def _refuse(node, why):
    where = node.line or f"argument {node.index}"
    raise FuseError(f"expansions.fuse(cpu='loop') cannot run `{node.op}` at {where}: {why}")


def _algorithm(n, R: int) -> str:
    return "reciprocal" if n.op == "reciprocal" else dispatch.method(n.op, n.params[0], R)


def loop_format(graph: Graph, wanted) -> tuple:
    """(R, dtype name) of the loop of the nodes ``wanted``; FuseError for what it cannot run."""
    nodes = graph.nodes
    exps = [nodes[i] for i in wanted if nodes[i].kind == "exp"]
    for n in exps:
        if n.fmt != exps[0].fmt:
            _refuse(n, f"a loop has one format; this graph mixes {exps[0].fmt} and {n.fmt}")
    R = exps[0].fmt[0]
    for i in wanted:
        n = nodes[i]
        if n.op in ("input", "const", "promote", "negative"):
            continue
        if n.op not in _OPS:
            _refuse(n, "a loop runs + - * /, sqrt, reciprocal and negation; use cpu='plan' (the default) for "
                       "this program")
        alg = _algorithm(n, R)
        if alg not in _ALGORITHMS:
            _refuse(n, f"a loop runs the safe, fast, truncated and Newton algorithms, not {alg!r} (R = 2 "
                       "defaults to the double-word algorithms: pass method=)")
    return exps[0].fmt


def loop_source(graph: Graph, wanted, inputs, outputs, single=(), narrow=()) -> tuple:
    """(function name, Python source) of the loop computing ``wanted`` from the arrays of ``inputs``
    (node ids, (count, R) terms, or (1, R) for those in ``single``: one element, broadcast) into
    ``outputs`` (node ids).  ``narrow``: the divisions whose divisor, given as floats, has one term
    (the one-term Newton division, as :func:`expansions.operations.binary` decides per call)."""
    R, _ = loop_format(graph, wanted)
    nodes = graph.nodes
    arrays = [f"in{k}" for k in range(len(inputs))] + [f"out{k}" for k in range(len(outputs))]
    name = "program_" + hashlib.sha256(repr((graph.signature()[0], tuple(wanted), tuple(inputs),
                                             tuple(outputs), tuple(single), tuple(narrow))).encode()).hexdigest()[:16]
    head = [f"def {name}({', '.join(arrays)}, count, steps, kmin, kmax):",
            "    dt = in0.dtype",
            "    blocks = (count + BLOCK - 1) // BLOCK",
            "    for b in prange(blocks):",
            f"        s = np.empty({R}, dt)",
            f"        e = np.empty({R}, dt)",
            f"        ep = np.empty({R}, dt)",
            f"        cur = np.empty({R}, dt)",
            f"        srt = np.empty({R}, dt)",
            f"        ws = np.empty((14, {R}), dt)"]
    body = []
    value = {}
    for k, i in enumerate(inputs):
        value[i] = f"in{k}[0]" if i in single else f"in{k}[i]"
    for i in wanted:
        n = nodes[i]
        if i in value or n.op in ("input", "const"):  # float constants enter through their promotions
            continue
        head.append(f"        v{i} = np.empty({R}, dt)")
        x = value[n.args[0]]
        if n.op == "negative":
            body.append(f"            for k in range({R}):")
            body.append(f"                v{i}[k] = -{x}[k]")
        elif _algorithm(n, R) in ("newton", "reciprocal"):  # the engine's Newton rows (engine.newton)
            target = f"r{i}" if n.params[1] else f"v{i}"
            if n.params[1]:
                head.append(f"        r{i} = np.empty({R}, dt)")
            if n.op == "div":
                m = 1 if i in narrow else R
                body.append(f"            newton_div_row({x}, {R}, {value[n.args[1]]}, {m}, {R}, steps, kmin, kmax, "
                            f"{target}, ws)")
            else:
                fn = "newton_sqrt_row" if n.op == "sqrt" else "newton_reciprocal_row"
                body.append(f"            {fn}({x}, {R}, {R}, steps, kmin, kmax, {target}, ws)")
            if n.params[1]:  # dispatch's Newton renormalizer: renormalize, keep the kernel's zero results
                body.append(f"            renormalize_row(r{i}, {R}, {R}, v{i}, cur, srt, e)")
                body.append(f"            if r{i}[0] == 0 and v{i}[0] == 0:")
                body.append(f"                for k in range({R}):")
                body.append(f"                    v{i}[k] = r{i}[k]")
        else:
            y = value[n.args[1]]
            alg = dispatch.method(n.op, n.params[0], R)
            target = f"r{i}" if n.params[1] else f"v{i}"
            if n.params[1]:
                head.append(f"        r{i} = np.empty({R}, dt)")
            if alg == "truncated":
                body.append(f"            mul_row({x}, {R}, {y}, {R}, {R}, {target}, s, e, ep)")
            else:
                negy = n.op == "sub"
                body.append(f"            add_{alg}_row({x}, {R}, {y}, {R}, {negy}, {R}, {target}, s, e)")
            if n.params[1]:
                body.append(f"            renormalize_row(r{i}, {R}, {R}, v{i}, cur, srt, e)")
        value[i] = f"v{i}"
    for k, i in enumerate(outputs):
        body.append(f"            for k in range({R}):")
        body.append(f"                out{k}[i, k] = {value[i]}[k]")
    loop = ["        for i in range(b * BLOCK, min(count, (b + 1) * BLOCK)):"]
    return name, "\n".join(head + loop + body) + "\n"


_LOOPS: dict = {}  # source: the compiled function


def compiled(name: str, source: str):
    """The numba-compiled loop of ``source`` (compiled once per source in this process)."""
    if source not in _LOOPS:
        from numba import njit, prange  # optional dependency: the loop is numba's, like the engine

        kernels = importlib.import_module("expansions.engine.kernels")  # needs numba, as the engine does
        scope = {"np": np, "prange": prange, "BLOCK": kernels.BLOCK, "add_safe_row": kernels.add_safe_row,
                 "add_fast_row": kernels.add_fast_row, "mul_row": kernels.mul_row,
                 "renormalize_row": kernels.renormalize_row}
        newton = importlib.import_module("expansions.engine.newton")
        scope.update(newton_div_row=newton._div, newton_sqrt_row=newton._sqrt,
                     newton_reciprocal_row=newton._reciprocal)
        exec(compile(source, f"<expansions.fuse loop {name}>", "exec"), scope)
        _LOOPS[source] = njit(error_model="numpy", parallel=True)(scope[name])
    return _LOOPS[source]


class LoopPlan(Plan):
    """A program run as one compiled loop: the inputs flattened (broadcast where an input of several
    elements has another shape than the result; one-element operands read in place), non-expansion
    operands promoted exactly as the public dispatch promotes them, then one call of the loop."""

    def __init__(self, graph: Graph, outputs: tuple, device: str):
        super().__init__(graph, outputs, device)
        loop_format(graph, self.wanted)  # refuse what a loop cannot run now, at the first call

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
        name, source = loop_source(self.graph, wanted, leaves, outs, tuple(single), narrow)
        fmt = format_of(np.dtype(dt))
        steps = np.array(newton_steps(R, fmt), dtype=np.int64)
        with np.errstate(all="ignore"):
            compiled(name, source)(*[vals[i] for i in leaves], *results, count, steps,
                                   2 * (fmt.emin - fmt.p + 1), 2 * fmt.emax)
        return dict(zip(outs, results)), shape
