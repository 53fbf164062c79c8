// Sobolev training: float targets that carry, beside each output's value, its derivatives with respect to the raw
// inputs (the columns of a JetSpec), and a loss of both, in the training loop and the evaluation of every run.
//
//   targets (N, m, 1 + T): [n, k, 0] output k's value, [n, k, 1 + t] its derivative by token t of the spec
//   loss = mean_nk (u_nk - y_nk0)^2 + weight * mean_nkt (d_nkt - y_nk(1+t))^2      (Reduction::sum: sums)
//
// A step gathers the batch's raw inputs (the jet applies the run's input transform itself, so the derivatives are
// with respect to the inputs as given), runs the jet forward (models/jet.hpp), the loss with its seeds in one
// kernel, and the jet's reverse pass into the gradient arena: no allocation, nothing read back, so K such steps
// run (and are captured) as any others. Models: what Jet takes (dense layers, flatten; second derivatives only
// through smooth activations), fp32.
#pragma once

#include "../data/dataset.hpp"
#include "../models/jet.hpp"
#include "../models/loss.hpp"

#include <cstdint>
#include <limits>
#include <memory>
#include <string>

namespace ktr {

/// The target columns per output of a run whose derivative spec is `spec`, for a model of `inputs` inputs: 1 + its
/// tokens (1 for no spec). Throws UsageError naming a bad token.
int sobolev_columns(std::string const& spec, std::int64_t inputs);

class SobolevLoss {
 public:
  /// For `model` and batches of up to `batch` points. Throws UsageError naming the token or the layer the jet
  /// refuses.
  SobolevLoss(ExecSpace const& space, Model const& model, std::string const& spec, float weight,
              std::int64_t batch);

  JetSpec const& spec() const { return jet_.spec(); }
  float weight() const { return weight_; }
  /// Target columns per output: 1 + the spec's tokens.
  int columns() const { return int(jet_.spec().size()) + 1; }
  /// What the batch's inputs are gathered with: none (x as given).
  InputTransform const& raw() const { return raw_; }

  /// The batch's raw inputs x (b, d) and targets (b, m (1 + T)): the model's value and derivatives under
  /// `transform`, then the loss (reduced as out.reduction) to out.loss[out.index], and the loss's parameter
  /// gradient written to `grads` (arena layout). With out.accumulate (evaluation) nothing is differentiated: the
  /// values' squared errors are added to out.loss[out.index], the derivatives' to out.loss[out.index + 1].
  void pass(ExecSpace const& space, Model const& model, InputTransform const& transform, Tensor const& x,
            Tensor const& targets, LossOutput const& out, DeviceView<float*> const& grads);

 private:
  Jet<float> jet_;
  float weight_;
  InputTransform raw_ = InputTransform::identity();
  Kokkos::View<float*, MemSpace> scale_, shift_;                       // a scalar transform, per input
  float spread_[2] = {std::numeric_limits<float>::quiet_NaN(), 0.0f};  // the scale and shift scale_, shift_ hold
  JetMatrix<float> u_, u_seed_;
  JetCube<float> derivs_, derivs_seed_;
};

struct TrainState;
/// Makes `state` train on Sobolev targets (RunConfig::derivatives `spec`, weighted `weight`): its SobolevLoss for
/// its micro-batch and room for targets (b, m (1 + T)). Throws UsageError "derivatives: ..." naming a token or a
/// layer the jet refuses.
void train_on_derivatives(ExecSpace const& space, TrainState& state, Model const& model, std::string const& spec,
                          float weight);

}  // namespace ktr
