// Evaluation (loss, accuracy, MSE) and prediction over a whole device-resident dataset, in batches.
#pragma once

#include "../backends/precision.hpp"
#include "../data/dataset.hpp"
#include "../models/loss.hpp"
#include "../models/model.hpp"

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>

namespace ktr {

/// Predictions for every sample of `inputs` (their targets are ignored), in batches, into `out` (N, width):
/// logits for classification, targets' units for regression. `out` may have any layout (an application's view).
class Predictor {
 public:
  Predictor(Model const& model, std::int64_t batch, InputTransform transform);
  /// The same, its batch buffer allocated on `space`.
  Predictor(ExecSpace const& space, Model const& model, std::int64_t batch, InputTransform transform);
  void run(ExecSpace const& space, Model& model, DeviceDataset const& inputs,
           Kokkos::View<float**, Kokkos::LayoutStride, MemSpace> const& out);
  /// The precision of the model's matmuls (default fp32; predictor_for sets the run's).
  void set_precision(MatmulPrecision p) { precision_ = p; }

 private:
  MatmulPrecision precision_ = MatmulPrecision::fp32;
  std::int64_t batch_;
  InputTransform norm_;
  Tensor x_;
};

/// Loss and accuracy (classification) or the run's loss and the mean squared error (regression: accuracy NaN; the
/// loss is the MSE unless the run trains another) over a whole device-resident dataset, in batches, metrics
/// accumulated on the device. Every loss is the mean over the elements, whatever the training's reduction.
struct EvalResult {
  double loss = 0, accuracy = 0;
  std::int64_t count = 0;
  double mse = 0;  ///< regression (of the values alone where the targets carry derivatives)
  double rmse() const { return std::sqrt(mse); }
  /// Sobolev targets (Evaluator::set_derivatives): the mean squared error of the derivatives; the loss is then
  /// mse + weight * derivative_mse.
  bool derivatives = false;
  double derivative_mse = 0;
};

class SobolevLoss;

class Evaluator {
 public:
  Evaluator(Model const& model, std::int64_t batch, InputTransform transform, Task task = Task::classification);
  /// The same, its buffers allocated on `space`.
  Evaluator(ExecSpace const& space, Model const& model, std::int64_t batch, InputTransform transform,
            Task task = Task::classification);
  EvalResult run(ExecSpace const& space, Model& model, DeviceDataset const& data);
  /// A regression's loss, evaluated beside the MSE (default: the MSE alone).
  void set_regression_loss(RegressionLoss loss) { regression_ = loss; }
  /// The precision of the model's matmuls (default fp32; evaluator_for sets the run's).
  void set_precision(MatmulPrecision p) { precision_ = p; }
  /// Sobolev targets (train/sobolev.hpp): the data's targets carry the derivatives `spec` after each value, and
  /// the result gives their mean squared error beside the values'. Buffers are allocated on `space`; throws
  /// UsageError naming a token or a layer the jet refuses.
  void set_derivatives(ExecSpace const& space, Model const& model, std::string const& spec, float weight);

 private:
  EvalResult run_sobolev(ExecSpace const& space, Model& model, DeviceDataset const& data);

  std::shared_ptr<SobolevLoss> sobolev_;
  RegressionLoss regression_;
  MatmulPrecision precision_ = MatmulPrecision::fp32;
  std::int64_t batch_;
  InputTransform norm_;
  Task task_;
  Tensor x_;
  DeviceView<std::int32_t*> y_;
  Tensor values_;
  DeviceView<float*> loss_;
  DeviceView<std::int32_t*> correct_;
  DeviceView<double*> partials_;  // GPU builds, regression: the loss's per-team sums
};

}  // namespace ktr
