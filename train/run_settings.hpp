// The settings of a run (RunConfig) as one table: the checkpoint header writes and reads it, the YAML file and
// the command line set its rows by name (each with its own spelling of the name), and the run's description
// prints it. A row's range and spelling of values hold for every one of them.
#pragma once

#include "../core/settings.hpp"
#include "checkpoint.hpp"
#include "session.hpp"

#include <string>
#include <vector>

namespace ktr {

using RunSetting = Setting<RunConfig>;

/// Every setting of RunConfig that text can give: optimizer, lr, momentum, nesterov, b1, b2, eps, weight_decay,
/// clip_norm, schedule, batch, accumulate, seed, loss, reduction, normalize, precision.
std::vector<RunSetting> const& run_settings();

/// Sets `name` from `text`: throws ktr::Error "<name>: <why>" for a value outside the setting's type or range.
void set_run_setting(RunConfig& config, std::string const& name, std::string const& text);

/// The recorded settings into a checkpoint header (an optional one only where it differs from the default).
void write_run_settings(RunConfig const& config, Checkpoint& ckpt);
/// The recorded settings from a checkpoint header: a missing or malformed field throws ktr::Error
/// "<path>: header field '<name>' is '<text>': <why>".
void read_run_settings(Checkpoint const& ckpt, std::string const& path, RunConfig& config);

/// "optimizer adam, lr 0.001, ..., batch 256": every setting, or only those that differ from RunConfig{}'s.
std::string describe_run_settings(RunConfig const& config, bool only_changed = false);

}  // namespace ktr
