// Sequential baselines, one thread per expansion: QD-style double-double and quad-double (Hida, Li,
// Bailey, ARITH 2001), and certified addition and multiplication for any R (merge or sort by
// magnitude, VecSum, VecSumErrBranch; after Joldes, Marty, Muller, Popescu, IEEE TC 2016).  Written
// from the published algorithms (see expansions/baselines/reference.py for sources and the choices
// the texts leave open); twins: expansions/baselines/cpu.py, same operations in the same order.  The
// double-double arithmetic is dw.cuh's (QdAddSloppy, QdAddIeee, DwTimesDw1); this file adds the
// library's non-finite rule and the one-thread entry points' layouts.
//
// A thread holds its expansions in register arrays indexed by compile-time constants only (every
// loop over terms is unrolled); sorting and merging are compare-exchange networks on compile-time
// positions that break ties by original position, so they give the stable order.  Two exceptions
// keep code size and compile time bounded, and say so: inputs that are not sorted by magnitude (never
// produced by the library's operations) are sorted by a stable merge sort in local memory, and the
// multiplication for R > MUL_REGISTER_MAX_R, whose R^2 + 2R - 1 terms cannot live in registers, works
// on local-memory arrays with runtime loops.
#pragma once

#include "dw.cuh"
#include "expansion.cuh"

namespace expansions {

// ---------------------------------------------------------------------------------------------
// Scalar helpers

// |v| as an unsigned integer (sign bit cleared): ordered as the magnitudes for non-NaN values.
template <class T>
__device__ __forceinline__ typename FloatBits<T>::U magnitude_bits(T v) {
    return FloatBits<T>::to_bits(v) & ~FloatBits<T>::SIGN;
}

// Design decision 6 for one thread holding R-term operands x, y and result r: if an operand has a
// non-finite term, r = (w, 0, ..., 0) with w = `leading` (the IEEE result on the leading terms), or
// NaN where that operand's leading term is finite; else, if a term of r is not finite (overflow),
// r = (+-inf, 0, ..., 0) with the sign of leading.  NaN results are the canonical quiet NaN.
// Mirrors nonfinite_epilogue in expansions/cpu/kernels.py (and expansion.cuh's group version).
template <class T, int R>
__device__ __forceinline__ void nonfinite_epilogue_thread(T (&r)[R], T leading, const T (&x)[R], const T (&y)[R]) {
    bool x_bad = false, y_bad = false, r_bad = false;
#pragma unroll
    for (int i = 0; i < R; ++i) {
        x_bad = x_bad || !is_finite(x[i]);
        y_bad = y_bad || !is_finite(y[i]);
        r_bad = r_bad || !is_finite(r[i]);
    }
    const bool anybad = x_bad || y_bad;
    if (!(anybad || r_bad)) return;
    T w = leading;
    if (x_bad && is_finite(x[0])) w = quiet_nan<T>();
    if (y_bad && is_finite(y[0])) w = quiet_nan<T>();
    if (!anybad) w = infinity<T>(leading < T(0));
    if (is_nan(w)) w = quiet_nan<T>();
    r[0] = w;
#pragma unroll
    for (int i = 1; i < R; ++i) r[i] = T(0);
}

// Term k of expansion i: AoS (the library's (count, R) rows) or SoA ((R, count): term k of every
// expansion contiguous, so that the loads of a warp are coalesced).
template <int R, bool SOA>
__device__ __forceinline__ long long term_offset(long long i, int k, long long count) {
    return SOA ? static_cast<long long>(k) * count + i : i * R + k;
}

// Grid-stride loop, one expansion per thread: loads x and y, runs op(x, y, r), stores r.
template <class T, int R, bool SOA, class Op>
__device__ __forceinline__ void thread_kernel_body(const T* __restrict__ x, const T* __restrict__ y,
                                                   T* __restrict__ out, long long count, Op op) {
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
        T a[R], b[R], r[R];
#pragma unroll
        for (int k = 0; k < R; ++k) {
            a[k] = x[term_offset<R, SOA>(i, k, count)];
            b[k] = y[term_offset<R, SOA>(i, k, count)];
        }
        op(a, b, r);
#pragma unroll
        for (int k = 0; k < R; ++k) out[term_offset<R, SOA>(i, k, count)] = r[k];
    }
}

