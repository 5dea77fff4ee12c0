// The native peers of `python -m bench.native`: QD 2.3 (dd_real, qd_real) and MPFR at 53 R bits,
// timed on the same inputs as the library's public operators.  Built at run time by bench/native.py
// (g++ -O3 -march=native; -DBENCH_QD and/or -DBENCH_MPFR for the libraries present, -fopenmp when
// the compiler has it); never committed as a binary.
//
// usage: peers R n dir libs ops repeats budget check threads    (or: peers info)
//   R        terms of the library's operands (QD: 2 -> dd_real, 4 -> qd_real; MPFR: 53 R bits)
//   n        elements in dir/x.bin, dir/y.bin, dir/p.bin (n * R float64 each, row-major, the
//            library's terms: x, y, and |x| for sqrt and log)
//   libs     comma-separated: qd, qd_ieee (QD's ieee_add for + and -), mpfr
//   ops      comma-separated: add, sub, mul, div, sqrt, exp, log, sin
//   repeats  timed calls after the sizing calls; the median is reported
//   budget   seconds: where a call on n elements would take longer, fewer elements are timed (the
//            sizing calls grow the count at most 16x a step from 64 until one call takes ~budget),
//            and fewer repeats where a call on 64 elements takes more than twice the budget
//            (repeats * budget / seconds, at least one)
//   check    results of the first `check` elements printed exactly (QD: its doubles as %a; MPFR:
//            mpfr_get_str base 16), for the sanity check against the library
//   threads  OpenMP threads of the timed loops (1: one core, no parallel region entered)
//
// Output: one JSON object a line per (lib, op).  Inputs: QD takes the terms as they are (the
// library's expansions are correctly rounded, so each term is within half an ulp of the previous
// one: QD's normalized form, exactly the same value); MPFR takes the exact sum of the R terms
// rounded once to 53 R bits (mpfr_sum, MPFR_RNDN).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>
#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef BENCH_QD
// QD's two-product by a fused multiply-subtract, as QD's configure sets it up on machines with an FMA
// (Debian's qd_config.h leaves QD_FMS undefined, for any x86-64).  Without it QD splits the factors
// (Dekker), and with -march=native GCC contracts that split itself into FMAs (-ffp-contract=fast is
// GCC's default), which breaks it: dd_real's * and / then agree with MPFR to about 53 bits only.
#define QD_FMS(a, b, c) std::fma((a), (b), -(c))
#include <qd/dd_real.h>
#include <qd/qd_real.h>
#endif
#ifdef BENCH_MPFR
#include <mpfr.h>
#endif

