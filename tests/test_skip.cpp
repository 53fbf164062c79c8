// Skip connections (save:NAME, add:NAME, concat:NAME): whole models against composed host double references,
// forward and every gradient (finite differences of the reference), a tensor used twice, a tensor saved before
// the first layer with parameters, the parser's refusals, and fusion never reaching across a save.
#include <ktr/backends/tools_counter.hpp>
#include <ktr/core/error.hpp>
#include <ktr/models/layers.hpp>
#include <ktr/models/model.hpp>
#include "reference.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

namespace {

using ktr::Model;
using ktr::Shape;
using ktr::Tensor;
using ktr::test::Vec;
namespace ref = ktr::test;

using ModelRef = std::function<Vec(Vec const&, std::vector<Vec> const&)>;

// The model's forward against `reference`, and the gradients of L = sum(r * y) (every parameter and the input)
// against finite differences of it.
void check_model(std::string const& description, std::int64_t batch, ModelRef const& reference) {
  SCOPED_TRACE(description);
  ktr::ExecSpace space;
  Model model(description, batch);
  std::vector<Vec> params;
  for (std::size_t i = 0; i < model.arena().count(); ++i) {
    auto v = ref::random_floats(model.arena().param(i).size(), 40 + std::uint32_t(i), -0.7f, 0.7f);
    ktr::from_host(model.arena().param(i), v);
    params.push_back(ref::to_double(v));
  }
  Tensor x("ktr::test::x", model.input_shape(batch)), dx("ktr::test::dx", model.input_shape(batch));
  auto hx = ref::random_floats(std::size_t(x.size()), 7);
  ktr::from_host(x, hx);
  Vec const xd = ref::to_double(hx);
  Tensor y = model.forward(space, ktr::Precision{}, x);
  Vec const want = reference(xd, params);
  auto const got = ktr::to_host(y);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5 * (1 + std::abs(want[i]))) << i;

  auto r = ref::random_floats(std::size_t(y.size()), 8);
  ktr::from_host(model.dlogits(), r);
  model.backward(space, ktr::Precision{}, dx);
  Vec const rd = ref::to_double(r);
  auto expect_gradient = [&](std::vector<float> const& g, Vec const& fd, std::string const& what) {
    ASSERT_EQ(g.size(), fd.size()) << what;
    for (std::size_t j = 0; j < fd.size(); ++j)
      ASSERT_NEAR(g[j], fd[j], 1e-4 * (1 + std::abs(fd[j]))) << what << " " << j;
  };
  expect_gradient(ktr::to_host(dx),
                  ref::finite_difference([&](Vec const& v) { return ref::dot(rd, reference(v, params)); }, xd),
                  "d/dx");
  for (std::size_t i = 0; i < params.size(); ++i)
    expect_gradient(ktr::to_host(model.arena().grad(i)),
                    ref::finite_difference(
                        [&](Vec const& v) {
                          auto p = params;
                          p[i] = v;
                          return ref::dot(rd, reference(xd, p));
                        },
                        params[i]),
                    model.arena().spec(i).name);
}

