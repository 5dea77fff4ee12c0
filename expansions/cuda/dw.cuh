// Double-word (R = 2) arithmetic, one thread per number: the algorithms of Joldes, Muller, Popescu,
// ACM TOMS 2017 (JMP, Algorithms 4-18), the QD library's additions, da Graça and Defour's float-float
// operators, Warwick's two-float multiplication and division, and the double-word square root of
// Lefèvre, Louvet, Muller, Picot, Rideau (ACM TOMS 2023, Algorithm 8).  Each functor mirrors the
// function of the same name (snake case) in expansions/dw/cpu.py operation for operation, with the
// explicit rounding intrinsics of eft.cuh (the twins emulate the FMA; the GPU has one).
#pragma once

#include "expansion.cuh"  // eft.cuh, and the bit tests of the library's non-finite rule

namespace expansions {

// Dekker's Fast2Sum: hi = RN(a+b), lo = a+b-hi exactly when |a| >= |b|.  Twin: fast_two_sum.
template <class T>
__device__ __forceinline__ TwoTerms<T> fast_two_sum(T a, T b) {
    const T s = add_rn(a, b);
    const T z = sub_rn(s, a);
    return {s, sub_rn(b, z)};
}

// ---- JMP 2017, Algorithms 4 to 18 (operands: double-words (h, l) and floats)

struct DwPlusFp {  // Algorithm 4
    template <class T> __device__ static TwoTerms<T> apply(T xh, T xl, T y) {
        const TwoTerms<T> s = two_sum(xh, y);
        const T v = add_rn(xl, s.lo);
        return fast_two_sum(s.hi, v);
    }
};
struct DwAddSloppy {  // Algorithm 5
    template <class T> __device__ static TwoTerms<T> apply(T xh, T xl, T yh, T yl) {
        const TwoTerms<T> s = two_sum(xh, yh);
        const T v = add_rn(xl, yl);
        const T w = add_rn(s.lo, v);
        return fast_two_sum(s.hi, w);
    }
};
struct DwAddAccurate {  // Algorithm 6
    template <class T> __device__ static TwoTerms<T> apply(T xh, T xl, T yh, T yl) {
        const TwoTerms<T> s = two_sum(xh, yh);
        const TwoTerms<T> t = two_sum(xl, yl);
        const T c = add_rn(s.lo, t.hi);
        const TwoTerms<T> v = fast_two_sum(s.hi, c);
        const T w = add_rn(t.lo, v.lo);
        return fast_two_sum(v.hi, w);
    }
};
struct DwTimesFp1 {  // Algorithm 7
    template <class T> __device__ static TwoTerms<T> apply(T xh, T xl, T y) {
        const TwoTerms<T> c = two_prod(xh, y);
        const T cl2 = mul_rn(xl, y);
        const TwoTerms<T> t = fast_two_sum(c.hi, cl2);
        const T tl2 = add_rn(t.lo, c.lo);
        return fast_two_sum(t.hi, tl2);
    }
};
struct DwTimesFp2 {  // Algorithm 8
    template <class T> __device__ static TwoTerms<T> apply(T xh, T xl, T y) {
        const TwoTerms<T> c = two_prod(xh, y);
        const T cl2 = mul_rn(xl, y);
        const T cl3 = add_rn(c.lo, cl2);
        return fast_two_sum(c.hi, cl3);
    }
};
struct DwTimesFp3 {  // Algorithm 9
    template <class T> __device__ static TwoTerms<T> apply(T xh, T xl, T y) {
        const TwoTerms<T> c = two_prod(xh, y);
        const T cl3 = fma_rn(xl, y, c.lo);
        return fast_two_sum(c.hi, cl3);
    }
};
struct DwTimesDw1 {  // Algorithm 10
    template <class T> __device__ static TwoTerms<T> apply(T xh, T xl, T yh, T yl) {
        const TwoTerms<T> c = two_prod(xh, yh);
        const T tl1 = mul_rn(xh, yl);
        const T tl2 = mul_rn(xl, yh);
        const T cl2 = add_rn(tl1, tl2);
        const T cl3 = add_rn(c.lo, cl2);
        return fast_two_sum(c.hi, cl3);
    }
};
struct DwTimesDw2 {  // Algorithm 11
    template <class T> __device__ static TwoTerms<T> apply(T xh, T xl, T yh, T yl) {
        const TwoTerms<T> c = two_prod(xh, yh);
        const T tl = mul_rn(xh, yl);
        const T cl2 = fma_rn(xl, yh, tl);
        const T cl3 = add_rn(c.lo, cl2);
        return fast_two_sum(c.hi, cl3);
    }
};
struct DwTimesDw3 {  // Algorithm 12
    template <class T> __device__ static TwoTerms<T> apply(T xh, T xl, T yh, T yl) {
        const TwoTerms<T> c = two_prod(xh, yh);
        const T tl0 = mul_rn(xl, yl);
        const T tl1 = fma_rn(xh, yl, tl0);
        const T cl2 = fma_rn(xl, yh, tl1);
        const T cl3 = add_rn(c.lo, cl2);
        return fast_two_sum(c.hi, cl3);
    }
};
struct DwDivFp1 {  // Algorithm 13
    template <class T> __device__ static TwoTerms<T> apply(T xh, T xl, T y) {
        const T th = div_rn(xh, y);
        const TwoTerms<T> pi = two_prod(th, y);
        const TwoTerms<T> d = two_sum(xh, -pi.hi);
        const T d2 = sub_rn(xl, pi.lo);
        const T dl = add_rn(d.lo, d2);
        const T dd = add_rn(d.hi, dl);
        const T tl = div_rn(dd, y);
        return fast_two_sum(th, tl);
    }
};
struct DwDivFp2 {  // Algorithm 14
    template <class T> __device__ static TwoTerms<T> apply(T xh, T xl, T y) {
        const T th = div_rn(xh, y);
        const TwoTerms<T> pi = two_prod(th, y);
        const T dh = sub_rn(xh, pi.hi);
        const T dl = sub_rn(xl, pi.lo);
        const T d = add_rn(dh, dl);
        const T tl = div_rn(d, y);
        return fast_two_sum(th, tl);
    }
};
struct DwDivFp3 {  // Algorithm 15
    template <class T> __device__ static TwoTerms<T> apply(T xh, T xl, T y) {
        const T th = div_rn(xh, y);
        const TwoTerms<T> pi = two_prod(th, y);
        const T dh = sub_rn(xh, pi.hi);
        const T dt = sub_rn(dh, pi.lo);
        const T d = add_rn(dt, xl);
        const T tl = div_rn(d, y);
        return fast_two_sum(th, tl);
    }
};
struct DwDivDw1 {  // Algorithm 16
    template <class T> __device__ static TwoTerms<T> apply(T xh, T xl, T yh, T yl) {
        const T th = div_rn(xh, yh);
        const TwoTerms<T> r = DwTimesFp1::apply(yh, yl, th);
        const TwoTerms<T> pi = two_sum(xh, -r.hi);
        const T dh = sub_rn(pi.lo, r.lo);
        const T dl = add_rn(dh, xl);
        const T d = add_rn(pi.hi, dl);
        const T tl = div_rn(d, yh);
        return fast_two_sum(th, tl);
    }
};
struct DwDivDw2 {  // Algorithm 17
    template <class T> __device__ static TwoTerms<T> apply(T xh, T xl, T yh, T yl) {
        const T th = div_rn(xh, yh);
        const TwoTerms<T> r = DwTimesFp1::apply(yh, yl, th);
        const T pih = sub_rn(xh, r.hi);
        const T dl = sub_rn(xl, r.lo);
        const T d = add_rn(pih, dl);
        const T tl = div_rn(d, yh);
        return fast_two_sum(th, tl);
    }
};
struct DwDivDw3 {  // Algorithm 18
    template <class T> __device__ static TwoTerms<T> apply(T xh, T xl, T yh, T yl) {
        const T one = T(1);
        const T th = div_rn(one, yh);
        const T rh = fma_rn(-yh, th, one);
        const T rl = -mul_rn(yl, th);
        const TwoTerms<T> e = fast_two_sum(rh, rl);
        const TwoTerms<T> d = DwTimesFp3::apply(e.hi, e.lo, th);
        const TwoTerms<T> m = DwPlusFp::apply(d.hi, d.lo, th);
        return DwTimesDw3::apply(xh, xl, m.hi, m.lo);
    }
};

// ---- QD library (Hida, Li, Bailey 2001): double-double additions
struct QdAddSloppy {
    template <class T> __device__ static TwoTerms<T> apply(T ah, T al, T bh, T bl) {
        const TwoTerms<T> s = two_sum(ah, bh);
        const T e = add_rn(s.lo, add_rn(al, bl));
        return fast_two_sum(s.hi, e);
    }
};
struct QdAddIeee {
    template <class T> __device__ static TwoTerms<T> apply(T ah, T al, T bh, T bl) {
        const TwoTerms<T> s = two_sum(ah, bh);
        const TwoTerms<T> t = two_sum(al, bl);
        const TwoTerms<T> u = fast_two_sum(s.hi, add_rn(s.lo, t.hi));
        return fast_two_sum(u.hi, add_rn(u.lo, t.lo));
    }
};

// ---- da Graça and Defour (RNC 7, 2006)
struct DgAdd12 {
    template <class T> __device__ static TwoTerms<T> apply(T a, T b) {
        const T s = add_rn(a, b);
        const T v = sub_rn(s, a);
        const T r = add_rn(sub_rn(a, sub_rn(s, v)), sub_rn(b, v));
        return {s, r};
    }
};
template <class T> struct SplitConstant;
template <> struct SplitConstant<double> { static constexpr double value = 134217729.0; };  // 2^27 + 1
template <> struct SplitConstant<float> { static constexpr float value = 4097.0f; };        // 2^12 + 1
template <class T>
__device__ __forceinline__ TwoTerms<T> dg_split(T a) {
    const T c = mul_rn(SplitConstant<T>::value, a);
    const T abig = sub_rn(c, a);
    const T ahi = sub_rn(c, abig);
    return {ahi, sub_rn(a, ahi)};
}
struct DgMul12 {
    template <class T> __device__ static TwoTerms<T> apply(T a, T b) {
        const T x = mul_rn(a, b);
        const TwoTerms<T> as = dg_split(a);
        const TwoTerms<T> bs = dg_split(b);
        const T err1 = sub_rn(x, mul_rn(as.hi, bs.hi));
        const T err2 = sub_rn(err1, mul_rn(as.lo, bs.hi));
        const T err3 = sub_rn(err2, mul_rn(as.hi, bs.lo));
        return {x, sub_rn(mul_rn(as.lo, bs.lo), err3)};
    }
};
struct DgAdd22 {  // both branches, then a select (as the twin)
    template <class T> __device__ static TwoTerms<T> apply(T ah, T al, T bh, T bl) {
        const T r = add_rn(ah, bh);
        const T sa = add_rn(add_rn(add_rn(sub_rn(ah, r), bh), bl), al);
        const T sb = add_rn(add_rn(add_rn(sub_rn(bh, r), ah), al), bl);
        const T s = (fabs(ah) >= fabs(bh)) ? sa : sb;
        return DgAdd12::apply(r, s);
    }
};
struct DgMul22 {  // with Add12(t1, t3): the seed's Add12(t1, t2) is a misprint
    template <class T> __device__ static TwoTerms<T> apply(T ah, T al, T bh, T bl) {
        const TwoTerms<T> t = DgMul12::apply(ah, bh);
        const T t3 = add_rn(add_rn(mul_rn(ah, bl), mul_rn(al, bh)), t.lo);
        return DgAdd12::apply(t.hi, t3);
    }
};

// ---- Warwick (Bath, 2020)
struct WwMul {
    template <class T> __device__ static TwoTerms<T> apply(T ah, T al, T bh, T bl) {
        const TwoTerms<T> s = two_prod(ah, bh);
        T sl = fma_rn(al, bl, s.lo);
        sl = fma_rn(ah, bl, sl);
        sl = fma_rn(al, bh, sl);
        return fast_two_sum(s.hi, sl);
    }
};
struct WwDiv {
    template <class T> __device__ static TwoTerms<T> apply(T ah, T al, T bh, T bl) {
        const T sh = div_rn(ah, bh);
        const TwoTerms<T> t = two_prod(sh, bh);
        const T v = add_rn(sub_rn(ah, t.hi), sub_rn(al, t.lo));
        const T sl = div_rn(fma_rn(-sh, bl, v), bh);
        return fast_two_sum(sh, sl);
    }
};

// ---- square root: SQRTDWtoDW, Lefèvre, Louvet, Muller, Picot, Rideau 2023, Algorithm 8
struct DwSqrt {
    template <class T> __device__ static TwoTerms<T> apply(T xh, T xl) {
        const T sh = sqrt_rn(xh);
        const T r1 = fma_rn(-sh, sh, xh);
        const T r2 = add_rn(xl, r1);
        const T sl = div_rn(r2, mul_rn(T(2), sh));
        const TwoTerms<T> z = fast_two_sum(sh, sl);
        if (xh == T(0)) return {sh, T(0)};
        return z;
    }
};

// ---- entry points: one thread per number, grid-stride; double-words are stored as (count, 2)
// rows (hi, lo), floats as (count,).  The functor is the template argument (named in build.py's
// table from the algorithm's name).

template <class T, class F>
__global__ void dw_dw(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out, long long count) {
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        const TwoTerms<T> z = F::apply(x[2 * i], x[2 * i + 1], y[2 * i], y[2 * i + 1]);
        out[2 * i] = z.hi;
        out[2 * i + 1] = z.lo;
    }
}

