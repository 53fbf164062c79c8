// The losses, each one kernel whose results stay in device memory: softmax cross-entropy with integer labels
// (through a stable log-softmax, with the count of correct predictions) and the mean squared error of regression.
#pragma once

#include "../core/tensor.hpp"

namespace ktr {

/// Where the loss kernel writes: entry `index` of per-step metric arrays in device memory.
struct LossOutput {
  DeviceView<float*> loss;            ///< mean loss over the batch (or, with accumulate, the running sum)
  DeviceView<std::int32_t*> correct;  ///< number of rows whose argmax equals the label
  int index = 0;
  bool accumulate = false;  ///< add the batch's loss *sum* and count instead of storing mean/count
};

/// logits (B, C), labels (B) in [0, C). loss_b = logsumexp(z_b) - z_b[y_b]; writes mean_b loss_b and the correct
/// count to `out`, and, if dlogits is non-empty, dlogits = (softmax(z) - onehot(y)) / B.
void softmax_cross_entropy(ExecSpace const& space, Tensor const& logits,
                           DeviceView<const std::int32_t*> const& labels, Tensor const& dlogits,
                           LossOutput const& out);

/// Regression: pred (B, T), targets (B, T). loss = mean over b and t of (pred - y)^2 (accumulated in double);
/// writes it to `out` (with accumulate: adds the sum of squared errors, and B to the count), and, if dpred is
/// non-empty, dpred = 2 (pred - y) / (B T). `correct` receives nothing else.
void mean_squared_error(ExecSpace const& space, Tensor const& pred, Tensor const& targets, Tensor const& dpred,
                        LossOutput const& out);

}  // namespace ktr
