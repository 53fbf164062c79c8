// The layer registry: every kind of layer a model description may name. A kind lives in one file with its layer
// (its token's grammar, printing, output shape, parameters with their Flax names, forward and backward) and is
// listed by one line in registry.cpp; the description parser asks the registry, and nothing else switches over
// kinds.
#pragma once

#include "layers.hpp"

#include <memory>
#include <string>
#include <vector>

namespace ktr {

/// A layer token split at ':' ("conv5x5:16:gelu" -> "conv5x5", "16", "gelu"), with the helpers kinds read it
/// with. Every error names the token.
struct LayerToken {
  std::string text;
  std::vector<std::string> parts;  ///< parts[0]: the head, which selects the kind
  explicit LayerToken(std::string const& token);
  /// Throws ktr::Error("model description: '<token>': <why>").
  [[noreturn]] void fail(std::string const& why) const;
  /// parts[i] as an extent in [1, kMaxDescriptionExtent] (`what` names it in the error).
  std::int64_t extent(std::size_t i, char const* what) const;
  /// Throws unless the token has between `least` and `most` parts.
  void expect_parts(std::size_t least, std::size_t most, char const* usage) const;
};

struct LayerKind {
  char const* usage;                                        ///< the token's grammar, for messages: "dense:N[:ACT]"
  bool (*accepts)(std::string const& head);                 ///< does this kind own tokens with this head?
  std::unique_ptr<Layer> (*make)(LayerToken const& token);  ///< throws ktr::Error naming the token
  char const* summary = "";  ///< one line for the reference (`ktr docs`): what it computes, Flax's equivalent
  char const* example = "";  ///< a description that uses the kind (`ktr docs` shows its layers' shapes)
};

/// Every kind, in registration order.
std::vector<LayerKind const*> const& layer_kinds();

}  // namespace ktr
