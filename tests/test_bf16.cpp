// bf16 mixed precision: the rounding every kernel applies, gemm in bf16 against a reference on rounded inputs,
// each kind of layer whose products have kernels of their own (narrow dense, direct convolution) or go through
// gemm (wide dense, im2col convolution, transposed convolution), and the refusals where bf16 cannot run.
//
// The reference path is portable: inputs rounded to bf16 (nearest even) on the host, products summed in double.
// It checks the rounding on every CPU; the device kernels need bf16 (oneDNN on AMX / AVX512-BF16, or CUDA), and
// the tests that run them say why they are skipped where it is absent.
#include <ktr/backends/conv.hpp>
#include <ktr/backends/gemm.hpp>
#include <ktr/core/error.hpp>
#include <ktr/core/tensor.hpp>
#include <ktr/models/conv_direct_dpbf16.hpp>
#include <ktr/models/dpbf16.hpp>
#include <ktr/models/layers.hpp>
#include <ktr/models/pack.hpp>
#include <ktr/models/registry.hpp>
#include <ktr/train/checkpoint.hpp>
#include <ktr/train/run_settings.hpp>
#include <ktr/train/session.hpp>
#include "layer_check.hpp"
#include "reference.hpp"
#include "small_data.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <string>

namespace {

using ktr::MatmulPrecision;
using ktr::Shape;
using ktr::Tensor;
using ktr::test::Vec;
// y = f(x, kernel, bias) in double: a layer without activation.
using RefLinear = std::function<Vec(Vec const&, Vec const&, Vec const&)>;

float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

Vec rounded(Vec v) {
  for (auto& x : v) x = ktr::round_to_bf16(float(x));
  return v;
}

#define SKIP_WITHOUT_BF16()          \
  if (!ktr::matmul_bf16_available()) \
  GTEST_SKIP() << "bf16 cannot run here: " << ktr::matmul_unavailable(MatmulPrecision::bf16)

TEST(Bf16Rounding, RoundsToNearestEvenKeepsNaNAndOverflowsToInfinity) {
  float const ulp = std::ldexp(1.0f, -7);                                             // bf16's spacing at 1
  EXPECT_EQ(ktr::round_to_bf16(1.0f + ulp / 2), 1.0f);                                // a tie: to even (down)
  EXPECT_EQ(ktr::round_to_bf16(1.0f + 3 * ulp / 2), 1.0f + 2 * ulp);                  // a tie: to even (up)
  EXPECT_EQ(ktr::round_to_bf16(1.0f + ulp / 2 + std::ldexp(1.0f, -20)), 1.0f + ulp);  // past the tie
  EXPECT_EQ(ktr::round_to_bf16(-1.0f - ulp / 4), -1.0f);
  EXPECT_EQ(ktr::round_to_bf16(1.5f), 1.5f);  // representable: unchanged
  EXPECT_TRUE(std::isnan(ktr::round_to_bf16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(ktr::round_to_bf16(from_bits(0x7f800001u))));  // a NaN whose payload is all low bits
  EXPECT_TRUE(std::isnan(ktr::round_to_bf16(from_bits(0x7fffffffu))));  // would carry into the sign
  EXPECT_EQ(ktr::round_to_bf16(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_EQ(ktr::round_to_bf16(std::numeric_limits<float>::max()), std::numeric_limits<float>::infinity());
  std::uint32_t bits;
  float const r = ktr::round_to_bf16(0.1f);
  std::memcpy(&bits, &r, sizeof bits);
  EXPECT_EQ(bits & 0xffffu, 0u);
  EXPECT_EQ(bits, 0x3dcd0000u);  // 0.1 is 0x3dcccccd: rounds up
}

TEST(Bf16Rounding, PacksRoundAsTheScalarDoes) {
  constexpr int W = ktr::impl::host_pack_width;
  auto v = ktr::test::random_floats(W * 64, 5, -1e3f, 1e3f);
  v[3] = std::numeric_limits<float>::quiet_NaN(), v[4] = from_bits(0x7fffffffu),
  v[5] = 1.0f + std::ldexp(1.0f, -8);
  for (std::size_t i = 0; i < v.size(); i += W) {
    float out[W];
    ktr::impl::Pack<W>::load(v.data() + i).bf16().store(out);
    for (int j = 0; j < W; ++j) {
      float const want = ktr::round_to_bf16(v[i + j]);
      if (std::isnan(want))
        EXPECT_TRUE(std::isnan(out[j])) << i + j;
      else
        EXPECT_EQ(out[j], want) << i + j;
    }
  }
}

TEST(Bf16Precision, ParsesNamesAndRefusesWhereUnavailableNamingTheFlagAndWhy) {
  EXPECT_STREQ(ktr::matmul_precision_name(MatmulPrecision::bf16), "bf16");
  EXPECT_THROW(ktr::parse_matmul_precision("bf17", "--precision"), ktr::Error);
  std::string const why = ktr::matmul_unavailable(MatmulPrecision::bf16);
  EXPECT_EQ(ktr::matmul_bf16_available(), why.empty());
  if (why.empty()) EXPECT_EQ(ktr::parse_matmul_precision("bf16", "--precision"), MatmulPrecision::bf16);
  if (!ktr::device_is_host) return;
  // The refusal a CPU without bf16 instructions gives, forced (KTR_BF16=off) on any host.
  char const* const old = std::getenv("KTR_BF16");
  std::string const saved = old ? old : "";
  ::setenv("KTR_BF16", "off", 1);
  std::string message;
  try {
    (void)ktr::parse_matmul_precision("bf16", "--precision");
  } catch (ktr::Error const& e) {
    message = e.what();
  }
  {  // and gemm itself refuses a bf16 product
    ktr::Tensor a("a", Shape{2, 2}), b("b", Shape{2, 2}), c("c", Shape{2, 2});
    EXPECT_THROW(ktr::gemm(ktr::ExecSpace(), ktr::Precision{MatmulPrecision::bf16, {}}, false, false, 1.0f,
                           a.matrix(), b.matrix(), 0.0f, c.matrix()),
                 ktr::Error);
  }
  if (old)
    ::setenv("KTR_BF16", saved.c_str(), 1);
  else
    ::unsetenv("KTR_BF16");
  EXPECT_NE(message.find("--precision"), std::string::npos) << message;
  EXPECT_NE(message.find("bf16"), std::string::npos) << message;
}

// C = alpha op(A) op(B) + beta C, in double, from inputs as given.
Vec gemm_ref(bool ta, bool tb, double alpha, Vec const& a, Vec const& b, double beta, Vec c, int m, int n, int k) {
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int p = 0; p < k; ++p)
        s += (ta ? a[std::size_t(p) * m + i] : a[std::size_t(i) * k + p]) *
             (tb ? b[std::size_t(j) * k + p] : b[std::size_t(p) * n + j]);
      c[std::size_t(i) * n + j] = alpha * s + beta * c[std::size_t(i) * n + j];
    }
  return c;
}

TEST(Bf16Gemm, MatchesTheRoundedReferenceForEveryTransposeAlphaAndBeta) {
  SKIP_WITHOUT_BF16();
  ktr::ExecSpace space;
  int const m = 37, n = 29, k = 300;  // odd extents: no kernel's tile divides them
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (auto [alpha, beta] : {std::pair<float, float>{1.0f, 0.0f}, {0.5f, 1.0f}}) {
        SCOPED_TRACE(std::string(ta ? "T" : "N") + (tb ? "T" : "N") + " alpha " + std::to_string(alpha));
        auto ha = ktr::test::random_floats(std::size_t(m) * k, 1),
             hb = ktr::test::random_floats(std::size_t(k) * n, 2),
             hc = ktr::test::random_floats(std::size_t(m) * n, 3);
        Tensor a("a", ta ? Shape{k, m} : Shape{m, k}), b("b", tb ? Shape{n, k} : Shape{k, n}), c("c", Shape{m, n});
        ktr::from_host(a, ha), ktr::from_host(b, hb), ktr::from_host(c, hc);
        ktr::gemm(space, ktr::Precision{MatmulPrecision::bf16, {}}, ta, tb, alpha, a.matrix(), b.matrix(), beta,
                  c.matrix());
        auto const got = ktr::to_host(c);
        Vec const want = gemm_ref(ta, tb, alpha, rounded(ktr::test::to_double(ha)),
                                  rounded(ktr::test::to_double(hb)), beta, ktr::test::to_double(hc), m, n, k);
        Vec const fp32 = gemm_ref(ta, tb, alpha, ktr::test::to_double(ha), ktr::test::to_double(hb), beta,
                                  ktr::test::to_double(hc), m, n, k);
        double worst = 0, moved = 0;
        for (std::size_t i = 0; i < got.size(); ++i) {
          worst = std::max(worst, std::abs(got[i] - want[i]));
          moved = std::max(moved, std::abs(want[i] - fp32[i]));
        }
        EXPECT_LT(worst, 2e-5 * std::sqrt(double(k)));  // fp32 accumulation of exact products
        EXPECT_GT(moved, 20 * worst);                   // and the rounding is what it computed
      }
}

TEST(Bf16Gemm, Fp32PrecisionIgnoresABf16CopyOfItsOperands) {
  SKIP_WITHOUT_BF16();
  ktr::ExecSpace space;
  auto ha = ktr::test::random_floats(64, 7), hb = ktr::test::random_floats(64, 8);
  Tensor a("a", Shape{8, 8}), b("b", Shape{8, 8}), c("c", Shape{8, 8});
  ktr::from_host(a, ha), ktr::from_host(b, hb);
  std::int64_t const calls = ktr::gemm_calls(MatmulPrecision::bf16);
  ktr::DeviceView<std::uint16_t*> bits("bits", 64);  // zeros: read in place of A, the product would be 0
  ktr::Precision const fp32{MatmulPrecision::fp32, ktr::Bf16Copy{a.data(), bits.data(), 64}};
  ktr::gemm(space, fp32, false, false, 1.0f, a.matrix(), b.matrix(), 0.0f, c.matrix());
  EXPECT_EQ(ktr::gemm_calls(MatmulPrecision::bf16), calls);
  auto const got = ktr::to_host(c);
  Vec const want =
      gemm_ref(false, false, 1, ktr::test::to_double(ha), ktr::test::to_double(hb), 0, Vec(64), 8, 8, 8);
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5);
}

// gemm reads an operand that the precision's bf16 copy holds from the copy, and rounds only those it does not
// hold. The copy here holds twice each value's rounding (exact in bf16), so that reading it shows in the product.
TEST(Bf16Gemm, ReadsTheOperandsABf16CopyHoldsAndRoundsOnlyTheOthers) {
  SKIP_WITHOUT_BF16();
  ktr::ExecSpace space;
  int const m = 5, n = 7, k = 48, offset = 16;  // B lies in a buffer, `offset` floats in
  std::size_t const size = std::size_t(offset) + std::size_t(k) * n;
  auto const ha = ktr::test::random_floats(std::size_t(m) * k, 11), hbuf = ktr::test::random_floats(size, 12);
  Tensor a("a", Shape{m, k}), buf("buffer", Shape{std::int64_t(size)}), c("c", Shape{m, n});
  ktr::from_host(a, ha), ktr::from_host(buf, hbuf);
  ktr::DeviceView<std::uint16_t*> bits("bits", size);
  auto hbits = Kokkos::create_mirror_view(bits);
  for (std::size_t i = 0; i < size; ++i) hbits(i) = ktr::bf16_bits(2.0f * ktr::round_to_bf16(hbuf[i]));
  Kokkos::deep_copy(bits, hbits);
  ktr::ConstMatrix const b(buf.data() + offset, k, n);
  std::vector<float> const hb(hbuf.begin() + offset, hbuf.end());
  Vec const want = gemm_ref(false, false, 1, rounded(ktr::test::to_double(ha)), rounded(ktr::test::to_double(hb)),
                            0, Vec(std::size_t(m) * n), m, n, k);
  auto product = [&](std::int64_t held) {  // C = A B with the copy holding the buffer's first `held` values
    ktr::Precision const bf16{MatmulPrecision::bf16, ktr::Bf16Copy{buf.data(), bits.data(), held}};
    std::int64_t const before = ktr::gemm_bf16_roundings();
    ktr::gemm(space, bf16, false, false, 1.0f, a.matrix(), b, 0.0f, c.matrix());
    space.fence();
    return std::make_pair(ktr::gemm_bf16_roundings() - before, ktr::to_host(c));
  };
  auto const [rounded_held, got_held] = product(std::int64_t(size));
  EXPECT_EQ(rounded_held, 1) << "A alone is rounded: B is read from the copy";
  for (std::size_t i = 0; i < got_held.size(); ++i) EXPECT_NEAR(got_held[i], 2 * want[i], 1e-4) << i;
  auto const [rounded_part, got_part] = product(std::int64_t(size) - 1);  // B's last value is not held
  EXPECT_EQ(rounded_part, 2) << "B, not wholly held, is rounded too";
  for (std::size_t i = 0; i < got_part.size(); ++i) EXPECT_NEAR(got_part[i], want[i], 1e-4) << i;
  EXPECT_EQ(ktr::Bf16Copy{}.of(buf.data(), 1), nullptr) << "an empty copy holds nothing";
}

// A bf16 run's gemms read its weights from the parameters' bf16 copy, which the optimiser rewrites in its update:
// the same trajectory, bit for bit, as gemm rounding the weights itself (a run that keeps no copy), with fewer
// operands rounded, and the copy equal to the updated parameters' rounding.
TEST(Bf16Training, GemmsReadTheWeightsBf16CopyThatTheOptimiserKeeps) {
  SKIP_WITHOUT_BF16();
  auto const data = ktr::test::small_dataset(200, 7);
  ktr::RunConfig config;
  config.model = "in=8x8x1 flatten dense:40:relu dense:24:gelu dense:10";  // two weights wide enough for gemm
  config.batch = 16;
  config.seed = 3;
  config.precision = MatmulPrecision::bf16;
  ktr::ExecSpace space;
  ktr::Session with(space, config, 8), without(space, config, 8);
  without.state().keep_bf16_params = false;
  auto roundings = [&](ktr::Session& s) {  // of 8 steps
    std::int64_t const before = ktr::gemm_bf16_roundings();
    ktr::dispatch(space, s.state(), s.model(), data, 8);
    space.fence();
    return ktr::gemm_bf16_roundings() - before;
  };
  std::int64_t const rounded_with = roundings(with), rounded_without = roundings(without);
  EXPECT_EQ(without.state().params16.extent(0), 0u);
  ASSERT_EQ(std::int64_t(with.state().params16.extent(0)), with.model().arena().size());
  // The weights' roundings: the wide layers' forwards and input gradients (the first layer has none); on hosts the
  // narrow head runs kernels of its own, not gemm.
  EXPECT_EQ(rounded_without - rounded_with, 8 * (ktr::device_is_host ? 3 : 5));
  ktr::dispatch(space, with.state(), with.model(), data, 8);  // a second call rounds the copy afresh
  ktr::dispatch(space, without.state(), without.model(), data, 8);
  auto const pa = ktr::download(with.model().arena().params()),
             pb = ktr::download(without.model().arena().params());
  ASSERT_EQ(pa.size(), pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) ASSERT_EQ(pa[i], pb[i]) << i;
  auto const copy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), with.state().params16);
  for (std::size_t i = 0; i < pa.size(); ++i) ASSERT_EQ(copy(i), ktr::bf16_bits(pa[i])) << i;
}

