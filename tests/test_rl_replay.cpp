// What the replay buffer hands the updates (rl/transition_buffer.hpp, rl/priority_tree.hpp, rl/normalizer.hpp):
// TorchFort's n-step windows and reward reductions, a window never summed across a terminal, prioritized replay
// (sampling in proportion to p^alpha over stratified shares, importance weights against the minimum, new
// transitions at the largest priority) and the running normalisers, checked against host references of the same
// rules.
#include <ktr/core/error.hpp>
#include <ktr/rl/off_policy.hpp>
#include <ktr/rl/torchfort_check.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace ktr::test {
// test_rl.cpp
std::vector<float> rl_probe(ktr::ExecSpace const& space, ktr::rl::OffPolicySystem& system);
void rl_drive(ktr::ExecSpace const& space, ktr::rl::OffPolicySystem& system, int pushes, int first, int episode);
}  // namespace ktr::test

namespace {

using ktr::Shape;
using ktr::Tensor;
using ktr::rl::Sampling;
using ktr::rl::TransitionBatch;
using ktr::rl::TransitionBuffer;

// One slot of E environments, S = A = 1: s = 100 slot + env, a = s + 0.5, r = rewards[slot], s' = s + 50, done as
// given. Slots count from 0 in push order.
void push_slot(ktr::ExecSpace const& space, TransitionBuffer& buffer, int slot, float reward, bool done) {
  std::int64_t const E = buffer.n_envs();
  std::vector<float> s, a, r, sn, d;
  for (std::int64_t e = 0; e < E; ++e) {
    s.push_back(float(100 * slot + e));
    a.push_back(s.back() + 0.5f);
    r.push_back(reward + float(e));
    sn.push_back(s.back() + 50);
    d.push_back(done ? 1.0f : 0.0f);
  }
  Tensor ts("s", Shape{E, 1}), ta("a", Shape{E, 1}), tr("r", Shape{E}), tn("sn", Shape{E, 1}), td("d", Shape{E});
  ktr::from_host(ts, s), ktr::from_host(ta, a), ktr::from_host(tr, r), ktr::from_host(tn, sn),
      ktr::from_host(td, d);
  buffer.push(space, ts.data(), ta.data(), tr.data(), tn.data(), td.data());
  space.fence();
}

TransitionBatch make_batch(std::int64_t B, bool prioritized) {
  TransitionBatch b{Tensor("sa", Shape{B, 2}),
                    Tensor("st", Shape{B, 1}),
                    Tensor("sn", Shape{B, 1}),
                    Tensor("rw", Shape{B}),
                    Tensor("dn", Shape{B}),
                    Tensor(),
                    {}};
  if (prioritized) {
    b.weight = Tensor("w", Shape{B});
    b.leaf = Kokkos::View<std::int64_t*, ktr::MemSpace>("leaf", std::size_t(B));
  }
  return b;
}

struct Expected {
  float reward, next_state, done;
  bool drawn;  ///< false: a window the sampler must not return
};

// The host reference of a window starting at `slot` of environment e.
Expected window(std::vector<float> const& rewards, std::vector<bool> const& done, int slot, int e,
                Sampling const& s) {
  float r = 0, g = 1, norm = 0;
  int count = 0, last = slot;
  float d = 0;
  for (int k = 0; k < s.nstep; ++k) {
    r += g * (rewards[std::size_t(slot + k)] + float(e));
    norm += g;
    ++count;
    last = slot + k;
    if (done[std::size_t(slot + k)]) {
      d = 1;
      if (k < s.nstep - 1) {
        if (s.skip) return {0, 0, 0, false};
        break;
      }
    }
    g *= s.gamma;
  }
  float const reduced = s.reduction == Sampling::Reduction::mean            ? r / float(count)
                        : s.reduction == Sampling::Reduction::weighted_mean ? r / norm
                                                                            : r;
  return {reduced, float(100 * last + e + 50), d, true};
}

// Every sampled window is the reference's for its first slot; starts the reference refuses are never drawn, the
// others are, and no window runs past the newest slot.
TEST(RlReplay, NStepWindowsReduceTheDiscountedRewardsAndNeverCrossATerminal) {
  ktr::ExecSpace space;
  std::vector<float> const rewards = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  std::vector<bool> const done = {false, false, false, true, false, false, false, true, false, false};
  for (char const* reduction :
       {"sum", "mean", "weighted_mean", "sum_no_skip", "mean_no_skip", "WEIGHTED_MEAN_NO_SKIP"}) {
    Sampling s;
    s.nstep = 3, s.gamma = 0.5f;
    s.set_reduction(reduction);
    TransitionBuffer buffer(space, 16, 1, 1, 2, s);
    for (int slot = 0; slot < 10; ++slot)
      push_slot(space, buffer, slot, rewards[std::size_t(slot)], done[std::size_t(slot)]);
    TransitionBatch const batch = make_batch(512, false);
    ktr::DeviceView<std::int64_t*> draw("draw", 1);
    buffer.sample(space, 3, draw.data(), batch);
    auto const sa = ktr::to_host(batch.state_action), sn = ktr::to_host(batch.next_state),
               rw = ktr::to_host(batch.reward), dn = ktr::to_host(batch.done);
    std::set<int> starts;
    for (std::size_t b = 0; b < 512; ++b) {
      int const slot = int(sa[2 * b]) / 100, e = int(sa[2 * b]) % 100;
      ASSERT_LE(slot, 7) << reduction << ": a window of 3 starts at the newest slot but two at the latest";
      Expected const x = window(rewards, done, slot, e, s);
      ASSERT_TRUE(x.drawn) << reduction << ": the window at slot " << slot << " meets a terminal before its end";
      EXPECT_EQ(sa[2 * b + 1], sa[2 * b] + 0.5f);
      EXPECT_FLOAT_EQ(rw[b], x.reward) << reduction << ", slot " << slot << ", env " << e;
      EXPECT_EQ(sn[b], x.next_state) << reduction << ", slot " << slot;
      EXPECT_EQ(dn[b], x.done) << reduction << ", slot " << slot;
      starts.insert(slot);
    }
    for (int slot = 0; slot <= 7; ++slot)
      EXPECT_EQ(starts.count(slot), window(rewards, done, slot, 0, s).drawn ? 1u : 0u)
          << reduction << ": slot " << slot << " as a start";
  }
}

// A full buffer overwrites its oldest slots: windows start at the oldest kept slot and never wrap from the
// newest into the oldest.
TEST(RlReplay, NStepWindowsOfAFullBufferStartAtTheOldestKeptSlot) {
  ktr::ExecSpace space;
  Sampling s;
  s.nstep = 2, s.gamma = 1.0f;
  TransitionBuffer buffer(space, 5, 1, 1, 1, s);
  for (int slot = 0; slot < 8; ++slot) push_slot(space, buffer, slot, float(slot), false);
  TransitionBatch const batch = make_batch(256, false);
  ktr::DeviceView<std::int64_t*> draw("draw", 1);
  buffer.sample(space, 5, draw.data(), batch);
  auto const sa = ktr::to_host(batch.state_action), sn = ktr::to_host(batch.next_state),
             rw = ktr::to_host(batch.reward);
  std::set<int> starts;
  for (std::size_t b = 0; b < 256; ++b) {
    int const slot = int(sa[2 * b]) / 100;
    starts.insert(slot);
    EXPECT_EQ(rw[b], float(2 * slot + 1)) << "r_slot + r_(slot+1)";
    EXPECT_EQ(sn[b], float(100 * (slot + 1) + 50));
  }
  EXPECT_EQ(starts, (std::set<int>{3, 4, 5, 6})) << "slots 3..7 are kept; 7 starts no window of two";
}

// Episodes shorter than nstep everywhere: TorchFort's skip would never find a window; ktr's sample takes a
// shortened one after 64 draws and says so in its documentation.
TEST(RlReplay, ASkippingSampleWithNoCompleteWindowTakesAShortenedOne) {
  ktr::ExecSpace space;
  Sampling s;
  s.nstep = 3, s.gamma = 0.5f;
  TransitionBuffer buffer(space, 8, 1, 1, 1, s);
  for (int slot = 0; slot < 6; ++slot) push_slot(space, buffer, slot, 1.0f, true);
  TransitionBatch const batch = make_batch(32, false);
  ktr::DeviceView<std::int64_t*> draw("draw", 1);
  buffer.sample(space, 9, draw.data(), batch);
  for (float r : ktr::to_host(batch.reward)) EXPECT_EQ(r, 1.0f);
  for (float d : ktr::to_host(batch.done)) EXPECT_EQ(d, 1.0f);
}

std::vector<float> priorities(ktr::ExecSpace const& space, TransitionBuffer const& buffer) {
  return buffer.download(space).priorities;
}

// Priorities: a new slot's transitions get the largest priority seen (1 at first); a leaf drawn twice in a batch
// takes the later TD error; the largest counts every one.
TEST(RlReplay, PrioritiesStartAtTheLargestSeenAndALeafDrawnTwiceTakesTheLaterError) {
  ktr::ExecSpace space;
  Sampling s;
  s.prioritized = true, s.alpha = 0.5f;
  TransitionBuffer buffer(space, 4, 1, 1, 2, s);
  push_slot(space, buffer, 0, 0, false);
  push_slot(space, buffer, 1, 0, false);
  EXPECT_EQ(priorities(space, buffer), (std::vector<float>{1, 1, 1, 1, 0, 0, 0, 0, 1}));
  TransitionBatch const batch = make_batch(3, true);
  Kokkos::deep_copy(batch.weight.view(), 1.0f);
  auto leaf = Kokkos::create_mirror_view(batch.leaf);
  leaf(0) = 2, leaf(1) = 1, leaf(2) = 2;
  Kokkos::deep_copy(batch.leaf, leaf);
  Tensor td("td", Shape{3});
  ktr::from_host(td, {5, -0.25f, 3});
  buffer.update_priorities(space, batch, td.data());
  push_slot(space, buffer, 2, 0, false);
  std::vector<float> const p = priorities(space, buffer);
  EXPECT_FLOAT_EQ(p[1], 0.25f + 1e-6f);
  EXPECT_FLOAT_EQ(p[2], 3.0f + 1e-6f) << "the later of two errors for one leaf";
  EXPECT_FLOAT_EQ(p[4], 5.0f + 1e-6f) << "a new transition takes the largest priority seen";
  EXPECT_FLOAT_EQ(p[5], 5.0f + 1e-6f);
  EXPECT_FLOAT_EQ(p[8], 5.0f + 1e-6f) << "the largest seen";
}

// Sampling follows p^alpha: each of B stratified draws falls in its own share of the priority sum (leaves in
// order), the frequencies over many draws approach p^alpha / sum, and each weight is (min p^alpha / p^alpha)^beta
// with beta annealed once per sampling call.
TEST(RlReplay, PrioritizedDrawsFollowThePrioritiesAndWeighAgainstTheSmallest) {
  ktr::ExecSpace space;
  Sampling s;
  s.prioritized = true, s.alpha = 0.7f, s.beta0 = 0.4f, s.beta_max = 1.0f, s.beta_steps = 10;
  std::int64_t const E = 2, slots = 4, leaves = E * slots, B = 400;
  TransitionBuffer buffer(space, slots, 1, 1, E, s);
  for (int slot = 0; slot < slots; ++slot) push_slot(space, buffer, slot, 0, false);
  TransitionBatch const batch = make_batch(leaves, true);
  Kokkos::deep_copy(batch.weight.view(), 1.0f);
  auto leaf = Kokkos::create_mirror_view(batch.leaf);
  std::vector<float> errors;
  for (std::int64_t t = 0; t < leaves; ++t) leaf(t) = t, errors.push_back(float(t + 1));
  Kokkos::deep_copy(batch.leaf, leaf);
  Tensor td("td", Shape{leaves});
  ktr::from_host(td, errors);
  buffer.update_priorities(space, batch, td.data());
  std::vector<double> p(static_cast<std::size_t>(leaves));
  double total = 0;
  for (std::int64_t t = 0; t < leaves; ++t) total += p[std::size_t(t)] = std::pow(double(t + 1) + 1e-6, 0.7);
  TransitionBatch const draws = make_batch(B, true);
  ktr::DeviceView<std::int64_t*> draw("draw", 1);
  std::vector<double> count(static_cast<std::size_t>(leaves), 0.0);
  for (int call = 0; call < 20; ++call) {
    Kokkos::deep_copy(draw, std::int64_t(call));
    buffer.sample(space, 11, draw.data(), draws);
    auto l = Kokkos::create_mirror_view(draws.leaf);
    Kokkos::deep_copy(l, draws.leaf);
    auto const w = ktr::to_host(draws.weight), st = ktr::to_host(draws.state);
    double const beta = std::min(1.0, 0.4 + 0.06 * (call + 1));
    for (std::int64_t b = 0; b < B; ++b) {
      std::int64_t const t = l(b);
      ASSERT_TRUE(t >= 0 && t < leaves);
      if (b > 0) EXPECT_GE(t, l(b - 1)) << "stratified: draw b lies in the b-th share, leaves in order";
      EXPECT_EQ(st[std::size_t(b)], float(100 * (t / E) + t % E)) << "the leaf's transition";
      EXPECT_NEAR(w[std::size_t(b)], std::pow(p[0] / p[std::size_t(t)], beta), 2e-5) << "call " << call;
      count[std::size_t(t)] += 1;
    }
  }
  for (std::int64_t t = 0; t < leaves; ++t)
    EXPECT_NEAR(count[std::size_t(t)] / (20.0 * B), p[std::size_t(t)] / total, 0.01) << "leaf " << t;
}

// With n-step windows a slot starts one only once nstep - 1 more are stored: the newest slots stay at priority 0
// and are never drawn.
TEST(RlReplay, PrioritizedNStepWindowsStartOnlyAtCompleteSlots) {
  ktr::ExecSpace space;
  Sampling s;
  s.prioritized = true, s.nstep = 3, s.gamma = 1.0f;
  TransitionBuffer buffer(space, 6, 1, 1, 1, s);
  for (int slot = 0; slot < 5; ++slot) push_slot(space, buffer, slot, 1.0f, false);
  EXPECT_EQ(priorities(space, buffer), (std::vector<float>{1, 1, 1, 0, 0, 0, 1}));
  TransitionBatch const batch = make_batch(64, true);
  ktr::DeviceView<std::int64_t*> draw("draw", 1);
  buffer.sample(space, 13, draw.data(), batch);
  auto const st = ktr::to_host(batch.state), rw = ktr::to_host(batch.reward);
  for (std::size_t b = 0; b < 64; ++b) {
    EXPECT_LE(st[b], 200.0f) << "slots 0..2 start windows of three";
    EXPECT_EQ(rw[b], 3.0f);
  }
}

// The tree's writes by a team of several threads (leaves and nodes claimed, as on GPUs) equal the one-thread
// path's bit for bit, a leaf written twice taking the later value in both.
void write_with_team(ktr::ExecSpace const& space, ktr::rl::PriorityTree const& tree, int team_size,
                     Kokkos::View<std::int64_t*, ktr::MemSpace> const& leaves,
                     Kokkos::View<float*, ktr::MemSpace> const& raw) {
  using Team = Kokkos::TeamPolicy<ktr::ExecSpace>;
  std::int64_t const n = std::int64_t(leaves.extent(0));
  Kokkos::parallel_for(
      "test::tree_write", Team(space, 1, team_size), KOKKOS_LAMBDA(Team::member_type const& team) {
        tree.write(
            team, n, [&](std::int64_t i) { return leaves(i); }, [&](std::int64_t i) { return raw(i); });
      });
  space.fence();
}

int largest_team(ktr::ExecSpace const& space) {
  using Team = Kokkos::TeamPolicy<ktr::ExecSpace>;
  return Team(space, 1, 1).team_size_max(KOKKOS_LAMBDA(Team::member_type const&){}, Kokkos::ParallelForTag());
}

TEST(RlReplay, ATeamsClaimedTreeWritesEqualTheOneThreadWrites) {
  ktr::ExecSpace space;
  int const team = largest_team(space);
  if (team < 2) GTEST_SKIP() << "this backend's teams have one thread here: only the one-thread path exists";
  std::int64_t const leaves = 1000, n = 300;
  ktr::rl::PriorityTree one(space, leaves, 0.6f), many(space, leaves, 0.6f);
  Kokkos::View<std::int64_t*, ktr::MemSpace> l("leaves", n);
  Kokkos::View<float*, ktr::MemSpace> r("raw", n);
  auto hl = Kokkos::create_mirror_view(l);
  auto hr = Kokkos::create_mirror_view(r);
  std::mt19937 rng(5);
  for (std::int64_t i = 0; i < n; ++i)
    hl(i) = i % 7 == 3 ? -1 : std::int64_t(rng() % 97) * 10, hr(i) = float(rng() % 1000) / 100.0f;
  Kokkos::deep_copy(l, hl);
  Kokkos::deep_copy(r, hr);
  write_with_team(space, one, 1, l, r);
  write_with_team(space, many, team, l, r);
  for (auto const& pair : {std::make_pair(one.sum, many.sum), std::make_pair(one.min, many.min)}) {
    auto a = Kokkos::create_mirror_view_and_copy(ktr::HostSpace(), pair.first);
    auto b = Kokkos::create_mirror_view_and_copy(ktr::HostSpace(), pair.second);
    for (std::size_t i = 0; i < a.extent(0); ++i) ASSERT_EQ(a(i), b(i)) << "node " << i << ", team of " << team;
  }
  EXPECT_EQ(one.download(space), many.download(space));
}

// A TD3 system with n-step windows and prioritized replay, saved and restored: the same actions, and the same
// again after both train on (the priorities came back with the buffer).

TEST(RlReplay, APrioritizedNStepSystemWithNormalizersResumesBitForBit) {
  ktr::ExecSpace space;
  std::string const dir = ::testing::TempDir() + "ktr_rl_per_ckpt";
  ktr::rl::OffPolicyConfig c = ktr::rl::torchfort_check_config(ktr::rl::OffPolicyConfig::Algorithm::td3, 5);
  c.batch_size = 32, c.min_size = 64, c.max_size = 256;
  c.sampling.prioritized = true, c.sampling.nstep = 3;
  c.sampling.set_reduction("weighted_mean");
  c.normalize_states = c.normalize_rewards = true;
  ktr::rl::OffPolicySystem a(space, c);
  ktr::test::rl_drive(space, a, 150, 0, 5);
  a.save(space, dir);
  ktr::rl::OffPolicySystem b(space, c);
  b.load(space, dir);
  EXPECT_EQ(ktr::test::rl_probe(space, b), ktr::test::rl_probe(space, a));
  ktr::test::rl_drive(space, a, 40, 150, 5);
  ktr::test::rl_drive(space, b, 40, 150, 5);
  EXPECT_EQ(ktr::test::rl_probe(space, b), ktr::test::rl_probe(space, a)) << "the same updates after the restore";
  EXPECT_EQ(priorities(space, b.buffer()), priorities(space, a.buffer()));
  ktr::rl::OffPolicyConfig uniform = c;
  uniform.sampling.prioritized = false;
  ktr::rl::OffPolicySystem u(space, uniform);
  EXPECT_THROW(u.load(space, dir), ktr::Error) << "a uniform system does not take a prioritized buffer";
  ktr::rl::OffPolicyConfig plain = c;
  plain.normalize_rewards = false;
  ktr::rl::OffPolicySystem v(space, plain);
  EXPECT_THROW(v.load(space, dir), ktr::Error) << "nor a system without a reward normaliser";
  std::filesystem::remove_all(dir);
}

// One value through a normaliser, on the device.
float apply_on_device(ktr::ExecSpace const& space, ktr::rl::RunningNormalizer const& n, std::int64_t f, float v) {
  Kokkos::View<float, ktr::MemSpace> out("out");
  auto const a = n.apply();
  Kokkos::parallel_for(
      "test::apply", Kokkos::RangePolicy<ktr::ExecSpace>(space, 0, 1), KOKKOS_LAMBDA(int) { out() = a(f, v); });
  float h = 0;
  Kokkos::deep_copy(space, h, out);
  space.fence();
  return h;
}

// The normalisers' statistics are those of every stored push (Chan's merge equals one pass over all values); a
// refused push is left out; the map is the identity until two values are counted.
TEST(RlReplay, RunningNormalizersMatchOnePassOverEveryStoredPush) {
  ktr::ExecSpace space;
  ktr::rl::RunningNormalizer states(space, 2, false), rewards(space, 1, true);
  Kokkos::View<std::int64_t, ktr::MemSpace> refused("refused");
  Tensor x("x", Shape{3, 2});
  ktr::from_host(x, {1, -2, 0, 0, 0, 0});  // one row first: count 1, still the identity
  states.update(space, x.data(), 1, refused);
  auto apply = [&](ktr::rl::RunningNormalizer const& n, std::int64_t f, float v) {
    return apply_on_device(space, n, f, v);
  };
  EXPECT_EQ(apply(states, 1, 5.0f), 5.0f) << "one value counted: the identity";
  std::vector<std::vector<double>> seen = {{1}, {-2}};
  for (int push = 0; push < 6; ++push) {
    std::vector<float> v;
    for (int e = 0; e < 3; ++e)
      v.push_back(float(push * 3 + e) * 0.5f - 2), v.push_back(float((push + e) % 4) * 3);
    ktr::from_host(x, v);
    Kokkos::deep_copy(refused, push == 4 ? 1 : 0);
    states.update(space, x.data(), 3, refused);
    if (push == 4) continue;
    for (int e = 0; e < 3; ++e)
      seen[0].push_back(v[std::size_t(2 * e)]), seen[1].push_back(v[std::size_t(2 * e + 1)]);
  }
  ktr::rl::RunningNormalizer::Stats const stats = states.download(space);
  EXPECT_EQ(stats.count, 16) << "1 + 5 pushes of 3; the refused one left out";
  for (int f = 0; f < 2; ++f) {
    double mean = 0, m2 = 0;
    for (double v : seen[std::size_t(f)]) mean += v;
    mean /= double(seen[std::size_t(f)].size());
    for (double v : seen[std::size_t(f)]) m2 += (v - mean) * (v - mean);
    EXPECT_NEAR(stats.values[std::size_t(f)], mean, 1e-5) << "feature " << f;
    EXPECT_NEAR(stats.values[std::size_t(2 + f)], m2, 1e-4 * m2) << "feature " << f;
    double const sd = std::sqrt(m2 / 15 + 1e-8);
    EXPECT_NEAR(apply(states, f, 3.0f), (3.0 - mean) / sd, 1e-5) << "feature " << f;
  }
  Tensor r("r", Shape{2});
  ktr::from_host(r, {2, 4});
  Kokkos::deep_copy(refused, 0);
  rewards.update(space, r.data(), 2, refused);
  EXPECT_NEAR(apply(rewards, 0, 3.0f), 3.0 / std::sqrt(2.0 + 1e-8), 1e-6) << "rewards are scaled, not shifted";
}

// A system with a state normaliser feeds every network the normalised state: predict is the policy of it, evaluate
// the first critic of it and the action.
TEST(RlReplay, ANormalizingSystemPredictsAndEvaluatesOnTheNormalizedState) {
  ktr::ExecSpace space;
  ktr::rl::OffPolicyConfig c = ktr::rl::torchfort_check_config(ktr::rl::OffPolicyConfig::Algorithm::ddpg, 3);
  c.normalize_states = true;
  ktr::rl::OffPolicySystem system(space, c);
  Tensor s("s", Shape{1, 1}), a("a", Shape{1, 1}), r("r", Shape{1}), d("d", Shape{1});
  for (int i = 0; i < 10; ++i) {
    ktr::from_host(s, {float(i) * 0.7f + 3}), ktr::from_host(a, {0}), ktr::from_host(r, {1}),
        ktr::from_host(d, {0});
    system.push(space, s.data(), a.data(), r.data(), s.data(), d.data());
  }
  double mean = 0, m2 = 0;
  for (int i = 0; i < 10; ++i) mean += (i * 0.7 + 3) / 10;
  for (int i = 0; i < 10; ++i) m2 += (i * 0.7 + 3 - mean) * (i * 0.7 + 3 - mean);
  float const raw = 4.2f, normalized = float((raw - mean) / std::sqrt(m2 / 9 + 1e-8));
  Tensor in("in", Shape{1, 1}), act("act", Shape{1, 1}), q("q", Shape{1});
  ktr::from_host(in, {raw});
  system.predict(space, in, act);
  ktr::from_host(in, {normalized});
  float const by_hand = ktr::to_host(system.policy().forward(space, ktr::Precision{}, in))[0];
  EXPECT_NEAR(ktr::to_host(act)[0], std::min(1.0f, std::max(-1.0f, by_hand)), 1e-5);
  ktr::from_host(in, {raw});
  ktr::from_host(act, {0.25f});
  system.evaluate(space, in, act, q);
  Tensor sa("sa", Shape{1, 2});
  ktr::from_host(sa, {normalized, 0.25f});
  EXPECT_NEAR(ktr::to_host(q)[0], ktr::to_host(system.critic(0).forward(space, ktr::Precision{}, sa))[0], 1e-5);
}

}  // namespace
