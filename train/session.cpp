// Session construction, checkpoint save and restore.
#include "session.hpp"

#include "../core/checked.hpp"
#include "../core/error.hpp"
#include "checkpoint.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ktr {

namespace {

std::string exact(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

double number(Checkpoint const& c, std::string const& key, std::string const& path) {
  try {
    return std::stod(c.get(key));
  } catch (std::exception const&) {
    throw Error(path + ": header field '" + key + "' is missing or not a number");
  }
}

void upload(DeviceView<float*> const& v, std::vector<float> const& values, std::string const& what) {
  KTR_REQUIRE(
      values.size() == v.extent(0), what,
      "holds " + std::to_string(values.size()) + " values, the model needs " + std::to_string(v.extent(0)));
  Kokkos::deep_copy(v, HostView<const float*>(values.data(), values.size()));
}

bool all_finite(std::vector<float> const& values) {
  for (float v : values)
    if (!std::isfinite(v)) return false;
  return true;
}

}  // namespace

std::vector<float> download(DeviceView<float*> const& v) {
  std::vector<float> out(v.extent(0));
  Kokkos::deep_copy(HostView<float*>(out.data(), out.size()), v);
  return out;
}

std::int64_t micro_batch(RunConfig const& config, int ranks) {
  std::int64_t const parts = std::int64_t(std::max(ranks, 1)) * std::max(config.accumulate, 1);
  return config.batch % parts == 0 ? config.batch / parts : 0;
}

Session::Session(RunConfig const& config, int max_k, Communicator const& comm)
    : config_(config),
      // sized for the micro-batch (TrainState reports a batch that does not divide)
      model_(config.model, micro_batch(config, comm.size()) > 0 ? micro_batch(config, comm.size()) : config.batch),
      state_(model_, config.optimizer, config.batch, config.seed, config.norm, max_k, config.task,
             Parallelism{comm, config.accumulate, DataLayout::replicated}) {
  ExecSpace const space;
  model_.init(space, config.seed);
  comm.broadcast(space, model_.arena().params());  // identical starting points, whatever each rank computed
  space.fence();  // training may run on another instance (stream), which does not wait for this one
}

void Session::save(ExecSpace const& space, std::string const& path) const {
  Checkpoint c;
  auto const& o = config_.optimizer;
  c.header = {{"model", config_.model},
              {"optimizer", OptimizerConfig::kind_name(o.kind)},
              {"lr", exact(o.lr)},
              {"momentum", exact(o.momentum)},
              {"nesterov", o.nesterov ? "1" : "0"},
              {"b1", exact(o.b1)},
              {"b2", exact(o.b2)},
              {"eps", exact(o.eps)},
              {"weight_decay", exact(o.weight_decay)},
              {"clip_norm", exact(o.clip_norm)},
              {"schedule", o.schedule.str()},
              {"batch", std::to_string(config_.batch)},
              {"accumulate", std::to_string(config_.accumulate)},
              {"ranks", std::to_string(state_.parallel.comm.size())},  // for information: any divisor resumes
              {"seed", std::to_string(config_.seed)},
              {"task", config_.task == Task::regression ? "regression" : "classification"},
              {"normalize", config_.normalize},
              {"norm_scale", exact(config_.norm.scale)},
              {"norm_shift", exact(config_.norm.shift)},
              {"input_transform", config_.norm.per_feature() ? "per_feature" : "scalar"},
              {"step", ""}};
  space.fence();  // the instance that trained: its stream does not wait for the default one
  std::int64_t step = 0;
  Kokkos::deep_copy(step, state_.step);
  c.header["step"] = std::to_string(step);
  c.buffers.push_back(download(model_.arena().params()));
  for (auto const& s : state_.optimizer.state()) c.buffers.push_back(download(s));
  if (config_.norm.per_feature()) {  // the input transform travels with the model
    c.buffers.push_back(download(config_.norm.feature_scale));
    c.buffers.push_back(download(config_.norm.feature_shift));
  }
  for (auto const& b : c.buffers)
    if (!all_finite(b))
      throw DivergenceError(path + ": refusing to save non-finite parameters or optimiser state (step " +
                            std::to_string(step) + "); the file was left as it was");
  write_checkpoint(path, c);
}

std::int64_t run_device_bytes(RunConfig const& config, ModelPlan const& plan, int ranks) {
  auto const& o = config.optimizer;
  std::int64_t const moments = o.kind != OptimizerConfig::Kind::sgd ? 2 : (o.momentum > 0 ? 1 : 0);
  std::int64_t const sample = plan.input.size();
  char const* what = "run size";
  std::int64_t const sums = config.accumulate > 1 ? 1 : 0;  // the micro-batches' gradient sum
  // parameters, gradients, moments
  std::int64_t floats = checked_mul(plan.arena_floats, 2 + moments + sums, what);
  floats = checked_add(floats, plan.workspace_floats, what);
  // the micro-batch (b, ...) and its targets, and the evaluator's batch of up to 1000
  std::int64_t const per_sample = checked_add(sample, config.task == Task::regression ? plan.classes : 1, what);
  std::int64_t const micro = std::max<std::int64_t>(micro_batch(config, ranks), 1);
  floats = checked_add(floats, checked_mul(micro, per_sample, what), what);
  floats = checked_add(floats, checked_mul(std::min<std::int64_t>(config.batch, 1000), per_sample, what), what);
  if (config.norm.per_feature()) floats = checked_add(floats, 2 * sample, what);
  return checked_mul(floats, 4, what);
}

RunConfig run_config(Checkpoint const& c, std::string const& path) {
  RunConfig config;
  try {
    config.model = c.get("model");
    auto& o = config.optimizer;
    o.kind = OptimizerConfig::parse_kind(c.get("optimizer"));
    o.lr = float(number(c, "lr", path));
    o.momentum = float(number(c, "momentum", path));
    o.nesterov = c.get("nesterov") == "1";
    o.b1 = float(number(c, "b1", path));
    o.b2 = float(number(c, "b2", path));
    o.eps = float(number(c, "eps", path));
    o.weight_decay = float(number(c, "weight_decay", path));
    o.clip_norm = float(number(c, "clip_norm", path));
    o.schedule = Schedule::parse(c.get("schedule"));
    config.batch = std::int64_t(number(c, "batch", path));
    // Checkpoints before gradient accumulation did not record it: one micro-batch per update.
    config.accumulate = c.has("accumulate") ? int(number(c, "accumulate", path)) : 1;
    config.seed = std::stoull(c.get("seed"));
    // Version 1 did not record the mode; its scale and shift are what counts.
    config.normalize = c.has("normalize") ? c.get("normalize") : "recorded";
    config.norm.scale = float(number(c, "norm_scale", path));
    config.norm.shift = float(number(c, "norm_shift", path));
    std::string const task = c.has("task") ? c.get("task") : "classification";
    KTR_REQUIRE(task == "classification" || task == "regression", path, "unknown task '" + task + "'");
    config.task = task == "regression" ? Task::regression : Task::classification;
    if (c.has("input_transform") && c.get("input_transform") == "per_feature") {
      // The last two buffers: one scale and one shift per feature.
      KTR_REQUIRE(c.buffers.size() >= 3, path, "the per-feature input transform is missing");
      auto const& scale = c.buffers[c.buffers.size() - 2];
      auto const& shift = c.buffers.back();
      KTR_REQUIRE(!scale.empty() && scale.size() == shift.size(), path, "malformed per-feature input transform");
      config.norm.feature_scale = DeviceView<float*>("ktr::data::feature_scale", scale.size());
      config.norm.feature_shift = DeviceView<float*>("ktr::data::feature_shift", shift.size());
      upload(config.norm.feature_scale, scale, path + ": input transform");
      upload(config.norm.feature_shift, shift, path + ": input transform");
    }
  } catch (Error const& e) {
    throw Error(path + ": " + e.what());
  } catch (std::exception const&) {
    throw Error(path + ": header field 'seed' is not a number");
  }
  KTR_REQUIRE(config.batch > 0, path, "header field 'batch' must be positive");
  KTR_REQUIRE(config.accumulate >= 1 && config.accumulate <= config.batch, path,
              "header field 'accumulate' must be in [1, batch]");
  return config;
}

std::unique_ptr<Session> Session::restore(Checkpoint const& c, std::string const& path, int max_k,
                                          Communicator const& comm, RunConfig const* config) {
  auto session = std::make_unique<Session>(config ? *config : run_config(c, path), max_k, comm);
  auto& model = session->model_;
  auto state = session->state_.optimizer.state();
  std::size_t const transform = session->config_.norm.per_feature() ? 2 : 0;
  KTR_REQUIRE(c.buffers.size() == 1 + state.size() + transform, path,
              "holds " + std::to_string(c.buffers.size()) + " buffers, the configuration needs " +
                  std::to_string(1 + state.size() + transform));
  upload(model.arena().params(), c.buffers[0], path + ": parameters");
  for (std::size_t i = 0; i < state.size(); ++i) upload(state[i], c.buffers[1 + i], path + ": optimiser state");
  double const step = number(c, "step", path);
  KTR_REQUIRE(step >= 0 && step < 9e15, path, "header field 'step' is out of range");
  Kokkos::deep_copy(session->state_.step, std::int64_t(step));
  session->state_.host_step = std::int64_t(step);
  return session;
}

TrainedModel load_trained_model(std::string const& path, std::int64_t max_batch) {
  Checkpoint const c = read_checkpoint(path);
  TrainedModel m;
  m.config = run_config(c, path);
  m.config.batch = max_batch;
  m.model = std::make_unique<Model>(m.config.model, max_batch);
  KTR_REQUIRE(!c.buffers.empty(), path, "holds no parameters");
  upload(m.model->arena().params(), c.buffers[0], path + ": parameters");
  m.step = std::int64_t(number(c, "step", path));
  return m;
}

std::unique_ptr<Session> Session::restore(std::string const& path, int max_k, Communicator const& comm) {
  return restore(read_checkpoint(path), path, max_k, comm);
}

}  // namespace ktr
