// The host BLAS: OpenBLAS's kernel choice on CPUs its DYNAMIC_ARCH table does not know, its threads, its name.
#include "host_blas.hpp"

#include <ktr/ktr_config.hpp>
#include "kokkos_compat.hpp"

#include <KokkosKernels_config.h>

#include <cstdlib>
#include <string>

// OpenBLAS's own entry points, looked up weakly: present when the host BLAS is OpenBLAS, null otherwise.
extern "C" {
__attribute__((weak)) char* openblas_get_config(void);
__attribute__((weak)) char* openblas_get_corename(void);
__attribute__((weak)) void openblas_set_num_threads(int);
__attribute__((weak)) void gotoblas_dynamic_init(void);  // a DYNAMIC_ARCH build's kernel choice, and its undoing
__attribute__((weak)) void gotoblas_dynamic_quit(void);
}

namespace ktr {

namespace {
std::string g_blas_note;  // set once, by select_host_blas_kernels, before any host BLAS call
}  // namespace

std::string select_host_blas_kernels() {
  // Host builds only: a GPU build's matmuls are cuBLAS's or Kokkos Kernels' own (and a HIP device pass would not
  // take the x86 builtins).
#if defined(__x86_64__) && !defined(KOKKOS_ENABLE_CUDA) && !defined(KOKKOS_ENABLE_HIP)
  if (!openblas_get_corename || !gotoblas_dynamic_init || !gotoblas_dynamic_quit) return "";
  std::string const core = openblas_get_corename();
  __builtin_cpu_init();
  bool const avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  bool const avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  if (char const* const set = std::getenv("OPENBLAS_CORETYPE")) {  // the user's choice, kept; said where it costs
    if (avx512 && (core == "Haswell" || core == "haswell" || core == "Zen" || core == "zen"))
      g_blas_note = std::string("kernels: ") + core + " (OPENBLAS_CORETYPE=" + set +
                    "; this CPU runs AVX-512 kernels, 1.5x faster at the MLP on an AMD Zen 5: unset it)";
    return g_blas_note;
  }
  bool const fallback = core == "prescott" || core == "Prescott" || core == "core2" || core == "Core2" ||
                        core == "nehalem" || core == "Nehalem" || core == "katmai" || core == "Katmai";
  if (!fallback || !avx2) return "";
  char const* const chosen = avx512 ? "SkylakeX" : "Haswell";
  // OPENBLAS_CORETYPE is what gotoblas_dynamic_init reads; set for the call only.
  if (setenv("OPENBLAS_CORETYPE", chosen, 0) != 0) return "";
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  unsetenv("OPENBLAS_CORETYPE");
  g_blas_note = std::string("kernels: ") + openblas_get_corename() + " (OpenBLAS took this CPU for " + core +
                "; OPENBLAS_CORETYPE overrides)";
  return g_blas_note;
#else
  return "";
#endif
}

std::string host_blas() {
  if (openblas_get_config)
    return std::string(openblas_get_config()) + " (openblas_get_config)" +
           (g_blas_note.empty() ? "" : "; " + g_blas_note);
#if defined(KOKKOSKERNELS_ENABLE_TPL_BLAS)
  return "a BLAS through Kokkos Kernels' TPL (not OpenBLAS)";
#else
  return "none found";
#endif
}

void set_host_blas_threads(int threads) {
  if (openblas_set_num_threads && threads > 0) openblas_set_num_threads(threads);
}

std::string impl::openblas_config() { return openblas_get_config ? std::string(openblas_get_config()) : ""; }

}  // namespace ktr
