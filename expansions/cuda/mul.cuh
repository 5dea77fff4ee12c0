// Data-parallel truncated multiplication of Collange, Joldes, Muller, Popescu (ASAP 2016), Sec. IV:
// Algorithm 2 and its CUDA rendering, Fig. 7 (whose `K-1` is R-1 and whose second declaration of s
// is a typo), generalized to inputs of N and M terms and an output of R terms.
// Twins: _propagate and mul_truncated in expansions/cpu/kernels.py.
#pragma once

#include "expansion.cuh"
#include "renorm.cuh"

namespace expansions {

// The operand as the proofs of the multiplication, the dot product and the Newton operations take it:
// |x_l| <= 2^-(p-1) |x_{l-1}| on every lane l < N, tested as RN(2^(p-1) |x_l|) <= |x_{l-1}| (exact
// but where it overflows, and fails then anyway).  An ulp-nonoverlapping expansion may break it (a
// zero followed by a nonzero term, repeated subnormal terms); a group whose N terms are finite and
// break it is renormalized to N terms (renormalize_group, error-free), the others are kept as they
// are.  The test is a shuffle, a product and two votes; the renormalization runs only when some group
// of the warp needs it.  Twin: positional in expansions/cpu/kernels.py.
template <class T, int N, int W>
__device__ __forceinline__ T positional_group(T x, int lane) {
    if constexpr (N < 2) {
        return x;
    } else {
        const T above = shfl_up<W>(x, 1);  // lane l gets x_{l-1}
        const T top = T(1ull << (FloatBits<T>::P - 1));
        const bool broken = lane >= 1 && !(mul_rn(top, magnitude(x)) <= magnitude(above));
        const bool any_broken = group_any<N, W>(broken);  // both votes on every lane (no && between them)
        const bool any_nonfinite = group_any<N, W>(!is_finite(x));
        const bool fix = any_broken && !any_nonfinite;
        if (!warp_any(fix)) return x;
        const T r = renormalize_group<T, N, N, W>(x, lane);
        return fix && lane < N ? r : x;
    }
}

// Algorithm 2 lines 9-12 (and 13-16): while the errors e of some group are nonzero, 2Sum them into
// s and shift them up one lane with zero in; at most R rounds (decision 5: the paper's loop never
// ends on NaN or inf).  The loop runs while any group of the warp has a nonzero error on lanes
// 0..R-1 (one vote per round); a group whose errors are all zero runs on with the others: its round
// 2Sum(s_l, +-0) = (s_l, +0) changes nothing, since s is never -0 here (it starts +0, takes +0
// shifted in, and RN(a + b) is -0 only for a = b = -0), and its non-finite terms stay non-finite
// (the epilogue replaces them); its padding lanes (R..W-1) never reach lanes 0..R-1.  So the bits
// are those of the twin, whose finished groups stand still.  Unrolled by 2 or 4 (issue 13: the
// register moves and the loop's counter, compare and branch then come once per 2 or 4 rounds).
// Returns the new (s, e) as (hi, lo).  Twin: _propagate.
template <class T, int R, int W>
__device__ __forceinline__ TwoTerms<T> propagate(T s, T e, int lane) {
    const T zero = T(0);
#pragma unroll (R % 4 == 0 && R > 4 ? 4 : (R % 2 == 0 ? 2 : 1))  // a divisor of R: no remainder rounds
    for (int k = 0; k < R; ++k) {
        if (!warp_any((R == W || lane < R) && e != zero)) break;
        const TwoTerms<T> next = two_sum(s, e);
        const T up = shfl_up<W>(next.lo, 1);
        s = next.hi;
        e = lane == 0 ? zero : up;
    }
    return {s, e};
}

// Truncated multiplication, Algorithm 2: returns this lane's term of x * y in R terms.  Step i
// (0 .. R-2, lines 3-17) broadcasts y_i, forms 2ProdFMA(x_l, y_i) on every lane l, 2Sums the product
// into the accumulator s, saves s_0 as pi_i, shifts s down one lane (zero into lane R-1), and
// propagates the product errors, then the sum errors.  The last step (lines 18-20) uses a plain
// product and addition.  x, y: this lane's input terms (+0 on padding lanes), first made positional
// (positional_group).  Twin: mul_truncated.
template <class T, int N, int M, int R, int W>
__device__ __forceinline__ T mul_truncated_group(T x, T y, int lane) {
    x = positional_group<T, N, W>(x, lane);
    y = positional_group<T, M, W>(y, lane);
    const T zero = T(0);
    T s = zero;
    T pi = zero;
#pragma unroll 1
    for (int i = 0; i < R - 1; ++i) {
        const T yi = (i < M) ? shfl<W>(y, i) : zero;
        const TwoTerms<T> pe = two_prod(x, yi);
        const TwoTerms<T> sp = two_sum(s, pe.hi);
        const T s0 = shfl<W>(sp.hi, 0);
        if (lane == i) pi = s0;
        const T down = shfl_down<W>(sp.hi, 1);
        s = lane >= R - 1 ? zero : down;
        s = propagate<T, R, W>(s, pe.lo, lane).hi;
        s = propagate<T, R, W>(s, sp.lo, lane).hi;
    }
    const T yi = (R - 1 < M) ? shfl<W>(y, R - 1) : zero;
    s = add_rn(s, mul_rn(x, yi));
    const T s0 = shfl<W>(s, 0);
    if (lane == R - 1) pi = s0;
    if (!warp_has_nonfinite<N, M, R, W>(x, y, pi, lane)) return pi;  // finite: the epilogue would return pi
    const T x0 = shfl<W>(x, 0);  // every lane shuffles
    const T y0 = shfl<W>(y, 0);
    const T leading = mul_rn(x0, y0);
    return nonfinite_epilogue<T, R, W>(pi, leading, lane, operand_status<N, W>(x), operand_status<M, W>(y));
}

}  // namespace expansions
