// bfloat16 rounding, shared by the bf16 gemm paths and the layers' own kernels (mixed precision rounds the inputs
// of every matmul and convolution to bf16, whichever kernel computes it).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace ktr {

/// Rounds to the nearest bfloat16 (ties to even), returned as the float it represents: what every kernel does to
/// the inputs of its products under bf16 precision (NaN stays NaN; a value beyond bf16's range becomes infinite).
KOKKOS_INLINE_FUNCTION float round_to_bf16(float x) {
  std::uint32_t u;
  __builtin_memcpy(&u, &x, sizeof u);
  std::uint32_t const r = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  std::uint32_t const out = x != x ? (u | 0x00400000u) & 0xffff0000u : r;
  float y;
  __builtin_memcpy(&y, &out, sizeof y);
  return y;
}

/// The bfloat16 bits of x rounded as round_to_bf16 does (the upper half of the rounded float): what a bf16
/// gemm's operand copies hold.
KOKKOS_INLINE_FUNCTION std::uint16_t bf16_bits(float x) {
  float const r = round_to_bf16(x);
  std::uint32_t u;
  __builtin_memcpy(&u, &r, sizeof u);
  return std::uint16_t(u >> 16);
}

}  // namespace ktr
