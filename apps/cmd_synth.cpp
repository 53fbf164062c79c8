// `ktr synth`: a small synthetic dataset in MNIST format (gzip IDX), easily learnable: each class is a
// random smooth template, each sample its class template plus noise and a random shift. For tests and demos
// on machines without Fashion-MNIST. With --arrays, NumPy arrays instead: a regression problem (8 features of
// mixed scales, 2 smooth targets) and a 3-class problem on the same features; with --fields a field-to-field
// problem; with --sobolev a smooth function of two inputs and its derivatives (Sobolev targets).
#include <ktr/data/idx.hpp>
#include <ktr/data/npy.hpp>
#include "apps/cli.hpp"
#include "apps/flags.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>

namespace ktr::cli {

namespace {

void make_split(std::string const& dir, std::string const& prefix, std::int64_t count, std::uint32_t seed,
                std::vector<std::vector<float>> const& templates) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 40.0f);
  IdxImages images{count, 28, 28, std::vector<std::uint8_t>(std::size_t(count * 784))};
  IdxLabels labels{count, std::vector<std::uint8_t>(std::size_t(count))};
  for (std::int64_t i = 0; i < count; ++i) {
    int const c = int(rng() % 10);
    int const dy = int(rng() % 5) - 2, dx = int(rng() % 5) - 2;
    labels.labels[std::size_t(i)] = std::uint8_t(c);
    for (int y = 0; y < 28; ++y)
      for (int x = 0; x < 28; ++x) {
        int const sy = std::min(27, std::max(0, y + dy)), sx = std::min(27, std::max(0, x + dx));
        float const v = templates[std::size_t(c)][std::size_t(sy * 28 + sx)] + noise(rng);
        images.pixels[std::size_t(i * 784 + y * 28 + x)] = std::uint8_t(std::min(255.0f, std::max(0.0f, v)));
      }
  }
  write_idx_images(dir + "/" + prefix + "-images-idx3-ubyte.gz", images);
  write_idx_labels(dir + "/" + prefix + "-labels-idx1-ubyte.gz", labels);
}

// regression-{features,targets}.npy: x (N, 8) float32, y (N, 2) float32; classes-targets.npy: int32 labels (N).
void make_arrays(std::string const& dir, std::string const& prefix, std::int64_t count, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::int64_t const D = 8;
  std::vector<float> x(std::size_t(count * D)), y(std::size_t(count * 2));
  std::vector<std::int32_t> labels(static_cast<std::size_t>(count));
  for (std::int64_t n = 0; n < count; ++n) {
    float* s = &x[std::size_t(n * D)];
    for (std::int64_t d = 0; d < D; ++d) s[d] = g(rng) * float(1 << d) + float(d);
    float const a = s[0], b = (s[1] - 1) / 2, c = (s[2] - 2) / 4;
    y[std::size_t(2 * n)] = 1.5f * a - b + 0.5f * c + 0.1f * g(rng);
    y[std::size_t(2 * n + 1)] = std::sin(a) + 0.5f * b * c + 0.1f * g(rng);
    labels[std::size_t(n)] = a + b > 1 ? 2 : (a - c > 0 ? 1 : 0);
  }
  write_npy(dir + "/" + prefix + "features.npy", {count, D}, x);
  write_npy(dir + "/" + prefix + "targets.npy", {count, 2}, y);
  write_npy(dir + "/" + prefix + "labels.npy", {count}, labels);
}

// fields.npy: smooth random fields x (N, 16, 16, 1) float32; next.npy: each after one explicit diffusion step,
// x + 0.2 (the 5-point Laplacian of x, zero outside the grid): a 3x3 convolution maps one to the other exactly.
// Returns persistence's mean squared error (predicting that the field does not change).
double make_fields(std::string const& dir, std::string const& prefix, std::int64_t count, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  int const n = 16;
  std::vector<float> x(std::size_t(count * n * n)), y(x.size());
  for (std::int64_t s = 0; s < count; ++s) {
    float* f = &x[std::size_t(s * n * n)];
    for (int wave = 0; wave < 3; ++wave) {  // a few plane waves of random direction, phase and amplitude
      float const kx = 6.2831853f * (u(rng) - 0.5f) / 4, ky = 6.2831853f * (u(rng) - 0.5f) / 4;
      float const phase = 6.2831853f * u(rng), a = u(rng);
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) f[i * n + j] += a * std::sin(kx * float(i) + ky * float(j) + phase);
    }
    auto at = [&](int i, int j) { return i < 0 || j < 0 || i >= n || j >= n ? 0.0f : f[i * n + j]; };
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        y[std::size_t(s * n * n + i * n + j)] =
            at(i, j) + 0.2f * (at(i - 1, j) + at(i + 1, j) + at(i, j - 1) + at(i, j + 1) - 4 * at(i, j));
  }
  write_npy(dir + "/" + prefix + "fields.npy", {count, n, n, 1}, x);
  write_npy(dir + "/" + prefix + "next.npy", {count, n, n, 1}, y);
  double sse = 0;
  for (std::size_t i = 0; i < x.size(); ++i) sse += double(y[i] - x[i]) * double(y[i] - x[i]);
  return sse / double(x.size());
}

