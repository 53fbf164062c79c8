// ktr_blas_compare: host BLAS libraries side by side at the gemm shapes of ktr's training steps, to choose the
// host BLAS by numbers measured on the machine. Each library is loaded with dlopen (its own symbols, RTLD_LOCAL)
// and called through the Fortran sgemm_ that Kokkos Kernels' BLAS TPL calls, with the operands swapped and the
// flags kept as Kokkos Kernels does for row-major (LayoutRight) views, so the library sees exactly ktr's calls.
// Rounds interleave the libraries shape by shape; medians are reported, with the same-round ratio to the first
// library. Threads: both libraries read OMP_NUM_THREADS (use their OpenMP builds, as ktr does).
//   ktr_blas_compare [--rounds N] LIBRARY.so [LIBRARY.so...]
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Sgemm = void (*)(char const*, char const*, int const*, int const*, int const*, float const*, float const*,
                       int const*, float const*, int const*, float const*, float*, int const*);

struct Library {
  std::string path;
  Sgemm sgemm;
};

// A row-major gemm C(m, n) = op(A) op(B) as ktr issues it; "ktr::gemm MxNxK AB" in `ktr bench profile`.
struct Shape {
  char const* set;
  int m, n, k;
  bool ta, tb;
};

// The forward and backward gemms of one training step (the MLP's first layer has no input gradient, nor the
// SimpleCNN's convolution, which is a direct kernel).
std::vector<Shape> shapes() {
  std::vector<Shape> v;
  for (int b : {256, 32}) {
    char const* set = b == 256 ? "MLP b256" : "MLP b32";
    v.insert(v.end(), {{set, b, 512, 784, false, false},
                       {set, b, 512, 512, false, false},
                       {set, b, 10, 512, false, false},
                       {set, 512, 10, b, true, false},
                       {set, b, 512, 10, false, true},
                       {set, 512, 512, b, true, false},
                       {set, b, 512, 512, false, true},
                       {set, 784, 512, b, true, false}});
  }
  v.insert(v.end(), {{"CNN b32", 32, 10, 6272, false, false},
                     {"CNN b32", 6272, 10, 32, true, false},
                     {"CNN b32", 32, 6272, 10, false, true}});
  v.push_back({"large", 2048, 2048, 2048, false, false});
  return v;
}

struct Operands {
  std::vector<float> a, b, c;
  explicit Operands(Shape const& s)
      : a(std::size_t(s.m) * s.k, 0.5f), b(std::size_t(s.k) * s.n, 0.25f), c(std::size_t(s.m) * s.n, 0.0f) {}
};

