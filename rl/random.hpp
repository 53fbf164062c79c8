// Counter-based random numbers for the reinforcement-learning kernels: every draw is a pure function of (key,
// counter), so a run replays, and a checkpoint that keeps the counters resumes, bit for bit on every backend.
#pragma once

#include "../backends/kokkos_compat.hpp"
#include "../core/permutation.hpp"

#include <cstdint>

namespace ktr::rl {

/// A uniform draw in [0, 1) (53 bits).
KOKKOS_INLINE_FUNCTION double uniform01(std::uint64_t key, std::uint64_t i) {
  return double(mix64(key ^ mix64(i)) >> 11) * (1.0 / 9007199254740992.0);
}

/// A standard normal draw (Box-Muller on two hashes of (key, i)).
KOKKOS_INLINE_FUNCTION float standard_normal(std::uint64_t key, std::uint64_t i) {
  double const u1 = (double(mix64(key ^ mix64(2 * i)) >> 11) + 1.0) * (1.0 / 9007199254740993.0);  // (0, 1]
  double const u2 = double(mix64(key ^ mix64(2 * i + 1)) >> 11) * (1.0 / 9007199254740992.0);      // [0, 1)
  return static_cast<float>(compat::sqrt(-2.0 * compat::log(u1)) * compat::cos(6.283185307179586 * u2));
}

/// The key of stream `stream` of a system seeded with `seed`: draws of different purposes never share counters.
inline std::uint64_t stream_key(std::uint64_t seed, std::uint64_t stream) {
  return mix64(seed ^ mix64(0x6A09E667F3BCC909ull + stream));
}

}  // namespace ktr::rl