// A layer without activation in bf16: its forward against the reference on rounded inputs and parameters; its
// input and kernel gradients against the exact gradients of that linear map with the incoming gradient rounded
// (what the backward's products take); the bias gradient, a sum in fp32, within bf16's error of the sum.
void check_linear_layer_bf16(ktr::Layer& layer, Shape in, RefLinear const& ref, std::uint32_t seed) {
  ktr::ExecSpace space;
  ktr::StandaloneLayer standalone(layer, in);
  ktr::Arena const& arena = standalone.arena;
  ASSERT_EQ(arena.count(), 2u);
  std::vector<Vec> params;
  for (std::size_t i = 0; i < 2; ++i) {
    auto v = ktr::test::random_floats(arena.param(i).size(), seed + 10 + std::uint32_t(i), -0.5f, 0.5f);
    ktr::from_host(arena.param(i), v);
    params.push_back(ktr::test::to_double(v));
  }
  Shape const out = layer.output_shape(in);
  auto hx = ktr::test::random_floats(in.size(), seed);
  auto hr = ktr::test::random_floats(out.size(), seed + 99);
  Tensor x("x", in), y("y", out), dy("dy", out), dx("dx", in);
  ktr::from_host(x, hx), ktr::from_host(dy, hr);
  ktr::Precision const bf16{MatmulPrecision::bf16, {}};
  layer.forward(space, bf16, x, y);
  layer.backward(space, bf16, x, y, dy, dx);
  Vec const xd = ktr::test::to_double(hx), rd = ktr::test::to_double(hr);
  Vec const xr = rounded(xd), rr = rounded(rd), wr = rounded(params[0]);
  ktr::test::expect_close(ktr::to_host(y), ref(xr, wr, params[1]), 1e-5, "forward");
  Vec const fp32 = ref(xd, params[0], params[1]);
  Vec const y16 = ref(xr, wr, params[1]);
  double moved = 0;
  for (std::size_t i = 0; i < fp32.size(); ++i) moved = std::max(moved, std::abs(fp32[i] - y16[i]));
  EXPECT_GT(moved, 1e-4) << "the bf16 reference should differ from fp32's";
  // A linear map's finite differences are exact: the gradients of sum(rr * ref(., .)).
  Vec const zero_bias(params[1].size(), 0.0);
  auto const dxd = ktr::test::finite_difference(
      [&](Vec const& v) { return ktr::test::dot(rr, ref(v, wr, zero_bias)); }, xd, 1e-2);
  ktr::test::expect_close(ktr::to_host(dx), dxd, 1e-5, "d/dx");
  auto const dwd = ktr::test::finite_difference(
      [&](Vec const& v) { return ktr::test::dot(rr, ref(xr, v, zero_bias)); }, params[0], 1e-2);
  ktr::test::expect_close(ktr::to_host(arena.grad(0)), dwd, 1e-5, "d/dkernel");
  auto const dbd = ktr::test::finite_difference(
      [&](Vec const& v) { return ktr::test::dot(rd, ref(Vec(xd.size(), 0.0), params[0], v)); }, params[1], 1e-2);
  ktr::test::expect_close(ktr::to_host(arena.grad(1)), dbd, 1e-2, "d/dbias");
}

