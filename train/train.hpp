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
// On CUDA (and HIP with Kokkos Kernels 4.x) the K-step program is captured once per (model, data, K, precision)
// on the caller's stream and replayed; elsewhere, and on the null stream, the same kernels run as a loop.
#pragma once

#include "../backends/graph.hpp"
#include "../data/dataset.hpp"
#include "../models/model.hpp"
#include "../optim/optimizer.hpp"

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ktr {

/// What a captured K-step program was built from: a program replays the device addresses it recorded, so a
/// different model, dataset, K or gemm precision needs a program of its own.
struct ProgramKey {
  std::uintptr_t model = 0, params = 0, grads = 0;  ///< the model object and its arenas
  std::uintptr_t features = 0, targets = 0;         ///< the dataset's device views
  std::int64_t count = 0, feature_stride = 0;       ///< samples, and the stride between them
  int k = 0;
  int precision = 0;  ///< MatmulPrecision
  ProgramKey(Model const& model, DeviceDataset const& data, int k);
  bool operator<(ProgramKey const& o) const;
};

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
  std::map<ProgramKey, std::unique_ptr<CapturedProgram>> programs;  ///< captured K-step programs
  std::string capture_error;  ///< why the last failed capture failed ("" if none did)
};

/// Enqueues K complete steps on `space`: no fence, no host copy, no allocation.
void train_steps(ExecSpace const& space, TrainState& state, Model& model, DeviceDataset const& data, int k);

/// How a dispatch ran its K steps.
enum class DispatchPath {
  plain,           ///< train_steps: the backend or the instance (null stream) cannot capture
  captured,        ///< train_steps, then the program was recorded: later dispatches of this key replay it
  replayed,        ///< the captured program was launched
  capture_failed,  ///< train_steps; capturing failed (state.capture_error says why): this key stays plain
};
char const* dispatch_path_name(DispatchPath path);

/// Runs K steps: replays the captured K-step program for (model, data, K, precision) where the backend and the
/// instance can capture (recording it on the first such dispatch, after running it plainly), else train_steps.
/// Advances state.host_step. Asynchronous.
DispatchPath dispatch(ExecSpace const& space, TrainState& state, Model& model, DeviceDataset const& data, int k);

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
