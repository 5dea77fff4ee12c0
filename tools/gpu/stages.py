"""The stages and their parts, in the order they run (most valuable first).

=========  ===========================================================================  =================
stage      parts (modules)                                                              at most
=========  ===========================================================================  =================
first      env (environment), bitexact (bitexact), tables, r2, stream (timings)         7 minutes
second     model (timings), sanitizer (sanitizer), verify (verification), elementary    7 minutes
           (elementary), characterize (timings)
third      verify_full_{add_safe,add_fast,mul} (verification), bitexact_exp             run part by part
           (bitexact), model_rest (timings), gpu_tests (suites), synccheck (sanitizer),
           paper_repro (suites)
=========  ===========================================================================  =================

Each module records its parts (:func:`tools.gpu.common.part`) in its own ``PARTS``; this module puts
them in their stages' order.
"""

from __future__ import annotations

from . import bitexact, elementary, environment, sanitizer, suites, timings, verification
from .common import Part

STAGES = {
    "first": ("env", "bitexact", "tables", "r2", "stream"),
    "second": ("model", "sanitizer", "verify", "elementary", "characterize"),
    "third": ("verify_full_add_safe", "verify_full_add_fast", "verify_full_mul", "bitexact_exp", "model_rest",
              "gpu_tests", "synccheck", "paper_repro"),
}

_DEFINED = {**environment.PARTS, **bitexact.PARTS, **timings.PARTS, **sanitizer.PARTS, **verification.PARTS,
            **elementary.PARTS, **suites.PARTS}
#: Every part by name, the stages' parts in their order.
PARTS: dict[str, Part] = {name: _DEFINED[name] for names in STAGES.values() for name in names}


def parts(stage: str) -> list[Part]:
    """The parts of ``stage`` in the order they run."""
    return [PARTS[name] for name in STAGES[stage]]


def defined() -> dict[str, Part]:
    """Every part the modules define (a test checks that each is in its stage's list)."""
    return dict(_DEFINED)
