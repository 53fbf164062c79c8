// The layer kinds of the registry beyond dense/conv3x3/avgpool2/flatten: every activation (fused into dense and
// convolution layers, and as a layer of its own), convolutions of every size, stride and padding, max and global
// average pooling, layer normalisation and dropout. Forward against a host double reference, gradients against
// finite differences of it (tests/layer_check.hpp); tokens through the registry.
#include <ktr/backends/conv.hpp>
#include <ktr/core/error.hpp>
#include <ktr/models/description.hpp>
#include <ktr/models/layers.hpp>
#include <ktr/models/model.hpp>
#include <ktr/models/registry.hpp>
#include "layer_check.hpp"
#include "reference.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

namespace {

using ktr::Activation;
using ktr::Shape;
using ktr::Tensor;
using ktr::test::check_layer;
using ktr::test::Vec;

// Dense layers with every activation: 5 outputs take the narrow kernels on a host, 20 the gemm path.
TEST(LayerKinds, EveryActivationFusedIntoDenseMatchesReferenceAndGradients) {
  for (Activation a : ktr::kActivations)
    for (int features : {5, 20}) {
      SCOPED_TRACE(std::string(ktr::activation_name(a)) + " x " + std::to_string(features));
      ktr::Dense layer(features, a);
      std::string const name = ktr::activation_name(a);
      check_layer(
          layer, Shape{3, 7},
          [=](Vec const& x, std::vector<Vec> const& p) {
            return ktr::test::act_ref(name, ktr::test::dense_ref(x, p[0], p[1], 3, 7, features, false));
          },
          21);
    }
}

// The convolution library's path where this build and CPU have one (oneDNN on hosts), said once where not.
bool conv_library_runs() {
  ktr::ConvShape s;
  std::string const why = ktr::conv_library_unavailable(s, ktr::Precision{});
  static bool said = false;
  if (!why.empty() && !said) std::printf("[ skipped  ] the convolution library's path: %s\n", why.c_str());
  said = true;
  return why.empty();
}

char const* algorithm_name(ktr::ConvAlgorithm a) {
  return a == ktr::ConvAlgorithm::direct ? "direct" : a == ktr::ConvAlgorithm::library ? "library" : "im2col";
}

TEST(LayerKinds, EveryActivationFusedIntoConvolutionMatchesReferenceAndGradients) {
  for (Activation a : ktr::kActivations)
    for (auto algorithm : {ktr::ConvAlgorithm::im2col, ktr::ConvAlgorithm::direct, ktr::ConvAlgorithm::library}) {
      if (algorithm == ktr::ConvAlgorithm::direct && !ktr::device_is_host) continue;  // host builds only
      if (algorithm == ktr::ConvAlgorithm::library && !conv_library_runs()) continue;
      std::string const name = ktr::activation_name(a);
      SCOPED_TRACE(name + " " + algorithm_name(algorithm));
      ktr::Conv2D layer(8, a, algorithm);
      check_layer(
          layer, Shape{2, 5, 4, 2},
          [=](Vec const& x, std::vector<Vec> const& p) {
            return ktr::test::conv_ref(x, p[0], p[1], 2, 5, 4, 2, 8, 3, 1, "same", name);
          },
          22);
    }
}

// The direct kernels with the average pool fused in, for activations whose derivative needs z and y.
TEST(LayerKinds, DirectConvolutionWithFusedPoolTakesEveryKindOfActivation) {
  if (!ktr::device_is_host) GTEST_SKIP() << "the direct kernels run on host builds only";
  // Activations other than ReLU and identity have direct kernels for multiples of 8 output channels only.
  EXPECT_TRUE(ktr::Conv2D(5, Activation::relu).direct(Shape{2, 5, 4, 1}));
  EXPECT_FALSE(ktr::Conv2D(5, Activation::gelu).direct(Shape{2, 5, 4, 1}));
  EXPECT_TRUE(ktr::Conv2D(8, Activation::gelu).direct(Shape{2, 5, 4, 1}));
  EXPECT_THROW(ktr::Conv2D(5, Activation::gelu, ktr::ConvAlgorithm::direct).direct(Shape{2, 5, 4, 1}), ktr::Error);
  for (Activation a : {Activation::gelu, Activation::tanh, Activation::leaky_relu}) {
    std::string const name = ktr::activation_name(a);
    SCOPED_TRACE(name);
    ktr::Conv2D layer(16, a);
    Shape const in{2, 5, 7, 1};
    ASSERT_TRUE(layer.fuse_next(ktr::AvgPool2(), in));
    check_layer(
        layer, in,
        [=](Vec const& x, std::vector<Vec> const& p) {
          return ktr::test::pool_ref(ktr::test::conv_ref(x, p[0], p[1], 2, 5, 7, 1, 16, 3, 1, "same", name), 2, 5,
                                     7, 16);
        },
        23, Shape{2, 2, 3, 16});
  }
}

TEST(LayerKinds, EveryActivationAsALayerMatchesReferenceAndGradients) {
  for (Activation a : ktr::kActivations) {
    std::string const name = ktr::activation_name(a);
    SCOPED_TRACE(name);
    auto layer = ktr::make_layer(name);
    EXPECT_EQ(layer->describe(), name);
    EXPECT_EQ(layer->output_shape(Shape{3, 2, 2, 5}), (Shape{3, 2, 2, 5}));
    check_layer(
        *layer, Shape{3, 11}, [=](Vec const& x, std::vector<Vec> const&) { return ktr::test::act_ref(name, x); },
        24);
  }
}

// Every size, both strides (SAME pads as XLA: on even extents the smaller half of the padding comes first) and
// VALID padding, on non-square images.
TEST(LayerKinds, ConvolutionFormsMatchReferenceAndGradients) {
  struct Case {
    char const* token;
    int H, W, C, F, K, S;
    char const* padding;
  };
  for (Case c :
       {Case{"conv1x1:3", 4, 5, 2, 3, 1, 1, "same"}, Case{"conv5x5:4:tanh", 6, 5, 2, 4, 5, 1, "same"},
        Case{"conv7x7:3:gelu", 7, 8, 1, 3, 7, 1, "same"}, Case{"conv3x3:4:s2", 8, 6, 3, 4, 3, 2, "same"},
        Case{"conv3x3:4:relu:s2", 7, 5, 2, 4, 3, 2, "same"}, Case{"conv7x7:2:s2", 4, 9, 2, 2, 7, 2, "same"},
        Case{"conv5x5:3:silu:valid", 7, 6, 2, 3, 5, 1, "valid"},
        Case{"conv3x3:4:elu:s2:valid", 9, 8, 2, 4, 3, 2, "valid"}, Case{"conv1x1:2:s2", 5, 5, 3, 2, 1, 2, "same"},
        // fewer outputs than inputs at stride 1: the input gradient is a convolution of dy
        Case{"conv3x3:2:tanh", 5, 4, 9, 2, 3, 1, "same"}, Case{"conv5x5:2:valid", 7, 6, 4, 2, 5, 1, "valid"},
        Case{"conv1x1:1", 3, 5, 3, 1, 1, 1, "same"}, Case{"conv7x7:2:gelu", 4, 5, 3, 2, 7, 1, "same"}}) {
    SCOPED_TRACE(c.token);
    auto layer = ktr::make_layer(c.token);
    EXPECT_EQ(layer->describe(), c.token);
    auto const* conv = dynamic_cast<ktr::Conv2D const*>(layer.get());
    ASSERT_NE(conv, nullptr);
    Shape const in{2, c.H, c.W, c.C};
    EXPECT_FALSE(conv->direct(in)) << "these are the im2col and library forms";
    int Ho = 0, Wo = 0;
    std::string const act = ktr::activation_name(conv->activation());
    ktr::test::conv_ref(Vec(in.size()), Vec(std::size_t(c.K * c.K * c.C * c.F)), Vec(std::size_t(c.F)), 2, c.H,
                        c.W, c.C, c.F, c.K, c.S, c.padding, act, &Ho, &Wo);
    EXPECT_EQ(layer->output_shape(in), (Shape{2, Ho, Wo, c.F}));
    for (auto algorithm : {ktr::ConvAlgorithm::im2col, ktr::ConvAlgorithm::library}) {
      if (algorithm == ktr::ConvAlgorithm::library && !conv_library_runs()) continue;
      SCOPED_TRACE(algorithm_name(algorithm));
      ktr::Conv2D each(c.F, conv->activation(), algorithm, conv->form());
      EXPECT_EQ(each.library(in, ktr::Precision{}), algorithm == ktr::ConvAlgorithm::library);
      check_layer(
          each, in,
          [=](Vec const& x, std::vector<Vec> const& p) {
            return ktr::test::conv_ref(x, p[0], p[1], 2, c.H, c.W, c.C, c.F, c.K, c.S, c.padding, act);
          },
          25);
    }
  }
}

// Periodic grids: the input wraps around ((K - 1) / 2 rows before, K / 2 after, as Flax's padding="CIRCULAR"), at
// stride 1 and 2, odd and even extents, and a window wider than the image (which wraps more than once); the
// input gradient gathers every wrapped copy.
TEST(LayerKinds, CircularConvolutionWrapsTheGridAndGathersWrappedGradients) {
  struct Case {
    char const* token;
    int H, W, C, F, K, S;
  };
  for (Case c :
       {Case{"conv3x3:4:circular", 5, 4, 2, 4, 3, 1}, Case{"conv3x3:8:relu:circular", 4, 4, 1, 8, 3, 1},
        Case{"conv5x5:3:tanh:s2:circular", 7, 6, 2, 3, 5, 2}, Case{"conv7x7:2:circular", 3, 4, 2, 2, 7, 1},
        Case{"conv1x1:2:s2:circular", 5, 4, 3, 2, 1, 2}, Case{"conv3x3:2:circular", 4, 5, 3, 2, 3, 1},
        Case{"conv7x7:1:silu:circular", 3, 4, 2, 1, 7, 1}}) {
    SCOPED_TRACE(c.token);
    auto layer = ktr::make_layer(c.token);
    EXPECT_EQ(layer->describe(), c.token);
    Shape const in{2, c.H, c.W, c.C};
    EXPECT_EQ(layer->output_shape(in), (Shape{2, (c.H - 1) / c.S + 1, (c.W - 1) / c.S + 1, c.F}));
    auto const& conv = dynamic_cast<ktr::Conv2D const&>(*layer);
    std::string const act = ktr::activation_name(conv.activation());
    // im2col wraps its reads; the library convolves a wrapped copy and folds the copy's gradient back.
    for (auto algorithm : {ktr::ConvAlgorithm::im2col, ktr::ConvAlgorithm::library}) {
      if (algorithm == ktr::ConvAlgorithm::library && !conv_library_runs()) continue;
      SCOPED_TRACE(algorithm_name(algorithm));
      ktr::Conv2D each(c.F, conv.activation(), algorithm, conv.form());
      check_layer(
          each, in,
          [=](Vec const& x, std::vector<Vec> const& p) {
            return ktr::test::conv_ref(x, p[0], p[1], 2, c.H, c.W, c.C, c.F, c.K, c.S, "circular", act);
          },
          29);
    }
  }
  for (char const* token : {"conv3x3:4:circular:valid", "conv3x3:4:valid:circular", "conv3x3:4:s2:s2",
                            "conv3x3:4:relu:gelu", "conv3x3:4:relu:s2:relu"})
    EXPECT_THROW(ktr::make_layer(token), ktr::Error) << token;
  // Issue 40, also seen: the suffixes come in any order, each once, and name the same layer.
  EXPECT_EQ(ktr::parse_description("in=8x8x1 conv3x3:4:circular:s2:gelu").text(),
            ktr::parse_description("in=8x8x1 conv3x3:4:gelu:s2:circular").text());
  EXPECT_EQ(ktr::parse_description("in=8x8x1 conv3x3:4:valid:relu").text(),
            ktr::parse_description("in=8x8x1 conv3x3:4:relu:valid").text());
  try {
    ktr::make_layer("conv3x3:4:relu:circular:valid");
    ADD_FAILURE() << "circular and valid together were taken";
  } catch (ktr::Error const& e) {
    EXPECT_NE(std::string(e.what()).find("'conv3x3:4:relu:circular:valid'"), std::string::npos) << e.what();
  }
}

// The library's forward with its layer's bias and activation fused (oneDNN's post-ops) writes the bits of its
// plain forward followed by ktr's own bias and activation pass (what the layer ran before): goldens and resumed
// runs keep their bits. SAME at stride 1 and 2 (padding split unevenly), fp32 and, where the CPU has it, bf16.
TEST(LayerKinds, LibraryConvolutionWithFusedBiasAndActivationWritesTheBitsOfTheUnfusedPasses) {
  if (!conv_library_runs()) GTEST_SKIP() << "this build and CPU run no convolution library";
  using Act = ktr::ConvEpilogue::Act;
  std::vector<ktr::Precision> precisions{ktr::Precision{}};
  ktr::Precision const bf16{ktr::MatmulPrecision::bf16, {}};
  if (ktr::conv_library_unavailable(ktr::ConvShape{}, bf16).empty()) precisions.push_back(bf16);
  for (ktr::Precision const& precision : precisions)
    for (std::int64_t stride : {1, 2}) {
      ktr::ConvShape s;
      s.batch = 2, s.height = 8, s.width = 7, s.channels = 12, s.features = 24, s.kernel = 3, s.stride = stride;
      s.out_height = (s.height - 1) / stride + 1, s.out_width = (s.width - 1) / stride + 1;
      s.pad_top = ((s.out_height - 1) * stride + 3 - s.height) / 2,
      s.pad_left = ((s.out_width - 1) * stride + 3 - s.width) / 2;
      s.pad_bottom = (s.out_height - 1) * stride + 3 - s.height - s.pad_top;
      s.pad_right = (s.out_width - 1) * stride + 3 - s.width - s.pad_left;
      std::int64_t const nx = s.batch * s.height * s.width * s.channels, nw = 9 * s.channels * s.features,
                         ny = s.batch * s.out_height * s.out_width * s.features;
      auto values = [](std::int64_t n, double f) {
        ktr::HostView<float*> h("values", std::size_t(n));
        for (std::int64_t i = 0; i < n; ++i) h(i) = float(std::sin(f * double(i + 1)));
        return h;
      };
      auto const x = values(nx, 0.37), w = values(nw, 0.11), b = values(s.features, 1.3);
      ktr::DeviceView<float*> xd("x", std::size_t(nx)), wd("w", std::size_t(nw)), bd("b", std::size_t(s.features)),
          plain("plain", std::size_t(ny)), fused("fused", std::size_t(ny));
      Kokkos::deep_copy(xd, x), Kokkos::deep_copy(wd, w), Kokkos::deep_copy(bd, b);
      ktr::ExecSpace space;
      ktr::conv_library_forward(space, precision, s, xd.data(), wd.data(), plain.data());
      auto const p = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), plain);
      for (Act act : {Act::identity, Act::relu, Act::leaky_relu}) {
        SCOPED_TRACE(std::string(precision.matmul == ktr::MatmulPrecision::bf16 ? "bf16" : "fp32") + " stride " +
                     std::to_string(stride) + " act " + std::to_string(int(act)));
        ktr::ConvEpilogue const epilogue{bd.data(), act, 0.01f};
        ktr::conv_library_forward(space, precision, s, xd.data(), wd.data(), fused.data(), epilogue);
        auto const f = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), fused);
        int differ = 0, negative = 0;
        for (std::int64_t i = 0; i < ny; ++i) {
          float const z = p(i) + b(i % s.features);
          float const y = act == Act::relu         ? (z < 0.0f ? 0.0f : z)
                          : act == Act::leaky_relu ? (z >= 0.0f ? z : 0.01f * z)
                                                   : z;
          negative += z < 0.0f;
          differ += std::memcmp(&y, &f(i), sizeof(float)) != 0;
        }
        EXPECT_EQ(differ, 0) << "of " << ny << " outputs";
        EXPECT_GT(negative, ny / 8) << "the activations' two sides are both checked";
      }
    }
}

