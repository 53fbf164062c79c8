// Every layer and the loss: device forward vs the host double reference, and device gradients (inputs and
// parameters) vs central finite differences of that reference in double precision.
#include <ktr/core/error.hpp>
#include <ktr/models/activation_functors.hpp>
#include <ktr/models/arena.hpp>
#include <ktr/models/bias_act.hpp>
#include <ktr/models/layers.hpp>
#include <ktr/models/loss.hpp>
#include "layer_check.hpp"
#include "reference.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <tuple>

namespace {

using ktr::Shape;
using ktr::Tensor;
using ktr::test::check_layer;
using ktr::test::expect_close;
using ktr::test::Vec;

TEST(Layers, DenseReluForwardAndGradients) {
  ktr::Dense layer(5, ktr::Activation::relu);
  check_layer(
      layer, Shape{4, 7},
      [](Vec const& x, std::vector<Vec> const& p) { return ktr::test::dense_ref(x, p[0], p[1], 4, 7, 5, true); },
      1);
}

TEST(Layers, DenseLinearOnImagesFlattens) {
  ktr::Dense layer(3, ktr::Activation::identity);
  check_layer(
      layer, Shape{2, 3, 2, 2},
      [](Vec const& x, std::vector<Vec> const& p) { return ktr::test::dense_ref(x, p[0], p[1], 2, 12, 3, false); },
      2);
}

// Few outputs take the narrow kernels on a host (no gemm): 1, 10 and 16 outputs, over an input long enough for
// whole vector packs, a whole 4-pack tile of the input gradient and scalar tails; 17 outputs take the gemms.
TEST(Layers, DenseNarrowAndWideForwardAndGradients) {
  for (auto [features_, relu_] :
       {std::tuple{1, false}, std::tuple{10, true}, std::tuple{16, false}, std::tuple{17, true}}) {
    int const features = features_;
    bool const relu = relu_;
    ktr::Dense layer(features, relu ? ktr::Activation::relu : ktr::Activation::identity);
    if (ktr::device_is_host)
      EXPECT_EQ(layer.scratch_size(Shape{3, 75}) > 0, features <= 16) << features;
    else  // GPUs: the bias gradient's ones vector (one per row), and z where the activation needs it
      EXPECT_EQ(
          layer.scratch_size(Shape{3, 75}),
          3 + (ktr::activation_needs_input(relu ? ktr::Activation::relu : ktr::Activation::identity) ? 3 * features
                                                                                                     : 0))
          << features;
    check_layer(
        layer, Shape{3, 75},
        [=](Vec const& x, std::vector<Vec> const& p) {
          return ktr::test::dense_ref(x, p[0], p[1], 3, 75, features, relu);
        },
        11);
  }
}

// A convolution's bias gradient sums 16 or 32 columns over every pixel: on a host with more threads than blocks of
// 64 columns the activation gradient runs on every thread first, then the sums. Either way the gradient and the
// sums are the bits of the functor applied element by element and summed down the rows in order. (GPUs sum with
// a gemm and evaluate erf with their own library: near, not equal.)
TEST(Layers, ActivationGradientAndBiasGradientAreTheBitsOfTheRowOrderSumsAtAnyColumnCount) {
  using Gelu = ktr::Act<ktr::Activation::gelu>;
  for (std::int64_t cols : {16, 100}) {
    std::int64_t const rows = 1000;
    std::vector<float> g(std::size_t(rows * cols)), z(g.size()), y(g.size());
    for (std::size_t e = 0; e < g.size(); ++e) {
      z[e] = float(std::sin(0.37 * double(e))) * 3.0f, g[e] = float(std::cos(0.11 * double(e)));
      y[e] = Gelu::forward(z[e]);
    }
    Tensor dg("g", Shape{rows, cols}), dz("z", Shape{rows, cols}), dy("y", Shape{rows, cols}),
        db("db", Shape{cols});
    Tensor ones("ones", Shape{ktr::impl::act_bias_backward_scratch(rows) + 1});
    ktr::from_host(dg, g), ktr::from_host(dz, z), ktr::from_host(dy, y);
    ktr::impl::act_bias_backward(ktr::ExecSpace(), dg.matrix(), dy.matrix(), dz.data(), db.view(),
                                 ktr::Activation::gelu, ones.data());
    std::vector<float> sums(std::size_t(cols), 0.0f);
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) {
        std::size_t const e = std::size_t(i * cols + j);
        g[e] = Gelu::backward(g[e], z[e], y[e]);
        sums[std::size_t(j)] += g[e];
      }
    std::vector<float> const got = ktr::to_host(dg), got_sums = ktr::to_host(db);
    if (ktr::device_is_host) {
      for (std::size_t e = 0; e < g.size(); ++e)
        ASSERT_EQ(got[e], g[e]) << "columns " << cols << ", element " << e;
      for (std::size_t j = 0; j < sums.size(); ++j)
        EXPECT_EQ(got_sums[j], sums[j]) << "columns " << cols << ", " << j;
    } else {
      expect_close(got, Vec(g.begin(), g.end()), 1e-5, "activation gradient");
      expect_close(got_sums, Vec(sums.begin(), sums.end()), 1e-4, "bias gradient");
    }
  }
}

