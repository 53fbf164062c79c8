// Pack<W>: W floats handled element-wise, for kernels that vectorise over a compile-time tile of channels.
//
// The portable definition is a plain array with loops. Host compilers keep such arrays in memory when they are
// accumulated in a loop with a runtime trip count (GCC vectorises the element loop but does not promote the
// array to registers), so for host code built by GCC or Clang Pack<8> is a generic vector type of the compiler
// (a vector_size attribute, not an instruction-set intrinsic: it lowers to whatever the target has). Device code
// (CUDA, HIP) always gets the plain array, which lives in registers there; the host pass of a CUDA/HIP build gets
// the vector type (its functions are still marked host + device, as the lambdas that call them are). Where the
// build targets AVX-512, Pack<16> is one such vector too (host_pack_width says which is widest).
#pragma once

#include "../core/bf16.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace ktr::impl {

template <int W, class Enable = void>
struct Pack {
  float v[W];
  static KOKKOS_INLINE_FUNCTION Pack load(float const* p) {
    Pack r;
    for (int i = 0; i < W; ++i) r.v[i] = p[i];
    return r;
  }
  static KOKKOS_INLINE_FUNCTION Pack zero() { return Pack::fill(0.0f); }
  static KOKKOS_INLINE_FUNCTION Pack fill(float x) {
    Pack r;
    for (int i = 0; i < W; ++i) r.v[i] = x;
    return r;
  }
  KOKKOS_INLINE_FUNCTION void store(float* p) const {
    for (int i = 0; i < W; ++i) p[i] = v[i];
  }
  /// this += x * w
  KOKKOS_INLINE_FUNCTION void fma(float x, Pack const& w) {
    for (int i = 0; i < W; ++i) v[i] += x * w.v[i];
  }
  /// this += a * b, element-wise
  KOKKOS_INLINE_FUNCTION void fma(Pack const& a, Pack const& b) {
    for (int i = 0; i < W; ++i) v[i] += a.v[i] * b.v[i];
  }
  KOKKOS_INLINE_FUNCTION void add(Pack const& a) {
    for (int i = 0; i < W; ++i) v[i] += a.v[i];
  }
  /// The sum of the elements, pairwise (the same order for every W-wide type).
  KOKKOS_INLINE_FUNCTION float sum() const {
    float t[W];
    for (int i = 0; i < W; ++i) t[i] = v[i];
    for (int h = W / 2; h > 0; h /= 2)
      for (int i = 0; i < h; ++i) t[i] += t[i + h];
    return t[0];
  }
  /// this += max(a, 0)
  KOKKOS_INLINE_FUNCTION void add_relu(Pack const& a) {
    for (int i = 0; i < W; ++i) v[i] += a.v[i] > 0.0f ? a.v[i] : 0.0f;
  }
  KOKKOS_INLINE_FUNCTION Pack scaled(float s) const {
    Pack r;
    for (int i = 0; i < W; ++i) r.v[i] = s * v[i];
    return r;
  }
  /// a where z > 0, else 0
  static KOKKOS_INLINE_FUNCTION Pack where_positive(Pack const& z, Pack const& a) {
    Pack r;
    for (int i = 0; i < W; ++i) r.v[i] = z.v[i] > 0.0f ? a.v[i] : 0.0f;
    return r;
  }
  /// Every element rounded to bfloat16 (round_to_bf16).
  KOKKOS_INLINE_FUNCTION Pack bf16() const {
    Pack r;
    for (int i = 0; i < W; ++i) r.v[i] = round_to_bf16(v[i]);
    return r;
  }
};

#if (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
#define KTR_PACK_VECTOR_TYPES 1
#endif

/// The widest pack the host's vector registers hold: 16 floats where a host-only build targets AVX-512
/// (Kokkos_ARCH_SKX and later), else 8 (AVX2). GPU builds keep 8 in both compiler passes, so that the host and
/// device passes instantiate the same kernels.
#if defined(KTR_PACK_VECTOR_TYPES) && defined(__AVX512F__) && !defined(KOKKOS_ENABLE_CUDA) && \
    !defined(KOKKOS_ENABLE_HIP)
constexpr int host_pack_width = 16;
#else
constexpr int host_pack_width = 8;
#endif

#if defined(KTR_PACK_VECTOR_TYPES)
template <int W>
struct Pack<W, std::enable_if_t<W == 8 || W == 16>> {
  typedef float V __attribute__((vector_size(4 * W)));
  V v;
  static KOKKOS_INLINE_FUNCTION Pack load(float const* p) {
    Pack r;
    __builtin_memcpy(&r.v, p, sizeof(V));
    return r;
  }
  static KOKKOS_INLINE_FUNCTION Pack zero() { return Pack{V{}}; }
  static KOKKOS_INLINE_FUNCTION Pack fill(float x) { return Pack{V{} + x}; }
  KOKKOS_INLINE_FUNCTION void store(float* p) const { __builtin_memcpy(p, &v, sizeof(V)); }
  KOKKOS_INLINE_FUNCTION void fma(float x, Pack const& w) { v += x * w.v; }
  KOKKOS_INLINE_FUNCTION void fma(Pack const& a, Pack const& b) { v += a.v * b.v; }
  KOKKOS_INLINE_FUNCTION void add(Pack const& a) { v += a.v; }
  KOKKOS_INLINE_FUNCTION float sum() const {
    float t[W];
    __builtin_memcpy(t, &v, sizeof(V));
    for (int h = W / 2; h > 0; h /= 2)
      for (int i = 0; i < h; ++i) t[i] += t[i + h];
    return t[0];
  }
  KOKKOS_INLINE_FUNCTION void add_relu(Pack const& a) { v += a.v > 0.0f ? a.v : V{}; }
  KOKKOS_INLINE_FUNCTION Pack scaled(float s) const { return Pack{s * v}; }
  static KOKKOS_INLINE_FUNCTION Pack where_positive(Pack const& z, Pack const& a) {
    return Pack{z.v > 0.0f ? a.v : V{}};
  }
  /// Every element rounded to bfloat16 (round_to_bf16, as integer vector operations).
  KOKKOS_INLINE_FUNCTION Pack bf16() const {
    typedef std::uint32_t U __attribute__((vector_size(4 * W)));
    typedef std::int32_t M __attribute__((vector_size(4 * W)));
    U u;
    __builtin_memcpy(&u, &v, sizeof(V));
    U const rounded = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    U const quiet = (u | 0x00400000u) & 0xffff0000u;  // NaN stays NaN
    U const nan = U(M(v != v));
    U const out = (nan & quiet) | (~nan & rounded);
    Pack r;
    __builtin_memcpy(&r.v, &out, sizeof(V));
    return r;
  }
};
#endif

/// x, or x rounded to bfloat16 where R (a kernel instantiated for bf16 inputs).
template <bool R, int W>
KOKKOS_INLINE_FUNCTION Pack<W> bf16_if(Pack<W> const& x) {
  if constexpr (R)
    return x.bf16();
  else
    return x;
}
template <bool R>
KOKKOS_INLINE_FUNCTION float bf16_if(float x) {
  if constexpr (R)
    return round_to_bf16(x);
  else
    return x;
}

}  // namespace ktr::impl
