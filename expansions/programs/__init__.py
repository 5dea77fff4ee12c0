"""Programs: a function of expansions traced once and run as one routine (``expansions.fuse``).

:func:`fuse` traces the user's function into a graph of the library's operations
(:mod:`expansions.programs.trace`) the first time it sees a combination of argument formats, ranks
and scalar values, and caches it; each call then runs the graph's plan (:mod:`expansions.programs.cpu`)
on the arguments.  The result is bit-identical to calling the function on the ExpansionArrays
directly, op by op.  On the compiled engine a program that the loop runs at R >= 3 runs as one compiled
loop over blocks of expansions (:mod:`expansions.programs.loop`, ``cpu="auto"``, the default; ``cpu=
"loop"`` asks for it, ``cpu="plan"`` for the plan); on cuda arrays as one generated CUDA kernel
(:mod:`expansions.programs.cuda`).
"""

from __future__ import annotations

import functools

from .. import backends
from ..arraytype import ExpansionArray
from ..backends import for_device
from .cpu import Plan
from .cuda import KernelPlan, cupy_launch
from .loop import LoopPlan
from .trace import FuseError, Tracer, argument_key, trace

__all__ = ["fuse", "FuseError", "Tracer", "Program"]

#: How programs run on the CPU (see :func:`fuse`).
CPU_MODES = ("auto", "plan", "loop")
#: ``cpu="auto"`` runs the loop for programs of at least this many terms (at R = 2 the plan's
#: double-word loops are faster: bench/results/fuse_loop_*).
AUTO_LOOP_TERMS = 3
#: How programs run on a GPU (see :class:`Program`).
CUDA_MODES = ("kernel", "plan")

#: Plans by (graph signature, output structure, device, backend name): the compiled programs.
_PLANS: dict = {}


class Program:
    """A fused function: ``Program(fn)(*args)`` runs ``fn`` traced (see :func:`fuse`)."""

    def __init__(self, fn, cpu: str = "auto", overrides=None, block: int | None = None, cuda: str = "kernel"):
        if cpu not in CPU_MODES:
            raise ValueError(f"expansions.fuse: unknown cpu={cpu!r}: use one of {CPU_MODES}")
        if cuda not in CUDA_MODES:
            raise ValueError(f"expansions.fuse: unknown cuda={cuda!r}: use one of {CUDA_MODES}")
        if block is not None and (block <= 0 or block % 32):
            raise ValueError(f"expansions.fuse: block={block!r}: threads per block must be a positive multiple of 32")
        self.fn = fn
        self.cpu = cpu
        #: threads per block of the CUDA kernel (None: expansions.cuda.build.BLOCK); ``expansions.tune``
        #: chooses it from the occupancy calculator's formulas (expansions.cuda.occupancy)
        self.block = block
        #: on cuda arrays: "kernel" (one generated kernel) or "plan" (the planned backend calls, one
        #: kernel per operation: what runs a graph of several formats, which one kernel cannot)
        self.cuda = cuda
        #: {k: {"terms": R, "method": name}}: parameters of the k-th arithmetic operation replaced
        #: (what ``expansions.tune`` chooses); see :func:`expansions.programs.trace.trace`.
        self.overrides = dict(overrides or {})
        self._traces: dict = {}
        self._plans: dict = {}  # (argument keys, CPU backend name): (plan, tuple of outputs or not)
        functools.update_wrapper(self, fn)

    def trace(self, *args):
        """(graph, outputs) of the function for these arguments (cached by :func:`argument_key`)."""
        key = tuple(argument_key(a) for a in args)
        if key not in self._traces:
            self._traces[key] = trace(self.fn, args, self.overrides)
        return self._traces[key]

    def plan(self, *args) -> Plan:
        graph, (_, items) = self.trace(*args)
        devices = {a.device for a in args if isinstance(a, ExpansionArray)}
        if len(devices) > 1:
            raise ValueError(f"operands on different devices: {sorted(devices)}")
        device = devices.pop() if devices else "cpu"
        outputs = tuple(("node", v) if kind == "node" else ("value", v) for kind, v in items)
        out_key = tuple((kind, v if kind == "node" else id(v)) for kind, v in items)
        key = (graph.signature(), out_key, device, for_device(device).name, self.cpu, self.block, self.cuda)
        if key not in _PLANS:
            if device == "cuda" and self.cuda == "kernel":
                launch = cupy_launch if self.block is None else functools.partial(cupy_launch, block=self.block)
                _PLANS[key] = KernelPlan(graph, outputs, device, launch)
            elif device == "cuda":
                _PLANS[key] = Plan(graph, outputs, device)
            else:
                _PLANS[key] = self._cpu_plan(graph, outputs, device)
        return _PLANS[key]

    def _cpu_plan(self, graph, outputs, device) -> Plan:
        """The CPU executor of ``cpu``: 'loop' the loop (FuseError for a program it does not run), 'plan'
        the plan, 'auto' the loop where it runs the program at R >= :data:`AUTO_LOOP_TERMS` on the
        compiled engine, else the plan."""
        if self.cpu == "loop":
            return LoopPlan(graph, outputs, device)
        if self.cpu == "auto" and for_device(device).name == "engine":
            try:
                loop = LoopPlan(graph, outputs, device)
            except FuseError:  # a node the loop does not run (comparisons, where, elementary functions, ...)
                loop = None
            if loop is not None and loop.terms >= AUTO_LOOP_TERMS:
                return loop
        return Plan(graph, outputs, device)

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise FuseError(f"expansions.fuse: keyword arguments ({', '.join(kwargs)}) are not traced: pass them "
                            "positionally, or bind constants with functools.partial before fusing")
        key = (tuple(argument_key(a) for a in args), backends.cpu_backend().name)
        if key not in self._plans:
            self._plans[key] = (self.plan(*args), self.trace(*args)[1][0] == "tuple")
        plan, many = self._plans[key]
        items = plan(args)
        return tuple(items) if many else items[0]


