// Direct 3x3 SAME convolution for few input channels (the first layer of an image model), NHWC, kernel HWIO; host
// builds only (GPU builds take im2col + gemm for every convolution).
//
// im2col + gemm turns a Cin = 1 convolution into skinny K = 9 gemms and streams the (B*H*W, 9*Cin) column matrix
// and the (B*H*W, Cout) output through memory several times (im2col, gemm, bias/ReLU, pooling, and back). Here
// one kernel reads the input once and writes only the (optionally 2x2 average-pooled) activated output:
//
//   forward   y (B, H/P, W/P, F) = avgpool_P(act(conv3x3(x, w) + b))           P = 1 or 2
//   backward  recomputes conv + bias (cheap: 9 Cin multiply-adds per output), forms
//             dz = act'(z) * dy / P^2 per pixel and accumulates dw (3, 3, C, F) and db (F) in registers or a small
//             local tile per chunk of rows; a second kernel sums the chunks' partials in a fixed order (no
//             atomics: the result does not depend on scheduling).
//   dx        (only when asked for) a gather over dz, which the backward then also writes out.
//
// Vectorised over output channels: the inner loops run over a compile-time tile of F, so the host compiler keeps
// the accumulators in vector registers; on a GPU the same loops run per thread.
#pragma once

#include "../backends/precision.hpp"
#include "../core/types.hpp"
#include "activation_functors.hpp"

namespace ktr::impl {

/// The direct kernels handle up to this many input channels (the local patch and gradient tiles are sized by it).
constexpr std::int64_t conv_direct_max_channels = 8;

struct ConvDims {
  std::int64_t batch, height, width, channels, features;
  int pool;  // 1: plain convolution; 2: followed by a fused 2x2 stride-2 VALID average pool
  KOKKOS_INLINE_FUNCTION std::int64_t out_height() const { return height / pool; }
  KOKKOS_INLINE_FUNCTION std::int64_t out_width() const { return width / pool; }
  /// Floats of one chunk's partial gradient: dw (9 C F) then db (F).
  KOKKOS_INLINE_FUNCTION std::int64_t partial_size() const { return 9 * channels * features + features; }
};

/// True if the direct kernels take a layer with this activation and output channel count: ReLU and identity any
/// count, other activations a multiple of 8 (their kernels are instantiated for 8-wide channel tiles only).
bool conv_direct_takes(Activation act, std::int64_t features);

/// Output rows (after pooling) per chunk of the backward: a whole image on a host (few, large chunks, one per
/// core's share), one row on a GPU (many threads).
std::int64_t conv_direct_rows_per_chunk(ConvDims const& d);
/// Number of backward chunks, i.e. rows of the partials buffer.
std::int64_t conv_direct_chunks(ConvDims const& d);

/// Floats of scratch conv_direct_operands needs: the rounded weights (9 C F) and, for a single input channel, the
/// operands of the AVX512-BF16 kernels (conv_direct_dpbf16.hpp), which may take such a layer.
std::int64_t conv_direct_operands_size(ConvDims const& d);

/// The weights the kernels should read: w itself, or under bf16 precision w rounded to bf16 into w16 (one small
/// kernel), so that the kernels round no weight as they load it, followed there by the AVX512-BF16 kernels'
/// operands (from w and x) where they take the layer. Under bf16 the forward and the backward of this input must
/// be given this pointer.
float const* conv_direct_operands(ExecSpace const& space, Operand operand, ConvDims const& d, Activation act,
                                  float const* x, float const* w, float* w16);

/// y = avgpool_P(act(conv(x, w) + b)).  x (B, H, W, C), w (3, 3, C, F), b (F), y (B, H/P, W/P, F); w16 is the
/// buffer given to conv_direct_operands, where the AVX512-BF16 kernels leave what their backward reads.
void conv_direct_forward(ExecSpace const& space, Operand operand, ConvDims const& d, float const* x,
                         float const* w, float const* b, Activation act, float* y, float* w16);

/// dw (3, 3, C, F), db (F) from dy (B, H/P, W/P, F); `partials` holds conv_direct_chunks(d) * partial_size()
/// floats. If dz is not null it receives d loss / d z (B, H, W, F) (zero where the pool drops pixels).
void conv_direct_backward(ExecSpace const& space, Operand operand, ConvDims const& d, float const* x,
                          float const* w, float const* b, Activation act, float const* dy, float* dw, float* db,
                          float* partials, float* dz);

/// dx (B, H, W, C) = the 3x3 transposed convolution of dz (B, H, W, F) with w.
void conv_direct_input_grad(ExecSpace const& space, ConvDims const& d, float const* dz, float const* w, float* dx);

}  // namespace ktr::impl
