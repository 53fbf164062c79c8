// `ktr bench rl`: off-policy updates per second at TorchFort's test sizes and its cart-pole's, one update per call
// and K per call, the latency of each per-step call, and (--suite) TorchFort's whole convergence suite, timed.
#include "bench.hpp"
#include "measure.hpp"

#include <ktr/backends/device_info.hpp>
#include <ktr/backends/kernel_timer.hpp>
#include <ktr/rl/torchfort_check.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>

namespace ktr::bench {

namespace {

using rl::OffPolicyConfig;
using rl::OffPolicySystem;

struct Size {
  char const* name;
  std::int64_t batch, state, action;
  char const *policy, *critic;
};
// TorchFort's tests (tests/rl/configs) and its cart-pole example (examples/cpp/cart_pole/config_sim.yaml).
Size const kSizes[] = {
    {"tests (b128, 16)", 128, 1, 1, "in=1 dense:16:relu dense:1", "in=2 dense:16:relu dense:1"},
    {"cart-pole (b512, 128-64)", 512, 4, 1, "in=4 dense:128:relu dense:64:relu dense:1",
     "in=5 dense:128:relu dense:64:relu dense:1"},
};

char const* algorithm_name(OffPolicyConfig::Algorithm a) {
  return a == OffPolicyConfig::Algorithm::td3 ? "td3" : (a == OffPolicyConfig::Algorithm::ddpg ? "ddpg" : "sac");
}

OffPolicyConfig config_of(Size const& s, OffPolicyConfig::Algorithm a) {
  OffPolicyConfig c = rl::torchfort_check_config(a, 1);
  c.batch_size = s.batch, c.policy = s.policy, c.critic = s.critic;
  c.max_size = 1 << 16, c.min_size = 1024;
  return c;
}

// A system whose buffer holds 1,024 random transitions.
void fill_buffer(ExecSpace const& space, OffPolicySystem& sys) {
  std::int64_t const S = sys.state_dim(), A = sys.action_dim();
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> s(static_cast<std::size_t>(S)), a(static_cast<std::size_t>(A));
  Tensor ts(space, "ktr::bench::rl_s", Shape{1, S}), ta(space, "ktr::bench::rl_a", Shape{1, A}),
      tn(space, "ktr::bench::rl_n", Shape{1, S}), tr(space, "ktr::bench::rl_r", Shape{1}),
      td(space, "ktr::bench::rl_d", Shape{1});
  for (int i = 0; i < 1024; ++i) {
    for (auto& v : s) v = u(rng);
    for (auto& v : a) v = u(rng);
    from_host(ts, s);
    from_host(ta, a);
    for (auto& v : s) v = u(rng);
    from_host(tn, s);
    from_host(tr, {u(rng)});
    from_host(td, {i % 10 == 9 ? 1.0f : 0.0f});
    sys.push(space, ts.data(), ta.data(), tr.data(), tn.data(), td.data());
  }
  sys.ready(space);
}

int run_suite(ExecSpace const& space, int seeds) {
  std::printf(
      "TorchFort's off-policy convergence suite (its environments, configurations, iteration counts and "
      "criteria), %d seed(s):\n",
      seeds);
  auto const t0 = std::chrono::steady_clock::now();
  int failed = 0;
  std::int64_t iterations = 0;
  for (auto const& c : rl::torchfort_check_cases())
    for (int seed = 1; seed <= seeds; ++seed) {
      auto const t = std::chrono::steady_clock::now();
      rl::CheckResult const r = rl::run_torchfort_check(space, c, std::uint64_t(seed));
      double const s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
      iterations += c.explore + c.exploit + c.evaluate;
      failed += r.passed() ? 0 : 1;
      std::printf("  %-4s %-12s seed %d: %s %.4g (want %g within %g)  %.1f s\n", algorithm_name(c.algorithm),
                  rl::check_environment_name(c.environment), seed, r.passed() ? "pass" : "FAIL", double(r.value),
                  double(r.target), double(r.tolerance), s);
    }
  double const total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "suite: %lld iterations (each a predict, a buffer update, an update and an evaluate) in %.1f s "
      "(%.0f per second); %d failed\n",
      static_cast<long long>(iterations), total, double(iterations) / total, failed);
  return failed == 0 ? 0 : 1;
}

}  // namespace

