// Training and inference on an application's own views: LayoutRight, LayoutLeft and strided subviews give the
// same batches and the same trajectory, nothing of the caller's data is copied, regression (MSE) learns, the
// per-feature input transform matches the host, and a trained model predicts into the caller's view.
#include "reference.hpp"

#include <ktr/backends/tools_counter.hpp>
#include <ktr/ktr.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

namespace {

using ktr::DeviceDataset;
using ktr::RunConfig;
using ktr::Session;

constexpr std::int64_t N = 240, D = 6, T = 2;

// Host data for a smooth regression: y = (sum_d w_d x_d, prod of two features), features of mixed scales.
void host_problem(std::vector<float>& x, std::vector<float>& y, std::vector<std::int32_t>& labels,
                  std::int64_t N = ::N) {
  std::mt19937 rng(3);
  std::normal_distribution<float> g(0.0f, 1.0f);
  x.resize(N * D), y.resize(N * T), labels.resize(N);
  for (std::int64_t n = 0; n < N; ++n) {
    for (std::int64_t d = 0; d < D; ++d) x[std::size_t(n * D + d)] = g(rng) * float(1 + 10 * d) + float(d);
    float const a = x[std::size_t(n * D)], b = x[std::size_t(n * D + 1)] / 11.0f;
    y[std::size_t(n * T)] = 0.5f * a - 0.25f * b + 1.0f;
    y[std::size_t(n * T + 1)] = a * b * 0.1f;
    labels[std::size_t(n)] = (a > 0) + 2 * (b > 0);
  }
}

// The host data in a device view of the given layout (filled element by element through a mirror).
template <class Layout>
Kokkos::View<float**, Layout, ktr::MemSpace> device_matrix(std::vector<float> const& v, std::int64_t rows,
                                                           std::int64_t cols) {
  Kokkos::View<float**, Layout, ktr::MemSpace> m("test::matrix", rows, cols);
  auto h = Kokkos::create_mirror_view(m);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) h(i, j) = v[std::size_t(i * cols + j)];
  Kokkos::deep_copy(m, h);
  return m;
}

RunConfig regression_config() {
  RunConfig c;
  c.model = "in=6 dense:32:relu dense:2";
  c.task = ktr::Task::regression;
  c.batch = 24;
  c.seed = 9;
  c.optimizer.lr = 1e-2f;
  return c;
}

std::vector<float> train_losses(DeviceDataset const& data, int dispatches, int k) {
  ktr::ExecSpace space;
  RunConfig c = regression_config();
  c.input_transform = ktr::fit_input_transform(space, data, ktr::InputTransformMode::standard);
  Session s(c, k);
  std::vector<float> losses;
  for (int i = 0; i < dispatches; ++i) {
    ktr::dispatch(space, s.state(), s.model(), data, k);
    auto const m = ktr::read_metrics(space, s.state(), k);
    losses.insert(losses.end(), m.loss.begin(), m.loss.end());
  }
  return losses;
}

TEST(CallerData, LayoutRightLayoutLeftAndStridedSubviewsGiveTheSameTrajectory) {
  std::vector<float> x, y;
  std::vector<std::int32_t> labels;
  host_problem(x, y, labels);
  ktr::ExecSpace space;
  auto xr = device_matrix<Kokkos::LayoutRight>(x, N, D);
  auto yr = device_matrix<Kokkos::LayoutRight>(y, N, T);
  auto xl = device_matrix<Kokkos::LayoutLeft>(x, N, D);
  auto yl = device_matrix<Kokkos::LayoutLeft>(y, N, T);
  // A strided window: the features are columns 1..D of a wider array, every sample a row.
  std::vector<float> wide(std::size_t(N * (D + 3)), -7.0f);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t d = 0; d < D; ++d) wide[std::size_t(n * (D + 3) + 1 + d)] = x[std::size_t(n * D + d)];
  auto big = device_matrix<Kokkos::LayoutRight>(wide, N, D + 3);
  auto xs = Kokkos::subview(big, Kokkos::ALL, std::make_pair(1, int(D) + 1));
  ASSERT_EQ(xs.stride(0), std::size_t(D + 3));

  auto const right = train_losses(ktr::dataset_from_views(space, xr, yr), 3, 8);
  auto const left = train_losses(ktr::dataset_from_views(space, xl, yl), 3, 8);
  auto const strided = train_losses(ktr::dataset_from_views(space, xs, yl), 3, 8);
  ASSERT_EQ(right.size(), 24u);
  for (std::size_t i = 0; i < right.size(); ++i) {
    EXPECT_EQ(right[i], left[i]) << i;  // the same floats in the same order: bit for bit
    EXPECT_EQ(right[i], strided[i]) << i;
  }
  EXPECT_LT(right.back(), 0.5f * right.front());  // and it learns
}

