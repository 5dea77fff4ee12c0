// Reductions of expansions (sum, dot, matmul): the canonical pairwise tree "adjacent pairs, odd last
// carried", node(a, b) = renormalize(add_safe(a, b)), computed by lane groups that each reduce an
// aligned chunk of C = 2^k consecutive elements of one row with a binary-counter stack in registers.
// Twins: expansions/cpu/reduce.py (reduce_pass mirrors reduce_body, node mirrors reduce_node).
//
// Why chunks give the canonical tree.  In the canonical tree of m elements, the node of level t and
// index i is the tree of the aligned block [i 2^t, (i+1) 2^t) cut to [0, m): pairing blocks 2i and
// 2i+1 gives block i of the next level, and an odd last block is carried (its right half is empty).
// So the canonical tree of an aligned chunk is node(tree of its left half, tree of its right half),
// or the left half's tree when the right half is empty.  The binary counter below builds exactly
// the full aligned blocks: after pushing j+1 elements its slot l holds the tree of a full block of
// 2^l elements for every set bit l of j+1.  At the chunk end (m elements, m = C or a partial last
// chunk), folding the occupied slots from the lowest level up, acc = node(slot[l], acc), gives
// node(full left half, tree of the rest) at every level: the canonical tree of the chunk.  A pass
// therefore returns the canonical level k (block trees of C = 2^k elements) of every row, and the
// next pass on those partials continues the same canonical tree; any sequence of power-of-two
// chunk sizes ends at the canonical root.
#pragma once

#include "add.cuh"
#include "mul.cuh"
#include "renorm.cuh"