// Sobolev targets: points.npy x (N, 2) float32 uniform in [-2, 2]^2, values.npy f(x) (N, 1) and sobolev.npy
// (N, 1, 3): f and its derivatives by x0 and x1 (derivatives "d0 d1"), of f = sin(x0) cos(x1).
void make_sobolev(std::string const& dir, std::string const& prefix, std::int64_t count, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> x(std::size_t(count * 2)), f(static_cast<std::size_t>(count)), jet(std::size_t(count * 3));
  for (std::size_t n = 0; n < std::size_t(count); ++n) {
    double const a = x[2 * n] = u(rng), b = x[2 * n + 1] = u(rng);
    f[n] = jet[3 * n] = float(std::sin(a) * std::cos(b));
    jet[3 * n + 1] = float(std::cos(a) * std::cos(b));
    jet[3 * n + 2] = float(-std::sin(a) * std::sin(b));
  }
  write_npy(dir + "/" + prefix + "points.npy", {count, 2}, x);
  write_npy(dir + "/" + prefix + "values.npy", {count, 1}, f);
  write_npy(dir + "/" + prefix + "sobolev.npy", {count, 1, 3}, jet);
}

}  // namespace

int synth(int argc, char* argv[]) {
  CLI::App app{
      "Writes a small synthetic dataset: MNIST-format IDX images, or with --arrays NumPy arrays "
      "({train,test}-features.npy (N, 8) float32, {train,test}-targets.npy (N, 2) float32 regression "
      "targets, {train,test}-labels.npy (N) int32 labels of 3 classes), or with --fields a field-to-field "
      "problem ({train,test}-fields.npy and -next.npy, (N, 16, 16, 1) float32: a field and its next diffusion "
      "step), or with --sobolev a function and its derivatives ({train,test}-points.npy (N, 2), -values.npy "
      "(N, 1) and -sobolev.npy (N, 1, 3): f = sin(x0) cos(x1), then its derivatives by x0 and x1, for "
      "--derivatives 'd0 d1').",
      "ktr synth"};
  std::string dir;
  std::int64_t train = 6000, test = 1000, seed_value = 1;
  bool arrays = false, fields = false, sobolev = false;
  app.add_option("--out", dir, "the folder to write")->required();
  app.add_option("--train", train, "training samples")->check(integer_in(1, 10000000))->capture_default_str();
  app.add_option("--test", test, "test samples")->check(integer_in(1, 10000000))->capture_default_str();
  app.add_option("--seed", seed_value, "seed")->check(integer_in(0, UINT32_MAX))->capture_default_str();
  auto* as_arrays = app.add_flag("--arrays", arrays, "NumPy arrays instead of IDX images");
  app.add_flag("--fields", fields, "NumPy fields (N, 16, 16, 1) and their next diffusion step")
      ->excludes(as_arrays);
  // Checked here, not by CLI11's excludes: a flag excluding two lists them in pointer order, which the help (and
  // docs/reference/cli.md) would then change with the allocator.
  app.add_flag(
      "--sobolev", sobolev,
      "NumPy points, values and values with derivatives (Sobolev targets); not with --arrays or --fields");
  if (!parse(app, argc, argv, 2)) return 0;
  if (sobolev && (arrays || fields)) throw FlagError("--sobolev: give one of --arrays, --fields and --sobolev");
  auto const seed = std::uint32_t(seed_value);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error("--out " + dir + ": " + ec.message());
  if (fields) {
    make_fields(dir, "train-", train, seed + 1);
    double const persistence = make_fields(dir, "test-", test, seed + 2);
    std::printf("wrote %lld train and %lld test fields as .npy arrays to %s (test mse of persistence %.6g)\n",
                (long long)train, (long long)test, dir.c_str(), persistence);
    return 0;
  }
  if (sobolev) {
    make_sobolev(dir, "train-", train, seed + 1);
    make_sobolev(dir, "test-", test, seed + 2);
    std::printf(
        "wrote %lld train and %lld test points of f = sin(x0) cos(x1) with its derivatives as .npy arrays to "
        "%s\n",
        (long long)train, (long long)test, dir.c_str());
    return 0;
  }
  if (arrays) {
    make_arrays(dir, "train-", train, seed + 1);
    make_arrays(dir, "test-", test, seed + 2);
    std::printf("wrote %lld train and %lld test samples as .npy arrays to %s\n", (long long)train, (long long)test,
                dir.c_str());
    return 0;
  }
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<std::vector<float>> templates(10, std::vector<float>(784));
  for (auto& t : templates) {
    // A sum of a few random blobs: smooth, class-specific.
    for (int blob = 0; blob < 4; ++blob) {
      float const cy = 4 + 20 * u(rng), cx = 4 + 20 * u(rng), r = 2 + 4 * u(rng), a = 120 + 120 * u(rng);
      for (int y = 0; y < 28; ++y)
        for (int x = 0; x < 28; ++x)
          t[std::size_t(y * 28 + x)] += a * std::exp(-((y - cy) * (y - cy) + (x - cx) * (x - cx)) / (2 * r * r));
    }
  }
  make_split(dir, "train", train, seed + 1, templates);
  make_split(dir, "t10k", test, seed + 2, templates);
  std::printf("wrote %lld train and %lld test samples to %s\n", (long long)train, (long long)test, dir.c_str());
  return 0;
}

}  // namespace ktr::cli