TEST(CallerData, RegressionOnCallerViewsLearnsTheTargets) {
  std::vector<float> x, y;
  std::vector<std::int32_t> labels;
  host_problem(x, y, labels);
  ktr::ExecSpace space;
  auto data = ktr::dataset_from_views(space, device_matrix<Kokkos::LayoutLeft>(x, N, D),
                                      device_matrix<Kokkos::LayoutLeft>(y, N, T));
  EXPECT_EQ(data.task(), ktr::Task::regression);
  EXPECT_EQ(data.target_width(), T);
  EXPECT_EQ(data.device_bytes(), 0);  // read in place
  RunConfig c = regression_config();
  c.input_transform = ktr::fit_input_transform(space, data, ktr::InputTransformMode::standard);
  Session s(c, 10);
  ktr::Evaluator eval = ktr::evaluator_for(space, s, 64);  // the session's transform and task
  double const before = eval.run(space, s.model(), data).loss;
  for (int i = 0; i < 60; ++i) ktr::dispatch(space, s.state(), s.model(), data, 10);
  auto const after = eval.run(space, s.model(), data);
  EXPECT_EQ(after.count, N);
  EXPECT_TRUE(std::isnan(after.accuracy));
  EXPECT_LT(after.loss, 0.05 * before) << "mse before " << before << " after " << after.loss;
  EXPECT_NEAR(after.rmse(), std::sqrt(after.loss), 1e-12);
}

TEST(CallerData, ClassLabelsFromCallerViewsCountTheirClasses) {
  std::vector<float> x, y;
  std::vector<std::int32_t> labels;
  host_problem(x, y, labels);
  ktr::ExecSpace space;
  Kokkos::View<std::int32_t*, ktr::MemSpace> lab("test::labels", N);
  Kokkos::deep_copy(lab, Kokkos::View<std::int32_t*, Kokkos::HostSpace>(labels.data(), labels.size()));
  auto xr = device_matrix<Kokkos::LayoutRight>(x, N, D);
  auto data = ktr::dataset_from_views(space, xr, lab);
  EXPECT_EQ(data.task(), ktr::Task::classification);
  EXPECT_EQ(data.num_classes, 4);
  EXPECT_EQ(ktr::dataset_from_views(space, xr, lab, 7).num_classes, 7);
  EXPECT_THROW(ktr::dataset_from_views(space, xr, lab, 3), ktr::Error);  // label 3 is not in [0, 3)
  RunConfig c;
  c.model = "in=6 dense:16:relu dense:4";
  c.batch = 20;
  c.optimizer.lr = 1e-2f;
  c.input_transform = ktr::fit_input_transform(space, data, ktr::InputTransformMode::standard);
  Session s(c, 12);
  for (int i = 0; i < 40; ++i) ktr::dispatch(space, s.state(), s.model(), data, 12);
  auto const r = ktr::Evaluator(s.model(), 100, c.input_transform).run(space, s.model(), data);
  EXPECT_GT(r.accuracy, 0.9);
}

