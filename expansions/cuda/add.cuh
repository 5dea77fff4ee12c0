// Data-parallel additions of Collange, Joldes, Muller, Popescu (ASAP 2016), Sec. III:
// the safe addition (Algorithm 1, Fig. 1) and the fast addition (Fig. 5), generalized to inputs of
// N and M terms and an output of R terms.  Twins: add_safe and add_fast in expansions/cpu/kernels.py.
#pragma once

#include "expansion.cuh"

namespace expansions {

// Safe addition, Algorithm 1: returns this lane's term of x + y rounded to R terms.  Lane 0 adds
// x0 + y0 (line 3), then x1, y1, x2, y2, ... are inserted at lane 0 while the errors move up one
// lane per step (lines 4-9; the loop stops at the longer input's last term, see insertion_order in
// expansions/reference/algorithms.py), R-2 steps insert zeros (lines 10-13), and a plain addition
// ends (lines 14-15).  x, y: this lane's input terms (+0 on padding lanes).  Twin: add_safe.
template <class T, int N, int M, int R, int W>
__device__ __forceinline__ T add_safe_group(T x, T y, int lane) {
    const T zero = T(0);
    TwoTerms<T> se = two_sum(lane == 0 ? x : zero, lane == 0 ? y : zero);
    const T first = se.hi;  // lane 0: RN(x0 + y0), the leading result of the non-finite rule
    constexpr int K = N > M ? N : M;
#pragma unroll
    for (int i = 1; i < K; ++i) {
        if (i < N) {
            const T t = shfl<W>(x, i);
            const T up = shfl_up<W>(se.lo, 1);
            se = two_sum(se.hi, lane == 0 ? t : up);
        }
        if (i < M) {
            const T t = shfl<W>(y, i);
            const T up = shfl_up<W>(se.lo, 1);
            se = two_sum(se.hi, lane == 0 ? t : up);
        }
    }
    for (int k = 0; k < R - 2; ++k) {
        const T up = shfl_up<W>(se.lo, 1);
        se = two_sum(se.hi, lane == 0 ? zero : up);
    }
    const T up = shfl_up<W>(se.lo, 1);
    const T s = add_rn(se.hi, lane == 0 ? zero : up);
    if (!warp_has_nonfinite<N, M, R, W>(x, y, s, lane)) return s;  // finite: the epilogue would return s
    const T leading = shfl<W>(first, 0);
    return nonfinite_epilogue<T, R, W>(s, leading, lane, operand_status<N, W>(x), operand_status<M, W>(y));
}

// Fast addition, Fig. 5: returns this lane's term of x + y in R terms (no error bound under
// cancellation).  Lane-wise 2Sum of the terms, then at most R-2 steps that shift the errors up one
// lane and 2Sum them in while any group of the warp has a nonzero shifted error on lanes 0..R-1 (one
// vote per step), then a plain addition of the shifted errors.  Input terms beyond R are dropped.
// A group whose shifted errors are all zero runs on with the others, with the twin's bits (whose
// finished groups stand still): a 2Sum error is never -0 (its last operation adds (a - a') and
// (b - b'), -0 only if both are, which needs a = b = -0 and then a' = -0), so such a group's round
// is 2Sum(s_l, +0) = (s_l, +0), which changes only s_l = -0 into +0, and the final addition turns
// -0 + e into +0 + e anyway; non-finite terms stay non-finite (the epilogue replaces them) and the
// padding lanes (R..W-1) never reach lanes 0..R-1.  x, y: this lane's input terms (+0 on padding
// lanes).  Twin: add_fast.
template <class T, int N, int M, int R, int W>
__device__ __forceinline__ T add_fast_group(T x, T y, int lane) {
    const T zero = T(0);
    const T xr = (N > R && lane >= R) ? zero : x;
    const T yr = (M > R && lane >= R) ? zero : y;
    TwoTerms<T> se = two_sum(xr, yr);
    const T first = se.hi;  // lane 0: RN(x0 + y0), the leading result of the non-finite rule
    for (int k = 0; k < R - 2; ++k) {
        const T up = shfl_up<W>(se.lo, 1);
        const T es = lane == 0 ? zero : up;
        if (!warp_any((R == W || lane < R) && es != zero)) break;
        se = two_sum(se.hi, es);
    }
    const T up = shfl_up<W>(se.lo, 1);
    const T s = add_rn(se.hi, lane == 0 ? zero : up);
    if (!warp_has_nonfinite<N, M, R, W>(x, y, s, lane)) return s;  // finite: the epilogue would return s
    const T leading = shfl<W>(first, 0);
    return nonfinite_epilogue<T, R, W>(s, leading, lane, operand_status<N, W>(x), operand_status<M, W>(y));
}

}  // namespace expansions