namespace {

int g_threads = 1;

std::vector<std::string> split(const std::string &s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

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

// body(i) for i in [0, k): on one thread as a plain loop, else an OpenMP static schedule
template <class Body>
void loop(long k, Body body) {
#ifdef _OPENMP
  if (g_threads > 1) {
#pragma omp parallel for schedule(static) num_threads(g_threads)
    for (long i = 0; i < k; ++i) body(i);
    return;
  }
#endif
  for (long i = 0; i < k; ++i) body(i);
}

double seconds_of(const std::function<void(long)> &run, long k) {
  auto t0 = std::chrono::steady_clock::now();
  run(k);
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(t1 - t0).count();
}

struct Timing {
  long n;
  std::vector<double> seconds;
  std::vector<double> sizing;  // the sizing calls' seconds (the first is the warm-up)
};

// the sizing rule described above (bench/native.py's measure), then the timed calls on the chosen count
Timing measure(const std::function<void(long)> &run, long n, int repeats, double budget) {
  Timing t;
  long k = std::min(n, 64L);
  double s = seconds_of(run, k);
  t.sizing.push_back(s);
  while (k < n) {
    double scale = budget / std::max(s, 1e-9);
    long next = std::min({n, 16 * k, (long)(k * scale)});
    if (next <= k) break;
    k = next;
    s = seconds_of(run, k);
    t.sizing.push_back(s);
  }
  t.n = k;
  int calls = s <= 2 * budget ? repeats : std::max(1, std::min(repeats, (int)(repeats * budget / s)));
  for (int r = 0; r < calls; ++r) t.seconds.push_back(seconds_of(run, k));
  return t;
}

void print_timing(const char *lib, int R, const std::string &op, const Timing &t, const std::string &check) {
  std::vector<double> s = t.seconds;
  std::sort(s.begin(), s.end());
  double med = s.size() % 2 ? s[s.size() / 2] : 0.5 * (s[s.size() / 2 - 1] + s[s.size() / 2]);
  std::printf("{\"lib\": \"%s\", \"R\": %d, \"op\": \"%s\", \"n\": %ld, \"threads\": %d, \"mops\": %.6g, \"seconds\": [",
              lib, R, op.c_str(), t.n, g_threads, t.n / med / 1e6);
  for (size_t i = 0; i < t.seconds.size(); ++i) std::printf("%s%.9g", i ? ", " : "", t.seconds[i]);
  std::printf("], \"sizing_seconds\": [");
  for (size_t i = 0; i < t.sizing.size(); ++i) std::printf("%s%.9g", i ? ", " : "", t.sizing[i]);
  std::printf("], \"check\": [%s]}\n", check.c_str());
  std::fflush(stdout);
}

#ifdef BENCH_QD
template <class T, int R>
T from_terms(const double *t) {
  if constexpr (R == 2) return T(t[0], t[1]);
  else return T(t[0], t[1], t[2], t[3]);
}

template <class T, int R>
void run_qd(const char *lib, bool ieee, long n, const std::vector<std::string> &ops, const std::vector<double> &xt,
            const std::vector<double> &yt, const std::vector<double> &pt, int repeats, double budget, int check) {
  std::vector<T> x(n), y(n), p(n), out(n);
  for (long i = 0; i < n; ++i) {
    x[i] = from_terms<T, R>(&xt[i * R]);
    y[i] = from_terms<T, R>(&yt[i * R]);
    p[i] = from_terms<T, R>(&pt[i * R]);
  }
  for (const auto &op : ops) {
    std::function<void(long)> run;
    if (op == "add") {
      if (ieee) run = [&](long k) { loop(k, [&](long i) { out[i] = T::ieee_add(x[i], y[i]); }); };
      else run = [&](long k) { loop(k, [&](long i) { out[i] = x[i] + y[i]; }); };
    } else if (op == "sub") {
      if (ieee) run = [&](long k) { loop(k, [&](long i) { out[i] = T::ieee_add(x[i], -y[i]); }); };
      else run = [&](long k) { loop(k, [&](long i) { out[i] = x[i] - y[i]; }); };
    } else if (ieee) {
      continue;  // qd_ieee differs from qd only in + and -
    } else if (op == "mul") run = [&](long k) { loop(k, [&](long i) { out[i] = x[i] * y[i]; }); };
    else if (op == "div") run = [&](long k) { loop(k, [&](long i) { out[i] = x[i] / y[i]; }); };
    else if (op == "sqrt") run = [&](long k) { loop(k, [&](long i) { out[i] = sqrt(p[i]); }); };
    else if (op == "exp") run = [&](long k) { loop(k, [&](long i) { out[i] = exp(x[i]); }); };
    else if (op == "log") run = [&](long k) { loop(k, [&](long i) { out[i] = log(p[i]); }); };
    else if (op == "sin") run = [&](long k) { loop(k, [&](long i) { out[i] = sin(x[i]); }); };
    else continue;
    Timing t = measure(run, n, repeats, budget);
    std::string c;
    char buf[64];
    for (int i = 0; i < check && i < t.n; ++i) {
      c += i ? ", [" : "[";
      for (int j = 0; j < R; ++j) {
        std::snprintf(buf, sizeof buf, "%s\"%a\"", j ? ", " : "", out[i].x[j]);
        c += buf;
      }
      c += "]";
    }
    print_timing(lib, R, op, t, c);
  }
}
#endif

#ifdef BENCH_MPFR
// n preinitialised numbers of one precision (mpfr_t is an array type: the vector holds its struct)
struct MpfrArray {
  std::vector<__mpfr_struct> v;
  MpfrArray(long n, mpfr_prec_t prec) : v(n) {
    for (auto &a : v) mpfr_init2(&a, prec);
  }
  ~MpfrArray() {
    for (auto &a : v) mpfr_clear(&a);
  }
  MpfrArray(const MpfrArray &) = delete;
  MpfrArray &operator=(const MpfrArray &) = delete;
  mpfr_ptr operator[](long i) { return &v[i]; }
};

// each row's R terms summed exactly and rounded once to the array's precision
void mpfr_from_terms(MpfrArray &a, const std::vector<double> &t, int R) {
  MpfrArray terms(R, 53);
  std::vector<mpfr_ptr> ptrs(R);
  for (int j = 0; j < R; ++j) ptrs[j] = terms[j];
  for (long i = 0; i < (long)a.v.size(); ++i) {
    for (int j = 0; j < R; ++j) mpfr_set_d(terms[j], t[i * R + j], MPFR_RNDN);  // exact
    mpfr_sum(a[i], ptrs.data(), R, MPFR_RNDN);
  }
}

void run_mpfr(int R, long n, const std::vector<std::string> &ops, const std::vector<double> &xt,
              const std::vector<double> &yt, const std::vector<double> &pt, int repeats, double budget, int check) {
  mpfr_prec_t prec = 53 * R;
  MpfrArray x(n, prec), y(n, prec), p(n, prec), out(n, prec);
  mpfr_from_terms(x, xt, R);
  mpfr_from_terms(y, yt, R);
  mpfr_from_terms(p, pt, R);
  for (const auto &op : ops) {
    std::function<void(long)> run;
    if (op == "add") run = [&](long k) { loop(k, [&](long i) { mpfr_add(out[i], x[i], y[i], MPFR_RNDN); }); };
    else if (op == "sub") run = [&](long k) { loop(k, [&](long i) { mpfr_sub(out[i], x[i], y[i], MPFR_RNDN); }); };
    else if (op == "mul") run = [&](long k) { loop(k, [&](long i) { mpfr_mul(out[i], x[i], y[i], MPFR_RNDN); }); };
    else if (op == "div") run = [&](long k) { loop(k, [&](long i) { mpfr_div(out[i], x[i], y[i], MPFR_RNDN); }); };
    else if (op == "sqrt") run = [&](long k) { loop(k, [&](long i) { mpfr_sqrt(out[i], p[i], MPFR_RNDN); }); };
    else if (op == "exp") run = [&](long k) { loop(k, [&](long i) { mpfr_exp(out[i], x[i], MPFR_RNDN); }); };
    else if (op == "log") run = [&](long k) { loop(k, [&](long i) { mpfr_log(out[i], p[i], MPFR_RNDN); }); };
    else if (op == "sin") run = [&](long k) { loop(k, [&](long i) { mpfr_sin(out[i], x[i], MPFR_RNDN); }); };
    else continue;
    Timing t = measure(run, n, repeats, budget);
    std::string c;
    for (int i = 0; i < check && i < t.n; ++i) {
      mpfr_exp_t e = 0;
      char *digits = mpfr_get_str(nullptr, &e, 16, 0, out[i], MPFR_RNDN);  // exact: 0.digits * 16^e
      c += (i ? ", [\"" : "[\"") + std::string(digits) + "\", " + std::to_string((long)e) + "]";
      mpfr_free_str(digits);
    }
    print_timing("mpfr", R, op, t, c);
  }
}
#endif

}  // namespace

// `peers info`: what the program was built with, as one JSON object
void print_info() {
  std::printf("{");
#ifdef BENCH_QD
  std::printf("\"qd_config\": \"QD_IEEE_ADD %s, QD_SLOPPY_MUL %s, QD_SLOPPY_DIV %s, QD_FMS %s\", ",
#ifdef QD_IEEE_ADD
              "defined",
#else
              "undefined (sloppy + and -)",
#endif
#ifdef QD_SLOPPY_MUL
              "defined",
#else
              "undefined",
#endif
#ifdef QD_SLOPPY_DIV
              "defined",
#else
              "undefined",
#endif
#ifdef QD_FMS
              "defined"
#else
              "undefined"
#endif
  );
#endif
#ifdef BENCH_MPFR
  std::printf("\"mpfr\": \"%s\", \"gmp\": \"%s\", \"mpfr_thread_safe\": %s, ", mpfr_get_version(), gmp_version,
              mpfr_buildopt_tls_p() ? "true" : "false");
#endif
#ifdef _OPENMP
  std::printf("\"openmp\": %d}\n", _OPENMP);
#else
  std::printf("\"openmp\": null}\n");
#endif
}

int main(int argc, char **argv) {
  if (argc == 2 && std::string(argv[1]) == "info") {
    print_info();
    return 0;
  }
  if (argc != 10) {
    std::fprintf(stderr, "usage: %s R n dir libs ops repeats budget check threads\n", argv[0]);
    return 2;
  }
  int R = std::atoi(argv[1]);
  long n = std::atol(argv[2]);
  std::string dir = argv[3];
  std::vector<std::string> libs = split(argv[4]), ops = split(argv[5]);
  int repeats = std::atoi(argv[6]);
  double budget = std::atof(argv[7]);
  int check = std::atoi(argv[8]);
  g_threads = std::max(1, std::atoi(argv[9]));
  if (R < 2 || n < 1 || repeats < 1) {
    std::fprintf(stderr, "bad arguments\n");
    return 2;
  }
  std::vector<double> xt = read_terms(dir + "/x.bin", n * R), yt = read_terms(dir + "/y.bin", n * R),
                      pt = read_terms(dir + "/p.bin", n * R);
  for (const auto &lib : libs) {
    if (lib == "qd" || lib == "qd_ieee") {
#ifdef BENCH_QD
      bool ieee = lib == "qd_ieee";
      if (R == 2) run_qd<dd_real, 2>(lib.c_str(), ieee, n, ops, xt, yt, pt, repeats, budget, check);
      else if (R == 4) run_qd<qd_real, 4>(lib.c_str(), ieee, n, ops, xt, yt, pt, repeats, budget, check);
#else
      std::fprintf(stderr, "built without QD\n");
      return 3;
#endif
    } else if (lib == "mpfr") {
#ifdef BENCH_MPFR
      run_mpfr(R, n, ops, xt, yt, pt, repeats, budget, check);
#else
      std::fprintf(stderr, "built without MPFR\n");
      return 3;
#endif
    } else {
      std::fprintf(stderr, "unknown library %s\n", lib.c_str());
      return 2;
    }
  }
  return 0;
}