// ---------------------------------------------------------------------------------------------
// Ordering by decreasing magnitude (twin: _sorted_by_magnitude, a stable argsort of -|t|)

// Compare-exchange of positions i < j on (value, original position) pairs: afterwards the element
// at i comes first (larger magnitude, or equal magnitude and smaller original position).
template <class T, int N>
__device__ __forceinline__ void compare_exchange(T (&v)[N], int (&ix)[N], int i, int j) {
    const auto ki = magnitude_bits(v[i]);
    const auto kj = magnitude_bits(v[j]);
    const bool swap = kj > ki || (kj == ki && ix[j] < ix[i]);
    const T vi = v[i], vj = v[j];
    const int ii = ix[i], ij = ix[j];
    v[i] = swap ? vj : vi;
    v[j] = swap ? vi : vj;
    ix[i] = swap ? ij : ii;
    ix[j] = swap ? ii : ij;
}

__host__ __device__ constexpr int ceil_log2(int n) {
    int t = 0;
    while ((1 << t) < n) ++t;
    return t;
}

// Batcher's merge exchange (Knuth, TAOCP vol. 3, 5.2.2, Algorithm M) on N elements: sorts any input.
template <class T, int N>
__device__ __forceinline__ void sort_network(T (&v)[N], int (&ix)[N]) {
    constexpr int t = ceil_log2(N);
#pragma unroll
    for (int a = 0; a < t; ++a) {
        const int p = 1 << (t - 1 - a);
#pragma unroll
        for (int s = 0; s < t; ++s) {
            if (s < a + 1) {
                const int d = s == 0 ? p : (1 << (t - s)) - p;
                const int r = s == 0 ? 0 : p;
#pragma unroll
                for (int i = 0; i < N; ++i) {
                    if (i + d < N && (i & p) == r) compare_exchange(v, ix, i, i + d);
                }
            }
        }
    }
}

// Whether x is sorted by non-increasing magnitude (then, with y, the merge network applies).
template <class T, int R>
__device__ __forceinline__ bool sorted_by_magnitude(const T (&x)[R]) {
    bool ok = true;
#pragma unroll
    for (int i = 0; i + 1 < R; ++i) ok = ok && magnitude_bits(x[i]) >= magnitude_bits(x[i + 1]);
    return ok;
}

// Stable bottom-up merge sort by decreasing magnitude of a[0..n) in local memory (b: scratch of
// the same size); returns the buffer that holds the result.  Runtime loops: the data-dependent merge
// needs dynamic indices, which is why the arrays are local.
template <class T>
__device__ T* stable_sort_local(T* a, T* b, int n) {
#pragma unroll 1
    for (int width = 1; width < n; width *= 2) {
#pragma unroll 1
        for (int lo = 0; lo < n; lo += 2 * width) {
            const int mid = lo + width < n ? lo + width : n;
            const int hi = lo + 2 * width < n ? lo + 2 * width : n;
            int i = lo, j = mid;
#pragma unroll 1
            for (int k = lo; k < hi; ++k) {
                const bool left = i < mid && (j >= hi || magnitude_bits(a[i]) >= magnitude_bits(a[j]));
                b[k] = left ? a[i] : a[j];
                i += left ? 1 : 0;
                j += left ? 0 : 1;
            }
        }
        T* tmp = a;
        a = b;
        b = tmp;
    }
    return a;
}

// The 2R terms of x and y by decreasing magnitude, ties: x's term first (the stable merge; for
// inputs not sorted by magnitude, the stable sort of x ++ y).  Sorted inputs go through a bitonic
// merging network: y reversed then x is a bitonic sequence (padded to a power of two with elements
// that come last, whose comparators are skipped), merged by half-cleaners of strides P/2 .. 1.
template <class T, int R>
__device__ __forceinline__ void merge_by_magnitude(const T (&x)[R], const T (&y)[R], T (&v)[2 * R]) {
    constexpr int N = 2 * R;
    if (sorted_by_magnitude(x) && sorted_by_magnitude(y)) {
        int ix[N];
#pragma unroll
        for (int i = 0; i < R; ++i) {
            v[i] = y[R - 1 - i];
            ix[i] = 2 * R - 1 - i;
            v[R + i] = x[i];
            ix[R + i] = i;
        }
        constexpr int P = 1 << ceil_log2(N);
#pragma unroll
        for (int m = P / 2; m >= 1; m /= 2) {
#pragma unroll
            for (int i = 0; i < N; ++i) {
                if ((i & m) == 0 && i + m < N) compare_exchange(v, ix, i, i + m);
            }
        }
    } else {
        T a[N], b[N];
#pragma unroll
        for (int i = 0; i < R; ++i) {
            a[i] = x[i];
            a[R + i] = y[i];
        }
        const T* s = stable_sort_local(a, b, N);
#pragma unroll
        for (int i = 0; i < N; ++i) v[i] = s[i];
    }
}

