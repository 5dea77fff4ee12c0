// Double-word (R = 2) arithmetic, one thread per number: the algorithms of Joldes, Muller, Popescu,
// ACM TOMS 2017 (JMP, Algorithms 4-18), the QD library's additions, da Graça and Defour's float-float
// operators, Warwick's two-float multiplication and division, and the double-word square root of
// Lefèvre, Louvet, Muller, Picot, Rideau (ACM TOMS 2023, Algorithm 8).  Each functor mirrors the
// function of the same name (snake case) in expansions/dw/cpu.py operation for operation, with the
// explicit rounding intrinsics of eft.cuh (the twins emulate the FMA; the GPU has one).
#pragma once

#include "eft.cuh"

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

}  // namespace expansions
