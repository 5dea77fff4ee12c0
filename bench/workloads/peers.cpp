// The native peers of `python -m bench.workloads`: whole computations with QD 2.3 (dd_real at R = 2,
// qd_real at R = 4) and MPFR at 53 R bits (through a small value class), timed on the same inputs as
// the library's public API.  Built at run time by bench/workloads.py (g++ -O3 -march=native;
// -DBENCH_QD and/or -DBENCH_MPFR for the libraries present); never committed as a binary.
//
// usage: peers LIB R n dir work budget      (or: peers info)
//   LIB     qd or mpfr (QD: R = 2 -> dd_real, 4 -> qd_real; MPFR: 53 R bits)
//   n       elements in dir/x.bin and dir/y.bin (n * R float64 each, row-major, the library's terms)
//   work    sum, dot, horner, henon, logsumexp, lorenz (see bench/workloads.py for their definitions)
//   budget  seconds: the element count is grown from 64 (16x a step) until a call takes ~budget or
//           reaches n, then the median of 3 calls on that count is reported
// Output: one JSON line {"lib", "R", "work", "count", "seconds", "check"}: check is the leading
// double of the result on the first 64 elements (a reduction) or of the first element's result, for
// the sanity check against the library.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#ifdef BENCH_QD
#define QD_FMS(a, b, c) std::fma((a), (b), -(c))  // QD's two-product by an FMA (see bench/native/peers.cpp)
#include <qd/dd_real.h>
#include <qd/qd_real.h>
#endif
#ifdef BENCH_MPFR
#include <mpfr.h>
#endif

namespace {

std::vector<double> read_terms(const std::string &path, size_t count) {
  std::vector<double> v(count);
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f || std::fread(v.data(), sizeof(double), count, f) != count) {
    std::fprintf(stderr, "cannot read %zu doubles from %s\n", count, path.c_str());
    std::exit(2);
  }
  std::fclose(f);
  return v;
}

#ifdef BENCH_MPFR
mpfr_prec_t g_prec = 106;
// A value class over mpfr_t: every operation rounds once to g_prec bits (MPFR_RNDN).
struct Mp {
  mpfr_t v;
  Mp() { mpfr_init2(v, g_prec); mpfr_set_zero(v, 1); }
  Mp(double d) { mpfr_init2(v, g_prec); mpfr_set_d(v, d, MPFR_RNDN); }
  Mp(const Mp &o) { mpfr_init2(v, g_prec); mpfr_set(v, o.v, MPFR_RNDN); }
  Mp &operator=(const Mp &o) { mpfr_set(v, o.v, MPFR_RNDN); return *this; }
  ~Mp() { mpfr_clear(v); }
};
Mp operator+(const Mp &a, const Mp &b) { Mp r; mpfr_add(r.v, a.v, b.v, MPFR_RNDN); return r; }
Mp operator-(const Mp &a, const Mp &b) { Mp r; mpfr_sub(r.v, a.v, b.v, MPFR_RNDN); return r; }
Mp operator*(const Mp &a, const Mp &b) { Mp r; mpfr_mul(r.v, a.v, b.v, MPFR_RNDN); return r; }
Mp operator*(double a, const Mp &b) { Mp r; mpfr_mul_d(r.v, b.v, a, MPFR_RNDN); return r; }
Mp operator-(double a, const Mp &b) { Mp r; mpfr_d_sub(r.v, a, b.v, MPFR_RNDN); return r; }
Mp exp(const Mp &a) { Mp r; mpfr_exp(r.v, a.v, MPFR_RNDN); return r; }
Mp log(const Mp &a) { Mp r; mpfr_log(r.v, a.v, MPFR_RNDN); return r; }
bool operator<(const Mp &a, const Mp &b) { return mpfr_less_p(a.v, b.v); }
double lead(const Mp &a) { return mpfr_get_d(a.v, MPFR_RNDN); }
Mp from_terms(const double *t, int R) {
  Mp r(t[0]);
  for (int i = 1; i < R; ++i) mpfr_add_d(r.v, r.v, t[i], MPFR_RNDN);  // exact at 53 R bits for these inputs
  return r;
}
#endif
#ifdef BENCH_QD
double lead(const dd_real &a) { return a.x[0]; }
double lead(const qd_real &a) { return a.x[0]; }
template <class T> T from_terms_qd(const double *t);
template <> dd_real from_terms_qd<dd_real>(const double *t) { return dd_real(t[0], t[1]); }
template <> qd_real from_terms_qd<qd_real>(const double *t) { return qd_real(t[0], t[1], t[2], t[3]); }
#endif

