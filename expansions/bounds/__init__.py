"""Proven error bounds, as exact rationals (design decision 8).

Each function returns a :class:`Bound`: the exact value, what it bounds (relative to which
quantity), where it is proven, and whether the proof's hypotheses hold for the given sizes.  The
verification (``python -m expansions verify``) compares exact errors with these values.

By family, each module importing only the ones before it: :mod:`~expansions.bounds.arithmetic`
(the additions, the multiplication, valid expansions, the shared helpers), :mod:`~expansions.bounds.newton`
(reciprocal, division, square root), :mod:`~expansions.bounds.reductions` (sums and dot products),
:mod:`~expansions.bounds.slices` and :mod:`~expansions.bounds.modular` (the plans of the matrix
products by exact slices and by residues), :mod:`~expansions.bounds.products` (the matrix products'
componentwise bounds), :mod:`~expansions.bounds.elementary_functions` (the elementary functions'
stated bounds).  Every public name is here: use them as ``expansions.bounds.X``.
"""

from __future__ import annotations

from ..bound_type import Bound
from .arithmetic import (
    add_fast,
    add_safe,
    mul_truncated,
    mul_truncation,
    mul_underflow_term,
    ordered,
    round_up,
    tail_ratio,
    ulp_nonoverlapping,
)
from .elementary_functions import (
    ELEMENTARY,
    POW_FLOOR_MARGIN,
    elementary,
    elementary_unit,
    pow_bound,
    pow_exponent_limit,
)
from .modular import (
    MODULAR_DIGIT_MAX,
    MODULAR_EXACT,
    MODULUS_MAX,
    ModularPlan,
    ModularSetup,
    entry_max,
    modular_plan,
    modular_scale_fits,
    modular_setup,
    modular_truncation,
    modulus_limit,
)
from .newton import (
    div,
    mul_relative_to_product,
    newton_start,
    newton_steps,
    newton_underflow_term,
    reciprocal,
    reciprocal_with_steps,
    sqrt,
)
from .products import (
    ComponentwiseBound,
    componentwise_extra,
    componentwise_level,
    default_slice_scheme,
    matmul,
    matmul_slices,
    slice_scheme_fits,
)
from .reductions import dot, dot_underflow_term, sum_tree
from .slices import (
    SLICE_BITS_MAX,
    SLICE_BITS_MIN,
    SlicePlan,
    slice_bits,
    slice_plan,
    slice_scale_fits,
    slice_truncation,
)

__all__ = [
    "Bound",
    "add_fast", "add_safe", "mul_truncated", "mul_truncation", "mul_underflow_term", "ordered", "round_up",
    "tail_ratio", "ulp_nonoverlapping",
    "ELEMENTARY", "POW_FLOOR_MARGIN", "elementary", "elementary_unit", "pow_bound", "pow_exponent_limit",
    "MODULAR_DIGIT_MAX", "MODULAR_EXACT", "MODULUS_MAX", "ModularPlan", "ModularSetup", "entry_max", "modular_plan",
    "modular_scale_fits", "modular_setup", "modular_truncation", "modulus_limit",
    "div", "mul_relative_to_product", "newton_start", "newton_steps", "newton_underflow_term", "reciprocal",
    "reciprocal_with_steps", "sqrt",
    "ComponentwiseBound", "componentwise_extra", "componentwise_level", "default_slice_scheme", "matmul",
    "matmul_slices", "slice_scheme_fits",
    "dot", "dot_underflow_term", "sum_tree",
    "SLICE_BITS_MAX", "SLICE_BITS_MIN", "SlicePlan", "slice_bits", "slice_plan", "slice_scale_fits",
    "slice_truncation",
]
