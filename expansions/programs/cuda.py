"""A traced program as ONE CUDA kernel, generated from the library's lane-group device functions.

:func:`kernel_source` writes a ``__global__`` function for a graph (:mod:`expansions.programs.trace`)
after ``kernels.cu`` (:func:`expansions.cuda.build.source`): one grid-stride loop over lane groups
(decision 2), each input array read once, every intermediate a register (one term per lane), each
output written once.  Each node calls the device function the op-by-op kernel calls
(``add_safe_group``, ``mul_truncated_group``, ``renormalize_group``, the Newton steps ...), with the
same template arguments, so the bits are those of the op-by-op kernels; between operations the
padding lanes are reset to +0, which is what a store and a load do between two op-by-op kernels.
The Newton bodies of ``kernels.cu`` (``newton_div``, ``newton_reciprocal``, ``newton_sqrt``) are
``__global__`` functions, so their few lines are written out here in the same order.

At R = 2 the double-word algorithms of ``dw.cuh`` (the defaults there) run on the group's two terms
gathered by shuffles, with the non-finite rule of the double-word backends.
An elementary function (a node named ``exp``, ..., ``pow``: :data:`ELEMENTARY`) calls its group function
of ``elementary.cuh`` (the body of its op-by-op kernel); the program's group is widened to the lanes it
needs (R + 1 terms, 2R + 4 for sin, cos, tan, at most 32), and the kernel takes the function table.
What a CUDA program takes (else :class:`FuseError` naming the node's line): one format (R, dtype) for
every expansion of the graph (``terms=``/``dtype=`` only where they keep it); comparisons (and so ``where`` on them) up
to R = 16 (the exact comparison renormalizes 2R terms in one group).
Operands that are not expansions (float arrays, scalars) are promoted on the host, as the public
dispatch does, and enter the kernel as arrays of terms.
"""

from __future__ import annotations

import hashlib

import numpy as np

from .. import dispatch
from ..backends import xp_of
from ..bounds import newton_steps
from ..cuda import build
from ..cuda import elementary as elementary_table
from ..cuda.dw_kernels import KINDS, functor
from ..elementwise import SCALED_POWER_LIMIT, binary_powering
from ..formats import format_of, group_width
from ..promote import operand_terms
from .cpu import Plan
from .trace import BINARY, COMPARE, FuseError, Graph, Node

#: The double-word algorithms selectable at R = 2 (dispatch.R2_METHODS), functors of dw.cuh.
DOUBLE_WORD = frozenset(name for names in dispatch.R2_METHODS.values() for name in names)

_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}

#: The elementary functions (a node whose op is the function's name; atan2 (y, x) and pow (x, y) have
#: two operands): the group functions <name>_group of elementary.cuh, with the table of
#: expansions.cuda.elementary as the kernel's last array argument.
ELEMENTARY = {name: operands for name, operands, _ in build.ELEMENTARY}
_TRIG = ("sin", "cos", "tan")


def _elementary_lanes(op: str, R: int) -> int:
    """The lanes the group function of an elementary function needs at R terms (elementary.cuh's
    lanes(R), trig_lanes(R)): W = min(R + 1, 32) terms, M = min(2W + 2, 32) for sin, cos, tan."""
    W = min(R + 1, 32)
    return group_width(min(2 * W + 2, 32) if op in _TRIG else W)


def uses_elementary(graph: Graph, wanted) -> bool:
    return any(graph.nodes[i].op in ELEMENTARY for i in wanted)


def _refuse(node, why):
    where = node.line or f"argument {node.index}"
    raise FuseError(f"expansions.fuse cannot make a CUDA kernel of `{node.op}` at {where}: {why}")