template <class T, class F>
__global__ void dw_fp(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out, long long count) {
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        const TwoTerms<T> z = F::apply(x[2 * i], x[2 * i + 1], y[i]);
        out[2 * i] = z.hi;
        out[2 * i + 1] = z.lo;
    }
}

template <class T, class F>
__global__ void fp_fp(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out, long long count) {
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        const TwoTerms<T> z = F::apply(x[i], y[i]);
        out[2 * i] = z.hi;
        out[2 * i + 1] = z.lo;
    }
}

template <class T, class F>
__global__ void dw_unary(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out, long long count) {
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        const TwoTerms<T> z = F::apply(x[2 * i], x[2 * i + 1]);
        out[2 * i] = z.hi;
        out[2 * i + 1] = z.lo;
    }
}

// ---- the library's R = 2 operations, one launch each (issue 13): the double-word algorithm, the
// library's non-finite rule and the renormalization in registers.  Twin: the composition the other
// backends run, expansions.dispatch.run(op, alg, backends.cpu, renormalize, x, y, 2), i.e.
// _double_word_finish (expansions/backends.py) after the algorithm, then renormalize(out, 2)
// (expansions/cpu/kernels.py); renormalize_pair mirrors renormalize_pair in that file.

// What the leading-term IEEE result of the non-finite rule is: the operation of the algorithm.
enum DwKind { DW_ADD = 0, DW_MUL = 1, DW_DIV = 2, DW_SQRT = 3 };

