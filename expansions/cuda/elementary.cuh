// The elementary functions of expansions on lane groups: exp, expm1, log, log1p, log2, log10, sin,
// cos, tan, atan, atan2, asin, acos, sinh, cosh, tanh, pow.  Twins: expansions/cpu/elementary.py,
// function for function (each device function below names its twin and performs its operations in
// its order); the algorithms, their sources and the stated bounds are in that module's docstring.
//
// Every operation on expansions is one of the library's: the safe addition and the truncated
// product, each followed by the renormalization (add.cuh, mul.cuh, renorm.cuh), the Newton division
// and square root (newton.cuh), exact scalings by powers of two, and IEEE operations on the leading
// term (a float) to pick a branch or a start.  The body runs at W = working_terms(R) terms (one guard
// term) in a group of G >= W lanes (G >= M = min(2W + 2, 32) for the Payne-Hanek reduction of sin,
// cos and tan); helpers take their widths as template arguments (the twin's array widths).
//
// Constants (ln2, pi/2, ..., the Payne-Hanek table of 2/pi, the Taylor coefficients, the evaluation
// plans and branch thresholds) come from expansions/cpu/constants.py and expansions/cpu/elementary.py
// through one device array, the table built by expansions.cuda.elementary.table (layout: the H_*
// indices below); nothing is typed in here.
//
// The operations on expansions and the steps that the functions repeat (e_add, e_mul, ..., the Taylor
// evaluations, the Newton steps) are __noinline__: compiled once per width and called, which keeps
// NVRTC's time and the code size of the 17 kernels reasonable.
//
// Per-row branches of the twin (its `_rows` masks) are per-group branches here.  A branch that some
// groups of a warp take and others do not runs under `if (warp_any(taken))`: every lane of the warp
// computes it (the collectives stay full-mask) and only the groups that take it keep the result,
// which gives the twin's bits because a group's result never depends on the other groups.
#pragma once

#include "newton.cuh"
#include "newton_steps.generated"