TEST(Bf16Layers, NarrowAndWideDenseRoundTheirProductsInputs) {
  SKIP_WITHOUT_BF16();
  for (int features : {5, 20}) {  // a host's narrow kernels, the gemm path
    SCOPED_TRACE(features);
    ktr::Dense layer(features, ktr::Activation::identity);
    check_linear_layer_bf16(
        layer, Shape{6, 33},
        [=](Vec const& x, Vec const& w, Vec const& b) {
          return ktr::test::dense_ref(x, w, b, 6, 33, features, false);
        },
        41);
  }
}

TEST(Bf16Layers, DirectIm2colAndLibraryConvolutionsRoundTheirProductsInputs) {
  SKIP_WITHOUT_BF16();
  ktr::Precision const bf16{MatmulPrecision::bf16, {}};
  std::string const no_library = ktr::conv_library_unavailable(ktr::ConvShape{}, bf16);
  if (!no_library.empty())
    std::printf("[ skipped  ] the convolution library's bf16 path: %s\n", no_library.c_str());
  for (auto algorithm : {ktr::ConvAlgorithm::im2col, ktr::ConvAlgorithm::direct, ktr::ConvAlgorithm::library}) {
    if (algorithm == ktr::ConvAlgorithm::direct && !ktr::device_is_host) continue;  // host builds only
    if (algorithm == ktr::ConvAlgorithm::library && !no_library.empty()) continue;
    for (int channels : {1, 3}) {
      SCOPED_TRACE(std::string(algorithm == ktr::ConvAlgorithm::direct    ? "direct"
                               : algorithm == ktr::ConvAlgorithm::library ? "library"
                                                                          : "im2col") +
                   " C " + std::to_string(channels));
      ktr::Conv2D layer(16, ktr::Activation::identity, algorithm);
      check_linear_layer_bf16(
          layer, Shape{2, 6, 5, channels},
          [=](Vec const& x, Vec const& w, Vec const& b) {
            return ktr::test::conv_ref(x, w, b, 2, 6, 5, channels, 16, 3, 1, "same", "identity");
          },
          42);
      if (algorithm != ktr::ConvAlgorithm::library) continue;
      // Circular: the library convolves a wrapped copy; the forward's rounding of it sits after the copy.
      ktr::Conv2D wrapped(16, ktr::Activation::identity, algorithm, ktr::ConvForm{3, 1, ktr::Padding::circular});
      check_linear_layer_bf16(
          wrapped, Shape{2, 6, 5, channels},
          [=](Vec const& x, Vec const& w, Vec const& b) {
            return ktr::test::conv_ref(x, w, b, 2, 6, 5, channels, 16, 3, 1, "circular", "identity");
          },
          43);
    }
  }
}