// ---------------------------------------------------------------------------------------------
// VecSum and VecSumErrBranch (JMMP 2016; twins: _vec_sum, _vec_sum_err_branch)

// VecSumErrBranch with 2Sum: from the top, a nonzero error closes an output term; at most R terms
// (the rest is dropped).  The output index j is data-dependent: every term of r is a select.
template <class T, int N, int R>
__device__ __forceinline__ void vec_sum_err_branch(const T (&e)[N], T (&r)[R]) {
#pragma unroll
    for (int m = 0; m < R; ++m) r[m] = T(0);
    int j = 0;
    bool done = false;
    T eps = e[0];
#pragma unroll
    for (int i = 1; i < N; ++i) {
        const TwoTerms<T> t = two_sum(eps, e[i]);
        const bool live = !done;
#pragma unroll
        for (int m = 0; m < R; ++m) r[m] = (live && j == m) ? t.hi : r[m];
        const bool nz = t.lo != T(0);
        done = done || (live && nz && j >= R - 1);
        const bool step = live && !done && nz;
        eps = step ? t.lo : ((live && !nz) ? t.hi : eps);
        j += step ? 1 : 0;
    }
#pragma unroll
    for (int m = 0; m < R; ++m) r[m] = (!done && j == m) ? eps : r[m];
}

// The same two on local-memory arrays, with runtime loops (the large multiplication).
template <class T>
__device__ void vec_sum_local(T* v, int n) {
    T s = v[n - 1];
#pragma unroll 1
    for (int i = n - 2; i >= 0; --i) {
        const TwoTerms<T> t = two_sum(v[i], s);
        s = t.hi;
        v[i + 1] = t.lo;
    }
    v[0] = s;
}

template <class T, int R>
__device__ void vec_sum_err_branch_local(const T* e, int n, T (&r)[R]) {
    T out[R];
#pragma unroll
    for (int m = 0; m < R; ++m) out[m] = T(0);
    int j = 0;
    T eps = e[0];
    bool done = false;
#pragma unroll 1
    for (int i = 1; i < n; ++i) {
        const TwoTerms<T> t = two_sum(eps, e[i]);
        out[j] = t.hi;
        if (t.lo != T(0)) {
            if (j >= R - 1) {
                done = true;
                break;
            }
            ++j;
            eps = t.lo;
        } else {
            eps = t.hi;
        }
    }
    if (!done) out[j] = eps;
#pragma unroll
    for (int m = 0; m < R; ++m) r[m] = out[m];
}

// ---------------------------------------------------------------------------------------------
// Double-double (R = 2): dw.cuh's functors, then the non-finite rule.
// Twins: dd_add_sloppy, dd_add_ieee, dd_mul in baselines/cpu.py (expansions.dw.cpu's functions).

template <class F, class T>
__device__ __forceinline__ void dd_thread(const T (&x)[2], const T (&y)[2], T (&r)[2], T leading) {
    const TwoTerms<T> z = F::apply(x[0], x[1], y[0], y[1]);
    r[0] = z.hi;
    r[1] = z.lo;
    nonfinite_epilogue_thread<T, 2>(r, leading, x, y);
}

// QD sloppy_add (JMP 2017 Algorithm 5's operations).
template <class T>
__device__ __forceinline__ void dd_add_sloppy_thread(const T (&x)[2], const T (&y)[2], T (&r)[2]) {
    dd_thread<QdAddSloppy>(x, y, r, add_rn(x[0], y[0]));
}

// QD ieee_add (JMP 2017 Algorithm 6's operations).
template <class T>
__device__ __forceinline__ void dd_add_ieee_thread(const T (&x)[2], const T (&y)[2], T (&r)[2]) {
    dd_thread<QdAddIeee>(x, y, r, add_rn(x[0], y[0]));
}

