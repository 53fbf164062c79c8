// The C API's input derivatives: ktr_derivatives against finite differences of ktr_inference through a fitted
// input transform, ktr_vjp against the derivatives it contracts, the split step (ktr_jet_forward,
// ktr_jet_backward, ktr_apply_gradients) against ktr_train on the same loss and training a 1-D physics-informed
// problem, and the refusals.
#include <ktr/ktr_c.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace {

std::string write_config(std::string const& name, std::string const& description, std::string const& optimizer,
                         std::string const& normalize, char const* lr = "0.01") {
  std::string const path = ::testing::TempDir() + name;
  std::ofstream(path) << "general:\n  seed: 7\n  normalize: " << normalize
                      << "\nmodel:\n  type: ktr\n  parameters:\n    description: \"" << description
                      << "\"\noptimizer:\n  type: " << optimizer << "\n  parameters:\n    learning_rate: " << lr
                      << "\n";
  return path;
}

std::string capi_error() { return ktr_last_error(); }

std::vector<float> uniform(std::size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// Trains one step on y = x0 x1 so that the standard transform is fitted (means and scales that are not 0 and 1).
void first_step(char const* name, std::vector<float> const& x) {
  std::int64_t const n = std::int64_t(x.size() / 2);
  std::vector<float> y(std::size_t(n) * 2);
  for (std::int64_t i = 0; i < n; ++i)
    y[std::size_t(2 * i)] = x[std::size_t(2 * i)] * x[std::size_t(2 * i + 1)],
                      y[std::size_t(2 * i + 1)] = x[std::size_t(2 * i)];
  std::int64_t const xs[2] = {n, 2}, ys[2] = {n, 2};
  ASSERT_EQ(ktr_train(name, const_cast<float*>(x.data()), 2, xs, KTR_FLOAT, y.data(), 2, ys, KTR_FLOAT, nullptr,
                      nullptr),
            KTR_RESULT_SUCCESS)
      << capi_error();
}

}  // namespace

