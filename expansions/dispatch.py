"""Which kernel runs an operation: the algorithm a method name stands for, on which backend.

The dispatch of :mod:`expansions.operations` (which the operators and the public functions share)
calls :func:`method` and :func:`operation` once per operation, with the operation, the method name, R
and the backend of the operands (:mod:`expansions.backends`), and then the function :func:`operation`
returns on the (count, n) arrays of terms: the kernel and its renormalization, one launch on the
GPU.  At R = 2 the double-word algorithms of :mod:`expansions.dw` are selectable by name and are the
defaults (``R2_DEFAULTS``).
"""

from __future__ import annotations

from functools import partial

from .backends import Backend, xp_of
from .dw import R2_DEFAULTS, R2_METHODS

ADD_METHODS = ("safe", "fast")
MUL_METHODS = ("truncated",)
DIV_METHODS = ("newton",)
SQRT_METHODS = ("newton",)

# R = 2: the double-word algorithms selectable by name and the defaults, R2_METHODS and R2_DEFAULTS,
# are defined in expansions.dw (beside the algorithms' table) and used here.

_GENERAL = {"add": ADD_METHODS, "mul": MUL_METHODS, "div": DIV_METHODS, "sqrt": SQRT_METHODS}
_WHAT = {"add": "addition", "mul": "multiplication", "div": "division", "sqrt": "square root"}


def method(op: str, name: str, R: int) -> str:
    """The algorithm a method name stands for at R terms ('auto': the default), or a ValueError."""
    kind = "add" if op == "sub" else op
    general = _GENERAL[kind]
    if name == "auto":
        return R2_DEFAULTS[kind] if R == 2 else general[0]
    if name in general:
        return name
    if name in R2_METHODS[kind]:
        if R != 2:
            raise ValueError(f"method {name!r} is a double-word algorithm: it needs R = 2, not {R}")
        return name
    names = ("auto",) + general + R2_METHODS[kind]
    raise ValueError(f"unknown {_WHAT[kind]} method {name!r}: use one of {names}")


def kernel(op: str, alg: str, be: Backend):
    """The backend function that runs algorithm ``alg`` (from :func:`method`) of operation ``op``:
    called as ``fn(xt, yt, R)`` (``fn(xt, R)`` for 'sqrt' and 'reciprocal'), it returns the raw
    output, before the renormalization (see :func:`renormalizer`).  For 'div' with the Newton method
    ``yt`` may be a one-term divisor (a float), which takes the cheaper kernel."""
    if op == "reciprocal":
        return be.newton_reciprocal
    if alg == "newton":
        return be.newton_sqrt if op == "sqrt" else be.newton_div
    if alg in ADD_METHODS or alg in MUL_METHODS:
        return getattr(be, f"{op}_{alg}")
    if op == "sqrt":
        return partial(be.dw_unary, alg)
    return partial(be.dw_binary, alg, "add" if op == "sub" else op, negate_y=op == "sub")


#: Algorithms whose kernels renormalize in registers on a backend with ``renormalizes_in_kernel``:
#: the parallel and Newton kernels, and the double-word algorithms at R = 2 (``dw_operation``).
RENORMALIZING = (ADD_METHODS + MUL_METHODS + ("newton", "reciprocal") + R2_METHODS["add"] + R2_METHODS["mul"]
                 + R2_METHODS["div"])

_DOUBLE_WORD = frozenset(name for names in R2_METHODS.values() for name in names)


_PLANS: dict = {}  # (op, alg, id(be), renormalize) -> (be, what operation() returns)


def operation(op: str, alg: str, be: Backend, renormalize: bool = True):
    """:func:`_operation` (below), remembered per (op, alg, backend, renormalize): the operators call
    it on every operation (the entry keeps ``be`` alive, so its ``id`` is not reused while cached)."""
    key = (op, alg, id(be), renormalize)
    hit = _PLANS.get(key)
    if hit is None or hit[0] is not be:
        hit = _PLANS[key] = (be, _operation(op, alg, be, renormalize))
    return hit[1]


def _operation(op: str, alg: str, be: Backend, renormalize: bool = True):
    """How backend ``be`` computes operation ``op`` by algorithm ``alg`` with the library's output:
    ``(run, then)``, ``run`` called as :func:`kernel`'s function is, ``then`` None or the function
    ``(out, R) -> terms`` to apply to its output.  With ``renormalize`` the output is the raw output
    renormalized by :func:`renormalizer` (for 'sqrt' and 'reciprocal', only the Newton kernels'
    output is), else the raw output.  On a backend whose kernels renormalize in registers (the CUDA
    launchers; the engine's double-word loops at R = 2) ``run`` does both in one kernel launch or
    loop, with the same bits as the kernel followed by the renormalization (``renormalizer(alg,
    cpu)(kernel(op, alg, cpu)(...), R)``, its specification, which the other backends run as it
    stands: ``then`` is that renormalizer)."""
    fn = kernel(op, alg, be)
    unary = op in ("sqrt", "reciprocal")
    if not renormalize or (unary and alg not in ("newton", "reciprocal")):
        return fn, None
    fused = be.renormalizes_in_kernel or (be.dw_renormalizes_in_kernel and alg in _DOUBLE_WORD)
    if fused and alg in RENORMALIZING:
        return partial(fn, renormalize=True), None
    return fn, renormalizer(alg, be)


def run(op: str, alg: str, be: Backend, renormalize: bool, *operands):
    """Operation ``op`` by ``alg`` on ``be`` (see :func:`operation`): its (count, R) terms;
    ``operands``: the (count, n) terms, then R."""
    fn, then = operation(op, alg, be, renormalize)
    out = fn(*operands)
    return then(out, operands[-1]) if then is not None else out


def renormalizer(alg: str, be: Backend):
    """The function ``(out, R) -> terms`` that renormalizes the raw output of algorithm ``alg``."""
    if alg in ("newton", "reciprocal") or alg in _DOUBLE_WORD:
        return partial(_renormalize_keeping_zeros, be)
    return be.renormalize


def _renormalize_keeping_zeros(be: Backend, out, R: int):
    """Renormalize the R-term output of a Newton kernel (error-free; the kernel's last step is
    renormalized before the scaling back, which can break the nonoverlap only below the underflow
    threshold) or of a double-word algorithm, keeping the signed zeros of the kernel's zero results
    (sqrt(-0) = -0, 0/-y = -0, (-0) * 1 = -0): at R = 2 what ``renormalize_pair`` does."""
    xp = xp_of(out)
    r = be.renormalize(out, R)
    return xp.where((out[:, :1] == 0) & (r[:, :1] == 0), out, r)
