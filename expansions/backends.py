"""The backends: one object per device with the same kernel names, chosen once per operation.

A :class:`Backend` holds the functions that run the library's algorithms on 2-D arrays of terms
(one expansion per row, shape (count, n), float64 or float32) and return new (count, R) arrays:

==================  ====================================================================
``add_safe``        x + y, safe parallel addition (Algorithm 1 of Collange et al. 2016)
``add_fast``        x + y, fast parallel addition (Fig. 5)
``sub_safe``        x - y, ``sub_fast``: the same on -y
``mul_truncated``   x * y, truncated parallel multiplication (Algorithm 2)
``renormalize``     (x, R): ulp-nonoverlapping R terms (Joldes, Marty, Muller, Popescu 2015)
``negate``          -x
``newton_*``        reciprocal, div, sqrt by Newton iterations
``dw_binary``       (name, kind, x, y): a double-word algorithm of :mod:`expansions.dw` at R = 2
``dw_unary``        (name, x): the double-word square root
``reduce``          the canonical pairwise tree of :mod:`expansions.cpu.reduce`
``elementary``      (name) -> the function ``name`` (exp, log, sin, ..., pow) of
                    :mod:`expansions.cpu.elementary`: ``f(x, R)``, ``f(y, x, R)`` (atan2), ``f(x, y, R)`` (pow)
==================  ====================================================================

``cpu`` runs the NumPy twins (:mod:`expansions.cpu`), the executable specification of the kernels;
``engine`` the compiled CPU engine (:mod:`expansions.engine`, numba: blocks of expansions on SIMD
lanes, on all cores; its kernels renormalize in the same pass, as the CUDA launchers do), tested
bit-identical to the twins; ``cuda`` runs the CUDA kernels through
CuPy (:mod:`expansions.cuda.launch`).  All give the same bits.  :func:`for_terms` picks the backend
of an array of terms (CuPy: cuda; NumPy: :func:`cpu_backend`, the engine unless numba is missing or
``EXPANSIONS_CPU=twins`` / :func:`set_cpu_backend` asks for the twins); the operations
(:mod:`expansions.operations`) call it once per operation.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import engine as _engine
from .cpu import elementary as _twin_elementary
from .cpu import kernels as _twins
from .cpu import newton as _twin_newton
from .cpu import reduce as _twin_reduce
from .cpu.lanes import array_module
from .cuda import dw_kernels as _dw_kernels
from .cuda import launch as _launch
from .cuda import reduce_launch as _reduce_launch
from .dw import cpu as _dw_twins

DEVICES = ("cpu", "cuda")


@dataclass(frozen=True)
class Backend:
    """The kernels of one device (see the module docstring for the contract of each)."""

    name: str
    device: str
    add_safe: Callable
    add_fast: Callable
    sub_safe: Callable
    sub_fast: Callable
    mul_truncated: Callable
    renormalize: Callable
    negate: Callable
    newton_reciprocal: Callable
    newton_div: Callable
    newton_sqrt: Callable
    dw_binary: Callable
    dw_unary: Callable
    reduce: Callable
    elementary: Callable
    #: its additions, multiplication and Newton kernels take ``renormalize=True`` and then return the
    #: renormalized result in one kernel launch (the CUDA launchers) or one pass (the engine's fused
    #: loops); else the renormalization is a second call of ``renormalize``
    #: (:func:`expansions.dispatch.operation` composes them).
    renormalizes_in_kernel: bool = False
    #: its ``dw_binary`` takes ``renormalize=True`` and returns the renormalized result in the same
    #: loop (the engine, :mod:`expansions.engine.fused_dw`); implied by ``renormalizes_in_kernel``.
    dw_renormalizes_in_kernel: bool = False
    #: the functions :func:`expansions.dispatch.operation` returns for it are compiled and emit no
    #: NumPy floating-point warnings (the engine): the operations call them without ``np.errstate``.
    silent: bool = False
    #: ``dw_direct(name, negate_y)``: the renormalized double-word operation as ``f(x, y)`` on checked
    #: (count, 2) C-contiguous writable arrays of one dtype (the engine; None elsewhere): the same loop
    #: as ``dw_binary`` with ``renormalize``, for the operators' common case.
    dw_direct: Callable | None = None


def _twin_double_word(name: str, *operands):
    """A double-word algorithm of :mod:`expansions.dw.cpu` on (count, 2) rows: its (count, 2) result."""
    hi, lo = getattr(_dw_twins, name)(*[a[:, k] for a in operands for k in (0, 1)])
    return np.stack([hi, lo], axis=1)


def _double_word_operand(terms):
    """(count, 2) terms made double words where they are not (:func:`expansions.dw.cpu.double_word`):
    what the algorithms' proofs assume of their operands."""
    hi, lo = _dw_twins.double_word(terms[:, 0], terms[:, 1])
    return xp_of(terms).stack([hi, lo], axis=1)


