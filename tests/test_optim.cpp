// Optimisers against a plain host double-precision reference over many steps; schedules; clipping.
#include <ktr/core/error.hpp>
#include <ktr/core/tensor.hpp>
#include <ktr/optim/optimizer.hpp>
#include <ktr/train/run_settings.hpp>
#include "reference.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <vector>

namespace {

using ktr::OptimizerConfig;

// The textbook update rules in double (Optax's adam/adamw/sgd(momentum, nesterov), clip_by_global_norm).
struct Reference {
  OptimizerConfig c;
  std::vector<double> p, m, v;
  std::int64_t t = 0;

  void step(std::vector<double> g) {
    if (c.clip_norm > 0) {
      double norm = 0;
      for (double x : g) norm += x * x;
      norm = std::sqrt(norm);
      if (norm > c.clip_norm)
        for (double& x : g) x *= c.clip_norm / norm;
    }
    double const lr = c.lr * c.schedule.scale(t);
    ++t;
    if (c.kind != OptimizerConfig::Kind::adamw)  // PyTorch's weight_decay for sgd and adam: g + l2 p
      for (std::size_t i = 0; i < p.size(); ++i) g[i] += c.l2 * p[i];
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (c.kind == OptimizerConfig::Kind::sgd) {
        if (c.momentum > 0) {
          m[i] = g[i] + c.momentum * m[i];
          p[i] -= lr * (c.nesterov ? g[i] + c.momentum * m[i] : m[i]);
        } else {
          p[i] -= lr * g[i];
        }
        continue;
      }
      m[i] = c.b1 * m[i] + (1 - c.b1) * g[i];
      v[i] = c.b2 * v[i] + (1 - c.b2) * g[i] * g[i];
      double const mhat = m[i] / (1 - std::pow(double(c.b1), double(t)));
      double const vhat = v[i] / (1 - std::pow(double(c.b2), double(t)));
      double const decay = c.kind == OptimizerConfig::Kind::adamw ? c.weight_decay : 0.0;
      p[i] -= lr * (mhat / (std::sqrt(vhat) + c.eps) + decay * p[i]);
    }
  }
};

void run_against_reference(OptimizerConfig const& c, int steps = 25) {
  std::int64_t const n = 1000;
  ktr::ExecSpace space;
  ktr::Tensor params("ktr::test::params", {n}), grads("ktr::test::grads", {n});
  auto p0 = ktr::test::random_floats(std::size_t(n), 1);
  ktr::from_host(params, p0);
  ktr::Optimizer opt(c, n);
  Kokkos::View<std::int64_t, ktr::MemSpace> step("ktr::test::step");
  Reference ref{c, ktr::test::to_double(p0), std::vector<double>(n), std::vector<double>(n)};
  for (int s = 0; s < steps; ++s) {
    auto g = ktr::test::random_floats(std::size_t(n), 100 + std::uint32_t(s), -2.0f, 2.0f);
    ktr::from_host(grads, g);
    opt.update(space, params.view(), grads.view(), step);
    ref.step(ktr::test::to_double(g));
  }
  auto got = ktr::to_host(params);
  for (std::int64_t i = 0; i < n; ++i)
    ASSERT_NEAR(got[std::size_t(i)], ref.p[std::size_t(i)], 2e-6 + 2e-6 * std::abs(ref.p[std::size_t(i)])) << i;
  std::int64_t host_step = 0;
  Kokkos::deep_copy(host_step, step);
  EXPECT_EQ(host_step, steps);
}

