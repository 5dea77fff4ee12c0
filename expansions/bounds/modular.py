"""The plans and truncation bounds of the matrix products by residues (Ozaki scheme II):
:mod:`expansions.cpu.slices` (modular steps), :mod:`expansions.slices`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

from ..formats import Format
from .arithmetic import _format, _pow2
from .slices import _check_extra

#: Every integer the modular scheme computes in float64 (a residue sum, a Garner sum, a level sum, a
#: product of residue matrices) stays within this, so that it is exact whatever the order of the
#: additions, and :func:`expansions.cpu.slices.smod` reduces it exactly (its quotient times the
#: modulus stays below 2**53).
MODULAR_EXACT = 2**52
#: Widest digit of the modular scheme's splitting and of the exact result's levels.
MODULAR_DIGIT_MAX = 26
#: Moduli stay below this (for a small inner dimension n the GEMM condition alone would allow more).
MODULUS_MAX = 2**23


def modulus_limit(n: int) -> int:
    """The largest odd modulus m (< :data:`MODULUS_MAX`) whose symmetric residues (|r| <= (m-1)/2)
    give exact products of residue matrices for an inner dimension n: ``n ((m-1)/2)**2 <= 2**52``,
    every partial sum of the BLAS an integer of magnitude <= 2**52."""
    h = math.isqrt(MODULAR_EXACT // max(int(n), 1))
    return min(2 * h + 1, MODULUS_MAX - 1)


def _is_prime(m: int) -> bool:
    if m < 2 or m % 2 == 0:
        return m == 2
    return all(m % d for d in range(3, math.isqrt(m) + 1, 2))


def _smod(x: int, m: int) -> int:
    """The symmetric residue of x modulo an odd m, in [-(m-1)/2, (m-1)/2]."""
    r = x % m
    return r - m if r > (m - 1) // 2 else r


def _balanced_digits(x: int, bits: int) -> list:
    """Balanced base-2**bits digits of x >= 0, lowest first, |d| <= 2**(bits-1) (the top one too)."""
    out = []
    base, half = 1 << bits, 1 << (bits - 1)
    while x:
        d = x % base
        if d > half:
            d -= base
        out.append(d)
        x = (x - d) >> bits
    return out or [0]


@dataclass(frozen=True)
class ModularPlan:
    """What the modular slice product (Ozaki scheme II, by the Chinese remainder theorem) of an inner
    dimension n computes for R terms of precision p.

    Each row of A (column of B) is cut into ``slices`` balanced digits: the first of ``top`` bits, the
    others of ``beta`` bits, ``bits`` = top + (slices - 1) beta in all, so that a_ik ~ A'_ik 2**(E_i - bits)
    with an integer A'_ik (|A'_ik| <= :attr:`entry_max`).  The integer product C' = A' B' is computed
    modulo each of the pairwise coprime ``moduli`` by one float64 matrix product of symmetric residues
    (exact: :func:`modulus_limit`), and reconstructed exactly (Garner's mixed-radix form) as ``levels``
    balanced digits of ``level_bits`` bits, of which the ``cut`` lowest are dropped; the rest become
    the R terms.  ``truncation`` is tau of :func:`modular_truncation`."""

    n: int
    R: int
    p: int
    bits: int
    beta: int
    slices: int
    top: int
    moduli: tuple
    level_bits: int
    levels: int
    cut: int
    truncation: Fraction

    @property
    def gemms(self) -> int:
        return len(self.moduli)

    @property
    def modulus(self) -> int:
        """M, the product of the moduli: |C'| <= (M - 1)/2."""
        return math.prod(self.moduli)

    @property
    def entry_max(self) -> int:
        """The largest |A'_ik| the digits allow (:func:`entry_max`)."""
        return entry_max(self.beta, self.slices, self.top)

    @property
    def kept(self) -> int:
        """Digits of the exact product converted to terms (the top ``levels - cut``)."""
        return self.levels - self.cut

    def chunk_digits(self, p: int) -> int:
        """Digits per term of the output format (precision p): g balanced digits of level_bits bits
        make an integer below 2**p when g level_bits <= p (see :meth:`SlicePlan.chunk_digits`)."""
        return max(1, p // self.level_bits)

    def chunks(self, p: int) -> int:
        """Terms of the kept digits in the output format."""
        return -(-self.kept // self.chunk_digits(p))

    def setup(self, sa: int | None = None, sb: int | None = None) -> ModularSetup:
        """The tables of a product whose operands use only their first ``sa`` (A) and ``sb`` (B)
        digits (the others are zero in every entry; default all): :func:`modular_setup`."""
        return modular_setup(self, self.slices if sa is None else sa, self.slices if sb is None else sb)


@dataclass(frozen=True)
class ModularSetup:
    """The constants of one modular slice product (:meth:`ModularPlan.setup`): the product C' of the
    integers A', B' of the plan's digits is 2**shift C'', C'' = A'' B'' of the integers of the first
    sa and sb digits, and C'' is what is reconstructed, from the first ``len(moduli)`` moduli:

    * ``weights[i][s]``: 2**((S-1-s) beta) mod m_i, the residue of A' is sum_s d_s weights[i][s];
    * ``unshift[i]``: 2**-shift mod m_i (C'' mod m_i from C' mod m_i);
    * ``garner[i][j]`` (j < i), ``inverses[i]``: Garner's constants (P_j mod m_i, P_i**-1 mod m_i);
    * ``radix[i]``: the balanced base-2**level_bits digits of P_i, lowest first, ``levels`` of them;
    * the ``cut`` lowest levels are dropped, at most as many bits as the plan drops (2**shift is a
      coarser unit), so the plan's truncation holds; the lowest kept level's unit is
      2**(E'_i + F'_j + low_exponent), E'_i the scale :func:`expansions.cpu.slices.split` returns
      (E_i + beta - top: the unit of A' is 2**(E'_i - S beta)).

    All residues are symmetric (in [-(m-1)/2, (m-1)/2])."""

    moduli: tuple
    weights: tuple
    shift: int
    unshift: tuple
    garner: tuple
    inverses: tuple
    radix: tuple
    level_bits: int
    levels: int
    cut: int
    low_exponent: int

    @property
    def gemms(self) -> int:
        return len(self.moduli)


@functools.lru_cache(maxsize=1024)
def modular_setup(plan: ModularPlan, sa: int, sb: int) -> ModularSetup:
    """:class:`ModularSetup` of ``plan`` for operands with sa and sb digits in use (1 <= sa, sb <= S):
    the fewest moduli (a prefix of the plan's) whose product exceeds 2 n entry_max(sa) entry_max(sb)."""
    S, beta, lb = plan.slices, plan.beta, plan.level_bits
    if not (1 <= sa <= S and 1 <= sb <= S):
        raise ValueError(f"digits in use must be in 1..{S}, got {sa} and {sb}")
    shift = (S - sa) * beta + (S - sb) * beta
    need = 2 * plan.n * entry_max(beta, sa, plan.top) * entry_max(beta, sb, plan.top) + 1
    N = 1
    while math.prod(plan.moduli[:N]) < need:
        N += 1
    moduli = plan.moduli[:N]
    M = math.prod(moduli)
    levels = 1
    while (M - 1) // 2 > ((1 << (lb - 1)) - 1) << ((levels - 1) * lb):
        levels += 1
    P = [math.prod(moduli[:j]) for j in range(N)]
    radix = []
    for j in range(N):
        d = _balanced_digits(P[j], lb)
        radix.append(tuple(d + [0] * (levels - len(d))))
    cut = min(max(0, (plan.cut * lb - shift) // lb), max(0, levels - 2))
    while levels - cut < 2:
        levels += 1
        radix = [r + (0,) for r in radix]
    weights = tuple(tuple(_smod(1 << ((S - 1 - s) * beta), m) for s in range(S)) for m in moduli)
    unshift = tuple(_smod(pow(2, -shift, m), m) for m in moduli)
    garner = tuple(tuple(_smod(P[j], m) if j < i else 0 for j in range(N)) for i, m in enumerate(moduli))
    inverses = tuple(_smod(pow(P[i], -1, m), m) for i, m in enumerate(moduli))
    return ModularSetup(moduli, weights, shift, unshift, garner, inverses, tuple(radix), lb, levels, cut,
                        shift + cut * lb - 2 * S * beta)


def entry_max(beta: int, slices: int, top: int) -> int:
    """max |A'| for balanced digits, the first of ``top`` bits (|d| <= 2**(top-1)), the others of beta."""
    low = (1 << (beta - 1)) * (((1 << ((slices - 1) * beta)) - 1) // ((1 << beta) - 1))
    return (1 << (top - 1)) * (1 << ((slices - 1) * beta)) + low


def _dropped_levels(cut: int, level_bits: int) -> int:
    """max |sum_{l<cut} d_l 2**(l level_bits)| over balanced digits: 2**(lb-1) (2**(cut lb) - 1)/(2**lb - 1)."""
    return (1 << (level_bits - 1)) * (((1 << (cut * level_bits)) - 1) // ((1 << level_bits) - 1))


def modular_truncation(n: int, bits: int, beta: int, slices: int, top: int, R: int, level_bits: int,
                       cut: int) -> Fraction:
    """tau: |C_ij - C^_ij| <= n 2**(E_i + F_j) tau, C^ the modular slice product before its conversion
    to R terms (the kept digits of C' times 2**(E_i + F_j - 2 bits)).

    Proof.  The splitting (:func:`expansions.cpu.slices.split` with the first digit of ``top`` bits,
    the scale E' = E + beta - top) gives a_k = A'_k 2**(E - bits) + V_k with the integer
    A'_k = sum_s d_ks 2**((S-s) beta), |d_k1| <= 2**(top-1) (checked by the code, which raises E
    otherwise), |d_ks| <= 2**(beta-1) (carries), so |A'_k| <= :func:`entry_max` = 2**bits abar, and
    |V_k| <= v 2**E, v = R 2**-bits / 2 (each of the R terms' remainders modulo 2**(E - bits),
    rounded to nearest).  With the same for b_k (scale F):
    a b - a^ b^ = V b^ + a^ V' + V V', so per k, relative to 2**(E+F), at most v (2 abar + v).
    C' = sum_k A'_k B'_k is computed exactly (the residues and their products are exact integers,
    :func:`modulus_limit`; the Chinese remainder theorem: |C'| <= n entry_max**2 <= (M - 1)/2, M the
    product of the moduli; Garner's reconstruction and the level sums are exact integers below
    :data:`MODULAR_EXACT`).  Dropping the ``cut`` lowest balanced digits of C' changes it by at most
    :func:`_dropped_levels`, times 2**(E + F - 2 bits).  Summing over k and dividing by n gives tau."""
    am = Fraction(entry_max(beta, slices, top), 1 << bits)
    v = Fraction(R, 2) * _pow2(-bits)
    return v * (2 * am + v) + Fraction(_dropped_levels(cut, level_bits), n) * _pow2(-2 * bits)


def modular_plan(n: int, R: int, fmt, extra: int = 0) -> ModularPlan:
    """The fewest moduli for R terms of the format fmt: the smallest ``bits`` whose splitting error
    is at most 15/16 of ``2**(-(p-1)R - 4 - extra)`` (the target of :func:`slice_plan`), the fewest slices
    of at most :data:`MODULAR_DIGIT_MAX` bits that hold it, the largest primes below
    :func:`modulus_limit` until their product exceeds ``2 n entry_max**2``, the widest levels whose
    sums stay exact and the most dropped levels that keep tau within the target.  For n = 1000,
    float64, extra = 0: 11 products at R = 2, 16 at R = 3, 20 at R = 4, 39 at R = 8."""
    return _modular_plan(int(n), int(R), _format(fmt), _check_extra(extra))


@functools.lru_cache(maxsize=256)
def _primes_down(limit: int, count: int) -> tuple:
    out, m = [], limit if limit % 2 else limit - 1
    while len(out) < count:
        if _is_prime(m):
            out.append(m)
        m -= 2
    return tuple(out)


@functools.lru_cache(maxsize=4096)
def _modular_plan(n: int, R: int, fmt: Format, extra: int = 0) -> ModularPlan:
    n = max(n, 1)
    target = _pow2(-(fmt.p - 1) * R - 4 - extra)
    limit = modulus_limit(n)
    h = (limit - 1) // 2
    bits = (fmt.p - 1) * R + 4 + extra
    while True:
        slices = -(-bits // MODULAR_DIGIT_MAX)
        while True:  # the residue sums: slices digits of beta bits times weights |w| <= h
            beta = -(-bits // slices)
            if slices * (1 << (beta - 1)) * h <= MODULAR_EXACT:
                break
            slices += 1
        top = bits - (slices - 1) * beta
        am = Fraction(entry_max(beta, slices, top), 1 << bits)
        v = Fraction(R, 2) * _pow2(-bits)
        if v * (2 * am + v) <= target * Fraction(15, 16):
            break
        bits += 1
    amax = entry_max(beta, slices, top)
    need = 2 * n * amax * amax + 1
    moduli, count = (), 0
    while math.prod(moduli) < need:
        count += 8
        primes = _primes_down(limit, count)
        moduli = ()
        for m in primes:
            moduli += (m,)
            if math.prod(moduli) >= need:
                break
    N = len(moduli)
    if (N - 1) * h * h + h > MODULAR_EXACT:
        raise ValueError(f"too many moduli ({N}) for exact Garner sums")
    M = math.prod(moduli)
    for level_bits in range(min(MODULAR_DIGIT_MAX, fmt.p), 1, -1):
        levels = 1
        while (M - 1) // 2 > ((1 << (level_bits - 1)) - 1) << ((levels - 1) * level_bits):
            levels += 1
        digits = [_balanced_digits(math.prod(moduli[:j]), level_bits) for j in range(N)]
        biggest = max(abs(d) for ds in digits for d in ds)
        if all(len(ds) <= levels for ds in digits) and N * h * biggest <= MODULAR_EXACT:
            break
    else:
        raise ValueError(f"no exact level width for {N} moduli")
    cut = 0
    while cut + 2 < levels and modular_truncation(n, bits, beta, slices, top, R, level_bits, cut + 1) <= target:
        cut += 1
    tau = modular_truncation(n, bits, beta, slices, top, R, level_bits, cut)
    return ModularPlan(n, R, fmt.p, bits, beta, slices, top, moduli, level_bits, levels, cut, tau)


def modular_scale_fits(plan: ModularPlan, fmt) -> bool:
    """Whether the kept digits of every modular product of the plan (every :meth:`ModularPlan.setup`),
    scaled so that the lowest kept level's unit is the smallest normal number 2**emin, stay below
    2**emax: every term formed from them is then exact and normal (as in :func:`slice_scale_fits`).
    Bound used: the setup's |C''| <= (M'' - 1)/2 < n entry_max(sa) entry_max(sb) m_0 (one modulus more
    than needed at most), entry_max(sa) <= entry_max(S) 2**-((S - sa) beta), and its lowest kept
    unit is above 2**(cut level_bits - shift - level_bits) in the units of C'."""
    fmt = _format(fmt)
    lb = plan.level_bits
    top = plan.n * plan.entry_max ** 2 * plan.moduli[0] + (_dropped_levels(plan.cut, lb) << lb)
    top = (top << lb) >> (plan.cut * lb)
    return fmt.emin + (top + 1).bit_length() + 1 <= fmt.emax
