// Whether the bf16 dot-product kernels may run: see dpbf16.hpp.
#include "dpbf16.hpp"

#include <atomic>

namespace ktr::impl {

namespace {
std::atomic<bool> allowed{true};
}  // namespace

bool dpbf16_available() {
#if defined(KTR_DPBF16_KERNELS)
  static bool const cpu = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512bf16");
  return device_is_host && cpu && allowed.load(std::memory_order_relaxed);
#else
  return false;
#endif
}

void dpbf16_allow(bool a) { allowed.store(a, std::memory_order_relaxed); }

}  // namespace ktr::impl
