// The standard normal distribution's cdf Phi(z) and e^{-z^2/2} in float, branch-free so that the kernels' loops
// vectorise (libm's erff and expf do not): gelu's forward z Phi(z) and its derivative Phi(z) + z phi(z).
//
// ktr's own fits (least squares with relative weights, refined towards the minimax error, in double):
//   erf(t) / t       as a polynomial of degree 5 in t^2      for t = |z| / sqrt 2 below 0.84375 (2.3e-8 relative),
//   erfc(t) e^{t^2}  as s P(s), P of degree 8, s = 1 / (1 + t / 2), from 0.84375 to 9.3 (1.6e-8 relative),
// and e^x by its Taylor series to x^7 after x = k ln 2 + r, |r| <= ln 2 / 2 (within 2 ulp). Evaluated in float:
// Phi within 2e-6 relative for z > -13 (its tail from erfc, not from 1 + erf's cancellation), gelu within 1.2e-6
// relative wherever |gelu(z)| > 1e-3, where 0.5 z (1 + erff(z / sqrt 2)) is within 5e-5.
#pragma once

#include "../backends/kokkos_compat.hpp"

#include <cstdint>

namespace ktr::act {

// c ? a : b on the bits. GCC moves a float operation whose result only one side of a select needs into that
// side, where it may trap (-ftrapping-math), and then keeps the branch; a loop with a branch does not vectorise.
// Both sides used as integers, nothing moves.
KOKKOS_FORCEINLINE_FUNCTION float pick(bool c, float a, float b) {
  std::uint32_t ua, ub;
  __builtin_memcpy(&ua, &a, sizeof ua);
  __builtin_memcpy(&ub, &b, sizeof ub);
  std::uint32_t const mask = 0u - std::uint32_t(c);
  std::uint32_t const u = (ua & mask) | (ub & ~mask);
  float y;
  __builtin_memcpy(&y, &u, sizeof y);
  return y;
}

/// e^x for x <= 88 (e^88 above; 0 below -87.34, where e^x leaves float's normal range, and for NaN).
KOKKOS_FORCEINLINE_FUNCTION float exp_branchless(float x) {
  // No select feeds arithmetic (GCC splits the paths of one that does): the clamp picks bits (NaN: -87.34; fmaxf
  // does not vectorise), the rounding of kf in [-126, 127] is a truncation of a positive number.
  float const c = pick(x < 88.0f, pick(x > -87.33654f, x, -87.33654f), 88.0f);
  float const kf = c * 1.44269504088896341f;
  std::int32_t const k = std::int32_t(kf + 128.5f) - 128;  // round(x / ln 2)
  float const n = float(k);
  float const r = (c - n * 0.693359375f) - n * -2.12194440054690583e-4f;  // ln 2 in two parts: n ln2_hi is exact
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  std::int32_t const bits = (k + 127) << 23;  // 2^k, k in [-126, 127]
  float scale;
  __builtin_memcpy(&scale, &bits, sizeof scale);
  return pick(x >= -87.33654f, p * scale, 0.0f);
}

/// Phi(z) = erfc(-z / sqrt 2) / 2, and in `gauss` e^{-z^2/2} (= phi(z) sqrt(2 pi)).
KOKKOS_FORCEINLINE_FUNCTION float normal_cdf(float z, float& gauss) {
  float const t = compat::fabs(z) * 0.707106781186547524f;
  float const t2 = t * t;
  float e = -6.512429682e-04f;  // erf(t) / t, a polynomial in t^2
  e = e * t2 + 5.084715784e-03f;
  e = e * t2 + -2.682259865e-02f;
  e = e * t2 + 1.128320694e-01f;
  e = e * t2 + -3.761261404e-01f;
  e = e * t2 + 1.128379226e+00f;
  float const s = 1.0f / (1.0f + 0.5f * t);
  float q = -4.231637344e-02f;  // erfc(t) e^{t^2} / s, a polynomial in s
  q = q * s + 2.326892167e-01f;
  q = q * s + -4.214033484e-01f;
  q = q * s + 2.344296575e-01f;
  q = q * s + -1.075944025e-02f;
  q = q * s + 1.997820735e-01f;
  q = q * s + 2.432500869e-01f;
  q = q * s + 2.824019194e-01f;
  q = q * s + 2.820834816e-01f;
  gauss = exp_branchless(-t2);
  float const half_erfc = 0.5f * pick(t < 0.84375f, 1.0f - t * e, gauss * (s * q));
  return pick(z >= 0.0f, 1.0f - half_erfc, half_erfc);
}

}  // namespace ktr::act