// After one real gradient, a parameter whose gradient stays zero has moments that decay geometrically: they must
// go straight from normal floats to zero, never through subnormals (which cost a microcode assist per operation
// on x86 CPUs), for Adam's m and v and SGD's momentum trace.
TEST(Optimizer, MomentsOfAZeroGradientNeverTurnSubnormal) {
  for (auto kind : {OptimizerConfig::Kind::adam, OptimizerConfig::Kind::sgd}) {
    OptimizerConfig c;
    c.kind = kind;
    c.momentum = 0.5f;
    c.b1 = 0.5f;  // fast decay: m passes the subnormal range within ~150 steps
    c.b2 = 0.6f;
    std::int64_t const n = 4;
    ktr::ExecSpace space;
    ktr::Tensor params("ktr::test::params", {n}), grads("ktr::test::grads", {n});
    ktr::Optimizer opt(c, n);
    Kokkos::View<std::int64_t, ktr::MemSpace> step("ktr::test::step");
    ktr::from_host(grads, std::vector<float>{1.0f, -1e-3f, 1e-10f, 0.0f});
    opt.update(space, params.view(), grads.view(), step);
    ktr::from_host(grads, std::vector<float>(n, 0.0f));
    int subnormal = 0;
    for (int s = 0; s < 300; ++s) {
      opt.update(space, params.view(), grads.view(), step);
      for (auto const& state : opt.state()) {
        auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), state);
        for (std::size_t i = 0; i < h.extent(0); ++i) subnormal += std::fpclassify(h(i)) == FP_SUBNORMAL;
      }
    }
    EXPECT_EQ(subnormal, 0) << ktr::OptimizerConfig::kind_name(kind);
    for (auto const& state : opt.state()) {
      auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), state);
      for (std::size_t i = 0; i < h.extent(0); ++i) EXPECT_EQ(h(i), 0.0f) << i;  // all decayed to zero
    }
  }
}

TEST(Optimizer, SgdMatchesReference) {
  OptimizerConfig c;
  c.kind = OptimizerConfig::Kind::sgd;
  c.lr = 0.05f;
  run_against_reference(c);
}

TEST(Optimizer, SgdMomentumAndNesterovMatchReference) {
  OptimizerConfig c;
  c.kind = OptimizerConfig::Kind::sgd;
  c.lr = 0.01f;
  c.momentum = 0.9f;
  run_against_reference(c);
  c.nesterov = true;
  run_against_reference(c);
}

TEST(Optimizer, AdamMatchesReference) {
  OptimizerConfig c;  // defaults: lr 1e-3, b1 0.9, b2 0.999, eps 1e-8
  EXPECT_EQ(c.kind, OptimizerConfig::Kind::adam);
  EXPECT_FLOAT_EQ(c.lr, 1e-3f);
  run_against_reference(c, 30);
}

// TorchFort's (PyTorch's) weight_decay under sgd and adam: an L2 penalty's gradient added before the moments.
TEST(Optimizer, L2PenaltyOfSgdAndAdamMatchesReference) {
  for (auto kind : {OptimizerConfig::Kind::sgd, OptimizerConfig::Kind::adam}) {
    for (float momentum : {0.0f, 0.9f}) {
      OptimizerConfig c;
      c.kind = kind;
      c.l2 = 0.5f;
      c.lr = 0.01f;
      c.momentum = kind == OptimizerConfig::Kind::sgd ? momentum : 0.0f;
      run_against_reference(c);
    }
  }
}

TEST(Optimizer, AdamWMatchesReference) {
  OptimizerConfig c;
  c.kind = OptimizerConfig::Kind::adamw;
  c.weight_decay = 0.1f;
  c.lr = 0.01f;
  run_against_reference(c);
}

TEST(Optimizer, ScheduledAndClippedAdamMatchesReference) {
  OptimizerConfig c;
  c.schedule = ktr::Schedule::parse("cosine:20:5:0.1");
  c.clip_norm = 3.0f;  // the random gradients have norm ~36: always clipped
  run_against_reference(c, 30);
}

TEST(Optimizer, ClippingScalesToTheGlobalNorm) {
  ktr::ExecSpace space;
  ktr::Tensor params("ktr::test::params", {2}), grads("ktr::test::grads", {2});
  ktr::from_host(grads, {3.0f, 4.0f});  // norm 5
  OptimizerConfig c;
  c.kind = OptimizerConfig::Kind::sgd;
  c.lr = 1.0f;
  c.clip_norm = 1.0f;
  ktr::Optimizer opt(c, 2);
  Kokkos::View<std::int64_t, ktr::MemSpace> step("ktr::test::step");
  opt.update(space, params.view(), grads.view(), step);
  auto p = ktr::to_host(params);
  EXPECT_FLOAT_EQ(p[0], -0.6f);
  EXPECT_FLOAT_EQ(p[1], -0.8f);
}

