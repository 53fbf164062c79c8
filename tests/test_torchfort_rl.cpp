// TorchFort's off-policy calls over ktr's rl/ layer (capi/torchfort_rl.cpp): TorchFort's own test configuration
// (tests/rl/configs/td3.yaml) and calling pattern, its constant and action rewards reaching its pass criteria; its
// interface's shapes from C and Fortran order; and the refusals, each naming what is wrong.
#include <torchfort.h>

#include "../core/types.hpp"

#include <gtest/gtest.h>

#include "helpers.hpp"

#include <cmath>
#include <fstream>
#include <string>
#include <tuple>

namespace ktr::test {
bool rl_suite_runs();  // test_rl.cpp
}

namespace {

using ktr::test::write_file;

int const kTfDevice = ktr::device_is_host ? TORCHFORT_DEVICE_CPU : 0;

// TorchFort's tests/rl/configs/td3.yaml (DDPG: the same without num_critics and policy_lag).
std::string config(char const* algorithm) {
  std::string const td3 = std::string(algorithm) == "td3" ? "    num_critics: 2\n    policy_lag: 2\n" : "";
  return std::string("general:\n  report_frequency: 0\n  enable_wandb_hook: 0\n  verbose: 1\n") +
         "algorithm:\n  type: " + algorithm + "\n  parameters:\n    batch_size: 128\n" + td3 +
         "    nstep: 1\n    nstep_reward_reduction: sum\n    gamma: 0.95\n    rho: 0.999\n"
         "actor:\n  type: space_noise\n  parameters:\n    a_low: -1.\n    a_high: 1.\n    clip: 0.3\n"
         "    sigma_train: 0.2\n    sigma_explore: 1.0\n"
         "replay_buffer:\n  type: uniform\n  parameters:\n    max_size: 4096\n    min_size: 512\n"
         "policy_model:\n  type: MLP\n  parameters:\n    dropout: 0.0\n    layer_sizes: [1, 16, 1]\n"
         "critic_model:\n  type: CriticMLP\n  parameters:\n    dropout: 0.0\n    layer_sizes: [2, 16, 1]\n"
         "optimizer:\n  type: adam\n  parameters:\n    learning_rate: 1e-4\n    beta1: 0.9\n    beta2: 0.999\n"
         "    weight_decay: 0\n    eps: 1e-6\n    amsgrad: 0\n"
         "policy_lr_scheduler:\n  type: linear\n  parameters:\n    total_iters: 10000\n    start_factor: 1.0\n"
         "    end_factor: 0.01\n"
         "critic_lr_scheduler:\n  type: linear\n  parameters:\n    total_iters: 20000\n    start_factor: 1.0\n"
         "    end_factor: 0.01\n";
}

// TorchFort's TestSystem loop through its C calls, for a reward that is 1 (constant) or the action (action):
// explore, exploit, evaluate; returns the mean |Q - 1| or the mean reward over the evaluation iterations.
float run_torchfort_loop(char const* name, bool action_reward, int explore, int exploit, int evaluate) {
  float state = 0, state_new = 0, action = 0, reward = 0, q = 0, p_loss = 0, q_loss = 0;
  int64_t batch_shape[2] = {1, 1}, one[1] = {1};
  double sum = 0;
  for (int it = 0; it < explore + exploit + evaluate; ++it) {
    auto const predict = it < explore ? torchfort_rl_off_policy_predict_explore : torchfort_rl_off_policy_predict;
    EXPECT_EQ(predict(name, &state, 2, batch_shape, &action, 2, batch_shape, TORCHFORT_FLOAT, 0),
              TORCHFORT_RESULT_SUCCESS);
    reward = action_reward ? action : 1.0f;
    if (it < explore + exploit) {
      EXPECT_EQ(torchfort_rl_off_policy_update_replay_buffer(name, &state, &state_new, 1, one, &action, 1, one,
                                                             &reward, true, TORCHFORT_FLOAT, 0),
                TORCHFORT_RESULT_SUCCESS);
      bool ready = false;
      EXPECT_EQ(torchfort_rl_off_policy_is_ready(name, ready), TORCHFORT_RESULT_SUCCESS);
      if (ready)
        EXPECT_EQ(torchfort_rl_off_policy_train_step(name, &p_loss, &q_loss, 0), TORCHFORT_RESULT_SUCCESS);
    }
    EXPECT_EQ(torchfort_rl_off_policy_evaluate(name, &state, 2, batch_shape, &action, 2, batch_shape, &q, 1, one,
                                               TORCHFORT_FLOAT, 0),
              TORCHFORT_RESULT_SUCCESS);
    if (it >= explore + exploit) sum += action_reward ? reward : std::abs(q - 1.0f);
  }
  return float(sum / evaluate);
}

TEST(TorchFortRL, Td3ThroughTorchFortsCallsLearnsAConstantRewardAndMaximisesAnActionReward) {
  if (!ktr::test::rl_suite_runs())
    GTEST_SKIP() << "the RL convergence suite runs once, in the 1-thread pass of an unsanitised OpenMP build";
  std::string const path = write_file("tf_td3.yaml", config("td3"));
  ASSERT_EQ(torchfort_rl_off_policy_create_system("tf_td3_constant", path.c_str(), kTfDevice, kTfDevice),
            TORCHFORT_RESULT_SUCCESS);
  EXPECT_LT(run_torchfort_loop("tf_td3_constant", false, 20000, 0, 100), 1e-2f);
  ASSERT_EQ(torchfort_rl_off_policy_create_system("TF_TD3_Action", path.c_str(), kTfDevice, kTfDevice),
            TORCHFORT_RESULT_SUCCESS);
  EXPECT_NEAR(run_torchfort_loop("tf_td3_action", true, 20000, 1000, 100), 1.0f, 1e-2f)
      << "names are case-blind: created as TF_TD3_Action, called as tf_td3_action";
}

// TorchFort's interface shapes: states {1}, {16}, {1, 16}, {4, 16} and 1 to 4 actions, C and Fortran order.
TEST(TorchFortRL, EveryInterfaceShapeOfTorchFortsTestPredictsAndEvaluatesInCAndFortranOrder) {
  for (int64_t const s : {1, 16})
    for (int64_t const a : {1, 2, 4}) {
      std::string const yaml = config("ddpg");
      std::string text = yaml;
      text.replace(text.find("[1, 16, 1]"), 10, "[" + std::to_string(s) + ", 16, " + std::to_string(a) + "]");
      text.replace(text.find("[2, 16, 1]"), 10, "[" + std::to_string(s + a) + ", 16, 1]");
      std::string const name = "tf_shapes_" + std::to_string(s) + "_" + std::to_string(a);
      std::string const path = write_file(name + ".yaml", text);
      ASSERT_EQ(torchfort_rl_off_policy_create_system(name.c_str(), path.c_str(), kTfDevice, kTfDevice),
                TORCHFORT_RESULT_SUCCESS);
      for (int64_t const n : {1, 4}) {
        std::vector<float> state(std::size_t(n * s), 0.5f), action(std::size_t(n * a), 9.0f);
        std::vector<float> q(static_cast<std::size_t>(n));
        int64_t c_state[2] = {n, s}, c_action[2] = {n, a}, f_state[2] = {s, n}, f_action[2] = {a, n}, qs[1] = {n};
        EXPECT_EQ(torchfort_rl_off_policy_predict(name.c_str(), state.data(), 2, c_state, action.data(), 2,
                                                  c_action, TORCHFORT_FLOAT, 0),
                  TORCHFORT_RESULT_SUCCESS);
        for (float v : action) EXPECT_TRUE(v >= -1.0f && v <= 1.0f) << "predict clamps to [a_low, a_high]";
        std::vector<float> fortran_action(action.size(), 9.0f);
        EXPECT_EQ(torchfort_rl_off_policy_predict_F(name.c_str(), state.data(), 2, f_state, fortran_action.data(),
                                                    2, f_action, TORCHFORT_FLOAT, 0),
                  TORCHFORT_RESULT_SUCCESS);
        EXPECT_EQ(fortran_action, action) << "(S, N) in Fortran order is (N, S) in C's";
        EXPECT_EQ(torchfort_rl_off_policy_evaluate(name.c_str(), state.data(), 2, c_state, action.data(), 2,
                                                   c_action, q.data(), 1, qs, TORCHFORT_FLOAT, 0),
                  TORCHFORT_RESULT_SUCCESS);
        for (float v : q) EXPECT_TRUE(std::isfinite(v));
      }
    }
}

// TorchFort's tests/rl/configs/sac.yaml.
std::string const kSacConfig =
    "general:\n  report_frequency: 0\n  enable_wandb_hook: 0\n  verbose: 1\n"
    "algorithm:\n  type: sac\n  parameters:\n    batch_size: 128\n    num_critics: 2\n    nstep: 1\n"
    "    nstep_reward_reduction: sum\n    gamma: 0.95\n    rho: 0.999\n    alpha: 0.1\n"
    "actor:\n  type: parameter_noise\n  parameters:\n    a_low: -1.0\n    a_high: 1.0\n"
    "replay_buffer:\n  type: uniform\n  parameters:\n    max_size: 4096\n    min_size: 512\n"
    "policy_model:\n  type: SACMLP\n  parameters:\n    dropout: 0.0\n    layer_sizes: [1, 16, 8, 1]\n"
    "    state_dependent_sigma: False\n    log_sigma_init: 0.\n"
    "critic_model:\n  type: CriticMLP\n  parameters:\n    dropout: 0.0\n    layer_sizes: [2, 16, 1]\n"
    "optimizer:\n  type: adam\n  parameters:\n    learning_rate: 1e-4\n    beta1: 0.9\n    beta2: 0.999\n"
    "    weight_decay: 0\n    eps: 1e-6\n    amsgrad: 0\n"
    "alpha_optimizer:\n  type: adam\n  parameters:\n    learning_rate: 1e-4\n    beta1: 0.9\n    beta2: 0.999\n"
    "    weight_decay: 0\n    eps: 1e-6\n    amsgrad: 0\n"
    "policy_lr_scheduler:\n  type: linear\n  parameters:\n    total_iters: 20000\n    start_factor: 1.0\n"
    "    end_factor: 0.01\n"
    "critic_lr_scheduler:\n  type: linear\n  parameters:\n    total_iters: 20000\n    start_factor: 1.0\n"
    "    end_factor: 0.01\n"
    "alpha_lr_scheduler:\n  type: linear\n  parameters:\n    total_iters: 20000\n    start_factor: 1.0\n"
    "    end_factor: 0.01\n";

TEST(TorchFortRL, SacFromTorchFortsOwnConfigurationLearnsAConstantRewardThroughItsCalls) {
  if (!ktr::test::rl_suite_runs())
    GTEST_SKIP() << "the RL convergence suite runs once, in the 1-thread pass of an unsanitised OpenMP build";
  std::string const path = write_file("tf_sac.yaml", kSacConfig);
  ASSERT_EQ(torchfort_rl_off_policy_create_system("tf_sac", path.c_str(), kTfDevice, kTfDevice),
            TORCHFORT_RESULT_SUCCESS);
  EXPECT_LT(run_torchfort_loop("tf_sac", false, 20000, 0, 100), 1e-2f);
}

// Every refusal names what is wrong, and none touches the caller's outputs.
TEST(TorchFortRL, RefusalsNameTheSystemTheArgumentOrTheKey) {
  ::testing::internal::CaptureStderr();
  float p = 7, q = 7;
  EXPECT_EQ(torchfort_rl_off_policy_train_step("tf_nobody", &p, &q, 0), TORCHFORT_RESULT_INVALID_USAGE);
  std::string yaml = config("td3");
  std::string const path = write_file("tf_refusals.yaml", yaml);
  ASSERT_EQ(torchfort_rl_off_policy_create_system("tf_refusals", path.c_str(), kTfDevice, kTfDevice),
            TORCHFORT_RESULT_SUCCESS);
  EXPECT_EQ(torchfort_rl_off_policy_create_system("TF_Refusals", path.c_str(), kTfDevice, kTfDevice),
            TORCHFORT_RESULT_INVALID_USAGE);
  EXPECT_EQ(torchfort_rl_off_policy_train_step("tf_refusals", &p, &q, 0), TORCHFORT_RESULT_INVALID_USAGE);
  EXPECT_EQ(p, 7.0f);
  float state[2] = {0, 0}, action = 0;
  double reward = 1;
  int64_t two[1] = {2}, one[1] = {1};
  EXPECT_EQ(torchfort_rl_off_policy_update_replay_buffer("tf_refusals", state, state, 1, two, &action, 1, one,
                                                         &reward, false, TORCHFORT_FLOAT, 0),
            TORCHFORT_RESULT_INVALID_USAGE);
  EXPECT_EQ(torchfort_rl_off_policy_update_replay_buffer("tf_refusals", state, state, 1, one, &action, 1, one,
                                                         nullptr, false, TORCHFORT_FLOAT, 0),
            TORCHFORT_RESULT_INVALID_USAGE);
  double dstate = 0, daction = 0;
  EXPECT_EQ(torchfort_rl_off_policy_update_replay_buffer("tf_refusals", &dstate, &dstate, 1, one, &daction, 1, one,
                                                         &reward, false, TORCHFORT_DOUBLE, 0),
            TORCHFORT_RESULT_SUCCESS)
      << "double arrays are read";
  std::string ppo = yaml;
  ppo.replace(ppo.find("type: td3"), 9, "type: PPO");
  EXPECT_EQ(torchfort_rl_off_policy_create_system("tf_ppo", write_file("tf_ppo.yaml", ppo).c_str(), kTfDevice,
                                                  kTfDevice),
            TORCHFORT_RESULT_NOT_SUPPORTED);
  std::string alpha = yaml;
  alpha.replace(alpha.find("    rho: 0.999\n"), 15, "    rho: 0.999\n    alpha: 0.1\n");
  EXPECT_EQ(torchfort_rl_off_policy_create_system("tf_alpha", write_file("tf_alpha.yaml", alpha).c_str(),
                                                  kTfDevice, kTfDevice),
            TORCHFORT_RESULT_INVALID_USAGE);
  std::string weights = yaml;  // prioritized replay's keys under a uniform buffer
  weights.replace(weights.find("    min_size: 512\n"), 18, "    min_size: 512\n    beta0: 0.5\n");
  EXPECT_EQ(torchfort_rl_off_policy_create_system("tf_beta", write_file("tf_beta.yaml", weights).c_str(),
                                                  kTfDevice, kTfDevice),
            TORCHFORT_RESULT_INVALID_USAGE);
  std::string median = yaml;
  median.replace(median.find("reduction: sum"), 14, "reduction: median");
  EXPECT_EQ(torchfort_rl_off_policy_create_system("tf_median", write_file("tf_median.yaml", median).c_str(),
                                                  kTfDevice, kTfDevice),
            TORCHFORT_RESULT_INVALID_USAGE);
  std::string typo = yaml;
  typo.replace(typo.find("rho:"), 4, "rh0:");
  EXPECT_EQ(torchfort_rl_off_policy_create_system("tf_typo", write_file("tf_typo.yaml", typo).c_str(), kTfDevice,
                                                  kTfDevice),
            TORCHFORT_RESULT_INVALID_USAGE);
  std::string const err = ::testing::internal::GetCapturedStderr();
  for (char const* said :
       {"system 'tf_nobody': does not exist", "exists already", "does not hold min_size (512)",
        "state_old: holds 2 values per row; the system's are 1", "reward: is a null pointer",
        "algorithm.type: 'ppo' is an on-policy algorithm", "algorithm.parameters.rh0: unknown key",
        "algorithm.parameters.alpha: belongs to SAC",
        "replay_buffer.parameters.beta0: belongs to the prioritized replay buffer", "'median' is not a reduction"})
    EXPECT_NE(err.find(said), std::string::npos) << said << "\n" << err;
}

// TorchFort's _multi form: one slot holds a time step of every environment (replay_buffer.parameters.n_envs), its
// states (n_envs, S) in C order or (S, n_envs) in Fortran's, rewards and terminal flags (n_envs). min_size and
// max_size count transitions, as TorchFort's do: min_size 32 of 4 environments is ready after 8 pushes.
TEST(TorchFortRL, TheMultiFormPushesEveryEnvironmentsStepAndRefusesAnotherCount) {
  std::string text = config("ddpg");
  text.replace(text.find("    min_size: 512\n"), 18, "    min_size: 32\n    n_envs: 4\n");
  text.replace(text.find("[1, 16, 1]"), 10, "[2, 16, 1]");
  text.replace(text.find("[2, 16, 1]", text.find("critic_model")), 10, "[3, 16, 1]");
  std::string const path = write_file("tf_multi.yaml", text);
  ASSERT_EQ(torchfort_rl_off_policy_create_system("tf_multi", path.c_str(), kTfDevice, kTfDevice),
            TORCHFORT_RESULT_SUCCESS);
  std::vector<float> s(8, 0.5f), a(4, 0.0f), r(4, 1.0f), d(4, 0.0f);
  int64_t c_state[2] = {4, 2}, f_state[2] = {2, 4}, c_action[2] = {4, 1}, f_action[2] = {1, 4}, n4[1] = {4};
  bool ready = true;
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(torchfort_rl_off_policy_is_ready("tf_multi", ready), TORCHFORT_RESULT_SUCCESS);
    EXPECT_FALSE(ready) << "after " << 2 * i << " pushes of 4 environments";
    EXPECT_EQ(torchfort_rl_off_policy_update_replay_buffer_multi("tf_multi", s.data(), s.data(), 2, c_state,
                                                                 a.data(), 2, c_action, r.data(), 1, n4, d.data(),
                                                                 1, n4, TORCHFORT_FLOAT, 0),
              TORCHFORT_RESULT_SUCCESS);
    EXPECT_EQ(torchfort_rl_off_policy_update_replay_buffer_multi_F("tf_multi", s.data(), s.data(), 2, f_state,
                                                                   a.data(), 2, f_action, r.data(), 1, n4,
                                                                   d.data(), 1, n4, TORCHFORT_FLOAT, 0),
              TORCHFORT_RESULT_SUCCESS);
  }
  EXPECT_EQ(torchfort_rl_off_policy_is_ready("tf_multi", ready), TORCHFORT_RESULT_SUCCESS);
  EXPECT_TRUE(ready) << "8 slots of 4 environments: min_size 32";
  float p = 0, q = -1;
  EXPECT_EQ(torchfort_rl_off_policy_train_step("tf_multi", &p, &q, 0), TORCHFORT_RESULT_SUCCESS);
  EXPECT_GE(q, 0.0f);
  ::testing::internal::CaptureStderr();
  int64_t three[2] = {3, 2}, three_a[2] = {3, 1}, n3[1] = {3};
  EXPECT_EQ(torchfort_rl_off_policy_update_replay_buffer_multi("tf_multi", s.data(), s.data(), 2, three, a.data(),
                                                               2, three_a, r.data(), 1, n3, d.data(), 1, n3,
                                                               TORCHFORT_FLOAT, 0),
            TORCHFORT_RESULT_INVALID_USAGE);
  float reward = 1;
  int64_t one_state[1] = {2}, one_action[1] = {1};
  EXPECT_EQ(torchfort_rl_off_policy_update_replay_buffer("tf_multi", s.data(), s.data(), 1, one_state, a.data(), 1,
                                                         one_action, &reward, false, TORCHFORT_FLOAT, 0),
            TORCHFORT_RESULT_INVALID_USAGE);
  std::string const err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("holds 3 environments and action_old 3; the system has 4"), std::string::npos) << err;
  EXPECT_NE(err.find("one per call without _multi"), std::string::npos) << err;
}

