"""Exact values in and out: numbers and strings to exact rationals, exact rationals to R terms
correctly rounded, and terms back to exact Fractions, Decimals and floats.

Input: :func:`exact_scalar` gives the exact value of a Python/NumPy/mpmath scalar, a Fraction, a
Decimal or a numeric string (decimal, hexadecimal float, ratio, 'inf', 'nan'): a Fraction, or a
float for the specials and the signed zero -0.0.  :func:`expansion_of_exact` rounds it to R terms
greedily (each term the correctly rounded value of what remains, :func:`round_to_expansion`), and
:func:`terms_from_floats` splits a float array exactly.  Output: :func:`exact_values` maps the rows
of a terms array to their exact values (Fractions; the IEEE value for a non-finite row, design
decision 6), :func:`fraction_to_float` and :func:`fraction_to_decimal` convert them.
"""

from __future__ import annotations

import decimal
import math
import numbers
import re
from fractions import Fraction

import mpmath
import numpy as np

from . import formats as F
from .backends import cpu_backend, to_numpy, xp_of
from .reference import fp as _fp
from .reference.exact import exact_rows, fraction_from_mpf, round_to_expansion


class Unsupported(TypeError):
    """A value of a type the expansions do not know (the operators return NotImplemented)."""


def fraction_to_float(q: Fraction) -> float:
    try:
        return float(q)  # correctly rounded
    except OverflowError:
        return math.inf if q > 0 else -math.inf


def nonfinite_value(row):
    """The IEEE value a row with a non-finite term stands for (decision 6); any NaN is the canonical one."""
    lead = float(row[0])
    if math.isinf(lead):
        return lead
    return math.nan


def fraction_to_decimal(q: Fraction) -> decimal.Decimal:
    """A dyadic rational as an exact Decimal: n / 2**k = n * 5**k / 10**k (string construction is exact
    whatever the context)."""
    n, d = q.numerator, q.denominator
    k = d.bit_length() - 1
    if d != 1 << k:
        raise ValueError("only dyadic rationals have a finite decimal expansion")
    return decimal.Decimal(f"{n * 5 ** k}E-{k}")


# Strings: decimal ("3.14159", "-1.5e-20", "1_000.5"), hexadecimal floats as float.hex writes them
# ("0x1.8p-3", "-0X1P+10", "0x.8", any number of hex digits, taken exactly), ratios ("1/3"), and
# "inf", "-inf", "nan".  Values whose magnitude lies beyond 10**±20000 (2**±20000 for hex) are
# replaced by a value just as far beyond every format's range (so that rounding gives the same result
# and exactness checks the same verdict) instead of building a gigantic integer.
_HEX = re.compile(r"([+-]?)0x([0-9a-f]*)(?:\.([0-9a-f]*))?(?:p([+-]?[0-9]+))?")
_FAR = 20000
_STRING_HELP = ("expected a decimal number such as '3.14159' or '-1.5e-20', a hexadecimal float such as "
                "'0x1.8p-3', a ratio such as '1/3', or 'inf', '-inf', 'nan'")


def parse_hex(s: str, original):
    m = _HEX.fullmatch(s)
    if m is None or not (m.group(2) or m.group(3)):
        raise ValueError(f"cannot parse {original!r} as a hexadecimal float: {_STRING_HELP}")
    sign, ip, fp, ex = m.group(1), m.group(2), m.group(3) or "", m.group(4)
    e = int(ex) if ex is not None else 0
    mant = int(ip + fp or "0", 16)
    e -= 4 * len(fp)
    if mant == 0:
        return -0.0 if sign == "-" else Fraction(0)
    top = mant.bit_length() + e  # the value lies in [2**(top-1), 2**top)
    if top > _FAR:
        mant, e = 1, _FAR + 1
    elif top < -_FAR:
        mant, e = 1, -_FAR - 1
    q = Fraction(mant) * Fraction(2) ** e
    return -q if sign == "-" else q


def parse_string(v: str):
    """The exact value of a numeric string (see the comment above), or a float special."""
    s = v.strip().lower().replace("_", "")
    if s in ("inf", "+inf", "infinity", "+infinity"):
        return math.inf
    if s in ("-inf", "-infinity"):
        return -math.inf
    if s in ("nan", "+nan", "-nan"):
        return math.nan
    if s.lstrip("+-").startswith("0x"):
        return parse_hex(s, v)
    if "/" in s:
        try:
            q = Fraction(s)
        except (ValueError, ZeroDivisionError) as exc:
            raise ValueError(f"cannot parse {v!r} as a number: {_STRING_HELP}") from exc
        return -0.0 if q == 0 and s.startswith("-") else q
    try:
        d = decimal.Decimal(s)
    except decimal.InvalidOperation:
        d = None
    if d is None or not d.is_finite():
        raise ValueError(f"cannot parse {v!r} as a number: {_STRING_HELP}")
    if d.is_zero():
        return -0.0 if d.is_signed() else Fraction(0)
    if d.adjusted() > _FAR:
        d = decimal.Decimal((d.is_signed(), (1,), _FAR + 1))
    elif d.adjusted() < -_FAR:
        d = decimal.Decimal((d.is_signed(), (1,), -_FAR - 1))
    return Fraction(d)