// The library's non-finite rule on a double-word result z of operands (x0, x1) and, when binary,
// (y0, y1): an operand with a non-finite word gives (w, 0), w = `leading` (the IEEE result on the
// leading words) or NaN where that operand's leading word is finite; else a non-finite result word
// (overflow) gives (+-inf, 0) with the sign of leading < 0; a NaN leading result gives (NaN, 0); a
// zero result whose leading result is a zero takes that zero.
// NaN is the canonical quiet NaN.  Twin: _double_word_finish in expansions/backends.py (with
// nonfinite_epilogue of expansions/cpu/kernels.py at R = 2).
template <class T>
__device__ __forceinline__ TwoTerms<T> dw_nonfinite_rule(TwoTerms<T> z, T x0, T x1, T y0, T y1, bool binary,
                                                         T leading) {
    const bool bad_x = !is_finite(x0) || !is_finite(x1);
    const bool bad_y = binary && (!is_finite(y0) || !is_finite(y1));
    const bool anybad = bad_x || bad_y;
    const bool overflow = !anybad && (!is_finite(z.hi) || !is_finite(z.lo));
    if (anybad || overflow) {
        T w = leading;
        if (bad_x && is_finite(x0)) w = quiet_nan<T>();
        if (bad_y && is_finite(y0)) w = quiet_nan<T>();
        if (!anybad) w = infinity<T>(leading < T(0));
        if (is_nan(w)) w = quiet_nan<T>();
        z = {w, T(0)};
    }
    if (is_nan(leading)) z = {quiet_nan<T>(), T(0)};
    // a zero result takes the leading result's zero (IEEE's sign: (-0) * 1 = -0, -1 / inf = -0)
    if (z.hi == T(0) && z.lo == T(0) && leading == T(0)) z.hi = leading;
    return z;
}

