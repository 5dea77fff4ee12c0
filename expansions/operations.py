"""The public operations: arithmetic with a choice of algorithm, and the exact unary operations.

Each is a thin entry point over the dispatch of :mod:`expansions.arraytype` (exact promotion of the
operands, broadcasting, the kernel :mod:`expansions.dispatch` chooses on the operands' backend).
``terms=`` and ``dtype=`` set the format the operation runs in (default: the wider of the operands'
formats, see :mod:`expansions.arraytype`); operands of a narrower format are converted exactly,
wider ones are rounded as :func:`expansions.array` rounds them.
"""

from __future__ import annotations

from .arraytype import ExpansionArray, absolute, binary, negative, renormalize, unary

__all__ = ["add", "sub", "mul", "div", "reciprocal", "sqrt", "negative", "absolute", "renormalize"]


def add(x, y, method: str = "auto", renormalize: bool = True, terms=None, dtype=None) -> ExpansionArray:
    """x + y with R terms.

    ``method``: ``'safe'`` is Algorithm 1 (proven bound, :func:`expansions.bounds.add_safe`);
    ``'fast'`` is Fig. 5 (no bound under cancellation); at R = 2 also the double-word algorithms
    ``'dw_add_accurate'`` (JMP 2017 Algorithm 6, bound 3u^2 + 13u^3), ``'dw_add_sloppy'``
    (Algorithm 5, no bound), ``'qd_add_ieee'``, ``'qd_add_sloppy'``, ``'dg_add22'``.  ``'auto'`` (the
    default, and what ``+`` does) is ``'safe'``, and ``'dw_add_accurate'`` at R = 2 (the fastest with a
    proven bound, see ``R2_DEFAULTS``).  With ``renormalize=True`` (the default) the result is
    renormalized, which is error-free and makes it ulp-nonoverlapping; ``False`` returns the
    algorithm's raw output."""
    return binary("add", x, y, method, renormalize, terms, dtype)


def sub(x, y, method: str = "auto", renormalize: bool = True, terms=None, dtype=None) -> ExpansionArray:
    """x - y, as ``add(x, -y)``; same methods and options as :func:`add`."""
    return binary("sub", x, y, method, renormalize, terms, dtype)


def mul(x, y, method: str = "auto", renormalize: bool = True, terms=None, dtype=None) -> ExpansionArray:
    """x * y with R terms.  ``'truncated'``: the truncated parallel multiplication (Algorithm 2;
    proven bound :func:`expansions.bounds.mul_truncated`); at R = 2 also ``'dw_times_dw1'``,
    ``'dw_times_dw2'``, ``'dw_times_dw3'`` (JMP 2017 Algorithms 10-12, bounds 7u^2, 6u^2, 5u^2),
    ``'dg_mul22'``, ``'ww_mul'``.  ``'auto'`` is ``'truncated'``, and ``'dw_times_dw1'`` at R = 2.
    ``renormalize`` as in :func:`add` (the raw output of Algorithm 2 may be unordered under
    cancellation, as the paper notes)."""
    return binary("mul", x, y, method, renormalize, terms, dtype)


def div(x, y, method: str = "auto", renormalize: bool = True, terms=None, dtype=None) -> ExpansionArray:
    """x / y with R terms.

    ``'newton'`` (any R): x times the reciprocal of y, computed by Newton iterations on the truncated
    multiplication and the safe addition with the number of terms growing at each step
    (:mod:`expansions.cpu.newton`, ``expansions/cuda/newton.cuh``); proven bound
    :func:`expansions.bounds.div`, relative to |x/y|, plus :func:`expansions.bounds.newton_underflow_term`
    absolute.  A divisor given as a float or an array of floats (not an ExpansionArray) is divided by
    as one term, which is cheaper (``bounds.div(R, fmt, m=1)``).  At R = 2 also the double-word
    algorithms ``'dw_div_dw1'``, ``'dw_div_dw2'``, ``'dw_div_dw3'`` (JMP 2017 Algorithms 16-18, bounds
    15u^2 + 56u^3, the same, 9.8u^2) and ``'ww_div'``.  ``'auto'``: ``'newton'``, and ``'dw_div_dw2'``
    at R = 2.  Division by zero gives ±inf, 0/0 and inf/inf NaN, 0/y a signed zero."""
    return binary("div", x, y, method, renormalize, terms, dtype)


def reciprocal(x: ExpansionArray, renormalize: bool = True) -> ExpansionArray:
    """1/x with R terms by Newton iterations (any R); proven bound :func:`expansions.bounds.reciprocal`
    relative to |1/x|, plus :func:`expansions.bounds.newton_underflow_term` absolute.  1/±0 is ±inf,
    1/±inf is ±0."""
    return unary("reciprocal", x, renormalize=renormalize)


def sqrt(x: ExpansionArray, method: str = "auto") -> ExpansionArray:
    """The square root with R terms.

    ``'newton'`` (any R): x times 1/sqrt(x), the latter by Newton iterations on the truncated
    multiplication and the safe addition (:mod:`expansions.cpu.newton`); proven bound
    :func:`expansions.bounds.sqrt` relative to sqrt(x), plus ``newton_underflow_term`` absolute.  At
    R = 2 also ``'dw_sqrt'`` (Lefèvre, Louvet, Muller, Picot, Rideau 2023, Algorithm 8, bound
    25/8 u^2), the default there; ``'auto'`` is ``'newton'`` for R != 2.  sqrt(±0) = ±0, sqrt(inf) =
    inf, a negative input gives NaN."""
    return unary("sqrt", x, method)