TEST(LayerKinds, MaxPoolOddExtentsForwardAndGradients) {
  auto layer = ktr::make_layer("maxpool2");
  EXPECT_EQ(layer->output_shape(Shape{2, 5, 7, 3}), (Shape{2, 2, 3, 3}));
  check_layer(
      *layer, Shape{2, 5, 7, 3},
      [](Vec const& x, std::vector<Vec> const&) { return ktr::test::maxpool_ref(x, 2, 5, 7, 3); }, 26);
}

TEST(LayerKinds, GlobalAveragePoolForwardAndGradients) {
  auto layer = ktr::make_layer("globalavgpool");
  EXPECT_EQ(layer->output_shape(Shape{2, 3, 5, 4}), (Shape{2, 4}));
  check_layer(
      *layer, Shape{2, 3, 5, 4},
      [](Vec const& x, std::vector<Vec> const&) {
        Vec y(2 * 4, 0.0);
        for (int n = 0; n < 2; ++n)
          for (int p = 0; p < 15; ++p)
            for (int c = 0; c < 4; ++c) y[n * 4 + c] += x[(n * 15 + p) * 4 + c] / 15.0;
        return y;
      },
      27);
}

// upsample2 repeats each pixel into a 2x2 block (jnp.repeat twice); its gradient sums the block.
TEST(LayerKinds, Upsample2RepeatsEachPixelAndSumsItsGradients) {
  auto layer = ktr::make_layer("upsample2");
  EXPECT_EQ(layer->output_shape(Shape{2, 3, 5, 4}), (Shape{2, 6, 10, 4}));
  check_layer(
      *layer, Shape{2, 3, 5, 4},
      [](Vec const& x, std::vector<Vec> const&) {
        Vec y(2 * 6 * 10 * 4);
        for (int n = 0; n < 2; ++n)
          for (int h = 0; h < 6; ++h)
            for (int w = 0; w < 10; ++w)
              for (int c = 0; c < 4; ++c)
                y[((n * 6 + h) * 10 + w) * 4 + c] = x[((n * 3 + h / 2) * 5 + w / 2) * 4 + c];
        return y;
      },
      28);
  EXPECT_THROW(ktr::make_layer("upsample2")->output_shape(Shape{2, 7}), ktr::Error);
  EXPECT_THROW(ktr::make_layer("upsample2:3"), ktr::Error);
}

