// gemm's entry point: shapes checked, calls counted per precision, bf16 copies looked up, and the one switch over
// the libraries (gemm_cublas.cpp on CUDA; gemm_onednn.cpp for bf16 on hosts; gemm_kokkos.cpp elsewhere).
#include "gemm.hpp"

#include <ktr/ktr_config.hpp>
#include "../core/error.hpp"
#include "gemm_backends.hpp"
#include "region.hpp"

#if defined(KTR_ENABLE_ONEDNN)
#include "gemm_onednn.hpp"
#endif

#include <atomic>
#include <string>

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

std::atomic<std::int64_t> g_gemm_calls[matmul_precision_count] = {};  // per MatmulPrecision
std::atomic<std::int64_t> g_bf16_roundings{0};                        // operands gemm rounded itself

}  // namespace

std::int64_t gemm_calls() {
  std::int64_t n = 0;
  for (auto const& calls : g_gemm_calls) n += calls.load();
  return n;
}

std::int64_t gemm_calls(MatmulPrecision p) { return g_gemm_calls[int(p)].load(); }

namespace {

void gemm_in(MatmulPrecision precision, Bf16Copy const& copy, ExecSpace const& space, bool trans_a, bool trans_b,
             float alpha, ConstMatrix const& a, ConstMatrix const& b, float beta, Matrix const& c) {
  check_shapes(trans_a, trans_b, a, b, c);
  g_gemm_calls[int(precision)].fetch_add(1, std::memory_order_relaxed);
  if (c.extent(0) == 0 || c.extent(1) == 0) return;
  // A Kokkos profiling region named with the gemm's shape, for tools that listen (ktr bench profile, Kokkos
  // Tools).
  Region const region([&] {
    auto const k = trans_a ? a.extent(0) : a.extent(1);
    return "ktr::gemm " + std::to_string(c.extent(0)) + "x" + std::to_string(c.extent(1)) + "x" +
           std::to_string(k) + " " + (trans_a ? "T" : "N") + (trans_b ? "T" : "N");
  });
  std::uint16_t const *a16 = nullptr, *b16 = nullptr;
  if (precision == MatmulPrecision::bf16) {
    a16 = copy.of(a.data(), std::int64_t(a.size()));
    b16 = copy.of(b.data(), std::int64_t(b.size()));
    g_bf16_roundings.fetch_add(int(a16 == nullptr) + int(b16 == nullptr), std::memory_order_relaxed);
  }
#if defined(KOKKOS_ENABLE_CUDA)
  impl::gemm_cublas(space, precision, trans_a, trans_b, alpha, a, a16, b, b16, beta, c);
#else
  if (precision == MatmulPrecision::bf16) {
#if defined(KTR_ENABLE_ONEDNN)
    std::string const why = impl::onednn_bf16_unavailable();
    KTR_REQUIRE(why.empty(), "ktr::gemm", why);
    impl::gemm_bf16_onednn(space, trans_a, trans_b, alpha, a, a16, b, b16, beta, c);
    return;
#else
    throw Error("ktr::gemm: " + matmul_unavailable(precision));
#endif
  }
  KTR_REQUIRE(precision == MatmulPrecision::fp32, "ktr::gemm", matmul_unavailable(precision));
#if defined(KTR_ENABLE_ONEDNN)
  if (impl::onednn_fp32_chosen()) return impl::gemm_fp32_onednn(space, trans_a, trans_b, alpha, a, b, beta, c);
#endif
  impl::gemm_kokkos(space, trans_a, trans_b, alpha, a, b, beta, c);
#endif
}

}  // namespace

void gemm(ExecSpace const& space, Precision const& precision, bool trans_a, bool trans_b, float alpha,
          ConstMatrix const& a, ConstMatrix const& b, float beta, Matrix const& c) {
  gemm_in(precision.matmul, precision.params16, space, trans_a, trans_b, alpha, a, b, beta, c);
}

void column_sums(ExecSpace const& space, ConstMatrix const& x, float const* ones, float* sums) {
  if (x.extent(1) == 0) return;
#if defined(KOKKOS_ENABLE_CUDA)
  impl::column_sums_cublas(space, x, ones, sums);
#else
  (void)ones;
  impl::column_sums_kokkos(space, x, sums);
#endif
}

std::string gemm_backend(MatmulPrecision p) {
#if defined(KOKKOS_ENABLE_CUDA)
  return std::string("cuBLAS (per-stream handle and workspace, ") +
         (p == MatmulPrecision::tf32   ? "TF32"
          : p == MatmulPrecision::bf16 ? "BF16 tensor cores, FP32 accumulation"
                                       : "FP32") +
         ")";
#else
#if defined(KTR_ENABLE_ONEDNN)
  if (p == MatmulPrecision::fp32 && impl::onednn_fp32_chosen())
    return "oneDNN matmul, kernel " + impl::onednn_fp32_kernel() +
           " (fp32 on this CPU, which has AMX; KTR_FP32_GEMM=openblas for " + impl::gemm_kokkos_name() + ")";
#endif
  (void)p;
  return impl::gemm_kokkos_name();
#endif
}

bool gemm_handles_per_stream() {
#if defined(KOKKOS_ENABLE_CUDA)
  return true;
#else
  return false;
#endif
}

std::int64_t gemm_bf16_roundings() { return g_bf16_roundings.load(); }

std::uint64_t gemm_resources_generation(ExecSpace const& space) {
#if defined(KOKKOS_ENABLE_CUDA)
  return impl::cublas_generation(space);
#else
  (void)space;
  return 0;
#endif
}

void release_gemm_resources(ExecSpace const& space) {
#if defined(KOKKOS_ENABLE_CUDA)
  impl::cublas_release(space);
#else
  (void)space;
#endif
}

}  // namespace ktr
