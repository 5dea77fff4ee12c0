// Host emulation of the CUDA features the kernels of expansions/cuda use, for tests without a GPU
// (tests/test_cuda_emulated.py): g++ compiles the kernels' own sources against this header.
// Host emulation of the CUDA features used by expansions/cuda: lanes of a warp are ucontext
// coroutines; every warp collective (shuffle, ballot, any) is a rendezvous of all 32 lanes, which
// checks that the whole warp arrives (full-mask semantics) at the same kind of collective.
#pragma once
#include <ucontext.h>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))

struct emu_dim3 { unsigned x, y, z; };

namespace emu {
enum Op { SHFL = 1, SHFL_UP, SHFL_DOWN, SHFL_XOR, BALLOT, ANY };
struct Slot { uint64_t v; int arg; int width; int op; unsigned mask; };
struct State {
  ucontext_t sched;
  ucontext_t ctx[32];
  bool done[32];
  Slot slots[32];
  uint64_t results[32];
  int cur;
  emu_dim3 tid[32];
  emu_dim3 bid, bdim, gdim;
  std::function<void()> body;
  std::vector<char> stacks;
  long long collectives = 0;
  long long count[32];
};
inline State& st() { static State s; return s; }
[[noreturn]] inline void fail(const char* msg) { fprintf(stderr, "EMU ERROR: %s\n", msg); fflush(stderr); abort(); }
inline void trampoline() { st().body(); st().done[st().cur] = true; }
inline uint64_t collective(int op, uint64_t v, int arg, int width, unsigned mask) {
  State& s = st();
  s.slots[s.cur] = {v, arg, width, op, mask}; s.count[s.cur]++;
  swapcontext(&s.ctx[s.cur], &s.sched);
  return s.results[s.cur];
}
inline void resolve() {
  State& s = st();
  int op = s.slots[0].op, width = s.slots[0].width;
  for (int l = 0; l < 32; ++l) {
    if (s.slots[l].op != op) { for (int k = 0; k < 32; ++k) fprintf(stderr, "%d:%d/%d#%lld tid%u ", k, s.slots[k].op, s.slots[k].arg, s.count[k], s.tid[k].x); fail("lanes at different collectives"); }
    if (s.slots[l].width != width) fail("different widths");
    if (s.slots[l].mask != 0xffffffffu) fail("mask not full");
  }
  if (op == BALLOT || op == ANY) {
    uint64_t b = 0;
    for (int l = 0; l < 32; ++l) if (s.slots[l].v) b |= (1ull << l);
    for (int l = 0; l < 32; ++l) s.results[l] = (op == BALLOT) ? b : (b != 0);
    return;
  }
  if (width < 1 || width > 32 || (width & (width - 1))) fail("bad width");
  for (int l = 0; l < 32; ++l) {
    int base = l & ~(width - 1), src = l, a = s.slots[l].arg;
    if (op == SHFL) src = base + (a & (width - 1));
    else if (op == SHFL_UP) { if ((l & (width - 1)) >= a) src = l - a; }
    else if (op == SHFL_DOWN) { if ((l & (width - 1)) + a < width) src = l + a; }
    else if (op == SHFL_XOR) { int t = l ^ a; if (t >= base && t < base + width) src = t; }
    s.results[l] = s.slots[src].v;
  }
}
// Run one warp (32 lanes of block `b`, warp `w`) to completion.
inline void run_warp(unsigned w) {
  State& s = st();
  const size_t STACK = 1 << 17;
  s.stacks.resize(32 * STACK);
  for (int l = 0; l < 32; ++l) {
    s.done[l] = false; s.count[l] = 0;
    s.tid[l] = {w * 32u + l, 0, 0};
    getcontext(&s.ctx[l]);
    s.ctx[l].uc_stack.ss_sp = s.stacks.data() + l * STACK;
    s.ctx[l].uc_stack.ss_size = STACK;
    s.ctx[l].uc_link = &s.sched;
    makecontext(&s.ctx[l], (void (*)())trampoline, 0);
  }
  for (;;) {
    int ndone = 0;
    for (int l = 0; l < 32; ++l) {
      s.cur = l;
      if (!s.done[l]) swapcontext(&s.sched, &s.ctx[l]);
      ndone += s.done[l];
    }
    if (ndone == 32) return;
    if (ndone) fail("some lanes finished while others wait at a collective");
    ++s.collectives;
    resolve();
  }
}
inline void launch(unsigned grid, unsigned block, std::function<void()> kernel) {
  State& s = st();
  if (block % 32) fail("block not a multiple of 32");
  s.gdim = {grid, 1, 1}; s.bdim = {block, 1, 1}; s.body = kernel;
  for (unsigned b = 0; b < grid; ++b) {
    s.bid = {b, 0, 0};
    for (unsigned w = 0; w < block / 32; ++w) run_warp(w);
  }
}
template <class T> uint64_t bits(T v) { uint64_t u = 0; std::memcpy(&u, &v, sizeof(T)); return u; }
template <class T> T unbits(uint64_t u) { T v; std::memcpy(&v, &u, sizeof(T)); return v; }
}  // namespace emu

#define threadIdx (emu::st().tid[emu::st().cur])
#define blockIdx (emu::st().bid)
#define blockDim (emu::st().bdim)
#define gridDim (emu::st().gdim)

template <class T> T __shfl_sync(unsigned m, T v, int src, int w = 32) { return emu::unbits<T>(emu::collective(emu::SHFL, emu::bits(v), src, w, m)); }
template <class T> T __shfl_up_sync(unsigned m, T v, unsigned d, int w = 32) { return emu::unbits<T>(emu::collective(emu::SHFL_UP, emu::bits(v), (int)d, w, m)); }
template <class T> T __shfl_down_sync(unsigned m, T v, unsigned d, int w = 32) { return emu::unbits<T>(emu::collective(emu::SHFL_DOWN, emu::bits(v), (int)d, w, m)); }
template <class T> T __shfl_xor_sync(unsigned m, T v, int d, int w = 32) { return emu::unbits<T>(emu::collective(emu::SHFL_XOR, emu::bits(v), d, w, m)); }
inline unsigned __ballot_sync(unsigned m, int p) { return (unsigned)emu::collective(emu::BALLOT, p != 0, 0, 32, m); }
inline int __any_sync(unsigned m, int p) { return (int)emu::collective(emu::ANY, p != 0, 0, 32, m); }

inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fmaf_rn(float a, float b, float c) { return std::fmaf(a, b, c); }
inline long long __double_as_longlong(double v) { return emu::unbits<long long>(emu::bits(v)); }
inline double __longlong_as_double(long long v) { return emu::unbits<double>(emu::bits(v)); }
inline unsigned __float_as_uint(float v) { return (unsigned)emu::bits(v); }
inline float __uint_as_float(unsigned v) { return emu::unbits<float>(v); }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __dsqrt_rn(double a) { return std::sqrt(a); }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