// convT2x2 as Flax's ConvTranspose(N, (2, 2), strides=(2, 2)): each input pixel feeds its own 2x2 output block
// through the kernel's taps in reverse, y[2i + a, 2j + c] = b + x[i, j] W[1 - a, 1 - c].
TEST(LayerKinds, TransposedConvolutionFillsEachBlockFromReversedTapsAndGradients) {
  for (char const* token : {"convT2x2:3", "convT2x2:4:gelu"}) {
    SCOPED_TRACE(token);
    auto layer = ktr::make_layer(token);
    EXPECT_EQ(layer->describe(), token);
    EXPECT_STREQ(layer->module(), "ConvTranspose");
    int const B = 2, H = 3, W = 2, C = 2, N = std::string(token) == "convT2x2:3" ? 3 : 4;
    Shape const in{B, H, W, C};
    EXPECT_EQ(layer->output_shape(in), (Shape{B, 2 * H, 2 * W, N}));
    auto specs = layer->param_specs(in);
    ASSERT_EQ(specs.size(), 2u);
    EXPECT_EQ(specs[0].shape, (Shape{2, 2, C, N}));
    EXPECT_EQ(specs[0].fan_in, 4 * C);
    std::string const act = N == 3 ? "identity" : "gelu";
    check_layer(
        *layer, in,
        [=](Vec const& x, std::vector<Vec> const& p) {
          Vec y(std::size_t(B) * 4 * H * W * N);
          for (int b = 0; b < B; ++b)
            for (int h = 0; h < 2 * H; ++h)
              for (int w = 0; w < 2 * W; ++w)
                for (int n = 0; n < N; ++n) {
                  double s = p[1][std::size_t(n)];
                  int const kh = 1 - h % 2, kw = 1 - w % 2;
                  for (int k = 0; k < C; ++k)
                    s += x[((std::size_t(b) * H + h / 2) * W + w / 2) * C + k] *
                         p[0][((std::size_t(kh) * 2 + kw) * C + k) * N + n];
                  y[((std::size_t(b) * 2 * H + h) * 2 * W + w) * N + n] = ktr::test::act_ref(act, s);
                }
          return y;
        },
        30);
  }
  for (char const* token : {"convT2x2", "convT2x2:0", "convT2x2:4:tanhh", "convT2x2:4:relu:s2", "convT3x3:4"})
    EXPECT_THROW(ktr::make_layer(token), ktr::Error) << token;
  EXPECT_THROW(ktr::make_layer("convT2x2:4")->output_shape(Shape{2, 7}), ktr::Error);
}