// renormalize_group<T, 2, 2, W> (the library's renormalize(x, 2)) in one thread, with the same bits.
// At two terms the general algorithm reduces to two 2Sums and the non-finite epilogue:
// * the sort by magnitude can be left out: 2Sum is commutative in its result (the sum is, and the
//   error is exact; a zero error is replaced by +0 below, and non-finite results by the epilogue);
// * VecSum is one 2Sum, e = 2Sum(a, b); VecSumErrBranch is t = 2Sum(e.hi, e.lo), whose zero error
//   leaves the +0 term (t equals e but for signed zeros: 2Sum(-0, +0) = (+0, ..));
// * the second round never changes the bits: for finite t, |t.lo| <= ulp(t.hi) / 2, so the terms are
//   nonoverlapping after the first; a non-finite t is replaced by the epilogue.
// The epilogue is nonfinite_epilogue at R = 2 with the VecSum top e.hi as the leading result.
// Twin: renormalize_pair in expansions/cpu/kernels.py (tested equal to renormalize(x, 2) but on zero
// pairs, kept as they are: the double-word renormalizer of expansions.dispatch).
template <class T>
__device__ __forceinline__ TwoTerms<T> renormalize_pair(TwoTerms<T> x) {
    if (x.hi == T(0) && x.lo == T(0)) return x;  // a zero pair is kept (its signed zero)
    const TwoTerms<T> e = two_sum(x.hi, x.lo);
    const TwoTerms<T> t = two_sum(e.hi, e.lo);
    const TwoTerms<T> out = {t.hi, t.lo != T(0) ? t.lo : T(0)};
    const bool bad = !is_finite(x.hi) || !is_finite(x.lo);
    const bool overflow = !bad && (!is_finite(out.hi) || !is_finite(out.lo));
    if (!(bad || overflow)) return out;
    T w = e.hi;
    if (bad && is_finite(x.hi)) w = quiet_nan<T>();
    if (!bad) w = infinity<T>(e.hi < T(0));
    if (is_nan(w)) w = quiet_nan<T>();
    return {w, T(0)};
}

