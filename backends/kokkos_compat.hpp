// Kokkos 3.4.01 vs 4.x differences, confined to this header: nothing else in ktr tests KOKKOS_VERSION.
//
//  - math functions live in Kokkos::Experimental:: in 3.4 and in Kokkos:: in 4.x;
//  - initialisation takes InitArguments (3.4) or InitializationSettings (4.x);
//  - fence(label) and Kokkos::printf exist only in 4.x;
//  - atomic_max is spelled atomic_fetch_max in 3.4;
//  - 3.4's OpenMP backend runs work only from the host thread that initialised it (its instance is
//    thread-local); 4.x's from any thread;
//  - Kokkos Kernels' KokkosBlas::gemm takes an execution space instance first only in 4.x (3.4's runs on the
//    default instance): KTR_KK_GEMM_TAKES_SPACE says which, for backends/gemm.cpp and backends/graph.cpp.
#pragma once

#include <KokkosKernels_config.h>
#include <Kokkos_Core.hpp>

#include <string>

// Kokkos Kernels 4.x defines KOKKOSKERNELS_VERSION (e.g. 40200); 3.4.01 defines no version macro at all.
#if defined(KOKKOSKERNELS_VERSION) && KOKKOSKERNELS_VERSION >= 40000
#define KTR_KK_GEMM_TAKES_SPACE 1
#else
#define KTR_KK_GEMM_TAKES_SPACE 0
#endif

namespace ktr::compat {

#if KOKKOS_VERSION >= 40000
using Kokkos::cos;
using Kokkos::erf;
using Kokkos::exp;
using Kokkos::expm1;
using Kokkos::fabs;
using Kokkos::fmax;
using Kokkos::fmin;
using Kokkos::log;
using Kokkos::log1p;
using Kokkos::pow;
using Kokkos::sin;
using Kokkos::sqrt;
using Kokkos::tanh;
#else
using Kokkos::Experimental::cos;
using Kokkos::Experimental::erf;
using Kokkos::Experimental::exp;
using Kokkos::Experimental::expm1;
using Kokkos::Experimental::fabs;
using Kokkos::Experimental::fmax;
using Kokkos::Experimental::fmin;
using Kokkos::Experimental::log;
using Kokkos::Experimental::log1p;
using Kokkos::Experimental::pow;
using Kokkos::Experimental::sin;
using Kokkos::Experimental::sqrt;
using Kokkos::Experimental::tanh;
#endif

/// Initialises Kokkos with `num_threads` host threads (<= 0: Kokkos's default) and GPU `device_id` (< 0: default).
inline void initialize(int num_threads, int device_id) {
#if KOKKOS_VERSION >= 40000
  Kokkos::InitializationSettings settings;
  if (num_threads > 0) settings.set_num_threads(num_threads);
  if (device_id >= 0) settings.set_device_id(device_id);
  Kokkos::initialize(settings);
#else
  Kokkos::InitArguments args;
  args.num_threads = num_threads > 0 ? num_threads : -1;
  args.device_id = device_id;
  Kokkos::initialize(args);
#endif
}

/// The most host threads Kokkos's OpenMP backend can hold: its thread pool is a fixed array of 512
/// (Kokkos::Impl::OpenMPExec::MAX_THREAD_COUNT in 3.4, OpenMPTraits::MAX_THREAD_COUNT in 4.x); asking for more
/// overruns it (a segmentation fault in the pool's set-up). 0 where the host backend has no such limit.
#if defined(KOKKOS_ENABLE_OPENMP)
inline constexpr int max_host_threads = 512;
#if KOKKOS_VERSION < 40000
static_assert(Kokkos::Impl::OpenMPExec::MAX_THREAD_COUNT == max_host_threads, "Kokkos's OpenMP pool size changed");
#endif
#else
inline constexpr int max_host_threads = 0;
#endif

/// Fences one execution space instance; the label reaches Kokkos Tools where the version supports it.
template <class ExecSpace>
void fence(ExecSpace const& space, std::string const& label) {
#if KOKKOS_VERSION >= 40000
  space.fence(label);
#else
  (void)label;
  space.fence();
#endif
}

/// Atomically replaces *dest with max(*dest, value).
template <class T>
KOKKOS_INLINE_FUNCTION void atomic_max(T* dest, T value) {
#if KOKKOS_VERSION >= 40000
  Kokkos::atomic_max(dest, value);
#else
  Kokkos::atomic_fetch_max(dest, value);
#endif
}

/// The Kokkos version as Kokkos writes it, e.g. "3.4.01".
inline std::string kokkos_version_string() {
  int const patch = KOKKOS_VERSION % 100;
  return std::to_string(KOKKOS_VERSION / 10000) + "." + std::to_string(KOKKOS_VERSION / 100 % 100) + "." +
         (patch < 10 ? "0" : "") + std::to_string(patch);
}

/// Whether this host thread may launch Kokkos work now: Kokkos is initialised and, with Kokkos 3.4's OpenMP
/// backend, this is the thread that initialised it (elsewhere its parallel_for aborts: "in parallel or not
/// initialized"). Outside an OpenMP parallel region either way.
inline bool usable_on_this_thread() {
  if (!Kokkos::is_initialized()) return false;
#if defined(KOKKOS_ENABLE_OPENMP) && KOKKOS_VERSION < 40000
  return Kokkos::OpenMP::impl_is_initialized() && !Kokkos::OpenMP::in_parallel();
#else
  return true;
#endif
}

}  // namespace ktr::compat

// printf from device code: Kokkos::printf in 4.x, the backend's own printf in 3.4.
#if KOKKOS_VERSION >= 40000
#define KTR_DEVICE_PRINTF(...) Kokkos::printf(__VA_ARGS__)
#else
#define KTR_DEVICE_PRINTF(...) printf(__VA_ARGS__)
#endif
