// Session construction, checkpoint save and restore.
#include "session.hpp"

#include "../backends/device_info.hpp"
#include "../backends/gemm.hpp"
#include "../backends/region.hpp"
#include "../core/checked.hpp"
#include "../core/error.hpp"
#include "../core/parse.hpp"
#include "checkpoint.hpp"
#include "run_settings.hpp"
#include "sobolev.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>

namespace ktr {

namespace {

// A header number, read strictly (the whole field, finite, within [lo, hi]), naming the field otherwise.
double number(Checkpoint const& c, std::string const& key, std::string const& path, double lo = -3.4e38,
              double hi = 3.4e38) {
  double v = 0;
  if (!c.has(key) || !parse_number(c.get(key), lo, hi, v))
    throw Error(path + ": header field '" + key + "' is " +
                (c.has(key) ? "'" + escaped(c.get(key)) + "'" : "missing") + ", not a finite number in [" +
                exact_text(lo) + ", " + exact_text(hi) + "]");
  return v;
}

// A header integer, read strictly (decimal digits only, within [lo, hi]).
std::int64_t integer(Checkpoint const& c, std::string const& key, std::string const& path, std::int64_t lo,
                     std::int64_t hi) {
  std::int64_t v = 0;
  if (!c.has(key) || !parse_integer(c.get(key), lo, hi, v))
    throw Error(path + ": header field '" + key + "' is " +
                (c.has(key) ? "'" + escaped(c.get(key)) + "'" : "missing") + ", not an integer in [" +
                std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}

// Copies on `space` and waits for that instance alone (the host vector must outlive the copy).
void upload(ExecSpace const& space, DeviceView<float*> const& v, std::vector<float> const& values,
            std::string const& what) {
  KTR_REQUIRE(
      values.size() == v.extent(0), what,
      "holds " + std::to_string(values.size()) + " values, the model needs " + std::to_string(v.extent(0)));
  Kokkos::deep_copy(space, v, HostView<const float*>(values.data(), values.size()));
  space.fence();
}

bool all_finite(std::vector<float> const& values) {
  for (float v : values)
    if (!std::isfinite(v)) return false;
  return true;
}

RunConfig const& fitting_in_memory(RunConfig const& config, int ranks) {
  check_fits_in_memory(config, ranks);
  return config;
}

}  // namespace

std::string targets_mismatch(ModelPlan const& plan, DeviceDataset const& data, bool check_classes,
                             std::string const& derivatives) {
  std::string const outputs = std::to_string(plan.output_width);
  if (data.task() == Task::classification) {
    if (plan.output.rank != 2)
      return "class labels need a model that ends in (B, classes); the model gives a field " + plan.output.str() +
             ": float targets of that shape make a regression";
    if (plan.output_width < 2)
      return "class labels need a model of at least 2 outputs (one per class); the model has " + outputs +
             ": float targets make a regression";
    if (check_classes && plan.output_width != data.num_classes)
      return "the model outputs " + outputs + " classes, the data has " + std::to_string(data.num_classes);
    return "";
  }
  if (!derivatives.empty()) {
    std::int64_t const columns = sobolev_columns(derivatives, plan.input.inner());
    if (data.target_width() != plan.output_width * columns)
      return "with derivatives '" + derivatives + "' the targets are (N, " + outputs + ", " +
             std::to_string(columns) + "): each of the model's " + outputs + " outputs' value and " +
             std::to_string(columns - 1) + " derivatives, " + std::to_string(plan.output_width * columns) +
             " values per sample; the targets have " + std::to_string(data.target_width());
    return "";
  }
  if (data.target_width() != plan.output_width)
    return "the model outputs " + outputs + " values, the targets have " + std::to_string(data.target_width()) +
           " (" + std::to_string(data.target_width()) + " targets per sample)";
  return "";
}

void check_fits_in_memory(RunConfig const& config, int ranks, std::string const& what) {
  std::int64_t const micro = micro_batch(config, ranks) > 0 ? micro_batch(config, ranks) : config.batch;
  std::int64_t const need = run_device_bytes(config, Model::plan(config.model, micro), ranks);
  std::int64_t const have = device_memory_available();
  if (have >= 0 && need > have) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%.2f GiB of device memory, %.2f GiB are free", need / 1073741824.0,
                  have / 1073741824.0);
    throw Error(what + ": the model '" + config.model + "' with a batch of " + std::to_string(config.batch) +
                " needs " + buf);
  }
}

std::vector<float> download(DeviceView<float*> const& v) { return download(ExecSpace(), v); }

