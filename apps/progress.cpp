// Progress display: carriage-return updates on a TTY, sparse plain lines in logs.
#include "apps/progress.hpp"

#include <unistd.h>
#include <cmath>
#include <cstdio>

namespace ktr::cli {

Progress::Progress(std::int64_t total_steps, std::int64_t steps_per_epoch, std::int64_t batch, bool regression)
    : total_(total_steps),
      per_epoch_(steps_per_epoch),
      batch_(batch),
      regression_(regression),
      tty_(isatty(fileno(stdout)) != 0) {}

void Progress::update(std::int64_t step, double loss, double accuracy, double samples_per_s) {
  rate_ = rate_ == 0 ? samples_per_s : 0.8 * rate_ + 0.2 * samples_per_s;
  std::int64_t const epoch = (step - 1) / per_epoch_ + 1, in_epoch = (step - 1) % per_epoch_ + 1;
  std::int64_t const total_epochs = (total_ + per_epoch_ - 1) / per_epoch_;
  double const eta = rate_ > 0 ? double(total_ - step) * double(batch_) / rate_ : 0.0;
  char quality[32], line[256];
  // A regression trained on another loss than the MSE has no training RMSE (NaN): nothing is printed for it.
  std::snprintf(quality, sizeof quality, regression_ ? (std::isnan(accuracy) ? "" : "rmse %.4g") : "acc %5.1f%%",
                regression_ ? accuracy : 100 * accuracy);
  std::snprintf(line, sizeof line, "epoch %lld/%lld  step %lld/%lld  loss %.4f  %s  %8.0f samples/s  ETA %d:%02d",
                (long long)epoch, (long long)total_epochs, (long long)in_epoch, (long long)per_epoch_, loss,
                quality, rate_, int(eta) / 60, int(eta) % 60);
  if (tty_) {
    std::printf("\r\033[K%s", line);
    std::fflush(stdout);
    live_ = true;
  } else if (step - last_plain_ >= (per_epoch_ + 3) / 4 || step == total_) {
    std::printf("%s\n", line);
    std::fflush(stdout);
    last_plain_ = step;
  }
}

void Progress::epoch_line(std::int64_t epoch, double train_loss, double train_accuracy, bool evaluated,
                          double test_loss, double test_accuracy, double wall_s) {
  finish();
  if (regression_) {
    char train[64];
    std::snprintf(train, sizeof train,
                  std::isnan(train_accuracy) ? "train loss %.4g" : "train loss %.4g rmse %.4g", train_loss,
                  train_accuracy);
    if (evaluated)  // test_accuracy is the test RMSE
      std::printf("epoch %lld: %s | test loss %.4g mse %.4g rmse %.4g | %.1f s\n", (long long)epoch, train,
                  test_loss, test_accuracy * test_accuracy, test_accuracy, wall_s);
    else
      std::printf("epoch %lld: %s | %.1f s\n", (long long)epoch, train, wall_s);
  } else if (evaluated)
    std::printf("epoch %lld: train loss %.4f acc %.2f%% | test loss %.4f acc %.2f%% | %.1f s\n", (long long)epoch,
                train_loss, 100 * train_accuracy, test_loss, 100 * test_accuracy, wall_s);
  else
    std::printf("epoch %lld: train loss %.4f acc %.2f%% | %.1f s\n", (long long)epoch, train_loss,
                100 * train_accuracy, wall_s);
  std::fflush(stdout);
}

void Progress::finish() {
  if (live_) std::printf("\n");
  live_ = false;
}

std::string fmt(char const* format, double a, double b) {
  char buf[256];
  std::snprintf(buf, sizeof buf, format, a, b);
  return buf;
}

}  // namespace ktr::cli