TEST(CallerData, PerFeatureStandardisationMatchesTheHost) {
  std::vector<float> x, y;
  std::vector<std::int32_t> labels;
  host_problem(x, y, labels);
  ktr::ExecSpace space;
  auto data = ktr::dataset_from_views(space, device_matrix<Kokkos::LayoutLeft>(x, N, D),
                                      device_matrix<Kokkos::LayoutLeft>(y, N, T));
  auto const norm = ktr::fit_input_transform(space, data, ktr::InputTransformMode::standard);
  ASSERT_TRUE(norm.per_feature());
  auto scale = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), norm.feature_scale);
  auto shift = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), norm.feature_shift);
  for (std::int64_t d = 0; d < D; ++d) {
    double mean = 0, var = 0;
    for (std::int64_t n = 0; n < N; ++n) mean += x[std::size_t(n * D + d)];
    mean /= N;
    for (std::int64_t n = 0; n < N; ++n) var += std::pow(x[std::size_t(n * D + d)] - mean, 2);
    double const sd = std::sqrt(var / N);
    EXPECT_NEAR(scale(d), 1 / sd, 1e-5 / sd) << d;
    EXPECT_NEAR(shift(d), -mean / sd, 1e-5 * (1 + std::abs(mean / sd))) << d;
  }
  EXPECT_FALSE(ktr::fit_input_transform(space, data, ktr::InputTransformMode::none).per_feature());
  EXPECT_THROW(ktr::parse_input_transform_mode("zscore"), ktr::UsageError);
  EXPECT_THROW(ktr::fit_input_transform(space, data, ktr::InputTransformMode::recorded), ktr::Error);
}

TEST(CallerData, TrainingOnCallerViewsNeverCopiesTheirData) {
  std::vector<float> x, y;
  std::vector<std::int32_t> labels;
  std::int64_t const n = 20000;  // caller data (640 kB) much larger than the model
  host_problem(x, y, labels, n);
  ktr::ExecSpace space;
  auto xv = device_matrix<Kokkos::LayoutLeft>(x, n, D);
  auto yv = device_matrix<Kokkos::LayoutLeft>(y, n, T);
  std::int64_t const caller_bytes = n * D * 4;
  ktr::ToolsCounter counter;
  auto data = ktr::dataset_from_views(space, xv, yv);
  RunConfig c = regression_config();
  c.input_transform = ktr::fit_input_transform(space, data, ktr::InputTransformMode::standard);
  Session s(c, 8);
  ktr::dispatch(space, s.state(), s.model(), data, 8);  // warm-up
  space.fence();
  std::int64_t const setup_allocations = counter.allocations();
  // Neither a copy nor an allocation anywhere near the size of the caller's features: they are read in place.
  for (auto const& e : counter.events()) {
    auto const open = e.rfind('(');
    std::int64_t const bytes = std::stoll(e.substr(open + 1));
    EXPECT_LT(bytes, caller_bytes / 10) << e;
  }
  for (int i = 0; i < 5; ++i) ktr::dispatch(space, s.state(), s.model(), data, 8);
  space.fence();
  EXPECT_EQ(counter.allocations(), setup_allocations) << "an allocation per dispatch";
}

TEST(CallerData, PredictorWritesIntoTheCallersView) {
  std::vector<float> x, y;
  std::vector<std::int32_t> labels;
  host_problem(x, y, labels);
  ktr::ExecSpace space;
  auto xv = device_matrix<Kokkos::LayoutRight>(x, N, D);
  auto data = ktr::dataset_from_views(space, xv, device_matrix<Kokkos::LayoutRight>(y, N, T));
  RunConfig c = regression_config();
  c.input_transform = ktr::fit_input_transform(space, data, ktr::InputTransformMode::standard);
  Session s(c, 4);
  ktr::dispatch(space, s.state(), s.model(), data, 4);
  std::string const path = ::testing::TempDir() + "ktr_caller_model.ckpt";
  std::remove(path.c_str());
  s.save(space, path);
  // Another "program": load the saved model for inference, sized for its own batch.
  ktr::TrainedModel m = ktr::load_trained_model(path, 50);
  EXPECT_EQ(m.config.task, ktr::Task::regression);
  ASSERT_TRUE(m.config.input_transform.per_feature());
  Kokkos::View<float**, Kokkos::LayoutLeft, ktr::MemSpace> out("test::out", N, T);
  ktr::Predictor(*m.model, 50, m.config.input_transform).run(space, *m.model, data, out);
  // The same predictions as the training model's forward pass on the first batch, gathered in order.
  ktr::Tensor xb("test::xb", s.model().input_shape(4));
  ktr::gather_range(space, data, 0, c.input_transform, ktr::Batch{xb, {}, ktr::Tensor()});
  auto const want = ktr::to_host(s.model().forward(space, ktr::Precision{}, xb));
  auto const got = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  for (int i = 0; i < 4; ++i)
    for (int t = 0; t < T; ++t) EXPECT_NEAR(got(i, t), want[std::size_t(i * T + t)], 1e-5) << i << "," << t;
  std::remove(path.c_str());
}