// gelu through the branch-free normal cdf (models/normal_cdf.hpp): z Phi(z) and Phi(z) + z phi(z) within a few
// float roundings of the double formula, the left tail included (where 1 + erf(z / sqrt 2) in float loses every
// digit; beyond |z| = 5 the rounding of z^2 / 2, the argument of e^x, dominates, as it does expf's), and the
// edges: e^x's underflow to 0, infinities, NaN.
TEST(Layers, GeluAndItsDerivativeAreWithinFloatRoundingOfTheDoubleFormulaIntoTheTail) {
  using Gelu = ktr::Act<ktr::Activation::gelu>;
  double worst_value[2] = {0, 0}, worst_slope[2] = {0, 0};  // |z| <= 5, |z| <= 13
  for (int i = -13000; i <= 13000; ++i) {
    float const z = float(i) * 1e-3f;
    double const zd = z, cdf = 0.5 * std::erfc(-zd / std::sqrt(2.0));
    double const pdf = std::exp(-0.5 * zd * zd) / std::sqrt(2.0 * M_PI);
    double const value = zd * cdf, slope = cdf + zd * pdf;
    double const v = value == 0 ? 0 : std::abs(Gelu::forward(z) - value) / std::abs(value);
    // The slope is a sum of two terms that cancel near z = -0.75 and in the left tail: relative to the terms.
    double const d = std::abs(Gelu::backward(1.0f, z, 0.0f) - slope) / (cdf + std::abs(zd) * pdf);
    for (int k = std::abs(z) <= 5.0f ? 0 : 1; k < 2; ++k)
      worst_value[k] = std::max(worst_value[k], v), worst_slope[k] = std::max(worst_slope[k], d);
  }
  EXPECT_LT(worst_value[0], 3e-6) << "relative, gelu(z) for |z| <= 5";
  EXPECT_LT(worst_slope[0], 3e-6) << "relative to Phi + |z| phi, gelu'(z) for |z| <= 5";
  EXPECT_LT(worst_value[1], 3e-5) << "relative, gelu(z) for |z| <= 13";
  EXPECT_LT(worst_slope[1], 3e-5) << "relative to Phi + |z| phi, gelu'(z) for |z| <= 13";
  EXPECT_EQ(ktr::act::exp_branchless(0.0f), 1.0f);
  EXPECT_EQ(ktr::act::exp_branchless(-100.0f), 0.0f);
  EXPECT_NEAR(ktr::act::exp_branchless(-87.0f), std::exp(-87.0), 1e-6 * std::exp(-87.0));
  EXPECT_NEAR(ktr::act::exp_branchless(80.0f), std::exp(80.0), 1e-6 * std::exp(80.0));
  float const inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(Gelu::forward(inf), inf);
  EXPECT_EQ(Gelu::forward(-40.0f), -0.0f);
  EXPECT_EQ(Gelu::backward(1.0f, 40.0f, 0.0f), 1.0f);
  EXPECT_TRUE(std::isnan(Gelu::forward(nan)));
  EXPECT_TRUE(std::isnan(Gelu::backward(1.0f, nan, 0.0f)));
}

TEST(Layers, Conv2DSameReluForwardAndGradients) {
  ktr::Conv2D layer(3, ktr::Activation::relu);
  check_layer(
      layer, Shape{2, 5, 4, 2},
      [](Vec const& x, std::vector<Vec> const& p) {
        return ktr::test::conv_ref(x, p[0], p[1], 2, 5, 4, 2, 3, true);
      },
      3);
}

TEST(Layers, Conv2DSingleChannelLinear) {
  ktr::Conv2D layer(4, ktr::Activation::identity);
  check_layer(
      layer, Shape{3, 6, 6, 1},
      [](Vec const& x, std::vector<Vec> const& p) {
        return ktr::test::conv_ref(x, p[0], p[1], 3, 6, 6, 1, 4, false);
      },
      4);
}

