// Input derivatives (models/jet.hpp): the spec's grammar, every channel against central finite differences in
// double for every activation, the parameter and input gradients of a loss of derivatives against finite
// differences, fp32 against fp64, and the refusals.
#include <ktr/core/error.hpp>
#include <ktr/models/jet.hpp>
#include <ktr/models/jet_activation.hpp>
#include <ktr/models/model.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace {

using ktr::Jet;
using ktr::JetSpec;
using ktr::Model;
using DView = Kokkos::View<double*, ktr::MemSpace>;
using Mat = ktr::JetMatrix<double>;
using Cube = ktr::JetCube<double>;

DView to_device(std::vector<double> const& v) {
  DView d("d", v.size());
  auto h = Kokkos::create_mirror_view(d);
  for (std::size_t i = 0; i < v.size(); ++i) h(i) = v[i];
  Kokkos::deep_copy(d, h);
  return d;
}

// The model's fp32 weights, in double.
std::vector<double> weights(Model const& model) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), model.arena().params());
  return std::vector<double>(h.data(), h.data() + model.arena().size());
}

struct Values {
  std::vector<double> u, derivs;  // (N, m), (N, m, T)
};

// One fp64 forward at host points x (N, d).
Values forward(Jet<double>& jet, std::vector<double> const& params, std::vector<double> const& x,
               std::vector<double> const& scale = {}, std::vector<double> const& shift = {}) {
  std::int64_t const d = jet.inputs(), N = std::int64_t(x.size()) / d, m = jet.outputs(),
                     T = std::int64_t(jet.spec().size());
  Mat xd("x", N, d), u("u", N, m);
  Cube dd("derivs", N, m, T);
  auto xh = Kokkos::create_mirror_view(xd);
  for (std::int64_t i = 0; i < N * d; ++i) xh.data()[i] = x[i];
  Kokkos::deep_copy(xd, xh);
  jet.forward(ktr::ExecSpace(), to_device(params), to_device(scale), to_device(shift), xd, u, dd);
  auto uh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), u);
  auto dh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), dd);
  return {std::vector<double>(uh.data(), uh.data() + N * m),
          std::vector<double>(dh.data(), dh.data() + N * m * T)};
}

std::vector<double> random_points(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.5, 1.5);
  std::vector<double> x(std::size_t(n), 0.0);
  for (double& v : x) v = dist(rng);
  return x;
}

// |a - b| <= tol max(1, |b|)
void expect_close(double a, double b, double tol, std::string const& what) {
  EXPECT_LE(std::abs(a - b), tol * std::max(1.0, std::abs(b))) << what << ": " << a << " against " << b;
}

}  // namespace

TEST(JetSpec, ParsesAndNormalisesEveryTokenKind) {
  JetSpec const s = JetSpec::parse("  d1 d1,0\td2,2 lap lap2,0 ", 3);
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s.str(), "d1 d0,1 d2,2 lap lap0,2");
  EXPECT_EQ(s.tokens[1].kind, JetSpec::Kind::second);
  EXPECT_EQ(s.tokens[3].inputs, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(s.second_order());
  EXPECT_FALSE(JetSpec::parse("d0 d2", 3).second_order());
  EXPECT_EQ(JetSpec::parse("", 3).size(), 0u);
  EXPECT_EQ(JetSpec::parse("lap0,1", 2).str(), "lap");  // every input: the Laplacian
}

