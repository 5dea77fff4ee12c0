"""Decimal and hexadecimal input, str() and format() output, to_decimal().

Oracles are independent of the code under test: hexadecimal strings are decoded by hand, Python's
float formatting (correctly rounded from the exact binary value) is the reference for one-term
values, and multi-term output is checked against the exact Fraction value (printed value within half
a unit in the last printed place, ties to an even digit)."""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import expansions as ex


def hex_value(s):
    s = s.lower()
    sign = -1 if s.startswith("-") else 1
    mant, _, e = s.lstrip("+-")[2:].partition("p")
    ip, _, fp = mant.partition(".")
    return sign * Fraction(int(ip + fp or "0", 16), 16 ** len(fp)) * Fraction(2) ** int(e or 0)


# ----------------------------------------------------------------------------------------------
# input


def test_hex_strings_are_exact():
    assert ex.array("0x1.8p-3", terms=2).to_fraction() == Fraction(3, 16)
    assert ex.array("-0X1P+10", terms=2).to_fraction() == -1024
    assert ex.array("0x.8", terms=2).to_fraction() == Fraction(1, 2)
    assert ex.array("0x10", terms=2).to_fraction() == 16
    assert ex.array("+0x1.fffffffffffffp1023", terms=2).terms[0] == np.finfo(np.float64).max
    assert ex.array("0x1p-1074", terms=2).terms[0] == 5e-324
    z = ex.array("-0x0p0", terms=2)
    assert z.to_fraction() == 0 and math.copysign(1, z.terms[0]) == -1
    rng = np.random.default_rng(1)
    for f in rng.standard_normal(200) * 2.0 ** rng.integers(-1000, 1000, 200):
        assert ex.array(float(f).hex(), terms=2).terms[0] == f  # float.hex round trip
        assert ex.array(float(f).hex(), terms=3, dtype="float32").to_fraction() == Fraction(float(f)) or \
            abs(f) < 2.0**-100 or abs(f) > 2.0**100  # beyond float32's range: rounded by array()
    # many hex digits: exact when the terms suffice, correctly rounded by array() otherwise
    s = "0x1." + "".join(rng.choice(list("0123456789abcdef"), 40)) + "p-7"
    q = hex_value(s)
    assert ex.array(s, terms=4).to_fraction() == q  # 161 bits fit 4 float64 terms
    assert ex.array(s, terms=2).to_fraction() == ex.array(q, terms=2).to_fraction()


@pytest.mark.parametrize("bad", ["0x", "0x1.2.3", "0xg", "0x1p", "0x1p+", "1x10", "0x1e5p0.5", "--0x1"])
def test_bad_hex_strings(bad):
    with pytest.raises(ValueError, match="hexadecimal|cannot parse"):
        ex.array(bad, terms=2)


@pytest.mark.parametrize("bad", ["pi", "", "1e", "1.2.3", "1,5", "0b101", "infinit", "1e5e5"])
def test_bad_decimal_strings_explain_what_is_expected(bad):
    with pytest.raises(ValueError, match=r"cannot parse .*decimal number.*hexadecimal float.*'0x1\.8p-3'"):
        ex.array(bad, terms=2)


def test_huge_exponents_are_fast_and_right():
    assert ex.array("1e-400000000", terms=4).to_fraction() == 0
    assert ex.array("-1e400000000", terms=4).terms[0] == -np.inf
    assert ex.array("0x1p-100000000", terms=4).to_fraction() == 0
    assert ex.array("0x1p+100000000", terms=4, dtype="float32").terms[0] == np.inf
    assert ex.array("1e-300", terms=2).to_fraction() == ex.array(Fraction(1, 10**300), terms=2).to_fraction()
    with pytest.raises(ValueError, match="represented exactly"):
        ex.zeros((), terms=4) + "0x1p-100000000"  # a nonzero binary number below every float


def test_decimal_strings_round_correctly_and_specials():
    for s in ("0.1", "-123456789.123456789123456789e-5", "1_000.000_1", "  7.25  ", "1/3"):
        q = Fraction(s.replace("_", "").strip())
        x = ex.array(s, terms=3)
        rest = q
        for t in x.terms:  # greedy: each term is the nearest float to what remains
            assert float(t) == float(rest)
            rest -= Fraction(float(t))
    assert math.isnan(float(ex.array("nan", terms=2))) and float(ex.array("-Infinity", terms=2)) == -math.inf


