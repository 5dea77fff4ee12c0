// Renormalization of Joldes, Marty, Muller, Popescu (IEEE TC 2016; ref. [11] of Collange et al.,
// ASAP 2016, Sec. IV, last paragraph): stable sort by decreasing magnitude, VecSum from the bottom,
// VecSumErrBranch from the top, repeated until the terms are ulp-nonoverlapping (at most R rounds).
// Every lane gathers the sorted terms and runs the sequential part in registers, keeping its own
// output term.  Twins: renormalize, _vec_sum_err_branch, _adjacent_nonoverlapping in
// expansions/cpu/kernels.py.
#pragma once

#include "expansion.cuh"

namespace expansions {

// |v| by clearing the sign bit (exact).
template <class T>
__device__ __forceinline__ T magnitude(T v) {
    using B = FloatBits<T>;
    return B::from_bits(B::to_bits(v) & ~B::SIGN);
}

// Sort key of the term held by original lane `index`: larger keys first.  Numbers by decreasing
// magnitude, then NaNs, then the padding lanes (index >= K), which take no part in the sum.
template <class T, int K>
__device__ __forceinline__ typename FloatBits<T>::U sort_key(T v, int index) {
    using B = FloatBits<T>;
    using U = typename B::U;
    if (index >= K) return U(0);
    const U mag = B::to_bits(v) & ~B::SIGN;
    return mag > B::EXP ? U(1) : mag + U(2);
}

// Whether (key a, lane ia) comes before (key b, lane ib): larger key first, ties by lane index.
template <class U>
__device__ __forceinline__ bool sorts_before(U a, int ia, U b, int ib) {
    return a > b || (a == b && ia < ib);
}

// Bitonic sorting network over the W lanes of the group (shfl_xor butterflies): returns the term
// that lands on this lane.  The order is the stable sort of the K terms by decreasing magnitude
// (NumPy's argsort(-|x|, kind="stable"), which puts NaNs last); padding lanes come after them.
// Twin: the argsort / take_along_axis of renormalize.
template <class T, int K, int W>
__device__ __forceinline__ T sort_by_magnitude(T v, int lane) {
    using U = typename FloatBits<T>::U;
    int index = lane;
    U key = sort_key<T, K>(v, index);
#pragma unroll
    for (int size = 2; size <= W; size <<= 1) {
#pragma unroll
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            const T other = shfl_xor<W>(v, stride);
            const int other_index = shfl_xor<W>(index, stride);
            const U other_key = sort_key<T, K>(other, other_index);
            const bool ascending = (lane & size) == 0;
            const bool lower = (lane & stride) == 0;
            if (sorts_before(other_key, other_index, key, index) == (lower == ascending)) {
                v = other;
                index = other_index;
                key = other_key;
            }
        }
    }
    return v;
}

// Whether some group of the warp holds terms that the sorting network would move: a lane whose key
// is below the next lane's (the network's order is decreasing key, ties by lane index, so a group
// whose keys never increase from lane to lane is in that order already).  Every lane votes.
template <class T, int K, int W>
__device__ __forceinline__ bool warp_needs_sort(T v, int lane) {
    const T next = shfl_down<W>(v, 1);  // the last lane gets its own term, against the padding key 0
    return warp_any(sort_key<T, K>(v, lane) < sort_key<T, K>(next, lane + 1));
}

// One renormalization round on the K terms held by lanes 0..K-1: sort, VecSum from the bottom
// (Ogita, Rump, Oishi; JMMP 2016 Alg. 3), VecSumErrBranch from the top (JMMP 2016 Alg. 6, with
// 2Sum) into at most R terms.  Returns (this lane's output term, +0 beyond R; the VecSum top e_0).
// The sequential part is unrolled over compile-time indices; the branchy output index j selects
// the term this lane keeps.  The sorting network runs only when some group of the warp needs it
// (warp_needs_sort; the outputs of the additions and of earlier rounds are usually in order).
// Twin: _renormalize_round (with _vec_sum_err_branch).
template <class T, int K, int R, int W>
__device__ __forceinline__ TwoTerms<T> renormalize_round(T v, int lane) {
    const T sorted = warp_needs_sort<T, K, W>(v, lane) ? sort_by_magnitude<T, K, W>(v, lane) : v;
    T e[K];
#pragma unroll
    for (int i = 0; i < K; ++i) e[i] = shfl<W>(sorted, i);
    vec_sum(e);
    T mine = T(0);
    int j = 0;
    bool done = false;
    T eps = e[0];
#pragma unroll
    for (int i = 1; i < K; ++i) {
        const TwoTerms<T> t = two_sum(eps, e[i]);
        const bool live = !done;
        if (live && j == lane) mine = t.hi;
        const bool nz = t.lo != T(0);
        done = done || (live && nz && j >= R - 1);
        const bool step = live && !done && nz;
        eps = step ? t.lo : ((live && !nz) ? t.hi : eps);
        j += step ? 1 : 0;
    }
    if (!done && j == lane) mine = eps;
    return {mine, e[0]};
}

// Whether the group's R terms are finite and each is zero or at most ulp of the one before it.
// Twin: _adjacent_nonoverlapping.
template <class T, int R, int W>
__device__ __forceinline__ bool nonoverlapping(T r, int lane) {
    const T prev = shfl_up<W>(r, 1);
    bool ok = is_finite(r);
    if (lane >= 1) ok = ok && (r == T(0) || magnitude(r) <= ulp(prev));
    return !group_any<R, W>(!ok);
}

// Renormalization of N input terms to R terms: returns this lane's output term.  The first round
// works on the N input terms, later rounds on the R output terms (padding lanes reset to +0); a
// group stops once its terms are ulp-nonoverlapping, the loop runs while any group of the warp is
// still active (at most R rounds).  x: this lane's input term (+0 on padding lanes).
// Twin: renormalize.
template <class T, int N, int R, int W>
__device__ __forceinline__ T renormalize_group(T x, int lane) {
    const TwoTerms<T> first = renormalize_round<T, N, R, W>(x, lane);
    const T leading = first.lo;
    T out = first.hi;
    bool active = !nonoverlapping<T, R, W>(out, lane);
#pragma unroll 1
    for (int k = 1; k < R; ++k) {
        if (!warp_any(active)) break;
        const T cur = lane < R ? out : T(0);
        const T r = renormalize_round<T, R, R, W>(cur, lane).hi;
        if (active) out = r;
        const bool ok = nonoverlapping<T, R, W>(out, lane);  // every lane votes, active or not
        active = active && !ok;
    }
    if (!warp_has_nonfinite<N, 0, R, W>(x, x, out, lane)) return out;  // finite: the epilogue would return out
    return nonfinite_epilogue<T, R, W>(out, leading, lane, operand_status<N, W>(x));
}

}  // namespace expansions
