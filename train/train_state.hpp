// A run's device state besides the model: optimiser state, step counter, batch buffers, per-step metrics, the
// captured programs; how ranks and micro-batches share an update; how a dispatch ran.
#pragma once

#include "../backends/collective.hpp"
#include "../backends/precision.hpp"
#include "../data/dataset.hpp"
#include "../models/loss.hpp"
#include "../models/model.hpp"
#include "../optim/optimizer.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace ktr {

class ProgramCache;
class SobolevLoss;

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
             InputTransform transform, int max_k, Task task = Task::classification, Parallelism parallel = {});
  /// The same, every buffer allocated (and zeroed) on `space`.
  TrainState(ExecSpace const& space, Model const& model, OptimizerConfig const& opt, std::int64_t batch,
             std::uint64_t seed, InputTransform transform, int max_k, Task task = Task::classification,
             Parallelism parallel = {});
  ~TrainState();
  TrainState(TrainState const&) = delete;
  TrainState& operator=(TrainState const&) = delete;

  Optimizer optimizer;
  Kokkos::View<std::int64_t, MemSpace> step;  ///< optimiser steps taken (device), also the data position
  std::int64_t batch;                         ///< samples per update, over all ranks and micro-batches
  Parallelism parallel;
  std::int64_t micro_batch;  ///< samples of one rank's micro-batch: batch / (ranks * accumulate)
  std::uint64_t seed;
  InputTransform input_transform;
  /// What `input_transform` claims to be (Session sets RunConfig::normalize): float features under a run that
  /// claims `standard` or `none` but still holds the unfitted pixel transform (x / 255) are refused by
  /// train_steps.
  InputTransformMode normalize = InputTransformMode::recorded;
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
  /// Sobolev training (train/sobolev.hpp; Session makes it for RunConfig::derivatives): the batch's raw inputs
  /// go through the model's jet, `values` holds (b, m (1 + T)) targets, and the loss is of values and derivatives.
  std::shared_ptr<SobolevLoss> sobolev;

  /// Optimiser steps taken, as the host counts them: dispatch advances it by K (the device's own count is `step`).
  std::int64_t host_step() const { return host_step_; }
  /// For code that enqueues train_steps itself (dispatch counts its own): k more steps.
  void count_steps(int k) { host_step_ += k; }

  /// Why the last failed capture failed ("" if none did).
  std::string const& capture_error() const { return capture_error_; }
  /// K-step programs kept (one per model, data, K, precision and stream; at most captured_program_capacity()).
  std::size_t captured_programs() const;
  std::size_t captured_program_capacity() const;
  /// Keeps at most `capacity` (>= 1) captured programs, the most recently used (default 8).
  void limit_captured_programs(std::size_t capacity);
  /// Captured programs destroyed to make room so far.
  std::int64_t evicted_programs() const;

 private:
  // The training loop's own: the host's step count, the captured programs it replays, why a capture failed.
  friend DispatchPath dispatch(ExecSpace const& space, TrainState& state, Model& model, DeviceDataset const& data,
                               int k);
  friend class Session;  // restores the count from a checkpoint
  friend class Trainer;  // online steps share the run's count
  std::int64_t host_step_ = 0;
  std::unique_ptr<ProgramCache> programs_;  // program_cache.hpp (internal: the capture machinery)
  std::string capture_error_;
};

}  // namespace ktr