std::vector<float> download(ExecSpace const& space, DeviceView<float*> const& v) {
  std::vector<float> out(v.extent(0));
  Kokkos::deep_copy(space, HostView<float*>(out.data(), out.size()), v);
  space.fence();  // this instance only: a simulation's other streams go on
  return out;
}

std::int64_t micro_batch(RunConfig const& config, int ranks) {
  std::int64_t const parts = std::int64_t(std::max(ranks, 1)) * std::max(config.accumulate, 1);
  return config.batch % parts == 0 ? config.batch / parts : 0;
}

Session::Session(RunConfig const& config, int max_k, Communicator const& comm)
    : Session(ExecSpace(), config, max_k, comm) {
  ExecSpace().fence();  // training may run on another instance (stream), which does not wait for this one
}

Session::Session(ExecSpace const& space, RunConfig const& config, int max_k, Communicator const& comm)
    : config_(fitting_in_memory(config, comm.size())),
      // sized for the micro-batch (TrainState reports a batch that does not divide)
      model_(space, config.model,
             micro_batch(config, comm.size()) > 0 ? micro_batch(config, comm.size()) : config.batch),
      state_(space, model_, config.optimizer, config.batch, config.seed, config.input_transform, max_k,
             config.task, Parallelism{comm, config.accumulate, DataLayout::replicated}) {
  KTR_REQUIRE(matmul_unavailable(config.precision).empty(), "ktr::Session", matmul_unavailable(config.precision));
  KTR_REQUIRE(config.optimizer.kind != OptimizerConfig::Kind::lbfgs ||
                  (comm.size() == 1 && config.accumulate == 1 && config.precision != MatmulPrecision::bf16),
              "optimizer",
              "lbfgs runs on one rank, with one micro-batch per update (accumulate 1), in fp32 or tf32: its line "
              "search compares the losses of whole evaluations");
  state_.precision = config.precision;
  state_.normalize = config.normalize;
  state_.regression = config.loss;
  state_.reduction = config.reduction;
  if (!config.derivatives.empty()) make_sobolev(space);
  model_.init(space, config.seed);
  comm.broadcast(space, model_.arena().params());  // identical starting points, whatever each rank computed
}

void Session::make_sobolev(ExecSpace const& space) {
  RunConfig const& c = config_;
  KTR_REQUIRE(c.task == Task::regression, "derivatives",
              "Sobolev targets are float values with their derivatives; this run's are class labels");
  KTR_REQUIRE(c.precision == MatmulPrecision::fp32, "derivatives",
              std::string("derivative channels run in fp32; the run's precision is ") +
                  matmul_precision_name(c.precision));
  KTR_REQUIRE(c.loss.kind == RegressionLoss::Kind::mse, "derivatives",
              "the loss is the mean squared error of values and derivatives; the run's is " + c.loss.str());
  train_on_derivatives(space, state_, model_, c.derivatives, c.derivative_weight);
}

void Session::save(ExecSpace const& space, std::string const& path) const {
  Region const region("ktr::Session::save");
  Checkpoint const c = snapshot(space, path);
  write_checkpoint(path, c);
}

Checkpoint Session::snapshot(ExecSpace const& space, std::string const& what) const {
  Checkpoint c;
  // The settings from their table; beside them what the run derived: its task, input transform and step.
  write_run_settings(config_, c);
  c.header["model"] = config_.model;
  c.header["ranks"] = std::to_string(state_.parallel.comm.size());  // for information: any divisor resumes
  c.header["task"] = config_.task == Task::regression ? "regression" : "classification";
  c.header["norm_scale"] = exact_text(config_.input_transform.scale);
  c.header["norm_shift"] = exact_text(config_.input_transform.shift);
  c.header["input_transform"] = config_.input_transform.per_feature() ? "per_feature" : "scalar";
  // Read back on the instance that trained (after its work), never through a fence of the whole device.
  std::int64_t step = 0;
  Kokkos::deep_copy(space, Kokkos::View<std::int64_t, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(&step),
                    state_.step);
  c.buffers.push_back(download(space, model_.arena().params()));
  for (auto const& s : state_.optimizer.state()) c.buffers.push_back(download(space, s));
  if (config_.input_transform.per_feature()) {  // the input transform travels with the model
    c.buffers.push_back(download(space, config_.input_transform.feature_scale));
    c.buffers.push_back(download(space, config_.input_transform.feature_shift));
  }
  c.header["step"] = std::to_string(step);  // read: download() fenced the instance
  for (auto const& b : c.buffers)
    if (!all_finite(b))
      throw DivergenceError(what + ": refusing to save non-finite parameters or optimiser state (step " +
                            std::to_string(step) + "); the file was left as it was");
  return c;
}

