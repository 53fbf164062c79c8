// Model: description parsing, arena and workspace layout, forward and backward through the layer list.
#include "model.hpp"

#include "../core/checked.hpp"
#include "../core/error.hpp"
#include "description.hpp"

#include <algorithm>
#include <map>

namespace ktr {

std::string Model::mlp(std::vector<std::int64_t> const& hidden, std::int64_t classes) {
  std::string d = "in=28x28x1 flatten";
  for (auto h : hidden) d += " dense:" + std::to_string(h) + ":relu";
  return d + " dense:" + std::to_string(classes);
}

std::string Model::simple_cnn(std::int64_t features, std::int64_t classes) {
  return "in=28x28x1 conv3x3:" + std::to_string(features) +
         ":relu avgpool2 flatten dense:" + std::to_string(classes);
}

Model::Model(std::string const& description, std::int64_t max_batch)
    : Model(description, max_batch, true, ExecSpace()) {}

Model::Model(ExecSpace const& space, std::string const& description, std::int64_t max_batch)
    : Model(description, max_batch, true, space) {}

ModelPlan Model::plan(std::string const& description, std::int64_t max_batch) {
  Model const m(description, max_batch, false, ExecSpace());
  return ModelPlan{
      m.description_,  m.input_,           m.output_width(), m.output_shape(1), m.arena_.num_parameters(),
      m.arena_.size(), m.workspace_floats_};
}

Model::Model(std::string const& description, std::int64_t max_batch, bool allocate, ExecSpace const& space)
    : max_batch_(max_batch) {
  KTR_REQUIRE(max_batch > 0, "ktr::Model", "max_batch must be positive");
  Description d = parse_description(description);
  input_ = d.input;
  description_ = d.text();
  shapes_ = d.shapes;
  sources_ = d.sources;
  layers_ = std::move(d.layers);
  std::vector<ParamSpec> specs;
  std::vector<std::size_t> first_param;
  std::map<std::string, int> modules;  // parameters are named by Flax's module paths: Dense_0.kernel, Conv_0.bias
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    first_param.push_back(specs.size());
    char const* module = layers_[i]->module();
    std::string const prefix = module ? module + ("_" + std::to_string(modules[module]++)) + "." : std::string();
    for (auto p : layers_[i]->param_specs(shapes_[i])) {
      p.name = prefix + p.name;
      specs.push_back(p);
    }
  }
  first_param.push_back(specs.size());

  arena_ = Arena(specs, allocate, space);
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    std::vector<Tensor> params, grads;
    for (std::size_t p = first_param[i]; p < first_param[i + 1]; ++p) {
      params.push_back(arena_.param(p));
      grads.push_back(arena_.grad(p));
    }
    layers_[i]->bind(params, grads);
  }

  // Fusion: a layer may absorb the one after it (Conv2D + AvgPool2); the pair then runs as one layer. A save:NAME
  // between two layers keeps them apart, so no fused kernel reaches across it.
  absorbs_next_.assign(layers_.size(), false);
  for (std::size_t i = 0; i + 1 < layers_.size(); ++i)
    if (i == 0 || !absorbs_next_[i - 1])
      absorbs_next_[i] = layers_[i]->fuse_next(*layers_[i + 1], activation(i, max_batch));

  // Workspace: [outputs of every non-view layer | two gradient buffers | each layer's scratch], one allocation.
  // Scratch is per layer, so what a forward leaves there (im2col columns) is still there for the backward.
  auto padded = [](std::int64_t n) {
    return checked_add(n, Arena::alignment - 1, "model workspace") / Arena::alignment * Arena::alignment;
  };
  std::int64_t size = 0, largest = 0, scratch = 0;
  std::vector<std::int64_t> scratch_offset(layers_.size());
  act_offset_.assign(shapes_.size(), -1);
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    Shape const in = activation(i, max_batch), out = activation(i + 1, max_batch);
    largest = std::max({largest, in.size(), out.size()});
    scratch_offset[i] = scratch;
    scratch = checked_add(scratch, padded(layers_[i]->scratch_size(in)), "model workspace");
    if (!layers_[i]->is_view() && !absorbs_next_[i]) {  // a fused layer writes only the next one's output
      act_offset_[i + 1] = size;
      size = checked_add(size, padded(out.size()), "model workspace");
    }
  }
  grad_offset_[0] = size;
  grad_offset_[1] = checked_add(size, padded(largest), "model workspace");
  size = checked_add(grad_offset_[1], padded(largest), "model workspace");
  skip_offset_.assign(layers_.size(), -1);
  for (std::size_t i = 0; i < layers_.size(); ++i)
    if (dynamic_cast<Save const*>(layers_[i].get()) != nullptr) {
      skip_offset_[i] = size;
      size = checked_add(size, padded(activation(i, max_batch).size()), "model workspace");
    }
  // A join adds to its save's buffer where a later join of the same tensor (visited first by the backward) wrote.
  join_adds_.assign(layers_.size(), false);
  for (std::size_t i = 0; i < layers_.size(); ++i)
    for (std::size_t j = i + 1; j < layers_.size() && sources_[i] >= 0; ++j)
      if (sources_[j] == sources_[i]) join_adds_[i] = true;
  std::int64_t const scratch_base = size;
  workspace_floats_ = checked_add(scratch_base, scratch, "model workspace");
  if (!allocate) return;
  workspace_ = DeviceView<float*>(Kokkos::view_alloc(space, "ktr::model::workspace"),
                                  static_cast<std::size_t>(scratch_base + scratch));
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

