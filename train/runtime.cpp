// Kokkos lifetime and the runtime description.
#include "runtime.hpp"

#include <ktr/ktr_config.hpp>
#include "../backends/conv.hpp"
#include "../backends/device_info.hpp"
#include "../backends/gemm.hpp"
#include "../backends/host_blas.hpp"
#include "../backends/kokkos_compat.hpp"
#include "../core/error.hpp"
#include "../core/parse.hpp"
#include "../core/types.hpp"
#include "../models/dpbf16.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace ktr {

namespace {
// Kokkos's OpenMP backend warns when OMP_PROC_BIND is unset; "false" is libgomp's behaviour anyway.
void before_init() { setenv("OMP_PROC_BIND", "false", 0); }
void after_init() {
  (void)select_host_blas_kernels();  // before any BLAS call: ktr info reports what it did
  set_host_blas_threads(Kokkos::DefaultHostExecutionSpace().concurrency());
}

// The host thread count Kokkos will start with, where it is set, in Kokkos's order of precedence: the argument,
// then --kokkos-threads= / --kokkos-num-threads= on the command line, then KOKKOS_NUM_THREADS, then the OpenMP
// runtime's own OMP_NUM_THREADS (its first level). Refused beyond the backend's pool, which Kokkos does not check.
void check_host_threads(int threads, int argc, char** argv) {
  int const limit = max_host_threads();
  if (limit == 0) return;
  std::string what, value;
  if (threads > 0) {
    what = "host threads", value = std::to_string(threads);
  } else {
    for (int i = 1; i < argc && what.empty(); ++i)
      for (char const* flag : {"--kokkos-threads=", "--kokkos-num-threads="})
        if (std::strncmp(argv[i], flag, std::strlen(flag)) == 0)
          what = std::string(flag, std::strlen(flag) - 1), value = argv[i] + std::strlen(flag);
    for (char const* var : {"KOKKOS_NUM_THREADS", "OMP_NUM_THREADS"}) {
      char const* text = std::getenv(var);
      if (what.empty() && text && *text) what = var, value = text;
    }
  }
  std::int64_t n = 0;
  // OMP_NUM_THREADS may list one count per nesting level: the first is the pool's. Kokkos reports what it cannot
  // read itself.
  if (what.empty() || !parse_integer(value.substr(0, value.find(',')), 1, INT64_MAX, n)) return;
  if (n > limit)
    throw UsageError(what + (threads > 0 ? " " : "=") + value + ": Kokkos's " +
                     Kokkos::DefaultHostExecutionSpace::name() + " backend runs at most " + std::to_string(limit) +
                     " host threads");
}
}  // namespace

int max_host_threads() { return compat::max_host_threads; }

void adopt_host_wait_policy(char* argv[]) {
#if defined(KOKKOS_ENABLE_OPENMP) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT") || !argv || !argv[0]) return;
  if (setenv("GOMP_SPINCOUNT", kHostSpinCount, 0) != 0) return;
  ::execv("/proc/self/exe", argv);  // returns only on failure: go on with libgomp's defaults
#else
  (void)argv;
#endif
}

Runtime::Runtime(int threads, int device) {
  if (!Kokkos::is_initialized()) {
    check_host_threads(threads, 0, nullptr);
    before_init();
    compat::initialize(threads, device);
    owns_ = true;
  }
  after_init();
}

Runtime::Runtime(int& argc, char* argv[]) {
  if (!Kokkos::is_initialized()) {
    check_host_threads(-1, argc, argv);
    before_init();
    Kokkos::initialize(argc, argv);
    owns_ = true;
  }
  after_init();
}

Runtime::~Runtime() {
  if (owns_) Kokkos::finalize();
}

std::string version_line() {
  return std::string("ktr ") + KTR_VERSION + " (Kokkos " + compat::kokkos_version_string() + ", " +
         ExecSpace::name() + ")";
}

std::string runtime_info() {
  std::string s;
  s += "ktr:               " + std::string(KTR_VERSION) + "\n";
  s += "Kokkos:            " + compat::kokkos_version_string() + "\n";
  s += "backends enabled:  " + enabled_backends() + "\n";
  s += "execution space:   " + std::string(ExecSpace::name()) + "\n";
  s += "memory space:      " + std::string(MemSpace::name()) + "\n";
  s += "concurrency:       " + std::to_string(ExecSpace().concurrency()) + "\n";
  s += "host threads:      " + std::to_string(Kokkos::DefaultHostExecutionSpace().concurrency()) + "\n";
  s += "device:            " + device_description() + "\n";
#if defined(KOKKOS_ENABLE_OPENMP)
  char const* policy = std::getenv("OMP_WAIT_POLICY");
  char const* spin = std::getenv("GOMP_SPINCOUNT");
  s += "idle threads:      " +
       (policy ? "OMP_WAIT_POLICY=" + std::string(policy)
        : spin ? "GOMP_SPINCOUNT=" + std::string(spin) +
                     (std::string(spin) == kHostSpinCount ? " (ktr's default unless set by you)" : "")
               : std::string("the OpenMP runtime's default")) +
       "\n";
#endif
  s += "gemm:              " + gemm_backend() + "\n";
  s += "host BLAS:         " + host_blas() + "\n";
  std::string precisions = "fp32";
  for (MatmulPrecision p : {MatmulPrecision::tf32, MatmulPrecision::bf16})
    if (matmul_unavailable(p).empty()) precisions += std::string(", ") + matmul_precision_name(p);
  s += "precisions:        " + precisions + "\n";
  s += "bf16 matmuls:      " + matmul_bf16_backend() + "\n";
  if (device_is_host)  // ktr's own product kernels: the narrow dense head, the first direct convolution
    s += std::string("bf16 own kernels:  ") +
         (!matmul_unavailable(MatmulPrecision::bf16).empty() ? "none (bf16 cannot run here)"
          : impl::dpbf16_available()                         ? "AVX512-BF16 dot products (vdpbf16ps)"
                                                             : "fp32 products of bf16-rounded inputs") +
         "\n";
  s += "convolutions:      " + conv_library() + "\n";
  s += "GPU architecture:  " + gpu_architecture() + "\n";
  s += "host architecture: " + host_architecture() + "\n";
#if defined(KTR_ENABLE_MPI)
  s += "MPI:               yes (data-parallel training over the application's communicator)\n";
#else
  s += "MPI:               no (configure with -Dktr_ENABLE_MPI=ON)\n";
#endif
#if defined(KTR_ENABLE_NCCL)
  s += "NCCL:              yes (the gradient allreduce on the device)\n";
#else
  s += "NCCL:              no\n";
#endif
  return s;
}

}  // namespace ktr
