// Models: descriptions, parameter counts, initial loss, and a whole-model gradient check against finite
// differences of the composed host references.
#include <ktr/backends/tools_counter.hpp>
#include <ktr/core/error.hpp>
#include <ktr/models/loss.hpp>
#include <ktr/models/model.hpp>
#include "reference.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace {

using ktr::Model;
using ktr::Shape;
using ktr::Tensor;
using ktr::test::Vec;

double batch_loss(Model& model, std::vector<float> const& x, std::vector<int> const& labels, bool backward) {
  ktr::ExecSpace space;
  std::int64_t const B = std::int64_t(labels.size());
  Tensor input("ktr::test::x", model.input_shape(B));
  ktr::from_host(input, x);
  ktr::DeviceView<std::int32_t*> y("ktr::test::y", std::size_t(B));
  auto hy = Kokkos::create_mirror_view(y);
  for (std::int64_t i = 0; i < B; ++i) hy(i) = labels[std::size_t(i)];
  Kokkos::deep_copy(y, hy);
  ktr::DeviceView<float*> loss("ktr::test::loss", 1);
  ktr::DeviceView<std::int32_t*> correct("ktr::test::correct", 1);
  Tensor logits = model.forward(space, ktr::Precision{}, input);
  ktr::softmax_cross_entropy(space, logits, y, backward ? model.dlogits() : Tensor(),
                             ktr::LossOutput{loss, correct, 0, false});
  if (backward) model.backward(space, ktr::Precision{});
  float l = 0;
  Kokkos::deep_copy(l, Kokkos::subview(loss, 0));
  return l;
}

TEST(Model, DescriptionsRoundTripAndCountParameters) {
  Model mlp(Model::mlp(), 8);
  EXPECT_EQ(mlp.description(), "in=28x28x1 flatten dense:512:relu dense:512:relu dense:10");
  EXPECT_EQ(mlp.arena().num_parameters(), 784 * 512 + 512 + 512 * 512 + 512 + 512 * 10 + 10);
  Model cnn(Model::simple_cnn(), 8);
  EXPECT_EQ(cnn.description(), "in=28x28x1 conv3x3:32:relu avgpool2 flatten dense:10");
  EXPECT_EQ(cnn.arena().num_parameters(), 3 * 3 * 32 + 32 + 14 * 14 * 32 * 10 + 10);
  EXPECT_EQ(Model(cnn.description(), 4).description(), cnn.description());
  EXPECT_EQ(cnn.output_width(), 10);
}

TEST(Model, RejectsBadDescriptions) {
  for (char const* bad : {"", "flatten dense:10", "in=28x28 dense:10", "in=28x28x1 flatten", "in=28x28x1 blah:3",
                          "in=28x28x1 maxpool2", "in=0x28x1 flatten dense:10", "in=1x1x1 avgpool2 dense:10"})
    EXPECT_THROW(Model(bad, 4), ktr::Error) << bad;
}

// A model may end in a convolution: its output is a field (B, H, W, C), its width H x W x C values per sample.
TEST(Model, AModelEndingInAConvolutionOutputsAField) {
  Model m("in=8x8x2 conv3x3:4:relu maxpool2 conv3x3:3", 5);
  EXPECT_EQ(m.output_shape(5), (ktr::Shape{5, 4, 4, 3}));
  EXPECT_EQ(m.output_width(), 4 * 4 * 3);
  ktr::ModelPlan const plan = Model::plan(m.description(), 1);
  EXPECT_EQ(plan.output, (ktr::Shape{1, 4, 4, 3}));
  EXPECT_EQ(plan.output_width, 48);
  EXPECT_EQ(Model::plan("in=6 dense:8:tanh dense:2", 1).output, (ktr::Shape{1, 2}));
}

TEST(Model, InitialLossIsNearLogOfClassCount) {
  // Fixed seed, a batch of images in [0, 1): an untrained model should be near chance, loss ~ ln(10) = 2.303.
  for (auto const& description : {Model::mlp(), Model::simple_cnn()}) {
    Model model(description, 64);
    model.init(ktr::ExecSpace(), 42);
    auto x = ktr::test::random_floats(64 * 784, 3, 0.0f, 1.0f);
    std::vector<int> labels(64);
    for (int i = 0; i < 64; ++i) labels[std::size_t(i)] = i % 10;
    double const loss = batch_loss(model, x, labels, false);
    EXPECT_NEAR(loss, std::log(10.0), 0.35) << description;
  }
}

