// The dense matrix product every layer goes through, on the caller's execution space instance.
//
// CUDA: cuBLAS on the instance's stream (Kokkos Kernels 3.4's gemm would run on the legacy default stream,
// which serialises with the caller and cannot be stream-captured). Elsewhere: KokkosBlas::gemm, which reaches
// the host BLAS (OpenBLAS) where Kokkos Kernels was built with it, and its portable kernel otherwise.
#pragma once

#include "../core/types.hpp"

#include <string>

namespace ktr {

/// C = alpha * op(A) * op(B) + beta * C on row-major matrices; op(X) is X or X^T as `trans_*` says.
/// Shapes: op(A) (M, K), op(B) (K, N), C (M, N).
void gemm(ExecSpace const& space, bool trans_a, bool trans_b, float alpha, ConstMatrix const& a,
          ConstMatrix const& b, float beta, Matrix const& c);

/// How many gemm calls this process has made (for launch accounting in benchmarks).
std::int64_t gemm_calls();

/// What gemm calls in this build, e.g. "cuBLAS" or "KokkosBlas -> OpenBLAS 0.3.21 ...".
std::string gemm_backend();

/// Gives the host BLAS (if it is OpenBLAS) `threads` threads, so that it matches Kokkos's host concurrency.
void set_host_blas_threads(int threads);

}  // namespace ktr