// A non-finite gradient, or a non-finite loss the caller names, refuses the update: parameters, moments and step
// stay as they were, and the refusal is counted on the device.
TEST(Optimizer, ANonFiniteGradientOrLossRefusesTheUpdate) {
  ktr::ExecSpace space;
  for (auto kind : {OptimizerConfig::Kind::sgd, OptimizerConfig::Kind::adam}) {
    ktr::Tensor params("ktr::test::params", {3}), grads("ktr::test::grads", {3}), loss("ktr::test::loss", {2});
    ktr::from_host(params, {1.0f, 2.0f, 3.0f});
    ktr::from_host(grads, {0.5f, -0.25f, 1.0f});
    OptimizerConfig c;
    c.kind = kind;
    c.momentum = 0.5f;
    ktr::Optimizer opt(c, 3);
    Kokkos::View<std::int64_t, ktr::MemSpace> step("ktr::test::step");
    opt.update(space, params.view(), grads.view(), step);  // one good update
    auto const p1 = ktr::to_host(params);
    auto moments = [&] {
      std::vector<std::vector<float>> m;
      for (auto const& v : opt.state()) {
        m.emplace_back(v.extent(0));
        Kokkos::deep_copy(
            Kokkos::View<float*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(m.back().data(), v.extent(0)), v);
      }
      return m;
    };
    auto const m1 = moments();
    ktr::from_host(grads, {0.5f, std::numeric_limits<float>::infinity(), 1.0f});
    opt.update(space, params.view(), grads.view(), step);
    ktr::from_host(grads, {0.5f, -0.25f, 1.0f});
    ktr::from_host(loss, {0.1f, std::numeric_limits<float>::quiet_NaN()});
    opt.update(space, params.view(), grads.view(), step, loss.view().data(), 2);
    EXPECT_EQ(ktr::to_host(params), p1);
    EXPECT_EQ(moments(), m1);
    std::int64_t t = 0, refused = 0;
    Kokkos::deep_copy(t, step);
    Kokkos::deep_copy(refused, opt.refused());
    EXPECT_EQ(t, 1);
    EXPECT_EQ(refused, 2);
    ktr::from_host(loss, {0.1f, 0.2f});
    opt.update(space, params.view(), grads.view(), step, loss.view().data(), 2);  // finite: applied
    EXPECT_NE(ktr::to_host(params), p1);
  }
}

TEST(Schedule, ValuesAtChosenSteps) {
  auto warm = ktr::Schedule::parse("warmup:10");
  EXPECT_DOUBLE_EQ(warm.scale(0), 0.0);
  EXPECT_DOUBLE_EQ(warm.scale(5), 0.5);
  EXPECT_DOUBLE_EQ(warm.scale(10), 1.0);
  EXPECT_DOUBLE_EQ(warm.scale(1000), 1.0);
  auto cos = ktr::Schedule::parse("cosine:100:0:0.1");
  EXPECT_DOUBLE_EQ(cos.scale(0), 1.0);
  EXPECT_NEAR(cos.scale(50), 0.55, 1e-7);
  EXPECT_NEAR(cos.scale(100), 0.1, 1e-7);
  EXPECT_NEAR(cos.scale(500), 0.1, 1e-7);
  auto wc = ktr::Schedule::parse("cosine:100:10");
  EXPECT_DOUBLE_EQ(wc.scale(5), 0.5);
  EXPECT_DOUBLE_EQ(wc.scale(10), 1.0);
  EXPECT_NEAR(wc.scale(60), 0.5, 1e-12);
  auto st = ktr::Schedule::parse("step:30:0.5");
  EXPECT_DOUBLE_EQ(st.scale(29), 1.0);
  EXPECT_DOUBLE_EQ(st.scale(30), 0.5);
  EXPECT_DOUBLE_EQ(st.scale(95), 0.125);
  EXPECT_EQ(ktr::Schedule::parse("constant").scale(12345), 1.0);
  for (char const* bad : {"", "cosine", "cosine:0", "step:x", "warmup:-1", "linear:0", "warmup:1:2",
                          "exponential:3", "multistep:5,3", "multistep:", "poly:0", "multistep:1,2,3,4,5,6,7,8,9"})
    EXPECT_THROW(ktr::Schedule::parse(bad), ktr::Error) << bad;
}