// The operand (hi, lo) made a double word where it is not one: 2Sum(hi, lo) where RN(hi + lo) != hi
// (a NaN sum counts as different), the words as they are elsewhere.  The algorithms' proofs assume
// hi = RN(hi + lo); an ulp-nonoverlapping pair with ulp(hi)/2 < |lo| < ulp(hi) is not a double word.
// Twin: double_word in expansions/dw/cpu.py.
template <class T>
__device__ __forceinline__ TwoTerms<T> double_word(T hi, T lo) {
    if (add_rn(hi, lo) == hi) return {hi, lo};
    return two_sum(hi, lo);
}

// Division and square root near the underflow threshold: where the leading word of x is finite,
// nonzero and below 2^(emin + DW_SCALE_PRECISIONS p), the algorithm's intermediates (down to about
// |x| u^2) would underflow, so it runs on operands scaled by powers of two to order 1 (x and y by
// -ilogb of their leading words; for the square root x by an even power) and its result is scaled
// back (scale: two exact products by powers of two unless the result itself underflows).
constexpr int DW_SCALE_PRECISIONS = 3;  // expansions.formats.DW_SCALE_PRECISIONS

// The operation of algorithm F (KIND) on operands as loaded (y negated for a subtraction): the
// operands made double words (double_word), scaled for a division or square root near the underflow
// threshold, the algorithm, the result scaled back.  Twins: dw_binary and dw_unary of
// expansions/backends.py (double_word, underflow_exponents, scaled_operands in expansions/dw/cpu.py).
template <class T, class F, int KIND>
__device__ __forceinline__ TwoTerms<T> dw_apply(T x0, T x1, T y0, T y1) {
    const TwoTerms<T> xd = double_word(x0, x1);
    const TwoTerms<T> yd = KIND == DW_SQRT ? TwoTerms<T>{y0, y1} : double_word(y0, y1);
    if constexpr (KIND == DW_ADD || KIND == DW_MUL) {
        return F::apply(xd.hi, xd.lo, yd.hi, yd.lo);
    } else {
        const T limit = pow2<T>(Exponents<T>::EMIN + DW_SCALE_PRECISIONS * FloatBits<T>::P);
        const bool need = xd.hi < limit && xd.hi > -limit && xd.hi != T(0);  // |xh| < limit, not NaN
        int kx = 0, ky = 0, back = 0;
        if (need && KIND == DW_SQRT) {
            kx = -2 * (leading_exponent(xd.hi) >> 1);
            back = -(kx / 2);
        } else if (need) {
            kx = -leading_exponent(xd.hi);
            ky = -leading_exponent(yd.hi);
            back = ky - kx;
        }
        TwoTerms<T> z;
        if constexpr (KIND == DW_SQRT) {
            z = F::apply(scale(xd.hi, kx), scale(xd.lo, kx));
        } else {
            z = F::apply(scale(xd.hi, kx), scale(xd.lo, kx), scale(yd.hi, ky), scale(yd.lo, ky));
        }
        return {scale(z.hi, back), scale(z.lo, back)};
    }
}

