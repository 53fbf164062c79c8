// Sobolev training (train/sobolev.hpp): a training step's gradient against central finite differences of the loss
// computed in double, K steps per dispatch against K dispatches, the spec and weight through a checkpoint and the
// evaluation of derivative errors, and the refusals.
#include <ktr/core/error.hpp>
#include <ktr/models/jet.hpp>
#include <ktr/train/checkpoint.hpp>
#include <ktr/train/run_settings.hpp>
#include <ktr/train/session.hpp>
#include <ktr/train/train.hpp>
#include <ktr/train/trainer.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

// Inside a namespace of its own, so that unity builds (which merge test files) find these helpers first.
namespace sobolev_test {

using ktr::RunConfig;

constexpr char const* kModel = "in=2 dense:5:tanh dense:2";  // two outputs: the targets' (N, m, 1 + T) order
constexpr char const* kSpec = "d0 d1,1";                     // a first and a second derivative
constexpr float kWeight = 0.7f;

struct Points {
  std::int64_t n = 0;
  std::vector<float> x, y;  // (n, 2), (n, 2, 3)
};

Points points(std::int64_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.5f, 1.5f);
  Points p;
  p.n = n;
  for (std::int64_t i = 0; i < 2 * n; ++i) p.x.push_back(u(rng));
  for (std::int64_t i = 0; i < 6 * n; ++i) p.y.push_back(u(rng));
  return p;
}

ktr::DeviceDataset dataset(Points const& p) {
  return ktr::make_device_dataset(p.x, {2}, {}, p.y, p.n, 0, "sobolev points");
}

RunConfig config(std::int64_t batch) {
  RunConfig c;
  c.model = kModel;
  c.optimizer.kind = ktr::OptimizerConfig::Kind::sgd;
  c.optimizer.lr = 1e-3f;
  c.optimizer.momentum = 0;
  c.batch = batch;
  c.seed = 3;
  c.task = ktr::Task::regression;
  c.normalize = ktr::InputTransformMode::recorded;
  c.input_transform.scale = 0.5f, c.input_transform.shift = 0.25f;
  c.derivatives = kSpec;
  c.derivative_weight = kWeight;
  return c;
}

std::vector<double> host(Kokkos::View<float*, ktr::MemSpace> const& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<double>(h.data(), h.data() + h.extent(0));
}

Kokkos::View<double*, ktr::MemSpace> device(std::vector<double> const& v) {
  Kokkos::View<double*, ktr::MemSpace> d("d", v.size());
  auto h = Kokkos::create_mirror_view(d);
  for (std::size_t i = 0; i < v.size(); ++i) h(i) = v[i];
  Kokkos::deep_copy(d, h);
  return d;
}

// The squared errors of values and of derivatives, summed over the points, in double (the model's jet in fp64 at
// parameters `theta`, under the transform x * scale + shift).
struct Errors {
  double values = 0, derivatives = 0;
};
Errors errors(ktr::Model const& model, std::vector<double> const& theta, Points const& p,
              std::vector<double> const& scale, std::vector<double> const& shift) {
  ktr::Jet<double> jet(model, ktr::JetSpec::parse(kSpec, 2));
  ktr::JetMatrix<double> x("x", p.n, 2), u("u", p.n, 2);
  ktr::JetCube<double> d("d", p.n, 2, 2);
  auto xh = Kokkos::create_mirror_view(x);
  for (std::int64_t i = 0; i < 2 * p.n; ++i) xh.data()[i] = p.x[std::size_t(i)];
  Kokkos::deep_copy(x, xh);
  jet.forward(ktr::ExecSpace(), device(theta), device(scale), device(shift), x, u, d);
  auto uh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), u);
  auto dh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), d);
  Errors e;
  for (std::int64_t n = 0; n < p.n; ++n)
    for (std::int64_t k = 0; k < 2; ++k) {
      float const* y = &p.y[std::size_t((n * 2 + k) * 3)];
      e.values += (uh(n, k) - y[0]) * (uh(n, k) - y[0]);
      for (std::int64_t t = 0; t < 2; ++t) e.derivatives += (dh(n, k, t) - y[1 + t]) * (dh(n, k, t) - y[1 + t]);
    }
  return e;
}

// The run's loss: mean over values + weight x mean over derivatives.
double loss(ktr::Model const& model, std::vector<double> const& theta, Points const& p) {
  Errors const e = errors(model, theta, p, {0.5, 0.5}, {0.25, 0.25});
  return e.values / double(p.n * 2) + kWeight * e.derivatives / double(p.n * 2 * 2);
}

TEST(Sobolev, AStepsLossAndGradientEqualFiniteDifferencesOfTheLossInDouble) {
  Points const p = points(12, 1);
  ktr::Session session(config(p.n), 1);
  ktr::Model& model = session.model();
  std::vector<double> const theta = host(model.arena().params());
  ktr::ExecSpace const space;
  ktr::train_steps(space, session.state(), model, dataset(p), 1);
  space.fence();
  std::vector<double> const grads = host(model.arena().grads());
  double const step_loss = host(session.state().loss)[0];
  EXPECT_NEAR(step_loss, loss(model, theta, p), 1e-5 * loss(model, theta, p));
  ASSERT_EQ(grads.size(), theta.size());
  for (std::size_t i = 0; i < theta.size(); ++i) {
    std::vector<double> plus = theta, minus = theta;
    double const h = 1e-5;
    plus[i] += h, minus[i] -= h;
    double const fd = (loss(model, plus, p) - loss(model, minus, p)) / (2 * h);
    EXPECT_NEAR(grads[i], fd, 1e-5 + 1e-4 * std::abs(fd)) << "parameter " << i;
  }
}

