// Model description parsing: tokens, extents and the shape each layer produces, all checked.
#include "description.hpp"

#include "../core/checked.hpp"
#include "../core/error.hpp"

#include <sstream>

namespace ktr {

namespace {

std::int64_t parse_extent(std::string const& s, std::string const& token, char const* what) {
  try {
    std::size_t used = 0;
    long long const v = std::stoll(s, &used);
    if (used == s.size() && v > 0 && v <= kMaxDescriptionExtent) return v;
  } catch (std::logic_error const&) {
  }
  throw Error("model description: bad " + std::string(what) + " in '" + token + "' (must be in [1, " +
              std::to_string(kMaxDescriptionExtent) + "])");
}

std::string dims_str(std::vector<std::int64_t> const& d) {
  std::string s = "(";
  for (std::size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + ")";
}

}  // namespace

std::string LayerSpec::token() const {
  switch (kind) {
    case Kind::dense:
      return "dense:" + std::to_string(features) + (relu ? ":relu" : "");
    case Kind::conv3x3:
      return "conv3x3:" + std::to_string(features) + (relu ? ":relu" : "");
    case Kind::avgpool2:
      return "avgpool2";
    case Kind::flatten:
      return "flatten";
  }
  return "";
}

LayerSpec parse_layer(std::string const& token) {
  std::vector<std::string> parts;
  std::stringstream ss(token);
  std::string part;
  while (std::getline(ss, part, ':')) parts.push_back(part);
  LayerSpec spec;
  if (token == "avgpool2") return spec.kind = LayerSpec::Kind::avgpool2, spec;
  if (token == "flatten") return spec;
  if (parts.empty() || (parts[0] != "dense" && parts[0] != "conv3x3"))
    throw Error("model description: unknown layer '" + token +
                "' (dense:N[:relu], conv3x3:N[:relu], avgpool2, flatten)");
  spec.kind = parts[0] == "dense" ? LayerSpec::Kind::dense : LayerSpec::Kind::conv3x3;
  KTR_REQUIRE(parts.size() >= 2, "model description", "'" + token + "' needs a feature count");
  spec.features = parse_extent(parts[1], token, "feature count");
  KTR_REQUIRE(parts.size() <= 3 && (parts.size() < 3 || parts[2] == "relu") && token.back() != ':',
              "model description", "'" + token + "': the only activation is relu");
  spec.relu = parts.size() == 3;
  return spec;
}

Description parse_description(std::string const& text) {
  std::stringstream ss(text);
  std::string token;
  KTR_REQUIRE(static_cast<bool>(ss >> token), "model description", "empty");
  KTR_REQUIRE(token.rfind("in=", 0) == 0, "model description",
              "must start with in=HxWxC or in=D, got '" + token + "'");
  Description d;
  {
    std::vector<std::int64_t> dims;
    std::stringstream in(token.substr(3));
    std::string part;
    while (std::getline(in, part, 'x')) dims.push_back(parse_extent(part, token, "input extent"));
    KTR_REQUIRE((dims.size() == 3 || dims.size() == 1) && token.back() != 'x', "model description",
                "input must be HxWxC or D, got '" + token + "'");
    d.input = dims;
    std::int64_t size = 1;
    for (auto e : dims) size = checked_mul(size, e, "model description");
  }
  std::vector<std::int64_t> shape = d.input;
  while (ss >> token) {
    LayerSpec const spec = parse_layer(token);
    std::vector<std::int64_t> out;
    std::int64_t size = 1;
    for (auto e : shape) size = checked_mul(size, e, "model description");
    switch (spec.kind) {
      case LayerSpec::Kind::dense:
        out = {spec.features};
        checked_mul(size, spec.features, "model description");  // the kernel (in, out)
        break;
      case LayerSpec::Kind::conv3x3:
        KTR_REQUIRE(shape.size() == 3, "model description",
                    "'" + token + "' needs an image input (H, W, C), got " + dims_str(shape));
        out = {shape[0], shape[1], spec.features};
        checked_mul(checked_mul(9, shape[2], "model description"), spec.features, "model description");
        break;
      case LayerSpec::Kind::avgpool2:
        KTR_REQUIRE(shape.size() == 3, "model description",
                    "'" + token + "' needs an image input (H, W, C), got " + dims_str(shape));
        out = {shape[0] / 2, shape[1] / 2, shape[2]};
        break;
      case LayerSpec::Kind::flatten:
        out = {size};
        break;
    }
    std::int64_t out_size = 1;
    for (auto e : out) out_size = checked_mul(out_size, e, "model description");
    KTR_REQUIRE(out_size > 0, "model description", "'" + token + "' leaves nothing of " + dims_str(shape));
    d.layers.push_back(spec);
    d.out.push_back(out);
    shape = out;
  }
  KTR_REQUIRE(!d.layers.empty() && d.layers.back().kind == LayerSpec::Kind::dense, "model description",
              "must end in a dense layer producing (B, classes)");
  return d;
}

std::string Description::text() const {
  std::string s = "in=";
  for (std::size_t i = 0; i < input.size(); ++i) s += (i ? "x" : "") + std::to_string(input[i]);
  for (auto const& l : layers) s += " " + l.token();
  return s;
}

}  // namespace ktr