TEST(LayerKinds, LayerNormOnFeaturesAndOnChannelsForwardAndGradients) {
  auto layer = ktr::make_layer("layernorm");
  EXPECT_STREQ(layer->module(), "LayerNorm");
  auto specs = layer->param_specs(Shape{1, 9});
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].name, "scale");
  EXPECT_EQ(specs[0].init, ktr::Init::ones);
  EXPECT_EQ(specs[1].name, "bias");
  check_layer(
      *layer, Shape{4, 9},
      [](Vec const& x, std::vector<Vec> const& p) { return ktr::test::layernorm_ref(x, p[0], p[1], 9); }, 28);
  auto image = ktr::make_layer("layernorm");
  check_layer(
      *image, Shape{2, 3, 2, 5},
      [](Vec const& x, std::vector<Vec> const& p) { return ktr::test::layernorm_ref(x, p[0], p[1], 5); }, 29);
}

// Dropout outside training passes its input through; at rate 0 it does in training too.
TEST(LayerKinds, DropoutIsTheIdentityOutsideTrainingAndAtRateZero) {
  ktr::ExecSpace space;
  Kokkos::View<std::int64_t, ktr::MemSpace> step("step");
  ktr::RandomKey const key{7, step.data(), 0};
  for (auto [token, training] : {std::pair{"dropout:0.5", false}, std::pair{"dropout:0", true}}) {
    auto layer = ktr::make_layer(token);
    layer->set_random_key(training ? &key : nullptr, 0);
    check_layer(
        *layer, Shape{3, 17}, [](Vec const& x, std::vector<Vec> const&) { return x; }, 30);
  }
}

