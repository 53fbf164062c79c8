// A training configuration read from a YAML file: TorchFort's schema (general, model, loss, optimizer,
// lr_scheduler), so that a TorchFort user's file works as it is, plus ktr's keys (steps_per_dispatch, buffer_size,
// normalize, a model `type: ktr` with a description). What it reads becomes a RunConfig (model, optimiser,
// schedule, batch, seed, input transform) and the online-training options of the C and Fortran API.
//
//   general:   {report_frequency, verbose, enable_graphs (alias enable_cuda_graphs), steps_per_dispatch,
//               batch_size, buffer_size, seed, normalize: none | standard}
//   model:     {type: mlp, parameters: {layer_sizes: [in, h1, ..., out], activation, output_activation,
//               dropout, flatten_non_batch_dims}}  or  {type: ktr, parameters: {description: "in=... dense:..."}}
//   loss:      {type: mse | l1 | huber | cross_entropy, parameters: {delta (huber), reduction: mean}}
//   optimizer: {type: sgd | adam | adamw, parameters: {learning_rate, momentum, nesterov, weight_decay, beta1,
//               beta2, eps, dampening, amsgrad}, general: {grad_accumulation_steps, max_grad_norm}}
//   lr_scheduler: {type: constant | step | multistep | polynomial | linear | cosine_annealing, parameters:
//                 {step_size, gamma, milestones, total_iters, power, start_factor, end_factor, T_max, eta_min}}
//
// A TorchFort key ktr does not implement is accepted at its default value and refused otherwise, as not
// supported; an unknown key, a value of the wrong type or out of range is refused. Every refusal is a
// ktr::ConfigError naming the file, the line and the key.
#pragma once

#include "../core/settings.hpp"
#include "../train/session.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace ktr {

/// A refused configuration: `file:line: key: reason`. `not_supported` marks a value ktr does not implement (as
/// opposed to one that is wrong).
class ConfigError : public Error {
 public:
  ConfigError(std::string const& message, bool not_supported) : Error(message), not_supported_(not_supported) {}
  bool not_supported() const { return not_supported_; }

 private:
  bool not_supported_;
};

/// The `general` section: how an online run (the C and Fortran API) trains.
struct GeneralConfig {
  int report_frequency = 0;     ///< steps between loss reports on stdout (0: none)
  bool verbose = false;         ///< print the configuration when a model is created
  bool enable_graphs = true;    ///< replay captured K-step programs where the backend can (ktr_train_steps)
  int steps_per_dispatch = 16;  ///< K: optimiser steps per dispatch of ktr_train_steps
  /// Samples per optimiser update over all ranks and accumulation steps, as `ktr train`'s batch: each rank's call
  /// or draw from its replay buffer takes batch_size / (ranks x accumulation). 0: each rank's first batch sets it.
  std::int64_t batch_size = 0;
  std::int64_t buffer_size = 0;  ///< each rank's replay buffer capacity in samples (0: no buffer)
  InputTransformMode normalize =
      InputTransformMode::none;    ///< standard: fitted on the first batch (or the buffer)
  bool enable_wandb_hook = false;  ///< TorchFort's metric log: lines to $TORCHFORT_LOGDIR/torchfort.log
};

/// GeneralConfig's settings table (core/settings.hpp): report_frequency, verbose, enable_graphs,
/// steps_per_dispatch, buffer_size, enable_wandb_hook, normalize (batch_size and seed are the run's:
/// train/run_settings.hpp).
std::vector<Setting<GeneralConfig>> const& general_settings();

/// Where a configuration file sets a run setting (train/run_settings.hpp): `key` is its path in the file,
/// `example` a value there (flow YAML) that sets it to something other than its default. The reference (`ktr
/// docs`) prints them; a test sets each setting through its key.
struct YamlKey {
  char const* setting;
  char const* key;
  char const* example;
};
std::vector<YamlKey> const& yaml_run_keys();

/// Everything a configuration file says.
struct FileConfig {
  RunConfig run;  ///< model, optimiser, schedule, batch, accumulation, seed (the task comes from the data)
  GeneralConfig general;
  LossChoice loss;                               ///< the loss section's (by_targets without one)
  bool has_loss = false, has_optimizer = false;  ///< the file has the section (TorchFort requires both)
  bool has_precision = false;  ///< general.precision given (set_cuda_allow_tf32 then changes nothing)
  /// model.parameters.flatten_non_batch_dims: false: the model (of flat input) applies to the last dimension of
  /// the C API's arrays, every leading dimension a batch one (TorchFort's per-point MLP).
  bool per_point = false;
  std::string path;  ///< the file it came from
};

/// The checks that need the number of ranks a model runs on (at model creation): general.batch_size splits into
/// `ranks` x accumulation equal parts, and each rank's replay buffer holds at least its share. Throws ConfigError
/// naming the file and the setting.
void check_for_ranks(FileConfig const& c, int ranks);

/// The largest configuration file read (a sparse file of terabytes is refused before a byte is read).
constexpr std::int64_t kMaxConfigBytes = std::int64_t(16) << 20;
/// The text of the configuration file `path` (a regular file of at most kMaxConfigBytes); throws naming it.
std::string read_config_text(std::string const& path);
/// Reads and checks `path`. Throws ConfigError (a missing file: ktr::Error naming it).
FileConfig read_config_file(std::string const& path);
/// The same from YAML text; `path` names it in messages.
FileConfig parse_config(std::string const& yaml, std::string const& path);

/// The configuration `yaml` with the top-level key `identifier: name` (TorchFort's copy for its wandb_helper.py).
std::string config_with_identifier(std::string const& yaml, std::string const& name);

}  // namespace ktr
