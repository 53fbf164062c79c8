// Elementwise kernels and reductions over flat device views. Each takes the execution space instance it runs on,
// launches one labelled kernel, and never fences: reductions write their result to a device scalar.
#pragma once

#include "types.hpp"

namespace ktr {

/// Runs body(begin, end) over [0, n) in one labelled kernel: contiguous chunks per thread on a host device (so the
/// body's loop vectorises, with scalars loaded once per chunk), one element per thread on a GPU (coalesced).
template <class Body>
void chunked_for(char const* label, ExecSpace const& space, std::int64_t n, Body const& body) {
  constexpr std::int64_t chunk = device_is_host ? 4096 : 1;
  Kokkos::parallel_for(
      label, Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, (n + chunk - 1) / chunk),
      KOKKOS_LAMBDA(std::int64_t c) { body(c * chunk, c * chunk + chunk < n ? c * chunk + chunk : n); });
}

/// Runs body(b, h, w) over a (B, H, W) grid of pixels: on a host device a row (b, h) per iteration with the w loop
/// inside (MDRange's tiles cost more than the work of a pixel's channel loop), one pixel per thread on a GPU.
template <class Body>
void for_pixels(char const* label, ExecSpace const& space, std::int64_t B, std::int64_t H, std::int64_t W,
                Body const& body) {
  if constexpr (device_is_host) {
    Kokkos::parallel_for(
        label, Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, B * H),
        KOKKOS_LAMBDA(std::int64_t r) {
          for (std::int64_t w = 0; w < W; ++w) body(r / H, r % H, w);
        });
  } else {
    Kokkos::parallel_for(
        label, MDRange<3>(space, {0, 0, 0}, {B, H, W}),
        KOKKOS_LAMBDA(std::int64_t b, std::int64_t h, std::int64_t w) { body(b, h, w); });
  }
}

/// x[i] = value
void fill(ExecSpace const& space, DeviceView<float*> const& x, float value);
/// y[i] += alpha * x[i]
void axpy(ExecSpace const& space, float alpha, DeviceView<const float*> const& x, DeviceView<float*> const& y);
/// x[i] *= alpha
void scale(ExecSpace const& space, float alpha, DeviceView<float*> const& x);
/// out = sum_i x[i]   (accumulated in double, written to device memory, no host synchronisation)
void sum(ExecSpace const& space, DeviceView<const float*> const& x, DeviceAccumulator const& out);
/// out = sum_i x[i]^2
void sum_squares(ExecSpace const& space, DeviceView<const float*> const& x, DeviceAccumulator const& out);

/// out[i] = the bfloat16 bits of in[i] rounded to nearest even (bf16_bits), in one kernel named `label`.
void to_bf16(char const* label, ExecSpace const& space, float const* in, std::int64_t n, std::uint16_t* out);

/// Reads a device scalar back (blocking; for tests and once-per-dispatch metrics).
float read_scalar(DeviceScalar const& s);
double read_scalar(DeviceAccumulator const& s);

}  // namespace ktr