# ----------------------------------------------------------------------------------------------
# str, digits, to_decimal


def check_rounded(s, q, last_place):
    """s (a printed number) is q correctly rounded at 10**last_place: within half a unit, ties even."""
    v = Fraction(s.replace(",", "").replace("_", "").rstrip("%")) / (100 if s.endswith("%") else 1)
    unit = Fraction(10) ** last_place
    err = abs(v - q)
    assert err <= unit / 2, (s, float(q))
    if err == unit / 2:
        assert int(re.sub(r"\D", "", s.split("e")[0].split("E")[0])[-1]) % 2 == 0, (s, "tie not to even")


def parse_sci(s):
    """(mantissa digits, exponent of the leading digit, number of digits after the point)."""
    m = re.fullmatch(r"[-+ ]?(\d+)(?:\.(\d*))?(?:[eE]([-+]\d+))?%?", s.strip())
    assert m, s
    ip, fp, e = m.group(1), m.group(2) or "", int(m.group(3) or 0)
    return ip, fp, e


def nonoverlapping_with_gaps(n, R, seed):
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        lead = rng.standard_normal() * 2.0 ** int(rng.integers(-40, 40))
        row, e = [lead], math.frexp(lead)[1]
        for _ in range(R - 1):
            e -= 53 + int(rng.integers(0, 200))
            row.append(float(rng.choice([-1, 1])) * math.ldexp(0.5 + rng.random() / 2, e))
        rows.append(row)
    return ex.from_terms(np.array(rows))


def test_str_prints_the_carried_digits_correctly_rounded():
    """At least digits() significant digits (more when needed to read back: tests/test_conversions.py),
    correctly rounded at the last printed place, and read back to the same value."""
    x = ex.random((300,), terms=3, seed=2, exponent_range=(-80, 80))
    y = nonoverlapping_with_gaps(200, 2, 3)
    for arr in (x, y):
        for i in range(arr.size):
            v = arr[i]
            s, q, n = str(v), v.to_fraction(), v.digits()
            ip, fp, e = parse_sci(s)
            sig = (ip + fp).lstrip("0")
            assert len(sig) >= n, s
            lead = len(ip.lstrip("0")) - 1 if ip.lstrip("0") else -(len(fp) - len(fp.lstrip("0")) + 1)
            check_rounded(s, q, e + lead - (len(sig) - 1))
            assert ex.array(s, terms=v.nterms).to_fraction() == q, s
    assert x.digits() == max(1, int(max(x.effective_bits()) * math.log10(2)))


def test_str_rounds_ties_and_near_ties_from_the_exact_value():
    """x0 = m / 2**31 (m odd) has exactly 32 significant digits, the last a 5: at the 31 digits of a
    2-term float64 expansion it is an exact tie (to even), and a tiny second term decides it."""
    m = next(m for m in range(2**31 + 1, 2**32, 2) if int(str(Fraction(m, 2**31).numerator * 5**31)[30]) % 2 == 0)
    x0 = m / 2**31
    digits = str(m * 5**31)  # x0 * 10**31 exactly
    assert len(digits) == 32 and digits[-1] == "5"
    tie = ex.from_terms(np.array([x0, 0.0]))
    up = ex.from_terms(np.array([x0, 2.0**-1000]))
    down = ex.from_terms(np.array([x0, -(2.0**-1000)]))
    assert tie.digits() == up.digits() == 31
    even, odd = digits[:31], str(int(digits[:31]) + 1)
    assert format(tie, ".30e") == even[0] + "." + even[1:] + "e+00"
    assert format(up, ".30e") == odd[0] + "." + odd[1:] + "e+00"
    assert format(down, ".30e") == even[0] + "." + even[1:] + "e+00"
    for v in (tie, up, down):
        check_rounded(format(v, ".30e"), v.to_fraction(), -30)
    # str prints what reads back: with a zero second term only the exact 32 digits do
    assert str(tie) == digits[0] + "." + digits[1:]


