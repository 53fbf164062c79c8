// Capturing a multi-step program once and replaying it: the lax.scan analogue's launch-overhead half.
//
// CUDA: the work enqueued on a (non-default) stream is recorded with cudaStreamBeginCapture, instantiated once
// and launched per dispatch. Stream capture rather than a Kokkos Graph, because a 3.4 Kokkos Graph holds Kokkos
// kernels only, not the cuBLAS calls of the dense layers. Everything captured must be asynchronous and
// allocation-free, which the training step is (device-side step counter, device reductions, no host reads).
// Elsewhere (OpenMP, Serial, and HIP for now: FIXME_HIP, its gemm runs on the default stream) replay() is not
// available and callers run the plain loop, which is the same sequence of kernels.
#pragma once

#include "../core/types.hpp"

#include <functional>
#include <memory>

namespace ktr {

/// An execution space instance suitable for capture: its own stream on CUDA, the default instance elsewhere.
/// The instance stays valid while the returned holder lives.
class DeviceStream {
 public:
  DeviceStream();
  ~DeviceStream();
  DeviceStream(DeviceStream const&) = delete;
  DeviceStream& operator=(DeviceStream const&) = delete;
  ExecSpace const& space() const { return space_; }

 private:
  void* stream_ = nullptr;
  ExecSpace space_;
};

class CapturedProgram {
 public:
  /// True if this build can capture and replay (CUDA).
  static bool supported();

  CapturedProgram() = default;
  ~CapturedProgram();
  CapturedProgram(CapturedProgram const&) = delete;
  CapturedProgram& operator=(CapturedProgram const&) = delete;

  /// Records what `enqueue` launches on `space` (nothing runs yet). Returns false, leaving the program empty, if
  /// the backend cannot capture or the capture failed (the caller then runs `enqueue` directly).
  bool capture(ExecSpace const& space, std::function<void()> const& enqueue);
  /// Launches the recorded program on `space` (asynchronous).
  void replay(ExecSpace const& space) const;
  bool valid() const { return exec_ != nullptr; }

 private:
  void* graph_ = nullptr;
  void* exec_ = nullptr;
};

}  // namespace ktr