// Under bf16 a library convolution's forward keeps its input rounded for the backward of that input (a circular
// one: only the rounded wrapped copy); a backward of an input other than the last forward's rounds (and wraps) its
// own, so the kernel and input gradients are the bits of a backward right after its own forward. (Identity: a
// backward that reads nothing else of its forward's. Every layer's backward otherwise differentiates its last
// forward: z, im2col columns.)
TEST(Bf16Layers, LibraryConvolutionBackwardUsesTheForwardsRoundingOnlyForTheSameInput) {
  SKIP_WITHOUT_BF16();
  ktr::Precision const bf16{MatmulPrecision::bf16, {}};
  std::string const no_library = ktr::conv_library_unavailable(ktr::ConvShape{}, bf16);
  if (!no_library.empty()) GTEST_SKIP() << "the convolution library's bf16 path: " << no_library;
  for (ktr::Padding padding : {ktr::Padding::same, ktr::Padding::circular}) {
    SCOPED_TRACE(padding == ktr::Padding::same ? "same" : "circular");
    ktr::Conv2D layer(16, ktr::Activation::identity, ktr::ConvAlgorithm::library, ktr::ConvForm{3, 1, padding});
    Shape const in{2, 6, 5, 12}, out{2, 6, 5, 16};
    ktr::StandaloneLayer standalone(layer, in);
    ktr::from_host(standalone.arena.param(0), ktr::test::random_floats(standalone.arena.param(0).size(), 51));
    Tensor x1("x1", in), x2("x2", in), y1("y1", out), y2("y2", out), dy("dy", out), dx("dx", in);
    ktr::from_host(x1, ktr::test::random_floats(in.size(), 52));
    ktr::from_host(x2, ktr::test::random_floats(in.size(), 53));
    ktr::ExecSpace space;
    auto backward_of_x1 = [&] {
      ktr::from_host(dy, ktr::test::random_floats(out.size(), 54));  // the backward overwrites it
      layer.backward(space, bf16, x1, y1, dy, dx);
      return std::vector<std::vector<float>>{ktr::to_host(standalone.arena.grad(0)), ktr::to_host(dx)};
    };
    layer.forward(space, bf16, x1, y1);
    auto const after_own = backward_of_x1();
    layer.forward(space, bf16, x1, y1), layer.forward(space, bf16, x2, y2);
    auto const after_other = backward_of_x1();
    for (std::size_t k = 0; k < 2; ++k) {
      ASSERT_EQ(after_own[k].size(), after_other[k].size());
      EXPECT_EQ(std::memcmp(after_own[k].data(), after_other[k].data(), after_own[k].size() * sizeof(float)), 0)
          << (k == 0 ? "d/dkernel" : "d/dx");
    }
  }
}