def _double_word_binary(run):
    """The binary double-word operation of a backend whose raw algorithm runner is ``run``."""

    def dw_binary(name: str, kind: str, xt, yt, R: int = 2, negate_y: bool = False):
        """Algorithm ``name`` ('add', 'mul' or 'div' ``kind``) on (count, 2) terms made double words
        (:func:`_double_word_operand`), x - y with ``negate_y``, a division on operands scaled to order
        1 where they lie near the underflow threshold (:func:`expansions.dw.cpu.underflow_exponents`,
        the quotient scaled back), then the library's non-finite rule on the operands as given (the
        leading-term IEEE result decides)."""
        operands = (xt, -yt if negate_y else yt)
        x0, y0 = operands[0][:, 0], operands[1][:, 0]
        leading = {"add": x0 + y0, "mul": x0 * y0, "div": x0 / y0}[kind]
        xd, yd = map(_double_word_operand, operands)
        if kind != "div":
            return _double_word_finish(run(name, xd, yd), operands, leading)
        xs, ys, back = _dw_twins.scaled_operands(kind, xd, yd)
        return _double_word_finish(_twin_newton.scale(run(name, xs, ys), back), operands, leading)

    return dw_binary


def _double_word_unary(run):
    """The double-word square root of a backend whose raw algorithm runner is ``run``."""

    def dw_unary(name: str, xt, R: int = 2):
        """Algorithm ``name`` on (count, 2) terms made double words (scaled by an even power of two
        near the underflow threshold, the root scaled back), then the non-finite rule
        (sqrt(negative) = NaN)."""
        xs, _, back = _dw_twins.scaled_operands("sqrt", _double_word_operand(xt))
        return _double_word_finish(_twin_newton.scale(run(name, xs), back), (xt,), xp_of(xt).sqrt(xt[:, 0]))

    return dw_unary


def _double_word_finish(z, operands, leading):
    """The non-finite rule of :func:`expansions.cpu.kernels.nonfinite_epilogue`, and NaN (not a NaN
    leading term with a finite tail) where the leading-term result is NaN; a zero result whose
    leading-term result is a zero takes that zero (IEEE's sign: (-0) * 1 = -0, (-0) + (-0) = -0,
    -1 / inf = -0), the algorithms' own arithmetic on zeros giving +0."""
    xp = xp_of(z)
    out = _twins.nonfinite_epilogue(z, operands, leading)
    invalid = xp.isnan(leading)[:, None] & xp.asarray([True, False])
    out = xp.where(invalid, xp.asarray(xp.nan, dtype=out.dtype), xp.where(xp.isnan(leading)[:, None], 0, out))
    signed_zero = (out[:, 0] == 0) & (out[:, 1] == 0) & (leading == 0)
    out[:, 0] = xp.where(signed_zero, leading, out[:, 0])
    return out


def _launched_dw_binary(name: str, kind: str, xt, yt, R: int = 2, negate_y: bool = False,
                        renormalize: bool = False):
    """The CUDA ``dw_binary``: one ``dw_operation`` launch (the algorithm, the non-finite rule of
    :func:`_double_word_finish` and, with ``renormalize``, the renormalization in registers)."""
    return _dw_kernels.operation(name, xt, yt, negate_y=negate_y, renormalize=renormalize)


def _launched_dw_unary(name: str, xt, R: int = 2):
    """The CUDA ``dw_unary``: one ``dw_operation`` launch (the square root and the non-finite rule)."""
    return _dw_kernels.operation(name, xt)


