// Command-line parsing through CLI11: each command declares its options on a CLI::App; these helpers give every
// numeric or named option a validator whose message names the value and the accepted range or set, and turn
// CLI11's parse errors into FlagError (exit status 2, with a pointer to the command's --help).
#pragma once

#include <ktr/core/error.hpp>
#include <ktr/train/run_settings.hpp>

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace ktr::cli {

/// A bad flag or value: the command exits with status 2 and a pointer to its --help.
struct FlagError : UsageError {
  using UsageError::UsageError;
};

/// A number in [lo, hi], read as files and YAML are (core/parse.hpp: the whole text, no blanks, finite):
/// "'abc' is not a number in [1e-12, 1000]".
CLI::Validator number_in(double lo, double hi);
/// An integer in [lo, hi], decimal digits only (core/parse.hpp's parse_integer; a setting's flag, checked by its
/// table row, also takes "1e3" as YAML does): "'0' is not an integer in [1, 100000]".
CLI::Validator integer_in(std::int64_t lo, std::int64_t hi);
/// A host thread count: [1, the host backend's limit] (Kokkos OpenMP: 512), else [1, 4096].
CLI::Validator thread_count();
/// One of a few words: "must be one of standard, unit, none, got 'zscore'".
CLI::Validator one_of(std::vector<std::string> words);

/// The model description a --model value names (mlp, cnn, or a description starting with in=), parsed and planned
/// for one sample: an unknown name or a malformed description is a FlagError naming --model.
std::string model_flag(std::string const& value);

/// Parses argv[first..argc) (argv[first - 1] names the command). Returns false when --help was printed (the
/// command then returns 0); throws FlagError with CLI11's message (which names the flag) on a usage error.
bool parse(CLI::App& app, int argc, char* argv[], int first);

/// The validator of a setting: its table row's check, its range in the help.
CLI::Validator setting_validator(RunSetting const& s);

/// The command line's name for a setting of RunConfig whose range, values and help come from the settings table
/// (train/run_settings.hpp); `more` adds what the command line does with it.
struct SettingFlag {
  char const* flag;
  char const* setting;
  char const* more;
};
std::vector<SettingFlag> const& setting_flags();

/// The flag that sets the setting `name` (of RunConfig, or of ktr train's others: steps_per_dispatch), or "".
std::string flag_of_setting(std::string const& name);

/// A library message with the command line's name for the setting it names: the library names settings
/// ("batch: ...", "schedule: ..."), never flags; the command line says which flag sets them ("--batch: ...").
std::string with_flag_names(std::string const& message);

/// True if the option was given on the command line.
inline bool given(CLI::App const& app, std::string const& name) { return app.count(name) > 0; }

}  // namespace ktr::cli