// Under bf16 the activation backward of a library convolution writes dz's rounding beside dz, and the library's
// backward reads it instead of rounding dz again: the gradients are the bits of the library's own backward of dz.
TEST(Bf16Layers, LibraryConvolutionTakesItsOutputGradientsRoundingFromTheActivationBackward) {
  SKIP_WITHOUT_BF16();
  ktr::Precision const bf16{MatmulPrecision::bf16, {}};
  std::string const no_library = ktr::conv_library_unavailable(ktr::ConvShape{}, bf16);
  if (!no_library.empty()) GTEST_SKIP() << "the convolution library's bf16 path: " << no_library;
  // 60 pixels: the one-pass activation backward; 256: the two-pass one where there are 2 threads or more.
  for (Shape const in : {Shape{2, 6, 5, 12}, Shape{4, 8, 8, 12}}) {
    SCOPED_TRACE(in.str());
    ktr::Conv2D layer(16, ktr::Activation::relu, ktr::ConvAlgorithm::library);
    Shape const out{in[0], in[1], in[2], 16};
    ktr::StandaloneLayer standalone(layer, in);
    for (std::size_t i = 0; i < 2; ++i)
      ktr::from_host(standalone.arena.param(i),
                     ktr::test::random_floats(standalone.arena.param(i).size(), 61 + std::uint32_t(i)));
    Tensor x("x", in), y("y", out), dy("dy", out), dx("dx", in);
    ktr::from_host(x, ktr::test::random_floats(in.size(), 63));
    ktr::from_host(dy, ktr::test::random_floats(out.size(), 64));
    ktr::ExecSpace space;
    layer.forward(space, bf16, x, y);
    layer.backward(space, bf16, x, y, dy, dx);  // dy now holds dz
    std::vector<float> const dz = ktr::to_host(dy);
    EXPECT_GT(std::count(dz.begin(), dz.end(), 0.0f), std::ptrdiff_t(dz.size() / 8)) << "relu's zeros in dz";
    ktr::ConvShape s;
    s.batch = in[0], s.height = s.out_height = in[1], s.width = s.out_width = in[2], s.channels = in[3];
    s.features = 16, s.kernel = 3, s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = 1;
    Tensor dw("dw", standalone.arena.param(0).shape()), dx_direct("dx direct", in);
    ktr::conv_library_backward(space, bf16, s, x.data(), dy.data(), standalone.arena.param(0).data(), dw.data(),
                               dx_direct.data());
    auto same_bits = [](std::vector<float> const& a, std::vector<float> const& b) {
      return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
    };
    EXPECT_TRUE(same_bits(ktr::to_host(standalone.arena.grad(0)), ktr::to_host(dw))) << "d/dkernel";
    EXPECT_TRUE(same_bits(ktr::to_host(dx), ktr::to_host(dx_direct))) << "d/dx";
  }
}