std::int64_t run_device_bytes(RunConfig const& config, ModelPlan const& plan, int ranks) {
  auto const& o = config.optimizer;
  std::int64_t const moments = Optimizer::floats_per_parameter(o);
  std::int64_t const sample = plan.input.size();
  char const* what = "run size";
  std::int64_t const sums = config.accumulate > 1 ? 1 : 0;  // the micro-batches' gradient sum
  // parameters, gradients, moments
  std::int64_t floats = checked_mul(plan.arena_floats, 2 + moments + sums, what);
  floats = checked_add(floats, plan.workspace_floats, what);
  // the micro-batch (b, ...) and its targets, and the evaluator's batch of up to 1000
  std::int64_t const targets = config.task == Task::regression
                                   ? plan.output_width * sobolev_columns(config.derivatives, plan.input.inner())
                                   : 1;
  std::int64_t const per_sample = checked_add(sample, targets, what);
  std::int64_t const micro = std::max<std::int64_t>(micro_batch(config, ranks), 1);
  floats = checked_add(floats, checked_mul(micro, per_sample, what), what);
  floats = checked_add(floats, checked_mul(std::min<std::int64_t>(config.batch, 1000), per_sample, what), what);
  if (config.input_transform.per_feature()) floats = checked_add(floats, 2 * sample, what);
  return checked_mul(floats, 4, what);
}

RunConfig run_config(Checkpoint const& c, std::string const& path, ExecSpace const& space) {
  RunConfig config;
  try {
    config.model = c.get("model");
    // The description is the file's: parsed and sized here, so a bad one is refused naming the file, and a forged
    // size is refused against the parameters the file holds before anything is allocated for it.
    ModelPlan plan;
    try {
      plan = Model::plan(config.model, 1);
    } catch (Error const& e) {
      throw Error(path + ": header field 'model': " + e.what());
    }
    KTR_REQUIRE(!c.buffers.empty() && std::int64_t(c.buffers[0].size()) == plan.arena_floats, path,
                "header field 'model' describes " + std::to_string(plan.parameters) + " parameters (" +
                    std::to_string(plan.arena_floats) + " floats), the file holds " +
                    std::to_string(c.buffers.empty() ? 0 : c.buffers[0].size()));
    read_run_settings(c, path, config);
    KTR_REQUIRE(config.accumulate <= config.batch, path,
                "header field 'accumulate' is " + std::to_string(config.accumulate) +
                    ", more micro-batches than the batch's " + std::to_string(config.batch) + " samples");
    if (!c.has("normalize")) config.normalize = InputTransformMode::recorded;  // version 1: scale and shift count
    config.input_transform.scale = float(number(c, "norm_scale", path));
    config.input_transform.shift = float(number(c, "norm_shift", path));
    KTR_REQUIRE(config.input_transform.scale != 0.0f, path,
                "header field 'norm_scale' is 0: every input would be the same");
    std::string const task = c.has("task") ? c.get("task") : "classification";
    KTR_REQUIRE(task == "classification" || task == "regression", path, "unknown task '" + escaped(task) + "'");
    config.task = task == "regression" ? Task::regression : Task::classification;
    if (c.has("input_transform") && c.get("input_transform") == "per_feature") {
      // The last two buffers: one scale and one shift per feature.
      KTR_REQUIRE(c.buffers.size() >= 3, path, "the per-feature input transform is missing");
      auto const& scale = c.buffers[c.buffers.size() - 2];
      auto const& shift = c.buffers.back();
      KTR_REQUIRE(!scale.empty() && scale.size() == shift.size(), path, "malformed per-feature input transform");
      KTR_REQUIRE(all_finite(scale) && all_finite(shift), path, "the per-feature input transform is not finite");
      config.input_transform.feature_scale = DeviceView<float*>(
          Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "ktr::data::feature_scale"), scale.size());
      config.input_transform.feature_shift = DeviceView<float*>(
          Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "ktr::data::feature_shift"), shift.size());
      upload(space, config.input_transform.feature_scale, scale, path + ": input transform");
      upload(space, config.input_transform.feature_shift, shift, path + ": input transform");
    }
  } catch (Error const& e) {
    std::string const what = e.what();
    throw Error(what.rfind(path + ": ", 0) == 0 ? what : path + ": " + what);
  } catch (std::exception const& e) {
    throw Error(path + ": malformed header (" + e.what() + ")");
  }
  // Nothing non-finite is ever saved, and nothing non-finite is loaded either (a forged or damaged file).
  for (auto const& b : c.buffers)
    KTR_REQUIRE(all_finite(b), path, "holds non-finite parameters or optimiser state");
  return config;
}