TEST(Schedule, DeviceLearningRateFollowsTheDeviceStep) {
  ktr::ExecSpace space;
  ktr::Tensor params("ktr::test::params", {4}), grads("ktr::test::grads", {4});
  OptimizerConfig c;
  c.lr = 0.5f;
  c.schedule = ktr::Schedule::parse("step:2:0.5");
  ktr::Optimizer opt(c, 4);
  Kokkos::View<std::int64_t, ktr::MemSpace> step("ktr::test::step");
  Kokkos::deep_copy(step, std::int64_t(4));  // as if resumed after 4 updates
  opt.update(space, params.view(), grads.view(), step);
  auto scalars = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), opt.scalars());
  EXPECT_FLOAT_EQ(scalars(0), 0.125f);                                    // 0.5 * 0.5^(4 / 2)
  EXPECT_FLOAT_EQ(scalars(1), float(1.0 - std::pow(double(0.9f), 5.0)));  // bias corrections for t = 5
  EXPECT_FLOAT_EQ(scalars(2), float(1.0 - std::pow(double(0.999f), 5.0)));
}

TEST(Optimizer, RejectsBadConfigurations) {
  OptimizerConfig c;
  c.lr = 0.0f;
  EXPECT_THROW(ktr::Optimizer(c, 4), ktr::Error);
  EXPECT_THROW(OptimizerConfig::parse_kind("rmsprop"), ktr::Error);
  EXPECT_EQ(OptimizerConfig::parse_kind("adamw"), OptimizerConfig::Kind::adamw);
}

}  // namespace

namespace {

// Issue 41: one range per optimiser setting. The settings table (files, flags, checkpoints) and the Optimizer (any
// C++ caller) accept and refuse the same values: each bound and a value just beyond it.
TEST(Optimizer, AcceptsExactlyWhatTheSettingsTableAccepts) {
  auto const& table = ktr::run_settings();
  struct Case {
    char const* name;
    float ktr::OptimizerConfig::*field;
    std::vector<char const*> values;
  };
  for (Case const& c :
       std::vector<Case>{{"lr", &ktr::OptimizerConfig::lr, {"1e-12", "1e6", "1e-13", "1e7", "0", "nan"}},
                         {"momentum", &ktr::OptimizerConfig::momentum, {"0", "0.999999", "1", "-0.1"}},
                         {"b1", &ktr::OptimizerConfig::b1, {"0", "0.999999", "1"}},
                         {"eps", &ktr::OptimizerConfig::eps, {"1e-30", "1", "2", "0"}},
                         {"weight_decay", &ktr::OptimizerConfig::weight_decay, {"0", "1e6", "2e6", "-1"}},
                         {"l2", &ktr::OptimizerConfig::l2, {"0", "1e6", "2e6"}},
                         {"clip_norm", &ktr::OptimizerConfig::clip_norm, {"0", "3.4e38", "-1"}}}) {
    auto const& setting = ktr::setting_named(table, c.name);
    for (char const* text : c.values) {
      bool const table_accepts = setting.check(text).empty();
      ktr::OptimizerConfig config;
      config.*c.field = float(std::strtod(text, nullptr));
      bool optimizer_accepts = true;
      try {
        ktr::Optimizer(config, 4);
      } catch (ktr::Error const&) {
        optimizer_accepts = false;
      }
      EXPECT_EQ(optimizer_accepts, table_accepts) << c.name << " = " << text;
    }
  }
}

}  // namespace