def exact_scalar(v, prec: int = 2200):
    """An exact rational (or a float special) for a Python/NumPy/mpmath scalar or a numeric string.

    mpmath constants (``mpmath.pi``) and other objects with an ``_mpf_`` are evaluated with ``prec``
    bits; mpf values are taken exactly.  Strings: see :func:`parse_string` (decimal strings are
    exact rationals, hexadecimal floats exact dyadic values)."""
    if isinstance(v, Fraction):
        return v
    if isinstance(v, (bool, np.bool_)):
        return Fraction(int(v))
    if isinstance(v, numbers.Integral):
        return Fraction(int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v) if not isinstance(v, np.floating) else v
        if not np.isfinite(f) or f == 0:
            return float(f)
        return Fraction(f) if isinstance(f, float) else Fraction(*f.as_integer_ratio())
    if isinstance(v, decimal.Decimal):
        if v.is_nan():
            return math.nan  # quiet or signaling, any sign: the canonical NaN
        if not v.is_finite():
            return float(v)
        if v.is_zero() and v.is_signed():
            return -0.0
        if abs(v.adjusted()) > _FAR:  # far beyond every format's range: as for strings (no gigantic integer)
            v = decimal.Decimal((v.is_signed(), (1,), _FAR + 1 if v.adjusted() > 0 else -_FAR - 1))
        return Fraction(v)
    if isinstance(v, mpmath.mpf) or hasattr(v, "_mpf_"):
        if not isinstance(v, mpmath.mpf):
            with mpmath.workprec(prec):
                v = mpmath.mpf(v)
        if not mpmath.isfinite(v):
            return float(v)
        sign, man, exp, bc = v._mpf_
        if man and abs(exp + bc) > _FAR:  # as for hexadecimal strings
            v = mpmath.mpf((-1 if sign else 1, _FAR + 1 if exp + bc > 0 else -_FAR - 1))
        return fraction_from_mpf(v)
    if isinstance(v, str):
        return parse_string(v)
    raise Unsupported(f"cannot convert {type(v).__name__} {v!r} to an expansion")


def exact_scalar_for(v, R: int, fmt: F.Format):
    """:func:`exact_scalar` of v, except for an mpmath constant (``mpmath.pi``; it has an ``_mpf_``
    but is no mpf): a rational whose R-term rounding is the constant's correct R-term rounding.

    Ziv's strategy: evaluate the constant with P = R*p + 64 bits (mpmath rounds it to nearest, an
    error below one unit of its last bit); the greedy R-term rounding is monotone, so when both ends
    of the interval of radius 2 units around the evaluation round to the same terms, every real in
    it does, the constant included; otherwise double P."""
    if not (hasattr(v, "_mpf_") and not isinstance(v, mpmath.mpf)):
        return exact_scalar(v, R * fmt.p + 64)
    prec = R * fmt.p + 64
    for _ in range(8):
        with mpmath.workprec(prec):
            m = mpmath.mpf(v)
        q = fraction_from_mpf(m)
        _, man, exp, bc = m._mpf_
        radius = Fraction(2) ** (exp + bc - prec + 1)
        if round_to_expansion(q - radius, R, fmt) == round_to_expansion(q + radius, R, fmt):
            return q
        prec *= 2
    raise ArithmeticError(f"cannot round {v!r} to {R} terms: no agreement at {prec // 2} bits")  # pragma: no cover


def expansion_of_exact(q, R: int, fmt: F.Format):
    """Terms (floats) of the exact value q correctly rounded to R terms (greedy, then ulp-nonoverlapping)."""
    if type(q) is not Fraction:
        return [math.nan if q != q else q] + [0.0] * (R - 1)  # the canonical NaN, whatever its sign
    if q == 0:
        return [0.0] * R
    return [_fp.to_float(t) for t in round_to_expansion(q, R, fmt)]


def split_to_float32(a, R: int):
    """Float64 values (a NumPy or CuPy array) split greedily into R float32 terms, each the correctly
    rounded value of what remains (the remainder is exact in float64): ``(terms, rest)``, with
    ``rest`` what R terms could not hold (0 where they hold the value exactly).  As
    :func:`expansions.reference.exact.round_to_expansion`: zero terms after the leading one are +0.0,
    a row whose leading term is not finite has zero trailing terms, a NaN is the canonical quiet NaN."""
    xp = xp_of(a)
    out = xp.zeros(a.shape + (R,), dtype=np.float32)
    rest = a.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(R):
            t = rest.astype(np.float32)
            out[..., k] = t if k == 0 else t + np.float32(0)  # x + 0 turns -0.0 into +0.0
            rest = xp.where(xp.isfinite(t), rest - t.astype(np.float64), 0.0)
    out[~xp.isfinite(out[..., 0]), 1:] = 0
    out[..., 0] = xp.where(xp.isnan(out[..., 0]), xp.asarray(np.nan, dtype=np.float32), out[..., 0])
    return out, rest