// A layer's forward and backward in bf16 with the AVX512-BF16 dot-product kernels and again with the portable
// kernels (which the references above check): the same products summed in another order, so the outputs and
// every gradient agree to fp32 rounding. `out` is the layer's output shape (a fused pool's, if any).
void expect_dot_products_match_portable(ktr::Layer& layer, Shape in, Shape out, std::uint32_t seed) {
  ktr::ExecSpace space;
  ktr::StandaloneLayer standalone(layer, in);
  for (std::size_t i = 0; i < 2; ++i)
    ktr::from_host(standalone.arena.param(i), ktr::test::random_floats(standalone.arena.param(i).size(),
                                                                       seed + std::uint32_t(i), -0.5f, 0.5f));
  Tensor x("x", in), y("y", out), dy("dy", out), dx("dx", in);
  ktr::from_host(x, ktr::test::random_floats(in.size(), seed + 2));
  auto run = [&](bool dot_products) {
    ktr::from_host(dy, ktr::test::random_floats(out.size(), seed + 3));  // a backward may overwrite it
    ktr::impl::dpbf16_allow(dot_products);
    ktr::Precision const bf16{MatmulPrecision::bf16, {}};
    layer.forward(space, bf16, x, y);
    layer.backward(space, bf16, x, y, dy, dx);
    ktr::impl::dpbf16_allow(true);
    return std::vector<std::vector<float>>{ktr::to_host(y), ktr::to_host(standalone.arena.grad(0)),
                                           ktr::to_host(standalone.arena.grad(1)), ktr::to_host(dx)};
  };
  auto const fast = run(true), portable = run(false);
  char const* what[] = {"forward", "d/dkernel", "d/dbias", "d/dx"};
  for (std::size_t k = 0; k < fast.size(); ++k)
    ktr::test::expect_close(fast[k], ktr::test::to_double(portable[k]), 1e-5, what[k]);
}

