// Error-free transforms with explicit rounding (design decision 3); twin: expansions/cpu/eft.py.
//
// Every operation is a round-to-nearest-even intrinsic, so the compiler can neither contract a
// multiply-add nor reorder: the kernels are compiled with --fmad=false, --ftz=false and without
// fast math, and these functions perform the twin's operations in the twin's order.
#pragma once

namespace expansions {

// Round-to-nearest-even operations, overloaded on the term type (float64 and float32).
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double sub_rn(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double fma_rn(double a, double b, double c) { return __fma_rn(a, b, c); }
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float sub_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float fma_rn(float a, float b, float c) { return __fmaf_rn(a, b, c); }
__device__ __forceinline__ double div_rn(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ float div_rn(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double sqrt_rn(double a) { return __dsqrt_rn(a); }
__device__ __forceinline__ float sqrt_rn(float a) { return __fsqrt_rn(a); }

// A rounded result and its error: hi = RN(exact), lo = exact - hi (when representable).
template <class T>
struct TwoTerms {
    T hi;
    T lo;
};

// Knuth's 2Sum (paper Sec. II, [4]): hi = RN(a+b), lo = a+b-hi exactly; 6 operations, no
// precondition.  Mirrors two_sum in expansions/cpu/eft.py operation for operation.
template <class T>
__device__ __forceinline__ TwoTerms<T> two_sum(T a, T b) {
    const T s = add_rn(a, b);
    const T bb = sub_rn(s, a);
    const T e = add_rn(sub_rn(a, sub_rn(s, bb)), sub_rn(b, bb));
    return {s, e};
}

// 2ProdFMA (paper Sec. II, [4]): hi = RN(a*b), lo = RN(a*b - hi), exact unless lo underflows.
// Mirrors two_prod in expansions/cpu/eft.py (which emulates the FMA; see its docstring).
template <class T>
__device__ __forceinline__ TwoTerms<T> two_prod(T a, T b) {
    const T p = mul_rn(a, b);
    const T e = fma_rn(a, b, -p);
    return {p, e};
}

// VecSum in place (Ogita, Rump, Oishi 2005; Algorithm 3 of Joldes et al. 2016): a 2Sum chain from
// the last term up; afterwards v[0] is the approximate sum and the sum of v is unchanged (exactly).
// Twins: the VecSum loops of renormalize in expansions/cpu/kernels.py and of expansions/baselines.
template <class T, int N>
__device__ __forceinline__ void vec_sum(T (&v)[N]) {
    T s = v[N - 1];
#pragma unroll
    for (int i = N - 2; i >= 0; --i) {
        const TwoTerms<T> t = two_sum(v[i], s);
        s = t.hi;
        v[i + 1] = t.lo;
    }
    v[0] = s;
}

}  // namespace expansions
