// The training progress display: a live, rewritten line on a terminal; plain lines (a few per epoch) otherwise.
#pragma once

#include <cstdint>
#include <string>

namespace ktr::cli {

/// printf of one or two figures into a string: fmt("test accuracy %.2f%%", 100 * a).
std::string fmt(char const* format, double a, double b = 0);

class Progress {
 public:
  /// `regression`: the quality figures are RMSEs (and the test loss an MSE), not accuracies.
  Progress(std::int64_t total_steps, std::int64_t steps_per_epoch, std::int64_t batch, bool regression = false);
  /// After a dispatch: the step reached, that dispatch's mean loss and accuracy (or RMSE), and its samples/s.
  void update(std::int64_t step, double loss, double accuracy, double samples_per_s);
  /// The line printed at the end of an epoch.
  void epoch_line(std::int64_t epoch, double train_loss, double train_accuracy, bool evaluated, double test_loss,
                  double test_accuracy, double wall_s);
  /// Ends a live line (before other output).
  void finish();

 private:
  std::int64_t total_, per_epoch_, batch_;
  bool regression_;
  bool tty_;
  bool live_ = false;
  double rate_ = 0;  // smoothed samples/s
  std::int64_t last_plain_ = 0;
};

}  // namespace ktr::cli
