// The direct convolution's bf16 form on CPUs with AVX512-BF16 (dpbf16.hpp): products as bf16 dot products
// (vdpbf16ps: two bf16 products summed into each fp32 lane) instead of fp32 multiply-adds on rounded inputs.
//
// It takes the first layer of an image model as the SimpleCNN has it: one input channel, 3x3 SAME, the 2x2
// average pool fused in, a multiple of 16 output channels, ReLU or identity. Each row of the 3x3 window runs as
// two pairs of taps (the second padded with a zero weight):
//
//   forward   z[q, f] = b[f] + sum_kh dot2((x[q + (kh, 0)], x[q + (kh, 1)]), (w[kh, 0, f], w[kh, 1, f]))
//                            + dot2((x[q + (kh, 2)], x[q + (kh, 3)]), (w[kh, 2, f], 0))        q: the 2x2 pixels
//   backward  forms dz = act'(z) dy / 4 rounded to bf16 (ReLU's derivative from the forward's masks of z > 0) and
//             accumulates the kernel gradient over the block's rows of two pixels:
//             dw[t, f] += dot2((x[q0 + t], x[q1 + t]), (dz[q0, f], dz[q1, f]))
//
// Every pair is two neighbours in a row of the input: the input is rounded once into a bf16 copy with a border of
// zeros, and the dot products broadcast their pairs straight from it (no shuffles, no edge tests).
#pragma once

#include "../core/types.hpp"
#include "activation_functors.hpp"
#include "conv_direct.hpp"

namespace ktr::impl {

/// True where conv_dpbf16_forward / conv_dpbf16_backward run this layer: an x86-64 host build on a CPU with
/// AVX512-BF16 (and not switched off by conv_dpbf16_allow), one input channel, the 2x2 pool fused in, a multiple
/// of 16 output channels, ReLU or identity.
bool conv_dpbf16_takes(ConvDims const& d, Activation act);

/// Tests only: false makes conv_dpbf16_takes answer false (the portable bf16 kernels run instead); process-wide.
void conv_dpbf16_allow(bool allowed);

/// 32-bit words of the kernels' operands: the weights as pairs of taps (6 F: per kernel row (w[kh, 0], w[kh, 1])
/// and (w[kh, 2], 0)), the input rounded to bf16 with a border of zeros (B, H + 2, W + 3 halves), and the
/// forward's ReLU masks for the backward (16 bits per pixel and vector of 16 channels).
std::int64_t conv_dpbf16_scratch_size(ConvDims const& d);

/// Fills the weights' pairs and the padded input from x (B, H, W, 1) and w (3, 3, 1, F): before the forward, and
/// left for the backward.
void conv_dpbf16_prepare(ExecSpace const& space, ConvDims const& d, float const* x, float const* w,
                         std::uint32_t* ops);

/// y = avgpool2(act(conv(x, w) + b)), the products in bf16 (conv_direct_forward's contract), from the operands;
/// under ReLU it writes the masks of the positive z into the operands.
void conv_dpbf16_forward(ExecSpace const& space, ConvDims const& d, std::uint32_t* ops, float const* b,
                         Activation act, float* y);

/// The per-chunk partials of dw and db (conv_direct_backward's layout) and, if dz is not null, d loss / d z
/// rounded to bf16 (zero where the pool drops pixels is left to the caller), from the forward's operands: the
/// padded input and ReLU's masks (z is not recomputed).
void conv_dpbf16_backward(ExecSpace const& space, ConvDims const& d, std::uint32_t const* ops, Activation act,
                          float const* dy, float* partials, float* dz);

}  // namespace ktr::impl