namespace expansions {
namespace elementary {

// ---------------------------------------------------------------------------------------------
// The table (one device array of terms; small integers are stored as terms, exactly).

enum : int {
    H_W = 0,        // W, the working terms
    H_M,            // M, the terms of the Payne-Hanek sums
    H_S,            // S, the scaling 2^S of the Payne-Hanek table
    H_ROWS,         // rows of the Payne-Hanek table
    H_CONST,        // offset of the constants at W terms, in the order of enum Constant
    H_PH,           // offset of 2/pi * 2^S at M terms
    H_HALF_PI_M,    // offset of pi/2 at M terms
    H_PH_TABLE,     // offset of the Payne-Hanek table, rows of M terms
    H_EXP_LO = 8,   // thresholds (terms of the format): thresholds() of the twin
    H_EXP_HI,
    H_HYP_LIMIT,
    H_SQRT2,
    H_QUARTER_PI,
    H_PI,
    H_HALF_PI,
    H_THREE_QUARTER_PI,
    H_LOG_B = 16,   // the logarithm's plan (log_plan of the twin): the centres' spacing 2^-b,
    H_LOG_FIRST,    // the first centre's index,
    H_LOG_N,        // the atanh series' terms n,
    H_LOG_CENTRES,  // offset of the centres' logs, rows of W terms,
    H_LOG_COEF,     // offset of the coefficients 1/(2k+1), n rows of W terms,
    H_LOG_WIDTHS,   // offset of the Horner steps' widths, n entries,
    H_LOG_COUNT,    // the number of centres
    H_PLANS = 24,   // the plans of width w at H_PLANS + PLAN_STRIDE * w, entries P_*
    PLAN_STRIDE = 8
};
enum : int { P_EXP_S = 0, P_EXP_N, P_EXP_OFF, P_SIN_S, P_SIN_N, P_SIN_OFF, P_VERSIN_OFF };
enum Constant : int { LN2 = 0, INV_LN2, INV_LN10, PI, HALF_PI, QUARTER_PI, THREE_QUARTER_PI };

template <class T>
struct Table {
    const T* t;
    __device__ __forceinline__ int at(int i) const { return static_cast<int>(t[i]); }
    __device__ __forceinline__ T value(int i) const { return t[i]; }
    // This lane's term of a constant at W terms (the twin's _const).
    template <int W>
    __device__ __forceinline__ T constant(Constant c, int lane) const {
        return lane < W ? t[at(H_CONST) + static_cast<int>(c) * W + lane] : T(0);
    }
    __device__ __forceinline__ int plan(int w, int entry) const { return at(H_PLANS + PLAN_STRIDE * w + entry); }
};

// ---------------------------------------------------------------------------------------------
// IEEE functions of the leading term: only their special values (exact in C99 Annex F, CUDA and
// NumPy alike) and signs are used, as the twin's `ieee(x0)` (the value of the non-finite rule).
#define EXPANSIONS_LEADING(name)                                                              \
    __device__ __forceinline__ double leading_##name(double v) { return ::name(v); }           \
    __device__ __forceinline__ float leading_##name(float v) { return ::name##f(v); }
EXPANSIONS_LEADING(exp)
EXPANSIONS_LEADING(expm1)
EXPANSIONS_LEADING(log)
EXPANSIONS_LEADING(log1p)
EXPANSIONS_LEADING(log2)
EXPANSIONS_LEADING(log10)
EXPANSIONS_LEADING(sin)
EXPANSIONS_LEADING(cos)
EXPANSIONS_LEADING(tan)
EXPANSIONS_LEADING(atan)
EXPANSIONS_LEADING(asin)
EXPANSIONS_LEADING(acos)
EXPANSIONS_LEADING(sinh)
EXPANSIONS_LEADING(cosh)
EXPANSIONS_LEADING(tanh)
#undef EXPANSIONS_LEADING
__device__ __forceinline__ double leading_atan2(double y, double x) { return ::atan2(y, x); }
__device__ __forceinline__ float leading_atan2(float y, float x) { return ::atan2f(y, x); }
__device__ __forceinline__ double leading_pow(double x, double y) { return ::pow(x, y); }
__device__ __forceinline__ float leading_pow(float x, float y) { return ::powf(x, y); }

// Exact operations on a term: round half to even (np.rint), remainder (np.fmod).
__device__ __forceinline__ double rint_of(double v) { return ::rint(v); }
__device__ __forceinline__ float rint_of(float v) { return ::rintf(v); }
__device__ __forceinline__ double fmod_of(double a, double b) { return ::fmod(a, b); }
__device__ __forceinline__ float fmod_of(float a, float b) { return ::fmodf(a, b); }

// np.sign: +-1, +0 for zeros, NaN for NaN.
template <class T>
__device__ __forceinline__ T sign_of(T v) {
    return v > T(0) ? T(1) : (v < T(0) ? T(-1) : (v == T(0) ? T(0) : v));
}

template <class T>
__device__ __forceinline__ bool is_inf(T v) { return !is_finite(v) && !is_nan(v); }

// np.signbit, from the bits.
template <class T>
__device__ __forceinline__ bool signbit_of(T v) { return (FloatBits<T>::to_bits(v) & FloatBits<T>::SIGN) != 0; }

__host__ __device__ constexpr int working_terms(int R) { return R + 1 < 32 ? R + 1 : 32; }
__host__ __device__ constexpr int reduction_terms(int W) { return 2 * W + 2 < 32 ? 2 * W + 2 : 32; }

// ---------------------------------------------------------------------------------------------
// Lane-wise operations on an expansion of K terms (the twin's array of K columns; lanes >= K are
// padding and stay +0).

// _width(x, K): the first K terms.
template <int K, class T>
__device__ __forceinline__ T cut(T v, int lane) { return lane < K ? v : T(0); }
// -x on K columns (zero terms become -0, as NumPy's negative).
template <int K, class T>
__device__ __forceinline__ T neg(T v, int lane) { return lane < K ? negated(v) : v; }
// x * c on K columns.
template <int K, class T>
__device__ __forceinline__ T times(T v, T c, int lane) { return lane < K ? mul_rn(v, c) : v; }
// _float_col(v, 1): a float as a one-term expansion.
template <class T>
__device__ __forceinline__ T col(T v, int lane) { return lane == 0 ? v : T(0); }
// _const_one(n, K): (1, 0, ..., 0).
template <class T>
__device__ __forceinline__ T one(int lane) { return lane == 0 ? T(1) : T(0); }
// Whether terms 1..K-1 are all zero (x[:, 1:] == 0).all()).
template <int K, int G, class T>
__device__ __forceinline__ bool tail_zero(T v, int lane) { return !group_any<K, G>(lane >= 1 && v != T(0)); }

// The library's operations at w = max(N, M) terms, each followed by the renormalization: the twin's
// _add, _mul, _div (N and M: the operands' widths) and _sqrt.
template <class T, int N, int M, int G>
__device__ __noinline__ T e_add(T x, T y, int lane) {
    constexpr int w = N > M ? N : M;
    return renormalize_group<T, w, w, G>(add_safe_group<T, N, M, w, G>(x, y, lane), lane);
}
template <class T, int N, int M, int G>
__device__ __noinline__ T e_mul(T x, T y, int lane) {
    constexpr int w = N > M ? N : M;
    return renormalize_group<T, w, w, G>(mul_truncated_group<T, N, M, w, G>(x, y, lane), lane);
}
template <class T, int N, int M, int R, int G, int... S>
__device__ __forceinline__ T div_steps(T x, T y, int lane, Steps<S...>) {
    return newton_div_group<T, N, M, R, G, S...>(x, y, lane);
}
template <class T, int N, int M, int G>
__device__ __noinline__ T e_div(T x, T y, int lane) {
    constexpr int w = N > M ? N : M;
    return renormalize_group<T, w, w, G>(div_steps<T, N, M, w, G>(x, y, lane, typename NewtonSteps<T, w>::type{}),
                                         lane);
}
template <class T, int K, int R, int G, int... S>
__device__ __forceinline__ T sqrt_steps(T x, int lane, Steps<S...>) {
    return newton_sqrt_group<T, K, R, G, S...>(x, lane);
}
template <class T, int K, int G>
__device__ __noinline__ T e_sqrt(T x, int lane) {
    return renormalize_group<T, K, K, G>(sqrt_steps<T, K, K, G>(x, lane, typename NewtonSteps<T, K>::type{}), lane);
}

// Row k of a table of Taylor coefficients of w terms at offset off.
template <int w, class T>
__device__ __forceinline__ T coefficient(Table<T> tab, int off, int k, int lane) {
    return lane < w ? tab.value(off + k * w + lane) : T(0);
}

// sum_k c_k t^k by Horner's rule, n coefficients of w terms at offset off.  Twin: _horner.
template <class T, int w, int G>
__device__ __noinline__ T horner(Table<T> tab, int off, int n, T t, int lane) {
    T acc = coefficient<w>(tab, off, n - 1, lane);
#pragma unroll 1
    for (int k = n - 2; k >= 0; --k) {
        acc = e_add<T, w, w, G>(e_mul<T, w, w, G>(acc, t, lane), coefficient<w>(tab, off, k, lane), lane);
    }
    return acc;
}

// Halvings of this group: the plan's s, fewer for a small r.  Twin: _halvings.
template <class T>
__device__ __forceinline__ int halvings(T r0, int s) {
    const int v = leading_exponent(r0) + s + 2;
    return v < 0 ? 0 : (v > s ? s : v);
}

// ---------------------------------------------------------------------------------------------
// Exponential

// expm1(r) for |r| <= 1/2 (w terms): Taylor on r 2^-s, then s doublings.  Twin: _expm1_small.
template <class T, int w, int G>
__device__ __noinline__ T expm1_small(T r, Table<T> tab, int lane) {
    const int s = tab.plan(w, P_EXP_S);
    const int n = tab.plan(w, P_EXP_N);
    const int off = tab.plan(w, P_EXP_OFF);
    const int rows_s = halvings(shfl<G>(r, 0), s);
    const T t = scale(r, -rows_s);
    T e = e_mul<T, w, w, G>(t, horner<T, w, G>(tab, off, n, t, lane), lane);
#pragma unroll 1
    for (int i = 0; i < s; ++i) {
        const T d = e_add<T, w, w, G>(times<w>(e, T(2), lane), e_mul<T, w, w, G>(e, e, lane), lane);
        if (i < rows_s) e = d;
    }
    return e;
}

// (m, k) with exp(x) = m 2^k, m = 1 + expm1(x - k ln2).  Twin: _exp_parts.
template <class T, int w, int G>
__device__ __forceinline__ T exp_parts(T x, Table<T> tab, int lane, int& k) {
    const T ln2 = tab.template constant<w>(LN2, lane);
    const T kf = rint_of(div_rn(shfl<G>(x, 0), tab.value(tab.at(H_CONST) + LN2 * w)));
    const T r = e_add<T, w, w, G>(x, neg<w>(e_mul<T, 1, w, G>(col(kf, lane), ln2, lane), lane), lane);
    const T m = e_add<T, w, w, G>(one<T>(lane), expm1_small<T, w, G>(r, tab, lane), lane);
    k = static_cast<int>(kf);
    return m;
}

// exp of finite x at w terms, 0 and inf beyond the limits.  Twin: _exp_w.
template <class T, int w, int G>
__device__ __forceinline__ T exp_w(T x, Table<T> tab, int lane) {
    const T x0 = shfl<G>(x, 0);
    const bool mid = x0 >= tab.value(H_EXP_LO) && x0 <= tab.value(H_EXP_HI);
    T out = T(0);
    if (warp_any(mid)) {
        int k;
        const T m = exp_parts<T, w, G>(x, tab, lane, k);
        const T v = scale(m, k);
        if (mid) out = v;
    }
    if (x0 > tab.value(H_EXP_HI) && lane == 0) out = infinity<T>(false);
    return out;
}

// expm1 of finite x at w terms: the series for |x| <= 1/2, exp(x) - 1 beyond.  Twin: _expm1_w.
template <class T, int w, int G>
__device__ __forceinline__ T expm1_w(T x, Table<T> tab, int lane) {
    const bool small = magnitude(shfl<G>(x, 0)) <= T(0.5);
    T out = T(0);
    if (warp_any(small)) {
        const T v = expm1_small<T, w, G>(x, tab, lane);
        if (small) out = v;
    }
    if (warp_any(!small)) {
        const T v = e_add<T, w, w, G>(exp_w<T, w, G>(x, tab, lane), neg<w>(one<T>(lane), lane), lane);
        if (!small) out = v;
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// Logarithm

// Terms of a float series whose ratio is below 2^-l, to 2^-(p+1).  Twin: _series_terms.
__host__ __device__ constexpr int series_terms(int p, int l) { return (p + 1 + l - 1) / l; }

// The widths a tapered Horner step may take, ascending: 1, then 2, 4, 8, ... below w, then w.
// Twin: _taper_widths.
__host__ __device__ constexpr int next_taper_width(int v, int w) { return 2 * v < w ? 2 * v : w; }

// The Horner steps k, k-1, ... of the tapered atanh series at width v (while the plan's widths[k] is
// v), then those at the next widths: acc = acc t2 + 1/(2k+1), each operand cut to v terms.  k: the
// next step's index (-1: done).  Twin: the loop of _log_series.
template <class T, int v, int w, int G>
__device__ __forceinline__ T log_horner(Table<T> tab, T t2, T acc, int k, int lane) {
    const int widths = tab.at(H_LOG_WIDTHS);
    const int coef = tab.at(H_LOG_COEF);
#pragma unroll 1
    for (; k >= 0 && tab.at(widths + k) == v; --k) {
        const T c = lane < v ? tab.value(coef + k * w + lane) : T(0);
        if constexpr (v == 1) {  // plain floats: the product and the sum each rounded once
            acc = col(add_rn(mul_rn(acc, t2), c), lane);  // lane 0's terms
        } else {
            acc = e_add<T, v, v, G>(e_mul<T, v, v, G>(cut<v>(acc, lane), cut<v>(t2, lane), lane), c, lane);
        }
    }
    if constexpr (v < w) {
        return log_horner<T, next_taper_width(v, w), w, G>(tab, t2, acc, k, lane);
    } else {
        return acc;
    }
}

// log c + 2 atanh(num / den) (w terms): u = (2 num) / den, t2 = u u / 4, the tapered Horner rule of the
// plan, log c + u acc.  Twin: _log_series.
template <class T, int w, int G>
__device__ __noinline__ T log_series(T num, T den, T logc, Table<T> tab, int lane) {
    const int n = tab.at(H_LOG_N);
    const T u = e_div<T, w, w, G>(times<w>(num, T(2), lane), den, lane);
    const T t2 = times<w>(e_mul<T, w, w, G>(u, u, lane), T(0.25), lane);
    const int first = tab.at(tab.at(H_LOG_WIDTHS) + n - 1);
    const T c = lane < first ? tab.value(tab.at(H_LOG_COEF) + (n - 1) * w + lane) : T(0);
    const T acc = log_horner<T, 1, w, G>(tab, t2, c, n - 2, lane);
    return e_add<T, w, w, G>(logc, e_mul<T, w, w, G>(u, acc, lane), lane);
}

// This lane's term of the log of the centre of index i (a term; row i - first of the centres' table, w
// terms).  The row is clamped to the table (NaN to its first row) before the conversion to int: the
// groups outside the body (zeros, NaN, infinities) compute on their own x and discard the result.
template <class T, int w>
__device__ __forceinline__ T centre_log(Table<T> tab, T i, int lane) {
    T row = i - tab.value(H_LOG_FIRST);
    const T last = tab.value(H_LOG_COUNT) - T(1);
    row = row > T(0) ? row : T(0);
    row = row < last ? row : last;
    return lane < w ? tab.value(tab.at(H_LOG_CENTRES) + static_cast<int>(row) * w + lane) : T(0);
}

// log m for m0 in (RN(sqrt 2)/2, RN(sqrt 2)] (w terms): the centre c = i 2^-b nearest m0, t = (m - c) /
// (m + c), log c + 2 atanh t.  Twin: _log_centred.
template <class T, int w, int G>
__device__ __forceinline__ T log_centred(T m, Table<T> tab, int lane) {
    const int b = tab.at(H_LOG_B);
    const T i = rint_of(mul_rn(shfl<G>(m, 0), scale(T(1), b)));
    const T c = mul_rn(i, scale(T(1), -b));
    const T logc = centre_log<T, w>(tab, i, lane);
    return log_series<T, w, G>(e_add<T, w, 1, G>(m, col(negated(c), lane), lane),
                               e_add<T, w, 1, G>(m, col(c, lane), lane), logc, tab, lane);
}

// log1p x for |x0| <= 1/4 without forming 1 + x (w terms): j = rint(x0 2^b), d = j 2^-b, t = (x - d) /
// (x + (2 + d)), log(1 + d) + 2 atanh t.  Twin: _log1p_centred.
template <class T, int w, int G>
__device__ __forceinline__ T log1p_centred(T x, Table<T> tab, int lane) {
    const int b = tab.at(H_LOG_B);
    const T j = rint_of(mul_rn(shfl<G>(x, 0), scale(T(1), b)));
    const T d = mul_rn(j, scale(T(1), -b));
    const T logc = centre_log<T, w>(tab, add_rn(j, scale(T(1), b)), lane);
    return log_series<T, w, G>(e_add<T, w, 1, G>(x, col(negated(d), lane), lane),
                               e_add<T, w, 1, G>(x, col(add_rn(T(2), d), lane), lane), logc, tab, lane);
}

// The reduced argument m and e with x = m 2^e, m in [sqrt(1/2), sqrt(2)): the twin's _log_parts before
// its call of _log_centred.
template <class T, int w, int G>
__device__ __forceinline__ T log_argument(T x, Table<T> tab, int lane, int& e) {
    e = leading_exponent(shfl<G>(x, 0));
    T m = scale(x, -e);
    const bool up = shfl<G>(m, 0) > tab.value(H_SQRT2);
    e += up ? 1 : 0;
    if (up) m = mul_rn(m, T(0.5));
    return m;
}

// log x = y + e ln2.  Twin: _log_w.
template <class T, int w, int G>
__device__ __forceinline__ T log_w(T x, Table<T> tab, int lane) {
    int e;
    const T y = log_centred<T, w, G>(log_argument<T, w, G>(x, tab, lane, e), tab, lane);
    return e_add<T, w, w, G>(y, e_mul<T, 1, w, G>(col(static_cast<T>(e), lane),
                                                  tab.template constant<w>(LN2, lane), lane), lane);
}

// log1p of finite x > -1: the centred series on x for |x| <= 1/4, log(1 + x) beyond.  Twin: _log1p_w.
template <class T, int w, int G>
__device__ __forceinline__ T log1p_w(T x, Table<T> tab, int lane) {
    const bool small = magnitude(shfl<G>(x, 0)) <= T(0.25);
    T out = T(0);
    if (warp_any(small)) {
        const T v = log1p_centred<T, w, G>(small ? x : T(0), tab, lane);
        if (small) out = v;
    }
    if (warp_any(!small)) {
        const T v = log_w<T, w, G>(e_add<T, w, w, G>(small ? T(0) : x, one<T>(lane), lane), tab, lane);
        if (!small) out = v;
    }
    return out;
}

// log2 x = e + log(m)/ln2.  Twin: _log2_w.
template <class T, int w, int G>
__device__ __forceinline__ T log2_w(T x, Table<T> tab, int lane) {
    int e;
    const T y = log_centred<T, w, G>(log_argument<T, w, G>(x, tab, lane, e), tab, lane);
    return e_add<T, 1, w, G>(col(static_cast<T>(e), lane),
                             e_mul<T, w, w, G>(y, tab.template constant<w>(INV_LN2, lane), lane), lane);
}

// log10 x = log x / ln 10.  Twin: _log10_w.
template <class T, int w, int G>
__device__ __forceinline__ T log10_w(T x, Table<T> tab, int lane) {
    return e_mul<T, w, w, G>(log_w<T, w, G>(x, tab, lane), tab.template constant<w>(INV_LN10, lane), lane);
}

// ---------------------------------------------------------------------------------------------
// Trigonometric functions

// (r, q): x = r + (q + 4j) pi/2, |r| <= pi/4, by Payne-Hanek on each term at M terms (G >= M).
// Twin: _reduce_half_pi.
template <class T, int w, int G>
__device__ __noinline__ T reduce_half_pi(T x, Table<T> tab, int lane, int& q) {
    constexpr int M = reduction_terms(w);
    constexpr int P = FloatBits<T>::P;
    constexpr int S = P + 2;
    const int rows = tab.at(H_ROWS);
    const int table = tab.at(H_PH_TABLE);
    const T scaled = lane < M ? tab.value(tab.at(H_PH) + lane) : T(0);
    const T four = pow2<T>(S + 2);
    T acc = T(0);
#pragma unroll 1
    for (int j = 0; j < w; ++j) {
        const T xj = shfl<G>(x, j);
        const int E = leading_exponent(xj) - (P - 1);
        const bool big = E > 2 && xj != T(0);
        const T m = big ? mul_rn(xj, pow2<T>(-E)) : xj;
        int row = E - 3;
        row = row < 0 ? 0 : (row > rows - 1 ? rows - 1 : row);
        const T F = big ? (lane < M ? tab.value(table + row * M + lane) : T(0)) : scaled;
        T c = e_mul<T, 1, M, G>(col(m, lane), F, lane);
        const T c0 = shfl<G>(c, 0);
        c = e_add<T, M, 1, G>(c, col(mul_rn(negated(four), rint_of(div_rn(c0, four))), lane), lane);
        acc = e_add<T, M, M, G>(acc, c, lane);
    }
    const T unit = pow2<T>(S);
    const T k = rint_of(div_rn(shfl<G>(acc, 0), unit));
    acc = e_add<T, M, 1, G>(acc, col(mul_rn(negated(k), unit), lane), lane);
    const T k2 = rint_of(div_rn(shfl<G>(acc, 0), unit));  // a tie broken the other way by the tail
    acc = e_add<T, M, 1, G>(acc, col(mul_rn(negated(k2), unit), lane), lane);
    const T y = scale(acc, -S);
    const T half_pi = lane < M ? tab.value(tab.at(H_HALF_PI_M) + lane) : T(0);
    const T r = cut<w>(e_mul<T, M, M, G>(y, half_pi, lane), lane);
    const long long kk = static_cast<long long>(add_rn(k, k2));
    q = static_cast<int>(((kk % 4) + 4) % 4);
    return renormalize_group<T, w, w, G>(r, lane);
}

// (sin r, 1 - cos r) for |r| <= pi/4 (w terms): Taylor on r 2^-s, then s doublings.
// Twin: _sincos_small.
template <class T, int w, int G>
__device__ __noinline__ void sincos_small(T r, Table<T> tab, int lane, T& sn, T& vc) {
    const int s = tab.plan(w, P_SIN_S);
    const int n = tab.plan(w, P_SIN_N);
    const int rows_s = halvings(shfl<G>(r, 0), s);
    const T t = scale(r, -rows_s);
    const T t2 = e_mul<T, w, w, G>(t, t, lane);
    sn = e_mul<T, w, w, G>(t, horner<T, w, G>(tab, tab.plan(w, P_SIN_OFF), n, t2, lane), lane);
    vc = e_mul<T, w, w, G>(t2, horner<T, w, G>(tab, tab.plan(w, P_VERSIN_OFF), n, t2, lane), lane);
#pragma unroll 1
    for (int i = 0; i < s; ++i) {
        const T a = times<w>(e_mul<T, w, w, G>(sn, e_add<T, w, w, G>(one<T>(lane), neg<w>(vc, lane), lane), lane),
                             T(2), lane);
        const T b = times<w>(e_mul<T, w, w, G>(sn, sn, lane), T(2), lane);
        if (i < rows_s) {
            sn = a;
            vc = b;
        }
    }
}

// (sin x, cos x) of finite x at w terms: no reduction for |x0| <= pi/4, else Payne-Hanek.
// Twin: _sincos_w.
template <class T, int w, int G>
__device__ __forceinline__ void sincos_w(T x, Table<T> tab, int lane, T& sin, T& cos) {
    const bool near = magnitude(shfl<G>(x, 0)) <= tab.value(H_QUARTER_PI);
    T r = x;
    int q = 0;
    if (warp_any(!near)) {
        int qq;
        const T rr = reduce_half_pi<T, w, G>(x, tab, lane, qq);
        if (!near) {
            r = rr;
            q = qq;
        }
    }
    T sn, vc;
    sincos_small<T, w, G>(r, tab, lane, sn, vc);
    const T cs = e_add<T, w, w, G>(one<T>(lane), neg<w>(vc, lane), lane);
    sin = q == 0 ? sn : (q == 1 ? cs : (q == 2 ? neg<w>(sn, lane) : neg<w>(cs, lane)));
    cos = q == 0 ? cs : (q == 1 ? neg<w>(sn, lane) : (q == 2 ? neg<w>(cs, lane) : sn));
}

// Twins: _sin_w, _cos_w, _tan_w.
template <class T, int w, int G>
__device__ __forceinline__ T sin_w(T x, Table<T> tab, int lane) {
    T s, c;
    sincos_w<T, w, G>(x, tab, lane, s, c);
    return s;
}
template <class T, int w, int G>
__device__ __forceinline__ T cos_w(T x, Table<T> tab, int lane) {
    T s, c;
    sincos_w<T, w, G>(x, tab, lane, s, c);
    return c;
}
template <class T, int w, int G>
__device__ __forceinline__ T tan_w(T x, Table<T> tab, int lane) {
    T s, c;
    sincos_w<T, w, G>(x, tab, lane, s, c);
    return e_div<T, w, w, G>(s, c, lane);
}

// ---------------------------------------------------------------------------------------------
// Inverse trigonometric functions

// A float start of atan(x0), |x0| <= 1, IEEE operations only.  Twin: _atan_start.
template <class T>
__device__ __forceinline__ T atan_start(T x0) {
    constexpr int n = series_terms(FloatBits<T>::P, 4);
    T t = x0;
#pragma unroll
    for (int i = 0; i < 2; ++i) t = div_rn(t, add_rn(T(1), sqrt_rn(add_rn(T(1), mul_rn(t, t)))));
    const T t2 = mul_rn(t, t);
    T acc = div_rn(T((n - 1) % 2 == 0 ? 1 : -1), T(2 * n - 1));
#pragma unroll 1
    for (int k = n - 2; k >= 0; --k) acc = add_rn(mul_rn(acc, t2), div_rn(T(k % 2 == 0 ? 1 : -1), T(2 * k + 1)));
    return mul_rn(mul_rn(t, acc), T(4));
}

// One Newton step on tan at wi terms: y <- y + cos y (x cos y - sin y).  Twin: the loop body of
// _atan_unit.
template <class T, int wi, int G>
__device__ __noinline__ T atan_step(T x, T y, Table<T> tab, int lane) {
    const T yi = cut<wi>(y, lane);
    const T xi = cut<wi>(x, lane);
    T sn, vc;
    sincos_small<T, wi, G>(yi, tab, lane, sn, vc);
    const T c = e_add<T, wi, wi, G>(one<T>(lane), neg<wi>(vc, lane), lane);
    const T d = e_add<T, wi, wi, G>(e_mul<T, wi, wi, G>(xi, c, lane), neg<wi>(sn, lane), lane);
    return e_add<T, wi, wi, G>(yi, e_mul<T, wi, wi, G>(c, d, lane), lane);
}

template <class T, int wi, int w, int G>
__device__ __forceinline__ T atan_chain(T x, T y, Table<T> tab, int lane) {
    const T next = atan_step<T, wi, G>(x, y, tab, lane);
    if constexpr (wi < w) {
        return atan_chain<T, (2 * wi < w ? 2 * wi : w), w, G>(x, next, tab, lane);
    } else {
        return next;
    }
}

// atan(x) for |x| <= 1 (w terms), Newton on tan, terms doubling.  Twin: _atan_unit.
template <class T, int w, int G>
__device__ __forceinline__ T atan_unit(T x, Table<T> tab, int lane) {
    const T y = col(atan_start(shfl<G>(x, 0)), lane);
    return atan_step<T, w, G>(x, atan_chain<T, 2, w, G>(x, y, tab, lane), tab, lane);
}

// atan of finite x at w terms (zeros keep their sign).  Twin: _atan_w (its two branches share one
// call of _atan_unit here: on x for |x| <= 1, on 1/x beyond).
template <class T, int w, int G>
__device__ __forceinline__ T atan_w(T x, Table<T> tab, int lane) {
    const T x0 = shfl<G>(x, 0);
    const bool small = magnitude(x0) <= T(1);
    T z = x;
    if (warp_any(!small)) {
        const T inv = e_div<T, w, w, G>(one<T>(lane), x, lane);
        if (!small) z = inv;
    }
    const T a = atan_unit<T, w, G>(z, tab, lane);
    T out = small ? a : T(0);
    if (warp_any(!small)) {
        const T hp = times<w>(tab.template constant<w>(HALF_PI, lane), sign_of(x0), lane);
        const T b = e_add<T, w, w, G>(hp, neg<w>(a, lane), lane);
        if (!small) out = b;
    }
    if (x0 == T(0)) out = x;
    return out;
}

// k >= 0 with d 2^(2k) of order 1.  Twin: _lift.
template <class T>
__device__ __forceinline__ int lift(T d0) {
    const int k = -leading_exponent(d0);
    return k > 0 ? k / 2 : 0;
}

// asin of finite x, |x| < 1.  Twin: _asin_w.
template <class T, int w, int G>
__device__ __forceinline__ T asin_w(T x, Table<T> tab, int lane) {
    const bool negative = shfl<G>(x, 0) < T(0);
    const T ax = negative ? neg<w>(x, lane) : x;
    const T d = e_add<T, w, w, G>(one<T>(lane), neg<w>(ax, lane), lane);
    const int k = lift(shfl<G>(d, 0));
    const T z = e_div<T, w, w, G>(
        ax, e_sqrt<T, w, G>(e_mul<T, w, w, G>(scale(d, 2 * k), e_add<T, w, w, G>(one<T>(lane), ax, lane), lane), lane),
        lane);
    const T a = atan_w<T, w, G>(scale(z, k), tab, lane);
    return negative ? neg<w>(a, lane) : a;
}

// acos of finite x, -1 < x <= 1.  Twin: _acos_w.
template <class T, int w, int G>
__device__ __forceinline__ T acos_w(T x, Table<T> tab, int lane) {
    const T d = e_add<T, w, w, G>(one<T>(lane), neg<w>(x, lane), lane);
    const int k = lift(shfl<G>(d, 0));
    const T t = scale(e_sqrt<T, w, G>(e_div<T, w, w, G>(scale(d, 2 * k), e_add<T, w, w, G>(one<T>(lane), x, lane), lane),
                                      lane),
                      -k);
    return times<w>(atan_w<T, w, G>(t, tab, lane), T(2), lane);
}

// atan2 of finite y, x with y != 0 or x != 0.  Twin: _atan2_w (near_x_axis and near_y_axis share
// one quotient and one atan here: y/x where |y0| <= |x0|, x/y beyond).
template <class T, int w, int G>
__device__ __forceinline__ T atan2_w(T y, T x, Table<T> tab, int lane) {
    const T y0 = shfl<G>(y, 0);
    const T x0 = shfl<G>(x, 0);
    const bool flat = magnitude(y0) <= magnitude(x0);
    const T a = atan_w<T, w, G>(e_div<T, w, w, G>(flat ? y : x, flat ? x : y, lane), tab, lane);
    T out = T(0);
    if (warp_any(flat)) {
        const T pi = times<w>(tab.template constant<w>(PI, lane), signbit_of(y0) ? T(-1) : T(1), lane);
        const T left = e_add<T, w, w, G>(pi, a, lane);
        if (flat) out = x0 < T(0) ? left : a;
    }
    if (warp_any(!flat)) {
        const T hp = times<w>(tab.template constant<w>(HALF_PI, lane), sign_of(y0), lane);
        const T b = e_add<T, w, w, G>(hp, neg<w>(a, lane), lane);
        if (!flat) out = b;
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// Hyperbolic functions

// e^|x|/2 + sign e^-|x|/2 for finite x (w terms).  Twin: _sinh_cosh_big.
template <class T, int w, int G>
__device__ __forceinline__ T sinh_cosh_big(T x, T sign, Table<T> tab, int lane) {
    const T ax = shfl<G>(x, 0) < T(0) ? neg<w>(x, lane) : x;
    int k;
    const T m = exp_parts<T, w, G>(ax, tab, lane, k);
    const T inv = e_div<T, w, w, G>(one<T>(lane), m, lane);
    return e_add<T, w, w, G>(scale(m, k - 1), times<w>(scale(inv, -k - 1), sign, lane), lane);
}

// Twin: _sinh_w.
template <class T, int w, int G>
__device__ __forceinline__ T sinh_w(T x, Table<T> tab, int lane) {
    const T x0 = shfl<G>(x, 0);
    const bool small = magnitude(x0) <= T(0.5);
    const T limit = tab.value(H_HYP_LIMIT);
    const bool near = small && x0 != T(0);
    T out = T(0);
    if (warp_any(near)) {
        const T e = expm1_small<T, w, G>(x, tab, lane);
        const T two = times<w>(one<T>(lane), T(2), lane);
        const T v = times<w>(e_div<T, w, w, G>(e_mul<T, w, w, G>(e, e_add<T, w, w, G>(e, two, lane), lane),
                                               e_add<T, w, w, G>(e, one<T>(lane), lane), lane),
                             T(0.5), lane);
        if (near) out = v;
    }
    const bool mid = !small && magnitude(x0) <= limit;
    if (warp_any(mid)) {
        const T v = times<w>(sinh_cosh_big<T, w, G>(x, T(-1), tab, lane), sign_of(x0), lane);
        if (mid) out = v;
    }
    if (x0 == T(0)) out = x;
    if (magnitude(x0) > limit) out = lane == 0 ? infinity<T>(x0 < T(0)) : T(0);
    return out;
}

// Twin: _cosh_w.
template <class T, int w, int G>
__device__ __forceinline__ T cosh_w(T x, Table<T> tab, int lane) {
    const T x0 = shfl<G>(x, 0);
    const T limit = tab.value(H_HYP_LIMIT);
    const bool mid = magnitude(x0) <= limit;
    T out = T(0);
    if (warp_any(mid)) {
        const T v = sinh_cosh_big<T, w, G>(x, T(1), tab, lane);
        if (mid) out = v;
    }
    if (magnitude(x0) > limit) out = lane == 0 ? infinity<T>(false) : T(0);
    return out;
}

// tanh x = sign(x) (-e / (2 + e)), e = expm1(-2|x|).  Twin: _tanh_w.
template <class T, int w, int G>
__device__ __forceinline__ T tanh_w(T x, Table<T> tab, int lane) {
    const T x0 = shfl<G>(x, 0);
    const bool negative = x0 < T(0);
    const T ax = negative ? neg<w>(x, lane) : x;
    const bool body = x0 != T(0);
    T out = T(0);
    if (warp_any(body)) {
        const T e = expm1_w<T, w, G>(times<w>(ax, T(-2), lane), tab, lane);
        const T two = times<w>(one<T>(lane), T(2), lane);
        const T v = neg<w>(e_div<T, w, w, G>(e, e_add<T, w, w, G>(two, e, lane), lane), lane);
        if (body) out = v;
    }
    out = times<w>(out, negative ? T(-1) : T(1), lane);
    if (x0 == T(0)) out = x;
    return out;
}

// ---------------------------------------------------------------------------------------------
// Power

// |x|^y for finite x != 0 and finite y (w terms): exp(y log|x|).  Twin: _pow_w.
template <class T, int w, int G>
__device__ __forceinline__ T pow_w(T x, T y, Table<T> tab, int lane) {
    const T ax = shfl<G>(x, 0) < T(0) ? neg<w>(x, lane) : x;
    return exp_w<T, w, G>(e_mul<T, w, w, G>(y, log_w<T, w, G>(ax, tab, lane), lane), tab, lane);
}

// ---------------------------------------------------------------------------------------------
// The frames of the public twins: special rows, the body at W terms, rounding to R, the non-finite
// rule.  Twins: _unary, _finish, atan2, pow.

template <class T>
struct SpecialRows {
    bool rows;  // this group's operand is a special value of the function (the twin's special_rows)
    T value;    // its result's leading term (the others are 0)
};

// The lanes of a group for the functions at R terms (W = working_terms(R) terms), and for sin, cos
// and tan (M = reduction_terms(W) terms in the Payne-Hanek sums).
__host__ __device__ constexpr int lanes(int R) { return group_width(working_terms(R)); }
__host__ __device__ constexpr int trig_lanes(int R) { return group_width(reduction_terms(working_terms(R))); }

// The frame of a unary function on this lane's term xl of an R-term operand, in a group of G lanes:
// ieee(x0) is the value of the non-finite rule, special(xl, x0, leading, lane) -> SpecialRows (called
// by every lane: it may vote), body(x, lane) -> this lane's term at W terms, fix(out, xl, x0, lane) ->
// the result after the rows the twin overwrites with constants.  Twin: _unary and _finish.
template <class T, int R, int G, class Ieee, class Special, class Body, class Fix>
__device__ __forceinline__ T unary_group(T xl, int lane, Ieee ieee, Special special_of, Body body, Fix fix) {
    constexpr int W = working_terms(R);
    const T x0 = shfl<G>(xl, 0);
    const T leading = ieee(x0);
    const bool finite = !group_any<R, G>(!is_finite(xl));
    const SpecialRows<T> sp = special_of(xl, x0, leading, lane);
    const bool special = sp.rows && finite;
    const bool regular = finite && !special;
    T o = T(0);
    if (warp_any(regular)) {
        const T v = body(xl, lane);
        if (regular) o = v;
    }
    T r = renormalize_group<T, W, R, G>(o, lane);
    r = nonfinite_epilogue<T, R, G>(r, leading, lane, operand_status<R, G>(xl));
    if (special) r = lane == 0 ? sp.value : T(0);
    return fix(r, xl, x0, lane);
}

// A constant at W terms times a sign, rounded to R terms, on the groups `rows` (else r unchanged):
// the twin's renormalize(_constant_rows(name, ..., sign), R).
template <class T, int R, int G>
__device__ __forceinline__ T constant_rows(T r, bool rows, Constant c, T sign, const T* table, int lane) {
    constexpr int W = working_terms(R);
    if (warp_any(rows)) {
        const Table<T> tab{table};
        const T v = renormalize_group<T, W, R, G>(times<W>(tab.template constant<W>(c, lane), sign, lane), lane);
        if (rows) r = v;
    }
    return r;
}

// The rows of a unary function without special rows (value: the leading term's IEEE result).
template <class T>
struct NoSpecial {
    __device__ __forceinline__ SpecialRows<T> operator()(T, T, T leading, int) const { return {false, leading}; }
};
// Rows whose leading term is zero: the result is (leading, 0, ...) (sin(+-0) = +-0, ...).
template <class T>
struct ZeroSpecial {
    __device__ __forceinline__ SpecialRows<T> operator()(T, T x0, T leading, int) const {
        return {x0 == T(0), leading};
    }
};
// Special rows of log, log2, log10: x0 <= 0 gives -inf (zero) or NaN (negative).  Twin: _log_domain.
template <class T>
struct LogDomain {
    __device__ __forceinline__ SpecialRows<T> operator()(T, T x0, T, int) const {
        return {x0 <= T(0), x0 == T(0) ? infinity<T>(true) : quiet_nan<T>()};
    }
};
struct NoFix {
    template <class T>
    __device__ __forceinline__ T operator()(T r, T, T, int) const { return r; }
};

// Rows with |x| > 1 and rows with |x| == 1 exactly, of R terms.  Twin: _unit_domain.
template <class T, int R, int G>
__device__ __forceinline__ void unit_domain(T xl, T x0, int lane, bool& outside, bool& at_one) {
    const T tail = shfl<G>(xl, 1);
    const T a0 = magnitude(x0);
    outside = a0 > T(1) || (a0 == T(1) && tail != T(0) && sign_of(tail) == sign_of(x0));
    const bool zero_tail = tail_zero<R, G>(xl, lane);  // every lane votes (no short circuit)
    at_one = a0 == T(1) && zero_tail;
}

// The functions on this lane's term xl of an R-term operand in a group of G lanes (G >= lanes(R),
// >= trig_lanes(R) for sin, cos, tan), `table` the device table: this lane's term of the R-term
// result.  What the kernels of kernels.cu run per group (and what a fused program calls).

// Twin: expansions.cpu.elementary.exp.
template <class T, int R, int G>
__device__ __forceinline__ T exp_group(T xl, int lane, const T* table) {
    constexpr int W = working_terms(R);
    const Table<T> tab{table};
    return unary_group<T, R, G>(xl, lane, [](T v) { return leading_exp(v); }, NoSpecial<T>{},
                                [&](T v, int l) { return exp_w<T, W, G>(v, tab, l); }, NoFix{});
}

// Twin: expansions.cpu.elementary.expm1.
template <class T, int R, int G>
__device__ __forceinline__ T expm1_group(T xl, int lane, const T* table) {
    constexpr int W = working_terms(R);
    const Table<T> tab{table};
    return unary_group<T, R, G>(xl, lane, [](T v) { return leading_expm1(v); }, ZeroSpecial<T>{},
                                [&](T v, int l) { return expm1_w<T, W, G>(v, tab, l); }, NoFix{});
}

// Twin: expansions.cpu.elementary.log.
template <class T, int R, int G>
__device__ __forceinline__ T log_group(T xl, int lane, const T* table) {
    constexpr int W = working_terms(R);
    const Table<T> tab{table};
    return unary_group<T, R, G>(xl, lane, [](T v) { return leading_log(v); }, LogDomain<T>{},
                                [&](T v, int l) { return log_w<T, W, G>(v, tab, l); }, NoFix{});
}

// Twin: expansions.cpu.elementary.log2.
template <class T, int R, int G>
__device__ __forceinline__ T log2_group(T xl, int lane, const T* table) {
    constexpr int W = working_terms(R);
    const Table<T> tab{table};
    return unary_group<T, R, G>(xl, lane, [](T v) { return leading_log2(v); }, LogDomain<T>{},
                                [&](T v, int l) { return log2_w<T, W, G>(v, tab, l); }, NoFix{});
}

// Twin: expansions.cpu.elementary.log10.
template <class T, int R, int G>
__device__ __forceinline__ T log10_group(T xl, int lane, const T* table) {
    constexpr int W = working_terms(R);
    const Table<T> tab{table};
    return unary_group<T, R, G>(xl, lane, [](T v) { return leading_log10(v); }, LogDomain<T>{},
                                [&](T v, int l) { return log10_w<T, W, G>(v, tab, l); }, NoFix{});
}

// Twin: expansions.cpu.elementary.sin.
template <class T, int R, int G>
__device__ __forceinline__ T sin_group(T xl, int lane, const T* table) {
    constexpr int W = working_terms(R);
    const Table<T> tab{table};
    return unary_group<T, R, G>(xl, lane, [](T v) { return leading_sin(v); }, ZeroSpecial<T>{},
                                [&](T v, int l) { return sin_w<T, W, G>(v, tab, l); }, NoFix{});
}

// Twin: expansions.cpu.elementary.cos.
template <class T, int R, int G>
__device__ __forceinline__ T cos_group(T xl, int lane, const T* table) {
    constexpr int W = working_terms(R);
    const Table<T> tab{table};
    return unary_group<T, R, G>(xl, lane, [](T v) { return leading_cos(v); }, NoSpecial<T>{},
                                [&](T v, int l) { return cos_w<T, W, G>(v, tab, l); }, NoFix{});
}

// Twin: expansions.cpu.elementary.tan.
template <class T, int R, int G>
__device__ __forceinline__ T tan_group(T xl, int lane, const T* table) {
    constexpr int W = working_terms(R);
    const Table<T> tab{table};
    return unary_group<T, R, G>(xl, lane, [](T v) { return leading_tan(v); }, ZeroSpecial<T>{},
                                [&](T v, int l) { return tan_w<T, W, G>(v, tab, l); }, NoFix{});
}

// Twin: expansions.cpu.elementary.sinh.
template <class T, int R, int G>
__device__ __forceinline__ T sinh_group(T xl, int lane, const T* table) {
    constexpr int W = working_terms(R);
    const Table<T> tab{table};
    return unary_group<T, R, G>(xl, lane, [](T v) { return leading_sinh(v); }, ZeroSpecial<T>{},
                                [&](T v, int l) { return sinh_w<T, W, G>(v, tab, l); }, NoFix{});
}

// Twin: expansions.cpu.elementary.cosh.
template <class T, int R, int G>
__device__ __forceinline__ T cosh_group(T xl, int lane, const T* table) {
    constexpr int W = working_terms(R);
    const Table<T> tab{table};
    return unary_group<T, R, G>(xl, lane, [](T v) { return leading_cosh(v); }, NoSpecial<T>{},
                                [&](T v, int l) { return cosh_w<T, W, G>(v, tab, l); }, NoFix{});
}

// Twin: expansions.cpu.elementary.tanh.
template <class T, int R, int G>
__device__ __forceinline__ T tanh_group(T xl, int lane, const T* table) {
    constexpr int W = working_terms(R);
    const Table<T> tab{table};
    return unary_group<T, R, G>(xl, lane, [](T v) { return leading_tanh(v); }, ZeroSpecial<T>{},
                                [&](T v, int l) { return tanh_w<T, W, G>(v, tab, l); }, NoFix{});
}

// log1p; special rows: x = -1 (-inf), x < -1 (NaN), x = +-0.  Twin: expansions.cpu.elementary.log1p.
template <class T, int R, int G>
__device__ __forceinline__ T log1p_group(T xl, int lane, const T* table) {
    constexpr int W = working_terms(R);
    const Table<T> tab{table};
    const auto special = [](T v, T x0, T, int l) {
        const T x1 = shfl<G>(v, 1);
        const bool below = x0 < T(-1) || (x0 == T(-1) && x1 < T(0));
        const bool zero_tail = tail_zero<R, G>(v, l);  // every lane votes (no short circuit)
        const bool at = x0 == T(-1) && !below && zero_tail;
        const T value = at ? infinity<T>(true) : (below ? quiet_nan<T>() : x0);
        return SpecialRows<T>{at || below || x0 == T(0), value};
    };
    return unary_group<T, R, G>(xl, lane, [](T v) { return leading_log1p(v); }, special,
                                [&](T v, int l) { return log1p_w<T, W, G>(v, tab, l); }, NoFix{});
}

// atan; atan(+-inf) = +-pi/2 to R terms.  Twin: expansions.cpu.elementary.atan.
template <class T, int R, int G>
__device__ __forceinline__ T atan_group(T xl, int lane, const T* table) {
    constexpr int W = working_terms(R);
    const Table<T> tab{table};
    const auto fix = [&](T r, T, T x0, int l) {
        return constant_rows<T, R, G>(r, is_inf(x0), HALF_PI, sign_of(x0), table, l);
    };
    return unary_group<T, R, G>(xl, lane, [](T v) { return leading_atan(v); }, ZeroSpecial<T>{},
                                [&](T v, int l) { return atan_w<T, W, G>(v, tab, l); }, fix);
}

// asin; |x| > 1 NaN, asin(+-1) = +-pi/2 to R terms.  Twin: expansions.cpu.elementary.asin.
template <class T, int R, int G>
__device__ __forceinline__ T asin_group(T xl, int lane, const T* table) {
    constexpr int W = working_terms(R);
    const Table<T> tab{table};
    const auto special = [](T v, T x0, T, int l) {
        bool outside, at_one;
        unit_domain<T, R, G>(v, x0, l, outside, at_one);
        return SpecialRows<T>{outside || at_one || x0 == T(0), outside ? quiet_nan<T>() : x0};
    };
    const auto fix = [&](T r, T v, T x0, int l) {
        bool outside, at_one;
        unit_domain<T, R, G>(v, x0, l, outside, at_one);
        return constant_rows<T, R, G>(r, at_one, HALF_PI, sign_of(x0), table, l);
    };
    return unary_group<T, R, G>(xl, lane, [](T v) { return leading_asin(v); }, special,
                                [&](T v, int l) { return asin_w<T, W, G>(v, tab, l); }, fix);
}

// acos; |x| > 1 NaN, acos(1) = 0, acos(-1) = pi to R terms.  Twin: expansions.cpu.elementary.acos.
template <class T, int R, int G>
__device__ __forceinline__ T acos_group(T xl, int lane, const T* table) {
    constexpr int W = working_terms(R);
    const Table<T> tab{table};
    const auto special = [](T v, T x0, T, int l) {
        bool outside, at_one;
        unit_domain<T, R, G>(v, x0, l, outside, at_one);
        return SpecialRows<T>{outside || at_one, outside ? quiet_nan<T>() : T(0)};
    };
    const auto fix = [&](T r, T v, T x0, int l) {
        bool outside, at_one;
        unit_domain<T, R, G>(v, x0, l, outside, at_one);
        return constant_rows<T, R, G>(r, at_one && x0 < T(0), PI, T(1), table, l);
    };
    return unary_group<T, R, G>(xl, lane, [](T v) { return leading_acos(v); }, special,
                                [&](T v, int l) { return acos_w<T, W, G>(v, tab, l); }, fix);
}

// atan2(y, x) with the quadrants and special cases of IEEE 754; the special results that are
// multiples of pi/4 are given to R terms.  Twin: expansions.cpu.elementary.atan2.
template <class T, int R, int G>
__device__ __forceinline__ T atan2_group(T yl, T xl, int lane, const T* table) {
    constexpr int W = working_terms(R);
    const Table<T> tab{table};
    const T y0 = shfl<G>(yl, 0);
    const T x0 = shfl<G>(xl, 0);
    const T leading = leading_atan2(y0, x0);
    const bool finite = !group_any<R, G>(!is_finite(yl) || !is_finite(xl));
    const bool special = (y0 == T(0) && finite) || is_inf(y0) || is_inf(x0);  // atan2(+-0, x): +-0 or +-pi
    const bool regular = finite && !special;
    T o = T(0);
    if (warp_any(regular)) {
        const T v = atan2_w<T, W, G>(yl, xl, tab, lane);
        if (regular) o = v;
    }
    T r = renormalize_group<T, W, R, G>(o, lane);
    r = nonfinite_epilogue<T, R, G>(r, leading, lane, operand_status<R, G>(yl), operand_status<R, G>(xl));
    // a result that underflowed to zero (x > 0, |y / x| below the range) is the zero of y's sign (IEEE)
    const bool zero_result = !group_any<R, G>(lane < R && r != T(0));  // every lane votes
    if (regular && zero_result) r = (lane == 0 && signbit_of(y0)) ? -T(0) : T(0);
    if (special && !is_nan(y0) && !is_nan(x0)) r = lane == 0 ? leading : T(0);
    const T sign = sign_of(leading);
    const T mag = magnitude(leading);
    r = constant_rows<T, R, G>(r, special && mag == tab.value(H_PI), PI, sign, table, lane);
    r = constant_rows<T, R, G>(r, special && mag == tab.value(H_HALF_PI), HALF_PI, sign, table, lane);
    r = constant_rows<T, R, G>(r, special && mag == tab.value(H_QUARTER_PI), QUARTER_PI, sign, table, lane);
    r = constant_rows<T, R, G>(r, special && mag == tab.value(H_THREE_QUARTER_PI), THREE_QUARTER_PI, sign,
                               table, lane);
    return r;
}

// x ** y for an expansion exponent: exp(y log|x|), the sign (-1)^y for x < 0 and an integer y, NaN
// for x < 0 and a non-integer y, the special cases of IEEE 754 pow.  Twin: expansions.cpu.elementary.pow.
template <class T, int R, int G>
__device__ __forceinline__ T pow_group(T xl, T yl, int lane, const T* table) {
    constexpr int W = working_terms(R);
    const Table<T> tab{table};
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
    // |x0|^y0 with the sign of x0 for an odd y (the parity of the whole expansion, not of y0); a
    // non-finite y0 takes x0 as it is (pow(-1, inf) = 1, pow(x, NaN) = NaN)
    const T base = (!odd && !is_finite(y0)) ? x0 : magnitude(x0);
    const T power_of_base = leading_pow(base, y0);
    const T signed_power = (odd && signbit_of(x0) && !is_nan(x0)) ? -power_of_base : power_of_base;
    const T leading = (one_x || zero_y) ? T(1) : signed_power;
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
    const T r0 = shfl<G>(r, 0);  // a negative result below the range: -0
    if (regular && x0 < T(0) && odd && r0 == T(0) && lane == 0) r = -magnitude(r);
    if ((one_x || zero_y) && !finite) r = lane == 0 ? T(1) : T(0);  // pow(1, NaN) = pow(NaN, 0) = 1
    return r;
}

}  // namespace elementary
}  // namespace expansions