def fuse(fn=None, *, cpu: str = "auto"):
    """``expansions.fuse(fn)`` or ``@expansions.fuse``: ``fn`` traced into a program of the library's
    operations and run as one compiled loop or one planned routine (``cpu``, below), with results
    bit-identical to ``fn`` op by op.

    ``fn`` takes ExpansionArrays and float or boolean arrays (traced: they may change between calls
    with the same formats and ranks), and Python or NumPy scalars (constants of the program: a new
    value traces again); it may use ``+ - * /``, comparisons, unary ``-``, ``abs``,
    :func:`expansions.add`/``sub``/``mul``/``div`` with ``method=``, ``renormalize=``, ``terms=``,
    ``dtype=``, :func:`expansions.sqrt`, :func:`expansions.reciprocal`, :func:`expansions.where`, the
    elementary functions (:mod:`expansions.elementary`; CPU programs only for now), ``x ** n`` for an
    integer n (the products of :func:`expansions.elementwise.power`), and the NumPy ufuncs of these;
    it returns a traced value or a tuple of them.  The function is traced
    once per combination of argument formats, ranks and scalars: Python code in it runs then, not at
    every call (values it reads from outside are captured then).  Anything else (Python control flow
    on a traced value, another function, indexing) raises :class:`FuseError` naming the construct and
    the source line.

    ``cpu``: how a program runs on NumPy arrays.  ``"loop"``: one compiled loop over blocks of
    expansions (:mod:`expansions.programs.loop`): each input read once, every node on the block
    engine's rows, each output written once, no temporary arrays; for programs of one format (R,
    dtype) made of ``+ - * /``, ``sqrt``, ``reciprocal`` (the safe, fast, truncated and Newton
    algorithms, and at R = 2 the double-word defaults), with or without ``renormalize``, and negation
    (anything else: :class:`FuseError` naming the line).  The loop is compiled once per dtype and kept
    in numba's cache on disk; no program compiles.  ``"plan"`` (every program): the library's
    vectorized backend calls in the program's order, planned once (:mod:`expansions.programs.cpu`).
    ``"auto"`` (the default): the loop for the programs it runs at R >= 3 on the compiled engine (on
    programs of tens of operations 1.15 to 1.6 times faster than the plan at R = 3 to 8,
    bench/results/fuse_loop_*), the plan for the others (at R = 2, where the plan's double-word loops
    are faster; on the NumPy twins backend; comparisons, ``where``, ``abs``, the elementary functions,
    other methods, several formats).  On cuda arrays a program is one CUDA kernel either way
    (:mod:`expansions.programs.cuda`).  Every mode gives the bits of op by op.
    """
    if fn is None:
        return functools.partial(fuse, cpu=cpu)
    return Program(fn, cpu)
