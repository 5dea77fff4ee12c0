"""A traced program as one planned routine: the same backend calls as op by op, one broadcast.

:class:`Plan` turns a graph (:mod:`expansions.programs.trace`) into a list of steps, one per node,
each resolved once when the plan is built: the algorithm a method name stands for
(:func:`expansions.dispatch.method`), the backend function that runs it
and its renormalization (:func:`expansions.dispatch.operation`).  A run broadcasts every input once to the
program's shape and flattens it to (count, R) terms, runs the steps in the order the user's function
made them on those flat arrays, and reshapes each output once.  The op-by-op path broadcasts and
flattens at every operation instead; since every operation is elementwise, each element goes
through the same backend functions in the same order either way, which is why the results are
bit-identical.  It is not a fused loop: each step is one vectorized backend call over all
elements (the engine's or the twins', whichever :func:`expansions.backends.cpu_backend` runs).
"""

from __future__ import annotations

import numpy as np

from .. import dispatch
from ..arraytype import ExpansionArray
from ..backends import for_device, xp_of
from ..elementwise import power_finish
from ..manipulation import where as _where
from ..operations import absolute, broadcast_flat, compare, operands
from ..promote import operand_terms
from .trace import BINARY, COMPARE, ELEMENTARY, ELEMENTARY2, Graph, Node


def _binary_step(node: Node, be, same_format: bool):
    method, renorm, terms, dtype = node.params
    R = node.fmt[0]
    alg = dispatch.method(node.op, method, R)
    run, then = dispatch.operation(node.op, alg, be, renorm)
    one_term = node.one_term and alg == "newton"

    def step(x, y):
        if same_format:  # operands() would return them unchanged
            xt, yt = x, y
        else:
            xa, ya = operands(ExpansionArray(x), ExpansionArray(y), terms, dtype)
            xt, yt = xa.terms, ya.terms
        if one_term and not bool((yt[:, 1:] != 0).any()):
            yt = yt[:, :1]  # a divisor given as floats: the one-term kernel, as operations.binary does
        out = run(xt, yt, R)
        return then(out, R) if then is not None else out

    return step


def _unary_step(node: Node, be):
    R = node.fmt[0]
    if node.op == "negative":
        return be.negate
    if node.op == "absolute":
        return lambda x: absolute(ExpansionArray(x)).terms
    method, renorm = node.params
    alg = "reciprocal" if node.op == "reciprocal" else dispatch.method(node.op, method, R)
    run, then = dispatch.operation(node.op, alg, be, renorm)

    def step(x):
        out = run(x, R)
        return then(out, R) if then is not None else out

    return step


def _elementary_step(node: Node, be, same_format: bool):
    """The function :mod:`expansions.elementary` runs op by op on this backend, on the flat terms."""
    R = node.fmt[0]
    fn = be.elementary(node.op)

    def step(*args):
        if not same_format:  # operands() promotes both to the node's format, as op by op
            args = [a.terms for a in operands(*[ExpansionArray(a) for a in args])]
        return fn(*args, R)

    return step


def _step(node: Node, be, graph: Graph):
    if node.op in ELEMENTARY or node.op in ELEMENTARY2:
        return _elementary_step(node, be, all(graph.nodes[a].fmt == node.fmt for a in node.args))
    if node.op in BINARY:
        return _binary_step(node, be, all(graph.nodes[a].fmt == node.fmt for a in node.args))
    if node.op in COMPARE:
        return lambda x, y: compare(node.op, ExpansionArray(x), ExpansionArray(y))
    if node.op == "where":
        return lambda c, x, y: _where(c, ExpansionArray(x), ExpansionArray(y)).terms
    if node.op == "power_finish":
        (n,) = node.params
        return lambda x, r: power_finish(ExpansionArray(x), ExpansionArray(r), n).terms
    return _unary_step(node, be)


def _flat(t, shape: tuple):
    """``t`` (..., R) broadcast to ``shape`` (..., R), C-contiguous, its leading axes flattened into one
    (:func:`expansions.operations.broadcast_flat`: a constant is repeated whole, not copied element by
    element)."""
    return broadcast_flat(t, shape[:-1])


