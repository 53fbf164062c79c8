// The hot path: a batch (or a range) gathered from the device dataset through the input transform, and the
// epoch's permutation.
#include "dataset.hpp"

#include "../core/error.hpp"
#include "../core/permutation.hpp"

namespace ktr {

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
                                                InputTransform const& norm) {
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
            IndexOf index_of, InputTransform const& norm, Batch const& out) {
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
                  InputTransform const& norm, Batch const& out) {
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
                  InputTransform const& norm, Tensor const& x, DeviceView<std::int32_t*> const& y) {
  gather_batch(space, data, cursor, norm, Batch{x, y, Tensor()});
}

void gather_range(ExecSpace const& space, DeviceDataset const& data, std::int64_t first,
                  InputTransform const& norm, Batch const& out) {
  std::int64_t const batch = out.x.shape()[0];
  KTR_REQUIRE(first >= 0 && first + batch <= data.count, "ktr::data::gather_range",
              "range past the end of the data");
  gather(
      "ktr::data::gather_range", space, data, batch,
      KOKKOS_LAMBDA(std::int64_t b)->std::int64_t { return first + b; }, norm, out);
}

void gather_range(ExecSpace const& space, DeviceDataset const& data, std::int64_t first,
                  InputTransform const& norm, Tensor const& x, DeviceView<std::int32_t*> const& y) {
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
