#include "torchfort_check.hpp"

#include <cmath>
#include <random>

namespace ktr::rl {

namespace {

// One environment: a step takes the action and returns the reward and the terminal flag (the next state is
// `state`); spot() is the value the first critic should estimate for the state just left.
struct Environment {
  CheckEnvironment kind;
  int length;
  std::mt19937 rng;
  int steps = 0;
  float state = 0, previous = 0;
  Environment(CheckEnvironment k, unsigned seed)
      : kind(k), length(k == CheckEnvironment::delayed ? 2 : 1), rng(seed) {
    if (kind == CheckEnvironment::predictable || kind == CheckEnvironment::action_state) state = draw();
  }
  float draw() { return std::uniform_int_distribution<int>(0, 1)(rng) ? 1.0f : -1.0f; }
  float step(float action, bool& done) {
    ++steps;
    done = steps % length == 0;
    previous = state;
    switch (kind) {
      case CheckEnvironment::constant:
        return 1.0f;
      case CheckEnvironment::delayed:
        return done ? 1.0f : 0.0f;
      case CheckEnvironment::action:
        return action;
      case CheckEnvironment::predictable:
        state = draw();
        return previous;
      case CheckEnvironment::action_state:
        state = draw();
        return action * previous;
    }
    return 0;
  }
  float spot(float gamma) const {
    switch (kind) {
      case CheckEnvironment::constant:
      case CheckEnvironment::action:
        return 1.0f;
      case CheckEnvironment::delayed:
        return std::pow(gamma, float(steps % length));
      case CheckEnvironment::predictable:
        return previous;
      case CheckEnvironment::action_state:
        return previous < 0 ? -previous : previous;
    }
    return 0;
  }
};

}  // namespace

char const* check_environment_name(CheckEnvironment e) {
  switch (e) {
    case CheckEnvironment::constant:
      return "constant";
    case CheckEnvironment::predictable:
      return "predictable";
    case CheckEnvironment::delayed:
      return "delayed";
    case CheckEnvironment::action:
      return "action";
    case CheckEnvironment::action_state:
      return "action_state";
  }
  return "?";
}

OffPolicyConfig torchfort_check_config(OffPolicyConfig::Algorithm algorithm, std::uint64_t seed) {
  OffPolicyConfig c;
  c.algorithm = algorithm;
  c.batch_size = 128;
  c.num_critics = 2;
  c.policy_lag = 2;
  c.gamma = 0.95f;
  c.rho = 0.999f;
  c.a_low = -1, c.a_high = 1, c.clip = 0.3f, c.sigma_train = 0.2f, c.sigma_explore = 1.0f;
  c.max_size = 4096, c.min_size = 512;
  c.policy = "in=1 dense:16:relu dense:1";
  c.critic = "in=2 dense:16:relu dense:1";
  for (auto* o : {&c.policy_optimizer, &c.critic_optimizer}) {
    o->kind = OptimizerConfig::Kind::adam;
    o->lr = 1e-4f, o->b1 = 0.9f, o->b2 = 0.999f, o->eps = 1e-6f, o->weight_decay = 0, o->l2 = 0;
  }
  c.policy_optimizer.schedule = Schedule::parse("linear:10000:1:0.01");
  c.critic_optimizer.schedule = Schedule::parse("linear:20000:1:0.01");
  if (algorithm == OffPolicyConfig::Algorithm::sac) {  // tests/rl/configs/sac.yaml
    c.alpha = 0.1f;
    c.policy = "in=1 dense:16:relu dense:8:relu dense:1";  // SACMLP [1, 16, 8, 1], a free log sigma from 0
    c.state_dependent_sigma = false, c.log_sigma_init = 0;
    c.tune_alpha = true;
    c.alpha_optimizer = c.critic_optimizer;
    c.policy_optimizer.schedule = c.critic_optimizer.schedule;
  }
  c.seed = seed;
  return c;
}

std::vector<CheckCase> torchfort_check_cases() {
  std::vector<CheckCase> cases;
  for (auto a :
       {OffPolicyConfig::Algorithm::td3, OffPolicyConfig::Algorithm::ddpg, OffPolicyConfig::Algorithm::sac}) {
    cases.push_back({CheckEnvironment::constant, a, 20000, 0, 100});
    cases.push_back({CheckEnvironment::predictable, a, 20000, 0, 100});
    cases.push_back({CheckEnvironment::delayed, a, 40000, 0, 100});
    cases.push_back({CheckEnvironment::action, a, 20000, 1000, 100});
    if (a != OffPolicyConfig::Algorithm::ddpg) cases.push_back({CheckEnvironment::action_state, a, 20000, 0, 100});
  }
  return cases;
}

CheckResult run_torchfort_check(ExecSpace const& space, CheckCase const& cc, std::uint64_t seed) {
  OffPolicyConfig const config = torchfort_check_config(cc.algorithm, seed);
  OffPolicySystem system(space, config);
  Environment env(cc.environment, unsigned(seed));
  Tensor s(space, "ktr::rl::check_s", Shape{1, 1}), a(space, "ktr::rl::check_a", Shape{1, 1}),
      s_next(space, "ktr::rl::check_s_next", Shape{1, 1}), r(space, "ktr::rl::check_r", Shape{1}),
      d(space, "ktr::rl::check_d", Shape{1}), q(space, "ktr::rl::check_q", Shape{1});
  auto hs = Kokkos::create_mirror_view(s.view()), ha = Kokkos::create_mirror_view(a.view()),
       hn = Kokkos::create_mirror_view(s_next.view()), hr = Kokkos::create_mirror_view(r.view()),
       hd = Kokkos::create_mirror_view(d.view()), hq = Kokkos::create_mirror_view(q.view());
  int const train_iters = cc.explore + cc.exploit, total = train_iters + cc.evaluate;
  double q_error = 0, reward_sum = 0;
  hs(0) = env.state;
  Kokkos::deep_copy(space, s.view(), hs);
  for (int it = 0; it < total; ++it) {
    system.predict(space, s, a, it < cc.explore);
    Kokkos::deep_copy(space, ha, a.view());
    space.fence();
    bool done = false;
    float const reward = env.step(ha(0), done);
    hn(0) = env.state, hr(0) = reward, hd(0) = done ? 1.0f : 0.0f;
    Kokkos::deep_copy(space, s_next.view(), hn);
    Kokkos::deep_copy(space, r.view(), hr);
    Kokkos::deep_copy(space, d.view(), hd);
    if (it < train_iters) {
      system.push(space, s.data(), a.data(), r.data(), s_next.data(), d.data());
      if (system.ready(space)) system.train(space);
    }
    system.evaluate(space, s, a, q);
    Kokkos::deep_copy(space, hq, q.view());
    space.fence();
    if (it >= train_iters) {
      q_error += std::abs(env.spot(config.gamma) - hq(0));
      reward_sum += reward;
    }
    Kokkos::deep_copy(space, s.view(), s_next.view());
  }
  bool const rewarded =
      cc.environment == CheckEnvironment::action || cc.environment == CheckEnvironment::action_state;
  // TorchFort's SAC criteria for the rewards are looser: its policy samples while exploring and acts on its mean.
  if (rewarded)
    return {float(reward_sum / cc.evaluate), 1.0f, cc.algorithm == OffPolicyConfig::Algorithm::sac ? 0.3f : 1e-2f};
  return {float(q_error / cc.evaluate), 0.0f, cc.environment == CheckEnvironment::delayed ? 1e-1f : 1e-2f};
}

}  // namespace ktr::rl
