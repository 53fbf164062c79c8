// What the device is, in words: the GPU's name and memory on CUDA/HIP, the host threads elsewhere.
#pragma once

#include <string>

namespace ktr {

/// e.g. "NVIDIA H200 (139.8 GiB)" or "host CPU, 2 OpenMP threads".
std::string device_description();

/// The Kokkos backends this build enables, e.g. "Serial OpenMP".
std::string enabled_backends();

}  // namespace ktr
