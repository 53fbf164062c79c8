// Model description parsing: the input, then each token through the layer registry, with every shape and
// parameter size checked.
#include "description.hpp"

#include "../core/checked.hpp"
#include "../core/error.hpp"
#include "../core/parse.hpp"
#include "layers.hpp"
#include "registry.hpp"

#include <map>
#include <sstream>

namespace ktr {

Description::Description() = default;
Description::~Description() = default;
Description::Description(Description&&) noexcept = default;
Description& Description::operator=(Description&&) noexcept = default;

namespace {

std::int64_t checked_size(Shape const& s) {
  std::int64_t size = 1;
  for (int i = 0; i < s.rank; ++i) size = checked_mul(size, s[i], "model description");
  return size;
}

std::string dims_str(Shape const& s) {  // per-sample extents: (H, W, C) or (N)
  std::string out = "(";
  for (int i = 1; i < s.rank; ++i) out += (i > 1 ? ", " : "") + std::to_string(s[i]);
  return out + ")";
}

struct Saved {
  int layer;  // the save:NAME layer
  Shape shape;
  bool used = false;
};

// Records a save:NAME, or tells an add:NAME / concat:NAME the shape it joins; the index of the save a join
// reads, else -1.
int link_skip(Layer& layer, int index, Shape const& in, std::map<std::string, Saved>& saved) {
  if (auto const* save = dynamic_cast<Save const*>(&layer)) {
    KTR_REQUIRE(saved.count(save->name()) == 0, "model description",
                "'" + save->describe() + "': '" + save->name() + "' is saved twice");
    saved[save->name()] = Saved{index, in};
    return -1;
  }
  auto* join = dynamic_cast<Join*>(&layer);
  if (join == nullptr) return -1;
  auto const it = saved.find(join->source());
  KTR_REQUIRE(it != saved.end(), "model description",
              "'" + join->describe() + "': nothing is saved as '" + join->source() +
                  "' before it (save:" + join->source() + ")");
  join->set_saved_shape(it->second.shape);
  it->second.used = true;
  return it->second.layer;
}

}  // namespace

Description parse_description(std::string const& text) {
  std::stringstream ss(text);
  std::string token;
  KTR_REQUIRE(static_cast<bool>(ss >> token), "model description", "empty");
  KTR_REQUIRE(token.rfind("in=", 0) == 0, "model description",
              "must start with in=HxWxC or in=D, got '" + escaped(token) + "'");
  Description d;
  {
    std::vector<std::int64_t> dims;
    std::stringstream in(token.substr(3));
    std::string part;
    while (std::getline(in, part, 'x')) {
      std::int64_t v = 0;
      if (!parse_integer(part, 1, kMaxDescriptionExtent, v))
        throw Error("model description: bad input extent in '" + escaped(token) + "' (must be in [1, " +
                    std::to_string(kMaxDescriptionExtent) + "])");
      dims.push_back(v);
    }
    KTR_REQUIRE((dims.size() == 3 || dims.size() == 1) && token.back() != 'x', "model description",
                "input must be HxWxC or D, got '" + escaped(token) + "'");
    d.input = dims.size() == 1 ? Shape{1, dims[0]} : Shape{1, dims[0], dims[1], dims[2]};
    checked_size(d.input);
  }
  d.shapes.push_back(d.input);
  bool parameters = false;
  std::map<std::string, Saved> saved;
  while (ss >> token) {
    auto layer = make_layer(token);
    d.sources.push_back(link_skip(*layer, int(d.layers.size()), d.shapes.back(), saved));
    Shape const& in = d.shapes.back();
    Shape const out = layer->output_shape(in);
    KTR_REQUIRE(checked_size(out) > 0, "model description",
                "'" + layer->describe() + "' leaves nothing of " + dims_str(in));
    for (ParamSpec const& p : layer->param_specs(in)) checked_size(p.shape), parameters = true;
    d.layers.push_back(std::move(layer));
    d.shapes.push_back(out);
  }
  for (auto const& [name, s] : saved)
    KTR_REQUIRE(s.used, "model description",
                "'save:" + name + "': '" + name + "' is never used (add:" + name + " or concat:" + name + ")");
  KTR_REQUIRE(!d.layers.empty() && parameters, "model description",
              "has no layer with parameters to train (a dense or convolution layer)");
  int const rank = d.shapes.back().rank;
  KTR_REQUIRE(
      rank == 2 || rank == 4, "model description",
      "must end in a layer producing (B, values) or a field (B, H, W, C), not " + dims_str(d.shapes.back()));
  return d;
}

std::string Description::text() const {
  std::string s = "in=";
  for (int i = 1; i < input.rank; ++i) s += (i > 1 ? "x" : "") + std::to_string(input[i]);
  for (auto const& l : layers) s += " " + l->describe();
  return s;
}

}  // namespace ktr