// Double-double product (JMP 2017 Algorithm 10, DWTimesDW1).
template <class T>
__device__ __forceinline__ void dd_mul_thread(const T (&x)[2], const T (&y)[2], T (&r)[2]) {
    dd_thread<DwTimesDw1>(x, y, r, mul_rn(x[0], y[0]));
}

// ---------------------------------------------------------------------------------------------
// Quad-double (R = 4); twins: qd_renormalize, three_sum, double_accumulate, qd_* in baselines/cpu.py

template <class T>
struct ThreeTerms {
    T r0, r1, r2;
};

// Three-Sum: (u, v) = 2Sum(a, b), (r0, w) = 2Sum(u, c), (r1, r2) = 2Sum(v, w).
template <class T>
__device__ __forceinline__ ThreeTerms<T> three_sum(T a, T b, T c) {
    const TwoTerms<T> uv = two_sum(a, b);
    const TwoTerms<T> rw = two_sum(uv.hi, c);
    const TwoTerms<T> r12 = two_sum(uv.lo, rw.lo);
    return {rw.hi, r12.hi, r12.lo};
}

// Three-Sum with two outputs: the last 2Sum a plain addition.
template <class T>
__device__ __forceinline__ TwoTerms<T> three_sum2(T a, T b, T c) {
    const TwoTerms<T> uv = two_sum(a, b);
    const TwoTerms<T> rw = two_sum(uv.hi, c);
    return {rw.hi, add_rn(uv.lo, rw.lo)};
}

// QD Renormalize of N = 4 or 5 terms to 4: Quick-Two-Sums from the bottom, then from the top a
// Quick-Two-Sum per term that emits the running sum when its error is nonzero; the sum left at the
// end is stored if a component is free.  The emitting index k is data-dependent: selects.
template <class T, int N>
__device__ __forceinline__ void qd_renormalize(const T (&a)[N], T (&b)[4]) {
    T t[N];
    TwoTerms<T> q = fast_two_sum(a[N - 2], a[N - 1]);
    t[N - 1] = q.lo;
#pragma unroll
    for (int i = N - 3; i >= 0; --i) {
        q = fast_two_sum(a[i], q.hi);
        t[i + 1] = q.lo;
    }
    t[0] = q.hi;
#pragma unroll
    for (int m = 0; m < 4; ++m) b[m] = T(0);
    T s = t[0];
    int k = 0;
#pragma unroll
    for (int i = 1; i < N; ++i) {
        const TwoTerms<T> se = fast_two_sum(s, t[i]);
        const bool emit = se.lo != T(0);
#pragma unroll
        for (int m = 0; m < 4; ++m) b[m] = (emit && k == m) ? se.hi : b[m];
        s = emit ? se.lo : se.hi;
        k += emit ? 1 : 0;
    }
#pragma unroll
    for (int m = 0; m < 4; ++m) b[m] = (k == m) ? s : b[m];
}

// QD quad-double addition, Cray-style bound: 2Sums 1-4, 2Sum 5, Three-Sums 6-8, Renormalize.
template <class T>
__device__ __forceinline__ void qd_add_sloppy_thread(const T (&x)[4], const T (&y)[4], T (&r)[4]) {
    const TwoTerms<T> s0 = two_sum(x[0], y[0]);
    const TwoTerms<T> s1 = two_sum(x[1], y[1]);
    const TwoTerms<T> s2 = two_sum(x[2], y[2]);
    const TwoTerms<T> s3 = two_sum(x[3], y[3]);
    const TwoTerms<T> s5 = two_sum(s1.hi, s0.lo);
    const ThreeTerms<T> s6 = three_sum(s2.hi, s5.lo, s1.lo);
    const TwoTerms<T> s7 = three_sum2(s3.hi, s6.r1, s2.lo);
    const T x4 = add_rn(add_rn(s7.lo, s6.r2), s3.lo);
    const T five[5] = {s0.hi, s5.hi, s6.r0, s7.hi, x4};
    qd_renormalize<T, 5>(five, r);
    nonfinite_epilogue_thread<T, 4>(r, s0.hi, x, y);
}

// QD Double-Accumulate: adds a to the accumulator (u, v); returns the finished component (or 0).
template <class T>
__device__ __forceinline__ T double_accumulate(T& u, T& v, T a) {
    const TwoTerms<T> sv = two_sum(v, a);
    const TwoTerms<T> su = two_sum(u, sv.hi);
    T s = su.hi;
    u = su.lo;
    v = sv.lo;
    if (u == T(0)) {
        u = s;
        s = T(0);
    }
    if (v == T(0)) {
        v = u;
        u = s;
        s = T(0);
    }
    return s;
}

