// Capturing a multi-step program once and replaying it: the lax.scan analogue's launch-overhead half.
//
// CUDA and HIP: the work enqueued on a (non-default) stream is recorded with {cuda,hip}StreamBeginCapture,
// instantiated once and launched per dispatch. Stream capture rather than a Kokkos Graph, because a 3.4 Kokkos
// Graph holds Kokkos kernels only, not the vendor BLAS calls of the dense layers. Everything captured must be
// asynchronous and allocation-free, which the training step is (device-side step counter, device reductions, no
// host reads). HIP captures only where gemm runs on the instance's stream, i.e. with Kokkos Kernels 4.x
// (KTR_KK_GEMM_TAKES_SPACE); against 3.4.01 its gemm runs on the null stream and HIP runs the plain loop. The
// HIP capture path has been compiled, never run on AMD hardware.
// Elsewhere (OpenMP, Serial) replay() is not available and callers run the plain loop, the same kernels.
#pragma once

#include "../core/types.hpp"
#include "stream.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace ktr {

class CapturedProgram {
 public:
  /// True if this build can capture and replay (CUDA; HIP with Kokkos Kernels 4.x).
  static bool supported();
  /// Why not, in words, where supported() is false ("" otherwise).
  static std::string unsupported_reason();
  /// True if supported() and `space` has a stream of its own (the default instance's null stream cannot be
  /// captured).
  static bool can_capture(ExecSpace const& space);

  CapturedProgram() = default;
  ~CapturedProgram();
  CapturedProgram(CapturedProgram const&) = delete;
  CapturedProgram& operator=(CapturedProgram const&) = delete;

  /// Records what `enqueue` launches on `space` (nothing runs yet). Returns false, leaving the program empty and
  /// the reason in error(), if the backend cannot capture or the capture failed, including by an exception from
  /// `enqueue` (the caller then runs `enqueue` directly).
  bool capture(ExecSpace const& space, std::function<void()> const& enqueue);
  /// Launches the recorded program on `space` (asynchronous).
  void replay(ExecSpace const& space) const;
  bool valid() const { return exec_ != nullptr; }
  /// Why the last capture failed ("" if it did not).
  std::string const& error() const { return error_; }

 private:
  [[maybe_unused]] void* graph_ = nullptr;  // unused where the backend cannot capture
  void* exec_ = nullptr;
  std::string error_;
};

}  // namespace ktr
