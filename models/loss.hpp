// The losses, each one kernel whose results stay in device memory: softmax cross-entropy with integer labels
// (through a stable log-softmax, with the count of correct predictions) and the mean squared error of regression.
#pragma once

#include "../core/tensor.hpp"

#include <string>

namespace ktr {

/// How a batch's element losses become the loss: their mean (over the B rows for cross-entropy, over the B x T
/// elements for the others) or their sum. The gradient is that of the reduced loss.
enum class Reduction { mean, sum };
char const* reduction_name(Reduction r);
/// "mean" or "sum"; throws ktr::Error naming `what` otherwise.
Reduction parse_reduction(std::string const& text, std::string const& what = "loss_reduction");

/// Where the loss kernel writes: entry `index` of per-step metric arrays in device memory.
struct LossOutput {
  DeviceView<float*> loss;            ///< the reduced loss of the batch (or, with accumulate, the running sum)
  DeviceView<std::int32_t*> correct;  ///< number of rows whose argmax equals the label
  int index = 0;
  bool accumulate = false;  ///< add the batch's loss *sum* and count instead of storing the reduced loss/count
  Reduction reduction = Reduction::mean;
  /// Room for the per-team partial sums of a regression loss over many elements (a field's millions): where it is
  /// given (GPU runs give kLossPartials) and the batch has at least kLossSplitElements, the sum runs over many
  /// teams, then one (the same teams whatever the call: deterministic). Empty: one team sums everything.
  DeviceView<double*> partials = {};
};

/// A GPU run's room for a regression loss's partial sums (LossOutput::partials), and the elements from which the
/// sum is split over teams.
constexpr std::int64_t kLossPartials = 1024;
constexpr std::int64_t kLossSplitElements = std::int64_t(1) << 16;

/// logits (B, C), labels (B) in [0, C). loss_b = logsumexp(z_b) - z_b[y_b]; writes mean_b loss_b (or the sum) and
/// the correct count to `out`, and, if dlogits is non-empty, dlogits = (softmax(z) - onehot(y)) / B (or not
/// divided, for the sum).
void softmax_cross_entropy(ExecSpace const& space, Tensor const& logits,
                           DeviceView<const std::int32_t*> const& labels, Tensor const& dlogits,
                           LossOutput const& out);

/// A loss of float targets, per element: of the error e = pred - y, mse (e^2), l1 (|e|), or huber with `delta`
/// (e^2 / 2 where |e| <= delta, delta (|e| - delta / 2) beyond: optax.huber_loss); or bce, the sigmoid binary
/// cross-entropy of logits z and targets y in [0, 1] (multi-label: max(z, 0) - z y + log1p(e^-|z|), as
/// optax.sigmoid_binary_cross_entropy).
struct RegressionLoss {
  enum class Kind { mse, l1, huber, bce };
  Kind kind = Kind::mse;
  float delta = 1.0f;  ///< huber
  /// "mse", "l1", "huber", "huber:DELTA" (DELTA > 0) or "bce"; throws ktr::Error naming `what` otherwise.
  static RegressionLoss parse(std::string const& text, std::string const& what = "loss");
  std::string str() const;  ///< parse(str()) gives the same loss back
};

/// The loss a configuration asks for: the targets' default (cross-entropy for class labels, mse for float
/// targets), cross-entropy, or a regression loss; checked against the data's targets once they are known.
struct LossChoice {
  enum class Kind { by_targets, cross_entropy, regression };
  Kind kind = Kind::by_targets;
  RegressionLoss regression;  ///< Kind::regression
  /// "default", "cross_entropy" or a RegressionLoss ("mse", "l1", "huber[:DELTA]", "bce"); throws ktr::Error
  /// naming `what` otherwise.
  static LossChoice parse(std::string const& text, std::string const& what = "loss");
  std::string str() const;  ///< parse(str()) gives the same choice back
  /// "" if the choice fits targets that are class labels (`labels`) or float values, else why not.
  std::string mismatch(bool labels) const;
};

/// Regression: pred (B, T), targets (B, T): `kind`'s loss (accumulated in double), reduced as out.reduction, to
/// `out` (with accumulate: the sum, and B to the count), and, if dpred is non-empty, its gradient (for mse and
/// the mean 2 (pred - y) / (B T)).
void regression_loss(ExecSpace const& space, RegressionLoss kind, Tensor const& pred, Tensor const& targets,
                     Tensor const& dpred, LossOutput const& out);

/// Regression: pred (B, T), targets (B, T). loss = mean over b and t of (pred - y)^2 (accumulated in double);
/// writes it to `out` (with accumulate: adds the sum of squared errors, and B to the count), and, if dpred is
/// non-empty, dpred = 2 (pred - y) / (B T). `correct` receives nothing else.
void mean_squared_error(ExecSpace const& space, Tensor const& pred, Tensor const& targets, Tensor const& dpred,
                        LossOutput const& out);

}  // namespace ktr
