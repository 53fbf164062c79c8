// The K-step training program, its dispatch (captured or plain), metric read-back and evaluation.
#include "train.hpp"

#include "../backends/gemm.hpp"
#include "../backends/region.hpp"
#include "../core/error.hpp"
#include "../core/ops.hpp"
#include "../models/loss.hpp"

#include <limits>

namespace ktr {

namespace {

// The micro-batch of one rank: batch / (ranks * accumulate), checked before anything is allocated.
std::int64_t micro_batch_of(Model const& model, std::int64_t batch, Parallelism const& p) {
  KTR_REQUIRE(p.accumulate >= 1, "accumulate", "must be at least 1");
  std::int64_t const parts = std::int64_t(p.comm.size()) * p.accumulate;
  KTR_REQUIRE(batch > 0 && batch % parts == 0, "batch",
              std::to_string(batch) + " is not a multiple of ranks x accumulate = " +
                  std::to_string(p.comm.size()) + " x " + std::to_string(p.accumulate));
  std::int64_t const micro = batch / parts;
  KTR_REQUIRE(
      micro <= model.max_batch(), "batch",
      "the micro-batch " + std::to_string(micro) + " must be in [1, " + std::to_string(model.max_batch()) + "]");
  return micro;
}

// sum = (first ? 0 : sum) + alpha * g over the gradient arena.
void accumulate_gradients(ExecSpace const& space, DeviceView<float*> const& sum, DeviceView<float const*> const& g,
                          float alpha, bool first) {
  float* KOKKOS_RESTRICT const s = sum.data();
  float const* KOKKOS_RESTRICT const x = g.data();
  chunked_for(
      "ktr::train::accumulate_gradients", space, std::int64_t(sum.extent(0)),
      KOKKOS_LAMBDA(std::int64_t begin, std::int64_t end) {
        if (first) {
          for (std::int64_t i = begin; i < end; ++i) s[i] = alpha * x[i];
        } else {
          for (std::int64_t i = begin; i < end; ++i) s[i] += alpha * x[i];
        }
      });
}

}  // namespace

TrainState::TrainState(Model const& model, OptimizerConfig const& opt, std::int64_t batch_, std::uint64_t seed_,
                       Normalization norm_, int max_k_, Task task_, Parallelism parallel_)
    : TrainState(ExecSpace(), model, opt, batch_, seed_, std::move(norm_), max_k_, task_, std::move(parallel_)) {}

TrainState::TrainState(ExecSpace const& space, Model const& model, OptimizerConfig const& opt, std::int64_t batch_,
                       std::uint64_t seed_, Normalization norm_, int max_k_, Task task_, Parallelism parallel_)
    : optimizer(opt, model.arena().size(), space),
      step(Kokkos::view_alloc(space, "ktr::train::step")),
      batch(batch_),
      parallel(std::move(parallel_)),
      micro_batch(micro_batch_of(model, batch_, parallel)),
      seed(seed_),
      norm(norm_),
      max_k(max_k_),
      task(task_),
      x(space, "ktr::train::x", model.input_shape(micro_batch)),
      y(Kokkos::view_alloc(space, "ktr::train::y"), task_ == Task::classification ? std::size_t(micro_batch) : 0),
      values(task_ == Task::regression
                 ? Tensor(space, "ktr::train::values", Shape{micro_batch, model.output_width()})
                 : Tensor()),
      grad_sum(parallel.accumulate > 1 ? DeviceView<float*>(Kokkos::view_alloc(space, Kokkos::WithoutInitializing,
                                                                               "ktr::train::grad_sum"),
                                                            std::size_t(model.arena().size()))
                                       : DeviceView<float*>()),
      loss(Kokkos::view_alloc(space, "ktr::train::loss"), std::size_t(max_k_) * std::size_t(parallel.accumulate)),
      correct(Kokkos::view_alloc(space, "ktr::train::correct"),
              std::size_t(max_k_) * std::size_t(parallel.accumulate)),
      loss_partials(!device_is_host && task_ == Task::regression
                        ? DeviceView<double*>(Kokkos::view_alloc(space, "ktr::train::loss_partials"),
                                              std::size_t(kLossPartials))
                        : DeviceView<double*>()) {
  KTR_REQUIRE(max_k_ > 0, "steps_per_dispatch", "must be positive");
}

namespace {

// The run's bf16 copy of its parameters where it is a bf16 run that keeps one, else an empty view.
DeviceView<std::uint16_t*> bf16_params(TrainState const& state, Model const& model) {
  bool const has = state.precision == MatmulPrecision::bf16 && state.keep_bf16_params &&
                   std::int64_t(state.params16.extent(0)) == model.arena().size();
  return has ? state.params16 : DeviceView<std::uint16_t*>();
}

// The run's arithmetic for one call: its matmul precision and, in a bf16 run that keeps one, the bf16 copy of the
// parameters, made on the run's first call, rounded afresh (they may have changed since the last call: a
// checkpoint, a caller's own values) and handed to gemm, which reads the weights from it.
Precision run_precision(ExecSpace const& space, TrainState& state, Model const& model) {
  Precision precision{state.precision, {}};
  if (state.precision != MatmulPrecision::bf16 || !state.keep_bf16_params) return precision;
  DeviceView<float*> const params = model.arena().params();
  if (state.params16.extent(0) != params.extent(0))
    state.params16 = DeviceView<std::uint16_t*>(
        Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "ktr::train::params16"), params.extent(0));
  to_bf16("ktr::train::params_bf16", space, params.data(), std::int64_t(params.extent(0)), state.params16.data());
  precision.params16 = Bf16Copy{params.data(), state.params16.data(), std::int64_t(params.extent(0))};
  return precision;
}

// One micro-batch of an update: gather (cursor), forward (dropout keyed by key_row), loss into metric entry
// `index`, backward; with accumulation, the gradient added into the update's sum (weighted by `share`).
void micro_batch_pass(ExecSpace const& space, Precision const& precision, TrainState& state, Model& model,
                      DeviceDataset const& data, BatchCursor const& cursor, std::int64_t key_row, int index,
                      float share, bool first) {
  gather_batch(space, data, cursor, state.norm, Batch{state.x, state.y, state.values});  // x (b, ...), targets
  // Dropout draws by (seed, step, layer, the sample's row in the update): what one rank would draw.
  RandomKey const key{state.seed, state.step.data(), key_row};
  Tensor const out = model.forward(space, precision, state.x, &key);  // (b, classes) or (b, T)
  LossOutput const metrics{state.loss, state.correct, index, false, state.reduction, state.loss_partials};
  if (state.task == Task::classification)
    softmax_cross_entropy(space, out, state.y, model.dlogits(), metrics);
  else
    regression_loss(space, state.regression, out, state.values, model.dlogits(), metrics);
  model.backward(space, precision);
  if (state.parallel.accumulate > 1)
    accumulate_gradients(space, state.grad_sum, model.arena().grads(), share, first);
}

// The update of the micro-batches whose losses start at metric entry `first_loss`: the gradient weighted and
// summed over ranks, then step += 1 on the device, unless the gradient (the same on every rank) or, on one rank,
// the update's losses are not finite: then the update is refused and changes nothing.
void apply_update(ExecSpace const& space, TrainState& state, Model& model, float share, int first_loss) {
  Communicator const& comm = state.parallel.comm;
  int const ranks = comm.size(), n = state.parallel.accumulate;
  auto const& arena = model.arena();
  DeviceView<float*> const grads = n > 1 ? state.grad_sum : arena.grads();  // what the update reads
  if (n == 1 && ranks > 1 && share != 1.0f) scale(space, share, grads);
  comm.allreduce_sum(space, grads);  // no-op on one rank
  state.optimizer.update(space, arena.params(), grads, state.step,
                         ranks == 1 ? state.loss.data() + first_loss : nullptr, ranks == 1 ? n : 0,
                         bf16_params(state, model));
}

}  // namespace

