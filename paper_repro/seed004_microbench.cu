// Microbenchmarks of seed 004 (Surineni 2017, chapter 3 and Figure 27), driven by
// paper_repro/seed004_gpu.py.  Each kernel runs `iters` rounds of UNROLL steps of one operation and
// reads clock64() between barriers (the thesis's fix: __syncthreads() keeps the compiler from moving
// the clock reads across the loop).
//
// * latency<T, OP>: one dependent chain per thread (a = op(a)); launched as one warp, the cycles per
//   step are the operation's latency.  The driver takes the difference of two iteration counts, so
//   the fixed cost of the clock reads and barriers cancels.
// * throughput<T, OP, CHAINS>: CHAINS independent chains per thread, many warps; each block records
//   its start and stop clocks and the multiprocessor it ran on (%smid), and the driver divides the
//   steps run on a multiprocessor by the cycles between its first start and its last stop.
// * mixed<CHAINS_F, CHAINS_D>: Figure 27, float and double additions interleaved in one thread.
//
// The operand values keep every chain finite and away from the special-value paths: a + b with a
// tiny b, a * 1, fma(a, 1, 0), 1 / a and b / a alternating between two values, sqrt converging to 1,
// exp2(-a) converging to its fixed point 0.641..., shuffles exchanging lanes.  Operands come in as
// kernel arguments so that the compiler cannot fold them.
//
// The library's operations (LIBRARY section, compiled after kernels.cu with the library's options):
// the double-word functors of dw.cuh on (hi, lo) pairs, one thread per number, and the lane-group
// device functions (add_safe_group, mul_truncated_group, each followed by renormalize_group as the
// op-by-op kernels do) on W lanes per expansion.

#ifndef UNROLL
#define UNROLL 16
#endif

namespace microbench {

enum Op { ADD = 0, MUL = 1, FMA = 2, DIV = 3, RCP = 4, SQRT = 5, EXP2 = 6, FDIVIDEF = 7, SHFL = 8 };

__device__ __forceinline__ float op_sqrt(float a) { return sqrtf(a); }
__device__ __forceinline__ double op_sqrt(double a) { return sqrt(a); }
__device__ __forceinline__ float op_exp2(float a) { return exp2f(a); }
__device__ __forceinline__ double op_exp2(double a) { return exp2(a); }
__device__ __forceinline__ float op_fma(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double op_fma(double a, double b, double c) { return fma(a, b, c); }
__device__ __forceinline__ float op_fdividef(float a, float b) { return __fdividef(a, b); }
__device__ __forceinline__ double op_fdividef(double a, double b) { return a / b; }

// One step of the chain: b = tiny (ADD), 1 (MUL, FMA, DIV), c = 0.
template <class T, int OP>
__device__ __forceinline__ T step(T a, T b, T c) {
    if constexpr (OP == ADD) return a + b;
    else if constexpr (OP == MUL) return a * b;
    else if constexpr (OP == FMA) return op_fma(a, b, c);
    else if constexpr (OP == DIV) return b / a;
    else if constexpr (OP == RCP) return T(1) / a;
    else if constexpr (OP == SQRT) return op_sqrt(a);
    else if constexpr (OP == EXP2) return op_exp2(-a);
    else if constexpr (OP == FDIVIDEF) return op_fdividef(b, a);
    else return __shfl_xor_sync(0xffffffffu, a, 1);
}

__device__ __forceinline__ unsigned smid() {
    unsigned id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    return id;
}

// clocks[3 * block + {0, 1, 2}] = start, stop, multiprocessor
__device__ __forceinline__ void record(long long* clocks, long long start, long long stop) {
    if (threadIdx.x == 0) {
        clocks[3 * blockIdx.x] = start;
        clocks[3 * blockIdx.x + 1] = stop;
        clocks[3 * blockIdx.x + 2] = smid();
    }
}

template <class T, int OP>
__global__ void latency(T* out, long long* clocks, T a0, T b, T c, int iters) {
    T a = a0;
    __syncthreads();
    const long long start = clock64();
    __syncthreads();
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) a = step<T, OP>(a, b, c);
    }
    __syncthreads();
    const long long stop = clock64();
    out[blockIdx.x * blockDim.x + threadIdx.x] = a;
    record(clocks, start, stop);
}