Vec plus(Vec a, Vec const& b) {
  for (std::size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  return a;
}

// [a, b] along the last axis, rows of ca and cb values.
Vec concat(Vec const& a, Vec const& b, std::size_t ca, std::size_t cb) {
  Vec y;
  for (std::size_t r = 0; r < a.size() / ca; ++r) {
    y.insert(y.end(), a.begin() + std::ptrdiff_t(r * ca), a.begin() + std::ptrdiff_t((r + 1) * ca));
    y.insert(y.end(), b.begin() + std::ptrdiff_t(r * cb), b.begin() + std::ptrdiff_t((r + 1) * cb));
  }
  return y;
}

Vec upsample2(Vec const& x, int B, int H, int W, int C) {
  Vec y(std::size_t(B) * 4 * H * W * C);
  for (int n = 0; n < B; ++n)
    for (int h = 0; h < 2 * H; ++h)
      for (int w = 0; w < 2 * W; ++w)
        for (int c = 0; c < C; ++c)
          y[((std::size_t(n) * 2 * H + h) * 2 * W + w) * C + c] =
              x[((std::size_t(n) * H + h / 2) * W + w / 2) * C + c];
  return y;
}

Vec dense(Vec const& x, Vec const& w, Vec const& b, int B, int in, int out, char const* act) {
  return ref::act_ref(act, ref::dense_ref(x, w, b, B, in, out, false));
}

TEST(SkipConnections, ResidualMlpMatchesReferenceAndGradients) {
  check_model("in=3 dense:4:tanh save:r dense:4:tanh add:r dense:2", 3,
              [](Vec const& x, std::vector<Vec> const& p) {
                Vec const h = dense(x, p[0], p[1], 3, 3, 4, "tanh");
                return dense(plus(dense(h, p[2], p[3], 3, 4, 4, "tanh"), h), p[4], p[5], 3, 4, 2, "identity");
              });
}

// The U-Net shape of the issue, small: a skip across a max pool, upsample2 and a concatenation of channels.
TEST(SkipConnections, UNetMatchesReferenceAndGradients) {
  check_model("in=4x6x1 conv3x3:2:tanh save:a maxpool2 conv3x3:3:tanh upsample2 concat:a conv3x3:2:silu conv1x1:1",
              2, [](Vec const& x, std::vector<Vec> const& p) {
                Vec const a = ref::conv_ref(x, p[0], p[1], 2, 4, 6, 1, 2, 3, 1, "same", "tanh");
                Vec h = ref::pool_ref(a, 2, 4, 6, 2, true);
                h = upsample2(ref::conv_ref(h, p[2], p[3], 2, 2, 3, 2, 3, 3, 1, "same", "tanh"), 2, 2, 3, 3);
                h = ref::conv_ref(concat(h, a, 3, 2), p[4], p[5], 2, 4, 6, 5, 2, 3, 1, "same", "silu");
                return ref::conv_ref(h, p[6], p[7], 2, 4, 6, 2, 1, 1, 1, "same", "identity");
              });
}

// A tensor used twice (add and concat) gets the sum of both gradients; the first tensor saved is the input
// itself, before any layer with parameters, whose gradient then reaches dx.
TEST(SkipConnections, TensorUsedTwiceAndSavedInputSumTheirGradients) {
  check_model("in=4 save:x dense:4:sigmoid save:a dense:4:tanh add:a concat:a dense:4 add:x dense:2", 2,
              [](Vec const& x, std::vector<Vec> const& p) {
                Vec const a = dense(x, p[0], p[1], 2, 4, 4, "sigmoid");
                Vec const c = concat(plus(dense(a, p[2], p[3], 2, 4, 4, "tanh"), a), a, 4, 4);
                return dense(plus(dense(c, p[4], p[5], 2, 8, 4, "identity"), x), p[6], p[7], 2, 4, 2, "identity");
              });
}

// Each refusal names the token and the reason.
TEST(SkipConnections, ParserRefusesBadNamesAndShapesNamingTheToken) {
  struct Case {
    char const* description;
    char const* token;
    char const* why;
  };
  for (Case c : {Case{"in=4 dense:4 add:r dense:1", "'add:r'", "nothing is saved as 'r'"},
                 Case{"in=4 save:r dense:4 save:r add:r dense:1", "'save:r'", "saved twice"},
                 Case{"in=4 save:r dense:4 dense:1", "'save:r'", "never used"},
                 Case{"in=4 save:r dense:5 add:r dense:1", "'add:r'", "differ in shape"},
                 Case{"in=4x4x2 save:a conv3x3:2:s2 concat:a conv1x1:1", "'concat:a'", "differ in more than"},
                 Case{"in=4 save:r-1 dense:4 add:r-1 dense:1", "'save:r-1'", "letters, digits or underscores"},
                 Case{"in=4 save dense:4", "'save'", "save:NAME"},
                 Case{"in=4 save:a:b dense:4", "'save:a:b'", "save:NAME"}}) {
    SCOPED_TRACE(c.description);
    try {
      Model::plan(c.description, 2);
      ADD_FAILURE() << "accepted";
    } catch (ktr::Error const& e) {
      std::string const what = e.what();
      EXPECT_NE(what.find(c.token), std::string::npos) << what;
      EXPECT_NE(what.find(c.why), std::string::npos) << what;
    }
  }
  // A skip whose shapes fit parses, prints back as written and has the joined output.
  auto const plan = Model::plan("in=8x8x3 conv3x3:4 save:s conv3x3:4 add:s concat:s conv1x1:2", 2);
  EXPECT_EQ(plan.description, "in=8x8x3 conv3x3:4 save:s conv3x3:4 add:s concat:s conv1x1:2");
  EXPECT_EQ(plan.output, (Shape{1, 8, 8, 2}));
}

// The host's conv + average pool fusion pairs a convolution with the pool right after it; a save between them
// keeps the convolution's output, so they stay apart.
TEST(SkipConnections, FusionNeverReachesAcrossASave) {
  if (!ktr::device_is_host) GTEST_SKIP() << "the fused direct kernels run on host builds only";
  Model fused("in=8x8x1 conv3x3:8:relu avgpool2 flatten dense:2", 2);
  Model apart("in=8x8x1 conv3x3:8:relu save:a avgpool2 upsample2 concat:a flatten dense:2", 2);
  EXPECT_EQ(dynamic_cast<ktr::Conv2D const&>(fused.layer(0)).pool(), 2);
  EXPECT_EQ(dynamic_cast<ktr::Conv2D const&>(apart.layer(0)).pool(), 1);
  check_model("in=4x4x1 conv3x3:8:relu save:a avgpool2 upsample2 concat:a conv1x1:1", 2,
              [](Vec const& x, std::vector<Vec> const& p) {
                Vec const a = ref::conv_ref(x, p[0], p[1], 2, 4, 4, 1, 8, 3, 1, "same", "relu");
                Vec const h = upsample2(ref::pool_ref(a, 2, 4, 4, 8), 2, 2, 2, 8);
                return ref::conv_ref(concat(h, a, 8, 8), p[2], p[3], 2, 4, 4, 16, 1, 1, 1, "same", "identity");
              });
}

TEST(SkipConnections, UNetForwardAndBackwardAllocateNothing) {
  Model model(
      "in=16x16x1 conv3x3:16:relu save:a maxpool2 conv3x3:32:relu upsample2 concat:a conv3x3:16:relu conv1x1:1",
      8);
  model.init(ktr::ExecSpace(), 0);
  ktr::ExecSpace space;
  Tensor input("ktr::test::x", model.input_shape(8));
  model.forward(space, ktr::Precision{}, input);
  model.backward(space, ktr::Precision{});
  space.fence();
  ktr::ToolsCounter counter;
  for (int i = 0; i < 2; ++i) {
    model.forward(space, ktr::Precision{}, input);
    model.backward(space, ktr::Precision{});
  }
  space.fence();
  EXPECT_EQ(counter.allocations(), 0);
  EXPECT_EQ(counter.deep_copies(), 0);
}

}  // namespace
