// Model descriptions: one line of text that names a model's input and layers, parsed and checked on the host.
//
//   "in=28x28x1 flatten dense:512:relu dense:512:relu dense:10"       (the MLP)
//   "in=28x28x1 conv3x3:32:relu avgpool2 flatten dense:10"            (SimpleCNN)
//   "in=6 dense:64:silu layernorm dense:64:tanh dropout:0.1 dense:1"  (a regression surrogate)
//
// The parser is the only reader of descriptions (Model takes the layers it builds). Each token is read by its
// kind in the layer registry (models/registry.hpp); the parser checks every extent (at most 2^24), the shape each
// layer produces and every parameter's size (checked arithmetic: no size wraps), that some layer has parameters,
// that the model ends in (B, values) or a field (B, H, W, C) (a convolution: field-to-field surrogates), and the
// skip connections: a NAME is saved once, before it is used, used at least once, by joins whose shapes fit.
//
//   "in=16x16x1 conv3x3:16:relu save:a maxpool2 conv3x3:32:relu upsample2 concat:a conv3x3:16:relu conv1x1:1"
//   "in=8 dense:64:tanh save:r dense:64:tanh add:r dense:1"                    (a U-Net, a residual MLP)
// Building layers allocates nothing, so plans and the fuzzer parse without touching a device.
#pragma once

#include "../core/tensor.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ktr {

class Layer;

struct Description {
  Description();
  ~Description();
  Description(Description&&) noexcept;
  Description& operator=(Description&&) noexcept;

  Shape input;                                 ///< (1, H, W, C) for images, (1, D) for vectors
  std::vector<std::unique_ptr<Layer>> layers;  ///< at least one, and one with parameters
  std::vector<Shape> shapes;                   ///< shapes[i]: input of layer i at batch 1; back(): the output
  /// sources[i]: for an add:NAME or concat:NAME, the index of the save:NAME layer it reads (whose input it
  /// joins); -1 for every other layer.
  std::vector<int> sources;
  std::string text() const;  ///< the normalised description
};

/// The largest extent or feature count a description may name.
constexpr std::int64_t kMaxDescriptionExtent = std::int64_t(1) << 24;

/// Parses and checks a description; throws ktr::Error("model description: ...") naming the bad token.
Description parse_description(std::string const& text);

}  // namespace ktr