// TorchFort's keys for n-step returns, prioritized replay, the running normalisers and the OU parameter-noise
// actor make a system that trains; a window longer than the buffer, and an OU actor without its dt, are refused by
// name.
TEST(TorchFortRL, NStepPrioritizedNormalizedAndParameterNoiseSystemsFromTorchFortsKeysTrain) {
  std::string text = config("td3");
  text.replace(text.find("nstep: 1"), 8, "nstep: 3");
  text.replace(text.find("reduction: sum"), 14,
               "reduction: mean_no_skip\n    normalize_states: 1\n"
               "    normalize_rewards: true");
  text.replace(text.find("type: uniform"), 13, "type: prioritized");
  text.replace(text.find("type: space_noise"), 17, "type: parameter_noise_ou");
  text.replace(text.find("    sigma_explore: 1.0\n"), 23,
               "    sigma_explore: 1.0\n    dt: 0.1\n    xi: 0.5\n"
               "    adaptive: true\n");
  text.replace(text.find("    min_size: 512\n"), 18,
               "    min_size: 512\n    alpha: 0.7\n    beta0: 0.5\n"
               "    beta_max: 1\n    beta_steps: 1000\n");
  ASSERT_EQ(torchfort_rl_off_policy_create_system("tf_per", write_file("tf_per.yaml", text).c_str(), kTfDevice,
                                                  kTfDevice),
            TORCHFORT_RESULT_SUCCESS);
  int64_t one[1] = {1};
  for (int i = 0; i < 520; ++i) {
    float s = float(i % 7) * 10, a = 0.5f, r = float(i % 3);
    ASSERT_EQ(torchfort_rl_off_policy_update_replay_buffer("tf_per", &s, &s, 1, one, &a, 1, one, &r, i % 4 == 3,
                                                           TORCHFORT_FLOAT, 0),
              TORCHFORT_RESULT_SUCCESS);
  }
  bool ready = false;
  EXPECT_EQ(torchfort_rl_off_policy_is_ready("tf_per", ready), TORCHFORT_RESULT_SUCCESS);
  EXPECT_TRUE(ready);
  float p = 0, q = -1;
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(torchfort_rl_off_policy_train_step("tf_per", &p, &q, 0), TORCHFORT_RESULT_SUCCESS);
  EXPECT_TRUE(std::isfinite(q) && q >= 0) << q;
  std::string longer = text;
  longer.replace(longer.find("nstep: 3"), 8, "nstep: 9000");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(torchfort_rl_off_policy_create_system("tf_long", write_file("tf_long.yaml", longer).c_str(), kTfDevice,
                                                  kTfDevice),
            TORCHFORT_RESULT_INVALID_USAGE);
  std::string undated = text;
  undated.replace(undated.find("    dt: 0.1\n"), 12, "");
  EXPECT_EQ(torchfort_rl_off_policy_create_system("tf_nodt", write_file("tf_nodt.yaml", undated).c_str(),
                                                  kTfDevice, kTfDevice),
            TORCHFORT_RESULT_INVALID_USAGE);
  std::string const err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("algorithm.parameters.nstep: is longer than the buffer keeps"), std::string::npos) << err;
  EXPECT_NE(err.find("actor.parameters.dt: missing"), std::string::npos) << err;
}

