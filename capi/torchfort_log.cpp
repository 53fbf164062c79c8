// TorchFort's output formats: its report line, and its enable_wandb_hook's metric log
// ($TORCHFORT_LOGDIR/torchfort.log beside a copy of the model's configuration, config_NAME.yaml with its
// `identifier`, for TorchFort's wandb_helper.py).
#include "../core/file.hpp"
#include "../core/parse.hpp"
#include "api.hpp"
#include "guard.hpp"
#include "metric_log.hpp"
#include "registry.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace ktr::capi {

MetricLog open_metric_log(std::string const& config_path, std::string const& config_text, std::string const& name,
                          bool writer, bool notice) {
  MetricLog log;
  log.writer = writer;
  char const* dir = std::getenv("TORCHFORT_LOGDIR");
  if (dir == nullptr || dir[0] == '\0') {
    if (notice && !torchfort_quiet())
      std::fprintf(stderr,
                   "TORCHFORT::WARN: %s: general.enable_wandb_hook is true but TORCHFORT_LOGDIR is not set: no "
                   "metrics are logged (set it to a writable folder to log them)\n",
                   config_path.c_str());
    return log;
  }
  std::string const folder = dir;
  if (writer) {
    std::error_code ec;
    std::filesystem::create_directories(folder, ec);
    KTR_REQUIRE(!ec, "TORCHFORT_LOGDIR " + folder, "cannot be made a folder (" + ec.message() + ")");
    std::string file_name;
    for (char c : name) file_name += c == ' ' || c == '/' ? '_' : c;
    write_atomically(folder + "/config_" + file_name + ".yaml", config_with_identifier(config_text, name));
  }
  log.path = folder + "/torchfort.log";
  return log;
}

void append_metric(MetricLog const& log, std::string const& name, std::int64_t step, std::string const& metric,
                   std::string const& value) {
  if (!log.path.empty() && log.writer)
    append_line(log.path, "TORCHFORT::WANDB: model: " + name + ", step: " + std::to_string(step) + ", " + metric +
                              ": " + value);
}

void append_step_metrics(MetricLog& log, std::string const& name, std::int64_t step,
                         std::vector<std::pair<std::string, std::string>> const& metrics) {
  try {
    for (auto const& [metric, value] : metrics) append_metric(log, name, step, metric, value);
  } catch (Error const& failed) {
    if (!log.warned && !torchfort_quiet())
      std::fprintf(stderr,
                   "TORCHFORT::WARN: model %s: %s; the step was taken, and further metric lines that fail "
                   "are not reported\n",
                   name.c_str(), escaped(failed.what()).c_str());
    log.warned = true;
  }
}

void log_step_metrics(Entry& e, char const* name, std::int64_t step, std::string const& loss,
                      std::string const& lr) {
  append_step_metrics(e.metric_log, name, step, {{"train_loss", loss}, {"train_lr", lr}});
}

void open_metric_log(Entry& e, std::string const& name, bool notice) {
  e.metric_log = open_metric_log(e.cfg.path, e.config_text, name, e.comm.rank() == 0, notice);
}

ktr_result_t log_metric(char const* name, char const* metric, std::int64_t step, std::string const& value) {
  return guarded([&] {
    Entry const& e = entry(name);
    KTR_REQUIRE(metric != nullptr && metric[0] != '\0', "metric_name", "is null or empty");
    append_metric(e.metric_log, name, step, metric, value);
  });
}

}  // namespace ktr::capi
