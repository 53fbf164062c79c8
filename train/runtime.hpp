// Starting and stopping ktr: Kokkos initialisation (with the host BLAS given the same thread count) and a
// description of the runtime for `ktr info`.
#pragma once

#include <string>

namespace ktr {

/// Initialises Kokkos for its lifetime (unless Kokkos is already initialised by the embedding application).
class Runtime {
 public:
  /// `threads` <= 0 and `device` < 0 keep Kokkos's defaults (which honour OMP_NUM_THREADS).
  explicit Runtime(int threads = -1, int device = -1);
  /// Parses Kokkos's own command-line flags (--kokkos-...).
  Runtime(int& argc, char* argv[]);
  ~Runtime();
  Runtime(Runtime const&) = delete;
  Runtime& operator=(Runtime const&) = delete;

 private:
  bool owns_ = false;
};

/// Multi-line description: ktr and Kokkos versions, backends, device, threads, BLAS.
std::string runtime_info();

/// "ktr 0.1.0 (Kokkos 3.4.1, OpenMP)"
std::string version_line();

}  // namespace ktr