TEST(Loss, MeanSquaredErrorMatchesReferenceAndFiniteDifferences) {
  ktr::ExecSpace space;
  int const B = 5, W = 3;
  auto hp = ktr::test::random_floats(B * W, 11, -2.0f, 2.0f);
  auto hy = ktr::test::random_floats(B * W, 12, -2.0f, 2.0f);
  hp[4] = 3e4f, hy[4] = -3e4f;  // large errors stay finite (accumulated in double)
  ktr::Tensor p("test::p", ktr::Shape{B, W}), y("test::y", ktr::Shape{B, W}), dp("test::dp", ktr::Shape{B, W});
  ktr::from_host(p, hp);
  ktr::from_host(y, hy);
  ktr::DeviceView<float*> loss("test::loss", 1);
  ktr::DeviceView<std::int32_t*> correct("test::correct", 1);
  ktr::mean_squared_error(space, p, y, dp, ktr::LossOutput{loss, correct, 0, false});
  auto mse = [&](ktr::test::Vec const& v) {
    double s = 0;
    for (std::size_t i = 0; i < v.size(); ++i) s += (v[i] - hy[i]) * (v[i] - hy[i]);
    return s / double(v.size());
  };
  auto const pd = ktr::test::to_double(hp);
  auto hl = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), loss);
  EXPECT_NEAR(hl(0), mse(pd), 1e-6 * mse(pd));
  auto const g = ktr::to_host(dp);
  auto const fd = ktr::test::finite_difference(mse, pd, 1e-3);
  for (std::size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], fd[i], 1e-4 * (1 + std::abs(fd[i]))) << i;
}

// L1 and Huber (optax.huber_loss, delta 0.5 here: the errors straddle it) against a double reference and finite
// differences; their text forms give them back.
TEST(Loss, L1AndHuberMatchReferenceAndFiniteDifferences) {
  ktr::ExecSpace space;
  int const B = 6, W = 2;
  auto hp = ktr::test::random_floats(B * W, 21, -2.0f, 2.0f);
  auto hy = ktr::test::random_floats(B * W, 22, -2.0f, 2.0f);
  ktr::Tensor p("test::p", ktr::Shape{B, W}), y("test::y", ktr::Shape{B, W}), dp("test::dp", ktr::Shape{B, W});
  ktr::from_host(p, hp);
  ktr::from_host(y, hy);
  ktr::DeviceView<float*> loss("test::loss", 1);
  ktr::DeviceView<std::int32_t*> correct("test::correct", 1);
  for (std::string const name : {"l1", "huber:0.5"}) {
    SCOPED_TRACE(name);
    ktr::RegressionLoss const kind = ktr::RegressionLoss::parse(name);
    EXPECT_EQ(kind.str(), name);
    ktr::regression_loss(space, kind, p, y, dp, ktr::LossOutput{loss, correct, 0, false});
    auto reference = [&](ktr::test::Vec const& v) {
      double s = 0;
      for (std::size_t i = 0; i < v.size(); ++i) {
        double const e = v[i] - hy[i], a = std::abs(e);
        s += kind.kind == ktr::RegressionLoss::Kind::l1 ? a : (a <= 0.5 ? 0.5 * e * e : 0.5 * (a - 0.25));
      }
      return s / double(v.size());
    };
    auto const pd = ktr::test::to_double(hp);
    auto hl = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), loss);
    EXPECT_NEAR(hl(0), reference(pd), 1e-6 * reference(pd));
    auto const g = ktr::to_host(dp);
    auto const fd = ktr::test::finite_difference(reference, pd, 1e-4);
    for (std::size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], fd[i], 1e-3 * (1 + std::abs(fd[i]))) << i;
  }
  EXPECT_THROW(ktr::RegressionLoss::parse("huber:-1"), ktr::Error);
  EXPECT_THROW(ktr::RegressionLoss::parse("bce:1"), ktr::Error);
}

