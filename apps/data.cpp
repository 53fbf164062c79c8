// Loading the command line's data: IDX directories and .npy arrays end in the same device datasets.
#include "apps/data.hpp"

#include <ktr/core/parse.hpp>
#include <ktr/core/permutation.hpp>
#include <ktr/data/npy.hpp>
#include <ktr/ktr_config.hpp>
#include <ktr/models/model.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>

namespace ktr::cli {

void add_data_options(CLI::App& app, DataOptions& d) {
  d.app = &app;
  d.data = KTR_DEFAULT_DATA_DIR;
  auto* group = app.add_option_group("data (IDX directory or NumPy arrays)");
  group
      ->add_option("--data", d.data,
                   "MNIST-format IDX files (train-/t10k-images-idx3-ubyte[.gz], -labels-idx1-ubyte[.gz])")
      ->capture_default_str();
  group->add_option("--features", d.features,
                    "X.npy: float32/float64 features (N, D) or (N, H, W, C); with --targets");
  group->add_option("--targets", d.targets,
                    "Y.npy: integer class labels (N) (softmax cross-entropy) or float values (N) / (N, T) (mean "
                    "squared error)");
  group->add_option("--test-features", d.test_features, "held-out features (with --test-targets)");
  group->add_option("--test-targets", d.test_targets, "held-out targets (with --test-features)");
  group
      ->add_option("--test-fraction", d.test_fraction,
                   "hold out this share of the arrays, chosen by a --seed shuffle")
      ->check(number_in(1e-9, 1 - 1e-9));
  group->add_option("--classes", d.classes, "class count of integer targets (default: the largest label + 1)")
      ->check(integer_in(1, 1 << 24));
}

namespace {

DeviceDataset load_idx(std::string const& dir, std::string const& split) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw Error("--data " + dir + ": no such directory. " +
                (dir == KTR_DEFAULT_DATA_DIR
                     ? "Install Fashion-MNIST with `apt-get install dataset-fashion-mnist`, or pass --data DIR "
                       "holding train-/t10k-images-idx3-ubyte[.gz] and -labels-idx1-ubyte[.gz]"
                     : "Pass --data DIR holding train-/t10k-images-idx3-ubyte[.gz] and -labels-idx1-ubyte[.gz]"));
  }
  return load_idx_dataset(dir, split);
}

std::string shape_text(std::vector<std::int64_t> const& shape) {
  std::string out = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

// Features and targets as read from a pair of .npy files, checked against each other.
struct Arrays {
  NpyArray x, y;
  std::string x_path, y_path;
  std::int64_t count() const { return x.shape[0]; }
};

// Every value finite and within float's range (training reads them as floats: a float64 of 1e300 would become
// infinite there); the first that is not is named with its index.
void check_floats(std::vector<double> const& values, std::string const& path, char const* what) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    double const v = values[i];
    if (std::isfinite(v) && std::fabs(v) <= double(std::numeric_limits<float>::max())) continue;
    char text[64];
    std::snprintf(text, sizeof text, "%.17g", v);
    throw Error(path + ": holds a " + what + " at flat index " + std::to_string(i) + " (" + text + ") that " +
                (std::isfinite(v) ? "is beyond float32's range" : "is non-finite"));
  }
}

Arrays read_arrays(std::string const& x_path, std::string const& y_path) {
  Arrays a{read_npy(x_path), read_npy(y_path), x_path, y_path};
  KTR_REQUIRE(a.x.kind == 'f', x_path,
              "features must be float32 or float64, the file holds '" + escaped(a.x.descr) + "'");
  KTR_REQUIRE(a.x.shape.size() == 2 || a.x.shape.size() == 4, x_path,
              "features must be (N, D) or (N, H, W, C), the file holds " + std::to_string(a.x.shape.size()) +
                  " dimensions");
  KTR_REQUIRE(a.x.shape[0] > 0, x_path, "no samples");
  KTR_REQUIRE(
      a.y.shape.size() == 1 || (a.y.shape.size() >= 2 && a.y.shape.size() <= 4 && !a.y.is_integer()), y_path,
      "targets must be (N) integer labels, or (N), (N, T) or a field's (N, H, W, C) float values; the file "
      "holds " +
          std::to_string(a.y.shape.size()) + " dimensions");
  for (std::size_t i = 1; i < a.x.shape.size(); ++i)
    KTR_REQUIRE(a.x.shape[i] > 0, x_path,
                "features of shape " + shape_text(a.x.shape) + " hold no value per sample");
  for (std::size_t i = 1; i < a.y.shape.size(); ++i)
    KTR_REQUIRE(a.y.shape[i] > 0, y_path,
                "targets of shape " + shape_text(a.y.shape) + " hold no value per sample");
  KTR_REQUIRE(a.y.shape[0] == a.x.shape[0], y_path,
              "holds " + std::to_string(a.y.shape[0]) + " targets, " + x_path + " holds " +
                  std::to_string(a.x.shape[0]) + " samples");
  check_floats(a.x.values, x_path, "feature");
  if (a.y.is_integer()) {
    for (double v : a.y.values)
      KTR_REQUIRE(v >= 0 && v < (1 << 24), y_path, "label " + std::to_string(v) + " is not in [0, 2^24)");
  } else {
    check_floats(a.y.values, y_path, "target");
  }
  return a;
}

