// The C API's named models: each a configuration, created by ktr_create_model (or TorchFort's door), whose Trainer
// is made by its first batch (train/first_batch.hpp) or by loaded weights, with a replay buffer on the device and
// the Kokkos instances of the streams its callers hand it.
#pragma once

#include "../backends/stream_instances.hpp"
#include "../config/yaml_config.hpp"
#include "../train/replay_buffer.hpp"
#include "../train/trainer.hpp"
#include "arrays.hpp"
#include "metric_log.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace ktr::capi {

/// A model of the C API.
struct Entry {
  FileConfig cfg;
  Communicator comm;        // one rank, or the ranks of a distributed model
  std::string config_text;  // kept in checkpoints
  std::unique_ptr<Trainer> trainer;
  std::int64_t inference_calls = 0;
  std::unique_ptr<ReplayBuffer> buffer;  // general.buffer_size samples, made by the first push
  bool torchfort = false;                // created by TorchFort's door: its configuration's rules
  MetricLog metric_log;       // TorchFort's $TORCHFORT_LOGDIR/torchfort.log (enable_wandb_hook), or none
  StreamInstances instances;  // one per caller stream, for the model's life (captured programs refer to them)
  Kokkos::View<float**, Kokkos::LayoutRight, MemSpace> outputs;  // ktr_inference's, kept between calls
  std::shared_ptr<void> jets;  // the input derivatives' state (derivatives.cpp), made by the first such call
};

/// Every model by name.
std::map<std::string, std::unique_ptr<Entry>>& models();
/// `name`, checked: not null or empty.
std::string name_of(char const* name);
/// The model `name`; ktr::Error if there is none.
Entry& entry(char const* name);

/// The Trainer's options a model's file gives.
TrainerOptions options_of(FileConfig const& c, bool torchfort = false);
/// The model's Trainer, created by its first batch (every check before anything is made). `stepped`: ktr_train's
/// first step runs on this batch; ktr_push's replay buffer keeps it.
Trainer& trainer_for(ExecSpace const& space, Entry& e, Array const& x, Array const& y, bool stepped);
/// The run of a model that loads weights before it has seen a batch: the file's task, no fitted transform.
RunConfig untrained_config(Entry const& e, bool regression);
/// Training calls so far, as TorchFort counts them (its step_train): every call of an accumulated update.
std::int64_t train_calls(Entry const& e);

/// general.report_frequency's line on stdout after a step: TorchFort's format (torchfort_log.cpp) from its door,
/// ktr's from ktr's; the metric log's lines where the model has one.
void report(Entry& e, char const* name, float loss);

/// TorchFort's enable_wandb_hook (torchfort_log.cpp): opens the model's metric log under $TORCHFORT_LOGDIR, or
/// says once (`notice`) that there is none.
void open_metric_log(Entry& e, std::string const& name, bool notice);
/// The metric log's lines for a step (train_loss, train_lr), where the model has a log (torchfort_log.cpp). The
/// step is applied already: a line that cannot be written is a warning (once per model), not a failure.
void log_step_metrics(Entry& e, char const* name, std::int64_t step, std::string const& loss,
                      std::string const& lr);

}  // namespace ktr::capi