// Seconds per call: the median of 5 timed batches of calls, each batch long enough to time (~20 ms).
double time_call(Library const& lib, Shape const& s, Operands& o) {
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands, keep the flags.
  char const ta = s.tb ? 'T' : 'N', tb = s.ta ? 'T' : 'N';
  int const lda = s.tb ? s.k : s.n, ldb = s.ta ? s.m : s.k, ldc = s.n;
  float const alpha = 1.0f, beta = 0.0f;
  auto call = [&] {
    lib.sgemm(&ta, &tb, &s.n, &s.m, &s.k, &alpha, o.b.data(), &lda, o.a.data(), &ldb, &beta, o.c.data(), &ldc);
  };
  call();
  auto now = [] { return std::chrono::steady_clock::now(); };
  auto t0 = now();
  call();
  double const one = std::chrono::duration<double>(now() - t0).count();
  int const reps = std::max(1, std::min(2000, int(0.02 / std::max(one, 1e-7))));
  std::vector<double> batches;
  for (int r = 0; r < 5; ++r) {
    t0 = now();
    for (int i = 0; i < reps; ++i) call();
    batches.push_back(std::chrono::duration<double>(now() - t0).count() / reps);
  }
  std::sort(batches.begin(), batches.end());
  return batches[2];
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

int usage() {
  std::fprintf(stderr, "usage: ktr_blas_compare [--rounds N] LIBRARY.so [LIBRARY.so...]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5;
  std::vector<Library> libs;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rounds") == 0) {
      if (i + 1 >= argc || (rounds = std::atoi(argv[++i])) < 1) {
        std::fprintf(stderr, "ktr_blas_compare: --rounds: expected a positive integer\n");
        return 2;
      }
      continue;
    }
    if (argv[i][0] == '-') return usage();
    void* h = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      std::fprintf(stderr, "ktr_blas_compare: %s: cannot load: %s\n", argv[i], dlerror());
      return 1;
    }
    auto f = reinterpret_cast<Sgemm>(dlsym(h, "sgemm_"));
    if (!f) {
      std::fprintf(stderr, "ktr_blas_compare: %s: has no sgemm_\n", argv[i]);
      return 1;
    }
    libs.push_back({argv[i], f});
  }
  if (libs.empty()) return usage();
  char const* threads = std::getenv("OMP_NUM_THREADS");
  std::printf(
      "gemm shapes of ktr's training steps (row-major M x N x K, op flags), OMP_NUM_THREADS=%s, "
      "%d interleaved rounds, medians\n",
      threads ? threads : "(unset)", rounds);
  for (std::size_t l = 0; l < libs.size(); ++l) std::printf("  [%zu] %s\n", l, libs[l].path.c_str());
  std::printf("%-9s %-21s", "set", "shape");
  for (std::size_t l = 0; l < libs.size(); ++l) std::printf(" %9s", ("[" + std::to_string(l) + "] GF/s").c_str());
  for (std::size_t l = 1; l < libs.size(); ++l) std::printf(" %13s", ("[" + std::to_string(l) + "]/[0]").c_str());
  std::printf("\n");

  std::vector<Shape> const all = shapes();
  // Per library, the summed median seconds of each set's gemms (one step's worth).
  std::vector<std::vector<std::pair<std::string, double>>> set_seconds(libs.size());
  for (Shape const& s : all) {
    Operands o(s);
    std::vector<std::vector<double>> secs(libs.size()), ratios(libs.size());
    for (int r = 0; r < rounds; ++r)
      for (std::size_t l = 0; l < libs.size(); ++l) secs[l].push_back(time_call(libs[l], s, o));
    for (int r = 0; r < rounds; ++r)
      for (std::size_t l = 1; l < libs.size(); ++l) ratios[l].push_back(secs[0][r] / secs[l][r]);
    double const flops = 2.0 * s.m * s.n * s.k;
    char label[64];
    std::snprintf(label, sizeof label, "%dx%dx%d %c%c", s.m, s.n, s.k, s.ta ? 'T' : 'N', s.tb ? 'T' : 'N');
    std::printf("%-9s %-21s", s.set, label);
    for (std::size_t l = 0; l < libs.size(); ++l) {
      double const m = median(secs[l]);
      std::printf(" %9.1f", flops / m / 1e9);
      auto& sets = set_seconds[l];
      if (sets.empty() || sets.back().first != s.set) sets.push_back({s.set, 0.0});
      sets.back().second += m;
    }
    for (std::size_t l = 1; l < libs.size(); ++l) {
      auto const [lo, hi] = std::minmax_element(ratios[l].begin(), ratios[l].end());
      std::printf("  %4.2f (%4.2f-%4.2f)", median(ratios[l]), *lo, *hi);
    }
    std::printf("\n");
  }
  std::printf("\nper step, the set's gemms summed (us):\n");
  for (std::size_t i = 0; i < set_seconds[0].size(); ++i) {
    std::printf("%-9s", set_seconds[0][i].first.c_str());
    for (std::size_t l = 0; l < libs.size(); ++l) std::printf(" [%zu] %9.1f", l, 1e6 * set_seconds[l][i].second);
    for (std::size_t l = 1; l < libs.size(); ++l)
      std::printf("  [%zu]/[0] speed %4.2f", l, set_seconds[0][i].second / set_seconds[l][i].second);
    std::printf("\n");
  }
  return 0;
}
