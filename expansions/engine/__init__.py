"""The compiled CPU engine (numba): every operation of the NumPy twins, bit for bit, on all cores.

Drop-in for the twins (same names, signatures, shapes, dtypes and bits):

* :mod:`expansions.cpu.kernels`: :func:`add_safe`, :func:`add_fast`, :func:`sub_safe`, :func:`sub_fast`,
  :func:`mul_truncated`, :func:`renormalize` (:mod:`expansions.engine.fused`: blocks of expansions on
  SIMD lanes, the GPU's layout transposed), :func:`negate` (:mod:`expansions.engine.kernels`);
* :mod:`expansions.cpu.newton`: :func:`reciprocal`, :func:`div`, :func:`sqrt`, also named
  :func:`newton_reciprocal`, :func:`newton_div`, :func:`newton_sqrt` (:mod:`expansions.engine.fused`);
* :mod:`expansions.cpu.reduce`: :func:`reduce`, :func:`reduce_pass` (:mod:`expansions.engine.reduction`);
* the library's R = 2 operations, one loop each (the double-word algorithm, the non-finite rule and
  the renormalization): :func:`dw_operation` (:func:`expansions.engine.fused_dw.operation`), and
  :func:`dw_binary`, :func:`dw_unary` (without the renormalization) (:mod:`expansions.engine.fused_dw`).

A traced program (``expansions.fuse(fn, cpu="loop")``) runs as one loop over blocks of expansions,
node after node on the block engine's rows: :func:`run_program` (:mod:`expansions.engine.program`).

The elementary functions of :mod:`expansions.cpu.elementary` listed in
:data:`expansions.engine.elementary.COMPILED` are one compiled loop each (the twins' algorithms per
block of expansions on the fused operations): :func:`compiled_elementary` gives the function by its
name, or None for those that run the twins on the engine's whole-array operations.

The additions, the multiplication and the Newton operations also take ``renormalize=True``: then
they return the renormalized result (for the Newton operations, the dispatch's Newton renormalizer)
computed in the same pass, with the bits of the twin followed by the renormalization, as the CUDA
launchers do (:func:`expansions.dispatch.operation`).

Importing this package does not import numba; :func:`available` says whether the engine can run and
:func:`unavailable_reason` why not.  The functions are loaded on first access; without numba, accessing
one raises ImportError with the reason.  Compiled code is cached on disk (numba's ``cache=True``, in
``__pycache__`` or ``NUMBA_CACHE_DIR``): the first call of each kernel per dtype compiles it once.
"""

from __future__ import annotations

import importlib

_FUNCTIONS = {
    "add_safe": "fused",
    "add_fast": "fused",
    "sub_safe": "fused",
    "sub_fast": "fused",
    "mul_truncated": "fused",
    "renormalize": "fused",
    "negate": "kernels",
    "reciprocal": "fused",
    "div": "fused",
    "sqrt": "fused",
    "newton_reciprocal": "fused",
    "newton_div": "fused",
    "newton_sqrt": "fused",
    "reduce": "reduction",
    "reduce_pass": "reduction",
    "dw_operation": "fused_dw",
    "dw_scan": "fused_dw",
    "dw_direct": "fused_dw",
    "dw_binary": "fused_dw",
    "dw_unary": "fused_dw",
    "compiled_elementary": "elementary",
    "run_program": "program",
}

_status: list = []  # [reason or None], filled by available()


def unavailable_reason() -> str | None:
    """Why the engine cannot run (numba missing or failing to import), or None when it can."""
    if not _status:
        try:
            importlib.import_module(".kernels", __name__)
        except ImportError as exc:
            _status.append(f"the compiled CPU engine needs numba>=0.60 ({type(exc).__name__}: {exc})")
        else:
            _status.append(None)
    return _status[0]


def available() -> bool:
    """Whether the compiled engine can run here (numba imports)."""
    return unavailable_reason() is None


def __getattr__(name):
    if name in _FUNCTIONS:
        reason = unavailable_reason()
        if reason is not None:
            raise ImportError(reason)
        return getattr(importlib.import_module("." + _FUNCTIONS[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_FUNCTIONS))


__all__ = ["available", "unavailable_reason", *_FUNCTIONS]