void train_steps(ExecSpace const& space, TrainState& state, Model& model, DeviceDataset const& data, int k) {
  KTR_REQUIRE(k > 0 && k <= state.max_k, "ktr::train_steps", "K must be in [1, max_k]");
  KTR_REQUIRE(data.task() == state.task, "ktr::train_steps",
              state.task == Task::regression ? "the run is a regression, the data has class labels"
                                             : "the run is a classification, the data has regression targets");
  bool const unfitted = !state.norm.per_feature() && state.norm.scale == Normalization{}.scale &&
                        state.norm.shift == Normalization{}.shift;
  KTR_REQUIRE(!(data.feature_kind == DeviceDataset::Features::float32 && unfitted &&
                (state.normalize == NormalizeMode::standard || state.normalize == NormalizeMode::none)),
              "ktr::train_steps",
              std::string("the run says its input transform is '") + normalize_mode_name(state.normalize) +
                  "' but holds the default pixel transform (x / 255), which would divide float features by 255: "
                  "set RunConfig::norm = fit_normalization(space, data, RunConfig::normalize) (the Trainer does)");
  Communicator const& comm = state.parallel.comm;
  int const ranks = comm.size(), rank = comm.rank(), n = state.parallel.accumulate;
  bool const sharded = state.parallel.layout == DataLayout::sharded;
  std::int64_t const b = state.micro_batch;
  // Replicated data: every rank shuffles the whole dataset alike and takes its rows of the global batch. Sharded:
  // a permutation of the rank's own shard, from which it takes its n micro-batches.
  std::uint64_t const seed = sharded ? state.seed + 0x9E3779B97F4A7C15ull * std::uint64_t(rank) : state.seed;
  std::int64_t const stride = sharded ? b * n : state.batch;
  // Each micro-batch's gradient, weighted to the global batch's: of the mean of equal parts' means, or the sum.
  float const share = state.reduction == Reduction::sum ? 1.0f : 1.0f / float(ranks * n);
  Precision const precision = run_precision(space, state, model);
  for (int i = 0; i < k; ++i) {
    for (int j = 0; j < n; ++j) {
      std::int64_t const row = (sharded ? j : std::int64_t(j) * ranks + rank) * b;
      micro_batch_pass(space, precision, state, model, data, BatchCursor{state.step, 0, seed, b, stride, row},
                       sharded ? (std::int64_t(rank) * n + j) * b : row, i * n + j, share, j == 0);
    }
    apply_update(space, state, model, share, i * n);
  }
}

