// Kokkos lifetime and the runtime description.
#include "runtime.hpp"

#include <ktr/ktr_config.hpp>
#include "../backends/device_info.hpp"
#include "../backends/gemm.hpp"
#include "../backends/kokkos_compat.hpp"
#include "../core/types.hpp"

#include <cstdlib>

namespace ktr {

namespace {
// Kokkos's OpenMP backend warns when OMP_PROC_BIND is unset; "false" is libgomp's behaviour anyway.
void before_init() { setenv("OMP_PROC_BIND", "false", 0); }
void after_init() { set_host_blas_threads(Kokkos::DefaultHostExecutionSpace().concurrency()); }
}  // namespace

Runtime::Runtime(int threads, int device) {
  if (!Kokkos::is_initialized()) {
    before_init();
    compat::initialize(threads, device);
    owns_ = true;
  }
  after_init();
}

Runtime::Runtime(int& argc, char* argv[]) {
  if (!Kokkos::is_initialized()) {
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
  s += "gemm:              " + gemm_backend() + "\n";
  return s;
}

}  // namespace ktr