TEST(Layers, Conv2DIm2colForwardAndGradients) {
  ktr::Conv2D layer(3, ktr::Activation::relu, ktr::ConvAlgorithm::im2col);
  EXPECT_FALSE(layer.direct(Shape{2, 5, 4, 2}));
  check_layer(
      layer, Shape{2, 5, 4, 2},
      [](Vec const& x, std::vector<Vec> const& p) {
        return ktr::test::conv_ref(x, p[0], p[1], 2, 5, 4, 2, 3, true);
      },
      6);
}

TEST(Layers, Conv2DPicksDirectForFewInputChannels) {
  if (!ktr::device_is_host) GTEST_SKIP() << "the direct kernels run on host builds only";
  ktr::Conv2D automatic(8, ktr::Activation::relu);
  EXPECT_TRUE(automatic.direct(Shape{2, 5, 4, ktr::Conv2D::direct_max_channels}));
  EXPECT_FALSE(automatic.direct(Shape{2, 5, 4, ktr::Conv2D::direct_max_channels + 1}));
  EXPECT_THROW(ktr::Conv2D(8, ktr::Activation::relu, ktr::ConvAlgorithm::direct).direct(Shape{2, 5, 4, 64}),
               ktr::Error);
  EXPECT_FALSE(automatic.fuse_next(ktr::Flatten(), Shape{2, 5, 4, 1}));
  ktr::Conv2D many(8, ktr::Activation::relu);
  EXPECT_FALSE(many.fuse_next(ktr::AvgPool2(), Shape{2, 6, 6, 16}));  // im2col does not fuse
  EXPECT_EQ(many.pool(), 1);
}

// The direct kernels' channel tiles: 16 and 8 output channels at a time (vector packs), and the scalar tail.
TEST(Layers, Conv2DDirectChannelTilesForwardAndGradients) {
  if (!ktr::device_is_host) GTEST_SKIP() << "the direct kernels run on host builds only";
  for (auto [features_, channels_, relu_] :
       {std::tuple{32, 1, true}, std::tuple{8, 3, false}, std::tuple{5, 8, true}}) {
    // Copies: a lambda may not capture structured bindings in C++17 (clang, hipcc).
    int const features = features_, channels = channels_;
    bool const relu = relu_;
    ktr::Conv2D layer(features, relu ? ktr::Activation::relu : ktr::Activation::identity,
                      ktr::ConvAlgorithm::direct);
    check_layer(
        layer, Shape{2, 5, 3, channels},
        [=](Vec const& x, std::vector<Vec> const& p) {
          return ktr::test::conv_ref(x, p[0], p[1], 2, 5, 3, channels, features, relu);
        },
        7);
  }
}

// Conv2D + ReLU + AvgPool2 in one layer (as the model runs the SimpleCNN), odd extents so that the pool drops a
// row and a column, whose pixels must get no gradient.
TEST(Layers, Conv2DFusedAvgPoolForwardAndGradients) {
  if (!ktr::device_is_host) GTEST_SKIP() << "the direct kernels run on host builds only";
  for (auto [features_, channels_, relu_] :
       {std::tuple{16, 1, true}, std::tuple{3, 2, false}, std::tuple{8, 1, true}}) {
    // Copies: a lambda may not capture structured bindings in C++17 (clang, hipcc).
    int const features = features_, channels = channels_;
    bool const relu = relu_;
    ktr::Conv2D layer(features, relu ? ktr::Activation::relu : ktr::Activation::identity);
    Shape const in{2, 5, 7, channels};
    ASSERT_TRUE(layer.fuse_next(ktr::AvgPool2(), in));
    EXPECT_EQ(layer.pool(), 2);
    check_layer(
        layer, in,
        [=](Vec const& x, std::vector<Vec> const& p) {
          return ktr::test::pool_ref(ktr::test::conv_ref(x, p[0], p[1], 2, 5, 7, channels, features, relu), 2, 5,
                                     7, features);
        },
        8, Shape{2, 2, 3, features});
  }
}

TEST(Layers, Conv2DDirectKernelGradientIsDeterministic) {
  if (!ktr::device_is_host) GTEST_SKIP() << "the direct kernels run on host builds only";
  ktr::ExecSpace space;
  ktr::Conv2D layer(32, ktr::Activation::relu);
  Shape const in{16, 12, 12, 1};
  ASSERT_TRUE(layer.fuse_next(ktr::AvgPool2(), in));
  ktr::StandaloneLayer standalone(layer, in);
  ktr::from_host(standalone.arena.param(0), ktr::test::random_floats(9 * 32, 1));
  Tensor x("ktr::test::x", in), y("ktr::test::y", Shape{16, 6, 6, 32}), dy("ktr::test::dy", Shape{16, 6, 6, 32});
  ktr::from_host(x, ktr::test::random_floats(std::size_t(in.size()), 2));
  ktr::from_host(dy, ktr::test::random_floats(std::size_t(dy.size()), 3));
  layer.forward(space, ktr::Precision{}, x, y);
  layer.backward(space, ktr::Precision{}, x, y, dy, Tensor());
  auto const first = ktr::to_host(standalone.arena.grad(0));
  for (int i = 0; i < 3; ++i) {
    layer.backward(space, ktr::Precision{}, x, y, dy, Tensor());
    EXPECT_EQ(ktr::to_host(standalone.arena.grad(0)), first);
  }
}