// TorchFort's checkpoint calls: save_checkpoint, then load_checkpoint into another system of the same file (the
// same actions and values), load_model (the networks only: its buffer stays empty).
// flatten_non_batch_dims on TorchFort's MLP policy: a system's arrays are (environments, values) rows, so false
// (the per-point network) gives the same actions and values as true. TorchFort's CriticMLP has no such key, and a
// critic that names it is refused, naming it.
TEST(TorchFortRL, FlattenNonBatchDimsFalseOnThePolicyGivesTheSameNetworkAndTheCriticRefusesIt) {
  std::string flat = config("td3"), per_point = flat, critic = flat;
  auto set_key = [](std::string& y, char const* section, char const* value) {
    std::size_t const at = y.find("dropout: 0.0\n", y.find(section));
    y.replace(at, 13, std::string("dropout: 0.0\n    flatten_non_batch_dims: ") + value + "\n");
  };
  set_key(flat, "policy_model", "true");
  set_key(per_point, "policy_model", "false");
  set_key(critic, "critic_model", "false");
  ASSERT_EQ(torchfort_rl_off_policy_create_system("tf_flat", write_file("tf_flat.yaml", flat).c_str(), kTfDevice,
                                                  kTfDevice),
            TORCHFORT_RESULT_SUCCESS);
  ASSERT_EQ(torchfort_rl_off_policy_create_system(
                "tf_per_point", write_file("tf_per_point.yaml", per_point).c_str(), kTfDevice, kTfDevice),
            TORCHFORT_RESULT_SUCCESS);
  float states[3] = {-0.5f, 0.1f, 0.7f}, a_flat[3] = {}, a_point[3] = {}, q_flat[3] = {}, q_point[3] = {};
  int64_t shape[2] = {3, 1}, three[1] = {3};
  for (auto [name, a, q] : {std::tuple{"tf_flat", a_flat, q_flat}, std::tuple{"tf_per_point", a_point, q_point}}) {
    ASSERT_EQ(torchfort_rl_off_policy_predict(name, states, 2, shape, a, 2, shape, TORCHFORT_FLOAT, 0),
              TORCHFORT_RESULT_SUCCESS);
    ASSERT_EQ(
        torchfort_rl_off_policy_evaluate(name, states, 2, shape, a, 2, shape, q, 1, three, TORCHFORT_FLOAT, 0),
        TORCHFORT_RESULT_SUCCESS);
  }
  for (int i = 0; i < 3; ++i) EXPECT_EQ(a_flat[i], a_point[i]) << i;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(q_flat[i], q_point[i]) << i;
  EXPECT_NE(a_flat[0], a_flat[2]);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(torchfort_rl_off_policy_create_system(
                "tf_critic_flat", write_file("tf_critic_flat.yaml", critic).c_str(), kTfDevice, kTfDevice),
            TORCHFORT_RESULT_INVALID_USAGE);
  std::string const err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("critic_model.parameters.flatten_non_batch_dims: TorchFort's CriticMLP has no such key"),
            std::string::npos)
      << err;
}

