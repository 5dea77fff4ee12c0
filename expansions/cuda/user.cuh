// The C++ API for users' own CUDA kernels: a per-thread expansion type.
//
//     #include "user.cuh"        // with -I expansions.cuda.user.include_dir(), or the text of
//                                 // expansions.cuda.user.source() pasted in front of the kernel
//     using E = expansions::Expansion<double, 4>;
//     E x = E::load(terms, i);   // terms i*R .. i*R+R-1 of a (count, R) C-contiguous array
//     E y = x * x + 1.0;
//     (y / x).store(out, i);
//
// One thread holds one expansion of R terms (T = double or float, R = 2..32) in registers and runs
// the sequential certified algorithms of baselines.cuh (after Joldes, Marty, Muller, Popescu,
// IEEE TC 2016): + and - merge by magnitude, VecSum, VecSumErrBranch to R terms; * collects the
// R^2 + 2R - 1 two-products and roundings, sorts them, VecSum, VecSumErrBranch.  Every result is
// renormalized (ulp-nonoverlapping).  Division and square root are Newton iterations built on them
// (below).  The lane-group kernels of the library (one expansion over R lanes of a warp, shuffles
// and votes) stay in kernels.cu; this type is for code in which each thread owns its numbers (a
// series per thread, a small factorization per thread, a map iterated per thread).
//
// Twins: certified_add, certified_mul (expansions/baselines/cpu.py) and reciprocal, div, sqrt,
// compare (expansions/baselines/thread.py), the same operations in the same order; the tests run
// this header's kernels in the warp emulator against them bit for bit.
//
// Compile options.  Every floating-point operation is written with an explicit rounding intrinsic
// (__dadd_rn, __dmul_rn, __fma_rn, ...), so --fmad never contracts them.  float terms need
// subnormals kept (--ftz=false): a kernel that instantiates Expansion<float, R> under -ftz=true
// (which CuPy's RawKernel and RawModule(code=...) always add, and --use_fast_math implies) fails
// to compile with a static_assert; compile with expansions.cuda.user.compile() (no GPU) or
// expansions.cuda.user.load() (for the current GPU), which use the
// library's options (-std=c++17 --fmad=false --ftz=false --prec-div=true --prec-sqrt=true), or use
// double terms, which no flag flushes.
//
// Non-finite values follow the library's rule: a result whose leading term is not finite is
// (that IEEE value, 0, ..., 0), NaN canonical; an operand with a finite leading term and a
// non-finite lower term counts as NaN.
#pragma once

#include "baselines.cuh"