// A field's loss over many elements sums over many teams, then one (GPU runs give the room for the partial sums;
// here the test does): the same loss and gradients as one team within rounding, for every kind and with
// accumulation, and the same bits on every call (the teams depend on the size alone).
TEST(Loss, AFieldsLossSplitOverTeamsEqualsOneTeamAndRepeatsBitForBit) {
  ktr::ExecSpace space;
  std::int64_t const B = 3, H = 160, W = 160;  // 76,800 elements: above kLossSplitElements
  ASSERT_GE(B * H * W, ktr::kLossSplitElements);
  auto const hp = ktr::test::random_floats(int(B * H * W), 41, -2.0f, 2.0f);
  auto const hy = ktr::test::random_floats(int(B * H * W), 42, 0.0f, 1.0f);
  ktr::Tensor p("test::p", ktr::Shape{B, H, W, 1}), y("test::y", ktr::Shape{B, H, W, 1});
  ktr::from_host(p, hp);
  ktr::from_host(y, hy);
  ktr::DeviceView<double*> partials("test::partials", std::size_t(ktr::kLossPartials));
  for (std::string const name : {"mse", "l1", "huber:0.5", "bce"}) {
    SCOPED_TRACE(name);
    ktr::RegressionLoss const kind = ktr::RegressionLoss::parse(name);
    auto run = [&](bool split, bool accumulate) {
      ktr::DeviceView<float*> loss("test::loss", 1);
      ktr::DeviceView<std::int32_t*> correct("test::correct", 1);
      ktr::Tensor dp("test::dp", ktr::Shape{B, H, W, 1});
      ktr::regression_loss(space, kind, p, y, accumulate ? ktr::Tensor() : dp,
                           ktr::LossOutput{loss, correct, 0, accumulate, ktr::Reduction::mean,
                                           split ? partials : ktr::DeviceView<double*>()});
      auto const hl = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), loss);
      return std::make_pair(hl(0), accumulate ? std::vector<float>() : ktr::to_host(dp));
    };
    auto const one = run(false, false), split = run(true, false), again = run(true, false);
    EXPECT_NEAR(split.first, one.first, 1e-6 * std::abs(one.first));
    EXPECT_EQ(split.second, one.second) << "the gradient is per element: the same either way";
    EXPECT_EQ(std::memcmp(&split.first, &again.first, sizeof(float)), 0) << "the split sum is not deterministic";
    auto const summed = run(true, true), summed_one = run(false, true);
    EXPECT_NEAR(summed.first, summed_one.first, 1e-6 * std::abs(summed_one.first));
  }
}

// Sigmoid binary cross-entropy of logits (optax.sigmoid_binary_cross_entropy) on multi-label targets, logits up
// to +-40 (stable: no overflow), and the sum reduction; against a double reference and finite differences.
TEST(Loss, BceAndTheSumReductionMatchReferenceAndFiniteDifferences) {
  ktr::ExecSpace space;
  int const B = 5, W = 3;
  auto hp = ktr::test::random_floats(B * W, 31, -3.0f, 3.0f);
  hp[0] = 40.0f, hp[1] = -40.0f;
  std::vector<float> hy(B * W);
  for (int i = 0; i < B * W; ++i) hy[std::size_t(i)] = float((i * 7) % 3 == 0);
  ktr::Tensor p("test::p", ktr::Shape{B, W}), y("test::y", ktr::Shape{B, W}), dp("test::dp", ktr::Shape{B, W});
  ktr::from_host(p, hp);
  ktr::from_host(y, hy);
  ktr::DeviceView<float*> loss("test::loss", 1);
  ktr::DeviceView<std::int32_t*> correct("test::correct", 1);
  for (auto reduction : {ktr::Reduction::mean, ktr::Reduction::sum}) {
    SCOPED_TRACE(ktr::reduction_name(reduction));
    ktr::RegressionLoss const bce = ktr::RegressionLoss::parse("bce");
    EXPECT_EQ(bce.str(), "bce");
    ktr::regression_loss(space, bce, p, y, dp, ktr::LossOutput{loss, correct, 0, false, reduction});
    auto reference = [&](ktr::test::Vec const& v) {
      double s = 0;
      for (std::size_t i = 0; i < v.size(); ++i)
        s += std::max(v[i], 0.0) - v[i] * hy[i] + std::log1p(std::exp(-std::abs(v[i])));
      return reduction == ktr::Reduction::sum ? s : s / double(v.size());
    };
    auto const pd = ktr::test::to_double(hp);
    auto hl = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), loss);
    EXPECT_NEAR(hl(0), reference(pd), 1e-6 * reference(pd));
    auto const g = ktr::to_host(dp);
    auto const fd = ktr::test::finite_difference(reference, pd, 1e-4);
    for (std::size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], fd[i], 1e-4 * (1 + std::abs(fd[i]))) << i;
  }
  EXPECT_EQ(ktr::parse_reduction("sum"), ktr::Reduction::sum);
  EXPECT_THROW(ktr::parse_reduction("max"), ktr::Error);
}