// In training: the share of zeros is P and the mean is kept (inverted dropout), the backward applies the forward's
// mask, the draw is a function of (seed, step, layer, row) alone, and another step draws another mask.
TEST(LayerKinds, DropoutInTrainingKeepsTheMeanAndDrawsByKey) {
  ktr::ExecSpace space;
  double const P = 0.3;
  Kokkos::View<std::int64_t, ktr::MemSpace> step("step");
  auto layer = ktr::make_layer("dropout:0.3");
  EXPECT_TRUE(layer->random());
  std::int64_t const rows = 400, cols = 250, n = rows * cols;
  Tensor x("x", Shape{rows, cols}), y("y", Shape{rows, cols}), dy("dy", Shape{rows, cols}),
      dx("dx", Shape{rows, cols});
  ktr::from_host(x, std::vector<float>(std::size_t(n), 2.0f));
  ktr::RandomKey const key{11, step.data(), 0};
  layer->set_random_key(&key, 3);
  layer->forward(space, ktr::Precision{}, x, y);
  auto const out = ktr::to_host(y);
  std::int64_t zeros = 0;
  double sum = 0;
  for (float v : out) {
    zeros += v == 0.0f;
    sum += v;
    ASSERT_TRUE(v == 0.0f || std::abs(v - 2.0f / (1.0f - float(P))) < 1e-6f) << v;
  }
  double const sd = std::sqrt(P * (1 - P) / double(n));  // of the share of zeros
  EXPECT_NEAR(double(zeros) / double(n), P, 5 * sd);
  EXPECT_NEAR(sum / double(n), 2.0, 2.0 / (1 - P) * 5 * sd);

  ktr::from_host(dy, std::vector<float>(std::size_t(n), 1.0f));
  layer->backward(space, ktr::Precision{}, x, y, dy, dx);
  auto const grad = ktr::to_host(dx);
  for (std::size_t i = 0; i < out.size(); ++i) ASSERT_EQ(grad[i] == 0.0f, out[i] == 0.0f) << i;

  // Rows 100.. of this batch, drawn as a micro-batch that starts at row 100, draw the same.
  Tensor part("part", Shape{rows - 100, cols}), part_y("part_y", Shape{rows - 100, cols});
  ktr::from_host(part, std::vector<float>(std::size_t((rows - 100) * cols), 2.0f));
  ktr::RandomKey const later{11, step.data(), 100};
  layer->set_random_key(&later, 3);
  layer->forward(space, ktr::Precision{}, part, part_y);
  EXPECT_EQ(ktr::to_host(part_y), std::vector<float>(out.begin() + 100 * cols, out.end()));

  // Another step or another layer index: another mask.
  Kokkos::deep_copy(step, 1);
  layer->set_random_key(&key, 3);
  layer->forward(space, ktr::Precision{}, x, y);
  EXPECT_NE(ktr::to_host(y), out);
  Kokkos::deep_copy(step, 0);
  layer->set_random_key(&key, 4);
  layer->forward(space, ktr::Precision{}, x, y);
  EXPECT_NE(ktr::to_host(y), out);
}