// A first convolution (one channel, ReLU or identity, the average pool fused in): odd extents (the pool drops a
// row and a column), one, two and three vectors of output channels.
TEST(Bf16Layers, DotProductConvolutionMatchesThePortableBf16Kernels) {
  SKIP_WITHOUT_BF16();
  if (!ktr::device_is_host) GTEST_SKIP() << "the direct kernels run on host builds only";
  struct Case {
    int F;
    ktr::Activation act;
    Shape in;
  };
  for (auto const& c : {Case{32, ktr::Activation::relu, Shape{3, 9, 11, 1}},
                        Case{16, ktr::Activation::identity, Shape{2, 6, 5, 1}},
                        Case{48, ktr::Activation::relu, Shape{2, 28, 28, 1}}}) {
    SCOPED_TRACE(c.F);
    ktr::impl::ConvDims const dims{c.in[0], c.in[1], c.in[2], 1, c.F, 2};
    if (!ktr::impl::conv_dpbf16_takes(dims, c.act)) GTEST_SKIP() << "this CPU has no AVX512-BF16 instructions";
    ktr::Conv2D layer(c.F, c.act, ktr::ConvAlgorithm::direct);
    ASSERT_TRUE(layer.fuse_next(ktr::AvgPool2(), c.in));
    expect_dot_products_match_portable(layer, c.in, Shape{c.in[0], c.in[1] / 2, c.in[2] / 2, c.F}, 50);
  }
}

// The narrow dense head: outputs in one, two and four pairs (N = 3, 10, 16), an activation that keeps z (gelu),
// inputs longer than one chunk of the forward and not a multiple of 32, an odd batch over more than one block
// of row pairs of the kernel gradient.
TEST(Bf16Layers, DotProductNarrowDenseMatchesThePortableBf16Kernels) {
  SKIP_WITHOUT_BF16();
  if (!ktr::device_is_host) GTEST_SKIP() << "the narrow kernels run on host builds only";
  if (!ktr::impl::dpbf16_available()) GTEST_SKIP() << "this CPU has no AVX512-BF16 instructions";
  for (auto [features_, act_] : {std::pair{10, ktr::Activation::identity}, std::pair{16, ktr::Activation::gelu},
                                 std::pair{3, ktr::Activation::relu}}) {
    int const features = features_;
    SCOPED_TRACE(features);
    ktr::Dense layer(features, act_);
    expect_dot_products_match_portable(layer, Shape{67, 700}, Shape{67, features}, 60);
  }
}

