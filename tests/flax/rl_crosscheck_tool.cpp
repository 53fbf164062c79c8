// The ktr half of the RL cross-check (tests/flax/crosscheck.py, rl_one_update): a small TD3 or DDPG system (state
// 3, action 2, 8-wide networks, batch 16, plain SGD at lr 0.1 so that a step is the gradient itself, policy_lag 1
// so that one update moves every network) takes one update on 32 known transitions. Writes, as safetensors, every
// network before and after (Flax names, prefixed "before.<net>." and "after.<net>." for policy, policy_target,
// critic<i>, critic<i>_target), the batch the update drew (s, a, r, s_next, d), the target critics' input
// (target_input: s' and the smoothed target action) and the losses (p_loss, q_loss). SAC (sac: a state-dependent
// log sigma, the policy's 2A outputs; sac_free: a free one) tunes alpha (SGD too) and adds the noise each of its
// three draws used (eps_alpha, eps_target, eps_policy), log_alpha and (sac_free) log_sigma before and after.
// td3_per: TD3 with prioritized replay and 2-step windows, checked at its fourth update (the first three give the
// transitions priorities of their own); adds the samples' importance weights (w), their leaves (leaf) and the
// buffer's raw priorities after the update (priorities).
//   ktr_rl_crosscheck td3|ddpg|td3_per|sac|sac_free OUT.safetensors
#include <ktr/ktr.hpp>
#include <ktr/rl/off_policy.hpp>
#include <ktr/rl/random.hpp>
#include <ktr/train/interop.hpp>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>

