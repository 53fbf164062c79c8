#include "rl_config.hpp"

#include "yaml_schema.hpp"

namespace ktr {

namespace config_impl {
namespace {

// TorchFort's SACMLP: a ReLU encoder over layer_sizes[0 .. n-2], then a mean head and a log sigma head of
// layer_sizes[n-1] values each (one dense layer of 2A outputs: the means, then the log sigmas), or a free log
// sigma (state_dependent_sigma: false) starting at log_sigma_init.
std::string read_sacmlp(Reader const& r, YAML::Node const& n, std::string const& section, rl::OffPolicyConfig& c) {
  std::vector<std::int64_t> sizes;
  r.section(
      n, section,
      {{"type", r.ignored()},
       {"parameters", [&](YAML::Node const& p, std::string const& pk) {
          r.section(
              p, pk,
              {{"layer_sizes",
                [&](YAML::Node const& v, std::string const& key) {
                  if (!v.IsSequence() || v.size() < 2)
                    r.fail(v, key, "must be a list of at least two sizes [state, ..., action]");
                  for (std::size_t i = 0; i < v.size(); ++i)
                    sizes.push_back(r.integer(v[i], key + "[" + std::to_string(i) + "]", 1, 1 << 24));
                }},
               {"state_dependent_sigma",
                [&](YAML::Node const& v, std::string const& key) { c.state_dependent_sigma = r.boolean(v, key); }},
               {"log_sigma_init",
                [&](YAML::Node const& v, std::string const& key) {
                  c.log_sigma_init = float(r.number(v, key, -20, 2));
                }},
               {"dropout", r.only_default(0)}});
        }}});
  if (sizes.empty()) r.fail(n, section + ".parameters.layer_sizes", "missing: a SACMLP needs its sizes");
  std::string d = "in=" + std::to_string(sizes[0]);
  for (std::size_t i = 1; i + 1 < sizes.size(); ++i) d += " dense:" + std::to_string(sizes[i]) + ":relu";
  d += " dense:" + std::to_string(c.state_dependent_sigma ? 2 * sizes.back() : sizes.back());
  return Model::plan(d, 1).description;
}

// A network section (policy_model, critic_model): TorchFort's MLP (CriticMLP for a critic: its layer_sizes[0] is
// the state's and the action's values together; SACMLP for a SAC policy) or a ktr description, through the
// supervised model's reader.
std::string read_network(Reader const& r, YAML::Node const& root, char const* section, bool critic,
                         rl::OffPolicyConfig& c) {
  YAML::Node n = root[section];
  if (!n.IsDefined()) r.fail(root, section, "missing: the system needs its networks");
  if (!n.IsMap()) r.fail(n, section, "must be a mapping of keys to values");
  YAML::Node copy = YAML::Clone(n);
  bool const sac = c.algorithm == rl::OffPolicyConfig::Algorithm::sac;
  if (copy["type"].IsDefined() && copy["type"].IsScalar()) {
    std::string const t = lower(copy["type"].as<std::string>());
    std::string const wanted = critic ? "criticmlp" : (sac ? "sacmlp" : "mlp");
    if (t == "sacmlp" && t == wanted) return read_sacmlp(r, n, section, c);
    // TorchFort's CriticMLP takes dropout and layer_sizes only; its MLP (a policy) also flatten_non_batch_dims,
    // which changes nothing over a system's (environments, values) rows.
    if (t == "criticmlp" && copy["parameters"].IsMap() && copy["parameters"]["flatten_non_batch_dims"].IsDefined())
      r.fail(copy["parameters"]["flatten_non_batch_dims"],
             std::string(section) + ".parameters.flatten_non_batch_dims",
             "TorchFort's CriticMLP has no such key (its keys: dropout, layer_sizes)");
    if (t == wanted)
      copy["type"] = "mlp";
    else if (t != "ktr")
      r.fail(n["type"], std::string(section) + ".type",
             "'" + escaped(t) + "' must be " + (critic ? "CriticMLP" : (sac ? "SACMLP" : "MLP")) + " or ktr",
             t == "torchscript");
  }
  Draft d;
  read_model(r, copy, section, d);
  try {
    finish_model(r, YAML::Node(), d);
  } catch (ConfigError const& e) {  // its messages say "model"; say which network
    throw ConfigError(std::string(e.what()) + " (in " + section + ")", e.not_supported());
  }
  return d.c.run.model;
}

}  // namespace
}  // namespace config_impl

RlFileConfig parse_rl_config(std::string const& yaml, std::string const& path, std::int64_t n_envs) {
  using namespace config_impl;
  Reader const r(path);
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (YAML::Exception const& e) {
    throw ConfigError(path + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg, false);
  }
  if (!root.IsDefined() || !root.IsMap()) throw ConfigError(path + ": the file holds no configuration", false);
  RlFileConfig out;
  rl::OffPolicyConfig& c = out.system;
  Draft optimizer, policy_schedule, critic_schedule;
  bool has_algorithm = false, has_alpha_optimizer = false;
  std::vector<std::pair<YAML::Node, std::string>> sac_keys;          // SAC's own keys, refused for the others
  std::vector<std::pair<YAML::Node, std::string>> prioritized_keys;  // refused for a uniform buffer
  std::string actor_type = "space_noise";
  bool has_dt = false;
  YAML::Node actor_type_node;
  Draft alpha_optimizer, alpha_schedule;
  auto num = [&](float& field, double lo, double hi) {
    return [&, lo, hi](YAML::Node const& v, std::string const& key) { field = float(r.number(v, key, lo, hi)); };
  };
  auto count = [&](std::int64_t& field, std::int64_t lo, std::int64_t hi) {
    return [&, lo, hi](YAML::Node const& v, std::string const& key) { field = r.integer(v, key, lo, hi); };
  };
  auto small = [&](int& field, int lo, int hi) {
    return [&, lo, hi](YAML::Node const& v, std::string const& key) { field = int(r.integer(v, key, lo, hi)); };
  };
  // enable_graphs and TorchFort's enable_cuda_graphs name one setting: a file gives it once, in one spelling.
  std::string graphs;
  auto graphs_key = [&](YAML::Node const& v, std::string const& key) {
    if (!graphs.empty())
      r.fail(v, key, "is " + graphs + " under another name, given already (which one was meant?)");
    graphs = key;
    c.graphs = r.boolean(v, key);
  };
  r.section(
      root, "",
      {
          {"general",
           [&](YAML::Node const& n, std::string const& k) {
             r.section(n, k,
                       {{"report_frequency", count(out.report_frequency, 0, kMaxCount)},
                        {"enable_wandb_hook",
                         [&](YAML::Node const& v, std::string const& key) {
                           out.enable_wandb_hook = r.boolean(v, key);
                         }},
                        {"enable_graphs", graphs_key},
                        {"enable_cuda_graphs", graphs_key},  // TorchFort's name
                        {"verbose", r.ignored()}});
           }},
          {"algorithm",
           [&](YAML::Node const& n, std::string const& k) {
             has_algorithm = true;
             r.section(n, k,
                       {{"type",
                         [&](YAML::Node const& v, std::string const& key) {
                           std::string const t = lower(r.text(v, key));
                           if (t == "ppo")
                             r.fail(v, key, "'ppo' is an on-policy algorithm, not in ktr yet (td3, ddpg, sac)",
                                    true);
                           try {
                             c.algorithm = rl::OffPolicyConfig::parse_algorithm(t);
                           } catch (Error const& e) {
                             r.fail(v, key, e.what());
                           }
                         }},
                        {"parameters", [&](YAML::Node const& p, std::string const& pk) {
                           r.section(p, pk,
                                     {{"batch_size", count(c.batch_size, 1, 1 << 24)},
                                      {"num_critics", small(c.num_critics, 1, 16)},
                                      {"policy_lag", small(c.policy_lag, 1, 1 << 24)},
                                      {"nstep", small(c.sampling.nstep, 1, 1 << 20)},
                                      {"nstep_reward_reduction",
                                       [&](YAML::Node const& v, std::string const& key) {
                                         try {
                                           c.sampling.set_reduction(r.text(v, key));
                                         } catch (Error const& e) {
                                           r.fail(v, key, e.what());
                                         }
                                       }},
                                      {"gamma", num(c.gamma, 0, 1)},
                                      {"rho", num(c.rho, 0, 1)},
                                      {"alpha",
                                       [&](YAML::Node const& v, std::string const& key) {
                                         c.alpha = float(r.number(v, key, 0, kBig));
                                         sac_keys.push_back({v, key});
                                       }},
                                      {"target_entropy",
                                       [&](YAML::Node const& v, std::string const& key) {
                                         c.target_entropy = float(r.number(v, key, -kBig, kBig));
                                         sac_keys.push_back({v, key});
                                       }},
                                      {"normalize_states",
                                       [&](YAML::Node const& v, std::string const& key) {
                                         c.normalize_states = r.boolean(v, key);
                                       }},
                                      {"normalize_rewards", [&](YAML::Node const& v, std::string const& key) {
                                         c.normalize_rewards = r.boolean(v, key);
                                       }}});
                         }}});
           }},
          {"actor",
           [&](YAML::Node const& n, std::string const& k) {
             r.section(n, k,
                       {{"type",
                         [&](YAML::Node const& v, std::string const& key) {
                           actor_type = lower(r.text(v, key));
                           actor_type_node = v;
                         }},
                        {"parameters", [&](YAML::Node const& p, std::string const& pk) {
                           r.section(
                               p, pk,
                               {{"a_low", num(c.a_low, -kBig, kBig)},
                                {"a_high", num(c.a_high, -kBig, kBig)},
                                {"clip", num(c.clip, 0, kBig)},
                                {"sigma_train", num(c.sigma_train, 0, kBig)},
                                {"sigma_explore", num(c.sigma_explore, 0, kBig)},
                                {"adaptive", [&](YAML::Node const& v,
                                                 std::string const& key) { c.adaptive = r.boolean(v, key); }},
                                {"dt",
                                 [&](YAML::Node const& v, std::string const& key) {
                                   c.dt = float(r.number(v, key, 1e-30, kBig));
                                   has_dt = true;
                                 }},
                                {"xi", num(c.xi, -kBig, kBig)}});
                         }}});
           }},
          {"replay_buffer",
           [&](YAML::Node const& n, std::string const& k) {
             r.section(n, k,
                       {{"type",
                         [&](YAML::Node const& v, std::string const& key) {
                           std::string const t = lower(r.text(v, key));
                           if (t != "uniform" && t != "prioritized")
                             r.fail(v, key, "'" + escaped(t) + "' is not a replay buffer (uniform, prioritized)");
                           c.sampling.prioritized = t == "prioritized";
                         }},
                        {"parameters", [&](YAML::Node const& p, std::string const& pk) {
                           auto prioritized = [&](auto read) {
                             return [&, read](YAML::Node const& v, std::string const& key) {
                               read(v, key);
                               prioritized_keys.push_back({v, key});
                             };
                           };
                           r.section(p, pk,
                                     {{"max_size", count(c.max_size, 1, kMaxCount)},
                                      {"min_size", count(c.min_size, 1, kMaxCount)},
                                      {"n_envs", count(c.n_envs, 1, 1 << 24)},
                                      {"alpha", prioritized(num(c.sampling.alpha, 0, 1e3))},
                                      {"beta0", prioritized(num(c.sampling.beta0, 0, 1e3))},
                                      {"beta_max", prioritized(num(c.sampling.beta_max, 0, 1e3))},
                                      {"beta_steps", prioritized(count(c.sampling.beta_steps, 0, kMaxCount))}});
                         }}});
           }},
          {"policy_model", r.ignored()},
          {"critic_model", r.ignored()},
          {"optimizer", [&](YAML::Node const& n, std::string const& k) { read_optimizer(r, n, k, optimizer); }},
          {"policy_lr_scheduler",
           [&](YAML::Node const& n, std::string const& k) { read_lr_scheduler(r, n, k, policy_schedule); }},
          {"critic_lr_scheduler",
           [&](YAML::Node const& n, std::string const& k) { read_lr_scheduler(r, n, k, critic_schedule); }},
          {"alpha_optimizer",
           [&](YAML::Node const& n, std::string const& k) {
             has_alpha_optimizer = true;
             read_optimizer(r, n, k, alpha_optimizer);
           }},
          {"alpha_lr_scheduler",
           [&](YAML::Node const& n, std::string const& k) { read_lr_scheduler(r, n, k, alpha_schedule); }},
      });
  if (!has_algorithm) r.fail(root, "algorithm", "missing: the file must name td3, ddpg or sac");
  bool const sac = c.algorithm == rl::OffPolicyConfig::Algorithm::sac;
  if (!sac && !sac_keys.empty()) r.fail(sac_keys[0].first, sac_keys[0].second, "belongs to SAC");
  if (!sac && has_alpha_optimizer) r.fail(root["alpha_optimizer"], "alpha_optimizer", "belongs to SAC");
  // SAC reads only the actor's range; TD3 and DDPG take any of TorchFort's four noise actors.
  try {
    c.noise = rl::parse_noise_kind(actor_type);
  } catch (Error const& e) {
    r.fail(actor_type_node, "actor.type", e.what());
  }
  if (!sac && !has_dt && (c.noise == rl::NoiseKind::space_ou || c.noise == rl::NoiseKind::parameter_ou))
    r.fail(root["actor"], "actor.parameters.dt", "missing: an Ornstein-Uhlenbeck actor needs its time step");
  if (!c.sampling.prioritized && !prioritized_keys.empty())
    r.fail(prioritized_keys[0].first, prioritized_keys[0].second, "belongs to the prioritized replay buffer");
  if (c.min_size > c.max_size)
    r.fail(root["replay_buffer"], "replay_buffer.parameters.min_size", "is larger than max_size");
  if (n_envs > 0) c.n_envs = n_envs;
  // TorchFort's sizes count transitions: each environment keeps max_size / n_envs of them (one slot per step).
  if (c.max_size < c.n_envs || c.min_size < c.n_envs)
    r.fail(root["replay_buffer"], "replay_buffer.parameters.max_size",
           "and min_size count transitions and must be at least n_envs (" + std::to_string(c.n_envs) + ")");
  c.max_size /= c.n_envs;
  c.min_size /= c.n_envs;
  if (c.sampling.nstep > c.max_size)
    r.fail(root["algorithm"], "algorithm.parameters.nstep",
           "is longer than the buffer keeps (max_size / n_envs = " + std::to_string(c.max_size) + " steps)");
  if (!(c.a_low < c.a_high)) r.fail(root["actor"], "actor.parameters.a_low", "must be below a_high");
  c.accumulate = optimizer.c.run.accumulate;
  c.policy = read_network(r, root, "policy_model", false, c);
  c.critic = read_network(r, root, "critic_model", true, c);
  // One optimizer section for every network, each with its own schedule.
  for (auto* s : {&policy_schedule, &critic_schedule}) {
    s->c.run.optimizer = optimizer.c.run.optimizer;
    finish_schedule(r, *s);
    OptimizerConfig& o = s->c.run.optimizer;
    if (optimizer.weight_decay >= 0)
      (o.kind == OptimizerConfig::Kind::adamw ? o.weight_decay : o.l2) = float(optimizer.weight_decay);
    else if (o.kind != OptimizerConfig::Kind::adamw)
      o.weight_decay = 0;
  }
  c.policy_optimizer = policy_schedule.c.run.optimizer;
  c.critic_optimizer = critic_schedule.c.run.optimizer;
  if (has_alpha_optimizer) {  // SAC's entropy coefficient, tuned by its own optimiser and schedule
    alpha_schedule.c.run.optimizer = alpha_optimizer.c.run.optimizer;
    finish_schedule(r, alpha_schedule);
    OptimizerConfig& o = alpha_schedule.c.run.optimizer;
    if (alpha_optimizer.weight_decay >= 0)
      (o.kind == OptimizerConfig::Kind::adamw ? o.weight_decay : o.l2) = float(alpha_optimizer.weight_decay);
    else if (o.kind != OptimizerConfig::Kind::adamw)
      o.weight_decay = 0;
    c.tune_alpha = true;
    c.alpha_optimizer = o;
  }
  return out;
}

RlFileConfig read_rl_config_file(std::string const& path) { return parse_rl_config(read_config_text(path), path); }

}  // namespace ktr
