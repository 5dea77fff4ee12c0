"""Pi to 400 decimal digits with float64 expansions, with a proven error bound.

Machin's formula

    pi = 16 atan(1/5) - 4 atan(1/239),   atan(1/k) = sum_n (-1)^n / ((2n+1) k^(2n+1)),

evaluated with R = 32 float64 terms (32*52 + 1 = 1665 bits) through the library's operations only:
divisions of expansions by floats (``expansions.div``), then one ``expansions.sum`` (the pairwise
tree of safe additions) of all the signed series terms.

Why pi * 2^700 and not pi.  A float64 expansion cannot have a term below the smallest subnormal
2^-1074 (README, "Precision and the exponent range"): an expansion of a number near 1 carries at
most about 1074 bits, 323 decimal digits, whatever R.  So we compute pi * 2^700: its 32 terms reach
down to about 2^(701 - 1664) = 2^-963, well above the floor, and the result divided by 2^700 (exact) is pi.  The series
terms are scaled the same way: term_n = 2^s / ((2n+1) k^(2n+1)) with 2^s = 16 * 2^700 for k = 5 and
4 * 2^700 for k = 239.  The smallest terms that matter (~2^(700-1360)) lose their low parts to the
floor, but only below 2^-1074 in absolute value, far below what 400 digits need; the bound below
counts that loss (the division's absolute underflow term).

The powers.  The scaled powers P_e = 2^s / k^e (e odd) are computed by repeated division by exact
floats, vectorized: k^J with the largest even J such that k^J < 2^53 (5^22 and 239^6 are exact
float64 numbers), one chain per odd residue r < J: P_r = 2^s / k^r, then P_{e+J} = P_e / k^J, all the
chains advancing together as one array.  The terms are then P_e / (+-e), the sign of the divisor
giving the series' alternating signs.

Division and its proven bound.  ``expansions.bounds.div(R, 53, m=1)`` bounds a division by a float
relative to the exact quotient of the computed operands, plus ``newton_underflow_term(R)``
absolute.  The library's Newton division works on operands scaled to order 1, so this bound is
about 2^-1061 for R = 32 (the subnormal floor again, inside the division): with plain division
the whole computation proves about 318 decimals (and gets about 322 right).  Each division is
therefore followed by one residual correction (as in long division):

    q = div(x, c);  m = q * c;  r = x - m;  q' = q + div(r, c)

whose error, with exact real numbers and the proven bounds Bd (division), Bm (truncated product,
relative to the leading terms |q0 c|), Ba (safe addition, relative to |sum|), Ud, Um (underflow), is

    |q' - x/c| <= (Ba |x - m| + Bm |q0 c| + Um) / |c| + Bd |r / c| + Ud + Ba |q + div(r, c)|

(write r = x - m + e_r, m = q c + e_m, div(r, c) = r/c + e_d, q' = q + div(r, c) + e_a; then
q' - x/c = (e_r - e_m)/c + e_d + e_a).  Every quantity on the right is an exact value of a computed
expansion, read with ``to_fraction()``.  The residual r is about 2^-1061 |x|, so its own division
error no longer matters: the product bound (about 2^-1418 for R = 32) is what remains.  Errors of
the inputs propagate exactly: |P_{e+J} - ideal| <= err(division) + |P_e - ideal| / k^J.

The sum.  ``expansions.bounds.sum_tree(n, R, 53)`` bounds the tree relative to sum |terms|.
Truncation: each alternating series with decreasing terms errs by at most its first omitted term;
we keep the terms down to 2^700 * 10^-(digits+30), below the arithmetic's error.  The proven bound
on |computed - pi * 2^700| is the sum of the tree's bound, the division errors of all the terms and
the two truncation errors, all computed exactly with Fractions (rounded upward to 64-bit dyadic
numbers as they go, so that they stay small).

The reference is ``mpmath.pi`` at max(1500, 3.33 (digits + 60) + 64) bits (correctly rounded: its
error, below one ulp, is added to the check).  The program
prints the digits, the number of decimals that agree with mpmath, the observed error and the bound,
and exits with status 1 if the observed error exceeds the bound or the bound does not reach the
requested digits.  With ``--plain`` it uses the divisions without the correction, and reports
honestly how many digits that proves.

    python examples/pi.py                  # 400 digits, R = 32, corrected division, then plain
    python examples/pi.py --quick          # 400 digits, corrected division only
    python examples/pi.py --device cuda    # the same on the GPU
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from fractions import Fraction

import mpmath
import numpy as np

import expansions as ex
from expansions import bounds
from expansions.reference.exact import fraction_from_mpf

try:
    exsum = ex.sum
except AttributeError:  # not exported from the package yet: it lives in expansions.reduce
    from expansions.reduce import sum as exsum

SCALE = 700
P = 53


def cat(parts):
    """Concatenate 1-D ExpansionArrays (on their device)."""
    if parts[0].device == "cuda":
        import cupy as xp
    else:
        xp = np
    return ex.from_terms(xp.concatenate([p.terms for p in parts], axis=0))


def host(a) -> np.ndarray:
    return a.get() if hasattr(a, "get") else np.asarray(a)


def up(q: Fraction, bits: int = 64) -> Fraction:
    """An upper bound of q >= 0 with a numerator of about ``bits`` bits and a power-of-two denominator:
    the bound arithmetic stays exact (rounded upward only) without the Fractions growing."""
    if q <= 0:
        return Fraction(0)
    shift = bits - (q.numerator.bit_length() - q.denominator.bit_length())
    if shift >= 0:
        return Fraction(-((-q.numerator << shift) // q.denominator), 1 << shift)
    return Fraction(-((-q.numerator) // (q.denominator << -shift)) << -shift)


def fractions(x) -> list:
    return list(np.atleast_1d(x.to_fraction()))


class Divider:
    """Division of an expansion array by an array of floats, with its proven error per element."""

    def __init__(self, R: int, corrected: bool):
        self.R = R
        self.corrected = corrected
        self.Bd = up(bounds.div(R, P, m=1).value)
        self.Ud = up(bounds.newton_underflow_term(R, ex.FLOAT64))
        self.Bm = up(bounds.mul_truncated(R, P).value)
        self.Um = up(bounds.mul_underflow_term(R, ex.FLOAT64))
        self.Ba = up(bounds.add_safe(R, P).value)
        self.calls = 0

    def __call__(self, x, c: np.ndarray):
        """(x / c computed, list of Fractions bounding |result - x/c| for the exact value of x)."""
        self.calls += 1
        xv = fractions(x)
        cq = [Fraction(float(v)) for v in c]
        q = ex.div(x, c)
        qv = fractions(q)
        if not self.corrected:
            return q, [up(self.Bd * abs(a / b)) + self.Ud for a, b in zip(xv, cq)]
        m = q * c
        r = x - m
        s = ex.div(r, c)
        q2 = q + s
        mv, rv, sv = fractions(m), fractions(r), fractions(s)
        q0 = host(q.terms[..., 0])
        errs = []
        for i in range(len(xv)):
            e_m = self.Bm * abs(Fraction(float(q0[i])) * cq[i]) + self.Um
            e_r = self.Ba * abs(xv[i] - mv[i])
            e_d = up(self.Bd * abs(rv[i] / cq[i])) + self.Ud
            e_a = self.Ba * abs(qv[i] + sv[i])
            errs.append(up(up((e_r + e_m) / abs(cq[i])) + e_d + e_a))
        return q2, errs


def series(k: int, s: int, digits: int):
    """Number of terms N of the scaled atan series 2^s atan(1/k), and its truncation bound (the first
    omitted term), for an absolute error <= 2^SCALE 10^-(digits+30): well below the arithmetic's
    error, so that the bound and the observed error show what the arithmetic does."""
    target = Fraction(2**SCALE, 10 ** (digits + 30))
    N = 0
    while Fraction(2**s, (2 * N + 1) * k ** (2 * N + 1)) > target:
        N += 1
    return N, up(Fraction(2**s, (2 * N + 1) * k ** (2 * N + 1)))


def atan_terms(k: int, s: int, N: int, R: int, dev: str, divide: Divider):
    """The N signed terms 2^s (-1)^n / ((2n+1) k^(2n+1)) of 2^s atan(1/k), and their error bounds."""
    J = 2 * int(math.floor(53 * math.log(2) / math.log(k) / 2))  # largest even J with k^J < 2^53
    while k**J >= 2**53:
        J -= 2
    e_max = 2 * N - 1
    residues = [r for r in range(1, J, 2) if r <= e_max]
    x = ex.array(np.full(len(residues), 2.0**s), terms=R, device=dev)  # exact
    Pw, errs = divide(x, np.array([float(k**r) for r in residues]))
    exps = list(residues)
    levels, level_errs, level_exps = [Pw], [errs], [exps]
    kJ = float(k**J)
    assert kJ == k**J
    while True:
        cnt = sum(1 for e in exps if e + J <= e_max)  # exps ascending: a prefix continues
        if cnt == 0:
            break
        Pw, e_div = divide(Pw[:cnt], np.full(cnt, kJ))
        errs = [up(a + up(b / k**J)) for a, b in zip(e_div, errs[:cnt])]
        exps = [e + J for e in exps[:cnt]]
        levels.append(Pw)
        level_errs.append(errs)
        level_exps.append(exps)
    powers = cat(levels)
    p_errs = [e for lst in level_errs for e in lst]
    e_all = [e for lst in level_exps for e in lst]
    signs = [1 if ((e - 1) // 2) % 2 == 0 else -1 for e in e_all]
    divisors = np.array([float(sg * e) for sg, e in zip(signs, e_all)])
    terms, t_div = divide(powers, divisors)
    t_errs = [up(a + up(b / abs(Fraction(float(d))))) for a, b, d in zip(t_div, p_errs, divisors)]
    assert sorted(e_all) == list(range(1, e_max + 1, 2))
    return terms, t_errs


def compute(digits: int, R: int, dev: str, corrected: bool):
    divide = Divider(R, corrected)
    N5, trunc5 = series(5, SCALE + 4, digits)
    N239, trunc239 = series(239, SCALE + 2, digits)
    t0 = time.perf_counter()
    T5, err5 = atan_terms(5, SCALE + 4, N5, R, dev, divide)
    T239, err239 = atan_terms(239, SCALE + 2, N239, R, dev, divide)
    T239 = -T239  # pi = 16 atan(1/5) - 4 atan(1/239)
    allT = cat([T5, T239])
    S = exsum(allT)
    elapsed = time.perf_counter() - t0
    n = allT.shape[0]
    tv = fractions(allT)
    tree = up(up(bounds.sum_tree(n, R, P).value) * sum((abs(v) for v in tv), Fraction(0)))
    bound = tree + sum(err5, Fraction(0)) + sum(err239, Fraction(0)) + trunc5 + trunc239
    return dict(S=S, bound=bound, n=n, N5=N5, N239=N239, trunc=trunc5 + trunc239, tree=tree,
                div_err=sum(err5, Fraction(0)) + sum(err239, Fraction(0)), calls=divide.calls, time=elapsed)


def log10(q: Fraction) -> float:
    if q == 0:
        return -math.inf
    return (math.log2(q.numerator) - math.log2(q.denominator)) * math.log10(2)


def decimals(q: Fraction, D: int) -> str:
    """q (positive) truncated to D decimals, as '3.1415...'."""
    n = q.numerator * 10**D // q.denominator
    s = str(n)
    return s[: len(s) - D] + "." + s[len(s) - D:]


def report(res, digits: int, pi_ref: Fraction, ref_err: Fraction, label: str):
    """Print the comparison with mpmath and the bound; (bound holds, decimals proven, decimals that agree,
    the computed value as a decimal string)."""
    Sv = res["S"].to_fraction()
    value = Sv / 2**SCALE
    err_scaled = abs(Sv - pi_ref * 2**SCALE)
    bound_pi = res["bound"] / 2**SCALE
    D = digits
    L = D + 60  # compare this many decimals (the reference carries about D + 80)
    mine, ref = decimals(value, L), decimals(pi_ref, L)
    agree = next((i for i, (a, b) in enumerate(zip(mine[2:], ref[2:])) if a != b), L)
    guaranteed = max(0, math.floor(-log10(bound_pi)))
    observed = -log10(err_scaled / 2**SCALE) if err_scaled else math.inf
    ok_bound = err_scaled <= res["bound"] + ref_err * 2**SCALE
    print(f"[{label}] {res['n']} series terms ({res['N5']} for atan(1/5), {res['N239']} for atan(1/239)), "
          f"{res['calls']} division calls, {res['time']:.1f} s")
    print(f"    proven |computed - pi| <= 10^{log10(bound_pi):.1f}  (tree 10^{log10(res['tree'] / 2**SCALE):.1f}, "
          f"divisions 10^{log10(res['div_err'] / 2**SCALE):.1f}, truncation 10^{log10(res['trunc'] / 2**SCALE):.1f})")
    print(f"    observed |computed - pi| = 10^{-observed:.1f}   ->  {agree} decimals agree with mpmath.pi, "
          f"{guaranteed} guaranteed by the bound")
    print(f"    observed error <= proven bound: {'yes' if ok_bound else 'NO'}")
    return ok_bound, guaranteed, agree, mine


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--quick", action="store_true", help="corrected division only")
    ap.add_argument("--digits", type=int, default=400)
    ap.add_argument("--terms", type=int, default=32, help="R (default 32)")
    ap.add_argument("--plain", action="store_true", help="only the plain division (no residual correction)")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse(argv)
    R, D, dev = args.terms, args.digits, args.device
    t0 = time.perf_counter()
    try:
        ex.zeros(1, terms=2, device=dev)
    except RuntimeError as exc:
        print(f"cannot run on {dev}: {exc}", file=sys.stderr)
        return 2
    ref_prec = max(1500, int((D + 60) * 3.33) + 64)
    with mpmath.workprec(ref_prec):
        pi_mp = +mpmath.pi
    pi_ref = fraction_from_mpf(pi_mp)  # exact value of the mpf
    ref_err = Fraction(1, 2 ** (ref_prec - 2))  # mpmath.pi is correctly rounded: error < 2^(2-prec)
    print(f"pi = 16 atan(1/5) - 4 atan(1/239), computed as pi * 2^{SCALE} with R = {R} float64 terms on {dev}")
    print(f"  a float64 expansion near 1 carries at most ~1074 bits (terms stop at 2^-1074); pi * 2^{SCALE} "
          f"carries {int(ex.array(2.0**(SCALE + 1), terms=R).effective_bits())} bits, "
          f"pi itself only {int(ex.array(3.0, terms=R).effective_bits())}")
    print(f"  per-operation bounds: div by a float 2^{bounds.div(R, P, m=1).log2:.1f}, "
          f"mul 2^{bounds.mul_truncated(R, P).log2:.1f}, add 2^{bounds.add_safe(R, P).log2:.1f}")
    for b in (bounds.div(R, P, m=1), bounds.add_safe(R, P)):
        if not b.hypotheses_hold:
            print(f"  warning: the hypotheses of a bound fail: {b.source}: {b.note}")
    print(f"  reference: mpmath.pi at {ref_prec} bits")
    print()
    variants = [False] if args.plain else [True] if args.quick else [True, False]
    failed = False
    shown = None
    for corrected in variants:
        label = "division + residual correction" if corrected else "plain division"
        res = compute(D, R, dev, corrected)
        ok_bound, guaranteed, agree, mine = report(res, D, pi_ref, ref_err, label)
        failed |= not ok_bound
        if corrected or args.plain:
            failed |= guaranteed < D and corrected
            shown = (mine, guaranteed, agree, label)
        print()
    mine, guaranteed, agree, label = shown
    n_print = min(D, max(guaranteed, 0), agree)
    print(f"pi to {n_print} decimals ({label}): they agree with mpmath.pi, and the proven bound "
          f"|computed - pi| <= 10^-{guaranteed} covers them")
    digs = mine[2: 2 + n_print]
    print("3.")
    for i in range(0, len(digs), 50):
        chunk = digs[i: i + 50]
        print("  " + " ".join(chunk[j: j + 10] for j in range(0, len(chunk), 10)) + f"   {i + len(chunk):>4}")
    print(f"time: {time.perf_counter() - t0:.1f} s")
    if failed:
        print(f"FAILED: the observed error exceeds the bound, or the bound proves fewer than {D} decimals")
        return 1
    print(f"OK: observed error <= proven bound, and the bound proves {guaranteed} >= {D} decimals"
          if not args.plain else f"OK: observed error <= proven bound ({guaranteed} decimals proven)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