// QD-Add-Accurate: merge by magnitude, Double-Accumulate until four components, the accumulator into
// the free components (c[k], c[k+1] = u, v for k <= 2; c[3] = RN(u + v) for k = 3), Renormalize.
template <class T>
__device__ __forceinline__ void qd_add_ieee_thread(const T (&x)[4], const T (&y)[4], T (&r)[4]) {
    T v8[8];
    merge_by_magnitude<T, 4>(x, y, v8);
    T c[4] = {T(0), T(0), T(0), T(0)};
    T u = T(0), v = T(0);
    int k = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        if (k < 4) {
            const T s = double_accumulate(u, v, v8[i]);
            const bool emit = s != T(0);
#pragma unroll
            for (int m = 0; m < 4; ++m) c[m] = (emit && k == m) ? s : c[m];
            k += emit ? 1 : 0;
        }
    }
    const T uv = add_rn(u, v);
#pragma unroll
    for (int m = 0; m < 4; ++m) {
        if (k <= 2 && k == m) c[m] = u;
        if (k <= 2 && k == m - 1) c[m] = v;
    }
    if (k == 3) c[3] = uv;
    qd_renormalize<T, 4>(c, r);
    nonfinite_epilogue_thread<T, 4>(r, add_rn(x[0], y[0]), x, y);
}

// Six-Three-Sum: Three-Sum of each half, then the two sums added to three components.
template <class T>
__device__ __forceinline__ ThreeTerms<T> six_three_sum(T a, T b, T c, T d, T e, T f) {
    const ThreeTerms<T> s = three_sum(a, b, c);
    const ThreeTerms<T> t = three_sum(d, e, f);
    const TwoTerms<T> g0 = two_sum(s.r0, t.r0);
    const TwoTerms<T> h1 = two_sum(s.r1, t.r1);
    const TwoTerms<T> k1 = two_sum(h1.hi, g0.lo);
    const T r2 = add_rn(add_rn(add_rn(s.r2, t.r2), h1.lo), k1.lo);
    return {g0.hi, k1.hi, r2};
}

// Nine-Two-Sum: ((a0a1 + a2a3) + (a4a5 + a6a7)) + (a8, 0) by double-double sloppy additions.
template <class T>
__device__ __forceinline__ TwoTerms<T> nine_two_sum(T a0, T a1, T a2, T a3, T a4, T a5, T a6, T a7, T a8) {
    const TwoTerms<T> ab = QdAddSloppy::apply(a0, a1, a2, a3);
    const TwoTerms<T> cd = QdAddSloppy::apply(a4, a5, a6, a7);
    const TwoTerms<T> s = QdAddSloppy::apply(ab.hi, ab.lo, cd.hi, cd.lo);
    return QdAddSloppy::apply(s.hi, s.lo, a8, T(0));
}

// QD accurate quad-double multiplication: products of order <= 3 by 2Prod, order 4 plain, summed
// order by order (Three-Sum, Six-Three-Sum, Nine-Two-Sum, Nine-One-Sum), Renormalize.
template <class T>
__device__ __forceinline__ void qd_mul_thread(const T (&x)[4], const T (&y)[4], T (&r)[4]) {
    const TwoTerms<T> p00 = two_prod(x[0], y[0]);
    const TwoTerms<T> p01 = two_prod(x[0], y[1]);
    const TwoTerms<T> p10 = two_prod(x[1], y[0]);
    const TwoTerms<T> p02 = two_prod(x[0], y[2]);
    const TwoTerms<T> p11 = two_prod(x[1], y[1]);
    const TwoTerms<T> p20 = two_prod(x[2], y[0]);
    const TwoTerms<T> p03 = two_prod(x[0], y[3]);
    const TwoTerms<T> p12 = two_prod(x[1], y[2]);
    const TwoTerms<T> p21 = two_prod(x[2], y[1]);
    const TwoTerms<T> p30 = two_prod(x[3], y[0]);
    const T p13 = mul_rn(x[1], y[3]);
    const T p22 = mul_rn(x[2], y[2]);
    const T p31 = mul_rn(x[3], y[1]);
    const ThreeTerms<T> s1 = three_sum(p01.hi, p10.hi, p00.lo);
    const ThreeTerms<T> s2 = six_three_sum(p02.hi, p11.hi, p20.hi, p01.lo, p10.lo, s1.r1);
    const TwoTerms<T> s3 = nine_two_sum(p03.hi, p12.hi, p21.hi, p30.hi, p02.lo, p11.lo, p20.lo, s1.r2, s2.r1);
    T x4 = p13;
    const T rest[8] = {p22, p31, p03.lo, p12.lo, p21.lo, p30.lo, s2.r2, s3.lo};
#pragma unroll
    for (int i = 0; i < 8; ++i) x4 = add_rn(x4, rest[i]);
    const T five[5] = {p00.hi, s1.r0, s2.r0, s3.hi, x4};
    qd_renormalize<T, 5>(five, r);
    nonfinite_epilogue_thread<T, 4>(r, p00.hi, x, y);
}

