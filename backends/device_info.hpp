// What the device is, in words: the GPU's name and memory on CUDA/HIP, the host threads elsewhere.
#pragma once

#include "../core/types.hpp"

#include <cstdint>
#include <string>

namespace ktr {

/// e.g. "NVIDIA H200 (139.8 GiB)" or "host CPU, 2 OpenMP threads".
std::string device_description();

/// Bytes of device memory free for ktr now: the GPU's free memory on CUDA/HIP, the host's available memory
/// (MemAvailable) elsewhere; -1 if unknown.
std::int64_t device_memory_available();

/// The GPU architectures this build carries device code for, e.g. "sm_90 (Kokkos_ARCH_HOPPER90)", or
/// "none (host-only build)".
std::string gpu_architecture();

/// The host architecture Kokkos was built for, e.g. "SKX (AVX-512)", or "generic x86-64" where none was named.
std::string host_architecture();

/// True if `p` points into memory the device reads directly: device (or managed) memory on CUDA/HIP, any memory on
/// host backends. False for host memory on a GPU build (and for null).
bool device_can_read(void const* p);

/// The execution space instance of a CUDA/HIP stream (NULL: the default instance). Host builds have no streams:
/// NULL gives the default instance, anything else is a ktr::UsageError.
ExecSpace instance_of_stream(void* stream);

/// GPUs the runtime sees (CUDA/HIP builds; 0 elsewhere). Callable before Kokkos is initialised.
int gpu_count();
/// The GPU Kokkos runs on (CUDA/HIP builds, Kokkos initialised), -1 on host builds.
int kokkos_gpu();

/// The Kokkos backends this build enables, e.g. "Serial OpenMP".
std::string enabled_backends();

}  // namespace ktr