void train_micro_step(ExecSpace const& space, TrainState& state, Model& model, DeviceDataset const& data, int j) {
  Communicator const& comm = state.parallel.comm;
  int const ranks = comm.size(), rank = comm.rank(), n = state.parallel.accumulate;
  std::int64_t const b = state.micro_batch;
  KTR_REQUIRE(j >= 0 && j < n && data.count == b && data.task() == state.task, "ktr::train_micro_step",
              "micro-batch " + std::to_string(j) + " of " + std::to_string(n) + " must hold " + std::to_string(b) +
                  " samples of the run's task");
  // The rank's own data, all of it: a permutation of its b rows (the gradient does not depend on the order).
  std::uint64_t const seed = state.seed + 0x9E3779B97F4A7C15ull * std::uint64_t(rank);
  // The update's gradient: the mean over ranks and micro-batches (ktr), or TorchFort's sum over its calls.
  float const share = state.reduction == Reduction::sum ? 1.0f
                      : state.sum_over_calls            ? 1.0f / float(ranks)
                                                        : 1.0f / float(ranks * n);
  micro_batch_pass(space, run_precision(space, state, model), state, model, data,
                   BatchCursor{state.step, 0, seed, b, b, 0}, (std::int64_t(rank) * n + j) * b, j, share, j == 0);
  if (j == n - 1) apply_update(space, state, model, share, 0);
}

char const* dispatch_path_name(DispatchPath path) {
  switch (path) {
    case DispatchPath::plain:
      return "plain";
    case DispatchPath::captured:
      return "captured";
    case DispatchPath::replayed:
      return "replayed";
    case DispatchPath::capture_failed:
      return "capture failed";
  }
  return "?";
}