// ---------------------------------------------------------------------------------------------
// Certified operations, any R; twins: certified_add, certified_mul in baselines/cpu.py

// x + y: merge by magnitude, VecSum, VecSumErrBranch to R terms.
template <class T, int R>
__device__ __forceinline__ void certified_add_thread(const T (&x)[R], const T (&y)[R], T (&r)[R]) {
    T v[2 * R];
    merge_by_magnitude<T, R>(x, y, v);
    vec_sum<T, 2 * R>(v);
    vec_sum_err_branch<T, 2 * R, R>(v, r);
    nonfinite_epilogue_thread<T, R>(r, add_rn(x[0], y[0]), x, y);
}

// Largest R whose multiplication keeps its R^2 + 2R - 1 terms in registers (a sorting network of
// up to 34 terms); above, local-memory arrays and runtime loops (see the header comment): about
// 2 (R^2 + 2R) terms per thread, 18 KB for float64 at R = 32, which the driver reserves for every
// resident thread of the device.  tools/nvrtc_resources.py reads this value.
constexpr int MUL_REGISTER_MAX_R = 5;

// x * y: for k = 0 .. R-1, i = 0 .. k, 2Prod(x_i, y_{k-i}) (p then e); then RN(x_i y_{R-i}),
// i = 1 .. R-1; sorted by decreasing magnitude (stable), VecSum, VecSumErrBranch to R terms.
template <class T, int R>
__device__ __forceinline__ void certified_mul_thread(const T (&x)[R], const T (&y)[R], T (&r)[R]) {
    constexpr int N = R * R + 2 * R - 1;
    if constexpr (R <= MUL_REGISTER_MAX_R) {
        T v[N];
        int ix[N];
        int n = 0;
#pragma unroll
        for (int k = 0; k < R; ++k) {
#pragma unroll
            for (int i = 0; i <= k; ++i) {
                const TwoTerms<T> pe = two_prod(x[i], y[k - i]);
                v[n] = pe.hi;
                v[n + 1] = pe.lo;
                n += 2;
            }
        }
#pragma unroll
        for (int i = 1; i < R; ++i) v[n++] = mul_rn(x[i], y[R - i]);
#pragma unroll
        for (int i = 0; i < N; ++i) ix[i] = i;
        sort_network<T, N>(v, ix);
        vec_sum<T, N>(v);
        vec_sum_err_branch<T, N, R>(v, r);
    } else {
        T xl[R], yl[R], a[N], b[N];
#pragma unroll
        for (int i = 0; i < R; ++i) {
            xl[i] = x[i];
            yl[i] = y[i];
        }
        int n = 0;
#pragma unroll 1
        for (int k = 0; k < R; ++k) {
#pragma unroll 1
            for (int i = 0; i <= k; ++i) {
                const TwoTerms<T> pe = two_prod(xl[i], yl[k - i]);
                a[n] = pe.hi;
                a[n + 1] = pe.lo;
                n += 2;
            }
        }
#pragma unroll 1
        for (int i = 1; i < R; ++i) a[n++] = mul_rn(xl[i], yl[R - i]);
        T* s = stable_sort_local(a, b, N);
        vec_sum_local(s, N);
        vec_sum_err_branch_local<T, R>(s, N, r);
    }
    nonfinite_epilogue_thread<T, R>(r, mul_rn(x[0], y[0]), x, y);
}

}  // namespace expansions
