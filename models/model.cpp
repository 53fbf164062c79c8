// Model: description parsing, arena and workspace layout, forward and backward through the layer list.
#include "models/model.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <sstream>

namespace ktr {

namespace {

Shape parse_input(std::string const& token) {
  // in=HxWxC
  KTR_REQUIRE(token.rfind("in=", 0) == 0, "model description", "must start with in=HxWxC, got '" + token + "'");
  std::vector<std::int64_t> dims;
  std::stringstream ss(token.substr(3));
  std::string part;
  while (std::getline(ss, part, 'x')) {
    try {
      std::size_t used = 0;
      long long v = std::stoll(part, &used);
      KTR_REQUIRE(used == part.size() && v > 0, "model description", "bad input extent in '" + token + "'");
      dims.push_back(v);
    } catch (std::logic_error const&) {
      throw Error("model description: bad input extent in '" + token + "'");
    }
  }
  KTR_REQUIRE(dims.size() == 3, "model description", "input must be HxWxC, got '" + token + "'");
  return Shape{1, dims[0], dims[1], dims[2]};
}

}  // namespace

std::string Model::mlp(std::vector<std::int64_t> const& hidden, std::int64_t classes) {
  std::string d = "in=28x28x1 flatten";
  for (auto h : hidden) d += " dense:" + std::to_string(h) + ":relu";
  return d + " dense:" + std::to_string(classes);
}

std::string Model::simple_cnn(std::int64_t features, std::int64_t classes) {
  return "in=28x28x1 conv3x3:" + std::to_string(features) +
         ":relu avgpool2 flatten dense:" + std::to_string(classes);
}

Model::Model(std::string const& description, std::int64_t max_batch) : max_batch_(max_batch) {
  KTR_REQUIRE(max_batch > 0, "ktr::Model", "max_batch must be positive");
  std::stringstream ss(description);
  std::string token;
  KTR_REQUIRE(static_cast<bool>(ss >> token), "model description", "empty");
  input_ = parse_input(token);
  description_ = token;
  shapes_.push_back(input_);
  std::vector<ParamSpec> specs;
  std::vector<std::size_t> first_param;
  while (ss >> token) {
    auto layer = make_layer(token);
    Shape const in = shapes_.back();
    first_param.push_back(specs.size());
    for (auto spec : layer->param_specs(in)) {
      spec.name = "layer" + std::to_string(layers_.size()) + "." + spec.name;
      specs.push_back(spec);
    }
    shapes_.push_back(layer->output_shape(in));
    KTR_REQUIRE(shapes_.back().size() > 0, "model description", "'" + token + "' leaves nothing of " + in.str());
    description_ += " " + layer->describe();
    layers_.push_back(std::move(layer));
  }
  KTR_REQUIRE(!layers_.empty() && dynamic_cast<Dense const*>(layers_.back().get()) != nullptr, "model description",
              "must end in a dense layer producing (B, classes)");
  first_param.push_back(specs.size());

  arena_ = Arena(specs);
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    std::vector<Tensor> params, grads;
    for (std::size_t p = first_param[i]; p < first_param[i + 1]; ++p) {
      params.push_back(arena_.param(p));
      grads.push_back(arena_.grad(p));
    }
    layers_[i]->bind(params, grads);
  }

  // Fusion: a layer may absorb the one after it (Conv2D + AvgPool2); the pair then runs as one layer.
  absorbs_next_.assign(layers_.size(), false);
  for (std::size_t i = 0; i + 1 < layers_.size(); ++i)
    if (i == 0 || !absorbs_next_[i - 1])
      absorbs_next_[i] = layers_[i]->fuse_next(*layers_[i + 1], activation(i, max_batch));

  // Workspace: [outputs of every non-view layer | two gradient buffers | each layer's scratch], one allocation.
  // Scratch is per layer, so what a forward leaves there (im2col columns) is still there for the backward.
  auto padded = [](std::int64_t n) { return (n + Arena::alignment - 1) / Arena::alignment * Arena::alignment; };
  std::int64_t size = 0, largest = 0, scratch = 0;
  std::vector<std::int64_t> scratch_offset(layers_.size());
  act_offset_.assign(shapes_.size(), -1);
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    Shape const in = activation(i, max_batch), out = activation(i + 1, max_batch);
    largest = std::max({largest, in.size(), out.size()});
    scratch_offset[i] = scratch;
    scratch += padded(layers_[i]->scratch_size(in));
    if (!layers_[i]->is_view() && !absorbs_next_[i]) {  // a fused layer writes only the next one's output
      act_offset_[i + 1] = size;
      size += padded(out.size());
    }
  }
  grad_offset_[0] = size;
  grad_offset_[1] = size + padded(largest);
  std::int64_t const scratch_base = size + 2 * padded(largest);
  workspace_ = DeviceView<float*>("ktr::model::workspace", static_cast<std::size_t>(scratch_base + scratch));
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    std::int64_t const begin = scratch_base + scratch_offset[i];
    layers_[i]->set_scratch(Kokkos::subview(
        workspace_, std::make_pair(begin, begin + layers_[i]->scratch_size(activation(i, max_batch)))));
  }
  acts_.resize(layers_.size() + 1);
}

