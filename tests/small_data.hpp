// A small learnable dataset for the training-loop tests: 10 classes of 8x8 uint8 images, class c brightens row
// c % 8 and column c / 2, with noise. Deterministic for a seed.
#pragma once

#include <ktr/data/dataset.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace ktr::test {

inline DeviceDataset small_dataset(std::int64_t n, std::uint32_t seed, std::string const& name = "small") {
  std::mt19937 rng(seed);
  std::vector<std::uint8_t> px(static_cast<std::size_t>(n * 64)), lb(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    int const c = int(rng() % 10);
    lb[std::size_t(i)] = std::uint8_t(c);
    for (int p = 0; p < 64; ++p) {
      int const row = p / 8, col = p % 8;
      int const v = int(rng() % 60) + ((row == c % 8) ? 150 : 0) + ((col == c / 2) ? 90 : 0);
      px[std::size_t(i * 64 + p)] = std::uint8_t(std::min(v, 255));
    }
  }
  return make_device_dataset(px, lb, n, 8, 8, 1, 10, name);
}

}  // namespace ktr::test
