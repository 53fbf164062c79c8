// Off-policy reinforcement learning (rl/): the transition buffer, and TD3 and DDPG against TorchFort's own test
// environments and pass criteria (tests/rl/test_off_policy.cpp of NVIDIA/TorchFort, its td3.yaml and ddpg.yaml):
// a constant, a predictable, a delayed, an action and an action-state reward, one-value states and actions.
#include <ktr/core/error.hpp>
#include <ktr/core/file.hpp>
#include <ktr/rl/off_policy.hpp>
#include <ktr/rl/torchfort_check.hpp>
#include <ktr/train/checkpoint.hpp>
#include <ktr/train/run_directory.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace {

using ktr::Shape;
using ktr::Tensor;
using ktr::rl::OffPolicyConfig;
using ktr::rl::OffPolicySystem;

OffPolicyConfig torchfort_test_config(OffPolicyConfig::Algorithm algorithm, std::uint64_t seed) {
  return ktr::rl::torchfort_check_config(algorithm, seed);
}

}  // namespace

namespace ktr::test {
// True where the convergence suites run (tests/CMakeLists.txt: the 1-thread pass of an unsanitised OpenMP build).
bool rl_suite_runs() {
#if defined(KTR_RL_SUITE_THREADS)
  char const* v = std::getenv("KTR_TEST_THREADS");
  return v != nullptr && std::atoi(v) == KTR_RL_SUITE_THREADS;
#else
  return false;
#endif
}

// A system's actions and first critic's values at the states -1, 0 and 1 (test_rl_replay.cpp uses it too).
std::vector<float> rl_probe(ktr::ExecSpace const& space, ktr::rl::OffPolicySystem& system) {
  Tensor in("probe", Shape{3, 1}), act("act", Shape{3, 1}), q("q", Shape{3});
  ktr::from_host(in, {-1, 0, 1});
  system.predict(space, in, act);
  system.evaluate(space, in, act, q);
  std::vector<float> out = ktr::to_host(act), qs = ktr::to_host(q);
  out.insert(out.end(), qs.begin(), qs.end());
  return out;
}

// `pushes` one-environment transitions from push `first` on (state (i % 3) - 1, reward i % 2, an episode end
// every `episode` pushes), acting with exploration and training 2 updates a push once the buffer is ready.
void rl_drive(ktr::ExecSpace const& space, ktr::rl::OffPolicySystem& system, int pushes, int first, int episode) {
  Tensor s("s", Shape{1, 1}), a("a", Shape{1, 1}), r("r", Shape{1}), d("d", Shape{1});
  for (int i = first; i < first + pushes; ++i) {
    ktr::from_host(s, {float(i % 3) - 1});
    system.predict(space, s, a, true);
    ktr::from_host(r, {float(i % 2)});
    ktr::from_host(d, {i % episode == episode - 1 ? 1.0f : 0.0f});
    system.push(space, s.data(), a.data(), r.data(), s.data(), d.data());
    if (system.ready(space)) system.train(space, 2);
  }
}
}  // namespace ktr::test

