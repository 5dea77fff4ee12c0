"""The componentwise bounds of the matrix products (:mod:`expansions.slices`, :mod:`expansions.reduce`):
by exact slices or residues (:func:`matmul_slices`) and by the element-wise tree (:func:`matmul`),
and the extra bits badly scaled operands need (:func:`componentwise_extra`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

from ..bound_type import Bound
from ..formats import Format
from .arithmetic import _format, _pow2, tail_ratio
from .modular import modular_plan, modular_scale_fits
from .reductions import dot, dot_underflow_term
from .slices import slice_plan, slice_scale_fits


@dataclass(frozen=True)
class ComponentwiseBound:
    """``|C_ij - out_ij| <= scaled * n * 2**(E_i + F_j) + relative * |C_ij| + absolute``, for every
    entry, with E_i, F_j the row and column scales of the slice product."""

    scaled: Fraction
    relative: Fraction
    absolute: Fraction
    source: str
    note: str = ""


def slice_scheme_fits(scheme: str, n: int, R: int, fmt, extra: int = 0) -> bool:
    """Whether the plan of ``scheme`` ("modular" or "levels") for n, R, fmt and ``extra`` bits exists
    and its exact sums fit the format (:func:`modular_scale_fits`, :func:`slice_scale_fits`)."""
    fmt = _format(fmt)
    try:
        if scheme == "modular":
            return modular_scale_fits(modular_plan(n, R, fmt, extra), fmt)
        return slice_scale_fits(slice_plan(n, R, fmt, extra), fmt)
    except ValueError:
        return False


def default_slice_scheme(n: int, R: int, fmt, extra: int = 0) -> str:
    """The slicing :func:`expansions.slices.matmul` uses by default: "modular" where it fits the
    format (:func:`modular_scale_fits`) and needs fewer matrix products than "levels" (every float64
    case: 11 against 15 products at n = 1000 and R = 2, 20 against 55 at R = 4), else "levels"
    (where that fits; ValueError where neither does)."""
    fmt = _format(fmt)
    modular, levels = (slice_scheme_fits(sc, n, R, fmt, extra) for sc in ("modular", "levels"))
    if not (modular or levels):
        raise ValueError(f"no slice scheme holds {R} terms of {fmt.name} for an inner dimension {n}"
                         + (f" and {extra} extra bits" if extra else ""))
    if modular and levels:
        return "modular" if modular_plan(n, R, fmt, extra).gemms < slice_plan(n, R, fmt, extra).gemms else "levels"
    return "modular" if modular else "levels"


def matmul_slices(n: int, R: int, fmt, scheme: str | None = None, extra: int = 0) -> ComponentwiseBound:
    """Proven componentwise bound of the slice product (:func:`expansions.slices.matmul`) of an m x n
    and an n x p matrix of expansions, R terms of format fmt out, by ``scheme`` ("modular":
    :func:`modular_plan`, Ozaki scheme II; "levels": :func:`slice_plan`, Ozaki scheme I; default
    :func:`default_slice_scheme`) with ``extra`` bits (the plans' argument; the product chooses it
    from its operands, :func:`componentwise_extra`, so that :func:`matmul` holds):

        |C_ij - out_ij| <= tau (1 + rho) n 2**(E_i + F_j) + rho |C_ij| + R eta / 2,

    where C is the exact product, tau = the plan's ``truncation``, E_i = 1 + the largest
    exponent e (2**(e-1) <= |t| < 2**e) of the finite terms t of row i of A (so 2**(E_i - 2) <=
    max_k |a_ik| (1 + 2**-52) when the terms are ulp-nonoverlapping; +1 for each row where the slicing
    raised it, see :func:`expansions.cpu.slices.split`), F_j the same for column j of B, and
    rho = 2**((1-p) R) / ((1 - 2**(1-p)) (1 - d)), d = :func:`tail_ratio` (0 when the kept digits
    make at most R terms, ``plan.chunks(p) <= R``).

    Proof.  :func:`slice_truncation` (levels) or :func:`modular_truncation` (modular) bounds
    |C - C~| by n 2**(E+F) tau, where C~ is the exact value the kept digits hold.  C~ is cut into
    normal terms of the format (exact: :func:`slice_scale_fits`, :func:`modular_scale_fits`); the
    library's renormalization of those K terms into K terms is error-free and ulp-nonoverlapping,
    r_0..r_{K-1}; keeping r_0..r_{R-1} drops at most |r_{R-1}| t/(1-t) <= |r_0| t**R/(1-t),
    t = 2**(1-p), and |r_0| <= |C~|/(1-d) (the terms are normal: every nonzero value there is a
    multiple of the smallest normal number), so at most rho |C~| <= rho (|C| + n 2**(E+F) tau).
    Scaling the R kept terms back by 2**(E_i + F_j - c0) is exact unless a term falls below the
    underflow threshold, where it rounds by at most eta/2: R eta / 2.  The last renormalization (R
    into R terms) is error-free.  Overflow: a result whose leading term overflows is (+-inf, 0, ..., 0)."""
    fmt = _format(fmt)
    scheme = default_slice_scheme(n, R, fmt, extra) if scheme is None else scheme
    if scheme == "modular":
        plan = modular_plan(n, R, fmt, extra)
        source = ("Ozaki, Uchino, Imamura 2025 (Ozaki scheme II: exact products of residues, the Chinese "
                  "remainder theorem); expansions.bounds.matmul_slices")
        note = (f"{plan.gemms} products of residue matrices, {plan.bits} bits per entry in {plan.slices} digits, "
                f"{plan.levels - plan.cut} of {plan.levels} levels of {plan.level_bits} bits kept")
    elif scheme == "levels":
        plan = slice_plan(n, R, fmt, extra)
        source = "Ozaki, Ogita, Oishi, Rump 2012 (exact slice products); expansions.bounds.matmul_slices"
        note = f"{plan.gemms} slice products, beta = {plan.beta}, S = {plan.slices}, T = {plan.levels}"
    else:
        raise ValueError(f"unknown slice scheme {scheme!r}")
    rho = _slices_rounding(plan, R, fmt)
    return ComponentwiseBound(plan.truncation * (1 + rho), rho, Fraction(R, 2) * fmt.eta, source, note)


def _slices_rounding(plan, R: int, fmt: Format) -> Fraction:
    """rho of :func:`matmul_slices`: the relative error of keeping R of the exact sum's terms."""
    t = _pow2(1 - fmt.p)
    return t**R / (1 - t) / (1 - tail_ratio(fmt.p)) if plan.chunks(fmt.p) > R else Fraction(0)