// enable_wandb_hook with TORCHFORT_LOGDIR: TorchFort's metric lines of a TD3 system (policy_lag 2,
// report_frequency 2): the critic's at updates 2 and 4, the actor's at its own second update (update 4) only; the
// torchfort_rl_off_policy_wandb_log_* lines; the configuration with its identifier beside them. A system without
// the hook logs nothing and its wandb_log calls succeed; an unknown system or an empty metric name is refused.
TEST(TorchFortRL, WandbHookLogsTheCriticsAndActorsLinesAndTheWandbLogCalls) {
  std::string yaml = config("td3");
  yaml.replace(yaml.find("report_frequency: 0"), 19, "report_frequency: 2");
  yaml.replace(yaml.find("enable_wandb_hook: 0"), 20, "enable_wandb_hook: 1");
  yaml.replace(yaml.find("batch_size: 128"), 15, "batch_size: 8");
  yaml.replace(yaml.find("min_size: 512"), 13, "min_size: 16");
  std::string const dir = ::testing::TempDir() + "tf_rl_logdir";
  std::remove((dir + "/torchfort.log").c_str());
  ::setenv("TORCHFORT_LOGDIR", dir.c_str(), 1);
  ASSERT_EQ(torchfort_rl_off_policy_create_system("tf_rl_wandb", write_file("tf_rl_wandb.yaml", yaml).c_str(),
                                                  kTfDevice, kTfDevice),
            TORCHFORT_RESULT_SUCCESS);
  ::unsetenv("TORCHFORT_LOGDIR");
  std::string quiet = config("td3");
  quiet.replace(quiet.find("min_size: 512"), 13, "min_size: 16");
  ASSERT_EQ(torchfort_rl_off_policy_create_system("tf_rl_quiet", write_file("tf_rl_quiet.yaml", quiet).c_str(),
                                                  kTfDevice, kTfDevice),
            TORCHFORT_RESULT_SUCCESS);
  float s = 0.5f, a = 0, r = 1;
  int64_t one[1] = {1};
  for (int i = 0; i < 16; ++i)
    ASSERT_EQ(torchfort_rl_off_policy_update_replay_buffer("tf_rl_wandb", &s, &s, 1, one, &a, 1, one, &r, false,
                                                           TORCHFORT_FLOAT, 0),
              TORCHFORT_RESULT_SUCCESS);
  ::testing::internal::CaptureStdout();
  for (int i = 0; i < 4; ++i)
    ASSERT_EQ(torchfort_rl_off_policy_train_step("tf_rl_wandb", nullptr, nullptr, 0), TORCHFORT_RESULT_SUCCESS);
  ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(torchfort_rl_off_policy_wandb_log_float("tf_rl_wandb", "reward", 9, 0.5f), TORCHFORT_RESULT_SUCCESS);
  EXPECT_EQ(torchfort_rl_off_policy_wandb_log_int("tf_rl_wandb", "episode", 9, 3), TORCHFORT_RESULT_SUCCESS);
  EXPECT_EQ(torchfort_rl_off_policy_wandb_log_double("tf_rl_wandb", "drag", 9, 0.25), TORCHFORT_RESULT_SUCCESS);
  std::string const log = ktr::test::slurp(dir + "/torchfort.log");
  for (char const* line : {"TORCHFORT::WANDB: model: critic_0, step: 2, train_loss: ",
                           "TORCHFORT::WANDB: model: critic_0, step: 2, train_lr: ",
                           "TORCHFORT::WANDB: model: critic_0, step: 4, train_loss: ",
                           "TORCHFORT::WANDB: model: actor, step: 2, train_loss: ",
                           "TORCHFORT::WANDB: model: actor, step: 2, train_lr: ",
                           "TORCHFORT::WANDB: model: tf_rl_wandb, step: 9, reward: 0.5\n",
                           "TORCHFORT::WANDB: model: tf_rl_wandb, step: 9, episode: 3\n",
                           "TORCHFORT::WANDB: model: tf_rl_wandb, step: 9, drag: 0.25\n"})
    EXPECT_NE(log.find(line), std::string::npos) << line << " in\n" << log;
  for (char const* absent : {"critic_0, step: 1,", "critic_0, step: 3,", "actor, step: 1,"})
    EXPECT_EQ(log.find(absent), std::string::npos) << absent << " in\n" << log;
  EXPECT_NE(ktr::test::slurp(dir + "/config_tf_rl_wandb.yaml").find("identifier: tf_rl_wandb"), std::string::npos);

  EXPECT_EQ(torchfort_rl_off_policy_wandb_log_float("tf_rl_quiet", "reward", 9, 0.5f), TORCHFORT_RESULT_SUCCESS);
  EXPECT_EQ(ktr::test::slurp(dir + "/torchfort.log"), log) << "a system without the hook logs nothing";
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(torchfort_rl_off_policy_wandb_log_float("tf_rl_nobody", "reward", 9, 0.5f),
            TORCHFORT_RESULT_INVALID_USAGE);
  EXPECT_EQ(torchfort_rl_off_policy_wandb_log_int("tf_rl_wandb", "", 9, 1), TORCHFORT_RESULT_INVALID_USAGE);
  std::string const err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("system 'tf_rl_nobody': does not exist"), std::string::npos) << err;
  EXPECT_NE(err.find("metric_name: is null or empty"), std::string::npos) << err;
}

