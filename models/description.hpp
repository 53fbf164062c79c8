// Model descriptions: one line of text that names a model's input and layers, parsed and checked on the host.
//
//   "in=28x28x1 flatten dense:512:relu dense:512:relu dense:10"       (the MLP)
//   "in=28x28x1 conv3x3:32:relu avgpool2 flatten dense:10"            (SimpleCNN)
//   "in=16 dense:64:relu dense:3"                                      (vector inputs of 16 features)
//
// The parser is the only reader of descriptions (Model builds its layers from what it returns). It checks every
// token, every extent (at most 2^24) and the shape each layer produces (checked arithmetic: no size wraps), and
// that the model ends in a dense layer. It has no Kokkos in it, so the fuzzer builds it alone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ktr {

/// One layer token: "dense:N[:relu]", "conv3x3:N[:relu]", "avgpool2", "flatten".
struct LayerSpec {
  enum class Kind { dense, conv3x3, avgpool2, flatten };
  Kind kind = Kind::flatten;
  std::int64_t features = 0;  ///< dense, conv3x3
  bool relu = false;          ///< dense, conv3x3
  std::string token() const;  ///< the normalised token
};

struct Description {
  std::vector<std::int64_t> input;             ///< (H, W, C) for images, (D) for vectors
  std::vector<LayerSpec> layers;               ///< at least one; the last is dense
  std::vector<std::vector<std::int64_t>> out;  ///< per-sample output extents of each layer: (H, W, C) or (N)
  std::string text() const;                    ///< the normalised description
};

/// The largest extent or feature count a description may name.
constexpr std::int64_t kMaxDescriptionExtent = std::int64_t(1) << 24;

/// Parses and checks a description; throws ktr::Error("model description: ...") naming the bad token.
Description parse_description(std::string const& text);
/// Parses one layer token; throws ktr::Error naming it.
LayerSpec parse_layer(std::string const& token);

}  // namespace ktr