def terms_from_floats(a: np.ndarray, R: int, dtype: np.dtype) -> np.ndarray:
    """Exact expansions of a float array: each float16/32/64 value split greedily into R terms, as
    :func:`expansions.reference.exact.round_to_expansion` does (zero terms after the leading one are
    +0.0; a NaN becomes the canonical quiet NaN, its sign and payload dropped)."""
    if dtype == np.float32 and a.dtype == np.float64:
        return split_to_float32(a, R)[0]
    out = np.zeros(a.shape + (R,), dtype=dtype)
    out[..., 0] = a.astype(dtype)
    out[np.isnan(out[..., 0]), 0] = np.nan
    return out


def round_terms(terms: np.ndarray, R: int):
    """Expansions of one dtype (NumPy terms, shape (count, n)) correctly rounded to R < n terms, as
    :func:`expansion_of_exact` rounds their exact values, vectorized: ``(out, done)``, with ``done``
    False on the rows this fast path leaves to the exact one.

    The value is renormalized (error-free, ulp-nonoverlapping v_0, v_1, ...), and each term is
    q = RN(v_0 + v_1) with 2Sum's error e, the rest e + v_2 + ... renormalized again for the next
    term.  q is RN(v) when |e + v_2 + ...| stays below half an ulp of q (a quarter where q is a power
    of two and the rest points towards zero): certified by |e| + 2|v_2| + n 2^(emin-p+2) below that
    limit, since |v_2 + v_3 + ...| <= |v_2| (1 + 2^(2-p)) plus subnormal ulps.  Rows with a
    non-finite term, a zero value, a leading term within 2^(p+1) ulps of the underflow threshold or
    within a factor 2 of overflow, or a term that cannot be certified, are left to the caller."""
    fmt = F.format_of(terms.dtype)
    dt = terms.dtype
    count, n = terms.shape
    be = cpu_backend()
    tiny = np.ldexp(dt.type(1), fmt.emin - fmt.p + 2) * n
    with np.errstate(all="ignore"):
        done = np.isfinite(terms).all(axis=1)
        v = be.renormalize(np.where(done[:, None], terms, 0).astype(dt), n)
        lead = np.abs(v[:, 0])
        done &= (lead != 0) & (lead >= np.ldexp(dt.type(1), fmt.emin + fmt.p + 1)) & \
            (lead < np.ldexp(dt.type(1), fmt.emax))
        out = np.zeros((count, R), dtype=dt)
        for k in range(R):
            v0, v1 = v[:, 0], v[:, 1] if v.shape[1] > 1 else np.zeros_like(v[:, 0])
            v2 = v[:, 2] if v.shape[1] > 2 else np.zeros_like(v0)
            q = v0 + v1
            z = q - v0
            e = (v0 - (q - z)) + (v1 - z)  # 2Sum: v0 + v1 = q + e exactly
            rest = e + v2  # the sign of the rest: that of e + v_2 + ... when certified below
            ulp = np.spacing(np.abs(q))
            pow2 = np.frexp(np.abs(q))[0] == 0.5
            limit = np.where(pow2 & (np.sign(rest) * np.sign(q) < 0), ulp / 4, ulp / 2)
            ok = (np.abs(e) + 2 * np.abs(v2) + tiny < limit) | (q == 0)
            done &= ok
            out[:, k] = q
            remaining = np.concatenate([e[:, None], v[:, 2:]], axis=1)
            if remaining.shape[1] == 0 or k == R - 1:
                break
            v = be.renormalize(np.ascontiguousarray(remaining), remaining.shape[1])
        out[:, 1:] = out[:, 1:] + dt.type(0)  # zero terms after the leading one are +0.0
    return out, done


def exact_values(terms, f):
    """``f`` of the exact value of each row of ``terms`` (shape S + (R,), NumPy or CuPy): a NumPy
    object array of shape S (the value itself when S is ()).  Non-finite rows give ``f`` of their IEEE
    value (inf, -inf, nan)."""
    t = to_numpy(terms)
    R = t.shape[-1]
    flat = t.reshape(-1, R)
    finite = np.isfinite(flat).all(axis=1)
    vals = np.empty(flat.shape[0], dtype=object)
    if finite.any():
        for k, q in zip(np.flatnonzero(finite), exact_rows(flat[finite])):
            vals[k] = f(q)
    for k in np.flatnonzero(~finite):
        vals[k] = f(nonfinite_value(flat[k]))
    if t.ndim == 1:
        return vals[0]
    return vals.reshape(t.shape[:-1])