double Model::train_flops(std::int64_t batch) const {
  double flops = 0;
  bool first = true;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    double const f = layers_[i]->forward_flops(activation(i, batch));
    if (f == 0) continue;
    flops += first ? 2 * f : 3 * f;  // forward + weight gradient (+ input gradient after the first layer)
    first = false;
  }
  return flops;
}

Tensor Model::forward(ExecSpace const& space, Tensor const& x) {
  std::int64_t const batch = x.shape()[0];
  KTR_REQUIRE(batch > 0 && batch <= max_batch_, "ktr::Model::forward",
              "batch " + std::to_string(batch) + " exceeds the allocated " + std::to_string(max_batch_));
  KTR_REQUIRE(x.shape() == input_shape(batch), "ktr::Model::forward",
              "input " + x.shape().str() + " is not " + input_shape(batch).str());
  batch_ = batch;
  acts_[0] = x;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    std::size_t const o = absorbs_next_[i] ? i + 2 : i + 1;  // the output this layer writes
    Shape const out_shape = activation(o, batch);
    if (absorbs_next_[i]) acts_[i + 1] = Tensor();  // never materialised
    acts_[o] = layers_[i]->is_view()
                   ? acts_[i].reshaped(out_shape)
                   : Tensor(Kokkos::subview(workspace_,
                                            std::make_pair(act_offset_[o], act_offset_[o] + out_shape.size())),
                            out_shape);
    layers_[i]->forward(space, acts_[i], acts_[o]);
    if (absorbs_next_[i]) ++i;
  }
  return acts_.back();
}

Tensor Model::dlogits() const {
  Shape const s = activation(layers_.size(), batch_);
  return Tensor(Kokkos::subview(workspace_, std::make_pair(grad_offset_[0], grad_offset_[0] + s.size())), s);
}

void Model::backward(ExecSpace const& space, Tensor const& dx) {
  KTR_REQUIRE(batch_ > 0, "ktr::Model::backward", "no forward pass to differentiate");
  // The first layer with parameters needs no input gradient unless the caller asks for dx.
  std::size_t first = 0;
  while (layers_[first]->is_view()) ++first;
  int current = 0;  // dlogits sit in gradient buffer 0
  Tensor dy = dlogits();
  for (std::size_t i = layers_.size(); i-- > first;) {
    Shape const in_shape = activation(i, batch_);
    if (layers_[i]->is_view()) {
      dy = dy.reshaped(in_shape);
      continue;
    }
    if (i > 0 && absorbs_next_[i - 1]) continue;  // dy is the gradient of the fused pair's output
    Tensor const& y = absorbs_next_[i] ? acts_[i + 2] : acts_[i + 1];
    Tensor din;
    if (i > first) {
      std::int64_t const off = grad_offset_[1 - current];
      din = Tensor(Kokkos::subview(workspace_, std::make_pair(off, off + in_shape.size())), in_shape);
    } else if (dx.size() > 0) {
      KTR_REQUIRE(dx.size() == in_shape.size(), "ktr::Model::backward", "dx must hold " + in_shape.str());
      din = dx.reshaped(in_shape);
    }
    layers_[i]->backward(space, acts_[i], y, dy, din);
    dy = din;
    current = 1 - current;
  }
}

std::unique_ptr<Layer> make_layer(std::string const& token) {
  std::vector<std::string> parts;
  std::stringstream ss(token);
  std::string part;
  while (std::getline(ss, part, ':')) parts.push_back(part);
  auto features = [&]() -> std::int64_t {
    KTR_REQUIRE(parts.size() >= 2, "model description", "'" + token + "' needs a feature count");
    try {
      std::size_t used = 0;
      long long v = std::stoll(parts[1], &used);
      if (used == parts[1].size() && v > 0) return v;
    } catch (std::logic_error const&) {
    }
    throw Error("model description: bad feature count in '" + token + "'");
  };
  auto relu = [&]() {
    KTR_REQUIRE(parts.size() <= 3 && (parts.size() < 3 || parts[2] == "relu"), "model description",
                "'" + token + "': the only activation is relu");
    return parts.size() == 3;
  };
  if (parts[0] == "dense") return std::make_unique<Dense>(features(), relu());
  if (parts[0] == "conv3x3") return std::make_unique<Conv2D>(features(), relu());
  if (token == "avgpool2") return std::make_unique<AvgPool2>();
  if (token == "flatten") return std::make_unique<Flatten>();
  throw Error("model description: unknown layer '" + token +
              "' (dense:N[:relu], conv3x3:N[:relu], avgpool2, flatten)");
}

}  // namespace ktr
