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

// 1/a in R terms by Newton iterations (newton.cuh); STEPS: expansions.bounds.newton_steps(R).
// Twin: expansions.cpu.newton.reciprocal.
template <class T, int N, int R, int... STEPS>
__global__ void newton_reciprocal(const T* __restrict__ a, T* __restrict__ out, long long count) {
    constexpr int W = group_width(N > R ? N : R);
    for_each_group<W>(count, [&](long long index, bool valid, int lane) {
        const T al = load_term<N>(a, index, valid, lane);
        const T a0 = shfl<W>(al, 0);
        const int k = -leading_exponent(a0);
        const T as = scale(al, k);
        const T as0 = shfl<W>(as, 0);  // every lane shuffles
        const T x0 = lane == 0 ? div_rn(T(1), as0) : T(0);
        const T x = newton_reciprocal_steps<T, N, W, 1, STEPS...>(as, x0, lane);
        const T r = newton_finish<T, R, W>(scale(x, k), div_rn(T(1), a0), lane, operand_status<N, W>(al));
        store_term<R>(out, index, valid, lane, r);
    });
}

// x / y in R terms, as x * (1/y) (newton_div_group, newton.cuh).  Twin: expansions.cpu.newton.div.
template <class T, int N, int M, int R, int... STEPS>
__global__ void newton_div(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out, long long count) {
    constexpr int W = group_width(max3(N, M, R));
    for_each_group<W>(count, [&](long long index, bool valid, int lane) {
        const T xl = load_term<N>(x, index, valid, lane);
        const T yl = load_term<M>(y, index, valid, lane);
        store_term<R>(out, index, valid, lane, newton_div_group<T, N, M, R, W, STEPS...>(xl, yl, lane));
    });
}

