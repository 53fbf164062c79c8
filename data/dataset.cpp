// Device dataset: one host-to-device copy at load, then permutation and batch gathers on the device.
#include "dataset.hpp"

#include "../backends/kokkos_compat.hpp"
#include "../core/checked.hpp"
#include "../core/error.hpp"
#include "../core/parse.hpp"
#include "../core/permutation.hpp"
#include "idx.hpp"

#include <cmath>

namespace ktr {

namespace {

// A dataset over views it owns: contiguous row-major (N, H, W, C) features, the views kept alive by `keep`.
template <class T>
void own_features(DeviceDataset& d, DeviceView<T*> const& storage) {
  std::int64_t const ext[4] = {d.count, d.height, d.width, d.channels};
  std::int64_t const str[4] = {d.sample_size(), d.width * d.channels, d.channels, 1};
  if constexpr (std::is_same<T, float>::value)
    d.features = impl::strided4<float>(storage.data(), ext, str),
    d.feature_kind = DeviceDataset::Features::float32;
  else
    d.pixels = impl::strided4<std::uint8_t>(storage.data(), ext, str),
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
    d.num_classes = impl::check_labels(ExecSpace(), d.labels, num_classes, name);
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

namespace impl {

int check_labels(ExecSpace const& space, DeviceDataset::Labels const& labels, int num_classes,
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

}  // namespace impl

DeviceDataset load_idx_dataset(std::string const& dir, std::string const& split, int num_classes) {
  IdxSplit s = read_idx_split(dir, split, num_classes);
  return make_device_dataset(s.images.pixels, s.labels.labels, s.images.count, s.images.rows, s.images.cols, 1,
                             num_classes, s.images_path);
}

Normalization Normalization::standardized(float mean, float std) {
  KTR_REQUIRE(std > 0, "ktr::Normalization", "std must be positive");
  Normalization n;
  n.scale = 1.0f / (255.0f * std);
  n.shift = -mean / std;
  return n;
}

PixelStatistics pixel_statistics(ExecSpace const& space, DeviceDataset const& data) {
  KTR_REQUIRE(data.feature_kind == DeviceDataset::Features::uint8, "ktr::pixel_statistics",
              "the dataset has no uint8 pixels");
  auto px = data.pixels;
  std::int64_t const H = data.height, W = data.width, C = data.channels;
  double sum = 0, sum_sq = 0;
  Kokkos::parallel_reduce(
      "ktr::data::pixel_moments",
      Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, data.count),
      KOKKOS_LAMBDA(std::int64_t n, double& s, double& q) {
        for (std::int64_t h = 0; h < H; ++h)
          for (std::int64_t w = 0; w < W; ++w)
            for (std::int64_t c = 0; c < C; ++c) {
              double const v = px(n, h, w, c);
              s += v, q += v * v;
            }
      },
      sum, sum_sq);
  double const n = double(data.count) * double(data.sample_size());
  double const mean = sum / n / 255.0, var = sum_sq / n / (255.0 * 255.0) - mean * mean;
  return PixelStatistics{mean, var > 0 ? std::sqrt(var) : 1.0};
}

char const* normalize_mode_name(NormalizeMode mode) {
  switch (mode) {
    case NormalizeMode::standard:
      return "standard";
    case NormalizeMode::unit:
      return "unit";
    case NormalizeMode::none:
      return "none";
    case NormalizeMode::recorded:
      return "recorded";
  }
  return "?";
}

NormalizeMode parse_normalize_mode(std::string const& name) {
  for (NormalizeMode m :
       {NormalizeMode::standard, NormalizeMode::unit, NormalizeMode::none, NormalizeMode::recorded})
    if (name == normalize_mode_name(m)) return m;
  throw UsageError("normalisation mode '" + escaped(name) + "': must be standard, unit, none or recorded");
}

Normalization fit_normalization(ExecSpace const& space, DeviceDataset const& data, NormalizeMode mode) {
  KTR_REQUIRE(mode != NormalizeMode::recorded, "ktr::fit_normalization",
              "a recorded transform comes with its model and is not fitted");
  if (mode == NormalizeMode::none) return Normalization::identity();
  if (data.feature_kind == DeviceDataset::Features::uint8) {
    if (mode == NormalizeMode::unit) return Normalization{};
    PixelStatistics const stats = pixel_statistics(space, data);
    return Normalization::standardized(float(stats.mean), float(stats.std));
  }
  if (mode == NormalizeMode::unit) return Normalization::identity();
  std::int64_t const D = data.sample_size(), N = data.count, H = data.height, W = data.width, C = data.channels;
  Normalization norm = Normalization::identity();
  norm.feature_scale = DeviceView<float*>("ktr::data::feature_scale", std::size_t(D));
  norm.feature_shift = DeviceView<float*>("ktr::data::feature_shift", std::size_t(D));
  auto x = data.features;
  auto scale = norm.feature_scale, shift = norm.feature_shift;
  // A two-pass mean and variance per feature, in double, one feature per iteration (samples in order: the result
  // does not depend on the thread count). Vectors (N, D) are standardised by each feature's own; fields (N, H, W,
  // C) by their channel's, pooled over the cells (the law of total variance), as images are: a cell's own
  // statistics would break a convolution's translation invariance. Stored per feature either way.
  using Range = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
  DeviceView<double*> mean("ktr::data::feature_mean", std::size_t(D)),
      var("ktr::data::feature_var", std::size_t(D));
  Kokkos::parallel_for(
      "ktr::data::feature_moments", Range(space, 0, D), KOKKOS_LAMBDA(std::int64_t f) {
        std::int64_t const h = f / (W * C), w = f / C % W, c = f % C;
        double m = 0;
        for (std::int64_t n = 0; n < N; ++n) m += x(n, h, w, c);
        m /= double(N);
        double v = 0;
        for (std::int64_t n = 0; n < N; ++n) {
          double const e = x(n, h, w, c) - m;
          v += e * e;
        }
        mean(f) = m, var(f) = v / double(N);
      });
  bool const pooled = !data.vector && H * W > 1;
  DeviceView<double*> stat_mean = mean, stat_var = var;  // per feature, or per channel of a field
  if (pooled) {
    std::int64_t const P = H * W;
    stat_mean = DeviceView<double*>("ktr::data::channel_mean", std::size_t(C));
    stat_var = DeviceView<double*>("ktr::data::channel_var", std::size_t(C));
    auto cm = stat_mean, cv = stat_var;
    Kokkos::parallel_for(
        "ktr::data::channel_moments", Range(space, 0, C), KOKKOS_LAMBDA(std::int64_t c) {
          double m = 0, v = 0;
          for (std::int64_t p = 0; p < P; ++p) m += mean(p * C + c);
          m /= double(P);
          for (std::int64_t p = 0; p < P; ++p) {
            double const e = mean(p * C + c) - m;
            v += var(p * C + c) + e * e;
          }
          cm(c) = m, cv(c) = v / double(P);
        });
  }
  Kokkos::parallel_for(
      "ktr::data::feature_transform", Range(space, 0, D), KOKKOS_LAMBDA(std::int64_t f) {
        std::int64_t const i = pooled ? f % C : f;
        double const sd = stat_var(i) > 0 ? compat::sqrt(stat_var(i)) : 1.0;
        scale(f) = float(1.0 / sd);
        shift(f) = float(-stat_mean(i) / sd);
      });
  return norm;
}

std::int64_t steps_per_epoch(DeviceDataset const& data, std::int64_t batch) {
  KTR_REQUIRE(batch > 0 && batch <= data.count, "ktr::steps_per_epoch",
              "batch " + std::to_string(batch) + " must be in [1, " + std::to_string(data.count) + "]");
  return data.count / batch;
}

namespace {

using Team = Kokkos::TeamPolicy<ExecSpace>::member_type;

// Reads sample `src` of a strided (N, H, W, C) view into dst[0, H*W*C) row-major, transformed. On the host a
// contiguous sample (the layout every owned dataset has) takes a flat loop that vectorises.
template <class View>
struct SampleReader {
  View v;
  std::int64_t H, W, C;
  bool contiguous;  // a sample's elements are consecutive in memory, row-major
  float scale, shift;
  DeviceView<float*> fscale, fshift;
  bool per_feature;

  KOKKOS_INLINE_FUNCTION float at(std::int64_t f, float value) const {
    return per_feature ? value * fscale(f) + fshift(f) : value * scale + shift;
  }
  KOKKOS_INLINE_FUNCTION void read(std::int64_t src, float* KOKKOS_RESTRICT dst) const {
    if (contiguous) {
      auto const* KOKKOS_RESTRICT in = &v(src, 0, 0, 0);
      std::int64_t const n = H * W * C;
      if (per_feature) {
        for (std::int64_t f = 0; f < n; ++f) dst[f] = float(in[f]) * fscale(f) + fshift(f);
      } else {
        for (std::int64_t f = 0; f < n; ++f) dst[f] = float(in[f]) * scale + shift;
      }
      return;
    }
    std::int64_t f = 0;
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t w = 0; w < W; ++w)
        for (std::int64_t c = 0; c < C; ++c, ++f) dst[f] = at(f, float(v(src, h, w, c)));
  }
  // Asks the host's caches for a contiguous sample's lines (a no-op elsewhere).
  KOKKOS_INLINE_FUNCTION void prefetch(std::int64_t src) const {
#if defined(__GNUC__) && !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
    if (!contiguous) return;
    char const* p = reinterpret_cast<char const*>(&v(src, 0, 0, 0));
    std::int64_t const bytes = H * W * C * std::int64_t(sizeof(v(src, 0, 0, 0)));
    for (std::int64_t o = 0; o < bytes; o += 64) __builtin_prefetch(p + o);
#else
    (void)src;
#endif
  }
  // The team's threads share the sample's elements (GPU: coalesced when the sample is contiguous).
  KOKKOS_INLINE_FUNCTION void read(Team const& team, std::int64_t src, float* dst) const {
    std::int64_t const WC = W * C;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, H * WC),
                         [&](std::int64_t f) { dst[f] = at(f, float(v(src, f / WC, f / C % W, f % C))); });
  }
};

// Copies sample src's targets into row b of the batch.
struct TargetCopier {
  DeviceDataset::Labels labels;
  DeviceDataset::Values values;
  DeviceView<std::int32_t*> y;
  float* yv;
  std::int64_t T;
  bool want_labels, want_values;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t b, std::int64_t src) const {
    if (want_labels) y(b) = labels(src);
    if (want_values)
      for (std::int64_t t = 0; t < T; ++t) yv[b * T + t] = values(src, t);
  }
};

