// TorchFort's own convergence check of its off-policy systems (NVIDIA/TorchFort tests/rl/test_off_policy.cpp and
// environments.h, rewritten): five one-value environments, its configurations (tests/rl/configs/td3.yaml,
// ddpg.yaml and sac.yaml), its iteration counts and pass criteria. The tests run it at two seeds; `ktr bench rl
// --suite` runs the whole suite and times it.
#pragma once

#include "off_policy.hpp"

#include <cstdint>
#include <vector>

namespace ktr::rl {

/// TorchFort's debugging environments: a reward of 1 (constant), the state's value of +-1 (predictable), 1 at the
/// end of a two-step episode (delayed), the action (action), the action times the state's +-1 (action_state).
enum class CheckEnvironment { constant, predictable, delayed, action, action_state };
char const* check_environment_name(CheckEnvironment e);

/// TorchFort's test configuration of `algorithm` (batch 128, 16-wide networks, Adam 1e-4 with linear decay, ...).
OffPolicyConfig torchfort_check_config(OffPolicyConfig::Algorithm algorithm, std::uint64_t seed);

struct CheckCase {
  CheckEnvironment environment;
  OffPolicyConfig::Algorithm algorithm;
  int explore, exploit, evaluate;  ///< iterations: predict_explore, then predict, both training; then evaluation
};
/// TorchFort's cases at its iteration counts: TD3, DDPG and SAC over the five environments (DDPG's action-state
/// case is disabled upstream and left out here).
std::vector<CheckCase> torchfort_check_cases();

struct CheckResult {
  float value;      ///< the mean |Q - expected| (constant, predictable, delayed) or the mean reward (the others)
  float target;     ///< what value should be: 0 or 1
  float tolerance;  ///< TorchFort's: 1e-2 (1e-1 for the delayed reward, 0.3 for SAC's rewards)
  bool passed() const { return value - target <= tolerance && target - value <= tolerance; }
};
/// TorchFort's loop for one case: each iteration predicts (with exploration while exploring), steps the
/// environment, pushes the transition and trains once while training lasts, and evaluates the first critic.
CheckResult run_torchfort_check(ExecSpace const& space, CheckCase const& c, std::uint64_t seed);

}  // namespace ktr::rl
