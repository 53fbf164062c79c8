// Softmax cross-entropy: one team sweeps the rows; each row is max-shifted before exp (log-softmax).
#include "loss.hpp"

#include "../backends/kokkos_compat.hpp"
#include "../core/error.hpp"

namespace ktr {

namespace {
/// Index of the largest of row[0..classes) (the first one on ties).
KOKKOS_INLINE_FUNCTION int argmax(float const* row, int classes) {
  int best = 0;
  for (int c = 1; c < classes; ++c)
    if (row[c] > row[best]) best = c;
  return best;
}
}  // namespace

void softmax_cross_entropy(ExecSpace const& space, Tensor const& logits,
                           DeviceView<const std::int32_t*> const& labels, Tensor const& dlogits,
                           LossOutput const& out) {
  KTR_REQUIRE(logits.shape().rank == 2, "ktr::softmax_cross_entropy", "logits must be (B, C)");
  int const rows = static_cast<int>(logits.shape()[0]), classes = static_cast<int>(logits.shape()[1]);
  KTR_REQUIRE(static_cast<int>(labels.extent(0)) >= rows, "ktr::softmax_cross_entropy", "fewer labels than rows");
  bool const want_grad = dlogits.size() > 0;
  KTR_REQUIRE(!want_grad || dlogits.shape() == logits.shape(), "ktr::softmax_cross_entropy",
              "dlogits must match logits " + logits.shape().str());
  float const* z = logits.data();
  float* dz = want_grad ? dlogits.data() : nullptr;
  auto loss = out.loss;
  auto correct = out.correct;
  int const index = out.index;
  bool const accumulate = out.accumulate;
  float const inv_rows = 1.0f / float(rows);
  using Team = Kokkos::TeamPolicy<ExecSpace>::member_type;
  // One team: B is a batch (hundreds of rows of ~10 classes), and a single team can finish the reduction and
  // write the metric without a second kernel or a reduction result on the host.
  Kokkos::parallel_for(
      "ktr::loss::softmax_cross_entropy", Kokkos::TeamPolicy<ExecSpace>(space, 1, Kokkos::AUTO),
      KOKKOS_LAMBDA(Team const& team) {
        double loss_sum = 0.0;
        int hits = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, rows),
            [&](int b, double& acc) {
              float const* row = z + std::int64_t(b) * classes;
              float const shift = row[argmax(row, classes)];
              double sum = 0.0;
              for (int c = 0; c < classes; ++c) sum += compat::exp(double(row[c] - shift));
              double const lse = compat::log(sum);  // log-sum-exp of the shifted row
              int const y = labels(b);
              acc += lse - double(row[y] - shift);
              if (dz) {
                float* grow = dz + std::int64_t(b) * classes;
                for (int c = 0; c < classes; ++c) {
                  double const p = compat::exp(double(row[c] - shift) - lse);
                  grow[c] = float((p - (c == y ? 1.0 : 0.0)) * inv_rows);
                }
              }
            },
            loss_sum);
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, rows),
            [&](int b, int& acc) { acc += argmax(z + std::int64_t(b) * classes, classes) == labels(b) ? 1 : 0; },
            hits);
        Kokkos::single(Kokkos::PerTeam(team), [&] {
          if (accumulate) {
            loss(index) += float(loss_sum);
            correct(index) += hits;
          } else {
            loss(index) = float(loss_sum * inv_rows);
            correct(index) = hits;
          }
        });
      });
}

void mean_squared_error(ExecSpace const& space, Tensor const& pred, Tensor const& targets, Tensor const& dpred,
                        LossOutput const& out) {
  KTR_REQUIRE(pred.shape().rank == 2, "ktr::mean_squared_error", "predictions must be (B, T)");
  KTR_REQUIRE(targets.shape() == pred.shape(), "ktr::mean_squared_error",
              "targets " + targets.shape().str() + " do not match predictions " + pred.shape().str());
  bool const want_grad = dpred.size() > 0;
  KTR_REQUIRE(!want_grad || dpred.shape() == pred.shape(), "ktr::mean_squared_error",
              "dpred must match predictions " + pred.shape().str());
  std::int64_t const rows = pred.shape()[0], n = pred.size();
  float const* p = pred.data();
  float const* y = targets.data();
  float* dp = want_grad ? dpred.data() : nullptr;
  auto loss = out.loss;
  auto correct = out.correct;
  int const index = out.index;
  bool const accumulate = out.accumulate;
  double const inv_n = 1.0 / double(n);
  using Team = Kokkos::TeamPolicy<ExecSpace>::member_type;
  // One team, as the cross-entropy: it finishes the reduction and writes the metric in the same kernel.
  Kokkos::parallel_for(
      "ktr::loss::mean_squared_error", Kokkos::TeamPolicy<ExecSpace>(space, 1, Kokkos::AUTO),
      KOKKOS_LAMBDA(Team const& team) {
        double sum = 0.0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, n),
            [&](std::int64_t i, double& acc) {
              double const e = double(p[i]) - double(y[i]);
              acc += e * e;
              if (dp) dp[i] = float(2.0 * e * inv_n);
            },
            sum);
        Kokkos::single(Kokkos::PerTeam(team), [&] {
          if (accumulate) {
            loss(index) += float(sum);
            correct(index) += int(rows);
          } else {
            loss(index) = float(sum * inv_n);
            correct(index) = 0;
          }
        });
      });
}

}  // namespace ktr
