// The training loop: K complete optimiser steps per dispatch with no host synchronisation between them.
//
//   for k in 0..K-1:                       (all enqueued on one execution space instance)
//     for j in 0..N-1:                     (N = accumulate micro-batches per update; usually 1)
//       gather_batch(step, j, rank) -> x (b, ...), targets: labels (b) or values (b, T);  b = B / (R N)
//       out = model.forward(x)
//       loss[k,j], correct[k,j], dout = softmax_cross_entropy(out, labels) or mean_squared_error(out, values)
//       model.backward()   -> gradient arena (N > 1: summed into a second arena-sized buffer, times 1 / (R N))
//     comm.allreduce_sum(gradients)        (R ranks: the one collective of the step; a no-op on one rank)
//     optimizer.update()   -> parameter arena, moments, step += 1 (refused, changing nothing, where the gradient
//                             or the step's loss is not finite)
//   read loss[0..K), correct[0..K) back once (averaged over micro-batches and ranks)
//
// Data parallelism (R ranks of a Communicator): with replicated data every rank holds the whole dataset and takes
// rows [(j R + r) b, (j R + r + 1) b) of each global batch from the same permutation, so R ranks with global batch
// B follow the trajectory of one rank with batch B (up to summation order); with sharded data each rank takes
// its micro-batches from a permutation of its own shard.
//
// On CUDA (and HIP with Kokkos Kernels 4.x) the K-step program is captured once per (model, data, K, precision,
// stream) on the caller's stream and replayed (the last 8 programs are kept); elsewhere, and on the null stream,
// the same kernels run as a loop.
#pragma once

