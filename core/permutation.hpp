// A seeded bijection on [0, n), evaluated anywhere (host or device) without materialising it: a keyed Feistel
// network on the smallest even number of bits that covers n, with cycle-walking back into [0, n).
//
// Why it is a bijection: each Feistel round (L, R) -> (R, L ^ F(R)) is invertible whatever F is, so the network
// permutes [0, 2^(2h)); cycle-walking (re-encrypting until the value falls inside [0, n)) restricts a
// permutation of a superset to a permutation of the subset, because following the cycle from x in [0, n) always
// reaches the next member of [0, n) on that cycle. Since 2^(2h) < 4n, a walk takes fewer than 4 steps on average.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace ktr {

/// splitmix64: the 64-bit finaliser used to derive keys and round values.
KOKKOS_INLINE_FUNCTION std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

class Permutation {
 public:
  static constexpr int rounds = 6;

  /// The permutation of [0, n) for a given seed and epoch (a new order each epoch).
  KOKKOS_INLINE_FUNCTION Permutation(std::uint64_t n, std::uint64_t seed, std::uint64_t epoch) : n_(n) {
    int bits = 1;
    while (bits < 62 && (std::uint64_t(1) << bits) < n) ++bits;
    half_ = (bits + 1) / 2;
    mask_ = (std::uint64_t(1) << half_) - 1;
    std::uint64_t k = mix64(seed ^ mix64(epoch + 0x5851F42D4C957F2Dull));
    for (int r = 0; r < rounds; ++r) keys_[r] = k = mix64(k + std::uint64_t(r));
  }

  /// The image of i (0 <= i < n).
  KOKKOS_INLINE_FUNCTION std::uint64_t operator()(std::uint64_t i) const {
    std::uint64_t x = i;
    do {
      x = encrypt(x);
    } while (x >= n_);
    return x;
  }

  KOKKOS_INLINE_FUNCTION std::uint64_t size() const { return n_; }

 private:
  KOKKOS_INLINE_FUNCTION std::uint64_t encrypt(std::uint64_t x) const {
    std::uint64_t left = x >> half_, right = x & mask_;
    for (int r = 0; r < rounds; ++r) {
      std::uint64_t const f = mix64(right ^ keys_[r]) & mask_;
      std::uint64_t const next = left ^ f;
      left = right;
      right = next;
    }
    return (left << half_) | right;
  }

  std::uint64_t n_;
  int half_ = 1;
  std::uint64_t mask_ = 1;
  std::uint64_t keys_[rounds] = {};
};

}  // namespace ktr
