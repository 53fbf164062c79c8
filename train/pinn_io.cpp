// Pinn::save and load: a physics-informed training as one generation of a checkpoint directory (pinn.ckpt, and
// over several ranks rank-<r>.ckpt for ranks 1 and up).
//
// pinn.ckpt is ktr's checkpoint container (train/checkpoint.hpp): a header of the training's shape (the model's
// description, the optimiser, each term's signature, the rank count) and counters (steps, the optimiser's step),
// then its buffers in a fixed order: the parameters, the optimiser's state, the input transform's scale and shift
// (if set), the points of each term that keeps a draw. A rank's file is the same container with that rank's
// points (each rank draws its own); the parameters and optimiser state are every rank's.
#include "pinn.hpp"

#include "../core/error.hpp"
#include "../core/parse.hpp"
#include "checkpoint.hpp"
#include "run_directory.hpp"

#include <cstdio>
#include <map>

namespace ktr {
namespace {

std::vector<float> host_floats(ExecSpace const& space, float const* data, std::size_t n) {
  std::vector<float> out(n);
  Kokkos::deep_copy(space, HostView<float*>(out.data(), n),
                    Kokkos::View<float const*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(data, n));
  return out;
}

void device_floats(ExecSpace const& space, std::vector<float> const& from, float* to) {
  Kokkos::deep_copy(
      space, Kokkos::View<float*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(to, from.size()),
      Kokkos::View<float const*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(from.data(), from.size()));
}

}  // namespace

namespace pinn {

std::string Term::signature() const {
  char weight[32];
  std::snprintf(weight, sizeof weight, "%.17g", weight_);
  std::string source = "fixed";
  if (points_.given.size() == 0)
    source = (points_.wall >= 0 ? "walls" + std::to_string(points_.wall) : std::string("box")) +
             (points_.redraw ? " redrawn" : " kept");
  return name_ + " | " + jet_.spec().str() + " | " + std::to_string(count_) + " points | weight " + weight +
         " | " + source;
}

void Term::restore_points(ExecSpace const& space, std::vector<float> const& values) {
  KTR_REQUIRE(keeps() && x_.size() == values.size(), "pinn term '" + name_ + "'",
              "cannot take " + std::to_string(values.size()) + " kept coordinates");
  device_floats(space, values, x_.data());
  drawn_ = true;
}

}  // namespace pinn

namespace {

// The header fields a load checks against its own Pinn (each a mismatch it names).
std::map<std::string, std::string> shape_of(Model const& model, Optimizer const& optimizer,
                                            std::vector<std::unique_ptr<pinn::Term>> const& terms, bool transform,
                                            int ranks) {
  std::map<std::string, std::string> h = {{"kind", "ktr-pinn"},
                                          {"model", model.description()},
                                          {"parameters", std::to_string(model.arena().size())},
                                          {"optimizer", OptimizerConfig::kind_name(optimizer.config().kind)},
                                          {"terms", std::to_string(terms.size())},
                                          {"transform", transform ? "set" : "none"},
                                          {"ranks", std::to_string(ranks)}};
  for (std::size_t t = 0; t < terms.size(); ++t) h["term_" + std::to_string(t)] = terms[t]->signature();
  return h;
}

}  // namespace

void Pinn::save(ExecSpace const& space, std::string const& dir) const {
  Checkpoint ckpt;
  ckpt.header = shape_of(*model_, optimizer_, terms_, scale_.size() != 0, comm_.size());
  std::int64_t step = 0;
  Kokkos::deep_copy(space, step, step_);
  ckpt.header["steps"] = std::to_string(steps_);
  ckpt.header["optimizer_step"] = std::to_string(step);
  auto const params = model_->arena().params();
  ckpt.buffers.push_back(host_floats(space, params.data(), params.extent(0)));
  for (auto const& m : optimizer_.state()) ckpt.buffers.push_back(host_floats(space, m.data(), m.extent(0)));
  if (scale_.size() != 0) {
    ckpt.buffers.push_back(host_floats(space, scale_.data(), scale_.size()));
    ckpt.buffers.push_back(host_floats(space, shift_.data(), shift_.size()));
  }
  std::string kept;
  for (auto const& t : terms_) {
    auto const x = t->kept_points();
    kept += x.size() != 0 ? '1' : '0';
    if (x.size() != 0) ckpt.buffers.push_back(host_floats(space, x.data(), x.size()));
  }
  ckpt.header["kept"] = kept;
  space.fence();
  // Every rank's file travels to rank 0, which writes the generation (the points drawn are each rank's own).
  save_generation_over_ranks(comm_, dir, "pinn.ckpt", checkpoint_bytes(dir + "/pinn.ckpt", ckpt), {}, "pinn");
}

void Pinn::load(ExecSpace const& space, std::string const& dir) {
  std::vector<DeviceView<float*>> const state = optimizer_.state();
  bool const transform = scale_.size() != 0;
  // Everything is read and checked before anything changes, on every rank; then the ranks agree.
  Checkpoint ckpt;
  std::int64_t steps = 0, step = 0;
  std::string refused;
  try {
    std::string const file = comm_.rank() == 0 ? "pinn.ckpt" : "rank-" + std::to_string(comm_.rank()) + ".ckpt";
    Generation g = read_generation(dir, {file});
    KTR_REQUIRE(g.names.count("pinn.ckpt") == 1, dir, "holds no pinn.ckpt: it is not a saved ktr::Pinn");
    KTR_REQUIRE(g.files.count(file) == 1, dir, "has no " + file + " for rank " + std::to_string(comm_.rank()));
    std::string const path = g.folder + "/" + file;
    ckpt = parse_checkpoint(path, g.files[file]);
    for (auto const& [key, mine] : shape_of(*model_, optimizer_, terms_, transform, comm_.size()))
      KTR_REQUIRE(ckpt.has(key) && ckpt.get(key) == mine, path,
                  "holds a pinn whose " + key + " is '" + (ckpt.has(key) ? ckpt.get(key) : "") +
                      "'; this one's is '" + mine + "'");
    std::string const kept = ckpt.has("kept") ? ckpt.get("kept") : "";
    KTR_REQUIRE(kept.size() == terms_.size() && kept.find_first_not_of("01") == std::string::npos, path,
                "field 'kept' is not one 0 or 1 per term");
    std::vector<std::size_t> sizes = {model_->arena().params().extent(0)};
    for (auto const& m : state) sizes.push_back(m.extent(0));
    if (transform) sizes.insert(sizes.end(), 2, scale_.size());
    for (std::size_t t = 0; t < terms_.size(); ++t) {
      if (kept[t] == '0') continue;
      auto const& term = *terms_[t];
      KTR_REQUIRE(term.keeps(), path, "holds points for term '" + term.name() + "', which keeps no draw");
      sizes.push_back(std::size_t(term.count()) * std::size_t(model_->input_shape(1).inner()));
    }
    KTR_REQUIRE(ckpt.buffers.size() == sizes.size(), path,
                "holds " + std::to_string(ckpt.buffers.size()) + " buffers; this pinn's save has " +
                    std::to_string(sizes.size()) + " (another optimiser setting?)");
    for (std::size_t i = 0; i < sizes.size(); ++i)
      KTR_REQUIRE(ckpt.buffers[i].size() == sizes[i], path,
                  "buffer " + std::to_string(i) + " holds " + std::to_string(ckpt.buffers[i].size()) +
                      " values; this pinn's has " + std::to_string(sizes[i]));
    steps = header_integer(ckpt, path, "steps");
    step = header_integer(ckpt, path, "optimizer_step");
  } catch (std::exception const& e) {
    refused = e.what();
  }
  if (comm_.any(!refused.empty()))
    throw Error(!refused.empty() ? refused
                                 : dir + ": another rank refused the checkpoint (its error names the reason)");

  std::size_t next = 0;
  device_floats(space, ckpt.buffers[next++], model_->arena().params().data());
  for (auto const& m : state) device_floats(space, ckpt.buffers[next++], m.data());
  if (transform) {
    device_floats(space, ckpt.buffers[next++], scale_.data());
    device_floats(space, ckpt.buffers[next++], shift_.data());
  }
  std::string const kept = ckpt.get("kept");
  for (std::size_t t = 0; t < terms_.size(); ++t)
    if (kept[t] == '1') terms_[t]->restore_points(space, ckpt.buffers[next++]);
  Kokkos::deep_copy(space, step_, step);
  Kokkos::deep_copy(space, draw_step_, steps);  // the next step's draws
  steps_ = steps;
  space.fence();
}

}  // namespace ktr
