// OffPolicySystem::save and load: a system as one generation of a checkpoint directory (system.ckpt, config.yaml).
//
// system.ckpt is ktr's checkpoint container (train/checkpoint.hpp): a header of the system's shape and counters,
// then its buffers in a fixed order: the policy and its target, each critic and its target, the policy
// optimiser's moments, each critic optimiser's, and the transition buffer's rows.
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
  return a == OffPolicyConfig::Algorithm::td3 ? "td3" : "ddpg";
}

std::int64_t header_int(Checkpoint const& c, std::string const& path, std::string const& key) {
  std::int64_t v = 0;
  KTR_REQUIRE(c.has(key) && parse_integer(c.get(key), 0, std::int64_t(1) << 62, v), path,
              "field '" + key + "' is missing or out of range");
  return v;
}

}  // namespace

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
                 {"policy_step", std::to_string(read_count(space, policy_step_))}};
  for (int i = 0; i < c.num_critics; ++i)
    ckpt.header["critic_step_" + std::to_string(i)] =
        std::to_string(read_count(space, critic_steps_[std::size_t(i)]));
  auto draws = Kokkos::create_mirror_view(draws_);
  Kokkos::deep_copy(space, draws, draws_);
  space.fence();
  ckpt.header["draws"] = std::to_string(draws(0));
  ckpt.header["explore_draws"] = std::to_string(draws(1));
  TransitionBuffer::Contents const rows = buffer_.download(space);
  for (int k = 0; k < 3; ++k) ckpt.header["buffer_" + std::to_string(k)] = std::to_string(rows.counters[k]);
  ckpt.buffers.push_back(host_copy(space, policy_->arena().params()));
  ckpt.buffers.push_back(host_copy(space, policy_target_->arena().params()));
  for (int i = 0; i < c.num_critics; ++i) {
    ckpt.buffers.push_back(host_copy(space, critics_[std::size_t(i)]->arena().params()));
    ckpt.buffers.push_back(host_copy(space, critic_targets_[std::size_t(i)]->arena().params()));
  }
  for (auto const& m : policy_opt_->state()) ckpt.buffers.push_back(host_copy(space, m));
  for (auto const& opt : critic_opts_)
    for (auto const& m : opt->state()) ckpt.buffers.push_back(host_copy(space, m));
  ckpt.buffers.push_back(rows.rows);
  space.fence();
  save_generation(dir, {{"system.ckpt", [&](std::string const& path) { write_checkpoint(path, ckpt); }},
                        {"config.yaml", [&](std::string const& path) { write_atomically(path, config_text); }}});
}

void OffPolicySystem::load(ExecSpace const& space, std::string const& dir, bool networks_only) {
  OffPolicyConfig const& c = config_;
  Generation g = read_generation(dir);
  KTR_REQUIRE(g.files.count("system.ckpt") == 1, dir,
              "holds a model's run, not a reinforcement-learning system (ktr_load_checkpoint reads it)");
  std::string const path = g.folder + "/system.ckpt";
  Checkpoint const ckpt = parse_checkpoint(path, g.files["system.ckpt"]);
  KTR_REQUIRE(ckpt.has("kind") && ckpt.get("kind") == "ktr-rl-system", path, "is not a ktr RL system");
  // Everything checked before anything changes.
  auto same = [&](char const* key, std::string const& mine) {
    KTR_REQUIRE(ckpt.has(key) && ckpt.get(key) == mine, path,
                std::string("holds a system whose ") + key + " is '" + (ckpt.has(key) ? ckpt.get(key) : "") +
                    "'; this one's is '" + mine + "'");
  };
  same("policy", policy_->description());
  same("critic", critics_[0]->description());
  same("num_critics", std::to_string(c.num_critics));
  if (!networks_only) {
    same("algorithm", algorithm_name(c.algorithm));
    same("n_envs", std::to_string(c.n_envs));
    same("max_size", std::to_string(c.max_size));
  }
  std::size_t moments = policy_opt_->state().size();
  for (auto const& opt : critic_opts_) moments += opt->state().size();
  std::size_t const networks = 2 + 2 * std::size_t(c.num_critics);
  std::size_t const full = networks + moments + 1;
  KTR_REQUIRE(networks_only ? ckpt.buffers.size() >= networks : ckpt.buffers.size() == full, path,
              "holds " + std::to_string(ckpt.buffers.size()) + " buffers; this system's save has " +
                  std::to_string(full) + " (another optimiser?)");
  std::vector<DeviceView<float*>> targets = {policy_->arena().params(), policy_target_->arena().params()};
  for (int i = 0; i < c.num_critics; ++i) {
    targets.push_back(critics_[std::size_t(i)]->arena().params());
    targets.push_back(critic_targets_[std::size_t(i)]->arena().params());
  }
  if (!networks_only) {
    for (auto const& m : policy_opt_->state()) targets.push_back(m);
    for (auto const& opt : critic_opts_)
      for (auto const& m : opt->state()) targets.push_back(m);
  }
  for (std::size_t i = 0; i < targets.size(); ++i)
    KTR_REQUIRE(ckpt.buffers[i].size() == targets[i].extent(0), path,
                "buffer " + std::to_string(i) + " holds " + std::to_string(ckpt.buffers[i].size()) +
                    " values; this system's has " + std::to_string(targets[i].extent(0)));
  TransitionBuffer::Contents rows;
  std::int64_t updates = 0, policy_step = 0, draws = 0, explore_draws = 0;
  std::vector<std::int64_t> critic_steps;
  if (!networks_only) {
    rows.rows = ckpt.buffers.back();
    for (int k = 0; k < 3; ++k) rows.counters[k] = header_int(ckpt, path, "buffer_" + std::to_string(k));
    rows.pushed = header_int(ckpt, path, "pushed");
    updates = header_int(ckpt, path, "updates");
    policy_step = header_int(ckpt, path, "policy_step");
    for (int i = 0; i < c.num_critics; ++i)
      critic_steps.push_back(header_int(ckpt, path, "critic_step_" + std::to_string(i)));
    draws = header_int(ckpt, path, "draws");
    explore_draws = header_int(ckpt, path, "explore_draws");
    buffer_.restore(space, rows, path);  // checks its sizes and counters before it changes anything
  }
  for (std::size_t i = 0; i < targets.size(); ++i) device_copy(space, ckpt.buffers[i], targets[i]);
  if (networks_only) {  // TorchFort's load_model: the targets start as the online networks
    Kokkos::deep_copy(space, policy_target_->arena().params(), policy_->arena().params());
    for (int i = 0; i < c.num_critics; ++i)
      Kokkos::deep_copy(space, critic_targets_[std::size_t(i)]->arena().params(),
                        critics_[std::size_t(i)]->arena().params());
  } else {
    Kokkos::deep_copy(space, policy_step_, policy_step);
    for (int i = 0; i < c.num_critics; ++i)
      Kokkos::deep_copy(space, critic_steps_[std::size_t(i)], critic_steps[std::size_t(i)]);
    auto h = Kokkos::create_mirror_view(draws_);
    h(0) = draws, h(1) = explore_draws;
    Kokkos::deep_copy(space, draws_, h);
    updates_ = updates;
    ready_ = false;  // asked of the restored buffer again
  }
  space.fence();
}

}  // namespace ktr::rl