TEST(JetSpec, RefusesUnknownOutOfRangeMalformedAndRepeatedTokensNamingThem) {
  auto message = [](std::string const& spec) {
    try {
      JetSpec::parse(spec, 3);
    } catch (ktr::UsageError const& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message("d3").find("'d3': input 3 is beyond the model's 3 inputs"), std::string::npos)
      << message("d3");
  EXPECT_NE(message("x0").find("'x0' is unknown"), std::string::npos);
  EXPECT_NE(message("d").find("'d' is unknown"), std::string::npos);
  EXPECT_NE(message("d-1").find("'-1' is not an input index"), std::string::npos);
  EXPECT_NE(message("d0,1,2").find("second order"), std::string::npos);
  EXPECT_NE(message("d0 d1,0 d0,1").find("'d0,1' repeats 'd0,1'"), std::string::npos) << message("d0 d1,0 d0,1");
  EXPECT_NE(message("lap0,0").find("names an input twice"), std::string::npos);
  EXPECT_NE(message("lap0,").find("'' is not an input index"), std::string::npos);
}

// Every activation with f'': first derivatives against central differences of u, second derivatives and
// Laplacians against central differences of the jet's own first derivatives, in double, through an input
// transform.
TEST(Jet, EveryChannelEqualsCentralDifferencesInDoubleForEverySmoothActivation) {
  for (char const* act : {"identity", "tanh", "sigmoid", "silu", "gelu", "gelu_tanh", "softplus", "sine"}) {
    std::string const a = act, suffix = a == "identity" ? "" : ":" + a;
    Model model("in=3 dense:7" + suffix + " dense:5" + suffix + " dense:2", 1);
    model.init(ktr::ExecSpace(), 11);
    std::vector<double> const p = weights(model), scale{0.5, 2.0, 1.25}, shift{0.1, -0.3, 0.0};
    JetSpec const spec = JetSpec::parse("d0 d2 d0,1 d2,2 lap lap0,1", 3);
    Jet<double> jet(model, spec), firsts(model, JetSpec::parse("d0 d1 d2", 3));
    std::int64_t const N = 4, m = 2, T = 6;
    std::vector<double> const x = random_points(N * 3, 5);
    Values const v = forward(jet, p, x, scale, shift);
    double const h = 1e-5;
    for (std::int64_t n = 0; n < N; ++n) {
      // first[j][o][i]: d(du_o/dx_i)/dx_j by central differences of the first channels; du_o/dx_j of u's.
      double first[3][2][3], du[3][2];
      for (int j = 0; j < 3; ++j) {
        std::vector<double> xp(x.begin() + n * 3, x.begin() + n * 3 + 3), xm = xp;
        xp[std::size_t(j)] += h, xm[std::size_t(j)] -= h;
        Values const fp = forward(firsts, p, xp, scale, shift), fm = forward(firsts, p, xm, scale, shift);
        Values const up = forward(jet, p, xp, scale, shift), um = forward(jet, p, xm, scale, shift);
        for (int o = 0; o < m; ++o) {
          du[j][o] = (up.u[std::size_t(o)] - um.u[std::size_t(o)]) / (2 * h);
          for (int i = 0; i < 3; ++i)
            first[j][o][i] = (fp.derivs[std::size_t(o * 3 + i)] - fm.derivs[std::size_t(o * 3 + i)]) / (2 * h);
        }
      }
      for (int o = 0; o < m; ++o) {
        auto got = [&](int t) { return v.derivs[std::size_t((n * m + o) * T + t)]; };
        std::string const at = a + " point " + std::to_string(n) + " output " + std::to_string(o);
        expect_close(got(0), du[0][o], 1e-8, at + " d0");
        expect_close(got(1), du[2][o], 1e-8, at + " d2");
        expect_close(got(2), first[1][o][0], 1e-6, at + " d0,1");
        expect_close(got(3), first[2][o][2], 1e-6, at + " d2,2");
        expect_close(got(4), first[0][o][0] + first[1][o][1] + first[2][o][2], 1e-6, at + " lap");
        expect_close(got(5), first[0][o][0] + first[1][o][1], 1e-6, at + " lap0,1");
      }
    }
  }
}

TEST(Jet, FirstDerivativesThroughReluLeakyReluAndEluEqualCentralDifferences) {
  for (char const* act : {"relu", "leaky_relu", "elu"}) {
    Model model(std::string("in=2 dense:16:") + act + " dense:1", 1);
    model.init(ktr::ExecSpace(), 3);
    std::vector<double> const p = weights(model);
    Jet<double> jet(model, JetSpec::parse("d0 d1", 2));
    std::vector<double> const x = random_points(2 * 5, 9);
    Values const v = forward(jet, p, x);
    double const h = 1e-7;  // no kink within h of these points (checked by the agreement itself)
    for (int n = 0; n < 5; ++n)
      for (int i = 0; i < 2; ++i) {
        std::vector<double> xp(x.begin() + n * 2, x.begin() + n * 2 + 2), xm = xp;
        xp[std::size_t(i)] += h, xm[std::size_t(i)] -= h;
        double const fd = (forward(jet, p, xp).u[0] - forward(jet, p, xm).u[0]) / (2 * h);
        expect_close(v.derivs[std::size_t(n * 2 + i)], fd, 1e-7, std::string(act) + " d" + std::to_string(i));
      }
  }
}

// sum seed . (u, derivs): its gradient by parameters and by inputs against central differences of the fp64 jet.
TEST(Jet, ParameterAndInputGradientsOfADerivativeLossEqualCentralDifferences) {
  // elu's f'' enters the parameter gradient of a first derivative (relu's and leaky_relu's are zero).
  for (char const* act : {"tanh", "sine", "gelu_tanh", "silu", "elu", "leaky_relu"}) {
    Model model(std::string("in=2 dense:6:") + act + " dense:5:" + act + " dense:2", 1);
    model.init(ktr::ExecSpace(), 21);
    std::vector<double> p = weights(model);
    bool const smooth = ktr::jet_second_order(*ktr::parse_activation(act));
    JetSpec const spec = JetSpec::parse(smooth ? "d0 d1 d0,0 d0,1 lap" : "d0 d1", 2);
    Jet<double> jet(model, spec);
    std::int64_t const N = 3, m = 2, T = std::int64_t(spec.size()), d = 2;
    std::vector<double> const x = random_points(N * d, 13), su = random_points(N * m, 17),
                              sd = random_points(N * m * T, 19), scale{1.5, 0.75}, shift{0.2, 0.1};
    auto loss = [&](std::vector<double> const& params, std::vector<double> const& points) {
      Values const v = forward(jet, params, points, scale, shift);
      double l = 0;
      for (std::size_t k = 0; k < su.size(); ++k) l += su[k] * v.u[k];
      for (std::size_t k = 0; k < sd.size(); ++k) l += sd[k] * v.derivs[k];
      return l;
    };
    // The analytic gradients: a forward, then the reverse pass into zeroed gradients.
    loss(p, x);
    Mat usd("u_seed", N, m), igrad("input_grad", N, d);
    Cube dsd("derivs_seed", N, m, T);
    auto uh = Kokkos::create_mirror_view(usd);
    auto dh = Kokkos::create_mirror_view(dsd);
    for (std::size_t k = 0; k < su.size(); ++k) uh.data()[k] = su[k];
    for (std::size_t k = 0; k < sd.size(); ++k) dh.data()[k] = sd[k];
    Kokkos::deep_copy(usd, uh);
    Kokkos::deep_copy(dsd, dh);
    DView grads("grads", p.size());
    jet.backward(ktr::ExecSpace(), to_device(p), usd, dsd, grads, igrad);
    auto gh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), grads);
    auto ih = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), igrad);
    double const h = 1e-6;
    int checked = 0;
    for (std::size_t k = 0; k < p.size(); ++k) {
      if (p[k] == 0.0 && gh(k) == 0.0) continue;  // arena padding
      std::vector<double> pp = p, pm = p;
      pp[k] += h, pm[k] -= h;
      expect_close(gh(k), (loss(pp, x) - loss(pm, x)) / (2 * h), 1e-6,
                   std::string(act) + " parameter " + std::to_string(k));
      ++checked;
    }
    EXPECT_GE(checked, 2 * 6 + 6 + 6 * 5 + 5);
    for (std::size_t k = 0; k < x.size(); ++k) {
      std::vector<double> xp = x, xm = x;
      xp[k] += h, xm[k] -= h;
      expect_close(ih.data()[k], (loss(p, xp) - loss(p, xm)) / (2 * h), 1e-6,
                   std::string(act) + " input " + std::to_string(k));
    }
  }
}