TEST(TorchFortRL, ASavedSystemLoadsWholeOrAsItsNetworksOnly) {
  std::string const path = write_file("tf_ckpt.yaml", config("td3"));
  for (char const* n : {"tf_ckpt_a", "tf_ckpt_b", "tf_ckpt_c"})
    ASSERT_EQ(torchfort_rl_off_policy_create_system(n, path.c_str(), kTfDevice, kTfDevice),
              TORCHFORT_RESULT_SUCCESS);
  float s = 0.5f, a = 0, r = 1;
  int64_t one[1] = {1}, batch[2] = {1, 1};
  for (int i = 0; i < 600; ++i) {
    ASSERT_EQ(torchfort_rl_off_policy_update_replay_buffer("tf_ckpt_a", &s, &s, 1, one, &a, 1, one, &r, true,
                                                           TORCHFORT_FLOAT, 0),
              TORCHFORT_RESULT_SUCCESS);
    bool ready = false;
    ASSERT_EQ(torchfort_rl_off_policy_is_ready("tf_ckpt_a", ready), TORCHFORT_RESULT_SUCCESS);
    if (ready)
      ASSERT_EQ(torchfort_rl_off_policy_train_step("tf_ckpt_a", nullptr, nullptr, 0), TORCHFORT_RESULT_SUCCESS);
  }
  std::string const dir = ::testing::TempDir() + "tf_rl_ckpt";
  ASSERT_EQ(torchfort_rl_off_policy_save_checkpoint("tf_ckpt_a", dir.c_str()), TORCHFORT_RESULT_SUCCESS);
  ASSERT_EQ(torchfort_rl_off_policy_load_checkpoint("tf_ckpt_b", dir.c_str()), TORCHFORT_RESULT_SUCCESS);
  ASSERT_EQ(torchfort_rl_off_policy_load_model("tf_ckpt_c", dir.c_str()), TORCHFORT_RESULT_SUCCESS);
  float act[3] = {}, q[3] = {};
  for (int k = 0; k < 3; ++k) {
    char const* n = k == 0 ? "tf_ckpt_a" : (k == 1 ? "tf_ckpt_b" : "tf_ckpt_c");
    ASSERT_EQ(torchfort_rl_off_policy_predict(n, &s, 2, batch, &act[k], 2, batch, TORCHFORT_FLOAT, 0),
              TORCHFORT_RESULT_SUCCESS);
    ASSERT_EQ(
        torchfort_rl_off_policy_evaluate(n, &s, 2, batch, &act[k], 2, batch, &q[k], 1, one, TORCHFORT_FLOAT, 0),
        TORCHFORT_RESULT_SUCCESS);
  }
  EXPECT_NEAR(act[1], act[0], 1e-5f);
  EXPECT_NEAR(act[2], act[0], 1e-5f);
  EXPECT_NEAR(q[1], q[0], 1e-5f);
  EXPECT_NEAR(q[2], q[0], 1e-5f);
  bool ready = true;
  EXPECT_EQ(torchfort_rl_off_policy_is_ready("tf_ckpt_b", ready), TORCHFORT_RESULT_SUCCESS);
  EXPECT_TRUE(ready) << "load_checkpoint restores the buffer";
  EXPECT_EQ(torchfort_rl_off_policy_is_ready("tf_ckpt_c", ready), TORCHFORT_RESULT_SUCCESS);
  EXPECT_FALSE(ready) << "load_model leaves the buffer empty";
  EXPECT_EQ(torchfort_rl_off_policy_train_step("tf_ckpt_b", nullptr, nullptr, 0), TORCHFORT_RESULT_SUCCESS)
      << "a restored system trains on";
}

}  // namespace
