// gemm dispatch: cuBLAS with the instance's stream on CUDA, KokkosBlas::gemm (host BLAS or portable) elsewhere.
#include "gemm.hpp"

#include <ktr/ktr_config.hpp>
#include "../core/error.hpp"

#include <KokkosBlas3_gemm.hpp>

#include <atomic>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cublas_v2.h>
#endif

// OpenBLAS's own entry points, looked up weakly: present when the host BLAS is OpenBLAS, null otherwise.
extern "C" {
__attribute__((weak)) char* openblas_get_config(void);
__attribute__((weak)) void openblas_set_num_threads(int);
}

namespace ktr {

namespace {

void check_shapes(bool ta, bool tb, ConstMatrix const& a, ConstMatrix const& b, Matrix const& c) {
  auto m = ta ? a.extent(1) : a.extent(0);
  auto k = ta ? a.extent(0) : a.extent(1);
  auto kb = tb ? b.extent(1) : b.extent(0);
  auto n = tb ? b.extent(0) : b.extent(1);
  KTR_REQUIRE(k == kb && c.extent(0) == m && c.extent(1) == n, "ktr::gemm",
              "shape mismatch: op(A) " + std::to_string(m) + "x" + std::to_string(k) + ", op(B) " +
                  std::to_string(kb) + "x" + std::to_string(n) + ", C " + std::to_string(c.extent(0)) + "x" +
                  std::to_string(c.extent(1)));
}

#if defined(KOKKOS_ENABLE_CUDA)
cublasHandle_t cublas_handle() {
  static cublasHandle_t handle = [] {
    cublasHandle_t h = nullptr;
    KTR_REQUIRE(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS, "ktr::gemm", "cublasCreate failed");
    Kokkos::push_finalize_hook([h] { cublasDestroy(h); });
    return h;
  }();
  return handle;
}
#endif

std::atomic<std::int64_t> g_gemm_calls{0};

}  // namespace

std::int64_t gemm_calls() { return g_gemm_calls.load(); }

void gemm(ExecSpace const& space, bool trans_a, bool trans_b, float alpha, ConstMatrix const& a,
          ConstMatrix const& b, float beta, Matrix const& c) {
  check_shapes(trans_a, trans_b, a, b, c);
  g_gemm_calls.fetch_add(1, std::memory_order_relaxed);
  if (c.extent(0) == 0 || c.extent(1) == 0) return;
#if defined(KOKKOS_ENABLE_CUDA)
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands, keep the flags.
  int const m = static_cast<int>(c.extent(0)), n = static_cast<int>(c.extent(1));
  int const k = static_cast<int>(trans_a ? a.extent(0) : a.extent(1));
  cublasHandle_t h = cublas_handle();
  cublasSetStream(h, space.cuda_stream());
  auto status = cublasSgemm(h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k,
                            &alpha, b.data(), static_cast<int>(b.extent(1)), a.data(),
                            static_cast<int>(a.extent(1)), &beta, c.data(), n);
  KTR_REQUIRE(status == CUBLAS_STATUS_SUCCESS, "ktr::gemm",
              "cublasSgemm failed with status " + std::to_string(status));
#else
  // FIXME_HIP: rocBLAS with the instance's stream would allow stream capture; KokkosBlas::gemm is portable.
  (void)space;
  KokkosBlas::gemm(trans_a ? "T" : "N", trans_b ? "T" : "N", alpha, a, b, beta, c);
#endif
}

std::string gemm_backend() {
#if defined(KOKKOS_ENABLE_CUDA)
  return "cuBLAS (instance stream)";
#else
  std::string s = "KokkosBlas::gemm";
#if defined(KOKKOSKERNELS_ENABLE_TPL_BLAS)
  s += " -> host BLAS";
  if (openblas_get_config) s += std::string(" (") + openblas_get_config() + ")";
#else
  s += " (portable kernel, no TPL BLAS)";
#endif
  return s;
#endif
}

void set_host_blas_threads(int threads) {
  if (openblas_set_num_threads && threads > 0) openblas_set_num_threads(threads);
}

}  // namespace ktr