TEST(Jet, BackwardAddsToTheGradientsItIsGiven) {
  Model model("in=2 dense:4:tanh dense:1", 1);
  model.init(ktr::ExecSpace(), 2);
  std::vector<double> const p = weights(model);
  Jet<double> jet(model, JetSpec::parse("d0", 2));
  std::vector<double> const x = random_points(4, 1);
  DView grads("grads", p.size());
  Mat seed("seed", 2, 1);
  Kokkos::deep_copy(seed, 1.0);
  for (int pass = 0; pass < 2; ++pass) {
    forward(jet, p, x);
    jet.backward(ktr::ExecSpace(), to_device(p), seed, Cube(), grads, Mat());
  }
  DView once("once", p.size());
  forward(jet, p, x);
  jet.backward(ktr::ExecSpace(), to_device(p), seed, Cube(), once, Mat());
  auto twice_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), grads);
  auto once_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), once);
  double largest = 0;
  for (std::size_t k = 0; k < p.size(); ++k) {
    EXPECT_DOUBLE_EQ(twice_h(k), 2 * once_h(k)) << k;
    largest = std::max(largest, std::abs(once_h(k)));
  }
  EXPECT_GT(largest, 0.0);
}

// Widths 32 (the host's row kernels) and 48 (BLAS in float, the plain product in double): channels and the
// parameter gradient of a loss of them in fp32 against fp64 on the same weights.
// An independent reference for the jet's kernels (the fp64 jet shares them): the model's own forward pass, its
// value and its central differences, at a width and a point count that leave partial blocks in every host product
// (30 rows; 6 channels x 61 points = 366 columns, 14 beyond the last whole panel, which hold the Laplacian's
// channel).
TEST(Jet, ChannelsEqualDifferencesOfTheModelsOwnForwardWithPartialBlocks) {
  std::int64_t const N = 61, d = 3, m = 2;
  Model model("in=3 dense:30:tanh dense:30:silu dense:2", 3 * N);
  model.init(ktr::ExecSpace(), 6);
  JetSpec const spec = JetSpec::parse("d0 d1 d1,1 lap", 3);
  Jet<float> jet(model, spec);
  std::vector<double> const x = random_points(N * d, 12);
  // The model's forward at x, and at x +- h e_i for every input, in one batch each.
  auto outputs = [&](std::vector<float> const& points) {
    std::int64_t const n = std::int64_t(points.size()) / d;
    ktr::Tensor in(ktr::ExecSpace(), "x", ktr::Shape{n, d});
    Kokkos::deep_copy(in.view(), Kokkos::View<float const*, Kokkos::HostSpace>(points.data(), points.size()));
    ktr::Tensor const out = model.forward(ktr::ExecSpace(), ktr::Precision{}, in);
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out.view());
    return std::vector<double>(h.data(), h.data() + n * m);
  };
  std::vector<float> const xf(x.begin(), x.end());
  std::vector<double> const u0 = outputs(xf);
  float const h = 1e-2f;
  std::vector<std::vector<double>> plus(d), minus(d);
  for (std::int64_t i = 0; i < d; ++i) {
    std::vector<float> xp = xf, xm = xf;
    for (std::int64_t n = 0; n < N; ++n) xp[std::size_t(n * d + i)] += h, xm[std::size_t(n * d + i)] -= h;
    plus[std::size_t(i)] = outputs(xp), minus[std::size_t(i)] = outputs(xm);
  }
  ktr::JetMatrix<float> xj("x", N, d), u("u", N, m);
  ktr::JetCube<float> derivs("derivs", N, m, 4);
  Kokkos::deep_copy(xj, Kokkos::View<float const**, Kokkos::LayoutRight, Kokkos::HostSpace>(xf.data(), N, d));
  jet.forward(ktr::ExecSpace(), model.arena().params(), {}, {}, xj, u, derivs);
  auto uh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), u);
  auto dh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), derivs);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t o = 0; o < m; ++o) {
      std::size_t const e = std::size_t(n * m + o);
      auto first = [&](std::size_t i) { return (plus[i][e] - minus[i][e]) / (2.0 * h); };
      auto second = [&](std::size_t i) { return (plus[i][e] - 2.0 * u0[e] + minus[i][e]) / (double(h) * h); };
      std::string const at = " at point " + std::to_string(n) + " output " + std::to_string(o);
      expect_close(uh(n, o), u0[e], 1e-5, "u" + at);
      expect_close(dh(n, o, 0), first(0), 1e-3, "d0" + at);
      expect_close(dh(n, o, 1), first(1), 1e-3, "d1" + at);
      expect_close(dh(n, o, 2), second(1), 3e-2, "d1,1" + at);
      expect_close(dh(n, o, 3), second(0) + second(1) + second(2), 3e-2, "lap" + at);
    }
}