def _twin_elementary_function(name: str) -> Callable:
    """The NumPy twin of an elementary function."""
    return getattr(_twin_elementary, name)


@functools.cache
def _engine_arithmetic():
    e = _engine
    return _twin_elementary.Arithmetic(add_safe=e.add_safe, mul_truncated=e.mul_truncated, renormalize=e.renormalize,
                                       div=e.newton_div, sqrt=e.newton_sqrt)


@functools.cache
def _engine_elementary_function(name: str) -> Callable:
    """The engine's elementary function: one compiled loop where :mod:`expansions.engine.elementary`
    has it (:data:`~expansions.engine.elementary.COMPILED`), else the twin run on the engine's compiled
    operations (the same bits: :class:`expansions.cpu.elementary.Arithmetic`; the algorithm's own steps
    stay NumPy)."""
    compiled = _engine.compiled_elementary(name)
    if compiled is not None:
        return compiled
    fn = getattr(_twin_elementary, name)
    ops = _engine_arithmetic()

    @functools.wraps(fn)
    def run(*args):
        with _twin_elementary.arithmetic(ops):
            return fn(*args)

    return run


def _launched_elementary_function(name: str) -> Callable:
    """The launcher of an elementary-function kernel (elementary.cuh), with its twin's signature."""
    return _launch.LAUNCHERS[name]


cpu = Backend(
    name="cpu", device="cpu",
    add_safe=_twins.add_safe, add_fast=_twins.add_fast, sub_safe=_twins.sub_safe, sub_fast=_twins.sub_fast,
    mul_truncated=_twins.mul_truncated, renormalize=_twins.renormalize, negate=_twins.negate,
    newton_reciprocal=_twin_newton.reciprocal, newton_div=_twin_newton.div, newton_sqrt=_twin_newton.sqrt,
    dw_binary=_double_word_binary(_twin_double_word), dw_unary=_double_word_unary(_twin_double_word),
    reduce=_twin_reduce.reduce, elementary=_twin_elementary_function,
)

cuda = Backend(
    name="cuda", device="cuda",
    add_safe=_launch.add_safe, add_fast=_launch.add_fast, sub_safe=_launch.sub_safe, sub_fast=_launch.sub_fast,
    mul_truncated=_launch.mul_truncated, renormalize=_launch.renormalize, negate=_launch.negate,
    newton_reciprocal=_launch.newton_reciprocal, newton_div=_launch.newton_div, newton_sqrt=_launch.newton_sqrt,
    dw_binary=_launched_dw_binary, dw_unary=_launched_dw_unary,
    reduce=_reduce_launch.reduce, elementary=_launched_elementary_function, renormalizes_in_kernel=True,
)


def _engine_double_word(operation):
    """The engine's ``dw_binary`` and ``dw_unary`` around ``operation``
    (:func:`expansions.engine.fused_dw.operation`): one compiled loop each, the algorithm, the
    non-finite rule and (``renormalize``) the renormalization, with the bits of the twins'
    composition (the algorithm's name decides its kind)."""

    def dw_binary(name: str, kind: str, xt, yt, R: int = 2, negate_y: bool = False, renormalize: bool = False):
        return operation(name, xt, yt, negate_y, renormalize)

    def dw_unary(name: str, xt, R: int = 2):
        return operation(name, xt)

    return dw_binary, dw_unary


@functools.cache
def engine_backend() -> Backend:
    """The compiled engine as a Backend (imports numba and loads the compiled functions; ImportError
    with the reason when numba is missing)."""
    e = _engine
    dw_binary, dw_unary = _engine_double_word(e.dw_operation)
    return Backend(
        name="engine", device="cpu",
        add_safe=e.add_safe, add_fast=e.add_fast, sub_safe=e.sub_safe, sub_fast=e.sub_fast,
        mul_truncated=e.mul_truncated, renormalize=e.renormalize, negate=e.negate,
        newton_reciprocal=e.newton_reciprocal, newton_div=e.newton_div, newton_sqrt=e.newton_sqrt,
        dw_binary=dw_binary, dw_unary=dw_unary, reduce=e.reduce,
        elementary=_engine_elementary_function, renormalizes_in_kernel=True,
        dw_renormalizes_in_kernel=True, silent=True, dw_direct=e.dw_direct,
    )


