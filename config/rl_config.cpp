#include "rl_config.hpp"

#include "yaml_schema.hpp"

namespace ktr {

namespace config_impl {
namespace {

// A network section (policy_model, critic_model): TorchFort's MLP (CriticMLP for a critic: its layer_sizes[0] is
// the state's and the action's values together) or a ktr description, through the supervised model's reader.
std::string read_network(Reader const& r, YAML::Node const& root, char const* section, bool critic) {
  YAML::Node n = root[section];
  if (!n.IsDefined()) r.fail(root, section, "missing: the system needs its networks");
  if (!n.IsMap()) r.fail(n, section, "must be a mapping of keys to values");
  YAML::Node copy = YAML::Clone(n);
  if (copy["type"].IsDefined() && copy["type"].IsScalar()) {
    std::string const t = lower(copy["type"].as<std::string>());
    if (t == (critic ? "criticmlp" : "mlp"))
      copy["type"] = "mlp";
    else if (t != "ktr")
      r.fail(n["type"], std::string(section) + ".type",
             "'" + escaped(t) + "' must be " + (critic ? "CriticMLP" : "MLP") + " or ktr" +
                 (t == "sacmlp" ? " (SAC is not in ktr yet)" : ""),
             t == "sacmlp" || t == "torchscript");
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

RlFileConfig parse_rl_config(std::string const& yaml, std::string const& path) {
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
  bool has_algorithm = false;
  auto num = [&](float& field, double lo, double hi) {
    return [&, lo, hi](YAML::Node const& v, std::string const& key) { field = float(r.number(v, key, lo, hi)); };
  };
  auto count = [&](std::int64_t& field, std::int64_t lo, std::int64_t hi) {
    return [&, lo, hi](YAML::Node const& v, std::string const& key) { field = r.integer(v, key, lo, hi); };
  };
  auto small = [&](int& field, int lo, int hi) {
    return [&, lo, hi](YAML::Node const& v, std::string const& key) { field = int(r.integer(v, key, lo, hi)); };
  };
  auto type_is = [&](char const* wanted, char const* others) {
    return [&, wanted, others](YAML::Node const& v, std::string const& key) {
      std::string const t = lower(r.text(v, key));
      if (t != wanted) r.fail(v, key, "'" + escaped(t) + "' is not supported by ktr yet (" + others + ")", true);
    };
  };
  r.section(
      root, "",
      {
          {"general",
           [&](YAML::Node const& n, std::string const& k) {
             r.section(n, k,
                       {{"report_frequency", count(out.report_frequency, 0, kMaxCount)},
                        {"enable_wandb_hook", r.ignored()},
                        {"verbose", r.ignored()}});
           }},
          {"algorithm",
           [&](YAML::Node const& n, std::string const& k) {
             has_algorithm = true;
             r.section(n, k,
                       {{"type",
                         [&](YAML::Node const& v, std::string const& key) {
                           std::string const t = lower(r.text(v, key));
                           if (t == "sac" || t == "ppo")
                             r.fail(v, key, "'" + t + "' is not in ktr yet (td3, ddpg)", true);
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
                                      {"nstep", r.only_default(1)},
                                      {"nstep_reward_reduction", type_is("sum", "nstep 1 only")},
                                      {"gamma", num(c.gamma, 0, 1)},
                                      {"rho", num(c.rho, 0, 1)}});
                         }}});
           }},
          {"actor",
           [&](YAML::Node const& n, std::string const& k) {
             r.section(n, k,
                       {{"type", type_is("space_noise", "space_noise only")},
                        {"parameters", [&](YAML::Node const& p, std::string const& pk) {
                           r.section(p, pk,
                                     {{"a_low", num(c.a_low, -kBig, kBig)},
                                      {"a_high", num(c.a_high, -kBig, kBig)},
                                      {"clip", num(c.clip, 0, kBig)},
                                      {"sigma_train", num(c.sigma_train, 0, kBig)},
                                      {"sigma_explore", num(c.sigma_explore, 0, kBig)},
                                      {"adaptive", r.only_default(0)}});
                         }}});
           }},
          {"replay_buffer",
           [&](YAML::Node const& n, std::string const& k) {
             r.section(n, k,
                       {{"type", type_is("uniform", "uniform only")},
                        {"parameters", [&](YAML::Node const& p, std::string const& pk) {
                           r.section(p, pk,
                                     {{"max_size", count(c.max_size, 1, kMaxCount)},
                                      {"min_size", count(c.min_size, 1, kMaxCount)},
                                      {"n_envs", count(c.n_envs, 1, 1 << 24)}});
                         }}});
           }},
          {"policy_model", r.ignored()},
          {"critic_model", r.ignored()},
          {"optimizer", [&](YAML::Node const& n, std::string const& k) { read_optimizer(r, n, k, optimizer); }},
          {"policy_lr_scheduler",
           [&](YAML::Node const& n, std::string const& k) { read_lr_scheduler(r, n, k, policy_schedule); }},
          {"critic_lr_scheduler",
           [&](YAML::Node const& n, std::string const& k) { read_lr_scheduler(r, n, k, critic_schedule); }},
      });
  if (!has_algorithm) r.fail(root, "algorithm", "missing: the file must name td3 or ddpg");
  if (c.min_size > c.max_size)
    r.fail(root["replay_buffer"], "replay_buffer.parameters.min_size", "is larger than max_size");
  if (!(c.a_low < c.a_high)) r.fail(root["actor"], "actor.parameters.a_low", "must be below a_high");
  if (optimizer.c.run.accumulate != 1)
    r.fail(root["optimizer"], "optimizer.general.grad_accumulation_steps", "above 1 is not in ktr's RL yet", true);
  c.policy = read_network(r, root, "policy_model", false);
  c.critic = read_network(r, root, "critic_model", true);
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
  return out;
}

RlFileConfig read_rl_config_file(std::string const& path) { return parse_rl_config(read_config_text(path), path); }

}  // namespace ktr