// Samples [rows] of the arrays as a device dataset (rows empty: all of them).
DeviceDataset to_device(Arrays const& a, std::vector<std::int64_t> const& rows, int classes,
                        std::string const& name) {
  std::int64_t const n = rows.empty() ? a.count() : std::int64_t(rows.size());
  std::int64_t const sample = std::int64_t(a.x.values.size()) / a.count();
  std::int64_t const width = std::int64_t(a.y.values.size()) / a.count();
  std::vector<float> x(std::size_t(n * sample)), values;
  std::vector<std::int32_t> labels;
  (a.y.is_integer() ? labels.resize(std::size_t(n)) : values.resize(std::size_t(n * width)));
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t const src = rows.empty() ? i : rows[std::size_t(i)];
    for (std::int64_t f = 0; f < sample; ++f)
      x[std::size_t(i * sample + f)] = float(a.x.values[std::size_t(src * sample + f)]);
    if (a.y.is_integer())
      labels[std::size_t(i)] = std::int32_t(a.y.values[std::size_t(src)]);
    else
      for (std::int64_t t = 0; t < width; ++t)
        values[std::size_t(i * width + t)] = float(a.y.values[std::size_t(src * width + t)]);
  }
  std::vector<std::int64_t> const shape(a.x.shape.begin() + 1, a.x.shape.end());
  return make_device_dataset(x, shape, labels, values, n, classes, name);
}

int class_count(DataOptions const& d, Arrays const& train, Arrays const* test) {
  bool const given_classes = given(*d.app, "--classes");
  if (!train.y.is_integer()) {
    if (given_classes) throw FlagError("--classes: only for integer (class label) targets");
    return 0;
  }
  if (given_classes) return d.classes;
  double top = 0;
  for (double v : train.y.values) top = std::max(top, v);
  if (test)
    for (double v : test->y.values) top = std::max(top, v);
  return int(top) + 1;
}

}  // namespace

RunData load_run_data(DataOptions const& d, bool want_test, std::uint64_t seed) {
  auto has = [&](char const* name) { return given(*d.app, name); };
  RunData r;
  bool const arrays = has("--features") || has("--targets");
  if (!arrays) {
    for (char const* only : {"--test-features", "--test-targets", "--test-fraction", "--classes"})
      if (has(only)) throw FlagError(std::string(only) + ": only with --features and --targets");
    r.train = load_idx(d.data, "train");
    if (want_test) r.test = load_idx(d.data, "t10k");
    r.source = d.data;
    return r;
  }
  r.arrays = true;
  if (has("--data")) throw FlagError("--data: give either --data or --features/--targets, not both");
  if (!has("--features") || !has("--targets")) throw FlagError("--features and --targets go together");
  if (has("--test-features") != has("--test-targets"))
    throw FlagError("--test-features and --test-targets go together");
  if (has("--test-fraction") && has("--test-features"))
    throw FlagError("--test-fraction: give either a fraction or --test-features/--test-targets, not both");
  Arrays const train = read_arrays(d.features, d.targets);
  r.source = train.x_path + ", " + train.y_path;
  if (!train.y.is_integer()) r.target_sample.assign(train.y.shape.begin() + 1, train.y.shape.end());
  if (has("--test-features")) {
    Arrays const test = read_arrays(d.test_features, d.test_targets);
    KTR_REQUIRE(test.y.shape.size() == train.y.shape.size() &&
                    std::equal(test.y.shape.begin() + 1, test.y.shape.end(), train.y.shape.begin() + 1),
                test.y_path,
                "targets of shape " + shape_text(test.y.shape) + ", " + train.y_path + " holds " +
                    shape_text(train.y.shape));
    KTR_REQUIRE(test.y.is_integer() == train.y.is_integer(), test.y_path,
                "its targets are " + std::string(test.y.is_integer() ? "labels" : "values") + ", " + train.y_path +
                    " holds " + (train.y.is_integer() ? "labels" : "values"));
    int const classes = class_count(d, train, &test);
    r.train = to_device(train, {}, classes, train.x_path);
    if (want_test) r.test = to_device(test, {}, classes, test.x_path);
    return r;
  }
  int const classes = class_count(d, train, nullptr);
  if (!has("--test-fraction")) {
    r.train = to_device(train, {}, classes, train.x_path);
    return r;
  }
  double const fraction = d.test_fraction;
  std::int64_t const n = train.count(), held = std::int64_t(std::floor(fraction * double(n)));
  if (held < 1 || held >= n)
    throw FlagError("--test-fraction: " + std::to_string(fraction) + " of " + std::to_string(n) +
                    " samples leaves no training or no held-out sample");
  // A seeded shuffle: the held-out samples are the last `held` of permutation(seed) (in index order).
  Permutation const perm(std::uint64_t(n), seed, 0xFFFFFFFFull);
  std::vector<std::int64_t> train_rows, test_rows;
  std::vector<char> is_test(std::size_t(n), 0);
  for (std::int64_t i = n - held; i < n; ++i) is_test[std::size_t(perm(std::uint64_t(i)))] = 1;
  for (std::int64_t i = 0; i < n; ++i) (is_test[std::size_t(i)] ? test_rows : train_rows).push_back(i);
  r.train = to_device(train, train_rows, classes, train.x_path);
  if (want_test) r.test = to_device(train, test_rows, classes, train.x_path + " (held out)");
  r.source += ", " + std::to_string(held) + " held out";
  return r;
}

