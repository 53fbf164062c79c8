// Loading the command line's data: IDX directories and .npy arrays end in the same device datasets.
#include "apps/data.hpp"

#include <ktr/core/permutation.hpp>
#include <ktr/data/npy.hpp>
#include <ktr/ktr_config.hpp>

#include <cmath>
#include <filesystem>

namespace ktr::cli {

char const* const kDataHelp =
    "data (one of):\n"
    "  --data DIR                  MNIST-format IDX files (default " KTR_DEFAULT_DATA_DIR
    ")\n"
    "  --features X.npy --targets Y.npy\n"
    "                              NumPy arrays: features float32/float64 (N, D) or (N, H, W, C); targets "
    "integer\n"
    "                              (N) class labels (softmax cross-entropy) or float (N) / (N, T) values (mean\n"
    "                              squared error)\n"
    "  --test-features TX.npy --test-targets TY.npy   held-out arrays, or\n"
    "  --test-fraction F           hold out this share of the arrays (0 < F < 1), chosen by a --seed shuffle\n"
    "  --classes N                 class count of integer targets (default: the largest label + 1)\n";

std::set<std::string> data_flags() {
  return {"data", "features", "targets", "test-features", "test-targets", "test-fraction", "classes"};
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

// Features and targets as read from a pair of .npy files, checked against each other.
struct Arrays {
  NpyArray x, y;
  std::string x_path, y_path;
  std::int64_t count() const { return x.shape[0]; }
};

Arrays read_arrays(std::string const& x_path, std::string const& y_path) {
  Arrays a{read_npy(x_path), read_npy(y_path), x_path, y_path};
  KTR_REQUIRE(a.x.kind == 'f', x_path, "features must be float32 or float64, the file holds '" + a.x.descr + "'");
  KTR_REQUIRE(a.x.shape.size() == 2 || a.x.shape.size() == 4, x_path,
              "features must be (N, D) or (N, H, W, C), the file holds " + std::to_string(a.x.shape.size()) +
                  " dimensions");
  KTR_REQUIRE(a.x.shape[0] > 0, x_path, "no samples");
  KTR_REQUIRE(a.y.shape.size() == 1 || (a.y.shape.size() == 2 && !a.y.is_integer()), y_path,
              "targets must be (N) integer labels, or (N) or (N, T) float values");
  KTR_REQUIRE(a.y.shape[0] == a.x.shape[0], y_path,
              "holds " + std::to_string(a.y.shape[0]) + " targets, " + x_path + " holds " +
                  std::to_string(a.x.shape[0]) + " samples");
  for (double v : a.x.values) KTR_REQUIRE(std::isfinite(v), x_path, "holds a non-finite feature");
  if (a.y.is_integer()) {
    for (double v : a.y.values)
      KTR_REQUIRE(v >= 0 && v < (1 << 24), y_path, "label " + std::to_string(v) + " is not in [0, 2^24)");
  } else {
    for (double v : a.y.values) KTR_REQUIRE(std::isfinite(v), y_path, "holds a non-finite target");
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

int class_count(Flags const& f, Arrays const& train, Arrays const* test) {
  if (!train.y.is_integer()) {
    if (f.has("classes")) throw FlagError("--classes: only for integer (class label) targets");
    return 0;
  }
  if (f.has("classes")) return int(f.integer("classes", 0, 1, 1 << 24));
  double top = 0;
  for (double v : train.y.values) top = std::max(top, v);
  if (test)
    for (double v : test->y.values) top = std::max(top, v);
  return int(top) + 1;
}

}  // namespace

RunData load_run_data(Flags const& f, bool want_test, std::uint64_t seed) {
  RunData d;
  bool const arrays = f.has("features") || f.has("targets");
  if (!arrays) {
    for (char const* only : {"test-features", "test-targets", "test-fraction", "classes"})
      if (f.has(only)) throw FlagError(std::string("--") + only + ": only with --features and --targets");
    std::string const dir = f.str("data", KTR_DEFAULT_DATA_DIR);
    d.train = load_idx(dir, "train");
    if (want_test) d.test = load_idx(dir, "t10k");
    d.source = dir;
    return d;
  }
  d.arrays = true;
  if (f.has("data")) throw FlagError("--data: give either --data or --features/--targets, not both");
  if (!f.has("features") || !f.has("targets")) throw FlagError("--features and --targets go together");
  if (f.has("test-features") != f.has("test-targets"))
    throw FlagError("--test-features and --test-targets go together");
  if (f.has("test-fraction") && f.has("test-features"))
    throw FlagError("--test-fraction: give either a fraction or --test-features/--test-targets, not both");
  Arrays const train = read_arrays(f.str("features", ""), f.str("targets", ""));
  d.source = train.x_path + ", " + train.y_path;
  if (f.has("test-features")) {
    Arrays const test = read_arrays(f.str("test-features", ""), f.str("test-targets", ""));
    KTR_REQUIRE(test.y.is_integer() == train.y.is_integer(), test.y_path,
                "its targets are " + std::string(test.y.is_integer() ? "labels" : "values") + ", " + train.y_path +
                    " holds " + (train.y.is_integer() ? "labels" : "values"));
    int const classes = class_count(f, train, &test);
    d.train = to_device(train, {}, classes, train.x_path);
    if (want_test) d.test = to_device(test, {}, classes, test.x_path);
    return d;
  }
  int const classes = class_count(f, train, nullptr);
  if (!f.has("test-fraction")) {
    d.train = to_device(train, {}, classes, train.x_path);
    return d;
  }
  double const fraction = f.number("test-fraction", 0.0, 1e-9, 1 - 1e-9);
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
  d.train = to_device(train, train_rows, classes, train.x_path);
  if (want_test) d.test = to_device(train, test_rows, classes, train.x_path + " (held out)");
  d.source += ", " + std::to_string(held) + " held out";
  return d;
}

std::string default_model(DeviceDataset const& data) {
  std::string in = "in=";
  in += data.vector
            ? std::to_string(data.channels)
            : std::to_string(data.height) + "x" + std::to_string(data.width) + "x" + std::to_string(data.channels);
  return in + (data.vector ? "" : " flatten") +
         " dense:128:relu dense:128:relu dense:" + std::to_string(data.target_width());
}

}  // namespace ktr::cli
