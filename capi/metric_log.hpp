// TorchFort's metric log (general.enable_wandb_hook): "TORCHFORT::WANDB: model: NAME, step: STEP, METRIC: VALUE"
// lines appended to $TORCHFORT_LOGDIR/torchfort.log, beside config_NAME.yaml (the model's or system's file with
// its `identifier`), for TorchFort's wandb_helper.py. Shared by the supervised models and the RL systems.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace ktr::capi {

struct MetricLog {
  std::string path;     ///< $TORCHFORT_LOGDIR/torchfort.log, or "" (no log)
  bool writer = false;  ///< this rank writes (rank 0)
  bool warned = false;  ///< a line that could not be written after a step has been reported once
};

/// A value as TorchFort's log writes it (an ostream's default format).
template <class T>
std::string metric_text(T value) {
  std::ostringstream o;
  o << value;
  return o.str();
}

/// Opens the log of `name` created from `config_text` (read from `config_path`, named in the notice):
/// writes config_NAME.yaml (if `writer`), or says once (`notice`) that TORCHFORT_LOGDIR is not set.
MetricLog open_metric_log(std::string const& config_path, std::string const& config_text, std::string const& name,
                          bool writer, bool notice);
/// "model: NAME, step: STEP, METRIC: VALUE" appended where the log is open and this rank writes; throws ktr::Error
/// if it cannot be written.
void append_metric(MetricLog const& log, std::string const& name, std::int64_t step, std::string const& metric,
                   std::string const& value);
/// The same for the lines of a step already taken ({metric, value} pairs): a failure is a warning on stderr, once
/// per log, not an error.
void append_step_metrics(MetricLog& log, std::string const& name, std::int64_t step,
                         std::vector<std::pair<std::string, std::string>> const& metrics);

}  // namespace ktr::capi
