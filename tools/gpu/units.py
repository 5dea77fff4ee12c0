"""Compile units: what the parts launch, as the compile pool (:mod:`tools.gpu.compilation`) compiles it
before a stage's first launch, and the traced programs whose generated kernels the stages launch."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

import expansions as ex
from expansions.generate import random_terms
from expansions.programs import Program
from expansions.programs import cuda as programs_cuda

from .common import DTYPES


@dataclass(frozen=True, order=True)
class Unit:
    """One NVRTC program.  ``kind``: ``kernels`` (``key`` = one name expression of kernels.cu), ``dw``
    (the double-word module, ``key`` empty), ``bench`` (one name expression of bench/kernels.cu),
    ``seed004`` (``key`` = the build: standard, fast, library), ``program`` (``key`` = (program name,
    R, dtype) of :data:`PROGRAMS`); and ``numba`` (``key`` = a family of the bit-exactness
    comparison, or ``elementary``): not NVRTC but numba, compiling the CPU engine's code that family's
    CPU side runs, into numba's disk cache (:func:`tools.gpu.bitexact.warm_engine`)."""

    kind: str
    key: tuple = ()

    @property
    def label(self) -> str:
        return f"{self.kind}:{' '.join(map(str, self.key))}" if self.key else self.kind


def kernel_unit(instance) -> Unit:
    """The unit of one instance of kernels.cu (:class:`expansions.cuda.build.Instance`)."""
    return Unit("kernels", (instance.name_expression,))


def numba_units(names, per_dtype: bool = False) -> list:
    """The compile-pool units that fill numba's cache with the engine code a family's CPU side runs;
    ``per_dtype``: one unit per term dtype (two processes of the pool at once, for the units whose
    compile would otherwise be the longest of the stage: the compiled elementary functions)."""
    if per_dtype:
        return [Unit("numba", (n, d)) for n in names for d in DTYPES]
    return [Unit("numba", (n,)) for n in names]


#: Traced programs whose CUDA kernels the stages compile and launch: name -> function.
def _fma(x, y, z):
    return x * y + z


PROGRAMS = {"fma": _fma}


@functools.cache
def program_source(name: str, R: int, dtype: str) -> tuple[str, str]:
    """(kernel name, kernel text) of program ``name`` at R terms and ``dtype``, every input a full array:
    the text the CUDA plan generates (captured from :class:`expansions.programs.cuda.KernelPlan` run on
    NumPy arrays with a launch that records it; no GPU needed)."""
    args = [ex.from_terms(random_terms((3,), R, dtype, seed=k)) for k in range(3)]
    graph, (_, items) = Program(PROGRAMS[name]).trace(*args)
    seen = []
    plan = programs_cuda.KernelPlan(graph, tuple(items), "cpu", lambda n, text, params, count: seen.append((n, text)))
    with np.errstate(all="ignore"):
        plan(args)
    return seen[0]