std::unique_ptr<Session> Session::restore(Checkpoint const& c, std::string const& path, int max_k,
                                          Communicator const& comm, RunConfig const* config) {
  auto session = restore(ExecSpace(), c, path, max_k, comm, config);
  ExecSpace().fence();  // training may run on another instance (stream), which does not wait for this one
  return session;
}

std::unique_ptr<Session> Session::restore(ExecSpace const& space, Checkpoint const& c, std::string const& path,
                                          int max_k, Communicator const& comm, RunConfig const* config) {
  Region const region("ktr::Session::restore");
  RunConfig const chosen = config ? *config : run_config(c, path, space);
  std::string const why = matmul_unavailable(chosen.precision);
  KTR_REQUIRE(why.empty(), path,
              std::string(config ? "resumes in precision " : "records precision ") +
                  matmul_precision_name(chosen.precision) + ": " + why +
                  " (RunConfig::precision = fp32 continues it in fp32)");
  auto session = std::make_unique<Session>(space, chosen, max_k, comm);
  auto& model = session->model_;
  auto state = session->state_.optimizer.state();
  std::size_t const transform = session->config_.input_transform.per_feature() ? 2 : 0;
  KTR_REQUIRE(c.buffers.size() == 1 + state.size() + transform, path,
              "holds " + std::to_string(c.buffers.size()) + " buffers, the configuration needs " +
                  std::to_string(1 + state.size() + transform));
  upload(space, model.arena().params(), c.buffers[0], path + ": parameters");
  for (std::size_t i = 0; i < state.size(); ++i)
    upload(space, state[i], c.buffers[1 + i], path + ": optimiser state");
  std::int64_t const step = integer(c, "step", path, 0, std::int64_t(9e15));
  Kokkos::deep_copy(space, session->state_.step, step);
  session->state_.host_step_ = step;
  return session;
}

TrainedModel load_trained_model(std::string const& path, std::int64_t max_batch) {
  return load_trained_model(read_checkpoint(path), path, max_batch);
}

TrainedModel load_trained_model(Checkpoint const& c, std::string const& path, std::int64_t max_batch) {
  return load_trained_model(ExecSpace(), c, path, max_batch);
}

TrainedModel load_trained_model(ExecSpace const& space, Checkpoint const& c, std::string const& path,
                                std::int64_t max_batch) {
  Region const region("ktr::load_trained_model");
  TrainedModel m;
  m.config = run_config(c, path, space);
  m.config.batch = max_batch;
  m.model = std::make_unique<Model>(space, m.config.model, max_batch);
  KTR_REQUIRE(!c.buffers.empty(), path, "holds no parameters");
  upload(space, m.model->arena().params(), c.buffers[0], path + ": parameters");
  m.step = integer(c, "step", path, 0, std::int64_t(9e15));
  return m;
}

std::unique_ptr<Session> Session::restore(std::string const& path, int max_k, Communicator const& comm) {
  return restore(read_checkpoint(path), path, max_k, comm);
}

Evaluator evaluator_for(ExecSpace const& space, Session& session, std::int64_t batch) {
  Evaluator e(space, session.model(), batch, session.config().input_transform, session.config().task);
  e.set_regression_loss(session.config().loss);
  e.set_precision(session.config().precision);
  if (!session.config().derivatives.empty())
    e.set_derivatives(space, session.model(), session.config().derivatives, session.config().derivative_weight);
  return e;
}

Evaluator evaluator_for(ExecSpace const& space, TrainedModel const& model, std::int64_t batch) {
  Evaluator e(space, *model.model, batch, model.config.input_transform, model.config.task);
  e.set_regression_loss(model.config.loss);
  e.set_precision(model.config.precision);
  if (!model.config.derivatives.empty())
    e.set_derivatives(space, *model.model, model.config.derivatives, model.config.derivative_weight);
  return e;
}

Predictor predictor_for(ExecSpace const& space, Session& session, std::int64_t batch) {
  Predictor p(space, session.model(), batch, session.config().input_transform);
  p.set_precision(session.config().precision);
  return p;
}

Predictor predictor_for(ExecSpace const& space, TrainedModel const& model, std::int64_t batch) {
  Predictor p(space, *model.model, batch, model.config.input_transform);
  p.set_precision(model.config.precision);
  return p;
}

}  // namespace ktr
