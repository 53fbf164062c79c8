// Elementwise kernels and reductions over flat device views.
#include "ops.hpp"

#include "bf16.hpp"

namespace ktr {

namespace {
using Range = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;

Range range(ExecSpace const& space, std::size_t n) { return Range(space, 0, static_cast<std::int64_t>(n)); }

}  // namespace

void fill(ExecSpace const& space, DeviceView<float*> const& x, float value) {
  Kokkos::parallel_for(
      "ktr::ops::fill", range(space, x.extent(0)), KOKKOS_LAMBDA(std::int64_t i) { x(i) = value; });
}

void axpy(ExecSpace const& space, float alpha, DeviceView<const float*> const& x, DeviceView<float*> const& y) {
  Kokkos::parallel_for(
      "ktr::ops::axpy", range(space, y.extent(0)), KOKKOS_LAMBDA(std::int64_t i) { y(i) += alpha * x(i); });
}

void scale(ExecSpace const& space, float alpha, DeviceView<float*> const& x) {
  Kokkos::parallel_for(
      "ktr::ops::scale", range(space, x.extent(0)), KOKKOS_LAMBDA(std::int64_t i) { x(i) *= alpha; });
}

void to_bf16(char const* label, ExecSpace const& space, float const* in, std::int64_t n, std::uint16_t* out) {
  chunked_for(
      label, space, n, KOKKOS_LAMBDA(std::int64_t begin, std::int64_t end) {
        for (std::int64_t i = begin; i < end; ++i) out[i] = bf16_bits(in[i]);
      });
}

void sum(ExecSpace const& space, DeviceView<const float*> const& x, DeviceAccumulator const& out) {
  Kokkos::parallel_reduce(
      "ktr::ops::sum", range(space, x.extent(0)), KOKKOS_LAMBDA(std::int64_t i, double& s) { s += x(i); }, out);
}

void sum_squares(ExecSpace const& space, DeviceView<const float*> const& x, DeviceAccumulator const& out) {
  // Hosts: chunks of 4096 per iteration, 8 independent double lanes (the loop vectorises without reassociating
  // anything); GPUs: one element per thread. Every optimiser update runs this over the gradient arena.
  constexpr std::int64_t chunk = device_is_host ? 4096 : 1;
  std::int64_t const n = std::int64_t(x.extent(0));
  float const* const p = x.data();
  Kokkos::parallel_reduce(
      "ktr::ops::sum_squares", range(space, (n + chunk - 1) / chunk),
      KOKKOS_LAMBDA(std::int64_t c, double& s) {
        std::int64_t const begin = c * chunk, end = begin + chunk < n ? begin + chunk : n;
        constexpr int L = 8;
        double lane[L] = {};
        std::int64_t i = begin;
        for (; i + L <= end; i += L)
          for (int l = 0; l < L; ++l) lane[l] += double(p[i + l]) * double(p[i + l]);
        for (; i < end; ++i) lane[0] += double(p[i]) * double(p[i]);
        double total = 0;
        for (int l = 0; l < L; ++l) total += lane[l];
        s += total;
      },
      out);
}

float read_scalar(DeviceScalar const& s) {
  float v = 0;
  Kokkos::deep_copy(v, s);
  return v;
}

double read_scalar(DeviceAccumulator const& s) {
  double v = 0;
  Kokkos::deep_copy(v, s);
  return v;
}

}  // namespace ktr