int main(int argc, char* argv[]) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: ktr_rl_crosscheck td3|ddpg|td3_per|sac|sac_free OUT.safetensors\n");
    return 2;
  }
  ktr::Runtime runtime;
  try {
    ktr::ExecSpace space;
    ktr::rl::OffPolicyConfig c;
    std::string const algo = argv[1];
    bool const free_sigma = algo == "sac_free", per = algo == "td3_per";
    c.algorithm = ktr::rl::OffPolicyConfig::parse_algorithm(free_sigma ? "sac" : (per ? "td3" : algo));
    c.sampling.prioritized = per, c.sampling.nstep = per ? 2 : 1;
    bool const sac = c.algorithm == ktr::rl::OffPolicyConfig::Algorithm::sac;
    c.batch_size = 16, c.num_critics = 2, c.policy_lag = 1, c.gamma = 0.9f, c.rho = 0.8f;
    c.a_low = -1, c.a_high = 1, c.clip = 0.3f, c.sigma_train = 0.2f, c.sigma_explore = 0.5f;
    c.max_size = 32, c.min_size = 32, c.seed = 7;
    c.policy = sac && !free_sigma ? "in=3 dense:8:tanh dense:4" : "in=3 dense:8:tanh dense:2";
    c.critic = "in=5 dense:8:relu dense:1";
    c.alpha = 0.1f, c.tune_alpha = sac, c.state_dependent_sigma = !free_sigma, c.log_sigma_init = -0.5f;
    for (auto* o : {&c.policy_optimizer, &c.critic_optimizer, &c.alpha_optimizer}) {
      o->kind = ktr::OptimizerConfig::Kind::sgd;
      o->lr = 0.1f, o->momentum = 0, o->l2 = 0;
    }
    ktr::rl::OffPolicySystem sys(space, c);
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(-1, 1);
    ktr::Tensor s("s", ktr::Shape{1, 3}), a("a", ktr::Shape{1, 2}), s2("s2", ktr::Shape{1, 3}),
        r("r", ktr::Shape{1}), d("d", ktr::Shape{1});
    for (int i = 0; i < 32; ++i) {
      ktr::from_host(s, {u(rng), u(rng), u(rng)});
      ktr::from_host(a, {u(rng), u(rng)});
      ktr::from_host(s2, {u(rng), u(rng), u(rng)});
      ktr::from_host(r, {u(rng)});
      ktr::from_host(d, {i % 3 == 0 ? 1.0f : 0.0f});
      sys.push(space, s.data(), a.data(), r.data(), s2.data(), d.data());
    }
    if (!sys.ready(space)) throw ktr::Error("the buffer is not ready after 32 pushes");
    ktr::SafeTensors out;
    auto networks = [&](std::string const& when) {
      std::vector<std::pair<std::string, ktr::Model*>> nets = {{"policy", &sys.policy()}};
      if (!sac) nets.emplace_back("policy_target", &sys.policy_target());
      for (int i = 0; i < sys.config().num_critics; ++i) {
        nets.emplace_back("critic" + std::to_string(i), &sys.critic(i));
        nets.emplace_back("critic" + std::to_string(i) + "_target", &sys.critic_target(i));
      }
      for (auto& [name, model] : nets) {
        ktr::RunConfig cfg;
        cfg.model = model->description();
        for (auto& [param, t] : ktr::export_weights(*model, ktr::download(model->arena().params()), cfg).tensors)
          out.tensors[when + "." + name + "." + param] = t;
      }
    };
    // SAC's own parameters: log alpha, and the free log sigma (A values).
    auto sac_state = [&](std::string const& when) {
      if (!sac) return;
      out.tensors[when + ".log_alpha"] = ktr::SafeTensor{"F32", {1}, {std::log(sys.alpha(space))}};
      if (free_sigma) {
        std::vector<float> ls = ktr::download(sys.log_sigma());
        out.tensors[when + ".log_sigma"] = ktr::SafeTensor{"F32", {std::int64_t(ls.size())}, ls};
      }
    };
    if (per) sys.train(space, 3);  // priorities of their own, so that the checked update's weights are not all 1
    networks("before");
    sac_state("before");
    float p_loss = 0, q_loss = 0;
    sys.train(space, 1, &p_loss, &q_loss);
    networks("after");
    sac_state("after");
    if (sac) {  // the three draws of the first update: (draw 0 * B + b) * A + j of streams 13, 14 and 15
      std::int64_t const B = c.batch_size, A = sys.action_dim();
      char const* names[] = {"eps_alpha", "eps_target", "eps_policy"};
      for (int k = 0; k < 3; ++k) {
        std::vector<float> eps(std::size_t(B * A));
        std::uint64_t const key = ktr::rl::stream_key(c.seed, 13 + std::uint64_t(k));
        for (std::int64_t i = 0; i < B * A; ++i)
          eps[std::size_t(i)] = ktr::rl::standard_normal(key, std::uint64_t(i));
        out.tensors[names[k]] = ktr::SafeTensor{"F32", {B, A}, eps};
      }
    }
    auto tensor = [&](char const* name, ktr::Tensor const& t) {
      std::vector<std::int64_t> shape(t.shape().dims.begin(), t.shape().dims.begin() + t.shape().rank);
      out.tensors[name] = ktr::SafeTensor{"F32", shape, ktr::to_host(t)};
    };
    tensor("s", sys.last_batch().state);
    tensor("a", sys.last_batch().state_action);  // (s, a): the crosscheck takes the action's columns
    tensor("r", sys.last_batch().reward);
    tensor("s_next", sys.last_batch().next_state);
    tensor("d", sys.last_batch().done);
    tensor("target_input", sys.last_target_input());
    if (per) {
      tensor("w", sys.last_batch().weight);
      auto leaf = Kokkos::create_mirror_view_and_copy(ktr::HostSpace(), sys.last_batch().leaf);
      std::vector<float> leaves;
      for (std::size_t i = 0; i < leaf.extent(0); ++i) leaves.push_back(float(leaf(i)));
      out.tensors["leaf"] = ktr::SafeTensor{"F32", {std::int64_t(leaves.size())}, leaves};
      std::vector<float> const p = sys.buffer().download(space).priorities;
      out.tensors["priorities"] = ktr::SafeTensor{"F32", {std::int64_t(p.size())}, p};
    }
    out.tensors["p_loss"] = ktr::SafeTensor{"F32", {1}, {p_loss}};
    out.tensors["q_loss"] = ktr::SafeTensor{"F32", {1}, {q_loss}};
    ktr::write_safetensors(argv[2], out);
  } catch (ktr::Error const& e) {
    std::fprintf(stderr, "ktr_rl_crosscheck: %s\n", e.what());
    return 1;
  }
  return 0;
}
