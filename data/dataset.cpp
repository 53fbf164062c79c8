// Device dataset: one host-to-device copy at load and its checks; the input transform is in input_transform.cpp,
// the batch gathers in gather.cpp.
#include "dataset.hpp"

#include "../core/checked.hpp"
#include "../core/error.hpp"
#include "idx.hpp"

namespace ktr {

namespace {

// A dataset over views it owns: contiguous row-major (N, H, W, C) features, the views kept alive by `keep`.
template <class T>
void own_features(DeviceDataset& d, DeviceView<T*> const& storage) {
  std::int64_t const ext[4] = {d.count, d.height, d.width, d.channels};
  std::int64_t const str[4] = {d.sample_size(), d.width * d.channels, d.channels, 1};
  if constexpr (std::is_same<T, float>::value)
    d.features = DeviceDataset::strided<float>(storage.data(), ext, str),
    d.feature_kind = DeviceDataset::Features::float32;
  else
    d.pixels = DeviceDataset::strided<std::uint8_t>(storage.data(), ext, str),
    d.feature_kind = DeviceDataset::Features::uint8;
}

}  // namespace

DeviceDataset make_device_dataset(std::vector<std::uint8_t> const& pixels, std::vector<std::uint8_t> const& labels,
                                  std::int64_t count, std::int64_t height, std::int64_t width,
                                  std::int64_t channels, int num_classes, std::string const& name) {
  KTR_REQUIRE(count > 0 && height > 0 && width > 0 && channels > 0, name, "empty dataset");
  KTR_REQUIRE(static_cast<std::int64_t>(pixels.size()) ==
                  checked_mul(checked_mul(count, height, name.c_str()), width * channels, name.c_str()),
              name, "pixel count does not match (N, H, W, C)");
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
  DeviceView<std::uint8_t*> images(Kokkos::view_alloc(Kokkos::WithoutInitializing, "ktr::data::images"),
                                   pixels.size());
  DeviceView<std::int32_t*> lab(Kokkos::view_alloc(Kokkos::WithoutInitializing, "ktr::data::labels"),
                                labels32.size());
  Kokkos::deep_copy(images, HostView<const std::uint8_t*>(pixels.data(), pixels.size()));
  Kokkos::deep_copy(lab, HostView<const std::int32_t*>(labels32.data(), labels32.size()));
  own_features(d, images);
  d.labels = lab;
  d.bytes = std::int64_t(pixels.size()) + count * 4;
  d.keep = std::make_shared<std::pair<DeviceView<std::uint8_t*>, DeviceView<std::int32_t*>> const>(images, lab);
  return d;
}

DeviceDataset make_device_dataset(std::vector<float> const& features, std::vector<std::int64_t> const& shape,
                                  std::vector<std::int32_t> const& labels, std::vector<float> const& values,
                                  std::int64_t count, int num_classes, std::string const& name) {
  KTR_REQUIRE(count > 0, name, "no samples");
  KTR_REQUIRE(shape.size() == 1 || shape.size() == 3, name, "samples must be vectors (D) or images (H, W, C)");
  DeviceDataset d;
  d.count = count;
  d.vector = shape.size() == 1;
  if (d.vector) {
    d.channels = shape[0];
  } else {
    d.height = shape[0], d.width = shape[1], d.channels = shape[2];
  }
  std::int64_t const sample = d.sample_size();
  KTR_REQUIRE(sample > 0, name, "empty samples");
  KTR_REQUIRE(std::int64_t(features.size()) == checked_mul(count, sample, name.c_str()), name,
              "feature count does not match the shape");
  KTR_REQUIRE(labels.empty() != values.empty(), name, "needs either class labels or regression values");
  DeviceView<float*> x(Kokkos::view_alloc(Kokkos::WithoutInitializing, "ktr::data::features"), features.size());
  Kokkos::deep_copy(x, HostView<const float*>(features.data(), features.size()));
  own_features(d, x);
  d.bytes = std::int64_t(features.size()) * 4;
  if (!labels.empty()) {
    KTR_REQUIRE(std::int64_t(labels.size()) == count, name, "label count does not match N");
    DeviceView<std::int32_t*> y(Kokkos::view_alloc(Kokkos::WithoutInitializing, "ktr::data::labels"),
                                labels.size());
    Kokkos::deep_copy(y, HostView<const std::int32_t*>(labels.data(), labels.size()));
    d.labels = y;
    d.num_classes = check_class_labels(ExecSpace(), d.labels, num_classes, name);
    d.bytes += count * 4;
    d.keep = std::make_shared<std::pair<DeviceView<float*>, DeviceView<std::int32_t*>> const>(x, y);
  } else {
    KTR_REQUIRE(std::int64_t(values.size()) % count == 0 && !values.empty(), name,
                "target count is not a multiple of N");
    std::int64_t const t = std::int64_t(values.size()) / count;
    DeviceView<float*> y(Kokkos::view_alloc(Kokkos::WithoutInitializing, "ktr::data::values"), values.size());
    Kokkos::deep_copy(y, HostView<const float*>(values.data(), values.size()));
    d.values = DeviceDataset::Values(y.data(),
                                     Kokkos::LayoutStride(std::size_t(count), std::size_t(t), std::size_t(t), 1));
    d.target_kind = DeviceDataset::Targets::values;
    d.bytes += std::int64_t(values.size()) * 4;
    d.keep = std::make_shared<std::pair<DeviceView<float*>, DeviceView<float*>> const>(x, y);
  }
  return d;
}

std::int64_t non_finite_values(ExecSpace const& space, DeviceDataset const& batch) {
  bool const floats = batch.feature_kind == DeviceDataset::Features::float32;
  auto const x = batch.features;
  auto const v = batch.values;
  std::int64_t const n = batch.count, w = batch.width, c = batch.channels,
                     sample = floats ? batch.sample_size() : 0;
  std::int64_t const t = batch.target_kind == DeviceDataset::Targets::values ? std::int64_t(v.extent(1)) : 0;
  std::int64_t bad = 0;
  Kokkos::parallel_reduce(
      "ktr::data::check_finite", Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, n),
      KOKKOS_LAMBDA(std::int64_t s, std::int64_t & count) {
        for (std::int64_t f = 0; f < sample; ++f) {
          float const a = x(s, f / (w * c), f / c % w, f % c);
          if (!(a - a == 0.0f)) ++count;
        }
        for (std::int64_t j = 0; j < t; ++j)
          if (!(v(s, j) - v(s, j) == 0.0f)) ++count;
      },
      bad);
  return bad;
}