TEST(Sobolev, KStepsInOneDispatchEqualKDispatchesOfOneStepBitForBit) {
  Points const p = points(24, 2);
  ktr::DeviceDataset const data = dataset(p);
  RunConfig c = config(8);
  c.optimizer.kind = ktr::OptimizerConfig::Kind::adam;
  ktr::Session once(c, 4), apart(c, 4);
  ktr::ExecSpace const space;
  ktr::train_steps(space, once.state(), once.model(), data, 4);
  for (int i = 0; i < 4; ++i) ktr::train_steps(space, apart.state(), apart.model(), data, 1);
  space.fence();
  std::vector<double> const a = host(once.model().arena().params()), b = host(apart.model().arena().params());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, host(ktr::Session(c, 1).model().arena().params())) << "nothing was trained";
}

TEST(Sobolev, ACheckpointKeepsTheSpecAndWeightAndTheEvaluationGivesBothErrors) {
  Points const train = points(64, 3), test = points(40, 4);
  RunConfig c = config(16);
  c.normalize = ktr::InputTransformMode::standard;  // fitted per feature: the jet carries it
  c.optimizer.kind = ktr::OptimizerConfig::Kind::adam;
  std::string const path = ::testing::TempDir() + "ktr_sobolev.ckpt";
  ktr::TrainerOptions options;
  options.checkpoint = path;
  ktr::ExecSpace const space;
  ktr::Trainer trainer(space, c, dataset(train), dataset(test), options);
  ktr::RunSummary const s = trainer.fit(space, 2);
  ASSERT_TRUE(s.evaluated);
  EXPECT_TRUE(s.test.derivatives);

  ktr::Checkpoint const ckpt = ktr::read_checkpoint(path);
  RunConfig const back = ktr::run_config(ckpt, path);
  EXPECT_EQ(back.derivatives, kSpec);
  EXPECT_EQ(back.derivative_weight, kWeight);
  ASSERT_TRUE(back.input_transform.per_feature());
  ktr::TrainedModel m = ktr::load_trained_model(ckpt, path, 32);
  ktr::EvalResult const r = ktr::evaluator_for(space, m, 32).run(space, *m.model, dataset(test));
  ASSERT_TRUE(r.derivatives);
  std::vector<double> const theta(ckpt.buffers[0].begin(), ckpt.buffers[0].end());
  Errors const e = errors(*m.model, theta, test, host(back.input_transform.feature_scale),
                          host(back.input_transform.feature_shift));
  double const mse = e.values / double(test.n * 2), dmse = e.derivatives / double(test.n * 2 * 2);
  EXPECT_NEAR(r.mse, mse, 1e-4 * mse);
  EXPECT_NEAR(r.derivative_mse, dmse, 1e-4 * dmse);
  EXPECT_NEAR(r.loss, mse + kWeight * dmse, 1e-4 * r.loss);
  EXPECT_NEAR(s.test.mse, mse, 1e-4 * mse) << "the Trainer's evaluation is the loaded model's";
  std::remove(path.c_str());
}

TEST(Sobolev, TargetsWithoutDerivativesOtherLossesAndRelusUnderSecondDerivativesAreRefusedNamingTheSetting) {
  ktr::ExecSpace const space;
  Points const p = points(16, 5);
  auto refusal = [&](RunConfig c, ktr::DeviceDataset const& data) {
    c.normalize = ktr::InputTransformMode::none;  // a Trainer fits its transform
    try {
      ktr::Trainer trainer(space, c, data);
    } catch (ktr::Error const& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  std::vector<float> plain;  // the values alone: (N, 2)
  for (std::int64_t i = 0; i < 2 * p.n; ++i) plain.push_back(p.y[std::size_t(3 * i)]);
  std::string why = refusal(config(8), ktr::make_device_dataset(p.x, {2}, {}, plain, p.n, 0, "plain"));
  EXPECT_NE(why.find("with derivatives 'd0 d1,1' the targets are (N, 2, 3)"), std::string::npos) << why;
  RunConfig l1 = config(8);
  l1.loss = ktr::RegressionLoss::parse("l1");
  why = refusal(l1, dataset(p));
  EXPECT_NE(why.find("derivatives: the loss is the mean squared error"), std::string::npos) << why;
  RunConfig relu = config(8);
  relu.model = "in=2 dense:5:relu dense:2";
  why = refusal(relu, dataset(p));
  EXPECT_NE(why.find("derivatives: input derivatives: the spec 'd0 d1,1' needs second derivatives"),
            std::string::npos)
      << why;
  RunConfig far = config(8);
  far.derivatives = "d0 d2";
  why = refusal(far, dataset(p));
  EXPECT_NE(why.find("derivatives: derivative spec token 'd2'"), std::string::npos) << why;
  RunConfig bad;
  EXPECT_THROW(ktr::set_run_setting(bad, "derivatives", "d0 dx"), ktr::Error);
  ktr::set_run_setting(bad, "derivatives", "  d0   d1,0 ");
  EXPECT_EQ(bad.derivatives, "d0 d1,0");
}

}  // namespace sobolev_test