def program_format(graph: Graph, wanted) -> tuple:
    """(R, dtype name, W) of the CUDA kernel of the nodes ``wanted``; FuseError for what it cannot run."""
    nodes = graph.nodes
    fmts = {nodes[i].fmt for i in wanted if nodes[i].kind == "exp"}
    if len(fmts) != 1:
        exps = [nodes[i] for i in wanted if nodes[i].kind == "exp"]
        bad = next(n for n in exps if n.fmt != exps[0].fmt)
        _refuse(bad, f"a CUDA program has one format; this graph mixes {sorted(fmts)} (convert with "
                     "expansions.astype before the program)")
    (R, dt), = fmts
    compares = False
    for i in wanted:
        n = nodes[i]
        if n.op in COMPARE:
            compares = True
            if 2 * R > 32:
                _refuse(n, f"the exact comparison renormalizes 2R = {2 * R} terms, more than a warp")
    W = group_width(2 * R if compares else R)
    for i in wanted:
        if nodes[i].op in ELEMENTARY:
            W = max(W, _elementary_lanes(nodes[i].op, R))
    return R, dt, W


def _steps(R, dt) -> str:
    return ", ".join(map(str, newton_steps(R, format_of(dt))))


class _Writer:
    """The lines of the kernel body, one or a few per node."""

    def __init__(self, R, W, dt):
        self.R, self.W, self.dt = R, W, dt
        self.lines = []

    def emit(self, text):
        self.lines.append("        " + text)

    def pad(self, expr):
        """expr (computed on every lane: it may shuffle) with the padding lanes reset to +0, which is
        what a store and a load do between op-by-op kernels."""
        self.count = getattr(self, "count", 0) + 1
        self.emit(f"const T t{self.count} = {expr};")  # its own statement: never inside a conditional
        return f"t{self.count}" if self.W == self.R else f"(lane < {self.R} ? t{self.count} : T(0))"

    def renormalize_newton(self, v, q):
        """dispatch's renormalizer of the Newton kernels and the double-word algorithms: renormalize,
        keep the kernel's zero result."""
        R, W = self.R, self.W
        self.emit(f"const T {v}_r = {self.pad(f'renormalize_group<T, {R}, {R}, {W}>({q}, lane)')};")
        self.emit(f"const T {v}_q0 = shfl<{W}>({q}, 0);")  # both shuffles on every lane (no && between them)
        self.emit(f"const T {v}_r0 = shfl<{W}>({v}_r, 0);")
        self.emit(f"const bool {v}_keep = {v}_q0 == T(0) && {v}_r0 == T(0);")
        self.emit(f"const T {v} = {v}_keep ? {q} : {v}_r;")

    def double_word(self, v, alg, kind, x, y=None):
        """A double-word algorithm of ``dw.cuh`` (R = 2) on the group's two terms made double words
        and, for a division or square root near the underflow threshold, scaled (``dw_apply``), then
        the non-finite rule of the double-word backends
        (``backends._double_word_finish``) on the terms as given: the group's epilogue with the IEEE
        result of the leading terms, and (NaN, 0) where that result is NaN."""
        W = self.W
        self.emit(f"const T {v}_xh = shfl<{W}>({x}, 0);")
        self.emit(f"const T {v}_xl = shfl<{W}>({x}, 1);")
        apply = f"dw_apply<T, {functor(alg)}, {KINDS[kind]}>"
        if y is None:
            self.emit(f"const TwoTerms<T> {v}_z = {apply}({v}_xh, {v}_xl, T(0), T(0));")
            self.emit(f"const T {v}_lead = sqrt_rn({v}_xh);")
            status = f"operand_status<2, {W}>({x})"
        else:
            self.emit(f"const T {v}_yh = shfl<{W}>({y}, 0);")
            self.emit(f"const T {v}_yl = shfl<{W}>({y}, 1);")
            self.emit(f"const TwoTerms<T> {v}_z = {apply}({v}_xh, {v}_xl, {v}_yh, {v}_yl);")
            self.emit(f"const T {v}_lead = {kind}_rn({v}_xh, {v}_yh);")
            status = f"operand_status<2, {W}>({x}), operand_status<2, {W}>({y})"
        self.emit(f"const T {v}_zl = lane == 0 ? {v}_z.hi : (lane == 1 ? {v}_z.lo : T(0));")
        epilogue = self.pad(f"nonfinite_epilogue<T, 2, {W}>({v}_zl, {v}_lead, lane, {status})")
        self.emit(f"const T {v}_nf = is_nan({v}_lead) ? (lane == 0 ? quiet_nan<T>() : T(0)) : {epilogue};")
        # a zero result whose leading-term result is a zero takes that zero (IEEE's sign)
        self.emit(f"const T {v}_h = shfl<{W}>({v}_nf, 0);")
        self.emit(f"const T {v}_l = shfl<{W}>({v}_nf, 1);")
        self.emit(f"const bool {v}_sz = {v}_h == T(0) && {v}_l == T(0) && {v}_lead == T(0);")
        self.emit(f"const T {v}_raw = ({v}_sz && lane == 0) ? {v}_lead : {v}_nf;")

    def binary(self, v, n, x, y, one_term_divisor):
        R, W, dt = self.R, self.W, self.dt
        method, renorm = n.params[0], n.params[1]
        alg = dispatch.method(n.op, method, R)
        if alg in DOUBLE_WORD:
            if n.op == "sub":
                self.emit(f"const T {v}_y = lane < {R} ? negated({y}) : {y};")
                y = f"{v}_y"
            self.double_word(v, alg, "add" if n.op == "sub" else n.op, x, y)
            if renorm:  # dispatch's renormalizer of the double-word algorithms: zero results kept
                self.renormalize_newton(v, f"{v}_raw")
            else:
                self.emit(f"const T {v} = {v}_raw;")
            return
        if alg == "newton":  # the kernel's own body (newton.cuh)
            M = 1 if one_term_divisor else R
            self.emit(f"const T {v}_raw = {self.pad(f'newton_div_group<T, {R}, {M}, {R}, {W}, {_steps(R, dt)}>({x}, {y}, lane)')};")  # noqa: E501
            if renorm:
                self.renormalize_newton(v, f"{v}_raw")
            else:
                self.emit(f"const T {v} = {v}_raw;")
            return
        if n.op == "sub":
            self.emit(f"const T {v}_y = lane < {R} ? negated({y}) : {y};")
            y = f"{v}_y"
        fn = {"safe": "add_safe_group", "fast": "add_fast_group", "truncated": "mul_truncated_group"}[alg]
        raw = self.pad(f"{fn}<T, {R}, {R}, {R}, {W}>({x}, {y}, lane)")
        if renorm:
            self.emit(f"const T {v}_raw = {raw};")
            self.emit(f"const T {v} = {self.pad(f'renormalize_group<T, {R}, {R}, {W}>({v}_raw, lane)')};")
        else:
            self.emit(f"const T {v} = {raw};")

    def unary(self, v, n, x):
        R, W, dt = self.R, self.W, self.dt
        if n.op == "negative":
            self.emit(f"const T {v} = lane < {R} ? negated({x}) : {x};")
            return
        if n.op == "absolute":
            self.emit(f"const T {v}_s = shfl<{W}>(renormalize_group<T, {R}, {R}, {W}>({x}, lane), 0);")
            self.emit(f"const T {v}_x0 = shfl<{W}>({x}, 0);")  # |-0| = +0: a zero with its sign bit set
            self.emit(f"const bool {v}_neg = {v}_s < T(0) || ({v}_s == T(0) && "
                      f"(FloatBits<T>::to_bits({v}_x0) & FloatBits<T>::SIGN) != 0);")
            self.emit(f"const T {v} = ({v}_neg && lane < {R}) ? negated({x}) : {x};")
            return
        renorm = n.params[1]
        if n.op == "sqrt" and dispatch.method("sqrt", n.params[0], R) in DOUBLE_WORD:
            self.double_word(v, dispatch.method("sqrt", n.params[0], R), "sqrt", x)
            self.emit(f"const T {v} = {v}_raw;")  # the double-word square root is not renormalized
            return
        if n.op == "reciprocal":  # the kernels' own bodies (newton.cuh)
            fin = f"newton_reciprocal_group<T, {R}, {R}, {W}, {_steps(R, dt)}>({x}, lane)"
        else:  # sqrt
            fin = f"newton_sqrt_group<T, {R}, {R}, {W}, {_steps(R, dt)}>({x}, lane)"
        self.emit(f"const T {v}_raw = {self.pad(fin)};")
        if renorm:
            self.renormalize_newton(v, f"{v}_raw")
        else:
            self.emit(f"const T {v} = {v}_raw;")

    def power_finish(self, v, n, x, r):
        """:func:`expansions.elementwise.power_finish` (the end of ``x ** n``, n < 0, r the reciprocal
        of the products): where ``_needs_scaling`` holds (a group-uniform flag: x's leading term), the
        powering again on x scaled to [1/2, 1) by ``scale``, each product rescaled, the reciprocal, the
        exponent applied, lower terms zeroed below a non-finite leading term, renormalized; under
        ``warp_any`` (every lane of the warp takes the branch, so its shuffles are whole).  Then IEEE's
        sign of a zero or infinite result for odd n (``_ieee_power_sign``)."""
        R, W = self.R, self.W
        (p,) = n.params
        m, fmt = -p, format_of(self.dt)
        mul = Node("mul", params=("auto", True, None, None))
        self.emit(f"const T {v}_x0 = shfl<{W}>({x}, 0);")
        self.emit(f"const bool {v}_usual = is_finite({v}_x0) && {v}_x0 != T(0);")
        self.emit(f"const long long {v}_e0 = {v}_usual ? ilogb_of({v}_x0) + 1 : 0;")
        self.emit(f"T {v}_s = {r};")
        if m < SCALED_POWER_LIMIT:
            low = min(fmt.emin + R * fmt.p, 0)
            self.emit(f"const bool {v}_need = {v}_usual && ({v}_e0 * {m}LL > {fmt.emax}LL || "
                      f"({v}_e0 - 1) * {m}LL - 1 < {low}LL);")
            self.emit(f"if (warp_any({v}_need)) {{")
            count = [0]

            def product(a, b):  # elementwise._scaled_product
                count[0] += 1
                c = f"{v}_m{count[0]}"
                self.binary(c, mul, a[0], b[0], False)
                self.emit(f"const T {c}_0 = shfl<{W}>({c}, 0);")
                self.emit(f"const int {c}_s = (is_finite({c}_0) && {c}_0 != T(0)) ? ilogb_of({c}_0) + 1 : 0;")
                self.emit(f"const T {c}_n = scale({c}, -{c}_s);")
                self.emit(f"const long long {c}_E = {a[1]} + {b[1]} + {c}_s;")
                return f"{c}_n", f"{c}_E"

            self.emit(f"const T {v}_xs = scale({x}, (int)-{v}_e0);")
            M, E = binary_powering((f"{v}_xs", f"{v}_e0"), m, product)
            self.unary(f"{v}_rc", Node("reciprocal", params=("auto", True)), M)
            self.emit(f"const long long {v}_k = -{E};")
            self.emit(f"const T {v}_t = scale({v}_rc, {v}_k < -100000 ? -100000 : ({v}_k > 100000 ? 100000 : "
                      f"(int){v}_k));")
            self.emit(f"const T {v}_t0 = shfl<{W}>({v}_t, 0);")
            self.emit(f"const T {v}_tz = (lane == 0 || is_finite({v}_t0)) ? {v}_t : T(0);")
            self.emit(f"const T {v}_n = {self.pad(f'renormalize_group<T, {R}, {R}, {W}>({v}_tz, lane)')};")
            self.emit(f"{v}_s = {v}_need ? {v}_n : {r};")
            self.emit("}")
        if p % 2 == 0:
            self.emit(f"const T {v} = {v}_s;")
            return
        self.emit(f"const T {v}_l = shfl<{W}>({v}_s, 0);")
        self.emit(f"const bool {v}_edge = {v}_l == T(0) || (!is_finite({v}_l) && !is_nan({v}_l));")
        self.emit(f"const T {v}_abs = FloatBits<T>::from_bits(FloatBits<T>::to_bits({v}_l) & ~FloatBits<T>::SIGN);")
        self.emit(f"const bool {v}_neg = (FloatBits<T>::to_bits({v}_x0) & FloatBits<T>::SIGN) != 0 && "
                  f"!is_nan({v}_x0);")
        self.emit(f"const T {v} = ({v}_edge && lane == 0) ? ({v}_neg ? negated({v}_abs) : {v}_abs) : {v}_s;")

    def elementary(self, v, n, *args):
        """An elementary function: its group function (the body of its op-by-op kernel) at this
        program's group width (the group functions give the same bits at any width >= theirs)."""
        call = f"elementary::{n.op}_group<T, {self.R}, {self.W}>({', '.join(args)}, lane, etable)"
        self.emit(f"const T {v} = {self.pad(call)};")

    def compare(self, v, n, x, y):
        """operations.compare: the sign of the 2R terms (x, -y) renormalized, the IEEE comparison of
        the leading terms where one is not finite, 'ne' alone true on a row with a NaN or inf term."""
        R, W = self.R, self.W
        R2 = 2 * R
        self.emit(f"const T {v}_ys = shfl<{W}>({y}, lane >= {R} ? lane - {R} : 0);")
        self.emit(f"const T {v}_b = lane < {R} ? {x} : (lane < {R2} ? negated({v}_ys) : T(0));")
        self.emit(f"const T {v}_d = shfl<{W}>(renormalize_group<T, {R2}, {R2}, {W}>({v}_b, lane), 0);")
        self.emit(f"const T {v}_x0 = shfl<{W}>({x}, 0);")
        self.emit(f"const T {v}_y0 = shfl<{W}>({y}, 0);")
        op = _CMP[n.op]
        self.emit(f"const bool {v}_sp = !(is_finite({v}_x0) && is_finite({v}_y0));")
        self.emit(f"const bool {v}_nx = group_any<{R}, {W}>(!is_finite({x})) && is_finite({v}_x0);")
        self.emit(f"const bool {v}_ny = group_any<{R}, {W}>(!is_finite({y})) && is_finite({v}_y0);")
        self.emit(f"const bool {v} = ({v}_nx || {v}_ny) ? {'true' if n.op == 'ne' else 'false'} : "
                  f"({v}_sp ? ({v}_x0 {op} {v}_y0) : ({v}_d {op} T(0)));")


