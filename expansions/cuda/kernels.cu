// Entry points: one __global__ template per operation, instantiated on demand from the table in
// expansions/cuda/build.py (name expressions such as "expansions::add_safe<double, 4, 4, 4>").
//
// Arrays are C-contiguous (count, terms): expansion i's terms are terms[i*K .. i*K+K-1].  Each
// expansion occupies a group of W = next power of two >= max(inputs, R) lanes; the grid-stride loop
// is warp-uniform, so any grid works as long as blockDim.x is a multiple of 32.
// Compile with --fmad=false --ftz=false --prec-div=true --prec-sqrt=true -std=c++17 (no fast math).
//
// The sequential baselines (end of this file) run one thread per expansion, any grid and block; each
// has an AoS entry point on the (count, R) rows above and a `_soa` one on (R, count) arrays, term k of
// all expansions contiguous (coalesced loads for one thread per expansion).
#pragma once

#include "add.cuh"
#include "baselines.cuh"
#include "elementary.cuh"
#include "mul.cuh"
#include "newton.cuh"
#include "reduce.cuh"
#include "renorm.cuh"

namespace expansions {

// This lane's output term of an operation kernel: with RENORMALIZE, the renormalization of the
// group's R raw terms s (renormalize_group, in registers: the operation and `renormalize` in one
// launch, the same bits as the two kernels; lanes R..W-1 take no part, whatever they hold); without,
// the raw term s.  Twin: renormalize(op(...), R) (expansions.dispatch.operation).
template <class T, int R, int W, bool RENORMALIZE>
__device__ __forceinline__ T finish_operation(T s, int lane) {
    if constexpr (RENORMALIZE) {
        return renormalize_group<T, R, R, W>(s, lane);
    } else {
        return s;
    }
}

// The same for the Newton kernels, whose renormalization keeps a zero result as the kernel made it
// (its sign: sqrt(-0) = -0, 0/-y = -0) where the renormalized leading term is zero too.  Twin:
// expansions.dispatch._renormalize_keeping_zeros.
template <class T, int R, int W, bool RENORMALIZE>
__device__ __forceinline__ T finish_newton(T q, int lane) {
    if constexpr (RENORMALIZE) {
        const T r = renormalize_group<T, R, R, W>(q, lane);
        const T q0 = shfl<W>(q, 0);  // every lane shuffles (no short circuit)
        const T r0 = shfl<W>(r, 0);
        return (q0 == T(0) && r0 == T(0)) ? q : r;
    } else {
        return q;
    }
}

// Loads this lane's terms of x (N terms) and y (M terms, sign-flipped when NEGATE_Y: the
// subtractions x - y = x + (-y); padding lanes stay +0) and stores op's R-term result, renormalized
// in registers when RENORMALIZE (finish_operation).
template <class T, int N, int M, int R, bool NEGATE_Y, bool RENORMALIZE, class Op>
__device__ __forceinline__ void binary_kernel_body(const T* __restrict__ x, const T* __restrict__ y,
                                                   T* __restrict__ out, long long count, Op op) {
    constexpr int W = group_width(max3(N, M, R));
    for_each_group<W>(count, [&](long long index, bool valid, int lane) {
        const T xl = load_term<N>(x, index, valid, lane);
        const T yl = load_term<M>(y, index, valid, lane);
        const T yv = (NEGATE_Y && valid && lane < M) ? negated(yl) : yl;
        store_term<R>(out, index, valid, lane, finish_operation<T, R, W, RENORMALIZE>(op(xl, yv, lane), lane));
    });
}

// The operation kernels below take `bool RENORMALIZE` after their sizes: false stores the raw output
// (the twin's), true the renormalized one (the library's default, one launch per operation).

// x + y, Algorithm 1 (safe).  Twin: expansions.cpu.kernels.add_safe.
template <class T, int N, int M, int R, bool RENORMALIZE>
__global__ void add_safe(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out, long long count) {
    constexpr int W = group_width(max3(N, M, R));
    binary_kernel_body<T, N, M, R, false, RENORMALIZE>(x, y, out, count, [](T a, T b, int lane) {
        return add_safe_group<T, N, M, R, W>(a, b, lane);
    });
}

// x - y as add_safe(x, -y).  Twin: expansions.cpu.kernels.sub_safe.
template <class T, int N, int M, int R, bool RENORMALIZE>
__global__ void sub_safe(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out, long long count) {
    constexpr int W = group_width(max3(N, M, R));
    binary_kernel_body<T, N, M, R, true, RENORMALIZE>(x, y, out, count, [](T a, T b, int lane) {
        return add_safe_group<T, N, M, R, W>(a, b, lane);
    });
}

// x + y, Fig. 5 (fast).  Twin: expansions.cpu.kernels.add_fast.
template <class T, int N, int M, int R, bool RENORMALIZE>
__global__ void add_fast(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out, long long count) {
    constexpr int W = group_width(max3(N, M, R));
    binary_kernel_body<T, N, M, R, false, RENORMALIZE>(x, y, out, count, [](T a, T b, int lane) {
        return add_fast_group<T, N, M, R, W>(a, b, lane);
    });
}

// x - y as add_fast(x, -y).  Twin: expansions.cpu.kernels.sub_fast.
template <class T, int N, int M, int R, bool RENORMALIZE>
__global__ void sub_fast(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out, long long count) {
    constexpr int W = group_width(max3(N, M, R));
    binary_kernel_body<T, N, M, R, true, RENORMALIZE>(x, y, out, count, [](T a, T b, int lane) {
        return add_fast_group<T, N, M, R, W>(a, b, lane);
    });
}

// x * y truncated to R terms, Algorithm 2 / Fig. 7.  Twin: expansions.cpu.kernels.mul_truncated.
template <class T, int N, int M, int R, bool RENORMALIZE>
__global__ void mul_truncated(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out, long long count) {
    constexpr int W = group_width(max3(N, M, R));
    binary_kernel_body<T, N, M, R, false, RENORMALIZE>(x, y, out, count, [](T a, T b, int lane) {
        return mul_truncated_group<T, N, M, R, W>(a, b, lane);
    });
}

// 1/a in R terms by Newton iterations (newton_reciprocal_group, newton.cuh); STEPS: expansions.bounds.newton_steps(R).
// Twin: expansions.cpu.newton.reciprocal.
template <class T, int N, int R, bool RENORMALIZE, int... STEPS>
__global__ void newton_reciprocal(const T* __restrict__ a, T* __restrict__ out, long long count) {
    constexpr int W = group_width(N > R ? N : R);
    for_each_group<W>(count, [&](long long index, bool valid, int lane) {
        const T r = newton_reciprocal_group<T, N, R, W, STEPS...>(load_term<N>(a, index, valid, lane), lane);
        store_term<R>(out, index, valid, lane, finish_newton<T, R, W, RENORMALIZE>(r, lane));
    });
}

// x / y in R terms, as x * (1/y) (newton_div_group, newton.cuh).  Twin: expansions.cpu.newton.div.
template <class T, int N, int M, int R, bool RENORMALIZE, int... STEPS>
__global__ void newton_div(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out, long long count) {
    constexpr int W = group_width(max3(N, M, R));
    for_each_group<W>(count, [&](long long index, bool valid, int lane) {
        const T xl = load_term<N>(x, index, valid, lane);
        const T yl = load_term<M>(y, index, valid, lane);
        const T r = newton_div_group<T, N, M, R, W, STEPS...>(xl, yl, lane);
        store_term<R>(out, index, valid, lane, finish_newton<T, R, W, RENORMALIZE>(r, lane));
    });
}

// sqrt(a) in R terms, as a * (1/sqrt(a)) (newton_sqrt_group, newton.cuh).  Twin: expansions.cpu.newton.sqrt.
template <class T, int N, int R, bool RENORMALIZE, int... STEPS>
__global__ void newton_sqrt(const T* __restrict__ a, T* __restrict__ out, long long count) {
    constexpr int W = group_width(N > R ? N : R);
    for_each_group<W>(count, [&](long long index, bool valid, int lane) {
        const T al = load_term<N>(a, index, valid, lane);
        const T r = newton_sqrt_group<T, N, R, W, STEPS...>(al, lane);
        store_term<R>(out, index, valid, lane, finish_newton<T, R, W, RENORMALIZE>(r, lane));
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

// ---------------------------------------------------------------------------------------------
// Elementary functions (elementary.cuh): x (and y) of R terms, the result in R terms; `table` is
// expansions.cuda.elementary.table(R, dtype) on the device.  Each kernel runs its function's group
// function (<name>_group) on every group of G = elementary::group_lanes<NAME>(R) lanes.
// Twins: expansions.cpu.elementary.<name>(x, R), atan2(y, x, R), pow(x, y, R).

template <class T, int R, int G, class F>
__device__ __forceinline__ void elementary_kernel_body(const T* __restrict__ x, const T* __restrict__ y,
                                                       T* __restrict__ out, long long count, F f) {
    for_each_group<G>(count, [&](long long index, bool valid, int lane) {
        const T xl = load_term<R>(x, index, valid, lane);
        const T yl = y != nullptr ? load_term<R>(y, index, valid, lane) : T(0);
        store_term<R>(out, index, valid, lane, f(xl, yl, lane));
    });
}

// exp(x).  Twin: expansions.cpu.elementary.exp.
template <class T, int R>
__global__ void exp(const T* __restrict__ x, T* __restrict__ out, long long count, const T* __restrict__ table) {
    constexpr int G = elementary::lanes(R);
    elementary_kernel_body<T, R, G>(x, nullptr, out, count, [&](T xl, T, int lane) {
        return elementary::exp_group<T, R, G>(xl, lane, table);
    });
}

// expm1(x).  Twin: expansions.cpu.elementary.expm1.
template <class T, int R>
__global__ void expm1(const T* __restrict__ x, T* __restrict__ out, long long count, const T* __restrict__ table) {
    constexpr int G = elementary::lanes(R);
    elementary_kernel_body<T, R, G>(x, nullptr, out, count, [&](T xl, T, int lane) {
        return elementary::expm1_group<T, R, G>(xl, lane, table);
    });
}

// log(x).  Twin: expansions.cpu.elementary.log.
template <class T, int R>
__global__ void log(const T* __restrict__ x, T* __restrict__ out, long long count, const T* __restrict__ table) {
    constexpr int G = elementary::lanes(R);
    elementary_kernel_body<T, R, G>(x, nullptr, out, count, [&](T xl, T, int lane) {
        return elementary::log_group<T, R, G>(xl, lane, table);
    });
}

// log2(x).  Twin: expansions.cpu.elementary.log2.
template <class T, int R>
__global__ void log2(const T* __restrict__ x, T* __restrict__ out, long long count, const T* __restrict__ table) {
    constexpr int G = elementary::lanes(R);
    elementary_kernel_body<T, R, G>(x, nullptr, out, count, [&](T xl, T, int lane) {
        return elementary::log2_group<T, R, G>(xl, lane, table);
    });
}

// log10(x).  Twin: expansions.cpu.elementary.log10.
template <class T, int R>
__global__ void log10(const T* __restrict__ x, T* __restrict__ out, long long count, const T* __restrict__ table) {
    constexpr int G = elementary::lanes(R);
    elementary_kernel_body<T, R, G>(x, nullptr, out, count, [&](T xl, T, int lane) {
        return elementary::log10_group<T, R, G>(xl, lane, table);
    });
}

// log1p(x).  Twin: expansions.cpu.elementary.log1p.
template <class T, int R>
__global__ void log1p(const T* __restrict__ x, T* __restrict__ out, long long count, const T* __restrict__ table) {
    constexpr int G = elementary::lanes(R);
    elementary_kernel_body<T, R, G>(x, nullptr, out, count, [&](T xl, T, int lane) {
        return elementary::log1p_group<T, R, G>(xl, lane, table);
    });
}

// sin(x).  Twin: expansions.cpu.elementary.sin.
template <class T, int R>
__global__ void sin(const T* __restrict__ x, T* __restrict__ out, long long count, const T* __restrict__ table) {
    constexpr int G = elementary::trig_lanes(R);
    elementary_kernel_body<T, R, G>(x, nullptr, out, count, [&](T xl, T, int lane) {
        return elementary::sin_group<T, R, G>(xl, lane, table);
    });
}

// cos(x).  Twin: expansions.cpu.elementary.cos.
template <class T, int R>
__global__ void cos(const T* __restrict__ x, T* __restrict__ out, long long count, const T* __restrict__ table) {
    constexpr int G = elementary::trig_lanes(R);
    elementary_kernel_body<T, R, G>(x, nullptr, out, count, [&](T xl, T, int lane) {
        return elementary::cos_group<T, R, G>(xl, lane, table);
    });
}

// tan(x).  Twin: expansions.cpu.elementary.tan.
template <class T, int R>
__global__ void tan(const T* __restrict__ x, T* __restrict__ out, long long count, const T* __restrict__ table) {
    constexpr int G = elementary::trig_lanes(R);
    elementary_kernel_body<T, R, G>(x, nullptr, out, count, [&](T xl, T, int lane) {
        return elementary::tan_group<T, R, G>(xl, lane, table);
    });
}

// atan(x).  Twin: expansions.cpu.elementary.atan.
template <class T, int R>
__global__ void atan(const T* __restrict__ x, T* __restrict__ out, long long count, const T* __restrict__ table) {
    constexpr int G = elementary::lanes(R);
    elementary_kernel_body<T, R, G>(x, nullptr, out, count, [&](T xl, T, int lane) {
        return elementary::atan_group<T, R, G>(xl, lane, table);
    });
}

// asin(x).  Twin: expansions.cpu.elementary.asin.
template <class T, int R>
__global__ void asin(const T* __restrict__ x, T* __restrict__ out, long long count, const T* __restrict__ table) {
    constexpr int G = elementary::lanes(R);
    elementary_kernel_body<T, R, G>(x, nullptr, out, count, [&](T xl, T, int lane) {
        return elementary::asin_group<T, R, G>(xl, lane, table);
    });
}

// acos(x).  Twin: expansions.cpu.elementary.acos.
template <class T, int R>
__global__ void acos(const T* __restrict__ x, T* __restrict__ out, long long count, const T* __restrict__ table) {
    constexpr int G = elementary::lanes(R);
    elementary_kernel_body<T, R, G>(x, nullptr, out, count, [&](T xl, T, int lane) {
        return elementary::acos_group<T, R, G>(xl, lane, table);
    });
}

// sinh(x).  Twin: expansions.cpu.elementary.sinh.
template <class T, int R>
__global__ void sinh(const T* __restrict__ x, T* __restrict__ out, long long count, const T* __restrict__ table) {
    constexpr int G = elementary::lanes(R);
    elementary_kernel_body<T, R, G>(x, nullptr, out, count, [&](T xl, T, int lane) {
        return elementary::sinh_group<T, R, G>(xl, lane, table);
    });
}

// cosh(x).  Twin: expansions.cpu.elementary.cosh.
template <class T, int R>
__global__ void cosh(const T* __restrict__ x, T* __restrict__ out, long long count, const T* __restrict__ table) {
    constexpr int G = elementary::lanes(R);
    elementary_kernel_body<T, R, G>(x, nullptr, out, count, [&](T xl, T, int lane) {
        return elementary::cosh_group<T, R, G>(xl, lane, table);
    });
}

// tanh(x).  Twin: expansions.cpu.elementary.tanh.
template <class T, int R>
__global__ void tanh(const T* __restrict__ x, T* __restrict__ out, long long count, const T* __restrict__ table) {
    constexpr int G = elementary::lanes(R);
    elementary_kernel_body<T, R, G>(x, nullptr, out, count, [&](T xl, T, int lane) {
        return elementary::tanh_group<T, R, G>(xl, lane, table);
    });
}

// atan2(y, x).  Twin: expansions.cpu.elementary.atan2.
template <class T, int R>
__global__ void atan2(const T* __restrict__ y, const T* __restrict__ x, T* __restrict__ out, long long count,
                      const T* __restrict__ table) {
    constexpr int G = elementary::lanes(R);
    elementary_kernel_body<T, R, G>(y, x, out, count, [&](T yl, T xl, int lane) {
        return elementary::atan2_group<T, R, G>(yl, xl, lane, table);
    });
}

// x ** y.  Twin: expansions.cpu.elementary.pow.
template <class T, int R>
__global__ void pow(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out, long long count,
                    const T* __restrict__ table) {
    constexpr int G = elementary::lanes(R);
    elementary_kernel_body<T, R, G>(x, y, out, count, [&](T xl, T yl, int lane) {
        return elementary::pow_group<T, R, G>(xl, yl, lane, table);
    });
}

// ---------------------------------------------------------------------------------------------
// Sequential baselines (baselines.cuh), one thread per expansion: `op` on (count, R) rows, `op_soa` on
// (R, count) arrays.  Twins: expansions.baselines.cpu.op and op_soa.

// Double-double x + y, QD sloppy_add.
template <class T>
__global__ void dd_add_sloppy(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out,
                              long long count) {
    thread_kernel_body<T, 2, false>(x, y, out, count, [](const T (&a)[2], const T (&b)[2], T (&r)[2]) {
        dd_add_sloppy_thread<T>(a, b, r);
    });
}
template <class T>
__global__ void dd_add_sloppy_soa(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out,
                                  long long count) {
    thread_kernel_body<T, 2, true>(x, y, out, count, [](const T (&a)[2], const T (&b)[2], T (&r)[2]) {
        dd_add_sloppy_thread<T>(a, b, r);
    });
}

// Double-double x + y, QD ieee_add.
template <class T>
__global__ void dd_add_ieee(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out,
                            long long count) {
    thread_kernel_body<T, 2, false>(x, y, out, count, [](const T (&a)[2], const T (&b)[2], T (&r)[2]) {
        dd_add_ieee_thread<T>(a, b, r);
    });
}
template <class T>
__global__ void dd_add_ieee_soa(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out,
                                long long count) {
    thread_kernel_body<T, 2, true>(x, y, out, count, [](const T (&a)[2], const T (&b)[2], T (&r)[2]) {
        dd_add_ieee_thread<T>(a, b, r);
    });
}

// Double-double x * y (JMP 2017 Algorithm 10).
template <class T>
__global__ void dd_mul(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out,
                       long long count) {
    thread_kernel_body<T, 2, false>(x, y, out, count, [](const T (&a)[2], const T (&b)[2], T (&r)[2]) {
        dd_mul_thread<T>(a, b, r);
    });
}
template <class T>
__global__ void dd_mul_soa(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out,
                           long long count) {
    thread_kernel_body<T, 2, true>(x, y, out, count, [](const T (&a)[2], const T (&b)[2], T (&r)[2]) {
        dd_mul_thread<T>(a, b, r);
    });
}

// Quad-double x + y, QD's sloppy (Cray-style) addition.
template <class T>
__global__ void qd_add_sloppy(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out,
                              long long count) {
    thread_kernel_body<T, 4, false>(x, y, out, count, [](const T (&a)[4], const T (&b)[4], T (&r)[4]) {
        qd_add_sloppy_thread<T>(a, b, r);
    });
}
template <class T>
__global__ void qd_add_sloppy_soa(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out,
                                  long long count) {
    thread_kernel_body<T, 4, true>(x, y, out, count, [](const T (&a)[4], const T (&b)[4], T (&r)[4]) {
        qd_add_sloppy_thread<T>(a, b, r);
    });
}

// Quad-double x + y, QD-Add-Accurate.
template <class T>
__global__ void qd_add_ieee(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out,
                            long long count) {
    thread_kernel_body<T, 4, false>(x, y, out, count, [](const T (&a)[4], const T (&b)[4], T (&r)[4]) {
        qd_add_ieee_thread<T>(a, b, r);
    });
}
template <class T>
__global__ void qd_add_ieee_soa(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out,
                                long long count) {
    thread_kernel_body<T, 4, true>(x, y, out, count, [](const T (&a)[4], const T (&b)[4], T (&r)[4]) {
        qd_add_ieee_thread<T>(a, b, r);
    });
}

// Quad-double x * y, QD's accurate multiplication.
template <class T>
__global__ void qd_mul(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out,
                       long long count) {
    thread_kernel_body<T, 4, false>(x, y, out, count, [](const T (&a)[4], const T (&b)[4], T (&r)[4]) {
        qd_mul_thread<T>(a, b, r);
    });
}
template <class T>
__global__ void qd_mul_soa(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out,
                           long long count) {
    thread_kernel_body<T, 4, true>(x, y, out, count, [](const T (&a)[4], const T (&b)[4], T (&r)[4]) {
        qd_mul_thread<T>(a, b, r);
    });
}

// x + y in R terms, certified.
template <class T, int R>
__global__ void certified_add(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out,
                              long long count) {
    thread_kernel_body<T, R, false>(x, y, out, count, [](const T (&a)[R], const T (&b)[R], T (&r)[R]) {
        certified_add_thread<T, R>(a, b, r);
    });
}
template <class T, int R>
__global__ void certified_add_soa(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out,
                                  long long count) {
    thread_kernel_body<T, R, true>(x, y, out, count, [](const T (&a)[R], const T (&b)[R], T (&r)[R]) {
        certified_add_thread<T, R>(a, b, r);
    });
}

// x * y in R terms, certified.
template <class T, int R>
__global__ void certified_mul(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out,
                              long long count) {
    thread_kernel_body<T, R, false>(x, y, out, count, [](const T (&a)[R], const T (&b)[R], T (&r)[R]) {
        certified_mul_thread<T, R>(a, b, r);
    });
}
template <class T, int R>
__global__ void certified_mul_soa(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out,
                                  long long count) {
    thread_kernel_body<T, R, true>(x, y, out, count, [](const T (&a)[R], const T (&b)[R], T (&r)[R]) {
        certified_mul_thread<T, R>(a, b, r);
    });
}

}  // namespace expansions
