// Device dataset: one host-to-device copy at load, then permutation and batch gathers on the device.
#include "dataset.hpp"

#include "../core/error.hpp"
#include "../core/permutation.hpp"
#include "idx.hpp"

#include <cmath>

namespace ktr {

DeviceDataset make_device_dataset(std::vector<std::uint8_t> const& pixels, std::vector<std::uint8_t> const& labels,
                                  std::int64_t count, std::int64_t height, std::int64_t width,
                                  std::int64_t channels, int num_classes, std::string const& name) {
  KTR_REQUIRE(count > 0 && height > 0 && width > 0 && channels > 0, name, "empty dataset");
  KTR_REQUIRE(static_cast<std::int64_t>(pixels.size()) == count * height * width * channels, name,
              "pixel count does not match (N, H, W, C)");
  KTR_REQUIRE(static_cast<std::int64_t>(labels.size()) == count, name, "label count does not match N");
  DeviceDataset d;
  d.count = count;
  d.height = height;
  d.width = width;
  d.channels = channels;
  d.num_classes = num_classes;
  std::vector<std::int32_t> labels32(labels.size());
  for (std::size_t i = 0; i < labels.size(); ++i) {
    KTR_REQUIRE(labels[i] < num_classes, name,
                "label " + std::to_string(labels[i]) + " at index " + std::to_string(i) + " is not in [0, " +
                    std::to_string(num_classes) + ")");
    labels32[i] = labels[i];
  }
  d.images = DeviceView<std::uint8_t*>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "ktr::data::images"),
                                       pixels.size());
  d.labels = DeviceView<std::int32_t*>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "ktr::data::labels"),
                                       labels32.size());
  Kokkos::deep_copy(d.images, HostView<const std::uint8_t*>(pixels.data(), pixels.size()));
  Kokkos::deep_copy(d.labels, HostView<const std::int32_t*>(labels32.data(), labels32.size()));
  return d;
}

DeviceDataset load_idx_dataset(std::string const& dir, std::string const& split, int num_classes) {
  IdxSplit s = read_idx_split(dir, split, num_classes);
  return make_device_dataset(s.images.pixels, s.labels.labels, s.images.count, s.images.rows, s.images.cols, 1,
                             num_classes, s.images_path);
}

Normalization Normalization::standardized(float mean, float std) {
  KTR_REQUIRE(std > 0, "ktr::Normalization", "std must be positive");
  return Normalization{1.0f / (255.0f * std), -mean / std};
}

PixelStatistics pixel_statistics(ExecSpace const& space, DeviceDataset const& data) {
  auto images = data.images;
  double sum = 0, sum_sq = 0;
  Kokkos::parallel_reduce(
      "ktr::data::pixel_sum",
      Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, images.extent(0)),
      KOKKOS_LAMBDA(std::int64_t i, double& s) { s += images(i); }, sum);
  Kokkos::parallel_reduce(
      "ktr::data::pixel_sum_squares",
      Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, images.extent(0)),
      KOKKOS_LAMBDA(std::int64_t i, double& s) { s += double(images(i)) * images(i); }, sum_sq);
  double const n = double(images.extent(0));
  double const mean = sum / n / 255.0, var = sum_sq / n / (255.0 * 255.0) - mean * mean;
  return PixelStatistics{mean, var > 0 ? std::sqrt(var) : 1.0};
}

std::int64_t steps_per_epoch(DeviceDataset const& data, std::int64_t batch) {
  KTR_REQUIRE(batch > 0 && batch <= data.count, "ktr::steps_per_epoch",
              "batch " + std::to_string(batch) + " must be in [1, " + std::to_string(data.count) + "]");
  return data.count / batch;
}

