// The K-step training program, its dispatch (captured or plain) and the metrics' read-back.
#include "train.hpp"

#include "../backends/gemm.hpp"
#include "../backends/graph.hpp"
#include "../backends/region.hpp"
#include "../core/error.hpp"
#include "../core/ops.hpp"
#include "../models/loss.hpp"
#include "program_cache.hpp"
#include "sobolev.hpp"

#include <limits>

namespace ktr {

namespace {

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

// The model's forward pass of state.x, its loss into `metrics` and its backward pass.
void forward_loss_backward(ExecSpace const& space, Precision const& precision, TrainState& state, Model& model,
                           std::int64_t key_row, LossOutput const& metrics) {
  // Dropout draws by (seed, step, layer, the sample's row in the update): what one rank would draw.
  RandomKey const key{state.seed, state.step.data(), key_row};
  Tensor const out = model.forward(space, precision, state.x, &key);  // (b, classes) or (b, T)
  if (state.task == Task::classification)
    softmax_cross_entropy(space, out, state.y, model.dlogits(), metrics);
  else
    regression_loss(space, state.regression, out, state.values, model.dlogits(), metrics);
  model.backward(space, precision);
}

// One micro-batch of an update: gather (cursor), forward (dropout keyed by key_row), loss into metric entry
// `index`, backward; with accumulation, the gradient added into the update's sum (weighted by `share`).
void micro_batch_pass(ExecSpace const& space, Precision const& precision, TrainState& state, Model& model,
                      DeviceDataset const& data, BatchCursor const& cursor, std::int64_t key_row, int index,
                      float share, bool first) {
  LossOutput const metrics{state.loss, state.correct, index, false, state.reduction, state.loss_partials};
  if (state.sobolev) {  // raw inputs: the jet applies the run's transform, so derivatives are by the raw inputs
    gather_batch(space, data, cursor, state.sobolev->raw(), Batch{state.x, state.y, state.values});
    state.sobolev->pass(space, model, state.input_transform, state.x, state.values, metrics,
                        model.arena().grads());
  } else {
    gather_batch(space, data, cursor, state.input_transform,
                 Batch{state.x, state.y, state.values});  // x (b, ...), targets
    forward_loss_backward(space, precision, state, model, key_row, metrics);
  }
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
  bool const unfitted = !state.input_transform.per_feature() &&
                        state.input_transform.scale == InputTransform{}.scale &&
                        state.input_transform.shift == InputTransform{}.shift;
  KTR_REQUIRE(
      !(data.feature_kind == DeviceDataset::Features::float32 && unfitted &&
        (state.normalize == InputTransformMode::standard || state.normalize == InputTransformMode::none)),
      "ktr::train_steps",
      std::string("the run says its input transform is '") + input_transform_mode_name(state.normalize) +
          "' but holds the default pixel transform (x / 255), which would divide float features by 255: "
          "set RunConfig::norm = fit_input_transform(space, data, RunConfig::normalize) (the Trainer does)");
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
    auto& program = state.programs_->slot(
        ProgramKey(model, data, state.input_transform, k, state.precision, stream_identity(space)));
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

}  // namespace ktr
