"""The Henon map at about 1000 bits, with a rigorous running error bound.

    x' = 1 - a x^2 + y,    y' = b x,    a = 1.4, b = 0.3

is chaotic: a perturbation grows on average by 2^lambda per step, lambda ~ 0.6 bits (the map's
largest Lyapunov exponent, 0.42 nats).  Float64 keeps no correct bit of an orbit after 80 to 90
steps; an expansion of R = 20 float64 terms (20*52 + 1 = 1041 bits, inside the 1074 bits that a
float64 expansion of a number near 1 can carry at all; README, "Precision and the exponent range")
keeps about 1041 - 0.6 k bits after k steps.  This program iterates many orbits at once (one ExpansionArray of shape
(orbits,), on the CPU or on a GPU), compares every step with mpmath, and checks a bound that is
proven, step by step, from the library's proven operation bounds (``expansions.bounds``).

Which map.  ``a`` and ``b`` are the decimal strings "1.4" and "0.3" correctly rounded to R terms:
â and b̂ are not exactly 1.4 and 0.3 (they differ by about 2^-1040).  The reference iterates with
the same â and b̂ (their exact binary values, converted without error), from the same starting
points (float64 numbers, exact in both), so the comparison measures the arithmetic only.

One step of the expansions computes, with R-term operations (``*`` is the truncated
multiplication, Prop. IV.2; ``+``/``-`` the safe addition, Prop. III.1; both renormalized):

    s = x*x,  t = â*s,  u = 1 - t,  x' = u + y,  y' = b̂*x.

The bound.  Let x_k, y_k be the exact orbit (real arithmetic, same â, b̂, same start) and
d_k = (x̂_k - x_k, ŷ_k - y_k) the error of the computed one.  Then, exactly,

    d_{k+1} = J_k d_k + q_k + r_k,   J_k = [[-2 â x̂_k, 1], [b̂, 0]],   q_k = (â (x̂_k - x_k)^2, 0),

where r_k is the rounding error of the step evaluated at the computed point.  With the bounds of
``expansions.bounds`` (Bm = mul_truncated(R, 53) relative to the product of the leading terms,
Ba = add_safe(R, 53) relative to |sum|, U = mul_underflow_term(R, float64) absolute):

    |r_x| <= |â| (Bm x0^2 + U) + (Bm |â0 s0| + U) + Ba (1 + |t|) + Ba (|u| + |ŷ|),
    |r_y| <= Bm |b̂0 x0| + U,

where x0, s0, ... are the leading terms of the operands and |v| <= sum_i |v_i| is read from the
terms.  Two ways of propagating it are printed:

* "naive": componentwise, |d_x'| <= |â| e_x (2|x̂| + e_x) + e_y + |r_x|, |d_y'| <= |b̂| e_x + |r_y|.
  This is the textbook running bound; it grows by the norm of |J| (about 1-2 bits per step), much
  faster than the true error, and becomes useless after a few hundred steps.
* "linearized" (the one checked): the error is kept as a zonotope, a sum of generator vectors
  G_j e_j with unknown e_j in [-1, 1].  Each step multiplies every generator by a float64 copy J~
  of J_k (so the bound grows like the actual product of Jacobians, i.e. like the Lyapunov
  exponent), and adds two new generators, boxes of radius |r_x| + |q| + |J - J~| e and |r_y| + ...,
  that also contain the rounding error of the float64 update itself (2^-51 (|J~| sum|G|) per
  component) and the float64 underflow of the update (2^-1074 per generator).  The bound at step k
  is sum_j |G_j| per component.  No term is linearized away: q_k, the difference J - J~ and the
  float64 rounding are all bounded, so the bound is rigorous, not an estimate.

All bound arithmetic is float64 in scaled units (errors times 2^1000, so that nothing underflows)
on nonnegative quantities, each result multiplied by 1 + 2^-40 (which covers the rounding of the
few float64 operations that produced it).

The reference.  mpmath at P = 1200 + steps bits (default) iterates the same map.  Its own error is
bounded the same way (linearized zonotope, scaled by 2^P, rounding |r| <= 2^-P (5 (|â| x^2 + 1 +
|y|), 2 |b̂ x|) per step for mpmath's round-to-nearest), so the check

    |x̂_k - x_ref_k| <= bound_k + bound_ref_k      (every orbit, every step, x and y)

is a theorem about the computed numbers, not a comparison with an unverified reference.  The
program exits with status 1 if it fails anywhere.

Columns: "agree" is -log2 of the observed relative error max(|dx|, |dy|) / max(|x|, |y|) (min and
median over the orbits), "guaranteed" the same for the bound (the worst orbit), "float64" the
agreement of a plain float64 iteration (a = fl(1.4), b = fl(0.3)) from the same starting points.

    python examples/henon.py                 # 64 orbits, 1000 steps, on the CPU
    python examples/henon.py --quick         # 16 orbits, 100 steps (a few seconds)
    python examples/henon.py --device cuda   # the same on the GPU (terms in CuPy arrays)
    python examples/henon.py --fused         # each step one program (expansions.fuse; on a GPU one kernel)
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import mpmath
import numpy as np

import expansions as ex
from expansions import bounds

P_FLOAT = 53
SCALE = 1000  # expansion error bounds are kept in units of 2^-SCALE
INFL = 1.0 + 2.0**-40  # covers the rounding of a few float64 operations on nonnegative numbers
TINY = 2.0**-1074


def up(q) -> float:
    """A float64 upper bound of a nonnegative Fraction."""
    f = float(q)
    return math.nextafter(f, math.inf) if f < q else f


def starting_points(n: int) -> tuple[np.ndarray, np.ndarray]:
    """n float64 points near the attractor: one float64 orbit from (0, 0), after 1000 transient
    steps, sampled every 37 steps (exact floats: the expansions and mpmath start from them)."""
    x, y = 0.0, 0.0
    xs, ys = [], []
    for k in range(1000 + 37 * n):
        x, y = 1.0 - 1.4 * x * x + y, 0.3 * x
        if k >= 1000 and (k - 1000) % 37 == 0:
            xs.append(x)
            ys.append(y)
    return np.array(xs[:n]), np.array(ys[:n])


def host(a) -> np.ndarray:
    """A NumPy copy of a NumPy or CuPy array."""
    return a.get() if hasattr(a, "get") else np.asarray(a)


def magnitude(v: ex.ExpansionArray) -> np.ndarray:
    """An upper bound of |v| per element: sum of |terms|, inflated for its float64 rounding."""
    t = host(v.terms)
    return np.abs(t).sum(axis=-1) * (1.0 + 2.0**-45)


def leading(v: ex.ExpansionArray) -> np.ndarray:
    return host(v.terms[..., 0])


def tail(v: ex.ExpansionArray) -> np.ndarray:
    """An upper bound of |v - v0| per element (the terms after the leading one)."""
    t = host(v.terms)
    return np.abs(t[..., 1:]).sum(axis=-1) * (1.0 + 2.0**-45)


class Zonotope:
    """An enclosure of the error vector d = (dx, dy) of each orbit: d is in { sum_j G_j e_j, |e_j| <= 1 }.

    G has shape (orbits, 2, generators); values are in units of 2^-scale."""

    def __init__(self, n: int, steps: int, scale: int):
        self.G = np.zeros((n, 2, 2 * steps + 2))
        self.m = 0
        self.scale = scale

    def bound(self) -> np.ndarray:
        """Upper bounds (orbits, 2) of |dx|, |dy| in units of 2^-scale."""
        if self.m == 0:
            return np.zeros(self.G.shape[:2])
        s = np.abs(self.G[:, :, : self.m]).sum(axis=-1)
        return s * (1.0 + 4.0 * self.m * 2.0**-53) * INFL

    def step(self, j, b, amag, d, db, rx, ry):
        """d' = J d + q + r with J = [[j + dj, 1], [b + db', 0]] (|dj| <= d, |db'| <= db), q = (â dx^2, 0),
        |r| <= (rx, ry): apply J~ = [[j, 1], [b, 0]] to the generators, then add one box generator
        per component holding r, q, (J - J~) d and the float64 rounding of the update."""
        e = self.bound()
        ex_, ey_ = e[:, 0], e[:, 1]
        G = self.G[:, :, : self.m]
        gx = G[:, 0, :].copy()
        G[:, 0, :] = j[:, None] * gx + G[:, 1, :]
        G[:, 1, :] = b[:, None] * gx
        quad = amag * ex_ * (np.ldexp(ex_, -self.scale) + TINY)
        under = (self.m + 1) * TINY  # float64 underflow in the update: <= 2^-1074 per generator
        box_x = rx + quad + d * ex_ + 2.0**-51 * (np.abs(j) * ex_ + ey_) + under
        box_y = ry + db * ex_ + 2.0**-52 * np.abs(b) * ex_ + under
        self.G[:, 0, self.m] = box_x * INFL
        self.G[:, 1, self.m + 1] = box_y * INFL
        self.m += 2


def bits(err, ref):
    """-log2(err / ref), elementwise (inf where err is 0, 0 where err >= ref)."""
    with np.errstate(divide="ignore"):
        b = -np.log2(np.asarray(err, dtype=float) / np.asarray(ref, dtype=float))
    return np.maximum(b, 0.0)


def henon_step(x, y, a, b):
    """One step, and the intermediates the bound needs: s = x*x, t = a*s, u = 1 - t, x' = u + y, y' = b*x."""
    s = x * x
    t = a * s
    u = 1 - t
    return s, t, u, u + y, b * x


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--quick", action="store_true", help="16 orbits, 100 steps")
    ap.add_argument("--fused", action="store_true", help="the step as one program (expansions.fuse): the same bits")
    ap.add_argument("--terms", type=int, default=20, help="R, float64 terms (default 20: 1041 bits)")
    ap.add_argument("--orbits", type=int, default=None, help="default 64 (16 with --quick)")
    ap.add_argument("--steps", type=int, default=None, help="default 1000 (100 with --quick)")
    ap.add_argument("--every", type=int, default=None, help="print every k-th step (default steps/20)")
    ap.add_argument("--ref-bits", type=int, default=None, help="mpmath precision (default 1200 + steps)")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse(argv)
    n = args.orbits or (16 if args.quick else 64)
    steps = args.steps or (100 if args.quick else 1000)
    every = args.every or max(1, steps // 20)
    R = args.terms
    P = args.ref_bits or 1200 + steps
    dev = args.device
    t_start = time.perf_counter()
    step = ex.fuse(henon_step) if args.fused else henon_step

    try:
        a = ex.array("1.4", terms=R, device=dev)
        b = ex.array("0.3", terms=R, device=dev)
    except RuntimeError as exc:  # no GPU
        print(f"cannot run on {dev}: {exc}", file=sys.stderr)
        return 2
    x0, y0 = starting_points(n)
    x = ex.array(x0, terms=R, device=dev)
    y = ex.array(y0, terms=R, device=dev)

    Bm = bounds.mul_truncated(R, P_FLOAT)
    Ba = bounds.add_safe(R, P_FLOAT)
    U = bounds.mul_underflow_term(R, ex.FLOAT64)
    if not Ba.hypotheses_hold:
        print(f"warning: {Ba.note}")
    Bm_s, Ba_s = up(Bm.value * 2**SCALE), up(Ba.value * 2**SCALE)
    U_s = up(U * 2**SCALE)

    a_mp, b_mp = a.to_mpmath(), b.to_mpmath()  # exact binary values of â, b̂
    amag, bmag = float(magnitude(a)), float(magnitude(b))
    a0, b0 = float(leading(a)), float(leading(b))
    tail_a, tail_b = float(tail(a)), float(tail(b))
    one = mpmath.mpf(1)
    with mpmath.workprec(P):
        xr = [mpmath.mpf(v) for v in x0]
        yr = [mpmath.mpf(v) for v in y0]

    zono = Zonotope(n, steps, SCALE)  # error of the expansions, units 2^-SCALE
    zref = Zonotope(n, steps, P)  # error of the mpmath reference, units 2^-P
    naive = np.zeros((n, 2))  # the componentwise running bound, units 2^-SCALE
    xf, yf = x0.copy(), y0.copy()  # plain float64

    with mpmath.workprec(P):
        da, db_ = a_mp - mpmath.mpf(14) / 10, b_mp - mpmath.mpf(3) / 10
    print(f"Henon map x' = 1 - a x^2 + y, y' = b x; a, b = '1.4', '0.3' rounded to {R} float64 terms")
    print(f"  a - 1.4 = {mpmath.nstr(da, 3)}, b - 0.3 = {mpmath.nstr(db_, 3)} "
          f"(the reference iterates with these same a, b)")
    print(f"  {n} orbits on {dev}, {steps} steps; expansions carry {R * (P_FLOAT - 1) + 1} bits "
          f"(effective bits of the start: {int(np.min(x.effective_bits()))}..{int(np.max(x.effective_bits()))}); "
          f"mpmath reference at {P} bits")
    print(f"  per-operation bounds: mul 2^{Bm.log2:.1f} |x0 y0|, add 2^{Ba.log2:.1f} |x+y|, "
          f"underflow {float(U):.3g} absolute")
    print()
    hdr = (f"{'step':>6} | {'agree min':>9} {'agree med':>9} | {'guaranteed':>10} {'naive':>7} | "
           f"{'float64':>7}")
    print(hdr)
    print("-" * len(hdr))

    rows = []
    worst_ratio = 0.0
    violations = 0
    f64_lost = None
    tangent = np.tile(np.array([1.0, 0.0]), (n, 1))
    lyap_sum = 0.0
    for k in range(steps + 1):
        # ---- compare with the reference and check the bound at step k
        xh, yh = x.to_mpmath(), y.to_mpmath()
        obs = np.empty((n, 2))
        ref = np.empty(n)
        dx_up = np.empty(n)
        with mpmath.workprec(P + 64):
            for i in range(n):
                ddx, ddy = abs(xh[i] - xr[i]), abs(yh[i] - yr[i])
                obs[i] = (float(mpmath.ldexp(ddx, SCALE)), float(mpmath.ldexp(ddy, SCALE)))
                ref[i] = max(abs(float(xr[i])), abs(float(yr[i])))
                dx_up[i] = float(ddx) * (1 + 2.0**-50) + TINY
        obs *= 1.0 + 2.0**-40
        e = zono.bound()
        e_ref = np.ldexp(zref.bound(), SCALE - P) + TINY if zref.m else np.zeros((n, 2))
        total = e + e_ref
        bad = (obs > total) | (obs > naive + e_ref)  # both bounds are proven: check both
        violations += int(bad.sum())
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(total > 0, obs / total, np.where(obs > 0, np.inf, 0.0))
        worst_ratio = max(worst_ratio, float(ratio.max()))
        ref_s = np.ldexp(ref, SCALE)
        agree = bits(obs.max(axis=1), ref_s)
        guar = bits(e.max(axis=1), ref_s)
        nv = bits(naive.max(axis=1), ref_s)
        f64 = bits(np.maximum(np.abs(xf - np.array([float(v) for v in xr])),
                              np.abs(yf - np.array([float(v) for v in yr]))), ref)
        if f64_lost is None and np.median(f64) < 1:
            f64_lost = k
        if k % every == 0 or k == steps:
            row = (k, agree.min(), np.median(agree), guar.min(), nv.min(), np.median(f64))
            rows.append(row)
            print(f"{k:>6} | {_b(row[1]):>9} {_b(row[2]):>9} | {_b(row[3]):>10} {_b(row[4]):>7} | {_b(row[5]):>7}"
                  + ("   <-- BOUND VIOLATED" if bad.any() else ""))
        if k == steps:
            break

        # ---- one step of the expansions
        s, t, u, xn, yn = step(x, y, a, b)
        if k == 0 and args.fused:  # the program gives the bits of the operations one by one
            assert all((p.terms == q.terms).all() for p, q in zip((s, t, u, xn, yn), henon_step(x, y, a, b)))
        x_lead, s_lead = leading(x), leading(s)
        r_x = (amag * (Bm_s * x_lead**2 + U_s) + (Bm_s * np.abs(a0 * s_lead) + U_s)
               + Ba_s * (1.0 + magnitude(t)) + Ba_s * (magnitude(u) + magnitude(y))) * INFL
        r_y = (Bm_s * np.abs(b0 * x_lead) + U_s) * INFL
        # J~ = [[j, 1], [b0, 0]] with j = fl(-2 a0 x0); J - J~ <= (d, db) in magnitude, since
        # â x̂ - a0 x0 = â (x̂ - x0) + x0 (â - a0) and fl() errs by at most 2^-53 |j|
        j = -2.0 * a0 * x_lead
        d = (2.0 * (amag * tail(x) + np.abs(x_lead) * tail_a) + 2.0**-52 * np.abs(j)) * INFL
        db = np.full(n, tail_b * INFL)
        bv = np.full(n, b0)
        xmag = magnitude(x)
        # naive componentwise bound
        enx, eny = naive[:, 0], naive[:, 1]
        with np.errstate(over="ignore", invalid="ignore"):
            naive = np.stack([(amag * enx * (2 * xmag + np.ldexp(enx, -SCALE) + TINY) + eny + r_x) * INFL,
                              (bmag * enx + r_y) * INFL], axis=1)
        zono.step(j, bv, amag, d, db, r_x, r_y)

        # ---- the reference, and its own rounding (units 2^-P)
        rr_x, rr_y = np.empty(n), np.empty(n)
        with mpmath.workprec(P):
            for i in range(n):
                xi, yi = xr[i], yr[i]
                fx, fy = abs(float(xi)), abs(float(yi))
                rr_x[i] = 5.0 * (amag * fx * fx + 1.0 + fy) * (1 + 2.0**-48)
                rr_y[i] = 2.0 * bmag * fx * (1 + 2.0**-48)
                xr[i] = one - a_mp * (xi * xi) + yi
                yr[i] = b_mp * xi
        d_ref = d + 2.0 * amag * dx_up * INFL
        zref.step(j, bv, amag, d_ref, db, rr_x * INFL, rr_y * INFL)

        # ---- float64 and the tangent vector (Lyapunov exponent along the computed orbits)
        xf, yf = 1.0 - 1.4 * xf * xf + yf, 0.3 * xf
        tangent = np.stack([j * tangent[:, 0] + tangent[:, 1], b0 * tangent[:, 0]], axis=1)
        norm = np.abs(tangent).max(axis=1)
        lyap_sum += float(np.mean(np.log2(norm)))
        tangent /= norm[:, None]

        x, y = xn, yn

    elapsed = time.perf_counter() - t_start
    steps_arr = np.array([r[0] for r in rows], dtype=float)
    med = np.array([r[2] for r in rows])
    fit = (steps_arr > 0) & (med < R * (P_FLOAT - 1) - 40)
    print()
    lyap = lyap_sum / steps
    print(f"Lyapunov exponent along these orbits (float64 tangent vectors): {lyap:.3f} bits/step")
    if fit.sum() >= 2:
        slope = -np.polyfit(steps_arr[fit], med[fit], 1)[0]
        print(f"observed loss of agreement (median orbit, least-squares over the printed steps): "
              f"{slope:.3f} bits/step")
    last = rows[-1]
    print(f"after {steps} steps: agreement >= {last[1]:.0f} bits on every orbit, "
          f"guaranteed >= {last[3]:.0f} bits by the linearized bound, {last[4]:.0f} by the naive one")
    if f64_lost is not None:
        print(f"plain float64 (a = fl(1.4)): median agreement below 1 bit from step {f64_lost} on")
    else:
        print("plain float64 (a = fl(1.4)): still agrees to >= 1 bit (median) at the last step")
    print(f"reference error bound at the last step: 2^{np.log2(zref.bound().max()) - P:.0f} (absolute)")
    print(f"largest observed error / bound: {worst_ratio:.3g}")
    print(f"time: {elapsed:.1f} s")
    if violations:
        print(f"FAILED: the observed error exceeds the proven bound in {violations} cases")
        return 1
    print(f"OK: observed error <= proven bound for {n} orbits x {steps + 1} steps x (x, y)")
    return 0


def _b(v: float) -> str:
    return "inf" if math.isinf(v) else f"{v:.0f}"


if __name__ == "__main__":
    sys.exit(main())
