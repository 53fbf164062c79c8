// The training policy, once: dispatch, read back, detect divergence, report, evaluate, checkpoint, stop (fit);
// the online steps are in trainer_online.cpp.
#include "trainer.hpp"

#include "../backends/region.hpp"
#include "../core/error.hpp"
#include "sobolev.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

namespace ktr {

namespace {

// A regression's training RMSE: the root of its loss where that is the mean squared error (of values alone), else
// none (NaN).
double regression_rmse(RunConfig const& cfg, double loss) {
  return cfg.loss.kind == RegressionLoss::Kind::mse && cfg.reduction == Reduction::mean && cfg.derivatives.empty()
             ? std::sqrt(loss)
             : std::numeric_limits<double>::quiet_NaN();
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The fresh run's configuration: the task from the data, the input transform fitted on it.
RunConfig fitted(ExecSpace const& space, RunConfig config, DeviceDataset const& train) {
  Region const region("ktr::Trainer::Trainer");
  KTR_REQUIRE(!config.model.empty(), "ktr::Trainer", "no model description (RunConfig::model) given");
  config.task = train.task();
  ModelPlan const plan = Model::plan(config.model, 1);
  std::string const why = targets_mismatch(plan, train, false, config.derivatives);
  KTR_REQUIRE(why.empty(), "ktr::Trainer", "'" + config.model + "': " + why);
  config.input_transform = fit_input_transform(space, train, config.normalize);
  return config;
}

}  // namespace

Trainer::Trainer(std::unique_ptr<Session> session, DeviceDataset train, DeviceDataset test, TrainerOptions options,
                 Communicator comm)
    : session_(std::move(session)),
      train_(std::move(train)),
      test_(std::move(test)),
      options_(std::move(options)),
      comm_(std::move(comm)) {
  session_->state().parallel.layout = options_.layout;
  // Data smaller than a batch still serves online steps (step(), predict()); fit() refuses it.
  if (train_.count >= samples_per_update_here())
    steps_per_epoch_ = ktr::steps_per_epoch(train_, samples_per_update_here());
  KTR_REQUIRE(config().optimizer.kind != OptimizerConfig::Kind::lbfgs || train_.count == 0 ||
                  train_.count == config().batch,
              "batch",
              "lbfgs evaluates one fixed batch: the batch must be the whole training set (" +
                  std::to_string(train_.count) + " samples), not " + std::to_string(config().batch));
}

std::int64_t Trainer::target_width() const {
  auto const& sobolev = session_->state().sobolev;
  return session_->model().output_width() * (sobolev ? sobolev->columns() : 1);
}

std::string Trainer::derivatives_note() const {
  return config().derivatives.empty()
             ? std::string()
             : " with derivatives '" + config().derivatives + "': targets (N, " +
                   std::to_string(session_->model().output_width()) + ", " +
                   std::to_string(target_width() / session_->model().output_width()) + ")";
}

std::int64_t Trainer::samples_per_update_here() const {
  return options_.layout == DataLayout::sharded ? config().batch / comm_.size() : config().batch;
}

Trainer::Trainer(ExecSpace const& space, RunConfig config, DeviceDataset train, DeviceDataset test,
                 TrainerOptions options, Communicator comm)
    : Trainer(std::make_unique<Session>(space, fitted(space, std::move(config), train), options.steps_per_dispatch,
                                        comm),
              std::move(train), std::move(test), std::move(options), comm) {}

std::unique_ptr<Trainer> Trainer::resume(ExecSpace const& space, std::string const& path, DeviceDataset train,
                                         DeviceDataset test, TrainerOptions options, Communicator comm,
                                         int accumulate) {
  Checkpoint const ckpt = read_checkpoint(path);
  RunConfig config = run_config(ckpt, path);
  if (accumulate > 0) config.accumulate = accumulate;
  return resume(space, ckpt, path, config, std::move(train), std::move(test), std::move(options), std::move(comm));
}

std::unique_ptr<Trainer> Trainer::resume(ExecSpace const& space, Checkpoint const& ckpt, std::string const& path,
                                         RunConfig const& config, DeviceDataset train, DeviceDataset test,
                                         TrainerOptions options, Communicator comm) {
  Region const region("ktr::Trainer::resume");
  auto session = Session::restore(space, ckpt, path, options.steps_per_dispatch, comm, &config);
  return std::unique_ptr<Trainer>(
      new Trainer(std::move(session), std::move(train), std::move(test), std::move(options), std::move(comm)));
}

std::unique_ptr<Trainer> Trainer::untrained(ExecSpace const& space, RunConfig const& config,
                                            TrainerOptions options, Communicator comm) {
  Region const region("ktr::Trainer::untrained");
  auto session = std::make_unique<Session>(space, config, options.steps_per_dispatch, comm);
  return std::unique_ptr<Trainer>(new Trainer(std::move(session), {}, {}, std::move(options), std::move(comm)));
}

std::unique_ptr<Trainer> Trainer::with_batch(ExecSpace const& space, std::int64_t batch) const {
  Region const region("ktr::Trainer::with_batch");
  KTR_REQUIRE(comm_.size() == 1, "batch",
              "a model on " + std::to_string(comm_.size()) +
                  " ranks keeps the batch of its first call (give general.batch_size for the largest)");
  RunConfig config = session_->config();
  config.batch = batch;
  Checkpoint const state = session_->snapshot(space, "ktr::Trainer::with_batch");
  return resume(space, state, "ktr::Trainer::with_batch", config, train_, test_, options_, comm_);
}

void Trainer::save(ExecSpace const& space, std::string const& path) const {
  Region const region("ktr::Trainer::save");
  session_->save(space, path);
}

Evaluator& Trainer::evaluator(ExecSpace const& space) {
  // Made once (its batch buffers are allocated then, on `space`) and kept: fit's per-epoch evaluations,
  // evaluate().
  if (!evaluator_) evaluator_ = std::make_unique<Evaluator>(evaluator_for(space, *session_, options_.eval_batch));
  return *evaluator_;
}

void Trainer::save_if_asked(ExecSpace const& space) const {
  if (!options_.checkpoint.empty() && lead()) save(space, options_.checkpoint);
}

EvalResult Trainer::evaluate(ExecSpace const& space, DeviceDataset const& data) {
  Region const region("ktr::Trainer::evaluate");
  return evaluator(space).run(space, model(), data);
}

void Trainer::predict(ExecSpace const& space, DeviceDataset const& inputs,
                      Kokkos::View<float**, Kokkos::LayoutStride, MemSpace> const& out) {
  Region const region("ktr::Trainer::predict");
  if (!predictor_) predictor_ = std::make_unique<Predictor>(predictor_for(space, *session_, options_.eval_batch));
  predictor_->run(space, model(), inputs, out);
}

void Trainer::set_weights(ExecSpace const& space, std::vector<float> const& params,
                          InputTransform const* transform, std::string const& what) {
  Region const region("ktr::Trainer::set_weights");
  KTR_REQUIRE(std::int64_t(params.size()) == model().arena().size(), what,
              "holds " + std::to_string(params.size()) + " parameters, the model has " +
                  std::to_string(model().arena().size()));
  for (float v : params) KTR_REQUIRE(std::isfinite(v), what, "holds a parameter that is not finite");
  if (transform) {
    std::int64_t const features = model().input_shape(1).size();
    KTR_REQUIRE(!transform->per_feature() || std::int64_t(transform->feature_scale.extent(0)) == features, what,
                "records an input transform for another number of features");
    session_->set_input_transform(*transform);
    for (auto& online : online_)
      online.second->input_transform = *transform, online.second->normalize = InputTransformMode::recorded;
    predictor_.reset(), evaluator_.reset();  // they keep the transform they were made with
  }
  Kokkos::deep_copy(space, model().arena().params(), HostView<float const*>(params.data(), params.size()));
  space.fence();
}

bool Trainer::refused_since_last(ExecSpace const& space, StepMetrics const& m) {
  if (m.refused == refused_seen_) return false;
  refused_seen_ = m.refused;
  std::int64_t device_step = 0;
  Kokkos::deep_copy(space, Kokkos::View<std::int64_t, HostSpace, Kokkos::MemoryUnmanaged>(&device_step),
                    session_->state().step);
  space.fence();
  session_->state().host_step_ = device_step;
  return true;
}

void Trainer::enqueue_dispatch(ExecSpace const& space, int k, TrainerHooks& hooks) {
  TrainState& state = session_->state();
  if (!options_.capture) {
    train_steps(space, state, model(), train_, k);
    state.count_steps(k);
  } else if (dispatch(space, state, model(), train_, k) == DispatchPath::capture_failed && !capture_reported_) {
    hooks.on_capture_failed(state.capture_error());
    capture_reported_ = true;
  }
  last_k_ = k;
}

void Trainer::check_metrics(ExecSpace const& space, StepMetrics const& m, int k, TrainerHooks& hooks) {
  std::int64_t const first_step = session_->state().host_step() - k;
  std::string const kept = options_.checkpoint.empty()
                               ? std::string()
                               : "; the checkpoint " + options_.checkpoint + " keeps its last finite state";
  if (refused_since_last(space, m)) {  // the model is as it was before the first refused update
    std::size_t i = 0;
    while (i < std::size_t(k) && std::isfinite(m.loss[i])) ++i;
    std::string const what =
        i < std::size_t(k)
            ? "the loss of step " + std::to_string(first_step + std::int64_t(i) + 1) + " is " +
                  (std::isnan(m.loss[i]) ? "nan" : "infinite")
            : "the loss or gradient of an update up to step " + std::to_string(first_step + k) + " is not finite";
    hooks.on_divergence(first_step + std::int64_t(std::min<std::size_t>(i, std::size_t(k) - 1)) + 1,
                        i < std::size_t(k) ? m.loss[i] : std::numeric_limits<float>::quiet_NaN());
    throw DivergenceError("training diverged: " + what + " (the update was refused: the model is as it was)" +
                          kept);
  }
  for (int i = 0; i < k; ++i) {
    float const l = m.loss[std::size_t(i)];
    if (!std::isfinite(l)) {  // diverged: stop before anything non-finite reaches a checkpoint
      std::int64_t const bad_step = first_step + i + 1;
      hooks.on_divergence(bad_step, l);
      throw DivergenceError("training diverged: the loss of step " + std::to_string(bad_step) + " is " +
                            (std::isnan(l) ? "nan" : "infinite") + kept);
    }
  }
}

DispatchRecord Trainer::run_dispatch(ExecSpace const& space, int k, TrainerHooks& hooks, double& loss,
                                     std::int64_t& hits) {
  RunConfig const& cfg = config();
  TrainState& state = session_->state();
  auto const t0 = std::chrono::steady_clock::now();
  enqueue_dispatch(space, k, hooks);
  StepMetrics const m = read_metrics(space, state, k);  // the one host synchronisation of the dispatch
  double const dt = seconds_since(t0);
  check_metrics(space, m, k, hooks);
  loss = 0;
  hits = 0;
  for (int i = 0; i < k; ++i) loss += m.loss[std::size_t(i)], hits += m.correct[std::size_t(i)];
  DispatchRecord record;
  record.step = state.host_step();
  record.epoch = steps_per_epoch_ > 0 ? (state.host_step() - 1) / steps_per_epoch_ + 1 : 0;
  record.k = k;
  record.loss = loss / k;
  record.quality = cfg.task == Task::regression ? regression_rmse(cfg, loss / k)
                                                : double(hits) / double(std::int64_t(k) * cfg.batch);
  record.samples_per_s = k * cfg.batch / dt;
  hooks.on_dispatch(record);
  return record;
}

RunSummary Trainer::fit(ExecSpace const& space, std::int64_t epochs) {
  TrainerHooks none;
  return fit(space, epochs, none);
}

RunSummary Trainer::fit(ExecSpace const& space, std::int64_t epochs, TrainerHooks& hooks) {
  Region const region("ktr::Trainer::fit");
  RunConfig const& cfg = config();
  TrainState& state = session_->state();
  if (steps_per_epoch_ == 0) (void)ktr::steps_per_epoch(train_, samples_per_update_here());  // refuses
  std::int64_t const spe = steps_per_epoch_, total = epochs * spe;
  KTR_REQUIRE(state.host_step() <= total, "ktr::Trainer::fit",
              std::to_string(epochs) + " epochs are " + std::to_string(total) +
                  " steps, the run is already at step " + std::to_string(state.host_step()));
  bool const regression = cfg.task == Task::regression;
  bool const evaluate_test = options_.evaluate && test_.count > 0;
  RunSummary summary;
  summary.first_step = state.host_step();
  auto const t_start = std::chrono::steady_clock::now();
  double epoch_loss = 0;
  std::int64_t epoch_steps = 0, epoch_hits = 0;
  while (state.host_step() < total) {
    std::int64_t const in_epoch = state.host_step() % spe;
    int const k = int(std::min<std::int64_t>(options_.steps_per_dispatch, spe - in_epoch));  // never straddles
    double loss = 0;
    std::int64_t hits = 0;
    run_dispatch(space, k, hooks, loss, hits);
    epoch_loss += loss, epoch_steps += k, epoch_hits += hits;
    if (comm_.any(hooks.stop_requested())) {  // every rank stops at the same step
      summary.stopped = true;
      break;
    }
    if (state.host_step() % spe == 0) {
      EpochRecord e;
      e.epoch = state.host_step() / spe;
      e.wall_s = seconds_since(t_start);
      if (evaluate_test && lead()) e.test = evaluator(space).run(space, model(), test_), e.evaluated = true;
      e.train_loss = epoch_loss / double(epoch_steps);
      e.train_quality =
          regression ? regression_rmse(cfg, e.train_loss) : double(epoch_hits) / double(epoch_steps * cfg.batch);
      summary.test = e.test, summary.evaluated = e.evaluated;
      hooks.on_epoch(e);
      epoch_loss = 0, epoch_steps = 0, epoch_hits = 0;
      save_if_asked(space);
    }
  }
  summary.wall_s = seconds_since(t_start);
  summary.last_step = state.host_step();
  double const trained = double(summary.last_step - summary.first_step) * double(cfg.batch);
  summary.samples_per_s = summary.wall_s > 0 ? trained / summary.wall_s : 0.0;
  if (summary.stopped) {
    save_if_asked(space);
    return summary;
  }
  // A resumed run that had nothing left to do still reports the model it holds.
  if (evaluate_test && !summary.evaluated && lead())
    summary.test = evaluator(space).run(space, model(), test_), summary.evaluated = true;
  return summary;
}

}  // namespace ktr
