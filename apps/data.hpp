// The command line's data: an IDX directory (--data) or NumPy arrays (--features/--targets, with a held-out
// split from --test-features/--test-targets or --test-fraction), loaded once into device datasets.
#pragma once

#include "apps/flags.hpp"

#include <ktr/data/dataset.hpp>
#include <ktr/train/session.hpp>

#include <string>

namespace ktr::cli {

struct RunData {
  DeviceDataset train, test;  ///< test.count == 0 when there is no held-out data (or --no-eval)
  std::string source;         ///< what was loaded, for the log
  bool arrays = false;        ///< from .npy arrays (models take in=D / in=HxWxC of the arrays' samples)
  /// Float targets from .npy: one sample's shape ((T) or a field's (H, W, C)), checked against the model's output.
  std::vector<std::int64_t> target_sample;
};

/// Throws ktr::Error naming `flag` unless float targets of `data` (a field's included) have the shape of one
/// sample of the model's output `output` (1, ...); targets of rank 1 or 2 need only the same width. With `columns`
/// > 1 (Sobolev targets: 1 + derivatives per output) they must be (N, m, columns) of a (1, m) model.
void check_target_shape(RunData const& data, Shape const& output, std::string const& flag, int columns = 1);

/// The data flags train and eval share.
struct DataOptions {
  std::string data, features, targets, test_features, test_targets;
  double test_fraction = 0;
  int classes = 0;
  CLI::App const* app = nullptr;  ///< to tell which were given
};
/// Declares the data flags on a command.
void add_data_options(CLI::App& app, DataOptions& d);

/// Loads the data the flags name. `want_test`: also the held-out split (IDX: t10k). `seed` chooses the
/// --test-fraction split. Throws FlagError for flag misuse, Error naming the file for bad data.
RunData load_run_data(DataOptions const& d, bool want_test, std::uint64_t seed);

/// The default model for array data: an MLP on the samples' shape with `width` outputs.
std::string default_model(DeviceDataset const& data);

/// Everything a run can know before it allocates: the model against both splits' shapes and class count, the batch
/// against the data, and the bytes the run will hold against the device's free memory. Errors name `model_flag`
/// (--model, or the checkpoint) and --batch or --data, before any allocation.
void validate_run(RunConfig const& cfg, DeviceDataset const& train_data, DeviceDataset const* test_data,
                  std::string const& model_flag, int ranks = 1);

}  // namespace ktr::cli
