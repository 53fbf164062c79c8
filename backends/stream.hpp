// An execution space instance with a stream of its own (DeviceStream), which an application hands to ktr to train
// on, and what a program captured on an instance is bound to (StreamIdentity). Capturing is in graph.hpp.
#pragma once

#include "../core/types.hpp"

#include <cstdint>

namespace ktr {

/// An execution space instance suitable for capture: its own stream on CUDA and HIP, the default instance
/// elsewhere. The instance stays valid while the returned holder lives; the destructor waits for it.
class DeviceStream {
 public:
  DeviceStream();
  ~DeviceStream();
  DeviceStream(DeviceStream const&) = delete;
  DeviceStream& operator=(DeviceStream const&) = delete;
  ExecSpace const& space() const { return space_; }

 private:
  [[maybe_unused]] void* stream_ = nullptr;  // unused where the backend has no streams of its own
  ExecSpace space_;
};

/// What a program captured on an instance is bound to: the instance's stream and the BLAS resources (handle,
/// workspace) bound to that stream. A program recorded on one stream must never be replayed on another, nor on a
/// stream that was released and created again at the same address. {0, 0} where the backend cannot capture.
struct StreamIdentity {
  std::uintptr_t stream = 0;
  std::uint64_t resources = 0;  ///< gemm_resources_generation
  std::uintptr_t instance = 0;  ///< the Kokkos instance (its reduction scratch, which a program refers to)
};
StreamIdentity stream_identity(ExecSpace const& space);

}  // namespace ktr
