// Convolutions through a library, behind one entry point as gemm is: the layer describes the convolution
// (ConvShape), the backend chooses. Hosts built with oneDNN (ktr_ENABLE_ONEDNN) run oneDNN's convolution
// primitives (conv_onednn.cpp); elsewhere, and for what a library cannot run (circular padding), the layer keeps
// its portable path (im2col + gemm), the reference every library path is tested against.
#pragma once

#include "../core/types.hpp"
#include "precision.hpp"

#include <cstdint>
#include <string>

namespace ktr {

/// A 2-D convolution, NHWC inputs (batch, height, width, channels) and outputs (batch, out_height, out_width,
/// features), the kernel HWIO (kernel, kernel, channels, features: ktr's (K^2 C, F) matrix), zero padding
/// (top, left, bottom, right; SAME's smaller half first), stride on both axes.
struct ConvShape {
  std::int64_t batch = 0, height = 0, width = 0, channels = 0, features = 0, kernel = 1, stride = 1;
  std::int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0, out_height = 0, out_width = 0;
};

/// "" when this build and CPU can run `shape` in `precision` through a library, else why not, in words.
std::string conv_library_unavailable(ConvShape const& shape, Precision const& precision);

/// The convolution library and the kernel it picks for a 32 x 32 x 32 -> 32 3x3 fp32 convolution, or why there is
/// none ("oneDNN 2.6.3, kernel brg:avx512_core" and the like).
std::string conv_library();

/// What a forward convolution may apply to its output as the library writes it (oneDNN's post-ops), where the
/// layer would otherwise run a pass of its own: y = act(x * w + bias). Only activations the library computes to
/// the bit as ktr's own functors do (relu, leaky_relu with ktr's slope, identity), so a fused forward writes the
/// bits of the unfused one.
struct ConvEpilogue {
  enum class Act { identity, relu, leaky_relu };
  float const* bias = nullptr;  ///< `features` floats; null: no bias, no activation (the layer's pass follows)
  Act act = Act::identity;
  float slope = 0;  ///< leaky_relu: y = slope * z below 0
};

/// y = x * w, or act(x * w + bias) where `epilogue.bias` is not null (the layer's bias and activation pass fused
/// into the library's). Under bf16, where `x16` is not null, x is rounded into it (batch x height x width x
/// channels values the caller keeps) rather than into the library's own buffer, for the backward of the same x;
/// where x is null too, x16 already holds the rounded input.
void conv_library_forward(ExecSpace const& space, Precision const& precision, ConvShape const& shape,
                          float const* x, float const* w, float* y, ConvEpilogue const& epilogue = {},
                          std::uint16_t* x16 = nullptr);
/// dw = x^T * dy, the kernel gradient (replaced, not accumulated), then, where dx is not null, dx = dy *^T w, the
/// input gradient (bf16: dy rounded once for both). Under bf16, where `x16` is not null, it holds x rounded (the
/// forward's `x16` for this very x), and x is not rounded again; where `dy16` is not null, it holds dy rounded.
void conv_library_backward(ExecSpace const& space, Precision const& precision, ConvShape const& shape,
                           float const* x, float const* dy, float const* w, float* dw, float* dx,
                           std::uint16_t const* x16 = nullptr, std::uint16_t const* dy16 = nullptr);

}  // namespace ktr
