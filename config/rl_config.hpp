// TorchFort's reinforcement-learning configuration (torchfort_rl_off_policy_create_system's YAML file): the
// algorithm, actor, replay_buffer, policy_model, critic_model, optimizer and policy_/critic_lr_scheduler
// sections, read into an rl::OffPolicyConfig. Every key is checked as the supervised file's are: an unknown key, a
// value out of range or a TorchFort feature ktr does not have yet is a ConfigError naming the file, line and key.
#pragma once

#include "../rl/off_policy.hpp"
#include "yaml_config.hpp"

#include <string>

namespace ktr {

struct RlFileConfig {
  rl::OffPolicyConfig system;
  std::int64_t report_frequency = 0;  ///< general.report_frequency: a line every this many updates (0: none)
  bool enable_wandb_hook = false;     ///< general.enable_wandb_hook: TorchFort's metric log (capi/metric_log.hpp)
};

/// Parses TorchFort's off-policy file `yaml` (read from `path`, named in messages); `n_envs` > 0 replaces its
/// replay_buffer.parameters.n_envs (ktr_rl_create_system: ranks may differ).
RlFileConfig parse_rl_config(std::string const& yaml, std::string const& path, std::int64_t n_envs = 0);
/// Reads and parses `path`.
RlFileConfig read_rl_config_file(std::string const& path);

}  // namespace ktr
