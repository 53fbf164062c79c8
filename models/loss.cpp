// Softmax cross-entropy: one team sweeps the rows; each row is max-shifted before exp (log-softmax).
#include "loss.hpp"

#include "../backends/kokkos_compat.hpp"
#include "../core/error.hpp"
#include "../core/parse.hpp"

#include <algorithm>
#include <limits>
#include <sstream>

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
  bool const sum_reduction = out.reduction == Reduction::sum;
  float const inv_rows = sum_reduction ? 1.0f : 1.0f / float(rows);
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

char const* reduction_name(Reduction r) { return r == Reduction::sum ? "sum" : "mean"; }

Reduction parse_reduction(std::string const& text, std::string const& what) {
  if (text == "mean") return Reduction::mean;
  if (text == "sum") return Reduction::sum;
  throw Error(what + ": '" + escaped(text) + "' is not a reduction (mean, sum)");
}

RegressionLoss RegressionLoss::parse(std::string const& text, std::string const& what) {
  RegressionLoss l;
  if (text == "mse") return l;
  if (text == "l1" || text == "bce") {
    l.kind = text == "l1" ? Kind::l1 : Kind::bce;
    return l;
  }
  if (text == "huber" || text.rfind("huber:", 0) == 0) {
    l.kind = Kind::huber;
    if (text.size() > 6) {
      double d = 0;
      KTR_REQUIRE(parse_number(text.substr(6), 1e-30, 1e30, d), what,
                  "huber's delta in '" + escaped(text) + "' is not a number > 0");
      l.delta = float(d);
    }
    return l;
  }
  throw Error(what + ": '" + escaped(text) + "' is not a regression loss (mse, l1, huber[:DELTA], bce)");
}

LossChoice LossChoice::parse(std::string const& text, std::string const& what) {
  LossChoice c;
  if (text == "default") return c;
  if (text == "cross_entropy") {
    c.kind = Kind::cross_entropy;
    return c;
  }
  c.kind = Kind::regression;
  c.regression = RegressionLoss::parse(text, what);
  return c;
}

std::string LossChoice::str() const {
  return kind == Kind::by_targets ? "default" : kind == Kind::cross_entropy ? "cross_entropy" : regression.str();
}

std::string LossChoice::mismatch(bool labels) const {
  if (kind == Kind::regression && labels) return "loss " + str() + " needs float targets, the labels are integers";
  if (kind == Kind::cross_entropy && !labels)
    return "loss cross_entropy needs integer class labels, the targets are floats";
  return "";
}

std::string RegressionLoss::str() const {
  switch (kind) {
    case Kind::mse:
      return "mse";
    case Kind::l1:
      return "l1";
    case Kind::bce:
      return "bce";
    case Kind::huber: {
      std::ostringstream o;
      o.precision(std::numeric_limits<float>::max_digits10);
      o << "huber:" << delta;
      return o.str();
    }
  }
  return "mse";
}

namespace {

// One element of a regression loss: its loss, and (where dp is given) d loss / d pred written as it goes.
struct Element {
  RegressionLoss::Kind k;
  double delta, inv_n;
  float const* p;
  float const* y;
  float* dp;
  KOKKOS_INLINE_FUNCTION double operator()(std::int64_t i) const {
    double const e = double(p[i]) - double(y[i]);
    double const a = e < 0 ? -e : e, sign = e > 0 ? 1.0 : (e < 0 ? -1.0 : 0.0);
    double l = 0, g = 0;                   // the element's loss and d loss / d pred
    if (k == RegressionLoss::Kind::bce) {  // stable for any logit: no exp of a positive number
      double const z = p[i], az = z < 0 ? -z : z, ez = compat::exp(-az);
      l = (z > 0 ? z : 0.0) - z * double(y[i]) + compat::log1p(ez);
      g = (z >= 0 ? 1.0 / (1.0 + ez) : ez / (1.0 + ez)) - double(y[i]);  // sigmoid(z) - y
    } else if (k == RegressionLoss::Kind::mse) {
      l = e * e, g = 2.0 * e;
    } else if (k == RegressionLoss::Kind::l1) {
      l = a, g = sign;
    } else if (a <= delta) {
      l = 0.5 * e * e, g = e;
    } else {
      l = delta * (a - 0.5 * delta), g = delta * sign;
    }
    if (dp) dp[i] = float(g * inv_n);
    return l;
  }
};

// Writes a regression loss's metric from the sum over its elements.
struct Metric {
  DeviceView<float*> loss;
  DeviceView<std::int32_t*> correct;
  int index;
  bool accumulate;
  std::int64_t rows;
  double inv_n;
  KOKKOS_INLINE_FUNCTION void operator()(double sum) const {
    if (accumulate) {
      loss(index) += float(sum);
      correct(index) += int(rows);
    } else {
      loss(index) = float(sum * inv_n);
      correct(index) = 0;
    }
  }
};

}  // namespace

