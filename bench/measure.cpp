// Timing and machine limits.
#include "bench/measure.hpp"

#include <ktr/backends/gemm.hpp>
#include <ktr/core/error.hpp>
#include <ktr/core/ops.hpp>
#include <ktr/core/tensor.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <sstream>

namespace ktr::bench {

RandomImages random_images(std::int64_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  RandomImages r{std::vector<std::uint8_t>(std::size_t(n * 784)), std::vector<std::uint8_t>(std::size_t(n))};
  for (auto& p : r.pixels) p = std::uint8_t(rng());
  for (auto& l : r.labels) l = std::uint8_t(rng() % 10);
  return r;
}

std::vector<std::string> model_names(std::string const& list, bool fields) {
  std::vector<std::string> names;
  std::stringstream ss(list);
  std::string name;
  while (std::getline(ss, name, ',')) {
    bool const known = name == "mlp" || name == "cnn" || (fields && is_field_model(name));
    KTR_REQUIRE(known, "--models",
                "unknown model '" + name + "' (" + (fields ? "mlp, cnn, unet, periodic" : "mlp, cnn") + ")");
    names.push_back(name);
  }
  return names;
}

bool is_field_model(std::string const& name) { return name == "unet" || name == "periodic"; }

RunConfig model_config(std::string const& name, std::int64_t mlp_batch, std::int64_t cnn_batch) {
  RunConfig config;
  config.batch = name == "mlp" ? mlp_batch : cnn_batch;
  if (name == "unet") {
    config.model =
        "in=32x32x1 conv3x3:16:relu save:s1 maxpool2 conv3x3:32:relu save:s2 maxpool2 conv3x3:64:relu upsample2 "
        "concat:s2 conv3x3:32:relu upsample2 concat:s1 conv3x3:16:relu conv3x3:1";
  } else if (name == "periodic") {
    config.model =
        "in=32x32x1 conv3x3:16:gelu:circular save:a conv3x3:32:gelu:s2:circular conv3x3:32:gelu:circular "
        "convT2x2:16 add:a conv3x3:1:circular";
  } else {
    config.model = name == "mlp" ? Model::mlp() : Model::simple_cnn();
    return config;
  }
  config.task = Task::regression;  // mse on every element of the field, as the peer trains them
  config.normalize = InputTransformMode::none;
  config.input_transform = InputTransform::identity();
  return config;
}

DeviceDataset random_fields(std::int64_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> x(std::size_t(n * 1024)), y(x.size());
  for (auto& v : x) v = normal(rng);
  for (auto& v : y) v = normal(rng);
  return make_device_dataset(x, {32, 32, 1}, {}, y, n, 0, "random fields");
}

DeviceDataset random_dataset(std::int64_t n, std::uint32_t seed) {
  RandomImages const r = random_images(n, seed);
  return make_device_dataset(r.pixels, r.labels, n, 28, 28, 1, 10, "random");
}

double median_seconds(ExecSpace const& space, std::function<void()> const& body, int reps, int warmup) {
  for (int i = 0; i < warmup; ++i) body();
  space.fence();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto const t0 = std::chrono::steady_clock::now();
    body();
    space.fence();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

double copy_gbps(ExecSpace const& space, std::int64_t bytes, int reps) {
  DeviceView<float*> a("ktr::bench::copy_a", std::size_t(bytes / 4)),
      b("ktr::bench::copy_b", std::size_t(bytes / 4));
  fill(space, a, 1.0f);
  double const s = median_seconds(
      space, [&] { Kokkos::deep_copy(space, b, a); }, reps);
  return 2.0 * double(bytes) / s / 1e9;
}

double sgemm_gflops(ExecSpace const& space, std::int64_t n, int reps, int warmup, MatmulPrecision precision) {
  Tensor a("ktr::bench::gemm_a", {n, n}), b("ktr::bench::gemm_b", {n, n}), c("ktr::bench::gemm_c", {n, n});
  fill(space, a.view(), 0.5f);
  fill(space, b.view(), 0.25f);
  double const s = median_seconds(
      space,
      [&] {
        gemm(space, Precision{precision, {}}, false, false, 1.0f, a.matrix(), b.matrix(), 0.0f, c.matrix());
      },
      reps, warmup);
  return 2.0 * double(n) * double(n) * double(n) / s / 1e9;
}

namespace {
void empty(ExecSpace const& space) {
  Kokkos::parallel_for("ktr::bench::empty", Kokkos::RangePolicy<ExecSpace>(space, 0, 1), KOKKOS_LAMBDA(int){});
}
}  // namespace

LaunchCost launch_cost(ExecSpace const& space, int launches) {
  double const burst = median_seconds(
      space,
      [&] {
        for (int i = 0; i < launches; ++i) empty(space);
      },
      5);
  double const synced = median_seconds(
      space,
      [&] {
        for (int i = 0; i < launches / 10; ++i) {
          empty(space);
          space.fence();
        }
      },
      5);
  return LaunchCost{1e6 * burst / launches, 1e6 * synced / (launches / 10)};
}

std::string num(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace ktr::bench