DispatchPath dispatch(ExecSpace const& space, TrainState& state, Model& model, DeviceDataset const& data, int k) {
  auto run_plain = [&] { train_steps(space, state, model, data, k); };
  DispatchPath path = DispatchPath::plain;
  // A collective that waits for the host (MPI without NCCL) cannot be captured: such runs stay plain.
  if (!CapturedProgram::can_capture(space) || state.parallel.comm.host_synchronised()) {
    run_plain();
  } else {
    auto& program =
        state.programs_.slot(ProgramKey(model, data, state.norm, k, state.precision, stream_identity(space)));
    if (program && program->valid()) {
      program->replay(space);
      path = DispatchPath::replayed;
    } else if (!program) {
      // First dispatch of this key: run it plainly (warming up every lazily created buffer and handle), then
      // record it; the next dispatch of this key replays it.
      run_plain();
      program = std::make_unique<CapturedProgram>();
      space.fence();  // not captured: the capture must start on an idle stream
      if (program->capture(space, run_plain)) {
        path = DispatchPath::captured;
      } else {
        state.capture_error_ = program->error();
        path = DispatchPath::capture_failed;
      }
    } else {
      run_plain();  // capture failed once for this key: stay on the plain path
      path = DispatchPath::capture_failed;
    }
  }
  state.host_step_ += k;
  return path;
}

StepMetrics read_metrics(ExecSpace const& space, TrainState const& state, int k) {
  Communicator const& comm = state.parallel.comm;
  std::size_t const n = std::size_t(state.parallel.accumulate), slots = std::size_t(k) * n;
  std::vector<float> loss(slots);
  std::vector<std::int32_t> correct(slots);
  auto range = std::make_pair<std::size_t, std::size_t>(0, std::size_t(slots));
  // Copied on the instance that ran the dispatch, after it; then that instance alone is waited for.
  Kokkos::deep_copy(space, HostView<float*>(loss.data(), slots), Kokkos::subview(state.loss, range));
  Kokkos::deep_copy(space, HostView<std::int32_t*>(correct.data(), slots), Kokkos::subview(state.correct, range));
  std::int64_t refused = 0;
  Kokkos::deep_copy(space, Kokkos::View<std::int64_t, HostSpace, Kokkos::MemoryUnmanaged>(&refused),
                    state.optimizer.refused());
  space.fence();
  StepMetrics m;
  m.refused = refused;
  if (n == 1 && comm.size() == 1) {  // one micro-batch on one rank: the values themselves
    m.loss = std::move(loss), m.correct = std::move(correct);
    return m;
  }
  // Per update: loss sums and correct counts over micro-batches, then over ranks (one collective).
  std::vector<double> sums(2 * std::size_t(k), 0.0);
  for (std::size_t i = 0; i < std::size_t(k); ++i)
    for (std::size_t j = 0; j < n; ++j) sums[i] += loss[i * n + j], sums[std::size_t(k) + i] += correct[i * n + j];
  comm.sum(sums);
  // Micro-batches of equal size: the mean of their means, or the sum of their sums.
  double const parts = state.reduction == Reduction::sum ? 1.0 : double(n) * double(comm.size());
  m.loss.resize(std::size_t(k));
  m.correct.resize(std::size_t(k));
  for (std::size_t i = 0; i < std::size_t(k); ++i)
    m.loss[i] = float(sums[i] / parts), m.correct[i] = std::int32_t(sums[std::size_t(k) + i]);
  return m;
}

Evaluator::Evaluator(Model const& model, std::int64_t batch, Normalization norm, Task task)
    : Evaluator(ExecSpace(), model, batch, std::move(norm), task) {}

Evaluator::Evaluator(ExecSpace const& space, Model const& model, std::int64_t batch, Normalization norm, Task task)
    : batch_(std::min(batch, model.max_batch())),
      norm_(norm),
      task_(task),
      x_(space, "ktr::eval::x", model.input_shape(batch_)),
      y_(Kokkos::view_alloc(space, "ktr::eval::y"), task == Task::classification ? std::size_t(batch_) : 0),
      values_(task == Task::regression ? Tensor(space, "ktr::eval::values", Shape{batch_, model.output_width()})
                                       : Tensor()),
      loss_(Kokkos::view_alloc(space, "ktr::eval::loss"), 2),
      correct_(Kokkos::view_alloc(space, "ktr::eval::correct"), 2),
      partials_(!device_is_host && task == Task::regression
                    ? DeviceView<double*>(Kokkos::view_alloc(space, "ktr::eval::loss_partials"),
                                          std::size_t(kLossPartials))
                    : DeviceView<double*>()) {}