// The workloads, on T (the definitions of bench/workloads.py); each returns the first result.
template <class T> T w_sum(const std::vector<T> &x, const std::vector<T> &, long n) {
  T s = x[0];
  for (long i = 1; i < n; ++i) s = s + x[i];
  return s;
}
template <class T> T w_dot(const std::vector<T> &x, const std::vector<T> &y, long n) {
  T s = x[0] * y[0];
  for (long i = 1; i < n; ++i) s = s + x[i] * y[i];
  return s;
}
template <class T> T w_horner(const std::vector<T> &x, const std::vector<T> &, long n) {
  T first;
  for (long i = 0; i < n; ++i) {
    T p(21.0 / 32.0);
    for (int k = 19; k >= 0; --k) p = p * x[i] + T((k + 1) / 32.0);
    if (i == 0) first = p;
  }
  return first;
}
template <class T> T w_henon(const std::vector<T> &x, const std::vector<T> &y, long n) {
  T first;
  for (long i = 0; i < n; ++i) {
    T a = 0.125 * x[i], b = 0.125 * y[i];
    for (int s = 0; s < 20; ++s) {
      T a2 = 1.0 - 1.375 * (a * a) + b;
      b = 0.3125 * a;
      a = a2;
    }
    if (i == 0) first = a;
  }
  return first;
}
template <class T> T w_logsumexp(const std::vector<T> &x, const std::vector<T> &, long n) {
  T m = x[0];
  for (long i = 1; i < n; ++i)
    if (m < x[i]) m = x[i];
  T s = exp(x[0] - m);
  for (long i = 1; i < n; ++i) s = s + exp(x[i] - m);
  return m + log(s);
}
template <class T> T w_lorenz(const std::vector<T> &x, const std::vector<T> &y, long n) {
  const double sigma = 10.0, rho = 28.0, beta = 2.625, h = 1.0 / 256;
  T first;
  for (long i = 0; i < n; ++i) {
    T X = x[i], Y = y[i], Z = x[i] * y[i];
    for (int s = 0; s < 10; ++s) {
      auto f = [&](const T &a, const T &b, const T &c, T &da, T &db, T &dc) {
        da = sigma * (b - a);
        db = a * (rho - c) - b;
        dc = a * b - beta * c;
      };
      T k1a, k1b, k1c, k2a, k2b, k2c, k3a, k3b, k3c, k4a, k4b, k4c;
      f(X, Y, Z, k1a, k1b, k1c);
      f(X + (h / 2) * k1a, Y + (h / 2) * k1b, Z + (h / 2) * k1c, k2a, k2b, k2c);
      f(X + (h / 2) * k2a, Y + (h / 2) * k2b, Z + (h / 2) * k2c, k3a, k3b, k3c);
      f(X + h * k3a, Y + h * k3b, Z + h * k3c, k4a, k4b, k4c);
      X = X + (h / 6) * (k1a + 2.0 * k2a + 2.0 * k3a + k4a);
      Y = Y + (h / 6) * (k1b + 2.0 * k2b + 2.0 * k3b + k4b);
      Z = Z + (h / 6) * (k1c + 2.0 * k2c + 2.0 * k3c + k4c);
    }
    if (i == 0) first = X;
  }
  return first;
}