TEST(Model, InitializationIsSeededLecunNormal) {
  Model a(Model::mlp(), 2), b(Model::mlp(), 2), c(Model::mlp(), 2);
  a.init(ktr::ExecSpace(), 1);
  b.init(ktr::ExecSpace(), 1);
  c.init(ktr::ExecSpace(), 2);
  auto pa = ktr::to_host(a.arena().param(0)), pb = ktr::to_host(b.arena().param(0));
  auto pc = ktr::to_host(c.arena().param(0));
  EXPECT_EQ(pa, pb);
  EXPECT_NE(pa, pc);
  double sum = 0, sq = 0, limit = 0;
  for (float v : pa) sum += v, sq += double(v) * v, limit = std::max(limit, double(std::abs(v)));
  double const n = double(pa.size()), var = sq / n - (sum / n) * (sum / n);
  EXPECT_NEAR(var, 1.0 / 784, 0.05 / 784);                               // variance 1 / fan_in
  EXPECT_LE(limit, 2.0 / std::sqrt(784.0) / 0.8796256610342398 + 1e-6);  // truncated at 2 stddev
  for (float v : ktr::to_host(a.arena().param(1))) EXPECT_EQ(v, 0.0f);   // bias
}

TEST(Model, WholeModelGradientsMatchFiniteDifferences) {
  // in (2, 4, 4, 2) -> conv 3 relu -> pool -> flatten (2, 12) -> dense 5 relu -> dense 3 -> loss
  Model model("in=4x4x2 conv3x3:3:relu avgpool2 flatten dense:5:relu dense:3", 2);
  ASSERT_EQ(model.arena().count(), 6u);
  std::vector<Vec> params;
  for (std::size_t i = 0; i < model.arena().count(); ++i) {
    auto v = ktr::test::random_floats(model.arena().param(i).size(), 20 + std::uint32_t(i), -0.6f, 0.6f);
    ktr::from_host(model.arena().param(i), v);
    params.push_back(ktr::test::to_double(v));
  }
  auto x = ktr::test::random_floats(2 * 4 * 4 * 2, 9);
  std::vector<int> labels{2, 0};
  batch_loss(model, x, labels, true);

  auto reference = [&](std::vector<Vec> const& p) {
    Vec h = ktr::test::conv_ref(ktr::test::to_double(x), p[0], p[1], 2, 4, 4, 2, 3, true);
    h = ktr::test::pool_ref(h, 2, 4, 4, 3);
    h = ktr::test::dense_ref(h, p[2], p[3], 2, 12, 5, true);
    h = ktr::test::dense_ref(h, p[4], p[5], 2, 5, 3, false);
    return ktr::test::xent_ref(h, labels, 2, 3);
  };
  for (std::size_t i = 0; i < params.size(); ++i) {
    auto fd = ktr::test::finite_difference(
        [&](Vec const& v) {
          auto p = params;
          p[i] = v;
          return reference(p);
        },
        params[i]);
    auto got = ktr::to_host(model.arena().grad(i));
    for (std::size_t j = 0; j < fd.size(); ++j)
      ASSERT_NEAR(got[j], fd[j], 1e-4 * (1 + std::abs(fd[j]))) << model.arena().spec(i).name << " " << j;
  }
}

TEST(Model, ForwardAndBackwardAllocateNothing) {
  Model model(Model::simple_cnn(), 16);
  model.init(ktr::ExecSpace(), 0);
  auto x = ktr::test::random_floats(16 * 784, 1, 0.0f, 1.0f);
  std::vector<int> labels(16, 3);
  batch_loss(model, x, labels, true);  // warm-up (the test's own buffers allocate here)
  ktr::ExecSpace space;
  Tensor input("ktr::test::x", model.input_shape(16));
  {
    ktr::ToolsCounter counter;
    for (int i = 0; i < 3; ++i) {
      model.forward(space, ktr::Precision{}, input);
      model.backward(space, ktr::Precision{});
    }
    space.fence();
    EXPECT_EQ(counter.allocations(), 0);
    EXPECT_EQ(counter.deep_copies(), 0);
    EXPECT_GT(counter.kernels(), 0);
  }
}

}  // namespace
