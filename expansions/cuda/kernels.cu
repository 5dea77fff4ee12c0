// Entry points: one __global__ template per operation, instantiated on demand from the table in
// expansions/cuda/build.py (name expressions such as "expansions::add_safe<double, 4, 4, 4>").
//
// Arrays are C-contiguous (count, terms): expansion i's terms are terms[i*K .. i*K+K-1].  Each
// expansion occupies a group of W = next power of two >= max(inputs, R) lanes; the grid-stride loop
// is warp-uniform, so any grid works as long as blockDim.x is a multiple of 32.
// Compile with --fmad=false --ftz=false --prec-div=true --prec-sqrt=true -std=c++17 (no fast math).
#pragma once

#include "add.cuh"
#include "mul.cuh"
#include "renorm.cuh"

namespace expansions {

// Loads this lane's terms of x (N terms) and y (M terms, sign-flipped when NEGATE_Y: the
// subtractions x - y = x + (-y); padding lanes stay +0) and stores op's R-term result.
template <class T, int N, int M, int R, bool NEGATE_Y, class Op>
__device__ __forceinline__ void binary_kernel_body(const T* __restrict__ x, const T* __restrict__ y,
                                                   T* __restrict__ out, long long count, Op op) {
    constexpr int W = group_width(max3(N, M, R));
    for_each_group<W>(count, [&](long long index, bool valid, int lane) {
        const T xl = load_term<N>(x, index, valid, lane);
        const T yl = load_term<M>(y, index, valid, lane);
        const T yv = (NEGATE_Y && valid && lane < M) ? negated(yl) : yl;
        store_term<R>(out, index, valid, lane, op(xl, yv, lane));
    });
}

// x + y, Algorithm 1 (safe).  Twin: expansions.cpu.kernels.add_safe.
template <class T, int N, int M, int R>
__global__ void add_safe(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out, long long count) {
    constexpr int W = group_width(max3(N, M, R));
    binary_kernel_body<T, N, M, R, false>(x, y, out, count, [](T a, T b, int lane) {
        return add_safe_group<T, N, M, R, W>(a, b, lane);
    });
}

// x - y as add_safe(x, -y).  Twin: expansions.cpu.kernels.sub_safe.
template <class T, int N, int M, int R>
__global__ void sub_safe(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out, long long count) {
    constexpr int W = group_width(max3(N, M, R));
    binary_kernel_body<T, N, M, R, true>(x, y, out, count, [](T a, T b, int lane) {
        return add_safe_group<T, N, M, R, W>(a, b, lane);
    });
}

// x + y, Fig. 5 (fast).  Twin: expansions.cpu.kernels.add_fast.
template <class T, int N, int M, int R>
__global__ void add_fast(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out, long long count) {
    constexpr int W = group_width(max3(N, M, R));
    binary_kernel_body<T, N, M, R, false>(x, y, out, count, [](T a, T b, int lane) {
        return add_fast_group<T, N, M, R, W>(a, b, lane);
    });
}

// x - y as add_fast(x, -y).  Twin: expansions.cpu.kernels.sub_fast.
template <class T, int N, int M, int R>
__global__ void sub_fast(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out, long long count) {
    constexpr int W = group_width(max3(N, M, R));
    binary_kernel_body<T, N, M, R, true>(x, y, out, count, [](T a, T b, int lane) {
        return add_fast_group<T, N, M, R, W>(a, b, lane);
    });
}

// x * y truncated to R terms, Algorithm 2 / Fig. 7.  Twin: expansions.cpu.kernels.mul_truncated.
template <class T, int N, int M, int R>
__global__ void mul_truncated(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out, long long count) {
    constexpr int W = group_width(max3(N, M, R));
    binary_kernel_body<T, N, M, R, false>(x, y, out, count, [](T a, T b, int lane) {
        return mul_truncated_group<T, N, M, R, W>(a, b, lane);
    });
}

// N terms renormalized to R ulp-nonoverlapping terms (JMMP 2016).
// Twin: expansions.cpu.kernels.renormalize.
template <class T, int N, int R>
__global__ void renormalize(const T* __restrict__ x, T* __restrict__ out, long long count) {
    constexpr int W = group_width(N > R ? N : R);
    for_each_group<W>(count, [&](long long index, bool valid, int lane) {
        const T xl = load_term<N>(x, index, valid, lane);
        store_term<R>(out, index, valid, lane, renormalize_group<T, N, R, W>(xl, lane));
    });
}

// -x term by term (sign flip, exact), one thread per term.  Twin: expansions.cpu.kernels.negate.
template <class T, int R>
__global__ void negate(const T* __restrict__ x, T* __restrict__ out, long long count) {
    const long long total = count * R;
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
        out[i] = negated(x[i]);
    }
}

}  // namespace expansions