int run_rl(ExecSpace const& space, RlBenchOptions const& o) {
  std::printf("ktr bench rl on %s\n", device_description().c_str());
  if (o.suite) return run_suite(space, o.seeds);
  std::printf(
      "updates per second, %d interleaved rounds of %lld updates (medians); K updates per call, no "
      "read-back\n",
      o.rounds, static_cast<long long>(o.updates));
  std::printf("%-26s %-5s %12s %12s %8s\n", "size", "algo", "K=1", "K=16", "K=16/1");
  for (auto const& size : kSizes)
    for (auto a :
         {OffPolicyConfig::Algorithm::td3, OffPolicyConfig::Algorithm::ddpg, OffPolicyConfig::Algorithm::sac}) {
      OffPolicySystem sys(space, config_of(size, a));
      fill_buffer(space, sys);
      sys.train(space, 16);
      space.fence();
      std::vector<double> rate[2];
      for (int round = 0; round < o.rounds; ++round)
        for (int k : {1, 16}) {
          auto const t = std::chrono::steady_clock::now();
          for (std::int64_t done = 0; done < o.updates; done += k) sys.train(space, k);
          space.fence();
          double const s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
          rate[k == 16].push_back(double(o.updates) / s);
        }
      double const r1 = median(rate[0]), r16 = median(rate[1]);
      std::printf("%-26s %-5s %12s %12s %8.2f\n", size.name, algorithm_name(a), num(r1, 0).c_str(),
                  num(r16, 0).c_str(), r16 / r1);
    }
  // What the buffer's sampling costs: TD3 at the tests' size, K = 16, each buffer kind in the same rounds.
  {
    struct Kind {
      char const* name;
      bool prioritized;
      int nstep;
    } const kinds[] = {{"uniform", false, 1},
                       {"uniform, nstep 3", false, 3},
                       {"prioritized", true, 1},
                       {"prioritized, nstep 3", true, 3}};
    std::vector<std::unique_ptr<OffPolicySystem>> systems;
    for (auto const& k : kinds) {
      OffPolicyConfig c = config_of(kSizes[0], OffPolicyConfig::Algorithm::td3);
      c.sampling.prioritized = k.prioritized, c.sampling.nstep = k.nstep;
      systems.push_back(std::make_unique<OffPolicySystem>(space, c));
      fill_buffer(space, *systems.back());
      systems.back()->train(space, 16);
    }
    space.fence();
    std::vector<std::vector<double>> rate(systems.size());
    for (int round = 0; round < o.rounds; ++round)
      for (std::size_t i = 0; i < systems.size(); ++i) {
        auto const t = std::chrono::steady_clock::now();
        for (std::int64_t done = 0; done < o.updates; done += 16) systems[i]->train(space, 16);
        space.fence();
        rate[i].push_back(double(o.updates) /
                          std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count());
      }
    std::printf(
        "TD3 at the tests' size, K=16, by replay buffer (updates per second; ratio to uniform, same rounds):\n");
    for (std::size_t i = 0; i < systems.size(); ++i)
      std::printf("  %-22s %12s %8.2f\n", kinds[i].name, num(median(rate[i]), 0).c_str(),
                  median(rate[i]) / median(rate[0]));
  }
  // The per-step calls of an environment loop, one environment, device arrays (on a host build: the caller's).
  OffPolicySystem sys(space, config_of(kSizes[0], OffPolicyConfig::Algorithm::td3));
  fill_buffer(space, sys);
  Tensor s(space, "ktr::bench::rl_s1", Shape{1, 1}), a(space, "ktr::bench::rl_a1", Shape{1, 1}),
      q(space, "ktr::bench::rl_q1", Shape{1}), r(space, "ktr::bench::rl_r1", Shape{1});
  std::printf("per call (us, median of %d; fenced; TorchFort's test sizes):\n", o.rounds);
  struct Call {
    char const* name;
    std::function<void()> body;
  } const calls[] = {
      {"predict", [&] { sys.predict(space, s, a); }},
      {"predict_explore", [&] { sys.predict(space, s, a, true); }},
      {"evaluate", [&] { sys.evaluate(space, s, a, q); }},
      {"buffer update", [&] { sys.push(space, s.data(), a.data(), r.data(), s.data(), r.data()); }},
      {"update (K=1)", [&] { sys.train(space, 1); }},
  };
  for (auto const& c : calls) {
    std::vector<double> us;
    for (int round = 0; round < o.rounds; ++round) us.push_back(1e6 * median_seconds(space, c.body, 200, 20));
    std::printf("  %-16s %8.1f\n", c.name, median(us));
  }
  // Where an update's time goes at those sizes: every kernel and gemm fenced and timed by label.
  {
    KernelTimer timer;
    sys.train(space, 256);
    space.fence();
    auto const entries = timer.entries();
    double const total = timer.total_seconds();
    std::printf("one update, kernel by kernel (fenced, so the sum exceeds the update): %.1f us in %zu labels\n",
                1e6 * total / 256, entries.size());
    for (std::size_t i = 0; i < entries.size() && i < 12; ++i)
      std::printf("  %-48s %6.1f us %5.1f calls\n", entries[i].label.c_str(), 1e6 * entries[i].seconds / 256,
                  double(entries[i].calls) / 256);
  }
  return 0;
}

}  // namespace ktr::bench