// Cross-entropy summed over the rows: B times the mean, and so is its gradient.
TEST(Loss, CrossEntropySumIsBatchTimesTheMean) {
  ktr::ExecSpace space;
  int const B = 4, C = 3;
  ktr::Tensor z("test::z", ktr::Shape{B, C}), dz_mean("test::dm", ktr::Shape{B, C}),
      dz_sum("test::ds", ktr::Shape{B, C});
  ktr::from_host(z, ktr::test::random_floats(B * C, 41));
  ktr::DeviceView<std::int32_t*> labels("test::labels", B);
  Kokkos::deep_copy(labels, 1);
  ktr::DeviceView<float*> loss("test::loss", 2);
  ktr::DeviceView<std::int32_t*> correct("test::correct", 2);
  ktr::softmax_cross_entropy(space, z, labels, dz_mean, ktr::LossOutput{loss, correct, 0, false});
  ktr::softmax_cross_entropy(space, z, labels, dz_sum,
                             ktr::LossOutput{loss, correct, 1, false, ktr::Reduction::sum});
  auto hl = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), loss);
  EXPECT_NEAR(hl(1), B * hl(0), 1e-5 * hl(1));
  auto const gm = ktr::to_host(dz_mean), gs = ktr::to_host(dz_sum);
  for (std::size_t i = 0; i < gm.size(); ++i) EXPECT_NEAR(gs[i], B * gm[i], 1e-6) << i;
}

// A regression run's loss is part of the run: trained with it, recorded in its checkpoint, restored from it.
TEST(Loss, TheRegressionLossTrainsAndTravelsInCheckpoints) {
  std::vector<float> x, y;
  std::vector<std::int32_t> labels;
  host_problem(x, y, labels);
  ktr::ExecSpace space;
  auto data = ktr::dataset_from_views(space, device_matrix<Kokkos::LayoutRight>(x, N, D),
                                      device_matrix<Kokkos::LayoutRight>(y, N, T));
  RunConfig c = regression_config();
  c.input_transform = ktr::fit_input_transform(space, data, ktr::InputTransformMode::standard);
  c.loss = ktr::RegressionLoss::parse("huber:0.25");
  Session s(c, 10);
  ktr::dispatch(space, s.state(), s.model(), data, 10);
  float const first = ktr::read_metrics(space, s.state(), 10).loss[0];
  for (int i = 0; i < 40; ++i) ktr::dispatch(space, s.state(), s.model(), data, 10);
  float const last = ktr::read_metrics(space, s.state(), 10).loss[9];
  EXPECT_LT(last, first / 4) << "huber " << first << " -> " << last;
  std::string const path = ::testing::TempDir() + "loss.ckpt";
  s.save(space, path);
  auto const restored = Session::restore(path, 10);
  EXPECT_EQ(restored->config().loss.str(), "huber:0.25");
  EXPECT_EQ(restored->config().reduction, ktr::Reduction::mean);
  std::remove(path.c_str());

  // A summed reduction trains too (its loss is B x T times the mean's) and is recorded.
  c.reduction = ktr::Reduction::sum;
  c.optimizer.lr /= float(c.batch * T);  // the summed gradient is B x T times larger
  Session summed(c, 10);
  ktr::dispatch(space, summed.state(), summed.model(), data, 10);
  float const first_sum = ktr::read_metrics(space, summed.state(), 10).loss[0];
  EXPECT_NEAR(first_sum, first * float(c.batch * T), 1e-3f * first_sum) << "the same first batch, summed";
  summed.save(space, path);
  EXPECT_EQ(Session::restore(path, 10)->config().reduction, ktr::Reduction::sum);
  std::remove(path.c_str());
}

}  // namespace