def kernel_inputs(graph: Graph, wanted) -> list:
    """The nodes whose values enter the kernel as arrays: expansions and boolean arrays given to the
    program (inputs, constants) and the non-expansion operands promoted on the host."""
    nodes = graph.nodes
    return [i for i in wanted if nodes[i].op == "promote"
            or (nodes[i].op in ("input", "const") and nodes[i].kind in ("exp", "bool"))]


def kernel_source(graph: Graph, wanted, outputs, one_term_divisors=frozenset(), layouts=None) -> tuple:
    """(name expression, source) of the kernel computing the nodes ``wanted`` (closed under ancestors)
    and storing ``outputs`` (node ids).  ``one_term_divisors``: the division nodes whose divisor is
    one term (the cheaper Newton kernel, decided on the host as :func:`expansions.operations.binary`
    decides it).  ``layouts`` = (kinds, D): for each of :func:`kernel_inputs`, 'full' (one element per
    result element, at its index), 'one' (a single element, broadcast) or 'strided' (broadcast along
    some of the result's D axes); default all 'full'.
    The kernel's arguments: each input's pointer (followed by its D element strides when strided),
    one pointer per output, the D extents of the result when an input is strided, the table of the
    elementary functions when the program calls one (:data:`ELEMENTARY`), then the count."""
    R, dt, W = program_format(graph, wanted)
    nodes = graph.nodes
    ins = kernel_inputs(graph, wanted)
    kinds, D = layouts if layouts is not None else (("full",) * len(ins), 0)
    w = _Writer(R, W, dt)
    params = []
    if "strided" in kinds:  # the result's multi-index of this group's element
        w.emit("long long rest_ = index;")
        for d in reversed(range(D)):
            w.emit(f"const long long ix_{d} = rest_ % dim_{d};")
            w.emit(f"rest_ /= dim_{d};")
    for k, (i, kind) in enumerate(zip(ins, kinds)):
        ptype = "const bool*" if nodes[i].kind == "bool" else "const T*"
        params.append(f"{ptype} __restrict__ in{k}")
        if kind == "strided":
            params += [f"long long st{k}_{d}" for d in range(D)]
            w.emit(f"const long long off{k} = {' + '.join(f'ix_{d} * st{k}_{d}' for d in range(D))};")
        at = {"full": "index", "one": "0", "strided": f"off{k}"}[kind]
        if nodes[i].kind == "bool":
            w.emit(f"const bool v{i} = valid && in{k}[{at}];")
        else:
            w.emit(f"const T v{i} = load_term<{R}>(in{k}, {at}, valid, lane);")
    for i in wanted:
        n = nodes[i]
        if i in ins or n.op in ("input", "const", "promote"):
            continue
        args = [f"v{a}" for a in n.args]
        if n.op in ELEMENTARY:
            w.elementary(f"v{i}", n, *args)
        elif n.op in BINARY:
            w.binary(f"v{i}", n, *args, i in one_term_divisors)
        elif n.op in COMPARE:
            w.compare(f"v{i}", n, *args)
        elif n.op == "where":
            w.emit(f"const T v{i} = {args[0]} ? {args[1]} : {args[2]};")
        elif n.op == "power_finish":
            w.power_finish(f"v{i}", n, *args)
        else:
            w.unary(f"v{i}", n, *args)
    for k, i in enumerate(outputs):
        if nodes[i].kind == "bool":
            params.append(f"bool* __restrict__ out{k}")
            w.emit(f"if (valid && lane == 0) out{k}[index] = v{i};")
        else:
            params.append(f"T* __restrict__ out{k}")
            w.emit(f"store_term<{R}>(out{k}, index, valid, lane, v{i});")
    if "strided" in kinds:
        params += [f"long long dim_{d}" for d in range(D)]
    if uses_elementary(graph, wanted):
        params.append("const T* __restrict__ etable")
    ctype = build.CTYPES[dt]
    params = [p.replace("T*", f"{ctype}*") for p in params]
    body = "\n".join(w.lines)
    digest = hashlib.sha256(repr((graph.signature()[0], tuple(wanted), tuple(outputs), sorted(one_term_divisors),
                                  kinds, D)).encode()).hexdigest()[:16]
    name = f"program_{digest}"
    text = (f"\nnamespace expansions {{\n// Generated by expansions.programs.cuda from a traced program "
            f"(R = {R}, {dt}, W = {W}).\n"
            f"__global__ void {name}({', '.join(params + ['long long count'])}) {{\n"
            f"    using T = {ctype};\n"
            f"    for_each_group<{W}>(count, [&](long long index, bool valid, int lane) {{\n"
            f"{body}\n    }});\n}}\n}}  // namespace expansions\n")
    return f"expansions::{name}", text