class Plan:
    """The steps of a graph on one backend (see the module docstring)."""

    def __init__(self, graph: Graph, outputs: tuple, device: str):
        self.graph = graph
        self.outputs = outputs
        self.device = device
        self.backend = for_device(device)
        self.steps = [None if n.op in ("input", "const", "promote") else _step(n, self.backend, graph)
                      for n in graph.nodes]
        self.ancestors = {}
        for kind, i in outputs:
            if kind == "node":
                self.ancestors[i] = self._ancestors(i)
        self.wanted = sorted(set().union(*self.ancestors.values())) if self.ancestors else []

    def _ancestors(self, i: int) -> list:
        seen = set()
        stack = [i]
        while stack:
            j = stack.pop()
            if j not in seen:
                seen.add(j)
                stack.extend(self.graph.nodes[j].args)
        return sorted(seen)

    def _leaf_value(self, j: int, args):
        n = self.graph.nodes[j]
        return args[n.index] if n.op == "input" else self.graph.consts[j]

    def _leaf_shape(self, j: int, args) -> tuple:
        v = self._leaf_value(j, args)
        return tuple(v.shape) if hasattr(v, "shape") else ()

    def leaf_values(self, wanted: list, args, ids=None, shape=None):
        """The flat values of the inputs, constants and promoted operands among ``wanted`` (or ``ids``
        of them), broadcast to the shape of ``wanted``'s leaves (``shape`` when the caller has it); and
        that shape."""
        nodes = self.graph.nodes
        if shape is None:
            leaves = [j for j in wanted if nodes[j].op in ("input", "const")]
            shape = np.broadcast_shapes(*[self._leaf_shape(j, args) for j in leaves])
        vals = {}
        with np.errstate(all="ignore"):
            for j in (wanted if ids is None else ids):
                n = nodes[j]
                if n.op in ("input", "const"):
                    v = self._leaf_value(j, args)
                    if n.kind == "exp":
                        vals[j] = _flat(v.terms, shape + (v.nterms,))
                    else:
                        xp = xp_of(v)
                        vals[j] = xp.broadcast_to(xp.asarray(v), shape).reshape(-1)
                elif n.op == "promote":
                    (src,) = n.args
                    v = self._leaf_value(src, args)
                    t = operand_terms(v, n.fmt[0], np.dtype(n.fmt[1]), self.device)
                    vals[j] = _flat(t, shape + (n.fmt[0],))
        return vals, shape

    def _run(self, wanted: list, args, keep_all: bool = False) -> dict:
        """The values (flat) of the nodes ``wanted`` (sorted ids, closed under ancestors) that are
        outputs (all of them with ``keep_all``), and the shape.  A leaf is materialized when it is
        first used and every value is dropped after its last use, as op by op drops its temporaries:
        holding all of them would touch fresh memory at every step (a program of 40 steps on 10^5
        elements ran 2.7 times slower)."""
        nodes = self.graph.nodes
        keep = {i for kind, i in self.outputs if kind == "node"}
        last = {}
        for j in wanted:
            for a in nodes[j].args:
                last[a] = j
        leaves = {j for j in wanted if nodes[j].op in ("input", "const", "promote")}
        # one promotion of an operand to one format serves every node that promotes it (the steps
        # never write their operands), dropped after the last of those nodes' uses
        same = {j: (nodes[j].args[0], nodes[j].fmt) for j in leaves if nodes[j].op == "promote"}
        last_same = {}
        for j in wanted:
            for a in nodes[j].args:
                if a in same:
                    last_same[same[a]] = j
        promoted = {}
        _, shape = self.leaf_values(wanted, args, ids=[])
        vals = {}

        def materialize(a):
            if a in same and same[a] in promoted:
                vals[a] = promoted[same[a]]
                return
            vals.update(self.leaf_values(wanted, args, ids=[a], shape=shape)[0])
            if a in same:
                promoted[same[a]] = vals[a]

        with np.errstate(all="ignore"):
            for j in wanted:
                if j in vals:
                    continue
                for a in nodes[j].args:
                    if a not in vals and a in leaves:
                        materialize(a)
                if nodes[j].op in ("input", "const", "promote"):
                    materialize(j)
                else:
                    vals[j] = self.steps[j](*[vals[a] for a in nodes[j].args])
                for a in set(nodes[j].args):
                    if last.get(a) == j and a not in keep and not keep_all:
                        del vals[a]
                    if a in same and last_same.get(same[a]) == j:
                        promoted.pop(same[a], None)
        return vals, shape

    def _output(self, i: int, vals: dict, shape: tuple, args, own: tuple):
        """Output node i, computed at ``shape``, reshaped to its own shape ``own``."""
        n = self.graph.nodes[i]
        if n.op == "input":
            return args[n.index]
        tail = (n.fmt[0],) if n.kind == "exp" else ()
        v = vals[i].reshape(shape + tail)
        if own != shape:  # the output is the broadcast of a smaller array: take one copy of it
            lead = len(shape) - len(own)
            key = (0,) * lead + tuple(slice(0, 1) if (o == 1 and s != 1) else slice(None)
                                      for o, s in zip(own, shape[lead:]))
            v = xp_of(v).ascontiguousarray(v[key])
        if n.kind == "exp":
            return ExpansionArray(v)
        return bool(v) if own == () else v

    def shapes(self, args) -> dict:
        """The shape of every node, broadcast operation by operation as op by op does (a ValueError
        where two operands do not broadcast, also in operations whose results are not returned);
        remembered per shapes of the leaves (a program is usually called on arrays of one shape)."""
        key = tuple(self._leaf_shape(j, args) for j, n in enumerate(self.graph.nodes) if n.op in ("input", "const"))
        memo = self.__dict__.setdefault("_shape_memo", {})
        if key not in memo:
            if len(memo) > 64:
                memo.clear()
            memo[key] = self._shapes(args)
        return memo[key]

    def _shapes(self, args) -> dict:
        shapes = {}
        for j, n in enumerate(self.graph.nodes):
            if n.op in ("input", "const"):
                shapes[j] = self._leaf_shape(j, args)
                continue
            shapes[j] = shapes[n.args[0]]
            for a in n.args[1:]:
                try:
                    shapes[j] = np.broadcast_shapes(shapes[j], shapes[a])
                except ValueError:
                    raise ValueError(f"shapes {shapes[j]} and {shapes[a]} do not broadcast") from None
        return shapes

    def __call__(self, args):
        shapes = self.shapes(args)
        nodes_out = [i for kind, i in self.outputs if kind == "node"]
        results = {}
        try:
            vals, shape = self._run(self.wanted, args)
            one_run = bool(np.prod(shape)) or not any(np.prod(shapes[i]) for i in nodes_out)
        except ValueError:
            one_run = False
        if one_run:
            for i in nodes_out:
                results[i] = self._output(i, vals, shape, args, shapes[i])
        else:  # outputs of shapes that do not broadcast together, or empty beside non-empty: one run each
            for i in nodes_out:
                v, s = self._run(self.ancestors[i], args)
                results[i] = self._output(i, v, s, args, shapes[i])
        return [results[i] if kind == "node" else i for kind, i in self.outputs]