template <class T>
void run(const char *lib, int R, const std::vector<T> &x, const std::vector<T> &y, const std::string &work,
         double budget) {
  T (*f)(const std::vector<T> &, const std::vector<T> &, long) = nullptr;
  if (work == "sum") f = w_sum<T>;
  else if (work == "dot") f = w_dot<T>;
  else if (work == "horner") f = w_horner<T>;
  else if (work == "henon") f = w_henon<T>;
  else if (work == "logsumexp") f = w_logsumexp<T>;
  else if (work == "lorenz") f = w_lorenz<T>;
  else { std::fprintf(stderr, "unknown work %s\n", work.c_str()); std::exit(2); }
  long n = (long)x.size();
  auto timed = [&](long k, T &out) {
    auto t0 = std::chrono::steady_clock::now();
    out = f(x, y, k);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  T out;
  long k = std::min(64L, n);
  double t = timed(k, out);
  while (k < n && t < budget) {
    long next = std::min(n, std::max(k + 1, (long)(k * std::min(16.0, budget / std::max(t, 1e-9)))));
    k = next;
    t = timed(k, out);
  }
  double ts[3];
  for (double &v : ts) v = timed(k, out);
  std::sort(ts, ts + 3);
  out = f(x, y, std::min(64L, n));  // the sanity check's result: the first 64 elements
  std::printf("{\"lib\": \"%s\", \"R\": %d, \"work\": \"%s\", \"count\": %ld, \"seconds\": %.9g, \"check\": \"%.17g\"}\n",
              lib, R, work.c_str(), k, ts[1], lead(out));
}

}  // namespace

int main(int argc, char **argv) {
  if (argc == 2 && std::strcmp(argv[1], "info") == 0) {
    std::printf("{\"qd\": %s, \"mpfr\": %s}\n",
#ifdef BENCH_QD
                "true",
#else
                "false",
#endif
#ifdef BENCH_MPFR
                "\"" MPFR_VERSION_STRING "\""
#else
                "false"
#endif
    );
    return 0;
  }
  if (argc != 7) {
    std::fprintf(stderr, "usage: peers LIB R n dir work budget\n");
    return 2;
  }
  std::string lib = argv[1], dir = argv[4], work = argv[5];
  int R = std::atoi(argv[2]);
  long n = std::atol(argv[3]);
  double budget = std::atof(argv[6]);
  std::vector<double> xt = read_terms(dir + "/x.bin", (size_t)n * R), yt = read_terms(dir + "/y.bin", (size_t)n * R);
#ifdef BENCH_QD
  if (lib == "qd" && R == 2) {
    std::vector<dd_real> x(n), y(n);
    for (long i = 0; i < n; ++i) { x[i] = from_terms_qd<dd_real>(&xt[i * R]); y[i] = from_terms_qd<dd_real>(&yt[i * R]); }
    run("qd", R, x, y, work, budget);
    return 0;
  }
  if (lib == "qd" && R == 4) {
    std::vector<qd_real> x(n), y(n);
    for (long i = 0; i < n; ++i) { x[i] = from_terms_qd<qd_real>(&xt[i * R]); y[i] = from_terms_qd<qd_real>(&yt[i * R]); }
    run("qd", R, x, y, work, budget);
    return 0;
  }
#endif
#ifdef BENCH_MPFR
  if (lib == "mpfr") {
    g_prec = 53 * R;
    std::vector<Mp> x(n), y(n);
    for (long i = 0; i < n; ++i) { x[i] = from_terms(&xt[i * R], R); y[i] = from_terms(&yt[i * R], R); }
    run("mpfr", R, x, y, work, budget);
    return 0;
  }
#endif
  std::fprintf(stderr, "no %s peer at R = %d in this build\n", lib.c_str(), R);
  return 3;
}