def test_str_layout_and_specials():
    assert str(ex.array("1e20", terms=2)) == "100000000000000000000.0000000000"  # fixed while E < digits
    assert str(ex.array("1e40", terms=2)) == "1.000000000000000000000000000000e+40"
    assert str(ex.array("-0.00001234", terms=2)).startswith("-0.00001234000")
    assert str(ex.array("1e-12", terms=2)).endswith("e-12")
    assert str(ex.array(-0.0, terms=2)) == "-0.0" and str(ex.zeros((), terms=2)) == "0.0"
    assert [str(ex.array(v, terms=2)) for v in (math.inf, -math.inf, math.nan)] == ["inf", "-inf", "nan"]
    a = ex.array([1, 2], terms=2)
    assert str(a) == "[1.000000000000000000000000000000, 2.000000000000000000000000000000]"
    assert format(a) == str(a) and f"{a}" == str(a)
    # the mpmath layout agrees with str() wherever mpmath's rounding is not a tie
    x = ex.random((50,), terms=2, seed=4)
    for i in range(50):
        with mpmath.workprec(400):
            n = len(re.sub(r"\D", "", str(x[i]).split("e")[0]).lstrip("0"))  # digits printed (>= digits())
            want = mpmath.nstr(x[i].to_mpmath(), n, strip_zeros=False)
        assert str(x[i]) == want


def test_to_decimal_is_exact():
    x = ex.random((100,), terms=4, seed=5, exponent_range=(-300, 300))
    d = x.to_decimal()
    assert all(Fraction(a) == b for a, b in zip(d, x.to_fraction()))
    s = x[3].to_decimal()
    assert isinstance(s, Decimal) and Fraction(s) == x[3].to_fraction()
    assert str(ex.array(-0.0, terms=2).to_decimal()) == "-0"
    specials = ex.array([math.inf, -math.inf, math.nan, -0.0, 0.0], terms=2).to_decimal()
    assert specials[0] == Decimal("Infinity") and specials[1] == Decimal("-Infinity") and specials[2].is_nan()
    assert specials[3].is_zero() and specials[3].is_signed() and not specials[4].is_signed()
    tiny = ex.array(5e-324, terms=2).to_decimal()
    assert Fraction(tiny) == Fraction(5e-324) and len(tiny.as_tuple().digits) == 751


# ----------------------------------------------------------------------------------------------
# format


FLOAT_SPECS = [".3e", ".0e", "#.0e", "+.10e", ".16e", ".30e", ".3E", ".3f", ".0f", "#.0f", ",.2f", "_.2f",
               "012,.1f", "0=15,.2f", "<15.3e", "^+15.3e", "*>20.4g", ".3g", "#.3g", ".10g", ".1g", ".17g",
               ".3", ".10", "#.3", ".2%", "010.1%", " .5G", "z.2f", "-^30.12e", "010,.2e", "+015.3e", "=+12.2f",
               "x<12.2%", "_>14.1f", ",>14.1f", "0<12.2e", "012_.3f", "08.0f", "+.0%", ".25f", ".40e"]
FLOAT_VALUES = [1.0, -1.0, 0.0, -0.0, 0.1, -0.125, 2.5, 0.5, 1234.5, -9.9999, 99999.5, 1e-5, 1.5e-4, 123456789.0,
                1e16, 1e300, -1.7976931348623157e308, 5e-324, 2.2250738585072014e-308, 1 / 3, math.pi, 0.0625]


@pytest.mark.parametrize("spec", FLOAT_SPECS)
def test_format_of_one_term_values_matches_float_formatting(spec):
    """Python formats floats correctly rounded from their exact binary value: an expansion holding
    the same value must print the same characters, whatever R and the term dtype."""
    rng = np.random.default_rng(6)
    values = FLOAT_VALUES + list(rng.standard_normal(30) * 10.0 ** rng.integers(-12, 12, 30))
    # '%': floats multiply by 100 in floating point (rounding) before formatting; the exact value
    # is Decimal(v) * 100, which Decimal's own '%' formats
    ref = (lambda v: format(Decimal(float(v)), spec)) if "%" in spec else (lambda v: format(v, spec))
    for v in values:
        for R in (2, 3):
            x = ex.array(v, terms=R)
            assert format(x, spec) == ref(v), (v, spec, R)
    for v in (0.1, -2.5, 1234.5, 3.0e-20):
        x = ex.array(v, terms=3, dtype="float32") + 0  # float64 value split in 3 float32 terms
        assert format(x, spec) == ref(v), (v, spec)


