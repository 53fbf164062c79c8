// The command line's metrics file: JSON lines, one record per dispatch, epoch and run, written straight to the
// file and flushed line by line.
#pragma once

#include <ktr/train/evaluate.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>

namespace ktr::cli {

// Metrics records: JSON through nlohmann::json, which writes a non-finite number (NaN, infinity) as null (JSON has
// no such numbers), so every line of a metrics file is valid JSON.
using Json = nlohmann::ordered_json;

// Metrics as JSON lines, written straight to the file and flushed line by line, so that whatever was measured
// survives an error or a crash. A fresh run replaces an earlier ktr metrics file (never any other file); a resumed
// run appends to it.
class MetricsFile {
 public:
  /// No file when `path` is empty. `append`: a resumed run's; else an existing file must be ours (see check()).
  MetricsFile(std::string path, bool append);
  ~MetricsFile();
  MetricsFile(MetricsFile const&) = delete;
  MetricsFile& operator=(MetricsFile const&) = delete;
  /// Writes and flushes one record; throws Error naming --metrics when the write fails.
  void line(Json const& record);

  /// Before any work: an existing file a fresh run would replace is ours, and a file can be written at `path`.
  static void check(std::string const& path, bool append);

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

// The held-out figures of an epoch or summary record (null when there is no held-out data).
void add_test_metrics(Json& record, bool evaluated, bool regression, EvalResult const& r);
/// A regression's figures for a line: "<p>mse M, <p>rmse R" and, where they differ from the MSE, ", <p>derivative
/// mse D" (Sobolev targets) and ", <p>loss L"; `p` is "test " or "".
std::string regression_figures(EvalResult const& r, std::string const& p);

}  // namespace ktr::cli