#: The CPU backends by name: "engine" (the default) and "twins" (the NumPy twins, ``cpu`` above).
CPU_BACKENDS = ("engine", "twins")
_cpu_state: dict = {}  # "choice": the name asked for, "backend": the Backend in use, "reason": why not the engine


def set_cpu_backend(name: str | None = None) -> Backend:
    """Choose what runs on NumPy arrays: ``'engine'`` (compiled, the default), ``'twins'`` (the NumPy
    twins), or None for the default (the environment variable ``EXPANSIONS_CPU``, else the engine).
    Without numba the engine is replaced by the twins, and :func:`cpu_backend_reason` says why.
    Returns the Backend now in use."""
    choice = name if name is not None else os.environ.get("EXPANSIONS_CPU", "engine")
    if choice not in CPU_BACKENDS:
        raise ValueError(f"unknown CPU backend {choice!r}: use one of {CPU_BACKENDS}")
    reason = None
    if choice == "engine":
        reason = _engine.unavailable_reason()
    backend = cpu if choice == "twins" or reason is not None else engine_backend()
    _cpu_state.update(choice=choice, backend=backend, reason=reason)
    return backend


def cpu_backend() -> Backend:
    """The Backend that runs on NumPy arrays (see :func:`set_cpu_backend`)."""
    return _cpu_state.get("backend") or set_cpu_backend()


def cpu_backend_reason() -> str | None:
    """Why the CPU runs the twins although the engine was asked for (numba missing), else None."""
    cpu_backend()
    return _cpu_state["reason"]


def xp_of(a):
    """The array module of ``a``: NumPy for NumPy arrays and everything else, CuPy for CuPy arrays."""
    return array_module(a)


def device_of(terms) -> str:
    return "cuda" if xp_of(terms) is not np else "cpu"


def for_terms(terms) -> Backend:
    """The backend that runs on ``terms``' device (for NumPy arrays: :func:`cpu_backend`)."""
    return (_cpu_state.get("backend") or cpu_backend()) if xp_of(terms) is np else cuda


def for_device(device: str) -> Backend:
    return cpu_backend() if device == "cpu" else cuda


def to_numpy(a) -> np.ndarray:
    """``a`` as a NumPy array (a copy to the host for a CuPy array)."""
    if xp_of(a) is np:
        return np.asarray(a)
    return a.get()


def gpu_environment() -> dict:
    """GPU name, driver and CuPy version when CuPy sees a GPU; otherwise why not."""
    try:
        import cupy  # optional dependency: imported only when a GPU is asked about
    except ImportError:
        return {"gpu_available": False, "gpu_reason": "CuPy is not installed"}
    info = {"cupy": cupy.__version__}
    try:
        if not cupy.cuda.is_available():
            return info | {"gpu_available": False, "gpu_reason": "CuPy sees no CUDA device"}
        dev = cupy.cuda.Device()
        props = cupy.cuda.runtime.getDeviceProperties(dev.id)
        name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        drv = cupy.cuda.runtime.driverGetVersion()
        return info | {
            "gpu_available": True,
            "gpu_name": name,
            "compute_capability": dev.compute_capability,
            "driver": f"{drv // 1000}.{(drv % 1000) // 10}",
            "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(),
        }
    except Exception as exc:  # a broken driver must not break `info`
        return info | {"gpu_available": False, "gpu_reason": f"{type(exc).__name__}: {exc}"}


def check_device(device) -> str:
    """``device`` if it is 'cpu', or 'cuda' with a GPU that CuPy sees; else ValueError/RuntimeError."""
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r}: use 'cpu' or 'cuda'")
    if device == "cuda":
        env = gpu_environment()
        if not env.get("gpu_available"):
            raise RuntimeError(f"device='cuda' needs CuPy and a CUDA GPU: {env.get('gpu_reason')}")
    return device


def to_device(terms, device: str):
    """``terms`` on ``device`` (the same array when it is there already)."""
    check_device(device)
    if device_of(terms) == device:
        return terms
    if device == "cpu":
        return to_numpy(terms)
    import cupy  # optional dependency, present: check_device found a GPU

    return cupy.asarray(terms)
