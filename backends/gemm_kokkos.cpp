// gemm on the host and HIP backends: KokkosBlas::gemm (on the instance where Kokkos Kernels takes one; the host
// BLAS or Kokkos Kernels' portable kernel), and the column sums as a Kokkos team reduction.
#include "gemm_backends.hpp"

#if !defined(KOKKOS_ENABLE_CUDA)
#include "host_blas.hpp"
#include "kokkos_compat.hpp"

#include <KokkosBlas3_gemm.hpp>

#include <string>

namespace ktr::impl {

void gemm_kokkos(ExecSpace const& space, bool trans_a, bool trans_b, float alpha, ConstMatrix const& a,
                 ConstMatrix const& b, float beta, Matrix const& c) {
#if KTR_KK_GEMM_TAKES_SPACE
  // Kokkos Kernels 4.x: on the instance (HIP: its stream, so the K-step program can be captured).
  KokkosBlas::gemm(space, trans_a ? "T" : "N", trans_b ? "T" : "N", alpha, a, b, beta, c);
#else
  // Kokkos Kernels 3.4.01 has no execution-space overload: the default instance (FIXME_HIP: the null stream, so
  // HIP builds against 3.4.01 run the plain loop, never a captured one).
  (void)space;
  KokkosBlas::gemm(trans_a ? "T" : "N", trans_b ? "T" : "N", alpha, a, b, beta, c);
#endif
}

void column_sums_kokkos(ExecSpace const& space, ConstMatrix const& x, float* sums) {
  std::int64_t const rows = std::int64_t(x.extent(0)), cols = std::int64_t(x.extent(1));
  using Team = Kokkos::TeamPolicy<ExecSpace>;
  float const* const data = x.data();
  Kokkos::parallel_for(
      "ktr::gemm::column_sums", Team(space, int(cols), Kokkos::AUTO),
      KOKKOS_LAMBDA(Team::member_type const& team) {
        std::int64_t const j = team.league_rank();
        float sum = 0.0f;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, rows), [&](std::int64_t i, float& s) { s += data[i * cols + j]; }, sum);
        Kokkos::single(Kokkos::PerTeam(team), [&] { sums[j] = sum; });
      });
}

std::string gemm_kokkos_name() {
  std::string s = KTR_KK_GEMM_TAKES_SPACE ? "KokkosBlas::gemm (instance)" : "KokkosBlas::gemm";
#if defined(KOKKOSKERNELS_ENABLE_TPL_BLAS)
  s += " -> host BLAS";
  std::string const config = openblas_config();
  if (!config.empty()) s += " (" + config + ")";
#elif defined(KOKKOSKERNELS_ENABLE_TPL_ROCBLAS)
  s += " -> rocBLAS (one process-wide handle)";
#else
  s += " (portable kernel, no TPL BLAS)";
#endif
  return s;
}

}  // namespace ktr::impl

#endif  // !KOKKOS_ENABLE_CUDA
