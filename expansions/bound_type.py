"""The type of a proven error bound (:class:`Bound`), apart from the bounds themselves so that
:mod:`expansions.bounds` and :mod:`expansions.dw.bounds` can both use it without importing each
other in a circle (``expansions.bounds`` reads the double-word bounds for the Newton iterations'
start).  Use it as ``expansions.bounds.Bound``."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True)
class Bound:
    value: Fraction  # the bound, relative to `relative_to`
    relative_to: str  # the quantity the error is divided by
    source: str  # where the bound is proven
    hypotheses_hold: bool = True  # whether the proof's hypotheses hold for these sizes
    note: str = ""

    @property
    def log2(self) -> float:
        return math.log2(self.value.numerator) - math.log2(self.value.denominator)
