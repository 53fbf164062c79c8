// The reinforcement-learning systems of the C API, shared by TorchFort's door (torchfort_rl.cpp) and ktr's own
// (rl.cpp): one registry, so a system made through either is driven through both. Names are case-blind everywhere
// (TorchFort sanitises them at creation only).
#pragma once

#include "../backends/stream_instances.hpp"
#include "../rl/off_policy.hpp"
#include "arrays.hpp"
#include "metric_log.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace ktr::capi {

struct RlEntry {
  std::unique_ptr<rl::OffPolicySystem> system;
  StreamInstances instances;
  std::int64_t report_frequency = 0;
  std::int64_t refused_reported = 0;  // buffer refusals already returned as a failure
  std::string config_text;            // the file it was created from, saved with its checkpoints
  MetricLog metric_log;               // general.enable_wandb_hook's lines, or none
  DeviceView<float*> scratch;         // the calls' outputs and host scalars on the device, grown, never shrunk
};

/// Creates system `name` from the RL YAML file `config_file` (TorchFort's format) on `device` (a ktr device
/// number; Kokkos started as the C API starts it); `n_envs` > 0 replaces the file's replay_buffer n_envs (its
/// sizes then count that many environments). A call of its own (guarded): the result, and the message naming the
/// name, file or key.
/// Over `comm`'s ranks (one by default); `own_thread`: Kokkos may start on a worker thread of ktr's (not where
/// the MPI allows the main thread only). `torchfort`: made by TorchFort's door, which may print (an
/// enable_wandb_hook without TORCHFORT_LOGDIR says so once); ktr's door never prints.
ktr_result_t create_rl_system(char const* name, char const* config_file, int device, std::int64_t n_envs = 0,
                              Communicator const& comm = Communicator(), bool own_thread = true,
                              bool torchfort = false);
/// The system `name`; throws ktr::UsageError if there is none.
RlEntry& rl_system(char const* name);
/// Removes system `name` (false: there was none).
bool destroy_rl_system(char const* name);

/// `n` floats of the entry's scratch: allocated only when a call needs more than any before it. The calls that use
/// it wait for their results before they return, so the next call may reuse it.
DeviceView<float*> rl_scratch(RlEntry& e, ExecSpace const& space, std::int64_t n);
/// The array's values on the device, contiguous: read in place where they are floats the device reads, else
/// packed.
DeviceView<float*> device_floats(ExecSpace const& space, Array const& a);

/// `updates` updates of the system, the losses read back only where asked for; a read-back first reports the
/// pushes refused since the last one (ktr::Error naming how many). Refuses a buffer not yet ready.
void rl_train(RlEntry& e, char const* name, ExecSpace const& space, std::int64_t updates, float* p_loss,
              float* q_loss);

}  // namespace ktr::capi
