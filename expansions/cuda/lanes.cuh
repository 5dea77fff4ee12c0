// Lane-group primitives (paper Sec. V; design decision 2); twin: expansions/cpu/lanes.py.
//
// An expansion occupies a group of W lanes (W a power of two, 2..32) of one warp; lane l of the
// group holds term l.  Every primitive is executed by all 32 lanes of the warp (full mask): the
// callers keep control flow warp-uniform around them.  Blocks are a multiple of 32 threads, so the
// lane in the warp is threadIdx.x % 32.
#pragma once

namespace expansions {

constexpr unsigned FULL_MASK = 0xffffffffu;

// Lane of the calling thread in its warp.
__device__ __forceinline__ int lane_in_warp() { return static_cast<int>(threadIdx.x & 31u); }

// Lane of the calling thread in its group of W lanes (the index of the term it holds).
// Twin: lane_ids.
template <int W>
__device__ __forceinline__ int lane_in_group() { return lane_in_warp() & (W - 1); }

// Bits of the calling thread's group in a warp-wide ballot.
template <int W>
__device__ __forceinline__ unsigned group_mask() {
    const unsigned ones = (W == 32) ? FULL_MASK : ((1u << W) - 1u);
    return ones << (lane_in_warp() & ~(W - 1));
}

// Lane l gets lane l-d of its group; lanes l < d keep their value.  Twin: shfl_up.
template <int W, class T>
__device__ __forceinline__ T shfl_up(T v, int d) { return __shfl_up_sync(FULL_MASK, v, d, W); }

// Lane l gets lane l+d of its group; lanes l >= W-d keep their value.  Twin: shfl_down.
template <int W, class T>
__device__ __forceinline__ T shfl_down(T v, int d) { return __shfl_down_sync(FULL_MASK, v, d, W); }

// Every lane gets lane src of its group (paper Sec. V's shfl, a broadcast).  Twin: shfl.
template <int W, class T>
__device__ __forceinline__ T shfl(T v, int src) { return __shfl_sync(FULL_MASK, v, src, W); }

// Lane l gets lane l^m of its group (a butterfly exchange, used by the sorting network).
template <int W, class T>
__device__ __forceinline__ T shfl_xor(T v, int m) { return __shfl_xor_sync(FULL_MASK, v, m, W); }

// OR of pred over lanes 0..K-1 of the calling thread's group; padding lanes never vote.
// Twin: group_any (with K = R; the non-finite checks use K = the operand's number of terms).
template <int K, int W>
__device__ __forceinline__ bool group_any(bool pred) {
    const unsigned votes = __ballot_sync(FULL_MASK, pred && lane_in_group<W>() < K);
    return (votes & group_mask<W>()) != 0u;
}

// OR of pred over the whole warp: the exit test of the warp-uniform data-dependent loops, which
// run while any group of the warp is still active (the twin's `if not act.any(): break`).
__device__ __forceinline__ bool warp_any(bool pred) { return __any_sync(FULL_MASK, pred) != 0; }

}  // namespace expansions