template <class T>
SampleReader<DeviceDataset::Strided4<T>> reader(DeviceDataset::Strided4<T> const& v, DeviceDataset const& d,
                                                Normalization const& norm) {
  bool const contiguous = v.stride(3) == 1 && std::int64_t(v.stride(2)) == d.channels &&
                          std::int64_t(v.stride(1)) == d.width * d.channels;
  return {v,
          d.height,
          d.width,
          d.channels,
          contiguous,
          norm.scale,
          norm.shift,
          norm.feature_scale,
          norm.feature_shift,
          norm.per_feature()};
}

template <class Reader, class IndexOf>
void gather_with(char const* label, ExecSpace const& space, DeviceDataset const& data, std::int64_t batch,
                 IndexOf index_of, Reader const& rd, Batch const& out) {
  float* x = out.x.data();
  std::int64_t const sample = data.sample_size();
  TargetCopier const targets{
      data.labels,
      data.values,
      out.labels,
      out.values.data(),
      data.target_kind == DeviceDataset::Targets::values ? std::int64_t(data.values.extent(1)) : 0,
      data.target_kind == DeviceDataset::Targets::labels && out.labels.extent(0) > 0,
      data.target_kind == DeviceDataset::Targets::values && out.values.size() > 0};
  if constexpr (device_is_host) {
    // Samples are scattered over the dataset, so each is a cold read: while one is converted, the next one's
    // cache lines are requested (a contiguous sample is a run of lines that the prefetch covers). Runs of
    // `chunk` samples per iteration, so that each sample's index is computed once.
    constexpr std::int64_t chunk = 8;
    Kokkos::parallel_for(
        label,
        Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, (batch + chunk - 1) / chunk),
        KOKKOS_LAMBDA(std::int64_t c) {
          std::int64_t const b0 = c * chunk, m = batch - b0 < chunk ? batch - b0 : chunk;
          std::int64_t src[chunk];
          for (std::int64_t i = 0; i < m; ++i) {
            src[i] = index_of(b0 + i);
            if (i == 0) rd.prefetch(src[0]);  // while the others' indices are computed
          }
          for (std::int64_t i = 0; i < m; ++i) {
            if (i + 1 < m) rd.prefetch(src[i + 1]);
            rd.read(src[i], x + (b0 + i) * sample);
            targets(b0 + i, src[i]);
          }
        });
  } else {
    Kokkos::parallel_for(
        label, Kokkos::TeamPolicy<ExecSpace>(space, static_cast<int>(batch), Kokkos::AUTO),
        KOKKOS_LAMBDA(Team const& team) {
          std::int64_t const b = team.league_rank();
          std::int64_t const src = index_of(b);
          rd.read(team, src, x + b * sample);
          Kokkos::single(Kokkos::PerTeam(team), [&] { targets(b, src); });
        });
  }
}

