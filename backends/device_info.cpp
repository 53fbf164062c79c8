// Backend-specific device queries behind a plain string interface.
#include "device_info.hpp"

#include "../core/types.hpp"

#include <cstdio>

#if defined(KOKKOS_ENABLE_HIP)
#include <hip/hip_runtime.h>
#endif

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

namespace ktr {

std::string device_description() {
  char buf[256];
#if defined(KOKKOS_ENABLE_CUDA)
  int dev = 0;
  (void)cudaGetDevice(&dev);
  cudaDeviceProp prop{};
  (void)cudaGetDeviceProperties(&prop, dev);
  std::snprintf(buf, sizeof buf, "%s (device %d, sm_%d%d, %.1f GiB)", prop.name, dev, prop.major, prop.minor,
                prop.totalGlobalMem / 1073741824.0);
#elif defined(KOKKOS_ENABLE_HIP)
  int dev = 0;
  (void)hipGetDevice(&dev);
  hipDeviceProp_t prop{};
  (void)hipGetDeviceProperties(&prop, dev);
  std::snprintf(buf, sizeof buf, "%s (device %d, %s, %.1f GiB)", prop.name, dev, prop.gcnArchName,
                prop.totalGlobalMem / 1073741824.0);
#else
  std::snprintf(buf, sizeof buf, "host CPU, %d %s thread%s", ExecSpace().concurrency(), ExecSpace::name(),
                ExecSpace().concurrency() == 1 ? "" : "s");
#endif
  return buf;
}

std::int64_t device_memory_available() {
#if defined(KOKKOS_ENABLE_CUDA)
  std::size_t free_bytes = 0, total = 0;
  return cudaMemGetInfo(&free_bytes, &total) == cudaSuccess ? std::int64_t(free_bytes) : -1;
#elif defined(KOKKOS_ENABLE_HIP)
  std::size_t free_bytes = 0, total = 0;
  return hipMemGetInfo(&free_bytes, &total) == hipSuccess ? std::int64_t(free_bytes) : -1;
#else
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return -1;
  char line[256];
  long long kib = -1;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "MemAvailable: %lld kB", &kib) == 1) break;
  std::fclose(f);
  return kib < 0 ? -1 : std::int64_t(kib) * 1024;
#endif
}

std::string enabled_backends() {
  std::string s;
#if defined(KOKKOS_ENABLE_SERIAL)
  s += "Serial ";
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
  s += "OpenMP ";
#endif
#if defined(KOKKOS_ENABLE_THREADS)
  s += "Threads ";
#endif
#if defined(KOKKOS_ENABLE_CUDA)
  s += "Cuda ";
#endif
#if defined(KOKKOS_ENABLE_HIP)
  s += "HIP ";
#endif
  if (!s.empty()) s.pop_back();
  return s;
}

}  // namespace ktr
