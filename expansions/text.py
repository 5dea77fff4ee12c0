"""Text: the decimal digits of an exact value, ``str`` and ``format``.

Every string is the exact value (an exact :class:`decimal.Decimal`, see
:func:`expansions.convert.fraction_to_decimal`) correctly rounded, half to even, to the digits asked
for; ``n`` is the number of significant digits the expansion carries
(:meth:`expansions.ExpansionArray.digits`).  ``str`` prints max(n, the fewest digits that read back)
(:func:`round_trip_digits`), so that ``expansions.array(str(x), terms=R, dtype=...)`` has x's value.
"""

from __future__ import annotations

import decimal
import re
from fractions import Fraction

from .formats import Format
from .reference import fp as _fp
from .reference.exact import exact_value, round_to_expansion


def _context(prec: int) -> decimal.Context:
    return decimal.Context(prec=max(1, prec), rounding=decimal.ROUND_HALF_EVEN, Emax=decimal.MAX_EMAX,
                           Emin=decimal.MIN_EMIN, traps=[decimal.InvalidOperation])


def _round_sig(a: decimal.Decimal, n: int):
    """|a| (finite) correctly rounded (half to even) to n significant digits: (digit string of length
    n, decimal exponent E of the first digit); zero gives ('00..0', 0)."""
    if a.is_zero():
        return "0" * n, 0
    r = _context(n).plus(a.copy_abs())
    return "".join(map(str, r.as_tuple().digits)).ljust(n, "0"), r.adjusted()


def round_trip_digits(a: decimal.Decimal, n0: int, R: int, fmt: Format) -> int:
    """The fewest significant digits n >= n0 such that |a| (finite, nonzero, the exact value of an
    R-term expansion of format fmt) correctly rounded to n digits reads back, correctly rounded to R
    terms as ``expansions.array`` reads a string, to the terms of |a| correctly rounded to R terms:
    exactly the value |a|, and x's very terms when x is in that (greedy) form, as Python's float repr
    is the shortest string that reads back.  (Asking for the value alone is not enough for the terms:
    where a remainder is a tie, a nearby string reaches the same value through other terms.)
    Candidates are tried in increasing n: the property need not be monotone in n (the set of reals
    that read back is an interval around |a| that can be lopsided), so the first that works is the
    fewest.  The exact decimal value (all its digits) ends the search; if x's value is not the value
    of its correctly rounded R terms (terms built otherwise), all its digits are printed."""
    q = Fraction(a)
    target = round_to_expansion(q, R, fmt)
    sig = "".join(map(str, a.as_tuple().digits)).rstrip("0")
    exact_digits = len(sig)
    if n0 >= exact_digits or not all(_fp.is_finite(u) for u in target) or exact_value(target) != q:
        return max(n0, exact_digits)
    # Rounding |a| to n digits gives the same number for every n in a run of zeros (rounded down) or
    # nines (rounded up) that starts at digit n: one check covers the run.  A cheap necessary condition
    # first: a real that rounds to the target lies within h = half an ulp of its last term (half the
    # smallest subnormal when that term is zero) of |a|.
    run, zeros, nines = [0] * exact_digits, 0, 0
    for i in range(exact_digits - 1, -1, -1):
        zeros = zeros + 1 if sig[i] == "0" else 0
        nines = nines + 1 if sig[i] == "9" else 0
        run[i] = max(zeros, nines)
    k = _fp.exponent(_fp.ulp(target[-1], fmt) / 2)  # h = 2**k
    half_ulp = decimal.Decimal(2 ** k) if k >= 0 else decimal.Decimal(5 ** -k).scaleb(k)
    exact = _context(decimal.MAX_PREC)
    n = n0
    while n < exact_digits:
        digits, E = _round_sig(a, n)
        d = decimal.Decimal(f"{digits}E{E - n + 1}")
        if exact.subtract(d, a).copy_abs() <= half_ulp and round_to_expansion(Fraction(d), R, fmt) == target:
            return n
        n += max(1, run[n])
    return exact_digits