template <class IndexOf>
void gather(char const* label, ExecSpace const& space, DeviceDataset const& data, std::int64_t batch,
            IndexOf index_of, Normalization const& norm, Batch const& out) {
  KTR_REQUIRE(out.x.shape() == data.batch_shape(batch), label,
              "batch tensor " + out.x.shape().str() + " is not " + data.batch_shape(batch).str());
  KTR_REQUIRE(!norm.per_feature() || std::int64_t(norm.feature_scale.extent(0)) == data.sample_size(), label,
              "the input transform has " + std::to_string(norm.feature_scale.extent(0)) + " features, the data " +
                  std::to_string(data.sample_size()));
  if (out.labels.extent(0) > 0)
    KTR_REQUIRE(std::int64_t(out.labels.extent(0)) >= batch, label, "label buffer too small");
  if (out.values.size() > 0)
    KTR_REQUIRE(out.values.shape() == Shape({batch, data.target_width()}), label,
                "target buffer " + out.values.shape().str() + " does not hold (B, T)");
  if (data.feature_kind == DeviceDataset::Features::float32)
    gather_with(label, space, data, batch, index_of, reader(data.features, data, norm), out);
  else
    gather_with(label, space, data, batch, index_of, reader(data.pixels, data, norm), out);
}

}  // namespace