void check_target_shape(RunData const& data, Shape const& output, std::string const& flag, int columns) {
  std::vector<std::int64_t> const& t = data.target_sample;
  if (columns > 1) {  // Sobolev targets: each output's value and derivatives
    std::vector<std::int64_t> const want{output.dims[1], columns};
    if (output.rank != 2 || t != want)
      throw Error(flag + ": with derivatives the targets are (N, outputs, 1 + derivatives) = (N, " +
                  std::to_string(output.dims[1]) + ", " + std::to_string(columns) + "), they are " +
                  shape_text(t));
    return;
  }
  if (t.size() < 2 && output.rank <= 2) return;  // (N) or (N, T) targets of a (B, T) model: the width decides
  std::vector<std::int64_t> const want(output.dims.begin() + 1, output.dims.begin() + output.rank);
  if (t != want)
    throw Error(flag + ": the model outputs " + shape_text(want) + " per sample, the targets are " +
                shape_text(t) + (output.rank == 4 ? " (a field: (N, H, W, C) targets)" : ""));
}

std::string default_model(DeviceDataset const& data) {
  std::string in = "in=";
  in += data.vector
            ? std::to_string(data.channels)
            : std::to_string(data.height) + "x" + std::to_string(data.width) + "x" + std::to_string(data.channels);
  return in + (data.vector ? "" : " flatten") +
         " dense:128:relu dense:128:relu dense:" + std::to_string(data.target_width());
}

void validate_run(RunConfig const& cfg, DeviceDataset const& train_data, DeviceDataset const* test_data,
                  std::string const& model_flag, int ranks) {
  std::int64_t const micro = micro_batch(cfg, ranks);
  if (micro == 0)
    throw FlagError("--batch: " + std::to_string(cfg.batch) + " is not a multiple of ranks x accumulate = " +
                    std::to_string(ranks) + " x " + std::to_string(cfg.accumulate));
  ModelPlan const plan = Model::plan(cfg.model, micro);
  Shape const sample = train_data.batch_shape(1);
  KTR_REQUIRE(plan.input == sample, model_flag,
              "expects inputs " + plan.input.str() + ", the data has " + sample.str());
  KTR_REQUIRE(cfg.task == train_data.task(), model_flag,
              cfg.task == Task::regression ? "the model was trained for regression, the data has class labels"
                                           : "the model was trained for classification, the data has regression "
                                             "targets");
  std::string const why = targets_mismatch(plan, train_data, true, cfg.derivatives);
  KTR_REQUIRE(why.empty(), model_flag, why);
  if (test_data) {
    KTR_REQUIRE(test_data->batch_shape(1) == sample, "--data",
                "the test split's samples are " + test_data->batch_shape(1).str() + ", the training split's " +
                    sample.str());
    KTR_REQUIRE(test_data->task() == train_data.task() && test_data->target_width() == train_data.target_width(),
                "--data", "the test split's targets do not match the training split's");
  }
  KTR_REQUIRE(cfg.batch <= train_data.count, "--batch",
              std::to_string(cfg.batch) + " is larger than the training set (" + std::to_string(train_data.count) +
                  " samples)");
  check_fits_in_memory(cfg, ranks, "--batch " + std::to_string(cfg.batch));
}

}  // namespace ktr::cli
