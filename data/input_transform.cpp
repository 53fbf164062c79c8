// The input transform: pixel statistics, the transform fitted on a dataset, its modes' names.
#include "dataset.hpp"

#include "../backends/kokkos_compat.hpp"
#include "../core/error.hpp"
#include "../core/parse.hpp"

#include <cmath>

namespace ktr {

InputTransform InputTransform::standardized(float mean, float std) {
  KTR_REQUIRE(std > 0, "ktr::InputTransform", "std must be positive");
  InputTransform n;
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

char const* input_transform_mode_name(InputTransformMode mode) {
  switch (mode) {
    case InputTransformMode::standard:
      return "standard";
    case InputTransformMode::unit:
      return "unit";
    case InputTransformMode::none:
      return "none";
    case InputTransformMode::recorded:
      return "recorded";
  }
  return "?";
}

InputTransformMode parse_input_transform_mode(std::string const& name) {
  for (InputTransformMode m : {InputTransformMode::standard, InputTransformMode::unit, InputTransformMode::none,
                               InputTransformMode::recorded})
    if (name == input_transform_mode_name(m)) return m;
  throw UsageError("normalisation mode '" + escaped(name) + "': must be standard, unit, none or recorded");
}

InputTransform fit_input_transform(ExecSpace const& space, DeviceDataset const& data, InputTransformMode mode) {
  KTR_REQUIRE(mode != InputTransformMode::recorded, "ktr::fit_input_transform",
              "a recorded transform comes with its model and is not fitted");
  if (mode == InputTransformMode::none) return InputTransform::identity();
  if (data.feature_kind == DeviceDataset::Features::uint8) {
    if (mode == InputTransformMode::unit) return InputTransform{};
    PixelStatistics const stats = pixel_statistics(space, data);
    return InputTransform::standardized(float(stats.mean), float(stats.std));
  }
  if (mode == InputTransformMode::unit) return InputTransform::identity();
  std::int64_t const D = data.sample_size(), N = data.count, H = data.height, W = data.width, C = data.channels;
  InputTransform norm = InputTransform::identity();
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

}  // namespace ktr