template <class T, int OP, int CHAINS>
__global__ void throughput(T* out, long long* clocks, T a0, T b, T c, int iters) {
    T a[CHAINS];
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) a[j] = a0 + T(j) * T(0.0625);
    __syncthreads();
    const long long start = clock64();
    __syncthreads();
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) {
#pragma unroll
            for (int j = 0; j < CHAINS; ++j) a[j] = step<T, OP>(a[j], b, c);
        }
    }
    __syncthreads();
    const long long stop = clock64();
    T s = T(0);
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) s += a[j];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
    record(clocks, start, stop);
}

// Figure 27: CHAINS_F float and CHAINS_D double addition chains interleaved (either may be 0).
template <int CHAINS_F, int CHAINS_D>
__global__ void mixed(float* outf, double* outd, long long* clocks, float bf, double bd, int iters) {
    float f[CHAINS_F > 0 ? CHAINS_F : 1];
    double d[CHAINS_D > 0 ? CHAINS_D : 1];
#pragma unroll
    for (int j = 0; j < CHAINS_F; ++j) f[j] = 1.0f + j * 0.0625f;
#pragma unroll
    for (int j = 0; j < CHAINS_D; ++j) d[j] = 1.0 + j * 0.0625;
    __syncthreads();
    const long long start = clock64();
    __syncthreads();
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) {
#pragma unroll
            for (int j = 0; j < (CHAINS_F > CHAINS_D ? CHAINS_F : CHAINS_D); ++j) {
                if (j < CHAINS_F) f[j] = f[j] + bf;
                if (j < CHAINS_D) d[j] = d[j] + bd;
            }
        }
    }
    __syncthreads();
    const long long stop = clock64();
    float sf = 0.0f;
    double sd = 0.0;
#pragma unroll
    for (int j = 0; j < CHAINS_F; ++j) sf += f[j];
#pragma unroll
    for (int j = 0; j < CHAINS_D; ++j) sd += d[j];
    outf[blockIdx.x * blockDim.x + threadIdx.x] = sf;
    outd[blockIdx.x * blockDim.x + threadIdx.x] = sd;
    record(clocks, start, stop);
}

}  // namespace microbench

#ifdef LIBRARY
namespace microbench {

// Double-word operations of dw.cuh: x = F(x, y) (F(x) for the square root), CHAINS numbers per thread.
template <class T, class F, int ARITY, int CHAINS>
__global__ void dw_chain(T* out, long long* clocks, T xh, T xl, T yh, T yl, int iters) {
    T h[CHAINS], l[CHAINS];
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) {
        h[j] = xh + T(j) * T(0.0625);
        l[j] = xl;
    }
    __syncthreads();
    const long long start = clock64();
    __syncthreads();
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) {
#pragma unroll
            for (int j = 0; j < CHAINS; ++j) {
                expansions::TwoTerms<T> z;
                if constexpr (ARITY == 1) z = F::apply(h[j], l[j]);
                else z = F::apply(h[j], l[j], yh, yl);
                h[j] = z.hi;
                l[j] = z.lo;
            }
        }
    }
    __syncthreads();
    const long long stop = clock64();
    T s = T(0);
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) s += h[j] + l[j];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
    record(clocks, start, stop);
}

// R-term operations on lane groups of W lanes: x = renormalize(op(x, y)), CHAINS expansions per group.
// OP: 0 safe addition, 1 truncated multiplication.  y's terms: y0 on lane 0, y0 * 2^-60 on lane 1.
template <class T, int R, int OP, int CHAINS>
__global__ void group_chain(T* out, long long* clocks, T x0, T y0, int iters) {
    constexpr int W = expansions::group_width(R);
    const int lane = threadIdx.x % W;
    T x[CHAINS];
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) x[j] = lane == 0 ? x0 + T(j) * T(0.0625) : T(0);
    const T y = lane == 0 ? y0 : (lane == 1 ? y0 * T(8.673617379884035e-19) : T(0));  // 2^-60
    __syncthreads();
    const long long start = clock64();
    __syncthreads();
    for (int i = 0; i < iters; ++i) {
#pragma unroll 1
        for (int k = 0; k < UNROLL; ++k) {
#pragma unroll
            for (int j = 0; j < CHAINS; ++j) {
                T v;
                if constexpr (OP == 0) v = expansions::add_safe_group<T, R, R, R, W>(x[j], y, lane);
                else v = expansions::mul_truncated_group<T, R, R, R, W>(x[j], y, lane);
                v = expansions::renormalize_group<T, R, R, W>(v, lane);
                x[j] = lane < R ? v : T(0);
            }
        }
    }
    __syncthreads();
    const long long stop = clock64();
    T s = T(0);
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) s += x[j];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
    record(clocks, start, stop);
}

}  // namespace microbench
#endif
