// SAC's squashed Gaussian as the kernels read it (rl/sac.cpp, off_policy.cpp's predict): internal to rl/.
#pragma once

#include "../backends/kokkos_compat.hpp"
#include "../core/types.hpp"

#include <cstdint>

namespace ktr::rl {

/// A policy's output as a Gaussian per action value: row b's means at out[b * stride + j], its log sigmas at
/// out[b * stride + A + j] (state-dependent) or free_log_sigma[j].
struct Squashed {
  float const* out = nullptr;
  std::int64_t stride = 0, A = 0;
  float const* free_log_sigma = nullptr;
  KOKKOS_INLINE_FUNCTION float mean(std::int64_t b, std::int64_t j) const { return out[b * stride + j]; }
  KOKKOS_INLINE_FUNCTION float log_sigma(std::int64_t b, std::int64_t j) const {
    return free_log_sigma ? free_log_sigma[j] : out[b * stride + A + j];
  }
};

constexpr float kLogSigmaMin = -20.0f, kLogSigmaMax = 2.0f;

/// log(1 - tanh(u)^2), stably: 2 (log 2 - u - softplus(-2u)).
KOKKOS_INLINE_FUNCTION float log1m_tanh2(float u) {
  float const x = -2.0f * u;
  float const softplus = x > 20.0f ? x : float(compat::log1p(compat::exp(x)));
  return 2.0f * (0.69314718f - u - softplus);
}

}  // namespace ktr::rl
