"""The elementary functions' stated bounds (:mod:`expansions.cpu.elementary`): EMPIRICAL, not proven.
"""

from __future__ import annotations

from fractions import Fraction

from ..bound_type import Bound
from ..formats import effective_bits, nominal_bits
from .arithmetic import _format, _pow2

#: The elementary functions whose accuracy is stated by :func:`elementary`.
ELEMENTARY = ("exp", "expm1", "log", "log1p", "log2", "log10", "pow", "sin", "cos", "tan", "atan", "atan2", "asin",
              "acos", "sinh", "cosh", "tanh")


def elementary_unit(R: int, fmt) -> Fraction:
    """The relative unit of the elementary functions' accuracy: ``u_R = 2**-((p-1)R)``, or, where an
    R-term expansion near 1 is limited by the underflow threshold (``R(p-1) + 1`` above
    ``formats.effective_bits(R, fmt, 0)``: float32 from R = 7, float64 from R = 21), the format's floor
    ``2**-(effective_bits - 1)`` (``2**-149`` for float32, ``2**-1074`` for float64)."""
    fmt = _format(fmt)
    return _pow2(-(effective_bits(R, fmt, 0) - 1))


def elementary(name: str, R: int, fmt) -> Bound:
    """Stated error bound of the elementary function ``name`` at R terms: EMPIRICAL, from the
    measurements of ``python -m expansions verify --elementary`` (paper_repro/results/cpu-x86_64/
    elementary/), not a proof.  The error of a result y of f(x) is measured in units of
    ``max(elementary_unit(R, fmt) |f(x)|, eta, eta |f'(x)|)`` for tan (the reduced argument cannot be
    nearer a pole than eta): where the unit is u_R (``R(p-1) + 1`` bits fit above the underflow
    threshold) the stated bound is 8 units (about 3 bits lost); where the
    format's floor limits the precision (float32 R >= 7, float64 R >= 21), every operation near the
    floor loses up to R(R+1)/2 eta (:func:`mul_underflow_term`), and the stated bound is 256 units
    of the floor, 2**15 for pow (exp(y log x): the floor's absolute error of y log x, up to 745 in
    magnitude, becomes a relative error of the result)."""
    if name not in ELEMENTARY:
        raise ValueError(f"unknown elementary function {name!r}: one of {ELEMENTARY}")
    fmt = _format(fmt)
    nominal = nominal_bits(R, fmt) <= effective_bits(R, fmt, 0)
    units = 8 if nominal else (2**15 if name == "pow" else 256)
    note = f"{units} units of {'u_R' if nominal else 'the underflow floor'}; not proven"
    if name == "pow":
        note += "; for |y| <= pow_exponent_limit(R, fmt) only (see pow_bound)"
    return Bound(units * elementary_unit(R, fmt), "max(unit |f|, eta)",
                 "empirical: python -m expansions verify --elementary", True, note)


#: pow's stated bound holds while the absolute error of log x at the underflow threshold, multiplied by
#: |y|, stays this many times below it (measured: the bound is missed from about 2^3 below on).
POW_FLOOR_MARGIN = 16


def pow_exponent_limit(R: int, fmt) -> Fraction:
    """The largest |y| for which pow's stated bound (:func:`elementary`) holds: ``bound / (16 eta)``.

    ``pow(x, y) = exp(y log|x|)``: the terms of log x below the underflow threshold are lost, so log x
    carries an absolute error of about eta (the smallest subnormal), which y multiplies into an
    absolute error of about ``|y| eta`` in the exponent, a relative error of the result of about
    ``|y| eta``.  It matters near x = 1 with a large |y| (|y log x| at most about 745 for a result in
    range): float64 R = 16, x = 1 - 2^-540, y = 30 2^540 has a relative error of 2^-536, not 2^-829.
    Measured against mpmath (x = 1 +- 2^-k, y = z / log x, |z| <= 40, R = 2..32, both dtypes), the
    bound is met for |y| up to this limit and missed from about 2^3 |y| above it on; beyond it no bound
    is stated."""
    fmt = _format(fmt)
    return elementary("pow", R, fmt).value / (POW_FLOOR_MARGIN * fmt.eta)


def pow_bound(R: int, fmt, y) -> Bound:
    """pow's stated bound (:func:`elementary`) for an exponent of magnitude |y|: its hypotheses hold
    only for ``|y| <= pow_exponent_limit(R, fmt)`` (see there)."""
    b = elementary("pow", R, fmt)
    limit = pow_exponent_limit(R, fmt)
    holds = abs(Fraction(y)) <= limit
    note = b.note if holds else (f"not stated: |y| above {float(limit):.3g}, where the absolute error of "
                                 "log x at the underflow threshold times |y| dominates")
    return Bound(b.value, b.relative_to, b.source, holds, note)
