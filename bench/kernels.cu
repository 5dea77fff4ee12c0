// Benchmark kernels for the paper's scenarios (Collange et al. 2016, Sec. VI), compiled after the
// library's kernels (expansions.cuda.build.source()) in one NVRTC program by bench/gpu.py.
//
// best<Op, T, R>:   each lane group loads x and y once, then runs K operations in registers
//                   (iteration k adds k to x_0 so that no iteration can be hoisted, and folds the
//                   result into an accumulator), stores the accumulator.  Mop/s = groups * K / time.
// shmem<Op, T, R>:  the same, with `bytes_per_thread` bytes of dynamic shared memory per thread
//                   (256 B per expansion term in the paper), written at the start and read at the
//                   end so that it is really used: it limits how many warps an SM holds.
// The streaming scenario uses the library's own kernels (load, one operation, store).
namespace bench {
using namespace expansions;

template <class T, int R, int W>
struct SafeAdd {
    __device__ __forceinline__ T operator()(T x, T y, int lane) const { return add_safe_group<T, R, R, R, W>(x, y, lane); }
};
template <class T, int R, int W>
struct FastAdd {
    __device__ __forceinline__ T operator()(T x, T y, int lane) const { return add_fast_group<T, R, R, R, W>(x, y, lane); }
};
template <class T, int R, int W>
struct TruncMul {
    __device__ __forceinline__ T operator()(T x, T y, int lane) const {
        return mul_truncated_group<T, R, R, R, W>(x, y, lane);
    }
};

template <template <class, int, int> class Op, class T, int R>
__device__ __forceinline__ void run_k(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out,
                                      long long count, int K, T* __restrict__ scratch) {
    constexpr int W = group_width(R);
    const Op<T, R, W> op;
    for_each_group<W>(count, [&](long long index, bool valid, int lane) {
        const T xl = load_term<R>(x, index, valid, lane);
        const T yl = load_term<R>(y, index, valid, lane);
        T acc = T(0);
        if (scratch) scratch[threadIdx.x] = xl;
        // One operation per iteration (no unrolling): the instruction model (bench/model/) reads
        // the steady state of one operation from this loop's body.  x varies with k (so the operation
        // is not hoisted) by an exact scaling of every term by 1 or 2, which keeps the operand an
        // expansion the multiplication takes as it is (a change of x_0 alone could break the
        // positional condition and send the groups through the renormalization of its check).
#pragma unroll 1
        for (int k = 0; k < K; ++k) {
            const T xk = mul_rn(xl, T(1 + (k & 1)));
            acc = add_rn(acc, op(xk, yl, lane));
        }
        if (scratch) acc = add_rn(acc, scratch[threadIdx.x]);
        store_term<R>(out, index, valid, lane, acc);
    });
}

template <template <class, int, int> class Op, class T, int R>
__global__ void best(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out, long long count, int K) {
    run_k<Op, T, R>(x, y, out, count, K, nullptr);
}

template <template <class, int, int> class Op, class T, int R>
__global__ void shmem(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out, long long count, int K) {
    extern __shared__ unsigned char reserved[];  // bytes_per_thread * blockDim.x, set at launch
    run_k<Op, T, R>(x, y, out, count, K, reinterpret_cast<T*>(reserved));
}

}  // namespace bench

// Sequential baselines, one expansion per thread, SoA layout (term k of every expansion contiguous:
// coalesced loads).  best_seq: K operations in registers per load; shmem_seq: the same with
// R * 256 bytes of dynamic shared memory per thread reserved and touched.
namespace bench {
using namespace expansions;

template <class T, int R> struct CertAdd {
    __device__ static void apply(const T (&x)[R], const T (&y)[R], T (&r)[R]) { certified_add_thread<T, R>(x, y, r); }
};
template <class T, int R> struct CertMul {
    __device__ static void apply(const T (&x)[R], const T (&y)[R], T (&r)[R]) { certified_mul_thread<T, R>(x, y, r); }
};
template <class T, int R> struct DdAddIeee {
    __device__ static void apply(const T (&x)[2], const T (&y)[2], T (&r)[2]) { dd_add_ieee_thread<T>(x, y, r); }
};
template <class T, int R> struct DdMul {
    __device__ static void apply(const T (&x)[2], const T (&y)[2], T (&r)[2]) { dd_mul_thread<T>(x, y, r); }
};
template <class T, int R> struct QdAddIeeeSeq {
    __device__ static void apply(const T (&x)[4], const T (&y)[4], T (&r)[4]) { qd_add_ieee_thread<T>(x, y, r); }
};
template <class T, int R> struct QdMulSeq {
    __device__ static void apply(const T (&x)[4], const T (&y)[4], T (&r)[4]) { qd_mul_thread<T>(x, y, r); }
};

template <template <class, int> class Op, class T, int R>
__device__ __forceinline__ void run_seq(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out,
                                        long long count, int K, T* __restrict__ scratch) {
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        T xv[R], yv[R], acc[R], r[R];
#pragma unroll
        for (int k = 0; k < R; ++k) {
            xv[k] = x[k * count + i];
            yv[k] = y[k * count + i];
            acc[k] = T(0);
        }
        if (scratch) scratch[threadIdx.x] = xv[0];
#pragma unroll 1  // one operation per iteration, as in run_k
        for (int kk = 0; kk < K; ++kk) {
            T xk[R];
#pragma unroll
            for (int k = 0; k < R; ++k) xk[k] = xv[k];
            xk[0] = add_rn(xk[0], T(kk));
            Op<T, R>::apply(xk, yv, r);
#pragma unroll
            for (int k = 0; k < R; ++k) acc[k] = add_rn(acc[k], r[k]);
        }
        if (scratch) acc[0] = add_rn(acc[0], scratch[threadIdx.x]);
#pragma unroll
        for (int k = 0; k < R; ++k) out[k * count + i] = acc[k];
    }
}

