// TorchFort's output formats: its report line, and its enable_wandb_hook's metric log
// ($TORCHFORT_LOGDIR/torchfort.log beside a copy of the model's configuration, config_NAME.yaml with its
// `identifier`, for TorchFort's wandb_helper.py).
#include "../core/file.hpp"
#include "../core/parse.hpp"
#include "api.hpp"
#include "guard.hpp"
#include "registry.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace ktr::capi {

namespace {

// One line appended to the model's metric log (rank 0), in TorchFort's format.
void log_line(Entry const& e, std::string const& line) {
  if (!e.metric_log.empty() && e.comm.rank() == 0) append_line(e.metric_log, "TORCHFORT::WANDB: " + line);
}

}  // namespace

void log_step_metrics(Entry& e, char const* name, std::int64_t step, std::string const& loss,
                      std::string const& lr) {
  std::string const head = "model: " + std::string(name) + ", step: " + std::to_string(step) + ", ";
  try {
    log_line(e, head + "train_loss: " + loss);
    log_line(e, head + "train_lr: " + lr);
  } catch (Error const& failed) {
    if (!e.metric_log_warned && !torchfort_quiet())
      std::fprintf(stderr,
                   "TORCHFORT::WARN: model %s: %s; the step was taken, and further metric lines that fail "
                   "are not reported\n",
                   name, escaped(failed.what()).c_str());
    e.metric_log_warned = true;
  }
}

void open_metric_log(Entry& e, std::string const& name, bool notice) {
  char const* dir = std::getenv("TORCHFORT_LOGDIR");
  if (dir == nullptr || dir[0] == '\0') {
    if (notice && !torchfort_quiet())
      std::fprintf(stderr,
                   "TORCHFORT::WARN: %s: general.enable_wandb_hook is true but TORCHFORT_LOGDIR is not set: no "
                   "metrics are logged (set it to a writable folder to log them)\n",
                   e.cfg.path.c_str());
    return;
  }
  std::string const folder = dir;
  if (e.comm.rank() == 0) {
    std::error_code ec;
    std::filesystem::create_directories(folder, ec);
    KTR_REQUIRE(!ec, "TORCHFORT_LOGDIR " + folder, "cannot be made a folder (" + ec.message() + ")");
    std::string file_name;
    for (char c : name) file_name += c == ' ' || c == '/' ? '_' : c;
    write_atomically(folder + "/config_" + file_name + ".yaml", config_with_identifier(e.config_text, name));
  }
  e.metric_log = folder + "/torchfort.log";
}

ktr_result_t log_metric(char const* name, char const* metric, std::int64_t step, std::string const& value) {
  return guarded([&] {
    Entry const& e = entry(name);
    KTR_REQUIRE(metric != nullptr && metric[0] != '\0', "metric_name", "is null or empty");
    log_line(e, "model: " + std::string(name) + ", step: " + std::to_string(step) + ", " + metric + ": " + value);
  });
}

}  // namespace ktr::capi
