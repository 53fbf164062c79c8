// ktr's own reinforcement-learning calls (ktr_rl_* in ktr_c.h, capi/rl.cpp): K updates in one call equal K calls
// of one, n_envs per system, the registry shared with TorchFort's door, and refusals that name what is wrong.
#include <ktr/ktr_c.h>
#include <torchfort.h>

#include "../core/types.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

namespace {

int const kKtrDevice = ktr::device_is_host ? KTR_DEVICE_CPU : KTR_DEVICE_DEFAULT;

// TorchFort's td3.yaml at small sizes, two values of state and one of action.
std::string rl_config_file() {
  std::string const path = ::testing::TempDir() + "ktr_rl_td3.yaml";
  std::ofstream(path)
      << "algorithm:\n  type: td3\n  parameters:\n    batch_size: 32\n    num_critics: 2\n    policy_lag: 2\n"
         "    nstep: 2\n    nstep_reward_reduction: sum_no_skip\n    gamma: 0.95\n    rho: 0.99\n"
         "    normalize_states: true\n"
         "actor:\n  type: space_noise\n  parameters:\n    a_low: -1.\n    a_high: 1.\n    clip: 0.3\n"
         "    sigma_train: 0.2\n    sigma_explore: 0.5\n"
         "replay_buffer:\n  type: prioritized\n  parameters:\n    max_size: 4096\n    min_size: 64\n"
         "policy_model:\n  type: MLP\n  parameters:\n    layer_sizes: [2, 16, 1]\n"
         "critic_model:\n  type: CriticMLP\n  parameters:\n    layer_sizes: [3, 16, 1]\n"
         "optimizer:\n  type: adam\n  parameters:\n    learning_rate: 1e-3\n";
  return path;
}

// 40 time steps of n environments (C-ordered rows, host memory).
void fill(char const* name, std::int64_t envs) {
  std::size_t const n = static_cast<std::size_t>(envs);
  std::vector<float> s(2 * n), a(n), r(n), s2(2 * n), d(n);
  for (int t = 0; t < 40; ++t) {
    for (std::size_t e = 0; e < n; ++e) {
      s[2 * e] = float(t % 5), s[2 * e + 1] = float(e);
      s2[2 * e] = float((t + 1) % 5), s2[2 * e + 1] = float(e);
      a[e] = 0.1f * float(e), r[e] = float((t + int(e)) % 3), d[e] = t % 7 == 6 ? 1.0f : 0.0f;
    }
    ASSERT_EQ(ktr_rl_push(name, envs, s.data(), a.data(), r.data(), s2.data(), d.data(), KTR_FLOAT, nullptr),
              KTR_RESULT_SUCCESS)
        << ktr_last_error();
  }
}

std::vector<double> probe(char const* name) {
  double const s[6] = {0, 0, 1, 1, 4, 2};
  std::vector<double> act(3), q(3);
  EXPECT_EQ(ktr_rl_predict(name, 3, s, act.data(), 0, KTR_DOUBLE, nullptr), KTR_RESULT_SUCCESS)
      << ktr_last_error();
  EXPECT_EQ(ktr_rl_evaluate(name, 3, s, act.data(), q.data(), KTR_DOUBLE, nullptr), KTR_RESULT_SUCCESS);
  act.insert(act.end(), q.begin(), q.end());
  return act;
}

// One call of 12 updates is 12 calls of one (the same samples, noise and priorities: the counters live on the
// device); n_envs comes from the call that creates the system, and its sizes count that many environments.
TEST(KtrRl, KUpdatesInOneCallEqualKCallsOfOne) {
  std::string const path = rl_config_file();
  ASSERT_EQ(ktr_rl_create_system("ktr_rl_k", path.c_str(), 4, kKtrDevice), KTR_RESULT_SUCCESS) << ktr_last_error();
  ASSERT_EQ(ktr_rl_create_system("ktr_rl_one", path.c_str(), 4, kKtrDevice), KTR_RESULT_SUCCESS);
  int ready = 1;
  EXPECT_EQ(ktr_rl_ready("ktr_rl_k", &ready), KTR_RESULT_SUCCESS);
  EXPECT_EQ(ready, 0);
  fill("ktr_rl_k", 4);
  fill("ktr_rl_one", 4);
  EXPECT_EQ(ktr_rl_ready("ktr_rl_k", &ready), KTR_RESULT_SUCCESS);
  EXPECT_EQ(ready, 1) << "40 steps of 4 environments hold min_size 64";
  EXPECT_EQ(ktr_rl_train("ktr_rl_k", 12, nullptr, nullptr, nullptr), KTR_RESULT_SUCCESS) << ktr_last_error();
  for (int i = 0; i < 12; ++i)
    ASSERT_EQ(ktr_rl_train("ktr_rl_one", 1, nullptr, nullptr, nullptr), KTR_RESULT_SUCCESS);
  EXPECT_EQ(probe("ktr_rl_k"), probe("ktr_rl_one"));
  float p = -1, q = -1;
  EXPECT_EQ(ktr_rl_train("ktr_rl_k", 2, &p, &q, nullptr), KTR_RESULT_SUCCESS);
  EXPECT_TRUE(std::isfinite(p) && p != 0 && std::isfinite(q) && q >= 0)
      << p << " " << q << ": update 14 steps the policy (lag 2)";
  // The same system through TorchFort's door (one registry, case-blind names).
  float tp = 0, tq = 0;
  EXPECT_EQ(torchfort_rl_off_policy_train_step("KTR_RL_K", &tp, &tq, 0), TORCHFORT_RESULT_SUCCESS);
  EXPECT_EQ(ktr_rl_destroy_system("ktr_rl_k"), KTR_RESULT_SUCCESS);
  EXPECT_EQ(ktr_rl_destroy_system("ktr_rl_one"), KTR_RESULT_SUCCESS);
}

// ktr's door never prints: a file with enable_wandb_hook and no TORCHFORT_LOGDIR gives TorchFort's door its
// notice on stderr, and ktr's none.
TEST(KtrRl, AWandbHookWithoutALogdirIsANoticeFromTorchFortsDoorOnly) {
  std::string const path = ::testing::TempDir() + "ktr_rl_wandb.yaml";
  {
    std::ifstream in(rl_config_file());
    std::ofstream(path) << "general:\n  enable_wandb_hook: 1\n" << in.rdbuf();
  }
  ::unsetenv("TORCHFORT_LOGDIR");
  ::testing::internal::CaptureStderr();
  ASSERT_EQ(ktr_rl_create_system("ktr_rl_wandb_quiet", path.c_str(), 0, kKtrDevice), KTR_RESULT_SUCCESS)
      << ktr_last_error();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  ::testing::internal::CaptureStderr();
  ASSERT_EQ(torchfort_rl_off_policy_create_system("ktr_rl_wandb_notice", path.c_str(), TORCHFORT_DEVICE_CPU,
                                                  TORCHFORT_DEVICE_CPU),
            TORCHFORT_RESULT_SUCCESS);
  std::string const err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("enable_wandb_hook is true but TORCHFORT_LOGDIR is not set"), std::string::npos) << err;
}

