// Backend-specific device queries behind a plain string interface.
#include "device_info.hpp"

#include "../core/error.hpp"
#include "../core/file.hpp"
#include "../core/types.hpp"

#include <cstdio>

#if defined(KOKKOS_ENABLE_HIP)
#include <hip/hip_runtime.h>
#endif

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

namespace ktr {

std::string gpu_architecture() {
  std::string kokkos;
#if defined(KOKKOS_ARCH_HOPPER90)
  kokkos = "sm_90 (Kokkos_ARCH_HOPPER90)";
#elif defined(KOKKOS_ARCH_AMPERE86)
  kokkos = "sm_86 (Kokkos_ARCH_AMPERE86)";
#elif defined(KOKKOS_ARCH_AMPERE80)
  kokkos = "sm_80 (Kokkos_ARCH_AMPERE80)";
#elif defined(KOKKOS_ARCH_VOLTA70)
  kokkos = "sm_70 (Kokkos_ARCH_VOLTA70)";
#elif defined(KOKKOS_ARCH_VEGA90A)
  kokkos = "gfx90a (Kokkos_ARCH_VEGA90A)";
#elif defined(KOKKOS_ARCH_VEGA908)
  kokkos = "gfx908 (Kokkos_ARCH_VEGA908)";
#elif defined(KOKKOS_ARCH_VEGA906)
  kokkos = "gfx906 (Kokkos_ARCH_VEGA906)";
#endif
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP)
  std::string s = kokkos.empty() ? std::string("Kokkos names none") : kokkos;
#if defined(__CUDA_ARCH_LIST__)
#define KTR_STRINGIFY2(...) #__VA_ARGS__  // the list may hold commas: "800,900"
#define KTR_STRINGIFY(...) KTR_STRINGIFY2(__VA_ARGS__)
  s += ", device code for compute capability " KTR_STRINGIFY(__CUDA_ARCH_LIST__) " (nvcc's __CUDA_ARCH_LIST__)";
#endif
  return s;
#else
  (void)kokkos;
  return "none (host-only build)";
#endif
}

std::string host_architecture() {
#if defined(KOKKOS_ARCH_AVX512XEON)
  return "SKX (AVX-512, Kokkos_ARCH_SKX)";
#elif defined(KOKKOS_ARCH_AVX2)
  return "HSW (AVX2 + FMA, Kokkos_ARCH_HSW)";
#elif defined(__x86_64__)
  return "generic x86-64 (no Kokkos host architecture named)";
#else
  return "generic (no Kokkos host architecture named)";
#endif
}

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
  return host_memory_available();
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

bool device_can_read(void const* p) {
  if (p == nullptr) return false;
#if defined(KOKKOS_ENABLE_CUDA)
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();  // an unregistered host pointer: clear the error
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
#elif defined(KOKKOS_ENABLE_HIP)
  hipPointerAttribute_t a{};
  if (hipPointerGetAttributes(&a, p) != hipSuccess) {
    (void)hipGetLastError();
    return false;
  }
#if HIP_VERSION_MAJOR >= 6  // ROCm 6 renamed hipPointerAttribute_t::memoryType to type
  return a.type == hipMemoryTypeDevice || a.isManaged;
#else
  return a.memoryType == hipMemoryTypeDevice || a.isManaged;
#endif
#else
  return true;  // the device is the host
#endif
}

ExecSpace instance_of_stream(void* stream) {
  if (stream == nullptr) return ExecSpace();
#if defined(KOKKOS_ENABLE_CUDA)
  return ExecSpace(static_cast<cudaStream_t>(stream));
#elif defined(KOKKOS_ENABLE_HIP)
  return ExecSpace(static_cast<hipStream_t>(stream));
#else
  throw UsageError(std::string("a stream was given, but this build runs on ") + ExecSpace::name() +
                   ", which has none (pass NULL)");
#endif
}

int gpu_count() {
  int n = 0;
#if defined(KOKKOS_ENABLE_CUDA)
  if (cudaGetDeviceCount(&n) != cudaSuccess) (void)cudaGetLastError(), n = 0;
#elif defined(KOKKOS_ENABLE_HIP)
  if (hipGetDeviceCount(&n) != hipSuccess) (void)hipGetLastError(), n = 0;
#endif
  return n;
}

int kokkos_gpu() {
#if defined(KOKKOS_ENABLE_CUDA)
  return ExecSpace().cuda_device();
#elif defined(KOKKOS_ENABLE_HIP)
  return ExecSpace().hip_device();
#else
  return -1;
#endif
}

}  // namespace ktr
