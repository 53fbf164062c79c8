// Device data pipeline: the permutation is a bijection and deterministic, the gather matches a host reference,
// and shuffling + gathering across epochs copies and allocates nothing.
#include <ktr/backends/tools_counter.hpp>
#include <ktr/core/error.hpp>
#include <ktr/core/permutation.hpp>
#include <ktr/data/dataset.hpp>
#include <ktr/train/session.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <type_traits>

namespace {

using ktr::DeviceDataset;

DeviceDataset synthetic(std::int64_t n, std::int64_t h, std::int64_t w, std::vector<std::uint8_t>& pixels,
                        std::vector<std::uint8_t>& labels) {
  std::mt19937 rng(42);
  pixels.resize(std::size_t(n * h * w));
  labels.resize(std::size_t(n));
  for (auto& p : pixels) p = std::uint8_t(rng() % 256);
  for (auto& l : labels) l = std::uint8_t(rng() % 10);
  return ktr::make_device_dataset(pixels, labels, n, h, w, 1, 10, "synthetic");
}

std::vector<std::int64_t> device_permutation(std::int64_t n, std::uint64_t seed, std::uint64_t epoch) {
  ktr::DeviceView<std::int64_t*> out("ktr::test::perm", std::size_t(n));
  ktr::permutation(ktr::ExecSpace(), seed, epoch, out);
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  return std::vector<std::int64_t>(host.data(), host.data() + n);
}

void set_step(Kokkos::View<std::int64_t, ktr::MemSpace> const& step, std::int64_t value) {
  Kokkos::deep_copy(step, value);
}

// A free function: CUDA forbids extended lambdas inside a TEST body (a private member function).
void advance(ktr::ExecSpace const& space, Kokkos::View<std::int64_t, ktr::MemSpace> const& step) {
  Kokkos::parallel_for(
      "ktr::test::advance", Kokkos::RangePolicy<ktr::ExecSpace>(space, 0, 1), KOKKOS_LAMBDA(int) { step() += 1; });
}

TEST(Permutation, IsABijectionForManySizes) {
  for (std::int64_t n : {1, 2, 3, 7, 64, 1000, 4097, 60000, 65537}) {
    for (std::uint64_t seed : {0ull, 1ull, 12345ull}) {
      auto p = device_permutation(n, seed, 3);
      std::vector<std::int64_t> sorted = p;
      std::sort(sorted.begin(), sorted.end());
      for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(sorted[std::size_t(i)], i) << "n=" << n << " seed=" << seed;
    }
  }
}

TEST(Permutation, DeterministicAndEqualOnHostAndDevice) {
  std::int64_t const n = 60000;
  auto a = device_permutation(n, 7, 2), b = device_permutation(n, 7, 2);
  EXPECT_EQ(a, b);
  ktr::Permutation host(n, 7, 2);
  for (std::int64_t i = 0; i < n; i += 997) EXPECT_EQ(std::int64_t(host(std::uint64_t(i))), a[std::size_t(i)]);
  // other epochs and seeds give other orders, and the order is not close to the identity
  EXPECT_NE(a, device_permutation(n, 7, 3));
  EXPECT_NE(a, device_permutation(n, 8, 2));
  std::int64_t fixed = 0;
  for (std::int64_t i = 0; i < n; ++i) fixed += a[std::size_t(i)] == i;
  EXPECT_LT(fixed, 20);
}

TEST(Dataset, DeviceBytesAreUint8) {
  std::vector<std::uint8_t> px, lb;
  auto d = synthetic(100, 28, 28, px, lb);
  EXPECT_EQ(d.device_bytes(), 100 * 784 + 100 * 4);
  EXPECT_EQ(d.pixels.size(), 100u * 784u);
  EXPECT_THROW(ktr::make_device_dataset(px, std::vector<std::uint8_t>(100, 10), 100, 28, 28, 1, 10, "bad"),
               ktr::Error);
}

TEST(Dataset, GatherBatchMatchesHostReferenceAcrossEpochs) {
  std::vector<std::uint8_t> px, lb;
  std::int64_t const n = 103, H = 4, W = 3, B = 10;
  auto d = synthetic(n, H, W, px, lb);
  std::int64_t const spe = ktr::steps_per_epoch(d, B);
  EXPECT_EQ(spe, 10);  // the last 3 samples of each epoch's order are dropped
  ktr::BatchCursor cursor{Kokkos::View<std::int64_t, ktr::MemSpace>("ktr::test::step"), 0, 99, B};
  auto norm = ktr::InputTransform::standardized(0.5f, 0.25f);
  ktr::Tensor x("ktr::test::x", d.batch_shape(B));
  ktr::DeviceView<std::int32_t*> y("ktr::test::y", B);
  for (std::int64_t step : {0, 7, 9, 10, 25}) {
    for (std::int64_t offset : {0, 1}) {
      set_step(cursor.step, step);
      cursor.offset = offset;
      ktr::gather_batch(ktr::ExecSpace(), d, cursor, norm, x, y);
      auto hx = ktr::to_host(x);
      auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
      std::int64_t const s = step + offset;
      ktr::Permutation perm(n, 99, std::uint64_t(s / spe));
      for (std::int64_t b = 0; b < B; ++b) {
        std::int64_t const src = std::int64_t(perm(std::uint64_t((s % spe) * B + b)));
        ASSERT_EQ(hy(b), lb[std::size_t(src)]) << "step " << s << " row " << b;
        for (std::int64_t p = 0; p < H * W; ++p)
          ASSERT_NEAR(hx[std::size_t(b * H * W + p)], (px[std::size_t(src * H * W + p)] / 255.0 - 0.5) / 0.25,
                      1e-5);
      }
    }
  }
}

TEST(Dataset, OneEpochVisitsDistinctSamples) {
  std::vector<std::uint8_t> px, lb;
  std::int64_t const n = 64, B = 8;
  auto d = synthetic(n, 2, 2, px, lb);
  // Make every image unique: pixel 0 = index.
  for (std::int64_t i = 0; i < n; ++i) px[std::size_t(i * 4)] = std::uint8_t(i);
  d = ktr::make_device_dataset(px, lb, n, 2, 2, 1, 10, "unique");
  ktr::BatchCursor cursor{Kokkos::View<std::int64_t, ktr::MemSpace>("ktr::test::step"), 0, 5, B};
  ktr::Tensor x("ktr::test::x", d.batch_shape(B));
  ktr::DeviceView<std::int32_t*> y("ktr::test::y", B);
  std::vector<int> seen(n, 0);
  for (std::int64_t step = 0; step < n / B; ++step) {
    set_step(cursor.step, step);
    ktr::gather_batch(ktr::ExecSpace(), d, cursor, ktr::InputTransform{1.0f, 0.0f}, x, y);
    auto hx = ktr::to_host(x);
    for (std::int64_t b = 0; b < B; ++b) ++seen[std::size_t(hx[std::size_t(b * 4)])];
  }
  for (int s : seen) EXPECT_EQ(s, 1);
}

TEST(Dataset, PixelStatisticsMatchHost) {
  std::vector<std::uint8_t> px, lb;
  auto d = synthetic(300, 5, 7, px, lb);
  auto const stats = ktr::pixel_statistics(ktr::ExecSpace(), d);
  double sum = 0, sq = 0;
  for (auto p : px) sum += p / 255.0, sq += (p / 255.0) * (p / 255.0);
  double const mean = sum / double(px.size());
  EXPECT_NEAR(stats.mean, mean, 1e-12);
  EXPECT_NEAR(stats.std, std::sqrt(sq / double(px.size()) - mean * mean), 1e-9);
  auto const norm = ktr::InputTransform::standardized(float(stats.mean), float(stats.std));
  EXPECT_NEAR(0 * norm.scale + norm.shift, -stats.mean / stats.std, 1e-5);
  EXPECT_NEAR(255 * norm.scale + norm.shift, (1 - stats.mean) / stats.std, 1e-5);
}

TEST(Dataset, GatherRangeIsContiguous) {
  std::vector<std::uint8_t> px, lb;
  auto d = synthetic(20, 2, 2, px, lb);
  ktr::Tensor x("ktr::test::x", d.batch_shape(3));
  ktr::DeviceView<std::int32_t*> y("ktr::test::y", 3);
  ktr::gather_range(ktr::ExecSpace(), d, 17, ktr::InputTransform{}, x, y);
  auto hx = ktr::to_host(x);
  auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
  for (int b = 0; b < 3; ++b) {
    EXPECT_EQ(hy(b), lb[std::size_t(17 + b)]);
    EXPECT_FLOAT_EQ(hx[std::size_t(b * 4 + 1)], px[std::size_t((17 + b) * 4 + 1)] / 255.0f);
  }
  EXPECT_THROW(ktr::gather_range(ktr::ExecSpace(), d, 18, ktr::InputTransform{}, x, y), ktr::Error);
}

TEST(Dataset, ShufflingAndGatheringAcrossEpochsCopiesAndAllocatesNothing) {
  std::vector<std::uint8_t> px, lb;
  std::int64_t const n = 500, B = 32;
  auto d = synthetic(n, 28, 28, px, lb);
  ktr::BatchCursor cursor{Kokkos::View<std::int64_t, ktr::MemSpace>("ktr::test::step"), 0, 1, B};
  ktr::Tensor x("ktr::test::x", d.batch_shape(B));
  ktr::DeviceView<std::int32_t*> y("ktr::test::y", B);
  auto step = cursor.step;
  ktr::ExecSpace space;
  std::int64_t const steps = 4 * ktr::steps_per_epoch(d, B);         // four epochs, four permutations
  ktr::gather_batch(space, d, cursor, ktr::InputTransform{}, x, y);  // warm-up: Kokkos sizes team scratch once
  Kokkos::deep_copy(step, 0);
  {
    ktr::ToolsCounter counter;
    for (std::int64_t s = 0; s < steps; ++s) {
      ktr::gather_batch(space, d, cursor, ktr::InputTransform{}, x, y);
      advance(space, step);
    }
    space.fence();
    EXPECT_EQ(counter.deep_copies(), 0) << (counter.events().empty() ? "" : counter.events().front());
    EXPECT_EQ(counter.allocations(), 0) << (counter.events().empty() ? "" : counter.events().front());
    EXPECT_EQ(counter.kernels(), 2 * steps);
  }
  std::int64_t host_step = 0;
  Kokkos::deep_copy(host_step, step);
  EXPECT_EQ(host_step, steps);
}

}  // namespace

// The 0.1 names of the input transform stay usable (code written against ktr 0.1 keeps compiling).
TEST(Dataset, TheNamesOfKtr01StillNameTheInputTransform) {
  static_assert(std::is_same<ktr::Normalization, ktr::InputTransform>::value, "Normalization");
  static_assert(std::is_same<ktr::NormalizeMode, ktr::InputTransformMode>::value, "NormalizeMode");
  ktr::RunConfig config;
  config.normalize = ktr::NormalizeMode::none;
  EXPECT_EQ(config.normalize, ktr::InputTransformMode::none);
}