void regression_loss(ExecSpace const& space, RegressionLoss kind, Tensor const& pred, Tensor const& targets,
                     Tensor const& dpred, LossOutput const& out) {
  // Predictions (B, T) or a field (B, H, W, C); targets the same values per sample, flattened or not.
  KTR_REQUIRE(pred.shape().rank >= 2, "ktr::regression_loss", "predictions must be (B, ...)");
  KTR_REQUIRE(targets.shape()[0] == pred.shape()[0] && targets.size() == pred.size(), "ktr::regression_loss",
              "targets " + targets.shape().str() + " do not match predictions " + pred.shape().str());
  bool const want_grad = dpred.size() > 0;
  KTR_REQUIRE(!want_grad || dpred.shape() == pred.shape(), "ktr::regression_loss",
              "dpred must match predictions " + pred.shape().str());
  std::int64_t const rows = pred.shape()[0], n = pred.size();
  float const* p = pred.data();
  float const* y = targets.data();
  float* dp = want_grad ? dpred.data() : nullptr;
  auto loss = out.loss;
  auto correct = out.correct;
  int const index = out.index;
  bool const accumulate = out.accumulate;
  double const inv_n = out.reduction == Reduction::sum ? 1.0 : 1.0 / double(n);
  Element const element{kind.kind, double(kind.delta), inv_n, p, y, dp};
  using Team = Kokkos::TeamPolicy<ExecSpace>::member_type;
  Metric const write{loss, correct, index, accumulate, rows, inv_n};
  if (out.partials.extent(0) > 0 && n >= kLossSplitElements) {
    // Many elements (a field): each of `teams` teams sums a contiguous chunk into its partial, then one team sums
    // the partials in order. The chunks depend on n alone, so a replayed program sums bit for bit as the plain
    // one.
    std::int64_t const teams = std::min<std::int64_t>(std::int64_t(out.partials.extent(0)), n / 4096 + 1);
    std::int64_t const chunk = (n + teams - 1) / teams;
    DeviceView<double*> const partials = out.partials;
    Kokkos::parallel_for(
        "ktr::loss::regression_partials", Kokkos::TeamPolicy<ExecSpace>(space, int(teams), Kokkos::AUTO),
        KOKKOS_LAMBDA(Team const& team) {
          std::int64_t const begin = team.league_rank() * chunk, end = begin + chunk < n ? begin + chunk : n;
          double sum = 0.0;
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(team, begin, end), [&](std::int64_t i, double& acc) { acc += element(i); },
              sum);
          Kokkos::single(Kokkos::PerTeam(team), [&] { partials(team.league_rank()) = sum; });
        });
    Kokkos::parallel_for(
        "ktr::loss::regression_total", Kokkos::TeamPolicy<ExecSpace>(space, 1, Kokkos::AUTO),
        KOKKOS_LAMBDA(Team const& team) {
          double sum = 0.0;
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(team, teams), [&](std::int64_t t, double& acc) { acc += partials(t); }, sum);
          Kokkos::single(Kokkos::PerTeam(team), [&] { write(sum); });
        });
    return;
  }
  // One team, as the cross-entropy: it finishes the reduction and writes the metric in the same kernel.
  Kokkos::parallel_for(
      "ktr::loss::regression", Kokkos::TeamPolicy<ExecSpace>(space, 1, Kokkos::AUTO),
      KOKKOS_LAMBDA(Team const& team) {
        double sum = 0.0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, n), [&](std::int64_t i, double& acc) { acc += element(i); }, sum);
        Kokkos::single(Kokkos::PerTeam(team), [&] { write(sum); });
      });
}

void mean_squared_error(ExecSpace const& space, Tensor const& pred, Tensor const& targets, Tensor const& dpred,
                        LossOutput const& out) {
  regression_loss(space, RegressionLoss{}, pred, targets, dpred, out);
}

}  // namespace ktr