TEST(CApiDerivatives, DerivativesEqualDifferencesOfInferenceThroughAFittedTransform) {
  std::string const cfg =
      write_config("jet_fd.yaml", "in=2 dense:16:tanh dense:16:silu dense:2", "adam", "standard");
  ASSERT_EQ(ktr_create_model("jet_fd", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << capi_error();
  std::vector<float> train = uniform(64, 3.0f, 9.0f, 1);  // far from mean 0 and scale 1: the transform shows
  first_step("jet_fd", train);
  std::int64_t const n = 5;
  std::vector<double> x(std::size_t(n) * 2);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 4.0 + 0.7 * double(i);
  std::vector<double> u(std::size_t(n) * 2), d(std::size_t(n) * 2 * 3);
  std::int64_t const xs[2] = {n, 2}, us[2] = {n, 2}, ds[3] = {n, 2, 3};
  ASSERT_EQ(ktr_derivatives("jet_fd", "d0 d1 lap", x.data(), 2, xs, KTR_DOUBLE, u.data(), 2, us, KTR_DOUBLE,
                            d.data(), 3, ds, KTR_DOUBLE, nullptr),
            KTR_RESULT_SUCCESS)
      << capi_error();
  auto infer = [&](std::vector<double> const& at) {
    std::vector<double> out(at.size());
    std::int64_t const s[2] = {std::int64_t(at.size() / 2), 2};
    EXPECT_EQ(ktr_inference("jet_fd", const_cast<double*>(at.data()), 2, s, KTR_DOUBLE, out.data(), 2, s,
                            KTR_DOUBLE, nullptr),
              KTR_RESULT_SUCCESS)
        << capi_error();
    return out;
  };
  auto first = [&](std::vector<double> const& at) {  // d0, d1 by ktr_derivatives
    std::vector<double> out(at.size()), dd(at.size() * 2);
    std::int64_t const s[2] = {std::int64_t(at.size() / 2), 2}, s3[3] = {s[0], 2, 2};
    EXPECT_EQ(ktr_derivatives("jet_fd", "d0 d1", const_cast<double*>(at.data()), 2, s, KTR_DOUBLE, out.data(), 2,
                              s, KTR_DOUBLE, dd.data(), 3, s3, KTR_DOUBLE, nullptr),
              KTR_RESULT_SUCCESS)
        << capi_error();
    return dd;
  };
  std::vector<double> const u0 = infer(x);
  double const h = 1e-2;
  double largest = 0;
  for (std::int64_t p = 0; p < n; ++p)
    for (int o = 0; o < 2; ++o) {
      EXPECT_NEAR(u[std::size_t(2 * p + o)], u0[std::size_t(2 * p + o)], 1e-6);
      double lap = 0;
      for (int i = 0; i < 2; ++i) {
        std::vector<double> xp = x, xm = x;
        xp[std::size_t(2 * p + i)] += h, xm[std::size_t(2 * p + i)] -= h;
        double const fd = (infer(xp)[std::size_t(2 * p + o)] - infer(xm)[std::size_t(2 * p + o)]) / (2 * h);
        double const got = d[std::size_t((2 * p + o) * 3 + i)];
        EXPECT_NEAR(got, fd, 2e-3 * std::max(1.0, std::abs(fd))) << "point " << p << " output " << o << " d" << i;
        largest = std::max(largest, std::abs(got));
        lap +=
            (first(xp)[std::size_t((2 * p + o) * 2 + i)] - first(xm)[std::size_t((2 * p + o) * 2 + i)]) / (2 * h);
      }
      EXPECT_NEAR(d[std::size_t((2 * p + o) * 3 + 2)], lap, 5e-3 * std::max(1.0, std::abs(lap)))
          << "point " << p << " output " << o << " lap";
    }
  EXPECT_GT(largest, 1e-3);
  // vjp: sum_o c_o du_o/dx_i, the derivatives contracted.
  std::vector<double> const cot{0.5, -2.0, 1.0, 3.0, -1.5, 0.25, 2.0, 1.0, -0.5, 0.75};
  std::vector<double> grad(std::size_t(n) * 2);
  ASSERT_EQ(ktr_vjp("jet_fd", x.data(), 2, xs, KTR_DOUBLE, const_cast<double*>(cot.data()), 2, us, KTR_DOUBLE,
                    grad.data(), 2, xs, KTR_DOUBLE, nullptr),
            KTR_RESULT_SUCCESS)
      << capi_error();
  for (std::int64_t p = 0; p < n; ++p)
    for (int i = 0; i < 2; ++i) {
      double want = 0;
      for (int o = 0; o < 2; ++o) want += cot[std::size_t(2 * p + o)] * d[std::size_t((2 * p + o) * 3 + i)];
      EXPECT_NEAR(grad[std::size_t(2 * p + i)], want, 1e-5 * std::max(1.0, std::abs(want)));
    }
  ASSERT_EQ(ktr_destroy_model("jet_fd"), KTR_RESULT_SUCCESS);
}

// With no derivatives and the seed 2 (u - y) / (N m), the split step is ktr_train's step on the mean squared
// error.
TEST(CApiDerivatives, SplitStepOnTheValueEqualsKtrTrainsStep) {
  std::string const cfg = write_config("jet_same.yaml", "in=2 dense:16:tanh dense:2", "sgd", "none");
  ASSERT_EQ(ktr_create_model("jet_a", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << capi_error();
  ASSERT_EQ(ktr_create_model("jet_b", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << capi_error();
  std::int64_t const n = 32;
  std::vector<float> const x = uniform(std::size_t(n) * 2, -1.0f, 1.0f, 3);
  std::vector<float> y(x.size());
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = std::sin(3.0f * x[i]);
  std::int64_t const s[2] = {n, 2};
  ASSERT_EQ(ktr_train("jet_a", const_cast<float*>(x.data()), 2, s, KTR_FLOAT, y.data(), 2, s, KTR_FLOAT, nullptr,
                      nullptr),
            KTR_RESULT_SUCCESS)
      << capi_error();
  std::vector<float> u(y.size());
  ASSERT_EQ(ktr_jet_forward("jet_b", "", const_cast<float*>(x.data()), 2, s, KTR_FLOAT, u.data(), 2, s, KTR_FLOAT,
                            nullptr, 0, nullptr, KTR_FLOAT, nullptr),
            KTR_RESULT_SUCCESS)
      << capi_error();
  std::vector<float> seed(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) seed[i] = 2.0f * (u[i] - y[i]) / float(y.size());
  ASSERT_EQ(ktr_jet_backward("jet_b", seed.data(), 2, s, KTR_FLOAT, nullptr, 0, nullptr, KTR_FLOAT, nullptr),
            KTR_RESULT_SUCCESS)
      << capi_error();
  ASSERT_EQ(ktr_apply_gradients("jet_b", 0.0f, nullptr), KTR_RESULT_SUCCESS) << capi_error();
  std::vector<float> a(y.size()), b(y.size()), before(u);
  ASSERT_EQ(
      ktr_inference("jet_a", const_cast<float*>(x.data()), 2, s, KTR_FLOAT, a.data(), 2, s, KTR_FLOAT, nullptr),
      KTR_RESULT_SUCCESS);
  ASSERT_EQ(
      ktr_inference("jet_b", const_cast<float*>(x.data()), 2, s, KTR_FLOAT, b.data(), 2, s, KTR_FLOAT, nullptr),
      KTR_RESULT_SUCCESS);
  double moved = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_NEAR(a[i], b[i], 1e-6) << i;
    moved = std::max(moved, double(std::abs(b[i] - before[i])));
  }
  EXPECT_GT(moved, 1e-5);  // the step changed the model
  ASSERT_EQ(ktr_destroy_model("jet_a"), KTR_RESULT_SUCCESS);
  ASSERT_EQ(ktr_destroy_model("jet_b"), KTR_RESULT_SUCCESS);
}

// u' = cos x on [-2, 2] with u(0) = 0: interior and boundary point sets each go forward and back, one update a
// step. Returns the largest error against sin x on the interior points after `steps` updates.
double train_sine(char const* name, char const* optimizer, char const* lr, int steps) {
  std::string const cfg =
      write_config(std::string(name) + ".yaml", "in=1 dense:24:tanh dense:24:tanh dense:1", optimizer, "none", lr);
  EXPECT_EQ(ktr_create_model(name, cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << capi_error();
  std::int64_t const n = 64;
  std::vector<float> x(n);
  for (std::int64_t i = 0; i < n; ++i) x[std::size_t(i)] = -2.0f + 4.0f * (float(i) + 0.5f) / float(n);
  std::int64_t const s[2] = {n, 1}, s3[3] = {n, 1, 1}, b[2] = {1, 1};
  std::vector<float> u(n), du(n), seed(n);
  float zero = 0.0f, u0 = 0.0f;
  float first_loss = 0, loss = 0;
  for (int step = 0; step < steps; ++step) {
    EXPECT_EQ(ktr_jet_forward(name, "d0", x.data(), 2, s, KTR_FLOAT, u.data(), 2, s, KTR_FLOAT, du.data(), 3, s3,
                              KTR_FLOAT, nullptr),
              KTR_RESULT_SUCCESS)
        << capi_error();
    loss = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      float const r = du[std::size_t(i)] - std::cos(x[std::size_t(i)]);
      loss += r * r / float(n);
      seed[std::size_t(i)] = 2.0f * r / float(n);
    }
    EXPECT_EQ(ktr_jet_backward(name, nullptr, 0, nullptr, KTR_FLOAT, seed.data(), 3, s3, KTR_FLOAT, nullptr),
              KTR_RESULT_SUCCESS)
        << capi_error();
    EXPECT_EQ(ktr_jet_forward(name, "", &zero, 2, b, KTR_FLOAT, &u0, 2, b, KTR_FLOAT, nullptr, 0, nullptr,
                              KTR_FLOAT, nullptr),
              KTR_RESULT_SUCCESS)
        << capi_error();
    loss += u0 * u0;
    float g = 2.0f * u0;
    EXPECT_EQ(ktr_jet_backward(name, &g, 2, b, KTR_FLOAT, nullptr, 0, nullptr, KTR_FLOAT, nullptr),
              KTR_RESULT_SUCCESS)
        << capi_error();
    EXPECT_EQ(ktr_apply_gradients(name, loss, nullptr), KTR_RESULT_SUCCESS) << capi_error();
    if (step == 0) first_loss = loss;
  }
  EXPECT_EQ(ktr_inference(name, x.data(), 2, s, KTR_FLOAT, u.data(), 2, s, KTR_FLOAT, nullptr),
            KTR_RESULT_SUCCESS);
  double worst = 0;
  for (std::int64_t i = 0; i < n; ++i)
    worst = std::max(worst, std::abs(double(u[std::size_t(i)]) - std::sin(double(x[std::size_t(i)]))));
  EXPECT_LT(loss, 1e-2 * first_loss);
  EXPECT_EQ(ktr_destroy_model(name), KTR_RESULT_SUCCESS);
  std::printf("1-D physics-informed problem, %s: largest error against sin x %.2e after %d steps\n", optimizer,
              worst, steps);
  return worst;
}

// Adam at 0.01 spikes now and then on this problem (one step's error 3.5e-2 between 5e-4 at 1,400 and 6e-4 at
// 1,600, whichever the summation order): 0.005 learns as fast without them (5.8e-4 after 1,500 steps).
TEST(CApiDerivatives, SplitStepTrainsAOneDimensionalPhysicsInformedProblemToSine) {
  EXPECT_LT(train_sine("jet_pinn", "adam", "0.005", 1500), 2e-2) << "largest error against sin x";
}

// L-BFGS through ktr_apply_gradients (the loss passed is the one its line search compares): in the same 300
// evaluations it lands closer than Adam (measured 1.3e-3 against 4.5e-3).
TEST(CApiDerivatives, SplitStepWithLbfgsLandsCloserToSineThanAdamInTheSameEvaluations) {
  double const adam = train_sine("jet_pinn_adam", "adam", "0.01", 300);
  double const lbfgs = train_sine("jet_pinn_lbfgs", "lbfgs", "1", 300);
  EXPECT_LT(lbfgs, 0.5 * adam);
}

TEST(CApiDerivatives, RefusesBadSpecsShapesOrderAndMissingModelsNamingWhat) {
  std::string const cfg = write_config("jet_bad.yaml", "in=2 dense:8:relu dense:1", "adam", "none");
  ASSERT_EQ(ktr_create_model("jet_bad", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << capi_error();
  float x[4] = {0.1f, 0.2f, 0.3f, 0.4f}, u[2], d[4], seed[2] = {1, 1};
  std::int64_t const xs[2] = {2, 2}, us[2] = {2, 1}, ds[3] = {2, 1, 2}, wrong[3] = {2, 1, 3};
  auto refused = [&](ktr_result_t r, std::string const& says) {
    EXPECT_NE(r, KTR_RESULT_SUCCESS) << says;
    EXPECT_NE(capi_error().find(says), std::string::npos) << capi_error();
  };
  // Inference before any training or load: named.
  refused(ktr_derivatives("jet_bad", "d0", x, 2, xs, KTR_FLOAT, u, 2, us, KTR_FLOAT, d, 3, ds, KTR_FLOAT, nullptr),
          "has not been trained or loaded yet");
  refused(ktr_jet_backward("jet_bad", seed, 2, us, KTR_FLOAT, nullptr, 0, nullptr, KTR_FLOAT, nullptr),
          "ktr_jet_forward first");
  refused(ktr_apply_gradients("jet_bad", 0.0f, nullptr), "no gradient to apply");
  refused(
      ktr_jet_forward("jet_bad", "d0 d2", x, 2, xs, KTR_FLOAT, u, 2, us, KTR_FLOAT, d, 3, ds, KTR_FLOAT, nullptr),
      "'d2': input 2 is beyond the model's 2 inputs");
  refused(
      ktr_jet_forward("jet_bad", "d0 lap", x, 2, xs, KTR_FLOAT, u, 2, us, KTR_FLOAT, d, 3, ds, KTR_FLOAT, nullptr),
      "relu carries first derivatives only");
  refused(ktr_jet_forward("jet_bad", "d0 d1", x, 2, xs, KTR_FLOAT, u, 2, us, KTR_FLOAT, d, 3, wrong, KTR_FLOAT,
                          nullptr),
          "derivs: must be (N, m, T) = 2 x 2 values, not 2 x 3");
  refused(ktr_jet_forward("jet_bad", "d0 d1", x, 2, xs, KTR_FLOAT, u, 2, us, KTR_FLOAT, nullptr, 0, nullptr,
                          KTR_FLOAT, nullptr),
          "asks for 2 columns");
  ASSERT_EQ(
      ktr_jet_forward("jet_bad", "d0 d1", x, 2, xs, KTR_FLOAT, u, 2, us, KTR_FLOAT, d, 3, ds, KTR_FLOAT, nullptr),
      KTR_RESULT_SUCCESS)
      << capi_error();
  std::int64_t const wide[2] = {2, 2};
  refused(ktr_jet_backward("jet_bad", d, 2, wide, KTR_FLOAT, nullptr, 0, nullptr, KTR_FLOAT, nullptr),
          "output_seed: must be (N, m) as the forward's output");
  ASSERT_EQ(ktr_jet_backward("jet_bad", seed, 2, us, KTR_FLOAT, nullptr, 0, nullptr, KTR_FLOAT, nullptr),
            KTR_RESULT_SUCCESS)
      << capi_error();
  refused(ktr_jet_backward("jet_bad", seed, 2, us, KTR_FLOAT, nullptr, 0, nullptr, KTR_FLOAT, nullptr),
          "ktr_jet_forward first");
  EXPECT_EQ(ktr_apply_gradients("jet_bad", 0.5f, nullptr), KTR_RESULT_SUCCESS) << capi_error();
  refused(ktr_derivatives("nobody", "d0", x, 2, xs, KTR_FLOAT, u, 2, us, KTR_FLOAT, d, 3, ds, KTR_FLOAT, nullptr),
          "nobody");
  ASSERT_EQ(ktr_destroy_model("jet_bad"), KTR_RESULT_SUCCESS);
}

// Sobolev targets from the YAML file (loss.parameters.derivatives) through ktr_train, and through a replay buffer
// (ktr_push, ktr_train_steps): labels (N, 1, 1 + 3) carry y = sin(x0) + x1 x2 / 2 and its gradient. Against the
// same run on the values alone, the gradient that
// ktr_derivatives reads back is several times closer to the truth (0.041 against 0.142 on a Zen 4), and so are
// the values (0.012 against 0.047).
TEST(CApiDerivatives, KtrTrainOnSobolevTargetsFromTheFileTrainsTheGradientToo) {
  auto run = [&](char const* name, bool sobolev, bool buffer) {
    std::string const path = ::testing::TempDir() + name + std::string(".yaml");
    std::ofstream(path) << "general: {seed: 3, normalize: standard"
                        << (buffer ? ", buffer_size: 1024, batch_size: 64" : "") << "}\n"
                        << "model: {type: ktr, parameters: {description: \"in=3 dense:32:tanh dense:32:tanh "
                           "dense:1\"}}\n"
                        << "optimizer: {type: adam, parameters: {learning_rate: 0.005}}\n"
                        << (sobolev ? "loss: {type: mse, parameters: {derivatives: \"d0 d1 d2\"}}\n" : "");
    EXPECT_EQ(ktr_create_model(name, path.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << capi_error();
    std::int64_t const b = 64, cols = sobolev ? 4 : 1;
    for (int step = 0; step < 300; ++step) {
      std::vector<float> const x = uniform(std::size_t(3 * b), -1.0f, 1.0f, unsigned(100 + step));
      std::vector<float> y(std::size_t(b * cols));
      for (std::int64_t i = 0; i < b; ++i) {
        float const* p = &x[std::size_t(3 * i)];
        float* t = &y[std::size_t(i * cols)];
        t[0] = std::sin(p[0]) + p[1] * p[2] / 2;
        if (sobolev) t[1] = std::cos(p[0]), t[2] = p[2] / 2, t[3] = p[1] / 2;
      }
      std::int64_t const xs[2] = {b, 3}, ys[3] = {b, 1, cols};
      float* const in = const_cast<float*>(x.data());
      EXPECT_EQ(buffer ? ktr_push(name, in, 2, xs, KTR_FLOAT, y.data(), sobolev ? 3 : 2, ys, KTR_FLOAT, nullptr)
                       : ktr_train(name, in, 2, xs, KTR_FLOAT, y.data(), sobolev ? 3 : 2, ys, KTR_FLOAT, nullptr,
                                   nullptr),
                KTR_RESULT_SUCCESS)
          << capi_error();
      if (buffer) EXPECT_EQ(ktr_train_steps(name, 1, nullptr, nullptr), KTR_RESULT_SUCCESS) << capi_error();
    }
    // Held-out points: the values' and the gradient's RMS errors.
    std::int64_t const n = 256;
    std::vector<float> const x = uniform(std::size_t(3 * n), -1.0f, 1.0f, 7);
    std::vector<float> u(static_cast<std::size_t>(n)), d(std::size_t(3 * n));
    std::int64_t const xs[2] = {n, 3}, us[2] = {n, 1}, ds[3] = {n, 1, 3};
    EXPECT_EQ(ktr_derivatives(name, "d0 d1 d2", const_cast<float*>(x.data()), 2, xs, KTR_FLOAT, u.data(), 2, us,
                              KTR_FLOAT, d.data(), 3, ds, KTR_FLOAT, nullptr),
              KTR_RESULT_SUCCESS)
        << capi_error();
    double ev = 0, ed = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      float const* p = &x[std::size_t(3 * i)];
      float const* g = &d[std::size_t(3 * i)];
      ev += std::pow(u[std::size_t(i)] - (std::sin(p[0]) + p[1] * p[2] / 2), 2);
      ed += std::pow(g[0] - std::cos(p[0]), 2) + std::pow(g[1] - p[2] / 2, 2) + std::pow(g[2] - p[1] / 2, 2);
    }
    EXPECT_EQ(ktr_destroy_model(name), KTR_RESULT_SUCCESS);
    return std::make_pair(std::sqrt(ev / double(n)), std::sqrt(ed / double(3 * n)));
  };
  for (bool const buffer : {false, true}) {
    auto const [sobolev_value, sobolev_gradient] = run("sobolev_c", true, buffer);
    auto const [plain_value, plain_gradient] = run("plain_c", false, buffer);
    std::printf("%s: value RMS %.3g vs %.3g, gradient RMS %.3g vs %.3g (Sobolev vs values alone)\n",
                buffer ? "replay buffer" : "ktr_train", sobolev_value, plain_value, sobolev_gradient,
                plain_gradient);
    EXPECT_LT(sobolev_gradient * 2, plain_gradient) << (buffer ? "replay buffer" : "ktr_train");
    EXPECT_LT(sobolev_value, plain_value) << (buffer ? "replay buffer" : "ktr_train");
  }
}