int check_class_labels(ExecSpace const& space, DeviceDataset::Labels const& labels, int num_classes,
                       std::string const& name) {
  using Pair = Kokkos::MinMaxScalar<std::int32_t>;
  Pair range;
  Kokkos::parallel_reduce(
      "ktr::data::label_range",
      Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, std::int64_t(labels.extent(0))),
      KOKKOS_LAMBDA(std::int64_t i, Pair & r) {
        std::int32_t const v = labels(i);
        if (v < r.min_val) r.min_val = v;
        if (v > r.max_val) r.max_val = v;
      },
      Kokkos::MinMax<std::int32_t>(range));
  KTR_REQUIRE(range.min_val >= 0, name, "label " + std::to_string(range.min_val) + " is negative");
  if (num_classes <= 0) {
    KTR_REQUIRE(range.max_val < (1 << 24), name,
                "label " + std::to_string(range.max_val) + " is implausibly large");
    return range.max_val + 1;
  }
  KTR_REQUIRE(range.max_val < num_classes, name,
              "label " + std::to_string(range.max_val) + " is not in [0, " + std::to_string(num_classes) + ")");
  return num_classes;
}

DeviceDataset load_idx_dataset(std::string const& dir, std::string const& split, int num_classes) {
  IdxSplit s = read_idx_split(dir, split, num_classes);
  return make_device_dataset(s.images.pixels, s.labels.labels, s.images.count, s.images.rows, s.images.cols, 1,
                             num_classes, s.images_path);
}

std::int64_t steps_per_epoch(DeviceDataset const& data, std::int64_t batch) {
  KTR_REQUIRE(batch > 0 && batch <= data.count, "ktr::steps_per_epoch",
              "batch " + std::to_string(batch) + " must be in [1, " + std::to_string(data.count) + "]");
  return data.count / batch;
}

}  // namespace ktr