template <template <class, int> class Op, class T, int R>
__global__ void best_seq(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out, long long count, int K) {
    run_seq<Op, T, R>(x, y, out, count, K, nullptr);
}

template <template <class, int> class Op, class T, int R>
__global__ void shmem_seq(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out, long long count, int K) {
    extern __shared__ unsigned char reserved_seq[];  // R * 256 bytes per thread, set at launch
    run_seq<Op, T, R>(x, y, out, count, K, reinterpret_cast<T*>(reserved_seq));
}

}  // namespace bench

// The double-word (R = 2) algorithms of dw.cuh, one thread per number, grid-stride, as the library
// runs them at R = 2 (dispatch.R2_DEFAULTS, R2_METHODS): the kernels of the instruction model's
// section "R = 2: double-word kernels beside CCCL fpmp" (bench/model/) and of bench/dw_gpu.py.
//
// best_dw<F, T>:       x and y (double-words, (count, 2) rows hi, lo) are loaded once, then K
//                      operations run in registers as the dependent chain z_{k+1} = F(z_k, z_{k-1})
//                      (z_{-1} = x, z_0 = y), two operations per loop iteration with the operands'
//                      roles alternating (a = F(b, a); b = F(a, b)), and the last result is stored.
//                      K must be even.  No floating-point operation besides the algorithm's: no
//                      offset, no accumulator.  Both operands change in every operation, so nothing
//                      that depends on one operand only (the reciprocal of y in Algorithm 18, the
//                      split of y in da Graca and Defour's product, the division's own refinement of
//                      y) can be hoisted out of the loop, as it would be in a chain x = F(x, y) with
//                      y fixed; and no register moves are needed to swap the roles (a chain
//                      z = F(x, y); y = x; x = z costs 4-8 moves per operation).  Magnitudes: the
//                      logarithms of a division's chain are periodic (period 6); those of a
//                      product's grow as Fibonacci numbers (bench/dw_gpu.py draws factors near 1).
// best_dw_unary<F, T>: the same for a one-operand algorithm (the square root): a = F(a), twice per
//                      iteration.  Mop/s = count * K / time.
namespace bench {
using namespace expansions;

template <class F, class T>
__global__ void best_dw(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out, long long count,
                        int K) {
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        TwoTerms<T> a{x[2 * i], x[2 * i + 1]};
        TwoTerms<T> b{y[2 * i], y[2 * i + 1]};
        // Two operations per iteration (no further unrolling): the instruction model reads the steady
        // state of two operations from this loop's body (per_warp_iteration = 64).
#pragma unroll 1
        for (int k = 0; k < K; k += 2) {
            a = F::apply(b.hi, b.lo, a.hi, a.lo);
            b = F::apply(a.hi, a.lo, b.hi, b.lo);
        }
        out[2 * i] = b.hi;
        out[2 * i + 1] = b.lo;
    }
}

template <class F, class T>
__global__ void best_dw_unary(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out,
                              long long count, int K) {
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        TwoTerms<T> a{x[2 * i], x[2 * i + 1]};
#pragma unroll 1
        for (int k = 0; k < K; k += 2) {
            a = F::apply(a.hi, a.lo);
            a = F::apply(a.hi, a.lo);
        }
        out[2 * i] = a.hi;
        out[2 * i + 1] = a.lo;
    }
}

}  // namespace bench