TEST(LayerKinds, RegistryParsesPrintsAndRejectsTokens) {
  for (char const* token : {"dense:8:gelu_tanh",
                            "conv5x5:16:gelu",
                            "conv3x3:8:s2",
                            "conv7x7:4:sine:s2:valid",
                            "conv1x1:2:valid",
                            "maxpool2",
                            "avgpool2",
                            "globalavgpool",
                            "layernorm",
                            "dropout:0.1",
                            "dropout:0",
                            "leaky_relu",
                            "identity",
                            "flatten",
                            "upsample2",
                            "convT2x2:8:relu",
                            "conv3x3:4:circular",
                            "conv5x5:4:tanh:s2:circular",
                            "save:a",
                            "add:skip_1",
                            "concat:U2"})
    EXPECT_EQ(ktr::make_layer(token)->describe(), token);
  EXPECT_EQ(ktr::make_layer("dense:8:swish")->describe(), "dense:8:silu");
  EXPECT_EQ(ktr::make_layer("conv3x3:8:identity")->describe(), "conv3x3:8");
  EXPECT_EQ(ktr::make_layer("dropout:0.250")->describe(), "dropout:0.25");
  EXPECT_EQ(ktr::make_layer("conv3x3:8:valid:s2")->describe(), "conv3x3:8:s2:valid");  // suffixes in any order
  for (char const* token :
       {"dense:12:tanhh", "dense:12:relu:relu", "conv4x4:3", "conv3x3:8:s3", "conv3x3", "dropout:1",
        "dropout:-0.1", "dropout:nan", "dropout", "maxpool2:2", "layernorm:3", "relu:1", "dense:", "lstm:3", ""})
    EXPECT_THROW(ktr::make_layer(token), ktr::Error) << token;
  std::string message;
  try {
    ktr::make_layer("dense:12:tanhh");
  } catch (ktr::Error const& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("'dense:12:tanhh'"), std::string::npos) << message;
  EXPECT_NE(message.find("gelu_tanh"), std::string::npos) << message;  // lists the activations
}

// Parameters take Flax's names: per module class, numbered in order of appearance.
TEST(LayerKinds, ModelNamesParametersAsFlaxModules) {
  ktr::Model model(
      "in=8x8x1 conv5x5:4:gelu layernorm maxpool2 conv3x3:2:s2 flatten dense:16:silu layernorm "
      "dropout:0.2 dense:3",
      2);
  std::vector<std::string> names;
  for (std::size_t i = 0; i < model.arena().count(); ++i) names.push_back(model.arena().spec(i).name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"Conv_0.kernel", "Conv_0.bias", "LayerNorm_0.scale", "LayerNorm_0.bias",
                                      "Conv_1.kernel", "Conv_1.bias", "Dense_0.kernel", "Dense_0.bias",
                                      "LayerNorm_1.scale", "LayerNorm_1.bias", "Dense_1.kernel", "Dense_1.bias"}));
  EXPECT_TRUE(model.random());
  EXPECT_EQ(model.output_width(), 3);
  EXPECT_EQ(model.arena().spec(2).shape, (Shape{4}));
  EXPECT_EQ(model.arena().spec(4).shape, (Shape{3, 3, 4, 2}));
}

}  // namespace