// Widths and points that leave partial blocks: rows beyond a multiple of 4 and columns (C N) beyond a panel in the
// host products (30; 48 goes through gemm in one direction), 61 points.
TEST(Jet, Fp32ChannelsAndParameterGradientsEqualFp64OnTheSameWeights) {
  for (char const* width : {"30", "48"}) {
    std::string const w = width;
    Model model("in=3 dense:" + w + ":tanh dense:" + w + ":silu dense:2", 1);
    model.init(ktr::ExecSpace(), 4);
    JetSpec const spec = JetSpec::parse("d0 d1 d1,1 lap", 3);
    Jet<double> ref(model, spec);
    Jet<float> jet(model, spec, 64);
    std::int64_t const N = 61;
    std::vector<double> const x = random_points(N * 3, 8), p = weights(model);
    Values const want = forward(ref, p, x);
    DView seed_d = to_device(random_points(N * 2 * 4, 9)), ref_grads("ref_grads", p.size());
    ref.backward(ktr::ExecSpace(), to_device(p), Mat(), Cube(seed_d.data(), N, 2, 4), ref_grads, Mat());
    ktr::JetMatrix<float> xf("x", N, 3), u("u", N, 2);
    ktr::JetCube<float> derivs("derivs", N, 2, 4), seed_f("seed", N, 2, 4);
    auto xh = Kokkos::create_mirror_view(xf);
    for (std::size_t k = 0; k < x.size(); ++k) xh.data()[k] = float(x[k]);
    Kokkos::deep_copy(xf, xh);
    auto sh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), seed_d);
    auto sfh = Kokkos::create_mirror_view(seed_f);
    for (std::size_t k = 0; k < sfh.size(); ++k) sfh.data()[k] = float(sh(k));
    Kokkos::deep_copy(seed_f, sfh);
    jet.forward(ktr::ExecSpace(), model.arena().params(), {}, {}, xf, u, derivs);
    Kokkos::View<float*, ktr::MemSpace> grads("grads", p.size());
    jet.backward(ktr::ExecSpace(), model.arena().params(), {}, seed_f, grads, {});
    auto uh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), u);
    auto dh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), derivs);
    auto gh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), grads);
    auto rh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ref_grads);
    for (std::size_t k = 0; k < want.u.size(); ++k) expect_close(uh.data()[k], want.u[k], 1e-5, w + " u");
    for (std::size_t k = 0; k < want.derivs.size(); ++k)
      expect_close(dh.data()[k], want.derivs[k], 1e-4, w + " derivative " + std::to_string(k));
    double largest = 0;
    for (std::size_t k = 0; k < p.size(); ++k) largest = std::max(largest, std::abs(rh(k)));
    for (std::size_t k = 0; k < p.size(); ++k)
      EXPECT_LE(std::abs(gh(k) - rh(k)), 1e-4 * largest) << w << " parameter " << k;
    EXPECT_GT(largest, 0.0);
    EXPECT_EQ(jet.channels(), 1 + 3 + 1 + 1);
  }
}

