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
        for (int k = 0; k < K; ++k) {
            const T xk = lane == 0 ? add_rn(xl, T(k)) : xl;
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