void gather_batch(ExecSpace const& space, DeviceDataset const& data, BatchCursor const& cursor,
                  Normalization const& norm, Batch const& out) {
  std::int64_t const batch = cursor.batch;
  std::int64_t const stride = cursor.stride > 0 ? cursor.stride : batch;
  std::int64_t const row = cursor.row;
  KTR_REQUIRE(row >= 0 && row + batch <= stride, "ktr::data::gather_batch",
              "rows [" + std::to_string(row) + ", " + std::to_string(row + batch) +
                  ") are not in a global batch of " + std::to_string(stride));
  std::int64_t const spe = steps_per_epoch(data, stride);
  auto step = cursor.step;
  std::int64_t const offset = cursor.offset;
  std::uint64_t const seed = cursor.seed;
  std::uint64_t const n = static_cast<std::uint64_t>(data.count);
  gather(
      "ktr::data::gather_batch", space, data, batch,
      KOKKOS_LAMBDA(std::int64_t b)->std::int64_t {
        std::int64_t const s = step() + offset;
        Permutation const perm(n, seed, static_cast<std::uint64_t>(s / spe));
        return static_cast<std::int64_t>(perm(static_cast<std::uint64_t>((s % spe) * stride + row + b)));
      },
      norm, out);
}

void gather_batch(ExecSpace const& space, DeviceDataset const& data, BatchCursor const& cursor,
                  Normalization const& norm, Tensor const& x, DeviceView<std::int32_t*> const& y) {
  gather_batch(space, data, cursor, norm, Batch{x, y, Tensor()});
}

void gather_range(ExecSpace const& space, DeviceDataset const& data, std::int64_t first, Normalization const& norm,
                  Batch const& out) {
  std::int64_t const batch = out.x.shape()[0];
  KTR_REQUIRE(first >= 0 && first + batch <= data.count, "ktr::data::gather_range",
              "range past the end of the data");
  gather(
      "ktr::data::gather_range", space, data, batch,
      KOKKOS_LAMBDA(std::int64_t b)->std::int64_t { return first + b; }, norm, out);
}

void gather_range(ExecSpace const& space, DeviceDataset const& data, std::int64_t first, Normalization const& norm,
                  Tensor const& x, DeviceView<std::int32_t*> const& y) {
  gather_range(space, data, first, norm, Batch{x, y, Tensor()});
}

void permutation(ExecSpace const& space, std::uint64_t seed, std::uint64_t epoch,
                 DeviceView<std::int64_t*> const& out) {
  std::uint64_t const n = out.extent(0);
  Kokkos::parallel_for(
      "ktr::data::permutation", Kokkos::RangePolicy<ExecSpace>(space, 0, n),
      KOKKOS_LAMBDA(std::uint64_t i) { out(i) = static_cast<std::int64_t>(Permutation(n, seed, epoch)(i)); });
}

}  // namespace ktr
