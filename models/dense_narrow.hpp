// Dense layers with few outputs (N <= 16: a classifier head) on a host, without BLAS.
//
// A BLAS gemm with N = 10 runs at a fraction of its large-matrix rate: its micro-kernel tiles are wider than the
// problem and its packing costs as much as the arithmetic (the SimpleCNN's head, (32, 6272) x (6272, 10), spends
// 0.3 ms in three such gemms against 0.7 ms of convolution). Here the kernel is first transposed into
// wt (NB, K), NB = N rounded up to 4 with zero rows, and each product is a streaming loop over K in vector packs
// (models/pack.hpp) with NB accumulators in registers:
//
//   forward       y[r, n] = act(b[n] + sum_k x[r, k] wt[n, k])       4 rows per iteration, bias and activation
//   fused kernel grad   dw[k, n] = sum_r x[r, k] dy[r, n]                   1-2 packs of k per iteration, rows in
//   order input grad    dx[r, k] = sum_n dy[r, n] wt[n, k]                  a row and 4 packs of k per iteration
//
// Every output is written by one iteration and summed in a fixed order: the results do not depend on the thread
// count. GPU builds keep the vendor gemm (these loops are written for host vector registers).
#pragma once

#include "../backends/precision.hpp"
#include "../core/types.hpp"
#include "activation_functors.hpp"

#include <type_traits>

namespace ktr::impl {

/// The widest output count the narrow kernels take.
constexpr std::int64_t dense_narrow_max_features = 16;

/// The narrow kernels' row count for n outputs: n rounded up to 4 (zero rows past n).
inline std::int64_t dense_narrow_rows(std::int64_t n) { return (n + 3) / 4 * 4; }

/// Runs f(std::integral_constant<int, NB>) with NB = dense_narrow_rows(n) (n <= 16).
template <class F>
void with_narrow_rows(std::int64_t n, F const& f) {
  if (n <= 4)
    f(std::integral_constant<int, 4>{});
  else if (n <= 8)
    f(std::integral_constant<int, 8>{});
  else if (n <= 12)
    f(std::integral_constant<int, 12>{});
  else
    f(std::integral_constant<int, 16>{});
}

/// True where the narrow kernels run: a host execution space and at most dense_narrow_max_features outputs.
bool dense_narrow(std::int64_t features);

/// Floats of the transposed kernel for in_features x features.
std::int64_t dense_narrow_scratch(std::int64_t in_features, std::int64_t features);

/// wt (NB, K) = w (K, N) transposed, zero rows from N to NB.
void dense_narrow_transpose(ExecSpace const& space, Operand operand, std::int64_t in_features,
                            std::int64_t features, float const* w, float* wt);

/// y (B, N) = act(x (B, K) w + b), from wt; z = x w + b too if the activation needs it.
void dense_narrow_forward(ExecSpace const& space, Operand operand, std::int64_t batch, std::int64_t in_features,
                          std::int64_t features, float const* x, float const* wt, float const* b, Activation act,
                          float* z, float* y);

/// dw (K, N) = x^T dy.
void dense_narrow_kernel_grad(ExecSpace const& space, Operand operand, std::int64_t batch,
                              std::int64_t in_features, std::int64_t features, float const* x, float const* dy,
                              float* dw);

/// dx (B, K) = dy w^T, from wt.
void dense_narrow_input_grad(ExecSpace const& space, Operand operand, std::int64_t batch, std::int64_t in_features,
                             std::int64_t features, float const* dy, float const* wt, float* dx);

}  // namespace ktr::impl
