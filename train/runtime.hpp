// Starting and stopping ktr: Kokkos initialisation (with the host BLAS given the same thread count) and a
// description of the runtime for `ktr info`.
#pragma once

#include <string>

namespace ktr {

/// Initialises Kokkos for its lifetime (unless Kokkos is already initialised by the embedding application).
/// A host thread count beyond what the host backend holds (max_host_threads()) is refused with ktr::UsageError
/// naming where it came from (the argument, --kokkos-threads / --kokkos-num-threads, KOKKOS_NUM_THREADS or
/// OMP_NUM_THREADS, in Kokkos's order of precedence) before Kokkos is touched.
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

/// GOMP_SPINCOUNT that ktr's own programs run with when the user set neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT:
/// an OpenMP thread waiting for the next kernel spins this many iterations (tens of microseconds) before it
/// sleeps, where libgomp's default (300000, milliseconds) keeps two processes on the same cores stealing each
/// other's time. Measured with scripts/bench-sharing.sh (docs/performance.md, "Sharing cores"): alone as fast as
/// libgomp's default; side by side each process keeps 0.45 (MLP) and 0.40 (SimpleCNN) of its alone throughput,
/// where libgomp's default keeps 0.03-0.22 and OMP_WAIT_POLICY=passive costs up to 18% alone.
inline constexpr char const* kHostSpinCount = "1000";

/// For a program that owns its process (the ktr CLI, the test and benchmark mains): call first in main(), before
/// MPI_Init and before any thread starts. Where the host backend is GNU OpenMP (libgomp) and neither
/// OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set, sets GOMP_SPINCOUNT=kHostSpinCount and executes the program again
/// in place (libgomp reads its settings once, when it is loaded, so setting them later changes nothing); returns
/// in every other case, and if the re-execution fails. The user's own setting always stands. An application that
/// embeds ktr chooses its own (docs/embedding.md, "Sharing cores with the application").
void adopt_host_wait_policy(char* argv[]);

/// The most host threads this build's host backend can run (Kokkos OpenMP: 512); 0 if it sets no limit.
int max_host_threads();

/// Multi-line description: ktr and Kokkos versions, backends, device, threads, BLAS.
std::string runtime_info();

/// "ktr 0.2.0 (Kokkos 3.4.1, OpenMP)"
std::string version_line();

}  // namespace ktr
