// Which arithmetic this build and machine can run (bf16 matmuls and convolutions, tf32); the run's choice travels
// as a Precision value (backends/precision.hpp).
#include "precision.hpp"

#include <ktr/ktr_config.hpp>
#include "../core/error.hpp"

#if defined(KTR_ENABLE_ONEDNN)
#include "gemm_onednn.hpp"
#endif

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

#include <string>

namespace ktr {

bool matmul_tf32_available() {
#if defined(KOKKOS_ENABLE_CUDA)
  return true;
#else
  return false;
#endif
}

char const* matmul_precision_name(MatmulPrecision p) {
  return p == MatmulPrecision::tf32 ? "tf32" : p == MatmulPrecision::bf16 ? "bf16" : "fp32";
}

std::string matmul_unavailable(MatmulPrecision p) {
  switch (p) {
    case MatmulPrecision::fp32:
      return "";
    case MatmulPrecision::tf32:
      return matmul_tf32_available()
                 ? ""
                 : std::string("tf32 needs a CUDA build (this build runs on ") + ExecSpace::name() + ")";
    case MatmulPrecision::bf16:
#if defined(KOKKOS_ENABLE_CUDA)
    {
      int device = 0, major = 0;
      if (cudaGetDevice(&device) != cudaSuccess ||
          cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess)
        return "bf16: cannot query the CUDA device's compute capability";
      return major >= 8 ? ""
                        : "bf16 needs tensor cores of compute capability 8.0 or newer (this GPU: " +
                              std::to_string(major) + ".x)";
    }
#elif defined(KOKKOS_ENABLE_HIP)
      return "bf16 is not available on HIP builds: its matmuls need rocBLAS or hipBLAS, which Debian does not "
             "package (fp32 runs on Kokkos Kernels)";
#elif defined(KTR_ENABLE_ONEDNN)
      return impl::onednn_bf16_unavailable();
#else
      return "bf16 needs oneDNN on hosts, and this build has none (install libdnnl-dev, as scripts/bootstrap.sh "
             "does, and configure again)";
#endif
  }
  return "unknown precision";
}

bool matmul_bf16_available() { return matmul_unavailable(MatmulPrecision::bf16).empty(); }

std::string matmul_bf16_backend() {
#if defined(KOKKOS_ENABLE_CUDA)
  std::string const why = matmul_unavailable(MatmulPrecision::bf16);
  return why.empty() ? "cuBLAS cublasGemmEx, CUDA_R_16BF operands, CUBLAS_COMPUTE_32F (tensor cores)" : why;
#elif defined(KTR_ENABLE_ONEDNN)
  return impl::onednn_bf16_backend();
#else
  return matmul_unavailable(MatmulPrecision::bf16);
#endif
}

MatmulPrecision parse_matmul_precision(std::string const& text, std::string const& flag) {
  MatmulPrecision p = MatmulPrecision::fp32;
  if (text == "tf32")
    p = MatmulPrecision::tf32;
  else if (text == "bf16")
    p = MatmulPrecision::bf16;
  else
    KTR_REQUIRE(text == "fp32", flag, "must be fp32, tf32 or bf16, got '" + text + "'");
  std::string const why = matmul_unavailable(p);
  KTR_REQUIRE(why.empty(), flag, why);
  return p;
}

std::uint16_t const* Bf16Copy::of(float const* data, std::int64_t count) const {
  if (bits == nullptr) return nullptr;
  // Compared as addresses: the operand need not point into this copy's buffer at all.
  auto const at = reinterpret_cast<std::uintptr_t>(data), lo = reinterpret_cast<std::uintptr_t>(fp32);
  if (at >= lo && (at - lo) % sizeof(float) == 0) {
    std::int64_t const offset = std::int64_t((at - lo) / sizeof(float));
    if (offset <= n && count <= n - offset) return bits + offset;
  }
  return nullptr;
}

}  // namespace ktr