namespace expansions {

#if defined(__CUDA_FTZ) && __CUDA_FTZ
constexpr bool USER_FTZ = true;
#else
constexpr bool USER_FTZ = false;
#endif

template <class T>
struct IsFloat {
    static constexpr bool value = false;
};
template <>
struct IsFloat<float> {
    static constexpr bool value = true;
};

// 2^k, exact, for k in the normal exponent range of T.  Twin: xp.ldexp(1, k).
template <class T>
__device__ __forceinline__ T power_of_two(int k) {
    using B = FloatBits<T>;
    using U = typename B::U;
    return B::from_bits(static_cast<U>(k + (B::EXP_BITS_MASK >> 1)) << B::EXP_SHIFT);
}

// Every term times 2^k, as two exact multiplications by powers of two (|k| up to 2 * 1074).
template <class T, int R>
__device__ __forceinline__ void scale_terms(T (&x)[R], int k) {
    const int h1 = k >> 1;
    const T s1 = power_of_two<T>(h1), s2 = power_of_two<T>(k - h1);
#pragma unroll
    for (int i = 0; i < R; ++i) x[i] = mul_rn(mul_rn(x[i], s1), s2);
}

// Whether every term is finite.
template <class T, int R>
__device__ __forceinline__ bool all_finite(const T (&x)[R]) {
    bool ok = true;
#pragma unroll
    for (int i = 0; i < R; ++i) ok = ok && is_finite(x[i]);
    return ok;
}

// The special result (w, 0, ..., 0): w the IEEE value on the leading terms, NaN (canonical) where an
// operand's leading term is finite but a lower term is not.
template <class T, int R>
__device__ __forceinline__ void special_result(T (&r)[R], T w, bool lower_nonfinite) {
    r[0] = (lower_nonfinite || is_nan(w)) ? quiet_nan<T>() : w;
#pragma unroll
    for (int i = 1; i < R; ++i) r[i] = T(0);
}

template <class T, int R>
__device__ __forceinline__ bool lower_nonfinite(const T (&x)[R]) {
    return is_finite(x[0]) && !all_finite<T, R>(x);
}

// Newton steps of the per-thread reciprocal and inverse square root: the first approximation has
// about p correct bits and each step doubles them, so ceil(log2 R) + 1 steps reach R p bits with
// one step to spare for the truncations.
template <int R>
struct NewtonSteps {
    static constexpr int value = (R <= 1 ? 0 : R <= 2 ? 1 : R <= 4 ? 2 : R <= 8 ? 3 : R <= 16 ? 4 : 5) + 1;
};

// The start of both Newton iterations: as = a 2^k (exact), x = 0 (its leading term is set by the
// caller) and one = (1, 0, ..., 0).  Twin: _start, _scale and the zeros of reciprocal/sqrt.
template <class T, int R>
__device__ __forceinline__ void newton_start(const T (&a)[R], int k, T (&as)[R], T (&x)[R], T (&one)[R]) {
#pragma unroll
    for (int i = 0; i < R; ++i) {
        as[i] = a[i];
        x[i] = T(0);
        one[i] = T(0);
    }
    scale_terms<T, R>(as, k);
    one[0] = T(1);
}

// 1/a.  a = m 2^e (frexp, 1/2 <= |m| < 1) is scaled exactly to a 2^-e, then
// x <- x + x (1 - a x) from x = RN(1 / a_0), then x 2^-e.  Twin: reciprocal in baselines/thread.py.
template <class T, int R>
__device__ __forceinline__ void reciprocal_thread(const T (&a)[R], T (&r)[R]) {
    if (!all_finite<T, R>(a) || a[0] == T(0)) {
        special_result<T, R>(r, div_rn(T(1), a[0]), lower_nonfinite<T, R>(a));
        return;
    }
    int e;
    frexp(a[0], &e);
    T as[R], x[R], one[R];
    newton_start<T, R>(a, -e, as, x, one);
    x[0] = div_rn(T(1), as[0]);
#pragma unroll 1
    for (int s = 0; s < NewtonSteps<R>::value; ++s) {
        T ax[R], d[R], xd[R];
        certified_mul_thread<T, R>(as, x, ax);
#pragma unroll
        for (int i = 0; i < R; ++i) ax[i] = negated(ax[i]);
        certified_add_thread<T, R>(one, ax, d);  // 1 - a x
        certified_mul_thread<T, R>(x, d, xd);
        certified_add_thread<T, R>(x, xd, r);
#pragma unroll
        for (int i = 0; i < R; ++i) x[i] = r[i];
    }
    scale_terms<T, R>(x, -e);
    if (!is_finite(x[0])) {
        special_result<T, R>(r, x[0], false);
        return;
    }
#pragma unroll
    for (int i = 0; i < R; ++i) r[i] = x[i];
}

// x / y = x (1/y).  Twin: div in baselines/thread.py.
template <class T, int R>
__device__ __forceinline__ void div_thread(const T (&x)[R], const T (&y)[R], T (&r)[R]) {
    if (!all_finite<T, R>(x) || !all_finite<T, R>(y) || y[0] == T(0)) {
        special_result<T, R>(r, div_rn(x[0], y[0]), lower_nonfinite<T, R>(x) || lower_nonfinite<T, R>(y));
        return;
    }
    T inv[R];
    reciprocal_thread<T, R>(y, inv);
    certified_mul_thread<T, R>(x, inv, r);
}

// sqrt(a).  a = m 2^e scaled exactly by 2^-e' with e' the even number e or e - 1, then
// y <- y + y (1 - a y^2) / 2 from y = RN(1 / RN(sqrt(a_0))), then a y 2^(e'/2).
// Twin: sqrt in baselines/thread.py.
template <class T, int R>
__device__ __forceinline__ void sqrt_thread(const T (&a)[R], T (&r)[R]) {
    if (!all_finite<T, R>(a) || a[0] == T(0) || a[0] < T(0)) {
        special_result<T, R>(r, sqrt_rn(a[0]), lower_nonfinite<T, R>(a));
        return;
    }
    int e;
    frexp(a[0], &e);
    const int even = e - (e & 1);
    T as[R], y[R], one[R];
    newton_start<T, R>(a, -even, as, y, one);
    y[0] = div_rn(T(1), sqrt_rn(as[0]));
#pragma unroll 1
    for (int s = 0; s < NewtonSteps<R>::value; ++s) {
        T yy[R], ayy[R], d[R], yd[R];
        certified_mul_thread<T, R>(y, y, yy);
        certified_mul_thread<T, R>(as, yy, ayy);
#pragma unroll
        for (int i = 0; i < R; ++i) ayy[i] = negated(ayy[i]);
        certified_add_thread<T, R>(one, ayy, d);  // 1 - a y^2
#pragma unroll
        for (int i = 0; i < R; ++i) d[i] = mul_rn(d[i], T(0.5));
        certified_mul_thread<T, R>(y, d, yd);
        certified_add_thread<T, R>(y, yd, r);
#pragma unroll
        for (int i = 0; i < R; ++i) y[i] = r[i];
    }
    certified_mul_thread<T, R>(as, y, r);
    scale_terms<T, R>(r, even / 2);
}

// The order of x and y: -1, 0 or 1, or 2 when unordered (a NaN).  Finite operands: the sign of the
// leading term of the certified x - y (its leading term carries the sign of the exact difference);
// otherwise the IEEE order of the leading terms.  Twin: compare in baselines/thread.py.
template <class T, int R>
__device__ __forceinline__ int compare_thread(const T (&x)[R], const T (&y)[R]) {
    if (!all_finite<T, R>(x) || !all_finite<T, R>(y)) {
        if (lower_nonfinite<T, R>(x) || lower_nonfinite<T, R>(y) || is_nan(x[0]) || is_nan(y[0])) return 2;
        return x[0] < y[0] ? -1 : (x[0] > y[0] ? 1 : 0);
    }
    T ny[R], d[R];
#pragma unroll
    for (int i = 0; i < R; ++i) ny[i] = negated(y[i]);
    certified_add_thread<T, R>(x, ny, d);
    return d[0] < T(0) ? -1 : (d[0] > T(0) ? 1 : 0);
}

// ---------------------------------------------------------------------------------------------
// The value type

template <class T, int R>
struct Expansion {
    static_assert(R >= 2 && R <= 32, "expansions::Expansion<T, R> takes R = 2..32 terms");
    static_assert(!(IsFloat<T>::value && USER_FTZ),
                  "expansions::Expansion<float, R> needs --ftz=false (CuPy's RawKernel adds -ftz=true): compile "
                  "with expansions.cuda.user.load() or use double terms");

