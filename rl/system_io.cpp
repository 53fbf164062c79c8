// OffPolicySystem::save and load: a system as one generation of a checkpoint directory (system.ckpt, config.yaml,
// and over several ranks rank-<r>.ckpt for ranks 1 and up).
//
// system.ckpt is ktr's checkpoint container (train/checkpoint.hpp): a header of the system's shape and counters,
// then its buffers in a fixed order: the policy and its target, each critic and its target, the policy
// optimiser's moments, each critic optimiser's, and the transition buffer's rows. A rank's file is the same
// container with that rank's state.
#include "off_policy.hpp"

#include "../core/error.hpp"
#include "../core/file.hpp"
#include "../core/parse.hpp"
#include "../train/checkpoint.hpp"
#include "../train/run_directory.hpp"

#include <string>
#include <vector>

namespace ktr::rl {

namespace {

std::vector<float> host_copy(ExecSpace const& space, DeviceView<float*> const& v) {
  std::vector<float> out(v.extent(0));
  Kokkos::deep_copy(space, HostView<float*>(out.data(), out.size()), v);
  return out;
}

void device_copy(ExecSpace const& space, std::vector<float> const& from, DeviceView<float*> const& to) {
  Kokkos::deep_copy(
      space, to,
      Kokkos::View<float const*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(from.data(), from.size()));
}

std::int64_t read_count(ExecSpace const& space, Kokkos::View<std::int64_t, MemSpace> const& v) {
  std::int64_t n = 0;
  Kokkos::deep_copy(space, n, v);
  return n;
}

char const* algorithm_name(OffPolicyConfig::Algorithm a) {
  switch (a) {
    case OffPolicyConfig::Algorithm::td3:
      return "td3";
    case OffPolicyConfig::Algorithm::ddpg:
      return "ddpg";
    case OffPolicyConfig::Algorithm::sac:
      return "sac";
  }
  return "?";
}

std::string replay_name(OffPolicyConfig const& c) { return c.sampling.prioritized ? "prioritized" : "uniform"; }

}  // namespace

std::vector<DeviceView<float*>> OffPolicySystem::saved_buffers(bool networks_only) const {
  std::vector<DeviceView<float*>> v = {policy_->arena().params()};
  if (policy_target_) v.push_back(policy_target_->arena().params());
  for (std::size_t i = 0; i < critics_.size(); ++i) {
    v.push_back(critics_[i]->arena().params());
    v.push_back(critic_targets_[i]->arena().params());
  }
  if (log_sigma_opt_) v.push_back(log_sigma_);  // SAC's free log sigma is part of its policy
  if (networks_only) return v;
  for (auto const& m : policy_opt_->state()) v.push_back(m);
  for (auto const& opt : critic_opts_)
    for (auto const& m : opt->state()) v.push_back(m);
  if (log_sigma_opt_)
    for (auto const& m : log_sigma_opt_->state()) v.push_back(m);
  if (sac()) v.push_back(log_alpha_);
  if (alpha_opt_)
    for (auto const& m : alpha_opt_->state()) v.push_back(m);
  for (auto const& m : critic_sums_) v.push_back(m);  // gradient accumulation's running sums
  for (auto const* m : {&policy_sum_, &log_sigma_sum_, &alpha_sum_})
    if (m->extent(0) > 0) v.push_back(*m);
  for (auto const* n : {train_noise_.get(), explore_noise_.get()})  // the OU actors' states
    if (n)
      for (auto const& m : n->saved_buffers()) v.push_back(m);
  return v;
}

std::vector<Kokkos::View<std::int64_t, MemSpace>> OffPolicySystem::saved_steps() const {
  std::vector<Kokkos::View<std::int64_t, MemSpace>> v = {policy_step_};
  for (auto const& s : critic_steps_) v.push_back(s);
  if (log_sigma_opt_) v.push_back(log_sigma_step_);
  if (alpha_opt_) v.push_back(alpha_step_);
  for (auto const* n : {train_noise_.get(), explore_noise_.get()})
    if (n)
      for (auto const& m : n->saved_steps()) v.push_back(m);
  return v;
}

void OffPolicySystem::save(ExecSpace const& space, std::string const& dir, std::string const& config_text) const {
  OffPolicyConfig const& c = config_;
  Checkpoint ckpt;
  ckpt.header = {{"kind", "ktr-rl-system"},
                 {"algorithm", algorithm_name(c.algorithm)},
                 {"policy", policy_->description()},
                 {"critic", critics_[0]->description()},
                 {"num_critics", std::to_string(c.num_critics)},
                 {"n_envs", std::to_string(c.n_envs)},
                 {"max_size", std::to_string(c.max_size)},
                 {"updates", std::to_string(updates_)},
                 {"pushed", std::to_string(buffer_.pushed())},
                 {"replay", replay_name(c)},
                 {"ranks", std::to_string(comm_.size())}};
  auto const steps = saved_steps();
  for (std::size_t i = 0; i < steps.size(); ++i)
    ckpt.header["step_" + std::to_string(i)] = std::to_string(read_count(space, steps[i]));
  auto draws = Kokkos::create_mirror_view(draws_);
  Kokkos::deep_copy(space, draws, draws_);
  space.fence();
  ckpt.header["draws"] = std::to_string(draws(0));
  ckpt.header["explore_draws"] = std::to_string(draws(1));
  TransitionBuffer::Contents const rows = buffer_.download(space);
  for (int k = 0; k < 3; ++k) ckpt.header["buffer_" + std::to_string(k)] = std::to_string(rows.counters[k]);
  for (auto const& v : saved_buffers(false)) ckpt.buffers.push_back(host_copy(space, v));
  ckpt.buffers.push_back(rows.rows);
  if (c.sampling.prioritized) ckpt.buffers.push_back(rows.priorities);
  for (auto const* n : {&states_, &rewards_}) {  // the running normalisers that are on: count, mean and M2
    if (!n->on()) continue;
    RunningNormalizer::Stats const stats = n->download(space);
    ckpt.header[n == &states_ ? "state_count" : "reward_count"] = std::to_string(stats.count);
    ckpt.buffers.push_back(stats.values);
  }
  space.fence();
  // Over several ranks every rank's whole state travels to rank 0 (each rank's buffer, normalisers, draws and
  // noise are its own; the networks and optimisers are the same on every rank, and small), which writes one
  // generation: its own as system.ckpt, rank r's as rank-<r>.ckpt.
  save_generation_over_ranks(
      comm_, dir, "system.ckpt", checkpoint_bytes(dir + "/system.ckpt", ckpt),
      {{"config.yaml", [&](std::string const& path) { write_atomically(path, config_text); }}}, "system");
}

void OffPolicySystem::load(ExecSpace const& space, std::string const& dir, bool networks_only) {
  OffPolicyConfig const& c = config_;
  std::vector<DeviceView<float*>> const all = saved_buffers(false);
  std::vector<DeviceView<float*>> const networks = saved_buffers(true);
  std::vector<DeviceView<float*>> const& targets = networks_only ? networks : all;
  auto const steps = saved_steps();
  // Everything is read and checked before anything changes, on every rank; then the ranks agree, so that a
  // checkpoint one rank refuses leaves every rank's system as it was.
  Checkpoint ckpt;
  TransitionBuffer::Contents rows;
  std::vector<RunningNormalizer::Stats> normalizer_stats;  // of the normalisers that are on, in order
  std::vector<std::int64_t> step_values;
  std::int64_t updates = 0, draws = 0, explore_draws = 0;
  std::string refused;
  try {
    // A system saved over several ranks: rank r's own state is rank-<r>.ckpt (rank 0's is system.ckpt), and each
    // rank reads its own file alone; the networks alone (load_model) come from rank 0's on every rank. A save
    // without this rank's file is read from system.ckpt, which names the rank count it was saved over.
    std::string file =
        networks_only || comm_.rank() == 0 ? "system.ckpt" : "rank-" + std::to_string(comm_.rank()) + ".ckpt";
    Generation g = read_generation(dir, {file});
    KTR_REQUIRE(g.names.count("system.ckpt") == 1, dir,
                "holds a model's run, not a reinforcement-learning system (ktr_load_checkpoint reads it)");
    if (g.files.count(file) == 0) file = "system.ckpt", g = read_generation(dir, {file});
    std::string path = g.folder + "/" + file;
    ckpt = parse_checkpoint(path, g.files[file]);
    KTR_REQUIRE(ckpt.has("kind") && ckpt.get("kind") == "ktr-rl-system", path, "is not a ktr RL system");
    std::int64_t const ranks = ckpt.has("ranks") ? header_integer(ckpt, path, "ranks") : 1;
    if (!networks_only) {
      KTR_REQUIRE(ranks == comm_.size(), path,
                  "holds a system saved over " + std::to_string(ranks) + " rank(s); this one runs over " +
                      std::to_string(comm_.size()) + " (load_model takes its networks alone)");
      KTR_REQUIRE(
          comm_.rank() == 0 || file != "system.ckpt", dir,
          "has no rank-" + std::to_string(comm_.rank()) + ".ckpt for rank " + std::to_string(comm_.rank()));
    }
    auto same = [&](char const* key, std::string const& mine) {
      KTR_REQUIRE(ckpt.has(key) && ckpt.get(key) == mine, path,
                  std::string("holds a system whose ") + key + " is '" + (ckpt.has(key) ? ckpt.get(key) : "") +
                      "'; this one's is '" + mine + "'");
    };
    same("policy", policy_->description());
    same("critic", critics_[0]->description());
    same("num_critics", std::to_string(c.num_critics));
    bool const same_kind = ckpt.has("algorithm") && (ckpt.get("algorithm") == "sac") == sac();
    KTR_REQUIRE(same_kind, path, "holds a system of another algorithm family (SAC and TD3/DDPG networks differ)");
    if (!networks_only) {
      same("algorithm", algorithm_name(c.algorithm));
      same("n_envs", std::to_string(c.n_envs));
      same("max_size", std::to_string(c.max_size));
      std::string const replay = ckpt.has("replay") ? ckpt.get("replay") : "uniform";
      KTR_REQUIRE(replay == replay_name(c), path,
                  "holds a " + replay + " replay buffer; this system's is " + replay_name(c));
      for (auto const* key : {"state_count", "reward_count"}) {
        bool const on = (key[0] == 's' ? states_ : rewards_).on();
        KTR_REQUIRE(ckpt.has(key) == on, path,
                    std::string(on ? "holds no " : "holds a ") + (key[0] == 's' ? "state" : "reward") +
                        " normaliser; this system's is " + (on ? "on" : "off"));
      }
    }
    std::size_t const buffer_count =
        all.size() + (c.sampling.prioritized ? 2 : 1) + (states_.on() ? 1 : 0) + (rewards_.on() ? 1 : 0);
    KTR_REQUIRE(ckpt.buffers.size() == buffer_count || (networks_only && ckpt.buffers.size() > networks.size()),
                path,
                "holds " + std::to_string(ckpt.buffers.size()) + " buffers; this system's save has " +
                    std::to_string(buffer_count) + " (another optimiser?)");
    for (std::size_t i = 0; i < targets.size(); ++i)
      KTR_REQUIRE(ckpt.buffers[i].size() == targets[i].extent(0), path,
                  "buffer " + std::to_string(i) + " holds " + std::to_string(ckpt.buffers[i].size()) +
                      " values; this system's has " + std::to_string(targets[i].extent(0)));
    if (!networks_only) {
      rows.rows = ckpt.buffers[all.size()];
      std::size_t next = all.size() + 1;
      if (c.sampling.prioritized) rows.priorities = ckpt.buffers[next++];
      for (auto const* n : {&states_, &rewards_}) {
        if (!n->on()) continue;
        normalizer_stats.push_back(
            {header_integer(ckpt, path, n == &states_ ? "state_count" : "reward_count"), ckpt.buffers[next++]});
        n->check(normalizer_stats.back(), path);
      }
      for (int k = 0; k < 3; ++k) rows.counters[k] = header_integer(ckpt, path, "buffer_" + std::to_string(k));
      rows.pushed = header_integer(ckpt, path, "pushed");
      buffer_.check(rows, path);
      updates = header_integer(ckpt, path, "updates");
      for (std::size_t i = 0; i < steps.size(); ++i)
        step_values.push_back(header_integer(ckpt, path, "step_" + std::to_string(i)));
      draws = header_integer(ckpt, path, "draws");
      explore_draws = header_integer(ckpt, path, "explore_draws");
    }
  } catch (std::exception const& e) {
    refused = e.what();
  }
  if (comm_.any(!refused.empty()))
    throw Error(!refused.empty() ? refused
                                 : dir + ": another rank refused the checkpoint (its error names the reason)");

  if (!networks_only) {
    buffer_.restore(space, rows, dir);
    std::size_t k = 0;
    for (auto const* n : {&states_, &rewards_})
      if (n->on()) n->restore(space, normalizer_stats[k++], dir);
  }
  for (std::size_t i = 0; i < targets.size(); ++i) device_copy(space, ckpt.buffers[i], targets[i]);
  if (networks_only) {  // TorchFort's load_model: the targets start as the online networks
    if (policy_target_) Kokkos::deep_copy(space, policy_target_->arena().params(), policy_->arena().params());
    for (int i = 0; i < c.num_critics; ++i)
      Kokkos::deep_copy(space, critic_targets_[std::size_t(i)]->arena().params(),
                        critics_[std::size_t(i)]->arena().params());
  } else {
    for (std::size_t i = 0; i < steps.size(); ++i) Kokkos::deep_copy(space, steps[i], step_values[i]);
    auto h = Kokkos::create_mirror_view(draws_);
    h(0) = draws, h(1) = explore_draws;
    Kokkos::deep_copy(space, draws_, h);
    updates_ = updates;
    ready_ = false;  // asked of the restored buffer again
  }
  space.fence();
}

}  // namespace ktr::rl