@pytest.mark.parametrize("spec", ["", ".3e", "+10.2f", "<8g", "%", "=+12.5", "E"])
def test_format_of_nonfinite_values_is_the_float_one(spec):
    for v in (math.inf, -math.inf, math.nan):
        want = format(v, spec) if spec else str(v)
        assert format(ex.array(v, terms=4), spec) == want


@pytest.mark.parametrize("R", [2, 4, 9])
def test_format_of_multi_term_values_is_correctly_rounded(R):
    x = ex.random((40,), terms=R, seed=7 + R, exponent_range=(-30, 30))
    y = nonoverlapping_with_gaps(30, R, 8)
    for arr in (x, y):
        for i in range(arr.size):
            v = arr[i]
            q = v.to_fraction()
            for P in (5, 20, 31, 60, 120):
                s = format(v, f".{P}e")
                ip, fp, e = parse_sci(s)
                assert len(ip) == 1 and ip != "0" and len(fp) == P and re.search(r"e[-+]\d\d", s)
                check_rounded(s, q, e - P)
                s = format(v, f".{P}f")
                assert len(parse_sci(s)[1]) == P
                check_rounded(s, q, -P)
                s = format(v, f".{P}g")
                ip, fp, e = parse_sci(s)
                lead = e + (len(ip.lstrip("0")) - 1 if ip.lstrip("0") else -(len(fp) - len(fp.lstrip("0")) + 1))
                check_rounded(s, q, lead - (P - 1))
            # without a precision: the digits the expansion carries
            n = v.digits()
            ip, fp, e = parse_sci(format(v, "e"))
            assert len(fp) == n - 1
            check_rounded(format(v, "e"), q, e - (n - 1))
            assert format(v, "") == str(v) and f"{v}" == str(v) and format(v, ">200") == str(v).rjust(200)
            assert format(v, "+") == (str(v) if str(v).startswith("-") else "+" + str(v))
            s = format(v, "f")
            check_rounded(s, q, -len(parse_sci(s)[1]))


def test_format_against_mpmath():
    """An independent decimal conversion: mpmath at a generous precision (no ties in random data)."""
    x = ex.random((30,), terms=5, seed=9, exponent_range=(-200, 200))
    for i in range(30):
        v = x[i]
        with mpmath.workdps(400):
            m = v.to_mpmath()
            for P in (10, 40, 70):
                want = mpmath.nstr(m, P + 1, min_fixed=1, max_fixed=0, strip_zeros=False)  # d.ddd e+E
                mant, e = want.split("e")
                assert format(v, f".{P}e") == f"{mant}e{int(e):+03d}"


def test_bad_format_specs():
    x = ex.array("1.5", terms=3)
    for spec in ("d", ".3x", "n", "s", "b", "c"):
        with pytest.raises(ValueError, match="Unknown format code"):
            format(x, spec)
    assert format(x, "<<60") == str(x).ljust(60, "<")  # fill '<', align '<'
    for spec in ("abc", "10.3.3f", ",,f", "+-f", "=>=", "0x<5"):
        with pytest.raises(ValueError):
            format(1.5, spec)  # invalid for floats too
        with pytest.raises(ValueError, match="Invalid format specifier|Unknown format code"):
            format(x, spec)
    a = ex.array([1.5, 2.5], terms=3)
    for spec in (".3f", "e", ">20"):
        with pytest.raises(TypeError, match="unsupported format string"):
            format(a, spec)
    with pytest.raises(TypeError):
        f"{a:.2f}"
    assert f"{x:.3f}" == "1.500" and f"{x:>8.1e}" == " 1.5e+00"


def test_mpmath_negative_values_keep_their_sign():
    """Issue: negative mpf values and negated constants came back as their absolute values."""
    assert ex.array(mpmath.mpf(-0.5), terms=2).terms.tolist() == [-0.5, 0.0]
    assert ex.array(-mpmath.pi, terms=4).to_mpmath() < 0
    t = ex.array(mpmath.mpf("-1e-400"), terms=3).terms
    assert (t == 0).all() and np.signbit(t[0])
