// Times every Kokkos kernel and profiling region by label while alive, through the Kokkos Tools callback setters
// that Kokkos 3.4 and 4.x share (no tool library to load). Each event is fenced at its start and end, so a label's
// time is its own work even on an asynchronous device; only outermost events are timed (the kernels inside a
// region, such as a vendor gemm's, count towards the region). `ktr bench profile` uses it to say where a training
// step's time goes; ktr::gemm names its region with the shape ("ktr::gemm 256x512x784 NN").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ktr {

class KernelTimer {
 public:
  struct Entry {
    std::string label;
    std::int64_t calls = 0;
    double seconds = 0;
  };

  KernelTimer();
  ~KernelTimer();
  KernelTimer(KernelTimer const&) = delete;
  KernelTimer& operator=(KernelTimer const&) = delete;

  /// The labels seen, most time first.
  std::vector<Entry> entries() const;
  /// Sum of the outermost events' seconds.
  double total_seconds() const;
  /// Forgets what was recorded so far (the callbacks stay installed).
  void clear();
};

}  // namespace ktr
