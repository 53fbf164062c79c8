// Validators with messages that name the value and the accepted range, and the parse-error policy.
#include "apps/flags.hpp"

#include <ktr/core/parse.hpp>
#include <ktr/models/model.hpp>
#include <ktr/train/runtime.hpp>

#include <cmath>
#include <cstdio>

namespace ktr::cli {

namespace {
std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
}  // namespace

CLI::Validator number_in(double lo, double hi) {
  std::string const range = "[" + number_text(lo) + ", " + number_text(hi) + "]";
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        double v = 0;
        if (parse_number(text, lo, hi, v)) return "";
        return "'" + escaped(text) + "' is not a number in " + range;
      },
      "in " + range);
}

CLI::Validator integer_in(std::int64_t lo, std::int64_t hi) {
  std::string const range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        std::int64_t v = 0;
        if (parse_integer(text, lo, hi, v)) return "";  // decimal digits: CLI11 converts the text itself
        return "'" + escaped(text) + "' is not an integer in " + range;
      },
      "in " + range);
}

CLI::Validator setting_validator(RunSetting const& s) {
  return CLI::Validator([&s](std::string& text) { return s.check(text); }, s.range());
}

CLI::Validator thread_count() {
  // The limit depends on the build: the help names it in words, so that it reads the same in every build (the
  // reference pages are generated from it); a refusal names the number.
  return integer_in(1, max_host_threads() > 0 ? max_host_threads() : 4096)
      .description("in [1, the host backend's limit]");
}

CLI::Validator one_of(std::vector<std::string> words) {
  std::string list;
  for (auto const& w : words) list += (list.empty() ? "" : ", ") + w;
  return CLI::Validator(
      [words, list](std::string& text) -> std::string {
        for (auto const& w : words)
          if (text == w) return "";
        return "must be one of " + list + ", got '" + text + "'";
      },
      "one of " + list);
}

std::string model_flag(std::string const& value) {
  if (value == "mlp") return Model::mlp();
  if (value == "cnn") return Model::simple_cnn();
  if (value.rfind("in=", 0) != 0)
    throw FlagError("--model: unknown model '" + value + "' (mlp, cnn, or a description starting with in=)");
  try {
    Model::plan(value, 1);
  } catch (Error const& e) {
    throw FlagError(std::string("--model: ") + e.what());
  }
  return value;
}

std::vector<SettingFlag> const& setting_flags() {
  static std::vector<SettingFlag> const flags = {
      {"--batch", "batch",
       " (default 256, 32 for cnn, at most N for arrays); the last partial batch of an epoch is dropped"},
      {"--optimizer", "optimizer", ""},
      {"--lr", "lr", ""},
      {"--momentum", "momentum", ""},
      {"--weight-decay", "weight_decay", ""},
      {"--clip-norm", "clip_norm", ""},
      {"--schedule", "schedule", ""},
      {"--history", "history", ""},
      {"--linesearch", "linesearch", ""},
      {"--tolerance-grad", "tolerance_grad", ""},
      {"--tolerance-change", "tolerance_change", ""},
      {"--seed", "seed", ""},
      {"--loss-reduction", "reduction", " (mean: over the batch's B x T elements, B rows for cross_entropy)"},
      {"--accumulate", "accumulate", "; each rank's micro-batch is B / (ranks x N), a whole number"},
      {"--derivatives", "derivatives", "; the loss: mse of the values + weight x mse of the derivatives"},
      {"--derivative-weight", "derivative_weight", ""},
  };
  return flags;
}

namespace {
// Settings whose flag is declared on its own (not from setting_flags()), and names library messages use.
char const* const kOtherFlags[][2] = {
    {"steps_per_dispatch", "--steps-per-dispatch"}, {"precision", "--precision"}, {"loss", "--loss"},
    {"loss_reduction", "--loss-reduction"},         {"nesterov", "--nesterov"},   {"normalize", "--normalize"},
};
}  // namespace

std::string flag_of_setting(std::string const& name) {
  for (auto const& s : setting_flags())
    if (name == s.setting) return s.flag;
  for (auto const& s : kOtherFlags)
    if (name == s[0]) return s[1];
  return "";
}

std::string with_flag_names(std::string const& message) {
  auto renamed = [&](char const* setting, char const* flag, std::string& out) {
    std::string const prefix = std::string(setting) + ": ";
    if (message.rfind(prefix, 0) != 0) return false;
    out = std::string(flag) + ": " + message.substr(prefix.size());
    return true;
  };
  std::string out;
  for (auto const& s : setting_flags())
    if (renamed(s.setting, s.flag, out)) return out;
  for (auto const& s : kOtherFlags)
    if (renamed(s[0], s[1], out)) return out;
  return message;
}

bool parse(CLI::App& app, int argc, char* argv[], int first) {
  try {
    app.parse(argc - first + 1, argv + first - 1);
  } catch (CLI::CallForHelp const&) {
    std::printf("%s", app.help().c_str());
    return false;
  } catch (CLI::ParseError const& e) {
    throw FlagError(e.what());
  }
  return true;
}

}  // namespace ktr::cli