namespace {

using Team = Kokkos::TeamPolicy<ExecSpace>::member_type;

// One sample per team (GPU: the team's threads convert its pixels, coalesced) or per iteration (host: a plain
// loop that vectorises; Kokkos's host team machinery costs more than the conversion itself).
template <class IndexOf>
void gather(char const* label, ExecSpace const& space, DeviceDataset const& data, std::int64_t batch,
            IndexOf index_of, Normalization const& norm, Tensor const& x, DeviceView<std::int32_t*> const& y) {
  KTR_REQUIRE(x.shape() == data.batch_shape(batch), label,
              "batch tensor " + x.shape().str() + " is not " + data.batch_shape(batch).str());
  KTR_REQUIRE(static_cast<std::int64_t>(y.extent(0)) >= batch, label, "label buffer too small");
  auto images = data.images;
  auto labels = data.labels;
  float* out = x.data();
  std::int64_t const sample = data.sample_size();
  float const scale = norm.scale, shift = norm.shift;
  if constexpr (device_is_host) {
    Kokkos::parallel_for(
        label, Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, batch),
        KOKKOS_LAMBDA(std::int64_t b) {
          std::int64_t const src = index_of(b);
          std::uint8_t const* KOKKOS_RESTRICT in = images.data() + src * sample;
          float* KOKKOS_RESTRICT dst = out + b * sample;
          for (std::int64_t p = 0; p < sample; ++p) dst[p] = float(in[p]) * scale + shift;
          y(b) = labels(src);
        });
  } else {
    Kokkos::parallel_for(
        label, Kokkos::TeamPolicy<ExecSpace>(space, static_cast<int>(batch), Kokkos::AUTO),
        KOKKOS_LAMBDA(Team const& team) {
          std::int64_t const b = team.league_rank();
          std::int64_t const src = index_of(b);
          std::uint8_t const* in = images.data() + src * sample;
          float* dst = out + b * sample;
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, sample),
                               [&](std::int64_t p) { dst[p] = float(in[p]) * scale + shift; });
          Kokkos::single(Kokkos::PerTeam(team), [&] { y(b) = labels(src); });
        });
  }
}

}  // namespace

void gather_batch(ExecSpace const& space, DeviceDataset const& data, BatchCursor const& cursor,
                  Normalization const& norm, Tensor const& x, DeviceView<std::int32_t*> const& y) {
  std::int64_t const batch = cursor.batch;
  std::int64_t const spe = steps_per_epoch(data, batch);
  auto step = cursor.step;
  std::int64_t const offset = cursor.offset;
  std::uint64_t const seed = cursor.seed;
  std::uint64_t const n = static_cast<std::uint64_t>(data.count);
  gather(
      "ktr::data::gather_batch", space, data, batch,
      KOKKOS_LAMBDA(std::int64_t b)->std::int64_t {
        std::int64_t const s = step() + offset;
        Permutation const perm(n, seed, static_cast<std::uint64_t>(s / spe));
        return static_cast<std::int64_t>(perm(static_cast<std::uint64_t>((s % spe) * batch + b)));
      },
      norm, x, y);
}

void gather_range(ExecSpace const& space, DeviceDataset const& data, std::int64_t first, Normalization const& norm,
                  Tensor const& x, DeviceView<std::int32_t*> const& y) {
  std::int64_t const batch = x.shape()[0];
  KTR_REQUIRE(first >= 0 && first + batch <= data.count, "ktr::data::gather_range",
              "range past the end of the data");
  gather(
      "ktr::data::gather_range", space, data, batch,
      KOKKOS_LAMBDA(std::int64_t b)->std::int64_t { return first + b; }, norm, x, y);
}

void permutation(ExecSpace const& space, std::uint64_t seed, std::uint64_t epoch,
                 DeviceView<std::int64_t*> const& out) {
  std::uint64_t const n = out.extent(0);
  Kokkos::parallel_for(
      "ktr::data::permutation", Kokkos::RangePolicy<ExecSpace>(space, 0, n),
      KOKKOS_LAMBDA(std::uint64_t i) { out(i) = static_cast<std::int64_t>(Permutation(n, seed, epoch)(i)); });
}

}  // namespace ktr
