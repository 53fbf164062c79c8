// KernelTimer: every outermost kernel and region is timed under its label, nested events count towards the
// region that holds them, gemms are named by shape, and only one timer may listen at a time.
#include <ktr/backends/gemm.hpp>
#include <ktr/backends/kernel_timer.hpp>
#include <ktr/core/error.hpp>
#include <ktr/core/tensor.hpp>

#include <gtest/gtest.h>

namespace {

ktr::KernelTimer::Entry find(std::vector<ktr::KernelTimer::Entry> const& v, std::string const& label) {
  for (auto const& e : v)
    if (e.label == label) return e;
  return {};
}

// A labelled kernel (outside the test body: CUDA's extended lambdas may not live in a test's private member).
void add_one(char const* label, ktr::DeviceView<float*> const& a) {
  Kokkos::parallel_for(
      label, Kokkos::RangePolicy<ktr::ExecSpace>(0, a.extent(0)), KOKKOS_LAMBDA(int j) { a(j) += 1.0f; });
}

TEST(KernelTimer, TimesKernelsAndRegionsByLabelOutermostOnly) {
  ktr::DeviceView<float*> a("a", 1 << 16);
  ktr::KernelTimer timer;
  for (int i = 0; i < 3; ++i) add_one("ktr::test::fill", a);
  Kokkos::Profiling::pushRegion("ktr::test::region");
  add_one("ktr::test::inner", a);
  Kokkos::Profiling::popRegion();
  auto const v = timer.entries();
  ASSERT_EQ(v.size(), 2u);  // the inner kernel is the region's time, not an entry of its own
  EXPECT_EQ(find(v, "ktr::test::fill").calls, 3);
  EXPECT_GT(find(v, "ktr::test::fill").seconds, 0.0);
  EXPECT_EQ(find(v, "ktr::test::region").calls, 1);
  EXPECT_EQ(find(v, "ktr::test::inner").calls, 0);
  EXPECT_GE(v[0].seconds, v[1].seconds);  // most time first
  EXPECT_DOUBLE_EQ(timer.total_seconds(), v[0].seconds + v[1].seconds);
  timer.clear();
  EXPECT_TRUE(timer.entries().empty());
}

TEST(KernelTimer, GemmsAreNamedByTheirShape) {
  ktr::Tensor a("a", {6, 4}), b("b", {5, 4}), c("c", {6, 5});
  ktr::ExecSpace space;
  ktr::KernelTimer timer;
  ktr::gemm(space, ktr::Precision{}, false, true, 1.0f, a.matrix(), b.matrix(), 0.0f, c.matrix());
  auto const v = timer.entries();
  ASSERT_EQ(v.size(), 1u) << v[0].label;
  EXPECT_EQ(v[0].label, "ktr::gemm 6x5x4 NT");
  EXPECT_EQ(v[0].calls, 1);
}

TEST(KernelTimer, OnlyOneListensAtATime) {
  ktr::KernelTimer timer;
  EXPECT_THROW(ktr::KernelTimer(), ktr::Error);
}

TEST(KernelTimer, RemovesItsCallbacksWhenDestroyed) {
  { ktr::KernelTimer timer; }
  EXPECT_FALSE(Kokkos::Profiling::profileLibraryLoaded());
}

}  // namespace