def full_source(text: str) -> str:
    """The library's kernels (``kernels.cu`` with its headers) followed by a program's kernel."""
    return build.source() + text


def compile_program(graph: Graph, wanted, outputs, one_term_divisors=frozenset(), layouts=None,
                    arch: str = "sm_90"):
    """NVRTC-compile a program's kernel for ``arch`` (no GPU needed): (binary, lowered name, log)."""
    name, text = kernel_source(graph, wanted, outputs, one_term_divisors, layouts)
    binary, lowered, log = build.compile_source(full_source(text), [name], arch, filename="program.cu")
    return binary, lowered[name], log


class KernelPlan(Plan):
    """A program run as one kernel: the host prepares the kernel's inputs (non-expansion operands
    promoted exactly as the public dispatch promotes them; arrays read in place, broadcast inside the
    kernel by element strides), decides the one-term divisors as :func:`expansions.operations.binary`
    does, and ``launch(name, source, params, count)`` runs the kernel (on the GPU with CuPy, or in the
    warp emulator of the tests).  Outputs are reshaped as the CPU plan reshapes them."""

    def __init__(self, graph: Graph, outputs: tuple, device: str, launch):
        super().__init__(graph, outputs, device)
        self.launch = launch
        self.sources: dict = {}

    def _run(self, wanted: list, args):
        nodes = self.graph.nodes
        outs = [i for i in wanted if nodes[i].op not in ("input", "const")
                and any(kind == "node" and j == i for kind, j in self.outputs)]
        if not outs:  # the program returns its inputs only: no kernel
            return {}, ()
        R, dt, _ = program_format(self.graph, wanted)
        leaves = [j for j in wanted if nodes[j].op in ("input", "const")]
        shape = np.broadcast_shapes(*[self._leaf_shape(j, args) for j in leaves])
        count = int(np.prod(shape, dtype=np.int64))
        inputs, kinds, strides = {}, [], {}
        with np.errstate(all="ignore"):
            for i in kernel_inputs(self.graph, wanted):
                n = nodes[i]
                if n.op == "promote":
                    v = operand_terms(self._leaf_value(n.args[0], args), R, np.dtype(dt), self.device)
                else:
                    v = self._leaf_value(i, args)
                    v = v.terms if n.kind == "exp" else xp_of(v).asarray(v, dtype=bool)
                xp = xp_of(v)
                tail = tuple(v.shape[-1:]) if n.kind == "exp" else ()
                lead = tuple(v.shape[:len(v.shape) - len(tail)])
                size = int(np.prod(lead, dtype=np.int64))
                inputs[i] = xp.ascontiguousarray(v).reshape((size,) + tail)  # read in place: no broadcast copy
                if size == 1:
                    kinds.append("one")
                elif lead == shape:
                    kinds.append("full")
                else:  # broadcast along some axes: element strides, 0 where the input's extent is 1
                    kinds.append("strided")
                    padded = (1,) * (len(shape) - len(lead)) + lead
                    strides[i] = [int(np.prod(padded[d + 1:], dtype=np.int64)) if padded[d] != 1 else 0
                                  for d in range(len(shape))]
        one_term = frozenset(i for i in wanted if nodes[i].op == "div" and nodes[i].one_term
                             and dispatch.method("div", nodes[i].params[0], R) == "newton"
                             and not bool((inputs[nodes[i].args[1]][:, 1:] != 0).any()))
        layouts = (tuple(kinds), len(shape))
        key = (tuple(wanted), tuple(outs), one_term, layouts)
        if key not in self.sources:
            self.sources[key] = kernel_source(self.graph, wanted, outs, one_term, layouts)
        name, text = self.sources[key]
        xp = xp_of(next(iter(inputs.values())))
        results = [xp.empty((count, R), dtype=dt) if nodes[i].kind == "exp" else xp.empty(count, dtype=bool)
                   for i in outs]
        params = []
        for i in kernel_inputs(self.graph, wanted):
            params += [inputs[i]] + strides.get(i, [])
        params += results + (list(shape) if strides else [])
        if uses_elementary(self.graph, wanted):  # the table of the elementary functions, last
            params.append(elementary_table.device_table(R, dt) if self.device == "cuda"
                          else elementary_table.table(R, dt))
        self.launch(name, text, params, count)
        return dict(zip(outs, results)), shape


