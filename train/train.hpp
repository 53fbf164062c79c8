// The training loop: K complete optimiser steps per dispatch with no host synchronisation between them.
//
//   for k in 0..K-1:                       (all enqueued on one execution space instance)
//     gather_batch(step)   -> x (B, ...), targets: labels (B) or values (B, T)
//     out = model.forward(x)
//     loss[k], correct[k], dout = softmax_cross_entropy(out, labels) or mean_squared_error(out, values)
//     model.backward()     -> gradient arena
//     optimizer.update()   -> parameter arena, moments, step += 1
//   read loss[0..K), correct[0..K) back once
//
// On CUDA the K-step program is captured once per K and replayed; elsewhere the same kernels run as a loop.
#pragma once

#include "../backends/graph.hpp"
#include "../data/dataset.hpp"
#include "../models/model.hpp"
#include "../optim/optimizer.hpp"

#include <cmath>
#include <map>
#include <memory>
#include <vector>

namespace ktr {

/// Everything a run keeps on the device besides the model: optimiser state, step counter, batch buffers and
/// per-step metric arrays of length max_k. Allocated once.
struct TrainState {
  TrainState(Model const& model, OptimizerConfig const& opt, std::int64_t batch, std::uint64_t seed,
             Normalization norm, int max_k, Task task = Task::classification);

  Optimizer optimizer;
  Kokkos::View<std::int64_t, MemSpace> step;  ///< optimiser steps taken (device), also the data position
  std::int64_t host_step = 0;                 ///< the host's copy, advanced by K per dispatch
  std::int64_t batch;
  std::uint64_t seed;
  Normalization norm;
  int max_k;
  Task task;
  Tensor x;                           ///< (B, H, W, C) or (B, D)
  DeviceView<std::int32_t*> y;        ///< (B) class labels (classification)
  Tensor values;                      ///< (B, T) targets (regression)
  DeviceView<float*> loss;            ///< (max_k) mean loss of each step of the last dispatch
  DeviceView<std::int32_t*> correct;  ///< (max_k) correct predictions of each step of the last dispatch
  std::map<int, std::unique_ptr<CapturedProgram>> programs;  ///< captured K-step programs, by K
};

/// Enqueues K complete steps on `space`: no fence, no host copy, no allocation.
void train_steps(ExecSpace const& space, TrainState& state, Model& model, DeviceDataset const& data, int k);

/// Runs K steps: replays the captured K-step program where the backend has one (capturing it on the first
/// dispatch of this K after a plain warm-up), else train_steps. Advances state.host_step. Asynchronous.
void dispatch(ExecSpace const& space, TrainState& state, Model& model, DeviceDataset const& data, int k);

/// Predictions for every sample of `inputs` (their targets are ignored), in batches, into `out` (N, width):
/// logits for classification, targets' units for regression. `out` may have any layout (an application's view).
class Predictor {
 public:
  Predictor(Model const& model, std::int64_t batch, Normalization norm);
  void run(ExecSpace const& space, Model& model, DeviceDataset const& inputs,
           Kokkos::View<float**, Kokkos::LayoutStride, MemSpace> const& out);

 private:
  std::int64_t batch_;
  Normalization norm_;
  Tensor x_;
};

/// Per-step metrics of a dispatch.
struct StepMetrics {
  std::vector<float> loss;
  std::vector<std::int32_t> correct;
};
/// Reads the K metrics of the last dispatch back (waits for `space`, the instance that ran it; one transfer
/// each).
StepMetrics read_metrics(ExecSpace const& space, TrainState const& state, int k);

/// Loss and accuracy (classification) or mean squared error (regression: loss = MSE, accuracy NaN) over a whole
/// device-resident dataset, in batches, metrics accumulated on the device.
struct EvalResult {
  double loss = 0, accuracy = 0;
  std::int64_t count = 0;
  double rmse() const { return std::sqrt(loss); }
};

class Evaluator {
 public:
  Evaluator(Model const& model, std::int64_t batch, Normalization norm, Task task = Task::classification);
  EvalResult run(ExecSpace const& space, Model& model, DeviceDataset const& data);

 private:
  std::int64_t batch_;
  Normalization norm_;
  Task task_;
  Tensor x_;
  DeviceView<std::int32_t*> y_;
  Tensor values_;
  DeviceView<float*> loss_;
  DeviceView<std::int32_t*> correct_;
};

}  // namespace ktr
