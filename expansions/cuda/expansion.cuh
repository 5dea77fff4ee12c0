// Shared helpers of the expansion kernels: IEEE bit predicates, the lane-group grid-stride loop,
// loads and stores of terms, and the non-finite epilogue (design decision 6).
// Twins: nonfinite_epilogue, ulp and load_lanes in expansions/cpu/kernels.py and lanes.py.
#pragma once

#include "eft.cuh"
#include "lanes.cuh"

namespace expansions {

// Bit-level view of a term type: precision, exponent field and sign bit.
template <class T>
struct FloatBits;

template <>
struct FloatBits<double> {
    using U = unsigned long long;
    static constexpr int P = 53;                          // significand bits, hidden bit included
    static constexpr U SIGN = 0x8000000000000000ull;
    static constexpr U EXP = 0x7ff0000000000000ull;      // exponent field; also the bits of +inf
    static constexpr U QNAN = 0x7ff8000000000000ull;     // NumPy's np.nan
    static constexpr int EXP_SHIFT = 52;
    static constexpr int EXP_BITS_MASK = 0x7ff;
    __device__ static U to_bits(double v) { return static_cast<U>(__double_as_longlong(v)); }
    __device__ static double from_bits(U b) { return __longlong_as_double(static_cast<long long>(b)); }
};

template <>
struct FloatBits<float> {
    using U = unsigned int;
    static constexpr int P = 24;
    static constexpr U SIGN = 0x80000000u;
    static constexpr U EXP = 0x7f800000u;
    static constexpr U QNAN = 0x7fc00000u;
    static constexpr int EXP_SHIFT = 23;
    static constexpr int EXP_BITS_MASK = 0xff;
    __device__ static U to_bits(float v) { return __float_as_uint(v); }
    __device__ static float from_bits(U b) { return __uint_as_float(b); }
};

// Finite (not inf, not NaN), from the exponent field.  Twin: xp.isfinite.
template <class T>
__device__ __forceinline__ bool is_finite(T v) {
    using B = FloatBits<T>;
    return (B::to_bits(v) & B::EXP) != B::EXP;
}

// NaN, from the bits.  Twin: xp.isnan.
template <class T>
__device__ __forceinline__ bool is_nan(T v) {
    using B = FloatBits<T>;
    return (B::to_bits(v) & ~B::SIGN) > B::EXP;
}

// -v by flipping the sign bit, as NumPy's negative does, NaN included (exact).
template <class T>
__device__ __forceinline__ T negated(T v) {
    using B = FloatBits<T>;
    return B::from_bits(B::to_bits(v) ^ B::SIGN);
}

template <class T>
__device__ __forceinline__ T quiet_nan() { return FloatBits<T>::from_bits(FloatBits<T>::QNAN); }

template <class T>
__device__ __forceinline__ T infinity(bool negative) {
    using B = FloatBits<T>;
    return B::from_bits(negative ? (B::EXP | B::SIGN) : B::EXP);
}

// Goldberg's ulp of a finite v from its exponent field: 2^(e-p+1) for 2^e <= |v| < 2^(e+1), the
// smallest subnormal for zeros and subnormals.  Twin: ulp in expansions/cpu/kernels.py.
template <class T>
__device__ __forceinline__ T ulp(T v) {
    using B = FloatBits<T>;
    using U = typename B::U;
    const int biased = static_cast<int>((B::to_bits(v) >> B::EXP_SHIFT) & B::EXP_BITS_MASK);
    U bits;
    if (biased == 0) {
        bits = 1;                                          // smallest subnormal
    } else if (biased < B::P) {
        bits = static_cast<U>(1) << (biased - 1);          // ulp is itself subnormal
    } else {
        bits = static_cast<U>(biased - (B::P - 1)) << B::EXP_SHIFT;
    }
    return B::from_bits(bits);
}

// Lanes of a group for K terms: the next power of two >= K (decision 2; twin: group_width).
__host__ __device__ constexpr int group_width(int k) {
    int w = 1;
    while (w < k) w *= 2;
    return w;
}

__host__ __device__ constexpr int max3(int a, int b, int c) {
    return (a > b ? a : b) > c ? (a > b ? a : b) : c;
}

// Warp-uniform grid-stride loop over expansions, 32/W per warp: body(index, valid, lane) with
// index = this group's expansion, valid = index < count (groups past the end compute on zeros and
// must not store), lane = lane in the group.  All lanes of a warp iterate together, so the body
// may shuffle and vote.  Requires blockDim.x to be a multiple of 32.
template <int W, class Body>
__device__ __forceinline__ void for_each_group(long long count, Body body) {
    constexpr int G = 32 / W;
    const long long warp = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
    const long long warps = (static_cast<long long>(gridDim.x) * blockDim.x) >> 5;
    const int lane = lane_in_group<W>();
    const int group = lane_in_warp() / W;
    for (long long first = warp * G; first < count; first += warps * G) {
        const long long index = first + group;
        body(index, index < count, lane);
    }
}

// Term `lane` of expansion `index` of an array of K-term expansions, +0 on padding lanes and on
// groups past the end.  Twin: load_lanes.
template <int K, class T>
__device__ __forceinline__ T load_term(const T* __restrict__ terms, long long index, bool valid, int lane) {
    return (valid && lane < K) ? terms[index * K + lane] : T(0);
}

// Store lane `lane`'s term of expansion `index` of an array of R-term expansions.
template <int R, class T>
__device__ __forceinline__ void store_term(T* __restrict__ terms, long long index, bool valid, int lane, T v) {
    if (valid && lane < R) terms[index * R + lane] = v;
}

// What the non-finite epilogue needs to know of one operand (group-uniform values).
struct OperandStatus {
    bool bad;             // some term of the operand is inf or NaN
    bool leading_finite;  // its leading term is finite
};

// Status of an operand of K terms held in lanes 0..K-1 of the group (padding lanes hold +0).
template <int K, int W, class T>
__device__ __forceinline__ OperandStatus operand_status(T v) {
    const bool bad = group_any<K, W>(!is_finite(v));
    return {bad, is_finite(shfl<W>(v, 0))};
}

// Whether some group of the warp has a non-finite term in an operand (x on lanes 0..N-1, y on lanes
// 0..M-1) or in its R-term result s: the one vote of the non-finite rule on the hot path.  Where no
// lane has one, nonfinite_epilogue returns s on every lane (no operand is bad, nothing overflowed),
// so the callers skip it, its votes and its broadcasts (issue 13: finite data pay one vote, the
// branch is warp-uniform).  Every lane votes.
template <int N, int M, int R, int W, class T>
__device__ __forceinline__ bool warp_has_nonfinite(T x, T y, T s, int lane) {
    const bool bad = (lane < N && !is_finite(x)) || (lane < M && !is_finite(y)) || (lane < R && !is_finite(s));
    return warp_any(bad);
}

// Design decision 6.  If an operand has a non-finite term: (w, 0, ..., 0), w = `leading` (the IEEE
// result of the operation on the leading terms), or NaN where that operand's leading term is
// finite.  Else, if a computed term s_0..s_{R-1} is not finite (overflow): (+-inf, 0, ..., 0) with
// the sign of leading < 0.  Else s unchanged.  A NaN w is the canonical quiet NaN with a clear sign
// bit, whatever NaN the hardware produced.  `leading` is the same on every lane of the group.
// Mirrors nonfinite_epilogue in expansions/cpu/kernels.py.
template <class T, int R, int W>
__device__ __forceinline__ T nonfinite_epilogue(T s, T leading, int lane, OperandStatus a,
                                                OperandStatus b = OperandStatus{false, true}) {
    const bool any_term_nonfinite = group_any<R, W>(!is_finite(s));  // every lane votes
    const bool anybad = a.bad || b.bad;
    const bool overflow = !anybad && any_term_nonfinite;
    if (!(anybad || overflow)) return s;
    T w = leading;
    if (a.bad && a.leading_finite) w = quiet_nan<T>();
    if (b.bad && b.leading_finite) w = quiet_nan<T>();
    if (!anybad) w = infinity<T>(leading < T(0));
    if (is_nan(w)) w = quiet_nan<T>();
    return lane == 0 ? w : T(0);
}

// Exponent bias and smallest normal exponent of a term type, from its bit layout.
template <class T>
struct Exponents {
    static constexpr int BIAS = FloatBits<T>::EXP_BITS_MASK >> 1;
    static constexpr int EMIN = 1 - BIAS;
    static constexpr int SUBNORMAL = EMIN - FloatBits<T>::P + 1;  // exponent of the smallest subnormal
};

__device__ __forceinline__ int ilogb_of(double v) { return ilogb(v); }
__device__ __forceinline__ int ilogb_of(float v) { return ilogbf(v); }

// ilogb(a0) for a finite nonzero a0, else 0.  Twin: leading_exponent.
template <class T>
__device__ __forceinline__ int leading_exponent(T a0) {
    return (is_finite(a0) && a0 != T(0)) ? ilogb_of(a0) : 0;
}

// 2^k exactly, for k from the exponent of the smallest subnormal to emax (from the bits).
// Twin: ldexp(1, k).
template <class T>
__device__ __forceinline__ T pow2(int k) {
    using B = FloatBits<T>;
    using U = typename B::U;
    using E = Exponents<T>;
    const U bits = k >= E::EMIN ? static_cast<U>(k + E::BIAS) << B::EXP_SHIFT
                                : static_cast<U>(1) << (k - E::SUBNORMAL);
    return B::from_bits(bits);
}

// v * 2^k as two products by powers of two, 2^(k >> 1) then 2^(k - (k >> 1)), k clamped to
// [2 SUBNORMAL, 2 emax] (beyond it the result is 0 or overflows anyway): exact when scaling up (or
// overflow), at most eta of rounding when scaling down.  Twin: scale.
template <class T>
__device__ __forceinline__ T scale(T v, int k) {
    constexpr int LO = 2 * Exponents<T>::SUBNORMAL;
    constexpr int HI = 2 * Exponents<T>::BIAS;  // emax = bias
    k = k < LO ? LO : (k > HI ? HI : k);
    const int k1 = k >> 1;
    return mul_rn(mul_rn(v, pow2<T>(k1)), pow2<T>(k - k1));
}

}  // namespace expansions