bool Model::random() const {
  for (auto const& l : layers_)
    if (l->random()) return true;
  return false;
}

Tensor Model::forward(ExecSpace const& space, Precision const& precision, Tensor const& x, RandomKey const* key) {
  std::int64_t const batch = x.shape()[0];
  KTR_REQUIRE(batch > 0 && batch <= max_batch_, "ktr::Model::forward",
              "batch " + std::to_string(batch) + " exceeds the allocated " + std::to_string(max_batch_));
  KTR_REQUIRE(x.shape() == input_shape(batch), "ktr::Model::forward",
              "input " + x.shape().str() + " is not " + input_shape(batch).str());
  batch_ = batch;
  acts_[0] = x;
  for (std::size_t i = 0; i < layers_.size(); ++i)
    if (layers_[i]->random()) layers_[i]->set_random_key(key, int(i));
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    std::size_t const o = absorbs_next_[i] ? i + 2 : i + 1;  // the output this layer writes
    Shape const out_shape = activation(o, batch);
    if (absorbs_next_[i]) acts_[i + 1] = Tensor();  // never materialised
    acts_[o] = layers_[i]->is_view() ? acts_[i].reshaped(out_shape) : workspace(act_offset_[o], out_shape);
    if (sources_[i] >= 0)  // a join: the tensor its save:NAME layer was given
      static_cast<Join&>(*layers_[i]).join_forward(space, acts_[i], acts_[std::size_t(sources_[i])], acts_[o]);
    else
      layers_[i]->forward(space, precision, acts_[i], acts_[o]);
    if (absorbs_next_[i]) ++i;
  }
  return acts_.back();
}

Tensor Model::workspace(std::int64_t offset, Shape const& shape) const {
  return Tensor(Kokkos::subview(workspace_, std::make_pair(offset, offset + shape.size())), shape);
}

Tensor Model::dlogits() const { return workspace(grad_offset_[0], activation(layers_.size(), batch_)); }

// A join's backward: dx into din (if asked) and the remembered tensor's gradient into its save layer's buffer,
// added to what a later use of the same tensor (visited first) sent.
void Model::backward_join(ExecSpace const& space, std::size_t i, Tensor const& dy, Tensor const& din) {
  std::size_t const save = std::size_t(sources_[i]);
  Tensor const ds = workspace(skip_offset_[save], activation(save, batch_));
  static_cast<Join&>(*layers_[i]).join_backward(space, dy, din, ds, join_adds_[i]);
}

namespace {
// out[e] += in[e]: what the joins of a save layer sent back, added to the gradient of the tensor it saved (the
// gradient of a tensor used twice is the sum).
void add_into(ExecSpace const& space, float* out, float const* in, std::int64_t n) {
  Kokkos::parallel_for(
      "ktr::model::sum_skip_gradient",
      Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, n),
      KOKKOS_LAMBDA(std::int64_t e) { out[e] += in[e]; });
}
}  // namespace

void Model::backward(ExecSpace const& space, Precision const& precision, Tensor const& dx) {
  KTR_REQUIRE(batch_ > 0, "ktr::Model::backward", "no forward pass to differentiate");
  // The first layer with parameters needs no input gradient unless the caller asks for dx.
  std::size_t first = 0;
  while (layers_[first]->is_view()) ++first;
  if (dx.size() > 0)
    KTR_REQUIRE(dx.size() == activation(first, batch_).size(), "ktr::Model::backward",
                "dx must hold " + activation(first, batch_).str());
  int current = 0;  // dlogits sit in gradient buffer 0
  Tensor dy = dlogits();
  for (std::size_t i = layers_.size(); i-- > first;) {
    Shape const in_shape = activation(i, batch_);
    if (layers_[i]->is_view()) {
      dy = dy.reshaped(in_shape);
      if (skip_offset_[i] >= 0)  // a saved tensor: its joins' gradients join the chain's
        add_into(space, dy.data(), workspace_.data() + skip_offset_[i], dy.size());
      continue;
    }
    if (i > 0 && absorbs_next_[i - 1]) continue;  // dy is the gradient of the fused pair's output
    Tensor const& y = absorbs_next_[i] ? acts_[i + 2] : acts_[i + 1];
    Tensor din;
    if (i > first)
      din = workspace(grad_offset_[1 - current], in_shape);
    else if (dx.size() > 0)
      din = dx.reshaped(in_shape);
    if (sources_[i] >= 0)
      backward_join(space, i, dy, din);
    else
      layers_[i]->backward(space, precision, acts_[i], y, dy, din);
    dy = din;
    current = 1 - current;
  }
  // A tensor saved before the first layer with parameters (the input, or a view of it): its joins' gradients
  // join the caller's dx.
  for (std::size_t i = 0; i < first && dx.size() > 0; ++i)
    if (skip_offset_[i] >= 0) add_into(space, dx.data(), workspace_.data() + skip_offset_[i], dx.size());
}

}  // namespace ktr
