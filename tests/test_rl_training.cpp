// How the off-policy systems train beyond the buffer: TorchFort's noise actors (rl/noise.hpp) in predict_explore,
// against host references that draw the same counter-based normals (the Ornstein-Uhlenbeck recurrence of
// space_noise_ou, adaptive sigma, parameter_noise and its OU form), a TD3 system of each kind that trains and
// resumes bit for bit (the OU states are saved); and gradient accumulation's windows.
#include <ktr/core/error.hpp>
#include <ktr/rl/off_policy.hpp>
#include <ktr/rl/random.hpp>
#include <ktr/rl/torchfort_check.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

namespace {

using ktr::Shape;
using ktr::Tensor;
using ktr::rl::NoiseKind;
using ktr::rl::OffPolicyConfig;
using ktr::rl::OffPolicySystem;

OffPolicyConfig config(NoiseKind kind, bool adaptive) {
  OffPolicyConfig c = ktr::rl::torchfort_check_config(OffPolicyConfig::Algorithm::td3, 21);
  c.noise = kind, c.adaptive = adaptive;
  c.a_low = -100, c.a_high = 100;  // no clamp: the noise is what the test sees
  c.sigma_explore = 0.3f, c.dt = 0.5f, c.xi = 0.4f;
  c.max_size = 256, c.min_size = 32, c.batch_size = 16;
  return c;
}

// The explore stream's normal number k of call `call` (OffPolicySystem::predict's key).
float z(OffPolicyConfig const& c, std::int64_t call, std::int64_t k) {
  return ktr::rl::standard_normal(ktr::rl::stream_key(c.seed, 12) ^ ktr::mix64(std::uint64_t(call)),
                                  std::uint64_t(k));
}

std::vector<float> forward(ktr::ExecSpace const& space, ktr::Model& m, std::vector<float> const& s) {
  Tensor in("in", Shape{std::int64_t(s.size()), 1});
  ktr::from_host(in, s);
  std::vector<float> out = ktr::to_host(m.forward(space, ktr::Precision{}, in));
  out.resize(s.size());
  return out;
}

std::vector<float> explore(ktr::ExecSpace const& space, OffPolicySystem& system, std::vector<float> const& s) {
  Tensor in("in", Shape{std::int64_t(s.size()), 1}), out("out", Shape{std::int64_t(s.size()), 1});
  ktr::from_host(in, s);
  system.predict(space, in, out, true);
  return ktr::to_host(out);
}

double biased_std(std::vector<float> const& v) {
  double m = 0, q = 0;
  for (float x : v) m += x / double(v.size());
  for (float x : v) q += (x - m) * (x - m) / double(v.size());
  return std::sqrt(q);
}

// space_noise_ou: x = sigma z at the first call, then x += xi (0 - x) dt + sigma sqrt(dt) z, one state per action
// value; adaptive: sigma times the standard deviation of the call's actions.
TEST(RlNoise, SpaceNoiseOuFollowsTheOrnsteinUhlenbeckRecurrence) {
  ktr::ExecSpace space;
  for (bool adaptive : {false, true}) {
    OffPolicyConfig const c = config(NoiseKind::space_ou, adaptive);
    OffPolicySystem system(space, c);
    std::vector<float> const s = {-1, 0, 0.5f, 2};
    std::vector<float> const mean = forward(space, system.policy(), s);
    double const sigma = c.sigma_explore * (adaptive ? biased_std(mean) : 1.0);
    std::vector<double> x(4);
    for (int call = 0; call < 4; ++call) {
      std::vector<float> const a = explore(space, system, s);
      for (std::size_t k = 0; k < 4; ++k) {
        double const zk = z(c, call, std::int64_t(k));
        x[k] = call == 0 ? sigma * zk : x[k] + c.xi * (0 - x[k]) * c.dt + sigma * std::sqrt(double(c.dt)) * zk;
        EXPECT_NEAR(a[k], mean[k] + x[k], 2e-5) << "adaptive " << adaptive << ", call " << call << ", value " << k;
      }
    }
  }
}

// parameter_noise: the action of the policy with sigma z added to every parameter (z numbered by the parameter's
// place in the arena); parameter_noise_ou: the same through the OU recurrence.
TEST(RlNoise, ParameterNoiseActsWithPerturbedParameters) {
  ktr::ExecSpace space;
  for (NoiseKind kind : {NoiseKind::parameter, NoiseKind::parameter_ou}) {
    OffPolicyConfig const c = config(kind, false);
    OffPolicySystem system(space, c);
    ktr::Model copy(space, c.policy, 4);
    ktr::Arena const& arena = system.policy().arena();
    std::vector<float> const p = ktr::to_host(Tensor(arena.params(), Shape{arena.size()}));
    std::vector<double> x(p.size());
    std::vector<float> const s = {-1, 0, 0.5f, 2};
    for (int call = 0; call < 3; ++call) {
      std::vector<float> noisy = p;
      for (std::size_t i = 0; i < arena.count(); ++i)
        for (std::int64_t j = arena.offset(i); j < arena.offset(i) + arena.param(i).size(); ++j) {
          double const zj = z(c, call, j);
          double& xj = x[std::size_t(j)];
          xj = kind == NoiseKind::parameter || call == 0
                   ? c.sigma_explore * zj
                   : xj + c.xi * (0 - xj) * c.dt + c.sigma_explore * std::sqrt(double(c.dt)) * zj;
          noisy[std::size_t(j)] = float(p[std::size_t(j)] + xj);
        }
      ktr::from_host(Tensor(copy.arena().params(), Shape{copy.arena().size()}), noisy);
      std::vector<float> const want = forward(space, copy, s), got = explore(space, system, s);
      for (std::size_t k = 0; k < 4; ++k) EXPECT_NEAR(got[k], want[k], 1e-4) << "call " << call << ", row " << k;
    }
  }
}

// A TD3 system of each actor kind trains (the target policy smoothed by the same actor with sigma_train and clip),
// and a restored copy predicts and trains on bit for bit.
TEST(RlNoise, EveryActorKindTrainsAndResumesBitForBit) {
  ktr::ExecSpace space;
  std::string const dir = ::testing::TempDir() + "ktr_rl_noise_ckpt";
  Tensor s("s", Shape{1, 1}), a("a", Shape{1, 1}), r("r", Shape{1}), d("d", Shape{1}), probe("p", Shape{3, 1}),
      out("o", Shape{3, 1});
  ktr::from_host(probe, {-1, 0, 1});
  auto drive = [&](OffPolicySystem& sys, int from, int count) {
    for (int i = from; i < from + count; ++i) {
      ktr::from_host(s, {float(i % 3) - 1});
      sys.predict(space, s, a, true);
      ktr::from_host(r, {float(i % 2)}), ktr::from_host(d, {1});
      sys.push(space, s.data(), a.data(), r.data(), s.data(), d.data());
      if (sys.ready(space)) sys.train(space, 2);
    }
    sys.predict(space, probe, out, true);
    return ktr::to_host(out);
  };
  for (NoiseKind kind : {NoiseKind::space, NoiseKind::space_ou, NoiseKind::parameter, NoiseKind::parameter_ou}) {
    OffPolicyConfig c = config(kind, kind != NoiseKind::space_ou);
    c.a_low = -1, c.a_high = 1;
    OffPolicySystem first(space, c);
    drive(first, 0, 60);
    first.save(space, dir);
    OffPolicySystem second(space, c);
    second.load(space, dir);
    std::vector<float> const x = drive(first, 60, 20), y = drive(second, 60, 20);
    EXPECT_EQ(x, y) << "actor kind " << int(kind);
    for (float v : x) EXPECT_TRUE(std::isfinite(v) && v >= -1 && v <= 1);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace

namespace {

std::vector<float> params_of(ktr::Model const& m) {
  return ktr::to_host(Tensor(m.arena().params(), Shape{m.arena().size()}));
}

// grad_accumulation_steps N: each network's parameters stay as they are until its N-th micro-step (the critics
// count every update; TD3's policy its own, every policy_lag-th), and the targets move only then; a system saved
// inside a window resumes bit for bit (the running sums are in the checkpoint).
TEST(RlAccumulation, NetworksAndTargetsMoveOnlyAtTheirWindowsEnd) {
  ktr::ExecSpace space;
  for (auto algorithm : {OffPolicyConfig::Algorithm::td3, OffPolicyConfig::Algorithm::sac}) {
    OffPolicyConfig c = ktr::rl::torchfort_check_config(algorithm, 4);
    c.accumulate = 3, c.min_size = 16, c.batch_size = 16;
    bool const td3 = algorithm == OffPolicyConfig::Algorithm::td3;
    OffPolicySystem sys(space, c);
    Tensor s("s", Shape{1, 1}), a("a", Shape{1, 1}), r("r", Shape{1}), d("d", Shape{1});
    for (int i = 0; i < 16; ++i) {
      ktr::from_host(s, {float(i % 3) - 1}), ktr::from_host(a, {0.5f}), ktr::from_host(r, {1}),
          ktr::from_host(d, {1});
      sys.push(space, s.data(), a.data(), r.data(), s.data(), d.data());
    }
    ASSERT_TRUE(sys.ready(space));
    std::vector<float> critic = params_of(sys.critic(0)), policy = params_of(sys.policy()),
                       target = params_of(sys.critic_target(0));
    int const policy_end = td3 ? 6 : 3;  // TD3: the policy steps at updates 2, 4, 6 (lag 2)
    for (int u = 1; u <= policy_end; ++u) {
      sys.train(space, 1);
      bool const critic_end = u % 3 == 0;
      EXPECT_EQ(params_of(sys.critic(0)) != critic, critic_end) << "update " << u;
      EXPECT_EQ(params_of(sys.policy()) != policy, u == policy_end) << "update " << u;
      EXPECT_EQ(params_of(sys.critic_target(0)) != target, u == policy_end) << "update " << u;
      critic = params_of(sys.critic(0)), policy = params_of(sys.policy()),
      target = params_of(sys.critic_target(0));
    }
    sys.train(space, 1);  // inside the next window
    std::string const dir = ::testing::TempDir() + "ktr_rl_accumulate";
    sys.save(space, dir);
    OffPolicySystem copy(space, c);
    copy.load(space, dir);
    sys.train(space, 5);
    copy.train(space, 5);
    EXPECT_EQ(params_of(copy.critic(0)), params_of(sys.critic(0)));
    EXPECT_EQ(params_of(copy.policy()), params_of(sys.policy()));
    std::filesystem::remove_all(dir);
  }
}

}  // namespace