def _nonoverlap_factor(p: int) -> Fraction:
    """c = 1 - 2**(1-p) / (1 - 2**(1-p)): |x| >= c |x_0| for an ulp-nonoverlapping x (see :func:`dot`)."""
    t = _pow2(1 - p)
    return 1 - t / (1 - t)


def componentwise_level(R: int, fmt) -> Fraction:
    """2**(-(p-1) R): the slice product's componentwise target, relative to sum_k |a_ik b_kj| (the
    R-term level; :func:`componentwise_extra` chooses the plan that meets it)."""
    return _pow2(-(_format(fmt).p - 1) * R)


def matmul(n: int, R: int, fmt) -> Bound:
    """The componentwise bound of the default matrix product (``a @ b``, :func:`expansions.matmul`,
    ``dot``, ``inner``, ``tensordot`` with ``method="auto"``, and the products inside
    :mod:`expansions.linalg`), whichever path computes it, for an inner dimension n, R terms of fmt:

        |C_ij - out_ij| <= value * sum_k |a_ik b_kj| + absolute,

    ``value`` the larger of the element-wise path's D = :func:`dot` (n, R, p) and the slice path's
    ``L + rho (1 + L)``, L = :func:`componentwise_level` = 2**(-(p-1)R), rho the slice product's
    final rounding (:func:`matmul_slices` at its largest: 2**((1-p)R) / ((1 - 2**(1-p)) (1 - d)),
    d = :func:`tail_ratio`); ``absolute`` (in the note) is the larger of :func:`dot_underflow_term`
    and R eta / 2.  (Prop. IV.2's constant makes D the larger for R <= 7 in float64, 2**-53 at
    R = 2, although the element-wise path measures at the R-term level; the slice path, which runs
    every product but the smallest, is proven at L + rho (1 + L).)

    Proof.  The element-wise path (the canonical tree of products) is within D sum |a_ik b_kj| plus
    :func:`dot_underflow_term` (:func:`dot`).  The slice path computes with the plan of
    ``componentwise_extra(n, R, fmt, k)`` extra bits, where 2**-k is a lower bound of
    2**-(E_i + F_j) sum_k |a_ik,0| |b_kj,0| over the entries with a nonzero product, computed
    exactly from the operands (:func:`expansions.slices.componentwise_deficit`); so the truncation
    n 2**(E_i + F_j) tau (1 + rho) of :func:`matmul_slices` is at most
    L c**2 2**(E_i + F_j) 2**-k <= L sum_k |a_ik b_kj| (c of :func:`dot`: |a| >= c |a_0|), and the
    final rounding rho |C~| <= rho (|C| + L sum |ab|) <= rho (1 + L) sum |ab|.  An entry whose
    products are all zero is computed exactly (0).  The hypotheses are those of :func:`dot`:
    ulp-nonoverlapping operands.  A product whose spread no plan holds in the format's range runs
    the element-wise path."""
    fmt = _format(fmt)
    D = dot(n, R, fmt.p)
    level = componentwise_level(R, fmt)
    rho = _pow2(1 - fmt.p) ** R / (1 - _pow2(1 - fmt.p)) / (1 - tail_ratio(fmt.p))
    absolute = max(dot_underflow_term(n, R, fmt), Fraction(R, 2) * fmt.eta)
    return Bound(max(D.value, level + rho * (1 + level)), "sum_k |a_ik b_kj| (componentwise)",
                 "expansions.bounds.matmul: bounds.dot for the element-wise path; bounds.matmul_slices with "
                 "componentwise_extra bits for the slice path", D.hypotheses_hold,
                 f"plus an absolute {float(absolute):.3g} near underflow; inputs ulp-nonoverlapping")