TEST(Bf16Layers, StridedFlippedAndTransposedConvolutionsRoundTheirProductsInputs) {
  SKIP_WITHOUT_BF16();
  struct Case {
    char const* token;
    int C, F, S;
  };
  // conv5x5 with fewer outputs than inputs takes the flipped-kernel input gradient; s2 the dcols + col2im one.
  for (Case c : {Case{"conv5x5:2", 6, 2, 1}, Case{"conv3x3:4:s2", 3, 4, 2}}) {
    SCOPED_TRACE(c.token);
    auto layer = ktr::make_layer(c.token);
    int const K = std::string(c.token).rfind("conv5x5", 0) == 0 ? 5 : 3;
    check_linear_layer_bf16(
        *layer, Shape{2, 7, 6, c.C},
        [=](Vec const& x, Vec const& w, Vec const& b) {
          return ktr::test::conv_ref(x, w, b, 2, 7, 6, c.C, c.F, K, c.S, "same", "identity");
        },
        43);
  }
  auto layer = ktr::make_layer("convT2x2:3");
  int const B = 2, H = 3, W = 2, C = 4, N = 3;
  check_linear_layer_bf16(
      *layer, Shape{B, H, W, C},
      [=](Vec const& x, Vec const& p0, Vec const& p1) {
        Vec y(std::size_t(B) * 4 * H * W * N);
        for (int b = 0; b < B; ++b)
          for (int h = 0; h < 2 * H; ++h)
            for (int w = 0; w < 2 * W; ++w)
              for (int n = 0; n < N; ++n) {
                double s = p1[std::size_t(n)];
                int const kh = 1 - h % 2, kw = 1 - w % 2;
                for (int k = 0; k < C; ++k)
                  s += x[((std::size_t(b) * H + h / 2) * W + w / 2) * C + k] *
                       p0[((std::size_t(kh) * 2 + kw) * C + k) * N + n];
                y[((std::size_t(b) * 2 * H + h) * 2 * W + w) * N + n] = s;
              }
        return y;
      },
      44);
}

// A checkpoint records bf16; restoring it where bf16 cannot run (KTR_BF16=off stands in for such a CPU) is refused
// naming the file and the way on, and with fp32 asked for it restores.
TEST(Bf16Checkpoint, ARestoreThatCannotRunBf16NamesTheFileAndTheWayOn) {
  if (!ktr::device_is_host) GTEST_SKIP() << "KTR_BF16=off is a host switch";
  if (!ktr::matmul_bf16_available())
    GTEST_SKIP() << "bf16 cannot run here: " << ktr::matmul_unavailable(MatmulPrecision::bf16);
  ktr::RunConfig config;
  config.model = "in=4 dense:8:relu dense:3";
  config.batch = 4;
  config.precision = MatmulPrecision::bf16;
  std::string const path = ::testing::TempDir() + "ktr_bf16_restore.ckpt";
  std::remove(path.c_str());
  ktr::ExecSpace const space;
  ktr::Session(space, config, 1).save(space, path);
  ktr::Checkpoint const c = ktr::read_checkpoint(path);
  ASSERT_TRUE(c.has("precision"));
  EXPECT_EQ(c.get("precision"), "bf16");
  EXPECT_EQ(ktr::run_config(c, path).precision, MatmulPrecision::bf16);
  char const* const old = std::getenv("KTR_BF16");
  std::string const saved = old ? old : "";
  ::setenv("KTR_BF16", "off", 1);
  std::string message;
  try {
    (void)ktr::Session::restore(c, path, 1);
  } catch (ktr::Error const& e) {
    message = e.what();
  }
  ktr::RunConfig fp32 = ktr::run_config(c, path);
  fp32.precision = MatmulPrecision::fp32;
  EXPECT_NO_THROW((void)ktr::Session::restore(c, path, 1, ktr::Communicator(), &fp32));
  if (old)
    ::setenv("KTR_BF16", saved.c_str(), 1);
  else
    ::unsetenv("KTR_BF16");
  EXPECT_NE(message.find(path + ": records precision bf16"), std::string::npos) << message;
  EXPECT_NE(message.find("fp32"), std::string::npos) << message;
  std::remove(path.c_str());
}

}  // namespace
