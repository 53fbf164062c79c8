// The command line's metrics file: see metrics.hpp.
#include "apps/metrics.hpp"
#include "apps/progress.hpp"

#include <ktr/core/error.hpp>
#include <ktr/core/file.hpp>

#include <cerrno>
#include <cstring>

namespace ktr::cli {

namespace {

// An existing file is ours if it is empty or its first line is a ktr metrics record.
void refuse_foreign(std::string const& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return;
  char head[16] = {};
  std::size_t const n = std::fread(head, 1, sizeof head - 1, f);
  std::fclose(f);
  if (n > 0 && std::strncmp(head, "{\"type\":", 8) != 0)
    throw Error("--metrics " + path + ": exists and is not a ktr metrics file; refusing to replace it");
}

}  // namespace

MetricsFile::MetricsFile(std::string path, bool append) : path_(std::move(path)) {
  if (path_.empty()) return;
  check(path_, append);
  int const fd = open_log(path_, !append, "--metrics");  // never through a link, a regular file only
  file_ = ::fdopen(fd, "a");
  if (!file_) {
    ::close(fd);
    throw Error("--metrics " + path_ + ": cannot open for writing (" + std::strerror(errno) + ")");
  }
}

MetricsFile::~MetricsFile() {
  if (file_) std::fclose(file_);
}

void MetricsFile::line(Json const& record) {
  if (!file_) return;
  if (std::fprintf(file_, "%s\n", record.dump().c_str()) < 0 || std::fflush(file_) != 0)
    throw Error("--metrics " + path_ + ": write failed (" + std::strerror(errno) + ")");
}

void MetricsFile::check(std::string const& path, bool append) {
  if (!append) refuse_foreign(path);
  check_output_path(path, "--metrics");
}

// The held-out figures of an epoch or summary record (null when there is no held-out data).
void add_test_metrics(Json& record, bool evaluated, bool regression, EvalResult const& r) {
  if (!evaluated) {
    record["test_loss"] = nullptr;
  } else if (regression) {
    record["test_loss"] = r.loss, record["test_mse"] = r.mse, record["test_rmse"] = r.rmse();
    if (r.derivatives) record["test_derivative_mse"] = r.derivative_mse;
  } else {
    record["test_loss"] = r.loss, record["test_accuracy"] = r.accuracy;
  }
}

std::string regression_figures(EvalResult const& r, std::string const& p) {
  std::string out = fmt((p + "mse %.6g, " + p + "rmse %.6g").c_str(), r.mse, r.rmse());
  if (r.derivatives) out += fmt((", " + p + "derivative mse %.6g").c_str(), r.derivative_mse);
  if (r.loss != r.mse) out += fmt((", " + p + "loss %.6g").c_str(), r.loss);
  return out;
}

}  // namespace ktr::cli