namespace {

// TorchFort's criteria (rl/torchfort_check.hpp), on two seeds at TorchFort's full iteration counts.
void expect_torchfort_criterion(ktr::rl::CheckEnvironment env, OffPolicyConfig::Algorithm algorithm) {
  if (!ktr::test::rl_suite_runs())
    GTEST_SKIP() << "the RL convergence suite runs once, in the 1-thread pass of an unsanitised OpenMP build";
  for (auto const& c : ktr::rl::torchfort_check_cases()) {
    if (c.environment != env || c.algorithm != algorithm) continue;
    for (std::uint64_t seed : {1, 2}) {
      ktr::rl::CheckResult const r = ktr::rl::run_torchfort_check(ktr::ExecSpace(), c, seed);
      EXPECT_TRUE(r.passed()) << ktr::rl::check_environment_name(env) << ", seed " << seed << ": " << r.value
                              << ", expected " << r.target << " within " << r.tolerance;
    }
    return;
  }
  FAIL() << "TorchFort has no such case";
}

constexpr auto td3 = OffPolicyConfig::Algorithm::td3;
constexpr auto ddpg = OffPolicyConfig::Algorithm::ddpg;
constexpr auto sac = OffPolicyConfig::Algorithm::sac;

// The buffer: a slot with a non-finite value is refused and counted on the device, the rest stored; the oldest
// slots are overwritten; every sampled transition is one that was stored, whole.
TEST(RL, TheBufferRefusesNonFiniteSlotsKeepsTheNewestAndSamplesWholeTransitions) {
  ktr::ExecSpace space;
  ktr::rl::TransitionBuffer buffer(space, 3, 2, 1, 2);  // 3 slots of 2 environments, S = 2, A = 1
  Tensor s("s", Shape{2, 2}), a("a", Shape{2, 1}), r("r", Shape{2}), s2("s'", Shape{2, 2}), d("d", Shape{2});
  for (int slot = 0; slot < 5; ++slot) {
    float const v = float(10 * slot);
    ktr::from_host(s, {v, v + 1, v + 2, v + 3});
    ktr::from_host(a, {v + 4, v + 5});
    ktr::from_host(r, {v + 6, slot == 2 ? NAN : v + 7});  // slot 2 is refused, whole
    ktr::from_host(s2, {v + 8, v + 9, v + 10, v + 11});
    ktr::from_host(d, {0, 1});
    buffer.push(space, s.data(), a.data(), r.data(), s2.data(), d.data());
  }
  std::int64_t counters[3];
  Kokkos::deep_copy(
      Kokkos::View<std::int64_t[3], ktr::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(counters),
      buffer.counters());
  EXPECT_EQ(buffer.pushed(), 5);
  EXPECT_EQ(counters[1], 3) << "stored slots: the capacity";
  EXPECT_EQ(counters[2], 1) << "refused slots";
  ktr::rl::TransitionBatch batch{Tensor("sa", Shape{64, 3}), Tensor("st", Shape{64, 2}),
                                 Tensor("sn", Shape{64, 2}), Tensor("rw", Shape{64}), Tensor("dn", Shape{64})};
  ktr::DeviceView<std::int64_t*> draw("draw", 1);
  buffer.sample(space, 7, draw.data(), batch);
  auto const sa = ktr::to_host(batch.state_action), st = ktr::to_host(batch.state),
             sn = ktr::to_host(batch.next_state), rw = ktr::to_host(batch.reward), dn = ktr::to_host(batch.done);
  std::set<int> seen;
  for (std::size_t b = 0; b < 64; ++b) {
    int const base = int(sa[3 * b]) / 10 * 10, env = int(sa[3 * b]) % 10 == 0 ? 0 : 1;
    seen.insert(base / 10);
    EXPECT_TRUE(base == 10 || base == 30 || base == 40) << "only stored slots (1, 3, 4) are drawn: " << base;
    EXPECT_EQ(sa[3 * b + 1], float(base + 2 * env + 1));
    EXPECT_EQ(sa[3 * b + 2], float(base + 4 + env));
    EXPECT_EQ(st[2 * b], sa[3 * b]);
    EXPECT_EQ(rw[b], float(base + 6 + env));
    EXPECT_EQ(sn[2 * b], float(base + 8 + 2 * env));
    EXPECT_EQ(dn[b], float(env));
  }
  EXPECT_EQ(seen.size(), 3u) << "64 draws reach every stored slot";
}

// A system refuses networks that do not fit: the critic takes the state and the action, and outputs one value.
TEST(RL, ASystemRefusesACriticThatDoesNotTakeTheStateAndTheAction) {
  ktr::ExecSpace space;
  OffPolicyConfig c = torchfort_test_config(td3, 1);
  c.critic = "in=3 dense:16:relu dense:1";
  EXPECT_THROW(OffPolicySystem(space, c), ktr::Error);
  c.critic = "in=2 dense:16:relu dense:2";
  EXPECT_THROW(OffPolicySystem(space, c), ktr::Error);
  c = torchfort_test_config(td3, 1);
  c.min_size = c.max_size + 1;
  EXPECT_THROW(OffPolicySystem(space, c), ktr::Error);
}

// The same seed gives the same actions after the same updates (counter-based draws: no hidden generator state).
TEST(RL, TheSameSeedReplaysTheSameUpdatesBitForBit) {
  ktr::ExecSpace space;
  std::vector<float> actions[2];
  for (auto& out : actions) {
    OffPolicySystem system(space, torchfort_test_config(td3, 5));
    Tensor s("s", Shape{1, 1}), a("a", Shape{1, 1}), r("r", Shape{1}), d("d", Shape{1});
    for (int i = 0; i < 600; ++i) {
      ktr::from_host(s, {float(i % 3) - 1});
      system.predict(space, s, a, true);
      ktr::from_host(r, {float(i % 2)});
      ktr::from_host(d, {1});
      system.push(space, s.data(), a.data(), r.data(), s.data(), d.data());
      if (system.ready(space)) system.train(space, 4);
    }
    Tensor probe("probe", Shape{3, 1}), act("act", Shape{3, 1});
    ktr::from_host(probe, {-1, 0, 1});
    system.predict(space, probe, act);
    out = ktr::to_host(act);
    EXPECT_EQ(system.updates(), 4 * (600 - 511));
  }
  EXPECT_EQ(actions[0], actions[1]);
}

// A system trained for a while, saved, restored into a new one: the same actions, and the same ones again after
// both take the same pushes and updates (the buffer, moments, steps and draw counters came back too). Every push
// ends its episode.
TEST(RL, ARestoredSystemPredictsAndTrainsOnBitForBit) {
  ktr::ExecSpace space;
  std::string const dir = ::testing::TempDir() + "ktr_rl_ckpt";
  OffPolicySystem a(space, torchfort_test_config(td3, 9));
  ktr::test::rl_drive(space, a, 700, 0, 1);
  a.save(space, dir, "config text");
  OffPolicySystem b(space, torchfort_test_config(td3, 9));
  b.load(space, dir);
  EXPECT_EQ(ktr::test::rl_probe(space, b), ktr::test::rl_probe(space, a));
  EXPECT_EQ(b.updates(), a.updates());
  ktr::test::rl_drive(space, a, 50, 700, 1);
  ktr::test::rl_drive(space, b, 50, 700, 1);
  EXPECT_EQ(ktr::test::rl_probe(space, b), ktr::test::rl_probe(space, a)) << "the same updates after the restore";
  // A second save replaces the first as one generation; a directory holding a foreign file of ktr's names is not
  // written into.
  a.save(space, dir);
  std::string const foreign = ::testing::TempDir() + "ktr_rl_foreign";
  std::filesystem::create_directories(foreign);
  std::ofstream(foreign + "/system.ckpt") << "someone else's";
  EXPECT_THROW(a.save(space, foreign), ktr::Error);
  EXPECT_EQ(std::filesystem::file_size(foreign + "/system.ckpt"), 14u);
}

// A save over two ranks (system.ckpt and rank-1.ckpt, forged here from a one-rank save): a one-rank system refuses
// a whole restore naming both rank counts and stays as it was; load_model takes rank 0's networks.
TEST(RL, ASaveOverTwoRanksGivesOneRankItsNetworksButNotAWholeRestore) {
  ktr::ExecSpace space;
  std::string const dir = ::testing::TempDir() + "ktr_rl_ckpt_one", two = ::testing::TempDir() + "ktr_rl_ckpt_two";
  std::filesystem::remove_all(two);
  OffPolicySystem a(space, torchfort_test_config(td3, 5));
  ktr::test::rl_drive(space, a, 600, 0, 1);
  a.save(space, dir);
  ktr::Generation g = ktr::read_generation(dir);
  ktr::Checkpoint ckpt = ktr::parse_checkpoint("system.ckpt", g.files["system.ckpt"]);
  ASSERT_EQ(ckpt.get("ranks"), "1");
  ckpt.header["ranks"] = "2";
  std::string const bytes = ktr::checkpoint_bytes("system.ckpt", ckpt);
  auto write = [&](std::string const& path) { ktr::write_atomically(path, bytes); };
  ktr::save_generation(two, {{"system.ckpt", write}, {"rank-1.ckpt", write}, {"config.yaml", write}});
  OffPolicySystem b(space, torchfort_test_config(td3, 6));
  std::vector<float> const fresh = ktr::test::rl_probe(space, b);
  try {
    b.load(space, two);
    ADD_FAILURE() << "a one-rank system restored a two-rank save";
  } catch (ktr::Error const& e) {
    EXPECT_NE(std::string(e.what()).find("saved over 2 rank(s); this one runs over 1"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(ktr::test::rl_probe(space, b), fresh) << "a refused restore changed the system";
  EXPECT_FALSE(b.ready(space));
  b.load(space, two, true);
  EXPECT_EQ(ktr::test::rl_probe(space, b), ktr::test::rl_probe(space, a));
}

TEST(RL, LoadingTheNetworksOnlyLeavesTheBufferEmptyAndTheTargetsEqualToThem) {
  ktr::ExecSpace space;
  std::string const dir = ::testing::TempDir() + "ktr_rl_ckpt_model";
  OffPolicySystem a(space, torchfort_test_config(ddpg, 3));
  ktr::test::rl_drive(space, a, 600, 0, 1);
  a.save(space, dir);
  OffPolicyConfig other = torchfort_test_config(ddpg, 4);
  other.policy_optimizer.kind = other.critic_optimizer.kind = ktr::OptimizerConfig::Kind::sgd;
  OffPolicySystem c(space, other);
  c.load(space, dir, true);
  EXPECT_EQ(ktr::test::rl_probe(space, c), ktr::test::rl_probe(space, a));
  EXPECT_FALSE(c.ready(space)) << "load_model restores no transition";
  EXPECT_EQ(ktr::to_host(Tensor(c.policy_target().arena().params(), Shape{c.policy().arena().size()})),
            ktr::to_host(Tensor(c.policy().arena().params(), Shape{c.policy().arena().size()})));
  EXPECT_THROW(c.load(space, dir), ktr::Error) << "a whole restore needs the same optimisers";
  OffPolicyConfig wider = torchfort_test_config(ddpg, 4);
  wider.policy = "in=1 dense:32:relu dense:1";
  OffPolicySystem w(space, wider);
  try {
    w.load(space, dir, true);
    ADD_FAILURE() << "a system of other networks loaded";
  } catch (ktr::Error const& e) {
    EXPECT_NE(std::string(e.what()).find("system.ckpt: holds a system whose policy is"), std::string::npos)
        << e.what();
  }
}

TEST(RL, Td3LearnsAConstantReward) { expect_torchfort_criterion(ktr::rl::CheckEnvironment::constant, td3); }
TEST(RL, Td3LearnsAPredictableReward) { expect_torchfort_criterion(ktr::rl::CheckEnvironment::predictable, td3); }
TEST(RL, Td3DiscountsADelayedReward) { expect_torchfort_criterion(ktr::rl::CheckEnvironment::delayed, td3); }
TEST(RL, Td3MaximisesAnActionReward) { expect_torchfort_criterion(ktr::rl::CheckEnvironment::action, td3); }
TEST(RL, Td3MaximisesAnActionStateReward) {
  expect_torchfort_criterion(ktr::rl::CheckEnvironment::action_state, td3);
}
TEST(RL, DdpgLearnsAConstantReward) { expect_torchfort_criterion(ktr::rl::CheckEnvironment::constant, ddpg); }
TEST(RL, DdpgLearnsAPredictableReward) {
  expect_torchfort_criterion(ktr::rl::CheckEnvironment::predictable, ddpg);
}
TEST(RL, DdpgDiscountsADelayedReward) { expect_torchfort_criterion(ktr::rl::CheckEnvironment::delayed, ddpg); }
TEST(RL, SacLearnsAConstantReward) { expect_torchfort_criterion(ktr::rl::CheckEnvironment::constant, sac); }
TEST(RL, SacLearnsAPredictableReward) { expect_torchfort_criterion(ktr::rl::CheckEnvironment::predictable, sac); }
TEST(RL, SacDiscountsADelayedReward) { expect_torchfort_criterion(ktr::rl::CheckEnvironment::delayed, sac); }
TEST(RL, SacMaximisesAnActionReward) { expect_torchfort_criterion(ktr::rl::CheckEnvironment::action, sac); }
TEST(RL, SacMaximisesAnActionStateReward) {
  expect_torchfort_criterion(ktr::rl::CheckEnvironment::action_state, sac);
}
TEST(RL, DdpgMaximisesAnActionReward) { expect_torchfort_criterion(ktr::rl::CheckEnvironment::action, ddpg); }

}  // namespace