TEST(KtrRl, RefusalsNameTheSystemTheArgumentOrTheCount) {
  std::string const path = rl_config_file();
  float x[8] = {};
  EXPECT_EQ(ktr_rl_train("ktr_rl_nobody", 1, nullptr, nullptr, nullptr), KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(std::string(ktr_last_error()).find("system 'ktr_rl_nobody': does not exist"), std::string::npos)
      << ktr_last_error();
  EXPECT_EQ(ktr_rl_create_system("ktr_rl_bad", path.c_str(), -2, kKtrDevice), KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(std::string(ktr_last_error()).find("n_envs"), std::string::npos) << ktr_last_error();
  EXPECT_EQ(ktr_rl_create_system("ktr_rl_big", path.c_str(), 8192, kKtrDevice), KTR_RESULT_INVALID_USAGE)
      << "max_size 4096 cannot hold one step of 8192 environments";
  EXPECT_NE(std::string(ktr_last_error()).find("must be at least n_envs (8192)"), std::string::npos)
      << ktr_last_error();
  ASSERT_EQ(ktr_rl_create_system("ktr_rl_r", path.c_str(), 2, kKtrDevice), KTR_RESULT_SUCCESS);
  EXPECT_EQ(ktr_rl_create_system("KTR_RL_R", path.c_str(), 2, kKtrDevice), KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(std::string(ktr_last_error()).find("exists already"), std::string::npos) << ktr_last_error();
  EXPECT_EQ(ktr_rl_push("ktr_rl_r", 3, x, x, x, x, x, KTR_FLOAT, nullptr), KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(std::string(ktr_last_error()).find("n_envs: is 3; system 'ktr_rl_r' has 2"), std::string::npos)
      << ktr_last_error();
  EXPECT_EQ(ktr_rl_push("ktr_rl_r", 2, x, x, x, x, x, KTR_INT32, nullptr), KTR_RESULT_INVALID_USAGE);
  EXPECT_EQ(ktr_rl_train("ktr_rl_r", 0, nullptr, nullptr, nullptr), KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(std::string(ktr_last_error()).find("updates: must be at least 1"), std::string::npos);
  EXPECT_EQ(ktr_rl_train("ktr_rl_r", 4, nullptr, nullptr, nullptr), KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(std::string(ktr_last_error()).find("does not hold min_size (64)"), std::string::npos)
      << ktr_last_error();
  EXPECT_EQ(ktr_rl_predict("ktr_rl_r", 0, x, x, 0, KTR_FLOAT, nullptr), KTR_RESULT_INVALID_USAGE);
  EXPECT_EQ(ktr_rl_ready("ktr_rl_r", nullptr), KTR_RESULT_INVALID_USAGE);
  EXPECT_EQ(ktr_rl_destroy_system("ktr_rl_r"), KTR_RESULT_SUCCESS);
  EXPECT_EQ(ktr_rl_destroy_system("ktr_rl_r"), KTR_RESULT_INVALID_USAGE);
}

}  // namespace
