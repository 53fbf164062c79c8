// Tensor basics and the elementwise kernels against plain host loops.
#include <ktr/backends/gemm.hpp>
#include <ktr/backends/host_blas.hpp>
#include <ktr/core/error.hpp>
#include <ktr/core/ops.hpp>
#include <ktr/core/tensor.hpp>
#include <ktr/train/runtime.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <numeric>

namespace {

std::vector<float> ramp(std::size_t n, float scale) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(i % 97) - 3.0f;
  return v;
}

TEST(Runtime, ThreadCountIsWhatCTestAskedFor) {
  char const* expect = std::getenv("KTR_TEST_THREADS");
  if (!expect) GTEST_SKIP() << "not run under CTest";
  if (std::string(ktr::ExecSpace::name()) != "OpenMP") GTEST_SKIP() << "not a threaded backend";
  EXPECT_EQ(ktr::ExecSpace().concurrency(), std::atoi(expect));
  EXPECT_NE(ktr::runtime_info().find("OpenMP"), std::string::npos);
}

// OpenBLAS takes a CPU model newer than it knows for an old one (Emerald Rapids: Prescott, SSE3 kernels 4x
// slower); the runtime then selects the kernels the CPU can run, and reports it.
TEST(Runtime, HostBlasRunsKernelsForTheCpuNotAPreAvxFallback) {
  std::string const blas = ktr::host_blas();
  if (blas.find("OpenBLAS") == std::string::npos) GTEST_SKIP() << "the host BLAS is not OpenBLAS: " << blas;
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) GTEST_SKIP() << "OPENBLAS_CORETYPE chooses the kernels";
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP)
  GTEST_SKIP() << "a GPU build leaves the host BLAS as it is (its matmuls run on the GPU)";
#elif defined(__x86_64__)
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
    GTEST_SKIP() << "a CPU without AVX2 + FMA";
#endif
  for (char const* fallback : {" Prescott ", " Core2 ", " Nehalem ", " Katmai "})
    EXPECT_EQ(blas.find(fallback), std::string::npos) << blas;
}

TEST(Shape, SizeInnerAndString) {
  ktr::Shape s{4, 28, 28, 1};
  EXPECT_EQ(s.rank, 4);
  EXPECT_EQ(s.size(), 4 * 28 * 28);
  EXPECT_EQ(s.inner(), 28 * 28);
  EXPECT_EQ(s.str(), "(4, 28, 28, 1)");
  EXPECT_EQ(s.with_batch(2).size(), 2 * 28 * 28);
  EXPECT_THROW((ktr::Shape{1, 2, 3, 4, 5}), ktr::Error);
}

TEST(Tensor, AllocatesZeroedAndRoundTrips) {
  ktr::Tensor t("ktr::test::t", {3, 5});
  EXPECT_EQ(t.size(), 15);
  EXPECT_EQ(t.label(), "ktr::test::t");
  for (float v : ktr::to_host(t)) EXPECT_EQ(v, 0.0f);
  auto values = ramp(15, 0.5f);
  ktr::from_host(t, values);
  EXPECT_EQ(ktr::to_host(t), values);
  EXPECT_THROW(ktr::from_host(t, std::vector<float>(14)), ktr::Error);
}

TEST(Tensor, WrapsStorageAndReshapes) {
  ktr::DeviceView<float*> storage("ktr::test::storage", 24);
  ktr::Tensor t(storage, {2, 3, 4});
  EXPECT_EQ(t.data(), storage.data());
  auto m = t.matrix();
  EXPECT_EQ(m.extent(0), 2u);
  EXPECT_EQ(m.extent(1), 12u);
  EXPECT_EQ(t.reshaped({6, 4}).matrix().extent(1), 4u);
  EXPECT_THROW(ktr::Tensor(storage, {5, 5}), ktr::Error);
}

TEST(Ops, FillAxpyScaleMatchHost) {
  std::size_t const n = 1000;
  ktr::ExecSpace space;
  ktr::Tensor x("ktr::test::x", {static_cast<std::int64_t>(n)});
  ktr::Tensor y("ktr::test::y", {static_cast<std::int64_t>(n)});
  auto hx = ramp(n, 0.25f);
  ktr::from_host(x, hx);
  ktr::fill(space, y.view(), 2.0f);
  ktr::axpy(space, -1.5f, x.view(), y.view());
  ktr::scale(space, 0.5f, y.view());
  auto hy = ktr::to_host(y);
  for (std::size_t i = 0; i < n; ++i) ASSERT_FLOAT_EQ(hy[i], 0.5f * (2.0f - 1.5f * hx[i])) << i;
}

TEST(Ops, ReductionsStayOnDeviceAndMatchHost) {
  std::size_t const n = 100003;
  ktr::ExecSpace space;
  ktr::Tensor x("ktr::test::x", {static_cast<std::int64_t>(n)});
  auto hx = ramp(n, 0.01f);
  ktr::from_host(x, hx);
  ktr::DeviceAccumulator s("ktr::test::sum"), q("ktr::test::sumsq");
  ktr::sum(space, x.view(), s);
  ktr::sum_squares(space, x.view(), q);
  double es = 0, eq = 0;
  for (float v : hx) es += v, eq += double(v) * v;
  EXPECT_NEAR(ktr::read_scalar(s), es, 1e-6 * std::abs(es) + 1e-6);
  EXPECT_NEAR(ktr::read_scalar(q), eq, 1e-9 * eq);
}

// Bias and layernorm gradients are column sums: a reduction in fp32 whatever the precision in force, never counted
// as a gemm call (a tf32 or bf16 run's gemm calls are all its own precision), and deterministic.
TEST(Ops, ColumnSumsAreFp32ReductionsNotGemmCalls) {
  ktr::ExecSpace space;
  for (auto [rows, cols] : {std::pair<std::int64_t, std::int64_t>{3, 75}, {4099, 10}, {1, 1}, {0, 7}}) {
    auto const hx = ramp(std::size_t(rows * cols), 0.37f);
    ktr::Tensor x("ktr::test::x", {rows, cols}), ones("ktr::test::ones", {rows}), sums("ktr::test::sums", {cols});
    ktr::from_host(x, hx);
    ktr::fill(space, ones.view(), 1.0f);
    ktr::fill(space, sums.view(), 42.0f);
    std::int64_t const gemms = ktr::gemm_calls();
    ktr::column_sums(space, ktr::ConstMatrix(x.data(), rows, cols), ones.data(), sums.data());
    EXPECT_EQ(ktr::gemm_calls(), gemms) << "a column sum was counted as a gemm call";
    auto const got = ktr::to_host(sums);
    for (std::int64_t j = 0; j < cols; ++j) {
      double expect = 0;
      for (std::int64_t i = 0; i < rows; ++i) expect += hx[std::size_t(i * cols + j)];
      EXPECT_NEAR(got[std::size_t(j)], expect, 1e-5 * (std::abs(expect) + double(rows))) << rows << "x" << cols;
    }
    ktr::Tensor again("ktr::test::again", {cols});
    ktr::column_sums(space, ktr::ConstMatrix(x.data(), rows, cols), ones.data(), again.data());
    EXPECT_EQ(ktr::to_host(again), got) << "column sums are not deterministic";
  }
}

}  // namespace