def componentwise_extra(n: int, R: int, fmt, deficit: int, scheme: str | None = None) -> int:
    """Extra bits of the slice plans (:func:`modular_plan`, :func:`slice_plan`) with which the slice
    product of an inner dimension n meets :func:`matmul`'s componentwise bound, given ``deficit`` = k
    such that s = 2**-k is a lower bound of 2**-(E_i + F_j) sum_k |a_ik,0 b_kj,0| over the entries
    with a nonzero product (:func:`expansions.slices.componentwise_deficit`; E_i, F_j the scales of
    :func:`matmul_slices`): the smallest extra, from the one the plans' targets
    tau <= 2**(-(p-1)R - 4 - extra) give less one, with

        n tau (1 + rho) <= L c**2 s,

    tau the plan's own truncation, L = :func:`componentwise_level`, c as in :func:`dot`, rho as in
    :func:`matmul`.  ValueError where no plan with enough bits fits the format's range (the product
    then runs the element-wise path)."""
    return _componentwise_extra(max(int(n), 1), int(R), _format(fmt), int(deficit), scheme)


@functools.lru_cache(maxsize=4096)
def _componentwise_extra(n: int, R: int, fmt: Format, deficit: int, scheme: str | None) -> int:
    c = _nonoverlap_factor(fmt.p)
    allowed = componentwise_level(R, fmt) * c * c * _pow2(-deficit)
    rho = _pow2(1 - fmt.p) ** R / (1 - _pow2(1 - fmt.p)) / (1 - tail_ratio(fmt.p))
    need = n * (1 + rho) / allowed * _pow2(-(fmt.p - 1) * R - 4)  # the targets' 2**-extra must be below 1/need
    extra = max(0, math.ceil(math.log2(need.numerator) - math.log2(need.denominator)) - 1)
    while True:
        if fmt.emin + (fmt.p - 1) * R + 4 + extra >= fmt.emax:  # the kept digits alone exceed the range
            raise ValueError(f"no slice plan of {extra} extra bits fits {fmt.name}")
        sc = scheme or default_slice_scheme(n, R, fmt, extra)
        if not slice_scheme_fits(sc, n, R, fmt, extra):
            raise ValueError(f"no {sc} slice plan of {extra} extra bits fits {fmt.name}")
        plan = modular_plan(n, R, fmt, extra) if sc == "modular" else slice_plan(n, R, fmt, extra)
        if n * plan.truncation * (1 + rho) <= allowed:
            return extra
        extra += 1
