// The registry's list of layer kinds (one line each; each kind is defined in its layer's file) and the token
// helpers they parse with. A kind is returned by a function of its file rather than being a global: a HIP device
// pass would emit the global and miss the host functions it points to.
#include "registry.hpp"

#include "../core/error.hpp"
#include "../core/parse.hpp"
#include "description.hpp"

#include <sstream>

namespace ktr {

LayerKind const& dense_kind();           // dense.cpp
LayerKind const& conv_kind();            // conv2d.cpp
LayerKind const& pool_kind();            // pool.cpp: avgpool2, maxpool2
LayerKind const& global_pool_kind();     // pool.cpp: globalavgpool
LayerKind const& flatten_kind();         // pool.cpp
LayerKind const& activation_kind();      // activation_layer.cpp: relu, tanh, ...
LayerKind const& layernorm_kind();       // layernorm.cpp
LayerKind const& dropout_kind();         // dropout.cpp
LayerKind const& upsample_kind();        // upsample.cpp: upsample2
LayerKind const& conv_transpose_kind();  // conv_transpose.cpp: convT2x2
LayerKind const& skip_kind();            // skip.cpp: save, add, concat

std::vector<LayerKind const*> const& layer_kinds() {
  static std::vector<LayerKind const*> const kinds = {&dense_kind(),          &conv_kind(),    &pool_kind(),
                                                      &global_pool_kind(),    &flatten_kind(), &activation_kind(),
                                                      &layernorm_kind(),      &dropout_kind(), &upsample_kind(),
                                                      &conv_transpose_kind(), &skip_kind()};
  return kinds;
}

LayerToken::LayerToken(std::string const& token) : text(token) {
  std::stringstream ss(token);
  std::string part;
  while (std::getline(ss, part, ':')) parts.push_back(part);
  if (!token.empty() && token.back() == ':') parts.push_back("");
  if (parts.empty()) parts.push_back("");
}

void LayerToken::fail(std::string const& why) const {
  throw Error("model description: '" + escaped(text) + "': " + escaped(why));
}

std::int64_t LayerToken::extent(std::size_t i, char const* what) const {
  std::int64_t v = 0;
  if (i < parts.size() && parse_integer(parts[i], 1, kMaxDescriptionExtent, v)) return v;
  fail(std::string("bad ") + what + " (must be in [1, " + std::to_string(kMaxDescriptionExtent) + "])");
}

void LayerToken::expect_parts(std::size_t least, std::size_t most, char const* usage) const {
  if (parts.size() < least || parts.size() > most) fail(std::string("expected ") + usage);
}

std::unique_ptr<Layer> make_layer(std::string const& token) {
  LayerToken const t(token);
  for (LayerKind const* kind : layer_kinds())
    if (kind->accepts(t.parts[0])) return kind->make(t);
  std::string usages;
  for (LayerKind const* kind : layer_kinds()) usages += (usages.empty() ? "" : ", ") + std::string(kind->usage);
  t.fail("unknown layer (" + usages + ")");
}

}  // namespace ktr