_FUNCTIONS: dict = {}  # (name, device id): cupy.RawKernel, in memory; the CUBINs also on disk


def _function(name: str, text: str, device_id: int):
    """The RawKernel of a program's kernel on a device: from memory, else from the disk cache
    (:func:`expansions.cuda.build.cached_cubin`: keyed by the full source, options, arch and NVRTC
    version), else compiled with NVRTC."""
    import cupy  # optional dependency: CuPy is needed only on the GPU path

    if (name, device_id) not in _FUNCTIONS:
        cubin, lowered = build.cached_cubin(full_source(text), [name], build.device_arch(device_id), "program.cu")
        with cupy.cuda.Device(device_id):
            module = cupy.RawModule(path=str(cubin))
            _FUNCTIONS[name, device_id] = (module, module.get_function(lowered[name]))
    return _FUNCTIONS[name, device_id][1]


def cupy_launch(name: str, text: str, params, count: int, block: int | None = None):
    """Run a program's kernel on the current CuPy device with ``params`` (arrays and ints, in the
    kernel's order) and the count (blocks of ``block`` threads, default :data:`build.BLOCK`, a
    grid-stride loop over the lane groups: any multiple of 32 gives the same bits)."""
    import cupy  # optional dependency: CuPy is needed only on the GPU path

    if not count:
        return
    device = cupy.cuda.Device()
    fn = _function(name, text, device.id)
    block = block or build.BLOCK
    blocks = min(-(-count * 32 // block), 32 * device.attributes["MultiProcessorCount"])
    args = [np.int64(a) if isinstance(a, int) else a for a in params]
    fn((blocks,), (block,), tuple(args + [np.int64(count)]))
