// The narrow dense kernels' bf16 form on CPUs with AVX512-BF16 (dpbf16.hpp): each product as bf16 dot products
// (vdpbf16ps) over pairs of its reduction index, the weights kept in the two bf16 layouts the products read:
//
//   forward       y[r, n] = act(b[n] + sum_k x[r, k] w[k, n])     pairs of k: (x[r, 2i], x[r, 2i+1]) against
//                                                                  wt16[n] = (w[2i, n], w[2i+1, n]), bf16 rows
//   kernel grad   dw[k, n] = sum_r x[r, k] dy[r, n]                pairs of rows: (x[r, k], x[r+1, k]) against
//                                                                  (dy[r, n], dy[r+1, n]) broadcast
//   input grad    dx[r, k] = sum_n dy[r, n] w[k, n]                pairs of outputs: (dy[r, 2m], dy[r, 2m+1])
//                                                                  broadcast against wtp[m, k] = (w[k, 2m], w[k,
//                                                                  2m+1])
//
// x and dy are rounded to bf16 as they are loaded (one instruction per 32 floats), the weights once per step by
// dense_dpbf16_transpose. The narrow kernels' public functions (dense_narrow.hpp) call these under bf16 where
// dense_dpbf16_takes() holds.
#pragma once

#include "../core/types.hpp"
#include "activation_functors.hpp"

namespace ktr::impl {

/// True where the narrow dense kernels run their bf16 products as dot products (dpbf16_available()).
bool dense_dpbf16_takes();

/// Floats of scratch the two bf16 layouts of a (K, N) kernel take: at most dense_narrow_scratch(K, N).
std::int64_t dense_dpbf16_scratch(std::int64_t in_features, std::int64_t features);

/// wt16 (NB, K rounded up to 32; bf16, zeros past K and N) then wtp (NB / 2, K; bf16 pairs) from w (K, N).
void dense_dpbf16_transpose(ExecSpace const& space, std::int64_t in_features, std::int64_t features,
                            float const* w, float* scratch);

/// dense_narrow_forward's contract, from dense_dpbf16_transpose's scratch.
void dense_dpbf16_forward(ExecSpace const& space, std::int64_t batch, std::int64_t in_features,
                          std::int64_t features, float const* x, float const* scratch, float const* b,
                          Activation act, float* z, float* y);

/// dense_narrow_kernel_grad's contract.
void dense_dpbf16_kernel_grad(ExecSpace const& space, std::int64_t batch, std::int64_t in_features,
                              std::int64_t features, float const* x, float const* dy, float* dw);

/// dense_narrow_input_grad's contract, from dense_dpbf16_transpose's scratch.
void dense_dpbf16_input_grad(ExecSpace const& space, std::int64_t batch, std::int64_t in_features,
                             std::int64_t features, float const* dy, float const* scratch, float* dx);

}  // namespace ktr::impl