    T t[R];

    __device__ Expansion() {
#pragma unroll
        for (int i = 0; i < R; ++i) t[i] = T(0);
    }
    // A machine number, exactly.
    __device__ Expansion(T v) {
        t[0] = v;
#pragma unroll
        for (int i = 1; i < R; ++i) t[i] = T(0);
    }
    // Expansion i of a C-contiguous (count, R) array of terms (the layout of ExpansionArray.terms).
    __device__ static Expansion load(const T* terms, long long i) {
        Expansion x;
#pragma unroll
        for (int k = 0; k < R; ++k) x.t[k] = terms[i * R + k];
        return x;
    }
    __device__ void store(T* terms, long long i) const {
#pragma unroll
        for (int k = 0; k < R; ++k) terms[i * R + k] = t[k];
    }
    // The leading term: the value rounded to T (RN of the value, when the terms are ulp-nonoverlapping
    // and the value is not a tie).
    __device__ T leading() const { return t[0]; }
};

template <class T, int R>
__device__ __forceinline__ Expansion<T, R> operator+(const Expansion<T, R>& x, const Expansion<T, R>& y) {
    Expansion<T, R> r;
    certified_add_thread<T, R>(x.t, y.t, r.t);
    return r;
}

template <class T, int R>
__device__ __forceinline__ Expansion<T, R> operator-(const Expansion<T, R>& x) {
    Expansion<T, R> r;
#pragma unroll
    for (int i = 0; i < R; ++i) r.t[i] = negated(x.t[i]);
    return r;
}

template <class T, int R>
__device__ __forceinline__ Expansion<T, R> operator-(const Expansion<T, R>& x, const Expansion<T, R>& y) {
    return x + (-y);
}

template <class T, int R>
__device__ __forceinline__ Expansion<T, R> operator*(const Expansion<T, R>& x, const Expansion<T, R>& y) {
    Expansion<T, R> r;
    certified_mul_thread<T, R>(x.t, y.t, r.t);
    return r;
}

template <class T, int R>
__device__ __forceinline__ Expansion<T, R> operator/(const Expansion<T, R>& x, const Expansion<T, R>& y) {
    Expansion<T, R> r;
    div_thread<T, R>(x.t, y.t, r.t);
    return r;
}

template <class T, int R>
__device__ __forceinline__ Expansion<T, R> reciprocal(const Expansion<T, R>& x) {
    Expansion<T, R> r;
    reciprocal_thread<T, R>(x.t, r.t);
    return r;
}

template <class T, int R>
__device__ __forceinline__ Expansion<T, R> sqrt(const Expansion<T, R>& x) {
    Expansion<T, R> r;
    sqrt_thread<T, R>(x.t, r.t);
    return r;
}

template <class T, int R>
__device__ __forceinline__ Expansion<T, R> abs(const Expansion<T, R>& x) {
    using B = FloatBits<T>;
    return (B::to_bits(x.t[0]) & B::SIGN) ? -x : x;
}

// Mixed with a machine number of the term type (exactly an expansion (v, 0, ..., 0)).
#define EXPANSIONS_USER_MIXED(OP)                                                                      \
    template <class T, int R>                                                                          \
    __device__ __forceinline__ Expansion<T, R> operator OP(const Expansion<T, R>& x, T v) {            \
        return x OP Expansion<T, R>(v);                                                                \
    }                                                                                                  \
    template <class T, int R>                                                                          \
    __device__ __forceinline__ Expansion<T, R> operator OP(T v, const Expansion<T, R>& x) {            \
        return Expansion<T, R>(v) OP x;                                                                \
    }
EXPANSIONS_USER_MIXED(+)
EXPANSIONS_USER_MIXED(-)
EXPANSIONS_USER_MIXED(*)
EXPANSIONS_USER_MIXED(/)
#undef EXPANSIONS_USER_MIXED

// Comparisons of the exact values; false when either is NaN (except !=), as IEEE.
#define EXPANSIONS_USER_COMPARE(OP, TEST)                                                              \
    template <class T, int R>                                                                          \
    __device__ __forceinline__ bool operator OP(const Expansion<T, R>& x, const Expansion<T, R>& y) { \
        const int c = compare_thread<T, R>(x.t, y.t);                                                  \
        return TEST;                                                                                   \
    }
EXPANSIONS_USER_COMPARE(<, c == -1)
EXPANSIONS_USER_COMPARE(<=, c == -1 || c == 0)
EXPANSIONS_USER_COMPARE(>, c == 1)
EXPANSIONS_USER_COMPARE(>=, c == 1 || c == 0)
EXPANSIONS_USER_COMPARE(==, c == 0)
EXPANSIONS_USER_COMPARE(!=, c != 0)
#undef EXPANSIONS_USER_COMPARE

}  // namespace expansions
