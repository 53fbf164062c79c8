// `ktr bench rl`'s last table: what TorchFort's C calls add over the system's own calls. One TD3 system of
// TorchFort's test configuration, made through torchfort_rl_off_policy_create_system; each per-step call through
// its TorchFort form and the same operation on the system directly, in the same interleaved rounds, on arrays in
// the system's memory space (what a device-resident simulation passes).
#include "apps/bench_torchfort_rl.hpp"

#include "bench/measure.hpp"
#include "capi/rl_systems.hpp"

#include <ktr/core/file.hpp>

#include <torchfort.h>

#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace ktr::cli {

namespace {

// TorchFort's tests/rl/configs/td3.yaml.
char const* const kTd3 =
    "general: {report_frequency: 0, enable_wandb_hook: 0, verbose: 0}\n"
    "algorithm:\n  type: td3\n  parameters: {batch_size: 128, num_critics: 2, policy_lag: 2, nstep: 1,\n"
    "    nstep_reward_reduction: sum, gamma: 0.95, rho: 0.999}\n"
    "actor:\n  type: space_noise\n  parameters: {a_low: -1., a_high: 1., clip: 0.3, sigma_train: 0.2, "
    "sigma_explore: 1.0}\n"
    "replay_buffer:\n  type: uniform\n  parameters: {max_size: 4096, min_size: 512}\n"
    "policy_model:\n  type: MLP\n  parameters: {dropout: 0.0, layer_sizes: [1, 16, 1]}\n"
    "critic_model:\n  type: CriticMLP\n  parameters: {dropout: 0.0, layer_sizes: [2, 16, 1]}\n"
    "optimizer:\n  type: adam\n  parameters: {learning_rate: 1e-4, beta1: 0.9, beta2: 0.999, weight_decay: 0, "
    "eps: 1e-6, amsgrad: 0}\n";

void check(torchfort_result_t r, char const* call) {
  if (r != TORCHFORT_RESULT_SUCCESS) throw Error(std::string("ktr bench rl: ") + call + " failed");
}

}  // namespace

void run_torchfort_rl_layer(int rounds) {
  char const* const name = "ktr_bench_torchfort_layer";
  // The configuration goes through a file (TorchFort's call reads one): in a folder of this run's own, made
  // exclusively under an unpredictable name, so no link or file planted in the temporary folder is written
  // through.
  std::string folder = (std::filesystem::temp_directory_path() / "ktr_bench_XXXXXX").string();
  if (::mkdtemp(folder.data()) == nullptr) throw Error("ktr bench rl: cannot make a folder like " + folder);
  std::string const path = folder + "/td3.yaml";
  torchfort_result_t made = TORCHFORT_RESULT_INTERNAL_ERROR;
  try {
    write_atomically(path, kTd3);
    made = torchfort_rl_off_policy_create_system(name, path.c_str(), TORCHFORT_DEVICE_CPU, TORCHFORT_DEVICE_CPU);
  } catch (...) {
    std::filesystem::remove_all(folder);
    throw;
  }
  std::filesystem::remove_all(folder);
  check(made, "torchfort_rl_off_policy_create_system");
  capi::RlEntry& e = capi::rl_system(name);
  rl::OffPolicySystem& sys = *e.system;
  ExecSpace const space = e.instances.of(nullptr);
  // One environment's arrays, in the system's memory space, as Tensors for the direct calls.
  Tensor s(space, "ktr::bench::tf_s", Shape{1, 1}), a(space, "ktr::bench::tf_a", Shape{1, 1}),
      q(space, "ktr::bench::tf_q", Shape{1}), r(space, "ktr::bench::tf_r", Shape{1}),
      d(space, "ktr::bench::tf_d", Shape{1});
  std::int64_t shape[2] = {1, 1}, one[1] = {1};
  float reward = 0.5f, p_loss = 0, q_loss = 0;
  for (int i = 0; i < 600; ++i)
    check(torchfort_rl_off_policy_update_replay_buffer(name, s.data(), s.data(), 1, one, a.data(), 1, one, &reward,
                                                       i % 10 == 9, TORCHFORT_FLOAT, 0),
          "torchfort_rl_off_policy_update_replay_buffer");
  bool ready = false;
  check(torchfort_rl_off_policy_is_ready(name, ready), "torchfort_rl_off_policy_is_ready");
  struct Call {
    char const* name;
    std::function<void()> torchfort, direct;
  } const calls[] = {
      {"predict",
       [&] {
         check(torchfort_rl_off_policy_predict(name, s.data(), 2, shape, a.data(), 2, shape, TORCHFORT_FLOAT, 0),
               "predict");
       },
       [&] { sys.predict(space, s, a); }},
      {"predict_explore",
       [&] {
         check(torchfort_rl_off_policy_predict_explore(name, s.data(), 2, shape, a.data(), 2, shape,
                                                       TORCHFORT_FLOAT, 0),
               "predict_explore");
       },
       [&] { sys.predict(space, s, a, true); }},
      {"evaluate",
       [&] {
         check(torchfort_rl_off_policy_evaluate(name, s.data(), 2, shape, a.data(), 2, shape, q.data(), 1, one,
                                                TORCHFORT_FLOAT, 0),
               "evaluate");
       },
       [&] { sys.evaluate(space, s, a, q); }},
      {"buffer update",
       [&] {
         check(torchfort_rl_off_policy_update_replay_buffer(name, s.data(), s.data(), 1, one, a.data(), 1, one,
                                                            &reward, false, TORCHFORT_FLOAT, 0),
               "update_replay_buffer");
       },
       [&] { sys.push(space, s.data(), a.data(), r.data(), s.data(), d.data()); }},
      {"train_step (losses)",
       [&] { check(torchfort_rl_off_policy_train_step(name, &p_loss, &q_loss, 0), "train_step"); },
       [&] { sys.train(space, 1, &p_loss, &q_loss); }},
  };
  std::printf(
      "TorchFort's calls beside the system's own (us per call, median of %d interleaved rounds; fenced; "
      "TorchFort's test sizes, arrays in the system's memory space):\n",
      rounds);
  std::printf("  %-20s %10s %10s %8s\n", "call", "TorchFort", "direct", "ratio");
  for (auto const& c : calls) {
    std::vector<double> layer, direct;
    for (int round = 0; round < rounds; ++round) {
      layer.push_back(1e6 * bench::median_seconds(space, c.torchfort, 200, 20));
      direct.push_back(1e6 * bench::median_seconds(space, c.direct, 200, 20));
    }
    std::printf("  %-20s %10.1f %10.1f %8.2f\n", c.name, bench::median(layer), bench::median(direct),
                bench::median(layer) / bench::median(direct));
  }
  capi::destroy_rl_system(name);
}

}  // namespace ktr::cli