#include "../backends/collective.hpp"
#include "../backends/gemm.hpp"
#include "../backends/graph.hpp"
#include "../data/dataset.hpp"
#include "../models/loss.hpp"
#include "../models/model.hpp"
#include "../optim/optimizer.hpp"
#include "program_cache.hpp"

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ktr {

/// Where each rank's training data comes from.
enum class DataLayout {
  replicated,  ///< every rank holds the whole dataset and takes its rows of each global batch
  sharded,     ///< every rank holds only its own shard (its own views) and shuffles it with its own permutation
};

/// How an optimiser update is spread: over the ranks of a communicator and over micro-batches.
struct Parallelism {
  Communicator comm;   ///< one rank by default
  int accumulate = 1;  ///< micro-batches whose mean gradient makes one update (optax.MultiSteps)
  DataLayout layout = DataLayout::replicated;
};

/// How a dispatch ran its K steps.
enum class DispatchPath {
  plain,           ///< train_steps: the backend or the instance (null stream) cannot capture
  captured,        ///< train_steps, then the program was recorded: later dispatches of this key replay it
  replayed,        ///< the captured program was launched
  capture_failed,  ///< train_steps; capturing failed (state.capture_error() says why): this key stays plain
};
char const* dispatch_path_name(DispatchPath path);

/// Everything a run keeps on the device besides the model: optimiser state, step counter, batch buffers and
/// per-step metric arrays of length max_k. Allocated once.
struct TrainState {
  /// `batch` is the samples per optimiser update over all ranks; each rank's micro-batch is
  /// batch / (ranks * accumulate), which must be a whole number no larger than the model's max_batch.
  TrainState(Model const& model, OptimizerConfig const& opt, std::int64_t batch, std::uint64_t seed,
             Normalization norm, int max_k, Task task = Task::classification, Parallelism parallel = {});
  /// The same, every buffer allocated (and zeroed) on `space`.
  TrainState(ExecSpace const& space, Model const& model, OptimizerConfig const& opt, std::int64_t batch,
             std::uint64_t seed, Normalization norm, int max_k, Task task = Task::classification,
             Parallelism parallel = {});

  Optimizer optimizer;
  Kokkos::View<std::int64_t, MemSpace> step;  ///< optimiser steps taken (device), also the data position
  std::int64_t batch;                         ///< samples per update, over all ranks and micro-batches
  Parallelism parallel;
  std::int64_t micro_batch;  ///< samples of one rank's micro-batch: batch / (ranks * accumulate)
  std::uint64_t seed;
  Normalization norm;
  /// What `norm` claims to be (Session sets RunConfig::normalize): float features under a run that claims
  /// `standard` or `none` but still holds the unfitted pixel transform (x / 255) are refused by train_steps.
  NormalizeMode normalize = NormalizeMode::recorded;
  RegressionLoss regression;              ///< the regression loss (Session sets RunConfig::loss)
  Reduction reduction = Reduction::mean;  ///< mean or sum of the element losses (RunConfig::reduction)
  int max_k;
  Task task;
  Tensor x;                     ///< (b, H, W, C) or (b, D), b = micro_batch
  DeviceView<std::int32_t*> y;  ///< (b) class labels (classification)
  Tensor values;                ///< (b, T) targets (regression)
  DeviceView<float*> grad_sum;  ///< (arena) the update's gradient, summed over micro-batches (accumulate > 1)
  DeviceView<float*> loss;      ///< (max_k, accumulate) mean loss of each micro-batch of the last dispatch
  DeviceView<std::int32_t*> correct;  ///< (max_k, accumulate) correct predictions of each micro-batch
  DeviceView<double*> loss_partials;  ///< GPU builds: a regression loss's per-team sums (LossOutput::partials)
  MatmulPrecision precision = MatmulPrecision::fp32;  ///< of the run's matmuls (handed to the model's passes)
  /// A bf16 run's copy of its parameters, what its gemms read instead of rounding the weights in every product:
  /// made by its first train_steps or train_micro_step, rounded once at the start of each, then rewritten by every
  /// optimiser update in the pass that updates the parameters.
  DeviceView<std::uint16_t*> params16;
  /// false: a bf16 run keeps no such copy, and gemm rounds the weights in each product (the same bits, slower: for
  /// tests and benchmarks that compare the two).
  bool keep_bf16_params = true;
  /// train_micro_step: an update over calls takes the sum of their gradients (TorchFort's
  /// grad_accumulation_steps), not their mean.
  bool sum_over_calls = false;

  /// Optimiser steps taken, as the host counts them: dispatch advances it by K (the device's own count is `step`).
  std::int64_t host_step() const { return host_step_; }
  /// For code that enqueues train_steps itself (dispatch counts its own): k more steps.
  void count_steps(int k) { host_step_ += k; }

  /// Why the last failed capture failed ("" if none did).
  std::string const& capture_error() const { return capture_error_; }
  /// K-step programs kept (one per model, data, K, precision and stream; at most captured_program_capacity()).
  std::size_t captured_programs() const { return programs_.size(); }
  std::size_t captured_program_capacity() const { return programs_.capacity(); }
  /// Keeps at most `capacity` (>= 1) captured programs, the most recently used (default 8).
  void limit_captured_programs(std::size_t capacity) { programs_.set_capacity(capacity); }
  /// Captured programs destroyed to make room so far.
  std::int64_t evicted_programs() const { return programs_.evictions(); }

 private:
  // The training loop's own: the host's step count, the captured programs it replays, why a capture failed.
  friend DispatchPath dispatch(ExecSpace const& space, TrainState& state, Model& model, DeviceDataset const& data,
                               int k);
  friend class Session;  // restores the count from a checkpoint
  friend class Trainer;  // online steps share the run's count
  std::int64_t host_step_ = 0;
  ProgramCache programs_;
  std::string capture_error_;
};

/// Enqueues K complete steps on `space`: no fence, no host copy, no allocation (but in a bf16 run's first call,
/// which makes its parameters' bf16 copy: TrainState::params16).
void train_steps(ExecSpace const& space, TrainState& state, Model& model, DeviceDataset const& data, int k);

/// One call's part of an update that spans state.parallel.accumulate calls (TorchFort's grad_accumulation_steps):
/// the forward and backward pass of `data` (one micro-batch, all of it: data.count == state.micro_batch) as
/// micro-batch `j`, its gradient added into the update's sum; the call with j == accumulate - 1 allreduces the sum
/// and applies the update (refused, as train_steps refuses one, where a loss or the gradient is not finite).
/// Micro-batch j's loss goes to state.loss[j].
void train_micro_step(ExecSpace const& space, TrainState& state, Model& model, DeviceDataset const& data, int j);

/// Runs K steps: replays the captured K-step program for (model, data, K, precision, stream) where the backend,
/// the instance and the communicator can capture (recording it on the first such dispatch, after running it
/// plainly; MPI without NCCL waits for the host in every step, so it runs plainly), else train_steps. Advances
/// state.host_step(). Asynchronous.
DispatchPath dispatch(ExecSpace const& space, TrainState& state, Model& model, DeviceDataset const& data, int k);

/// Predictions for every sample of `inputs` (their targets are ignored), in batches, into `out` (N, width):
/// logits for classification, targets' units for regression. `out` may have any layout (an application's view).
class Predictor {
 public:
  Predictor(Model const& model, std::int64_t batch, Normalization norm);
  /// The same, its batch buffer allocated on `space`.
  Predictor(ExecSpace const& space, Model const& model, std::int64_t batch, Normalization norm);
  void run(ExecSpace const& space, Model& model, DeviceDataset const& inputs,
           Kokkos::View<float**, Kokkos::LayoutStride, MemSpace> const& out);
  /// The precision of the model's matmuls (default fp32; predictor_for sets the run's).
  void set_precision(MatmulPrecision p) { precision_ = p; }

 private:
  MatmulPrecision precision_ = MatmulPrecision::fp32;
  std::int64_t batch_;
  Normalization norm_;
  Tensor x_;
};

/// Per-step metrics of a dispatch.
struct StepMetrics {
  std::vector<float> loss;
  std::vector<std::int32_t> correct;
  std::int64_t refused = 0;  ///< updates the run's optimiser has refused so far (non-finite loss or gradient)
};
/// Reads the K metrics of the last dispatch back (waits for `space`, the instance that ran it; one transfer
/// each): per update, the mean loss over its micro-batches and ranks and the correct count of the whole global
/// batch (summed over ranks: a collective, so every rank calls it).
StepMetrics read_metrics(ExecSpace const& space, TrainState const& state, int k);

/// Loss and accuracy (classification) or the run's loss and the mean squared error (regression: accuracy NaN; the
/// loss is the MSE unless the run trains another) over a whole device-resident dataset, in batches, metrics
/// accumulated on the device. Every loss is the mean over the elements, whatever the training's reduction.
struct EvalResult {
  double loss = 0, accuracy = 0;
  std::int64_t count = 0;
  double mse = 0;  ///< regression
  double rmse() const { return std::sqrt(mse); }
};

class Evaluator {
 public:
  Evaluator(Model const& model, std::int64_t batch, Normalization norm, Task task = Task::classification);
  /// The same, its buffers allocated on `space`.
  Evaluator(ExecSpace const& space, Model const& model, std::int64_t batch, Normalization norm,
            Task task = Task::classification);
  EvalResult run(ExecSpace const& space, Model& model, DeviceDataset const& data);
  /// A regression's loss, evaluated beside the MSE (default: the MSE alone).
  void set_regression_loss(RegressionLoss loss) { regression_ = loss; }
  /// The precision of the model's matmuls (default fp32; evaluator_for sets the run's).
  void set_precision(MatmulPrecision p) { precision_ = p; }

 private:
  RegressionLoss regression_;
  MatmulPrecision precision_ = MatmulPrecision::fp32;
  std::int64_t batch_;
  Normalization norm_;
  Task task_;
  Tensor x_;
  DeviceView<std::int32_t*> y_;
  Tensor values_;
  DeviceView<float*> loss_;
  DeviceView<std::int32_t*> correct_;
  DeviceView<double*> partials_;  // GPU builds, regression: the loss's per-team sums
};

}  // namespace ktr