TEST(Layers, AvgPoolOddExtentsForwardAndGradients) {
  ktr::AvgPool2 layer;
  EXPECT_EQ(layer.output_shape(Shape{2, 5, 7, 3}), (Shape{2, 2, 3, 3}));
  check_layer(
      layer, Shape{2, 5, 7, 3},
      [](Vec const& x, std::vector<Vec> const&) { return ktr::test::pool_ref(x, 2, 5, 7, 3); }, 5);
}

TEST(Layers, FlattenIsAView) {
  ktr::Flatten layer;
  EXPECT_TRUE(layer.is_view());
  EXPECT_EQ(layer.output_shape(Shape{4, 3, 2, 5}), (Shape{4, 30}));
}

TEST(Layers, MakeLayerParsesAndRejects) {
  EXPECT_EQ(ktr::make_layer("dense:512:relu")->describe(), "dense:512:relu");
  EXPECT_EQ(ktr::make_layer("conv3x3:32")->describe(), "conv3x3:32");
  EXPECT_THROW(ktr::make_layer("dense:0"), ktr::Error);
  EXPECT_THROW(ktr::make_layer("dense:12:tanhh"), ktr::Error);
  EXPECT_THROW(ktr::make_layer("lstm:3"), ktr::Error);
}

TEST(Loss, StableSoftmaxCrossEntropyMatchesReferenceAndFiniteDifferences) {
  ktr::ExecSpace space;
  int const B = 6, C = 10;
  auto hz = ktr::test::random_floats(B * C, 7, -3.0f, 3.0f);
  // Logits beyond the exp range of float (88.7) and of double (709.8): only the max shift keeps these finite.
  hz[5] = 1000.0f;    // row 0 (label 3): a huge logit of another class
  hz[10] = -1000.0f;  // row 1: a hugely negative logit of its own label
  hz[25] = 2000.0f;   // row 2 (label 9): a huge logit of another class
  std::vector<int> labels{3, 0, 9, 5, 5, 1};
  Tensor z("ktr::test::z", Shape{B, C}), dz("ktr::test::dz", Shape{B, C});
  ktr::from_host(z, hz);
  ktr::DeviceView<std::int32_t*> y("ktr::test::labels", B);
  auto hy = Kokkos::create_mirror_view(y);
  for (int i = 0; i < B; ++i) hy(i) = labels[i];
  Kokkos::deep_copy(y, hy);
  ktr::DeviceView<float*> loss("ktr::test::loss", 2);
  ktr::DeviceView<std::int32_t*> correct("ktr::test::correct", 2);
  ktr::softmax_cross_entropy(space, z, y, dz, ktr::LossOutput{loss, correct, 1, false});

  Vec const zd = ktr::test::to_double(hz);
  auto hl = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), loss);
  auto hc = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), correct);
  double const want = ktr::test::xent_ref(zd, labels, B, C);
  EXPECT_TRUE(std::isfinite(hl(1)));
  EXPECT_NEAR(hl(1), want, 1e-5 * want);
  EXPECT_EQ(hl(0), 0.0f);
  int hits = 0;
  for (int i = 0; i < B; ++i) {
    int best = 0;
    for (int c = 1; c < C; ++c)
      if (hz[i * C + c] > hz[i * C + best]) best = c;
    hits += best == labels[i];
  }
  EXPECT_EQ(hc(1), hits);
  auto objective = [&](Vec const& v) { return ktr::test::xent_ref(v, labels, B, C); };
  expect_close(ktr::to_host(dz), ktr::test::finite_difference(objective, zd), 1e-5, "d loss / d logits");

  // accumulate mode adds the batch's loss sum and hit count
  ktr::softmax_cross_entropy(space, z, y, Tensor(), ktr::LossOutput{loss, correct, 1, true});
  Kokkos::deep_copy(hl, loss);
  Kokkos::deep_copy(hc, correct);
  EXPECT_NEAR(hl(1), want + want * B, 1e-4 * want * B);
  EXPECT_EQ(hc(1), 2 * hits);
}

}  // namespace