// x op y (x - y with NEGATE_Y: y's words negated as they are loaded), or the square root of x, by
// the double-word algorithm F on the operands made double words and, near the underflow threshold,
// scaled (dw_apply), with the library's non-finite rule on the operands as loaded, then
// (RENORMALIZE) the
// renormalization: what the library's x + y, x - y, x * y, x / y, sqrt(x) are at R = 2 on the GPU,
// reading the operands once and writing the result once.  (count, 2) rows; y unused for DW_SQRT.
template <class T, class F, int KIND, bool NEGATE_Y, bool RENORMALIZE>
__global__ void dw_operation(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out,
                             long long count) {
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        const T x0 = x[2 * i], x1 = x[2 * i + 1];
        T y0 = T(0), y1 = T(0);
        TwoTerms<T> z;
        T leading;
        if constexpr (KIND == DW_SQRT) {
            z = dw_apply<T, F, KIND>(x0, x1, T(0), T(0));
            leading = sqrt_rn(x0);
        } else {
            y0 = y[2 * i];
            y1 = y[2 * i + 1];
            if (NEGATE_Y) {
                y0 = negated(y0);
                y1 = negated(y1);
            }
            z = dw_apply<T, F, KIND>(x0, x1, y0, y1);
            leading = KIND == DW_ADD ? add_rn(x0, y0) : (KIND == DW_MUL ? mul_rn(x0, y0) : div_rn(x0, y0));
        }
        z = dw_nonfinite_rule(z, x0, x1, y0, y1, KIND != DW_SQRT, leading);
        if (RENORMALIZE) z = renormalize_pair(z);
        out[2 * i] = z.hi;
        out[2 * i + 1] = z.lo;
    }
}

}  // namespace expansions
