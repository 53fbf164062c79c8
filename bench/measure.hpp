// Timing helpers and the machine's limits, measured in the same run as the thing they are compared with:
// device copy bandwidth, large-sgemm rate through ktr's gemm, and the cost of launching an empty kernel.
#pragma once

#include <ktr/core/types.hpp>
#include <ktr/data/dataset.hpp>
#include <ktr/train/session.hpp>

#include <cstdint>

#include <functional>
#include <string>
#include <vector>

namespace ktr::bench {

/// n random 28x28x1 uint8 images and labels in [0, 10), the same for the same seed.
struct RandomImages {
  std::vector<std::uint8_t> pixels, labels;
};
RandomImages random_images(std::int64_t n, std::uint32_t seed);
/// random_images(n, seed) on the device.
DeviceDataset random_dataset(std::int64_t n, std::uint32_t seed);

/// The models of a comma-separated list ("mlp,cnn", with `fields` also "unet" and "periodic"); refuses other
/// names, naming --models.
std::vector<std::string> model_names(std::string const& list, bool fields = false);
/// Whether `name` is one of the field surrogates of bench/peers/ktr-vs-torch-fields.sh (unet, periodic).
bool is_field_model(std::string const& name);
/// A run of the named model at its batch: mlp at mlp_batch; cnn and the field surrogates at cnn_batch, these
/// as regressions (mse over every element of a 32x32x1 field).
RunConfig model_config(std::string const& name, std::int64_t mlp_batch, std::int64_t cnn_batch);
/// n random 32x32x1 fields and targets of the same shape (normal draws), on the device, for the field models.
DeviceDataset random_fields(std::int64_t n, std::uint32_t seed);

/// Median seconds of `reps` runs of `body` (each fenced), after `warmup` untimed runs.
double median_seconds(ExecSpace const& space, std::function<void()> const& body, int reps, int warmup = 2);

/// Device-to-device copy of `bytes` bytes: GB/s counting read + write traffic (2 * bytes per copy).
double copy_gbps(ExecSpace const& space, std::int64_t bytes, int reps = 15);

/// Square matmul of size n through ktr::gemm in `precision` (default fp32, an sgemm): GFLOP/s (2 n^3 per call).
double sgemm_gflops(ExecSpace const& space, std::int64_t n, int reps = 7, int warmup = 2,
                    MatmulPrecision precision = MatmulPrecision::fp32);

/// Empty-kernel launch cost in microseconds: {back-to-back launches per launch, launch + fence}.
struct LaunchCost {
  double async_us, synced_us;
};
LaunchCost launch_cost(ExecSpace const& space, int launches = 2000);

/// The median of `v` (the mean of the middle two for an even count).
double median(std::vector<double> v);

/// Formats a number with `digits` decimals.
std::string num(double v, int digits = 1);

}  // namespace ktr::bench