def format_scalar(d: decimal.Decimal, n: int, R: int, fmt: Format) -> str:
    """str() of a scalar of exact value ``d``, an R-term expansion of format fmt that carries ``n``
    significant digits: max(n, the fewest digits that read back) significant digits, correctly
    rounded (half to even), so that ``expansions.array(str(x), terms=R, dtype=...)`` has exactly x's
    value (:func:`round_trip_digits`); fixed-point when the leading digit's exponent E satisfies
    min(-(n//3), -5) < E < n (the layout of mpmath.nstr), else d.ddd...e+E; a point is followed by at
    least one digit ("1.0", "5.0e-324")."""
    if not d.is_finite():
        return str(float(d))
    if d.is_zero():
        return "-0.0" if d.is_signed() else "0.0"
    n = round_trip_digits(d.copy_abs(), n, R, fmt)
    digits, E = _round_sig(d, n)
    sign = "-" if d.is_signed() else ""
    if min(-(n // 3), -5) < E < n:
        if E < 0:
            return sign + "0." + "0" * (-E - 1) + digits
        return sign + digits[:E + 1] + "." + (digits[E + 1:] or "0")
    return sign + digits[0] + "." + (digits[1:] or "0") + f"e{E:+}"


_SPEC = re.compile(r"(?:(?P<fill>.)?(?P<align>[<>=^]))?(?P<sign>[-+ ])?(?P<z>z)?(?P<alt>\#)?(?P<zero>0)?"
                   r"(?P<width>[0-9]+)?(?P<grouping>[,_])?(?:\.(?P<prec>[0-9]+))?(?P<type>.)?", re.DOTALL)


def _emit(mant: decimal.Decimal, k: int, suffix: str, f: dict) -> str:
    """Lay out a signed mantissa exactly representable with k fraction digits, followed by suffix
    (an exponent or '%'), with the spec's fill, align, sign, z, #, 0, width and grouping (Decimal's
    own layout of the mantissa, which follows the float rules; the suffix is kept out of padding)."""
    if f["alt"] and k == 0:
        suffix = "." + suffix  # '#': the point even without fraction digits (Decimal lacks '#')
    flags = (f["sign"] or "") + (f["z"] or "")
    tail = ("," if f["grouping"] else "") + f".{k}f"
    under = f["grouping"] == "_"
    width = int(f["width"]) if f["width"] else None
    fill, align = f["fill"], f["align"]
    if width is None or align in ("<", "^") or (under and fill == ","):
        body = format(mant, flags + tail)
        body = (body.replace(",", "_") if under else body) + suffix
        pad = 0 if width is None else width - len(body)
        if pad <= 0:
            return body
        ch = fill if fill is not None else ("0" if f["zero"] else " ")
        if align == "<":
            return body + ch * pad
        if align == "^":
            return ch * (pad // 2) + body + ch * (pad - pad // 2)
        if align == "=" or (align is None and f["zero"]):
            lead = body[0] if body[0] in "+- " else ""
            return lead + ch * pad + body[len(lead):]
        return ch * pad + body
    w = width - len(suffix)
    spec = (fill or "") + (align or "") + flags + ((f["zero"] or "") + str(w) if w > 0 else "") + tail
    body = format(mant, spec)
    return (body.replace(",", "_") if under else body) + suffix


def format_spec(d: decimal.Decimal, n: int, spec: str, R: int, fmt: Format) -> str:
    """``format(x, spec)`` of a scalar of exact value ``d``, an R-term expansion of format fmt that
    carries ``n`` significant digits (see :meth:`expansions.ExpansionArray.__format__`)."""
    m = _SPEC.fullmatch(spec)
    if m is None:
        raise ValueError(f"Invalid format specifier '{spec}' for object of type 'ExpansionArray'")
    f = m.groupdict()
    if f["fill"] == "0" and f["align"] == "=":  # the same as the '0' flag (which also groups the padding)
        f.update(fill=None, align=None, zero="0")
    t = f["type"]
    if t is not None and t not in "eEfFgG%":
        raise ValueError(f"Unknown format code '{t}' for object of type 'ExpansionArray'")
    if not d.is_finite():
        return format(float(d), spec)
    neg, a = d.is_signed(), d.copy_abs()
    prec = int(f["prec"]) if f["prec"] is not None else None
    sign = "-" if neg else ""
    if t in ("f", "F", "%"):
        if t == "%":
            sg, dg, ex = a.as_tuple()
            a = decimal.Decimal((sg, dg, ex + 2))  # 100 |x|, exactly
        if prec is None:
            prec = 1 if a.is_zero() else max(0, n - 1 - _round_sig(a, n)[1])
        r = _context(max(a.adjusted(), 0) + prec + 2).quantize(a, decimal.Decimal((0, (1,), -prec)))
        return _emit(r.copy_negate() if neg else r, prec, "%" if t == "%" else "", f)
    if t in ("e", "E"):
        if prec is None:
            prec = 1 if a.is_zero() else n - 1
        digits, E = _round_sig(a, prec + 1)
        mant = decimal.Decimal(sign + digits[0] + "." + digits[1:])
        return _emit(mant, prec, f"{t}{E:+03d}", f)
    if t is None and prec is None:  # the layout of str(), with the spec's padding and sign
        body = format_scalar(d, n, R, fmt).lstrip("-")
        mant, _, ex = body.partition("e")
        frac = mant.partition(".")[2]
        return _emit(decimal.Decimal(sign + mant), len(frac), f"e{ex}" if ex else "", f)
    P = max(1, prec if prec is not None else n)
    digits, E = _round_sig(a, P)
    if -4 <= E < (P if t is not None else P - 1):  # fixed-point (no type: as floats do, one digit less)
        ip, fp = (digits[:E + 1], digits[E + 1:]) if E >= 0 else ("0", "0" * (-E - 1) + digits)
        suffix = ""
    else:
        ip, fp = digits[0], digits[1:]
        suffix = ("E" if t == "G" else "e") + f"{E:+03d}"
    if not f["alt"]:
        fp = fp.rstrip("0")
        if t is None and not suffix and not fp:
            fp = "0"  # no type: a fixed-point number keeps one digit after the point
    return _emit(decimal.Decimal(sign + ip + ("." + fp if fp else "")), len(fp), suffix, f)