// sqrt(a) in R terms, as a * (1/sqrt(a)) (newton_sqrt_group, newton.cuh).  Twin: expansions.cpu.newton.sqrt.
template <class T, int N, int R, int... STEPS>
__global__ void newton_sqrt(const T* __restrict__ a, T* __restrict__ out, long long count) {
    constexpr int W = group_width(N > R ? N : R);
    for_each_group<W>(count, [&](long long index, bool valid, int lane) {
        const T al = load_term<N>(a, index, valid, lane);
        store_term<R>(out, index, valid, lane, newton_sqrt_group<T, N, R, W, STEPS...>(al, lane));
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
// Elementary functions (elementary.cuh): x (and y) of R terms, the result in R terms, the body at
// W = working_terms(R) terms in a group of G lanes; `table` is expansions.cuda.elementary.table(R,
// dtype) on the device.  Twins: expansions.cpu.elementary.<name>(x, R) and (y, x, R) / (x, y, R).

// Special rows of log, log2, log10: x0 <= 0 gives -inf (zero) or NaN (negative).  Twin: _log_domain.
template <class T>
struct LogDomain {
    __device__ __forceinline__ elementary::SpecialRows<T> operator()(T, T x0, T, int) const {
        return {x0 <= T(0), x0 == T(0) ? infinity<T>(true) : quiet_nan<T>()};
    }
};

// Rows with |x| > 1 and rows with |x| == 1 exactly, of R terms.  Twin: _unit_domain.
template <class T, int R, int G>
__device__ __forceinline__ void unit_domain(T xl, T x0, int lane, bool& outside, bool& at_one) {
    const T tail = shfl<G>(xl, 1);
    const T a0 = magnitude(x0);
    outside = a0 > T(1) || (a0 == T(1) && tail != T(0) && elementary::sign_of(tail) == elementary::sign_of(x0));
    const bool zero_tail = elementary::tail_zero<R, G>(xl, lane);  // every lane votes
    at_one = a0 == T(1) && zero_tail;
}

// exp(x).  Twin: expansions.cpu.elementary.exp.
template <class T, int R>
__global__ void exp(const T* __restrict__ x, T* __restrict__ out, long long count, const T* __restrict__ table) {
    using namespace elementary;
    constexpr int W = working_terms(R);
    constexpr int G = group_width(W);
    const Table<T> tab{table};
    unary_frame<T, R, G>(x, out, count, [](T v) { return leading_exp(v); }, NoSpecial<T>{},
                         [&](T v, int lane) { return exp_w<T, W, G>(v, tab, lane); }, NoFix{});
}

// exp(x) - 1.  Twin: expansions.cpu.elementary.expm1.
template <class T, int R>
__global__ void expm1(const T* __restrict__ x, T* __restrict__ out, long long count, const T* __restrict__ table) {
    using namespace elementary;
    constexpr int W = working_terms(R);
    constexpr int G = group_width(W);
    const Table<T> tab{table};
    unary_frame<T, R, G>(x, out, count, [](T v) { return leading_expm1(v); }, ZeroSpecial<T>{},
                         [&](T v, int lane) { return expm1_w<T, W, G>(v, tab, lane); }, NoFix{});
}

// log(x).  Twin: expansions.cpu.elementary.log.
template <class T, int R>
__global__ void log(const T* __restrict__ x, T* __restrict__ out, long long count, const T* __restrict__ table) {
    using namespace elementary;
    constexpr int W = working_terms(R);
    constexpr int G = group_width(W);
    const Table<T> tab{table};
    unary_frame<T, R, G>(x, out, count, [](T v) { return leading_log(v); }, LogDomain<T>{},
                         [&](T v, int lane) { return log_w<T, W, G>(v, tab, lane); }, NoFix{});
}

// log2(x).  Twin: expansions.cpu.elementary.log2.
template <class T, int R>
__global__ void log2(const T* __restrict__ x, T* __restrict__ out, long long count, const T* __restrict__ table) {
    using namespace elementary;
    constexpr int W = working_terms(R);
    constexpr int G = group_width(W);
    const Table<T> tab{table};
    unary_frame<T, R, G>(x, out, count, [](T v) { return leading_log2(v); }, LogDomain<T>{},
                         [&](T v, int lane) { return log2_w<T, W, G>(v, tab, lane); }, NoFix{});
}

// log10(x).  Twin: expansions.cpu.elementary.log10.
template <class T, int R>
__global__ void log10(const T* __restrict__ x, T* __restrict__ out, long long count, const T* __restrict__ table) {
    using namespace elementary;
    constexpr int W = working_terms(R);
    constexpr int G = group_width(W);
    const Table<T> tab{table};
    unary_frame<T, R, G>(x, out, count, [](T v) { return leading_log10(v); }, LogDomain<T>{},
                         [&](T v, int lane) { return log10_w<T, W, G>(v, tab, lane); }, NoFix{});
}

// log(1 + x); special rows: x = -1 (-inf), x < -1 (NaN), x = +-0.  Twin: expansions.cpu.elementary.log1p.
template <class T, int R>
__global__ void log1p(const T* __restrict__ x, T* __restrict__ out, long long count, const T* __restrict__ table) {
    using namespace elementary;
    constexpr int W = working_terms(R);
    constexpr int G = group_width(W);
    const Table<T> tab{table};
    const auto special = [](T xl, T x0, T, int lane) {
        const T x1 = shfl<G>(xl, 1);
        const bool below = x0 < T(-1) || (x0 == T(-1) && x1 < T(0));
        const bool zero_tail = tail_zero<R, G>(xl, lane);  // every lane votes (no short circuit)
        const bool at = x0 == T(-1) && !below && zero_tail;
        const T value = at ? infinity<T>(true) : (below ? quiet_nan<T>() : x0);
        return SpecialRows<T>{at || below || x0 == T(0), value};
    };
    unary_frame<T, R, G>(x, out, count, [](T v) { return leading_log1p(v); }, special,
                         [&](T v, int lane) { return log1p_w<T, W, G>(v, tab, lane); }, NoFix{});
}

// sin(x), any finite x (Payne-Hanek: G covers M terms).  Twin: expansions.cpu.elementary.sin.
template <class T, int R>
__global__ void sin(const T* __restrict__ x, T* __restrict__ out, long long count, const T* __restrict__ table) {
    using namespace elementary;
    constexpr int W = working_terms(R);
    constexpr int G = group_width(reduction_terms(W));
    const Table<T> tab{table};
    unary_frame<T, R, G>(x, out, count, [](T v) { return leading_sin(v); }, ZeroSpecial<T>{},
                         [&](T v, int lane) { return sin_w<T, W, G>(v, tab, lane); }, NoFix{});
}

// cos(x).  Twin: expansions.cpu.elementary.cos.
template <class T, int R>
__global__ void cos(const T* __restrict__ x, T* __restrict__ out, long long count, const T* __restrict__ table) {
    using namespace elementary;
    constexpr int W = working_terms(R);
    constexpr int G = group_width(reduction_terms(W));
    const Table<T> tab{table};
    unary_frame<T, R, G>(x, out, count, [](T v) { return leading_cos(v); }, NoSpecial<T>{},
                         [&](T v, int lane) { return cos_w<T, W, G>(v, tab, lane); }, NoFix{});
}

// tan(x).  Twin: expansions.cpu.elementary.tan.
template <class T, int R>
__global__ void tan(const T* __restrict__ x, T* __restrict__ out, long long count, const T* __restrict__ table) {
    using namespace elementary;
    constexpr int W = working_terms(R);
    constexpr int G = group_width(reduction_terms(W));
    const Table<T> tab{table};
    unary_frame<T, R, G>(x, out, count, [](T v) { return leading_tan(v); }, ZeroSpecial<T>{},
                         [&](T v, int lane) { return tan_w<T, W, G>(v, tab, lane); }, NoFix{});
}

// atan(x); atan(+-inf) = +-pi/2 to R terms.  Twin: expansions.cpu.elementary.atan.
template <class T, int R>
__global__ void atan(const T* __restrict__ x, T* __restrict__ out, long long count, const T* __restrict__ table) {
    using namespace elementary;
    constexpr int W = working_terms(R);
    constexpr int G = group_width(W);
    const Table<T> tab{table};
    const auto fix = [&](T r, T, T x0, int lane) {
        return constant_rows<T, R, G>(r, is_inf(x0), HALF_PI, sign_of(x0), table, lane);
    };
    unary_frame<T, R, G>(x, out, count, [](T v) { return leading_atan(v); }, ZeroSpecial<T>{},
                         [&](T v, int lane) { return atan_w<T, W, G>(v, tab, lane); }, fix);
}

// asin(x); |x| > 1 NaN, asin(+-1) = +-pi/2 to R terms.  Twin: expansions.cpu.elementary.asin.
template <class T, int R>
__global__ void asin(const T* __restrict__ x, T* __restrict__ out, long long count, const T* __restrict__ table) {
    using namespace elementary;
    constexpr int W = working_terms(R);
    constexpr int G = group_width(W);
    const Table<T> tab{table};
    const auto special = [](T xl, T x0, T, int lane) {
        bool outside, at_one;
        unit_domain<T, R, G>(xl, x0, lane, outside, at_one);
        return SpecialRows<T>{outside || at_one || x0 == T(0), outside ? quiet_nan<T>() : x0};
    };
    const auto fix = [&](T r, T xl, T x0, int lane) {
        bool outside, at_one;
        unit_domain<T, R, G>(xl, x0, lane, outside, at_one);
        return constant_rows<T, R, G>(r, at_one, HALF_PI, sign_of(x0), table, lane);
    };
    unary_frame<T, R, G>(x, out, count, [](T v) { return leading_asin(v); }, special,
                         [&](T v, int lane) { return asin_w<T, W, G>(v, tab, lane); }, fix);
}

// acos(x); |x| > 1 NaN, acos(1) = 0, acos(-1) = pi to R terms.  Twin: expansions.cpu.elementary.acos.
template <class T, int R>
__global__ void acos(const T* __restrict__ x, T* __restrict__ out, long long count, const T* __restrict__ table) {
    using namespace elementary;
    constexpr int W = working_terms(R);
    constexpr int G = group_width(W);
    const Table<T> tab{table};
    const auto special = [](T xl, T x0, T, int lane) {
        bool outside, at_one;
        unit_domain<T, R, G>(xl, x0, lane, outside, at_one);
        return SpecialRows<T>{outside || at_one, outside ? quiet_nan<T>() : T(0)};
    };
    const auto fix = [&](T r, T xl, T x0, int lane) {
        bool outside, at_one;
        unit_domain<T, R, G>(xl, x0, lane, outside, at_one);
        return constant_rows<T, R, G>(r, at_one && x0 < T(0), PI, T(1), table, lane);
    };
    unary_frame<T, R, G>(x, out, count, [](T v) { return leading_acos(v); }, special,
                         [&](T v, int lane) { return acos_w<T, W, G>(v, tab, lane); }, fix);
}

// sinh(x).  Twin: expansions.cpu.elementary.sinh.
template <class T, int R>
__global__ void sinh(const T* __restrict__ x, T* __restrict__ out, long long count, const T* __restrict__ table) {
    using namespace elementary;
    constexpr int W = working_terms(R);
    constexpr int G = group_width(W);
    const Table<T> tab{table};
    unary_frame<T, R, G>(x, out, count, [](T v) { return leading_sinh(v); }, ZeroSpecial<T>{},
                         [&](T v, int lane) { return sinh_w<T, W, G>(v, tab, lane); }, NoFix{});
}

// cosh(x).  Twin: expansions.cpu.elementary.cosh.
template <class T, int R>
__global__ void cosh(const T* __restrict__ x, T* __restrict__ out, long long count, const T* __restrict__ table) {
    using namespace elementary;
    constexpr int W = working_terms(R);
    constexpr int G = group_width(W);
    const Table<T> tab{table};
    unary_frame<T, R, G>(x, out, count, [](T v) { return leading_cosh(v); }, NoSpecial<T>{},
                         [&](T v, int lane) { return cosh_w<T, W, G>(v, tab, lane); }, NoFix{});
}

// tanh(x).  Twin: expansions.cpu.elementary.tanh.
template <class T, int R>
__global__ void tanh(const T* __restrict__ x, T* __restrict__ out, long long count, const T* __restrict__ table) {
    using namespace elementary;
    constexpr int W = working_terms(R);
    constexpr int G = group_width(W);
    const Table<T> tab{table};
    unary_frame<T, R, G>(x, out, count, [](T v) { return leading_tanh(v); }, ZeroSpecial<T>{},
                         [&](T v, int lane) { return tanh_w<T, W, G>(v, tab, lane); }, NoFix{});
}

// atan2(y, x) with the quadrants and special cases of IEEE 754; the special results that are
// multiples of pi/4 are given to R terms.  Twin: expansions.cpu.elementary.atan2.
template <class T, int R>
__global__ void atan2(const T* __restrict__ y, const T* __restrict__ x, T* __restrict__ out, long long count,
                      const T* __restrict__ table) {
    using namespace elementary;
    constexpr int W = working_terms(R);
    constexpr int G = group_width(W);
    const Table<T> tab{table};
    for_each_group<G>(count, [&](long long index, bool valid, int lane) {
        const T yl = load_term<R>(y, index, valid, lane);
        const T xl = load_term<R>(x, index, valid, lane);
        const T y0 = shfl<G>(yl, 0);
        const T x0 = shfl<G>(xl, 0);
        const T leading = leading_atan2(y0, x0);
        const bool finite = !group_any<R, G>(!is_finite(yl) || !is_finite(xl));
        const bool special = (y0 == T(0) && x0 == T(0)) || is_inf(y0) || is_inf(x0);
        const bool regular = finite && !special;
        T o = T(0);
        if (warp_any(regular)) {
            const T v = atan2_w<T, W, G>(yl, xl, tab, lane);
            if (regular) o = v;
        }
        T r = renormalize_group<T, W, R, G>(o, lane);
        r = nonfinite_epilogue<T, R, G>(r, leading, lane, operand_status<R, G>(yl), operand_status<R, G>(xl));
        if (special && !is_nan(y0) && !is_nan(x0)) r = lane == 0 ? leading : T(0);
        const T sign = sign_of(leading);
        const T mag = magnitude(leading);
        r = constant_rows<T, R, G>(r, special && mag == tab.value(H_PI), PI, sign, table, lane);
        r = constant_rows<T, R, G>(r, special && mag == tab.value(H_HALF_PI), HALF_PI, sign, table, lane);
        r = constant_rows<T, R, G>(r, special && mag == tab.value(H_QUARTER_PI), QUARTER_PI, sign, table, lane);
        r = constant_rows<T, R, G>(r, special && mag == tab.value(H_THREE_QUARTER_PI), THREE_QUARTER_PI, sign,
                                   table, lane);
        store_term<R>(out, index, valid, lane, r);
    });
}

// x ** y for an expansion exponent: exp(y log|x|), the sign (-1)^y for x < 0 and an integer y, NaN
// for x < 0 and a non-integer y, the special cases of IEEE 754 pow.  Twin: expansions.cpu.elementary.pow.
template <class T, int R>
__global__ void pow(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out, long long count,
                    const T* __restrict__ table) {
    using namespace elementary;
    constexpr int W = working_terms(R);
    constexpr int G = group_width(W);
    const Table<T> tab{table};
    for_each_group<G>(count, [&](long long index, bool valid, int lane) {
        const T xl = load_term<R>(x, index, valid, lane);
        const T yl = load_term<R>(y, index, valid, lane);
        const T x0 = shfl<G>(xl, 0);
        const T y0 = shfl<G>(yl, 0);
        // is_integer(y): integer, and odd (an odd number of odd terms)
        const bool finite_y = !group_any<R, G>(!is_finite(yl));
        const T yy = finite_y ? yl : T(0);
        const bool integral = !group_any<R, G>(rint_of(yy) != yy);  // every lane votes
        const bool integer = finite_y && integral;
        const int odd_term = (lane < R && fmod_of(yy, T(2)) != T(0)) ? 1 : 0;
        int odd_terms = 0;
#pragma unroll 1
        for (int i = 0; i < R; ++i) odd_terms += shfl<G>(odd_term, i);
        const bool odd = integer && odd_terms % 2 == 1;
        const bool zero_tail = tail_zero<R, G>(xl, lane);
        const bool one_x = x0 == T(1) && zero_tail;
        const bool zero_y = y0 == T(0);
        const T x_for_sign = (odd || !is_finite(y0)) ? x0 : magnitude(x0);
        const T leading = (one_x || zero_y) ? T(1) : leading_pow(x_for_sign, y0);
        const bool finite_x = !group_any<R, G>(!is_finite(xl));
        const bool finite = finite_y && finite_x;
        const bool nonfinite_lead = !is_finite(x0) || !is_finite(y0);
        const bool domain = finite && x0 < T(0) && !integer;
        const bool special = x0 == T(0) || one_x || zero_y || domain || nonfinite_lead;
        const T value = domain ? quiet_nan<T>() : leading;
        const bool regular = finite && !special;
        T o = T(0);
        if (warp_any(regular)) {
            const T v = pow_w<T, W, G>(xl, yl, tab, lane);
            if (regular) o = v;
        }
        if (regular && x0 < T(0) && odd) o = neg<W>(o, lane);
        T r = renormalize_group<T, W, R, G>(o, lane);
        r = nonfinite_epilogue<T, R, G>(r, leading, lane, operand_status<R, G>(xl), operand_status<R, G>(yl));
        if (special && finite) r = lane == 0 ? value : T(0);
        if ((one_x || zero_y) && !finite) r = lane == 0 ? T(1) : T(0);  // pow(1, NaN) = pow(NaN, 0) = 1
        store_term<R>(out, index, valid, lane, r);
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