TEST(Jet, RefusesOtherLayersSecondDerivativesThroughReluAndABackwardWithoutItsForward) {
  Model conv("in=4x4x1 conv3x3:2 flatten dense:1", 1);
  try {
    Jet<float> jet(conv, JetSpec::parse("d0", 16));
    FAIL() << "a convolution was accepted";
  } catch (ktr::UsageError const& e) {
    EXPECT_NE(std::string(e.what()).find("layer 0 ('conv3x3:2') is not a dense layer"), std::string::npos)
        << e.what();
  }
  Model relu("in=2 dense:8 dense:8:relu dense:1", 1);
  try {
    Jet<float> jet(relu, JetSpec::parse("d0 lap", 2));
    FAIL() << "a Laplacian through relu was accepted";
  } catch (ktr::UsageError const& e) {
    EXPECT_NE(
        std::string(e.what()).find("layer 1 ('dense:8:relu') does not have: relu carries first derivatives only"),
        std::string::npos)
        << e.what();
  }
  Model model("in=2 dense:4:tanh dense:1", 1);
  model.init(ktr::ExecSpace(), 1);
  std::vector<double> const p = weights(model);
  Jet<double> jet(model, JetSpec::parse("d0", 2));
  DView grads("grads", p.size());
  EXPECT_THROW(jet.backward(ktr::ExecSpace(), to_device(p), Mat(), Cube(), grads, Mat()), ktr::Error);
  forward(jet, p, random_points(2, 1));
  jet.backward(ktr::ExecSpace(), to_device(p), Mat(), Cube(), grads, Mat());
  EXPECT_THROW(jet.backward(ktr::ExecSpace(), to_device(p), Mat(), Cube(), grads, Mat()), ktr::Error);
}