EvalResult Evaluator::run(ExecSpace const& space, Model& model, DeviceDataset const& data) {
  Region const region("ktr::Evaluator::run");
  KTR_REQUIRE(data.task() == task_, "ktr::Evaluator", "the data's targets do not match the model's task");
  Kokkos::deep_copy(space, loss_, 0.0f);
  Kokkos::deep_copy(space, correct_, 0);
  for (std::int64_t first = 0; first < data.count; first += batch_) {
    std::int64_t const b = std::min(batch_, data.count - first);
    Tensor const x = x_.reshaped(model.input_shape(b));
    Tensor const values = task_ == Task::regression ? values_.reshaped(Shape{b, model.output_width()}) : Tensor();
    gather_range(space, data, first, norm_, Batch{x, y_, values});
    Tensor const out = model.forward(space, Precision{precision_, {}}, x);
    LossOutput const sums{loss_, correct_, 0, true, Reduction::mean, partials_};
    if (task_ == Task::classification)
      softmax_cross_entropy(space, out, y_, Tensor(), sums);
    else
      mean_squared_error(space, out, values, Tensor(), sums);
    if (task_ == Task::regression && regression_.kind != RegressionLoss::Kind::mse)  // the run's loss, in slot 1
      regression_loss(space, regression_, out, values, Tensor(),
                      LossOutput{loss_, correct_, 1, true, Reduction::mean, partials_});
  }
  float sums[2] = {0, 0};
  std::int32_t hits = 0;
  // Read back on `space`, after its work; only that instance is waited for.
  using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  Kokkos::deep_copy(space, Kokkos::View<float*, HostSpace, Unmanaged>(sums, 2), loss_);
  Kokkos::deep_copy(space, Kokkos::View<std::int32_t, HostSpace, Unmanaged>(&hits), Kokkos::subview(correct_, 0));
  space.fence();
  if (task_ == Task::regression) {
    double const elements = double(data.count) * double(model.output_width());
    double const mse = sums[0] / elements;
    double const loss = regression_.kind == RegressionLoss::Kind::mse ? mse : sums[1] / elements;
    return EvalResult{loss, std::numeric_limits<double>::quiet_NaN(), data.count, mse};
  }
  return EvalResult{sums[0] / double(data.count), hits / double(data.count), data.count};
}

Predictor::Predictor(Model const& model, std::int64_t batch, Normalization norm)
    : Predictor(ExecSpace(), model, batch, std::move(norm)) {}

Predictor::Predictor(ExecSpace const& space, Model const& model, std::int64_t batch, Normalization norm)
    : batch_(std::min(batch, model.max_batch())),
      norm_(norm),
      x_(space, "ktr::predict::x", model.input_shape(batch_)) {}

void Predictor::run(ExecSpace const& space, Model& model, DeviceDataset const& inputs,
                    Kokkos::View<float**, Kokkos::LayoutStride, MemSpace> const& out) {
  Region const region("ktr::Predictor::run");
  std::int64_t const width = model.output_width();
  KTR_REQUIRE(std::int64_t(out.extent(0)) == inputs.count && std::int64_t(out.extent(1)) == width,
              "ktr::Predictor",
              "the output view must be (" + std::to_string(inputs.count) + ", " + std::to_string(width) + ")");
  for (std::int64_t first = 0; first < inputs.count; first += batch_) {
    std::int64_t const b = std::min(batch_, inputs.count - first);
    Tensor const x = x_.reshaped(model.input_shape(b));
    gather_range(space, inputs, first, norm_, Batch{x, {}, Tensor()});
    float const* y = model.forward(space, Precision{precision_, {}}, x).data();  // (b, width)
    Kokkos::parallel_for(
        "ktr::predict::store", MDRange<2>(space, {0, 0}, {b, width}),
        KOKKOS_LAMBDA(std::int64_t i, std::int64_t j) { out(first + i, j) = y[i * width + j]; });
  }
}

}  // namespace ktr