namespace expansions {

// One node of the tree: the safe addition (Algorithm 1) of two R-term expansions, then the
// error-free renormalization, so that the next level's inputs are ulp-nonoverlapping (the premise of
// the addition's bound).  a, b: this lane's terms (+0 on padding lanes); returns this lane's term
// of the node, +0 on padding lanes.  Twin: node in expansions/cpu/reduce.py.
template <class T, int R, int W>
__device__ __forceinline__ T reduce_node(T a, T b, int lane) {
    const T s = add_safe_group<T, R, R, R, W>(a, b, lane);
    return renormalize_group<T, R, R, W>(lane < R ? s : T(0), lane);
}

// A product element of the fused dot mode: mul_truncated (Algorithm 2) then renormalization.
// Twin: product in expansions/cpu/reduce.py.
template <class T, int R, int W>
__device__ __forceinline__ T reduce_product(T x, T y, int lane) {
    const T p = mul_truncated_group<T, R, R, R, W>(x, y, lane);
    return renormalize_group<T, R, R, W>(lane < R ? p : T(0), lane);
}

// Number of stack slots of a chunk of C = 2^k elements: levels 0..k.
__host__ __device__ constexpr int chunk_levels(int c) {
    int k = 1;
    while (c > 1) {
        c >>= 1;
        ++k;
    }
    return k;
}

// Slot l of the stack, l a run-time index: compile-time indices only, so the stack stays in
// registers (a run-time subscript would put it in local memory).
template <class T, int L>
__device__ __forceinline__ T slot_get(const T (&slot)[L], int l) {
    T v = slot[0];
#pragma unroll
    for (int i = 1; i < L; ++i) {
        if (i == l) v = slot[i];
    }
    return v;
}

template <class T, int L>
__device__ __forceinline__ void slot_put(T (&slot)[L], int l, T v) {
#pragma unroll
    for (int i = 0; i < L; ++i) {
        if (i == l) slot[i] = v;
    }
}

// One pass: `batch` rows of n elements; group g reduces chunk c = g % chunks of row b = g / chunks
// (chunks = ceil(n / C)) and stores out[g] (out has batch * chunks rows of R terms).  Element j of
// row b, with (b1, b2) = divmod(b, n2), is the expansion of index b1*xs1 + b2*xs2 + j*xsj of x (sum
// mode), or, when PRODUCT, renormalize(mul_truncated(x[b1*xs1 + b2*xs2 + j*xsj],
// y[b1*ys1 + b2*ys2 + j*ysj])) (indices count expansions of R terms).
//
// Binary counter: element j (j = 0 .. m-1, m = the elements of this chunk) is pushed; while the top
// two entries have the same level they are combined, the earlier one as the left operand.  The
// entries present after j elements are the set bits of j (slot l: level l), so the pushed element
// meets slots 0, 1, ... while the bits of j are set and lands in the first clear one.  Every group
// of a warp is at the same j, so the merges are warp-uniform; a group whose chunk has ended (j >= m)
// computes along with the others and keeps nothing.  At the end the slots are folded from the top
// of the stack (the lowest level) down.  All loops are bounded (C, levels).  Twin: reduce_pass.
template <class T, int R, int C, bool PRODUCT>
__device__ __forceinline__ void reduce_body(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out,
                                            long long batch, long long n, long long n2, long long xs1,
                                            long long xs2, long long xsj, long long ys1, long long ys2,
                                            long long ysj) {
    static_assert(C >= 2 && (C & (C - 1)) == 0, "the chunk size C must be a power of two >= 2");
    constexpr int W = group_width(R);
    constexpr int L = chunk_levels(C);
    const long long chunks = (n + C - 1) / C;
    for_each_group<W>(batch * chunks, [&](long long index, bool valid, int lane) {
        const long long b = valid ? index / chunks : 0;
        const long long first = valid ? (index - b * chunks) * C : 0;
        const long long b1 = b / n2;
        const long long b2 = b - b1 * n2;
        const long long xbase = b1 * xs1 + b2 * xs2;
        const long long ybase = b1 * ys1 + b2 * ys2;
        const long long left = n - first;
        const int m = valid ? static_cast<int>(left < C ? left : C) : 0;
        T slot[L];
#pragma unroll
        for (int i = 0; i < L; ++i) slot[i] = T(0);
#pragma unroll 1
        for (int j = 0; j < C; ++j) {
            const bool push = j < m;
            if (!warp_any(push)) break;  // every chunk of the warp has ended
            const long long e = first + j;
            T carry = (push && lane < R) ? x[(xbase + e * xsj) * R + lane] : T(0);
            if constexpr (PRODUCT) {
                const T yl = (push && lane < R) ? y[(ybase + e * ysj) * R + lane] : T(0);
                carry = reduce_product<T, R, W>(carry, yl, lane);
            }
            int l = 0;
#pragma unroll 1
            for (; l < L - 1 && ((j >> l) & 1); ++l) {
                const T s = reduce_node<T, R, W>(slot_get(slot, l), carry, lane);
                if (push) carry = s;
            }
            if (push) slot_put(slot, l, carry);
        }
        T acc = T(0);
        bool have = false;
#pragma unroll 1
        for (int l = 0; l < L; ++l) {
            const bool occupied = ((m >> l) & 1) != 0;
            const bool merge = occupied && have;
            const T a = slot_get(slot, l);
            if (warp_any(merge)) {
                const T s = reduce_node<T, R, W>(a, acc, lane);
                if (merge) acc = s;
            }
            if (occupied && !have) acc = a;
            have = have || occupied;
        }
        store_term<R>(out, index, valid, lane, acc);
    });
}

// Sum mode: out[b * chunks + c] = the canonical tree of chunk c of row b, element j of row b being
// x[b1*s1 + b2*s2 + j*sj], (b1, b2) = divmod(b, n2).  Twin: expansions.cpu.reduce.reduce_pass.
template <class T, int R, int C>
__global__ void reduce_sum(const T* __restrict__ x, T* __restrict__ out, long long batch, long long n,
                           long long n2, long long s1, long long s2, long long sj) {
    reduce_body<T, R, C, false>(x, x, out, batch, n, n2, s1, s2, sj, 0, 0, 0);
}

// Fused product mode (dot, matmul): element j of row b is the renormalized truncated product of
// x[b1*xs1 + b2*xs2 + j*xsj] and y[b1*ys1 + b2*ys2 + j*ysj].  Twin: expansions.cpu.reduce.reduce_pass.
template <class T, int R, int C>
__global__ void reduce_dot(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out, long long batch,
                           long long n, long long n2, long long xs1, long long xs2, long long xsj, long long ys1,
                           long long ys2, long long ysj) {
    reduce_body<T, R, C, true>(x, y, out, batch, n, n2, xs1, xs2, xsj, ys1, ys2, ysj);
}

}  // namespace expansions
