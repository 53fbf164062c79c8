// The fused physics-informed path (train/pinn.hpp, train/dual.hpp): dual numbers against closed forms, the fused
// step against the same step written by hand (linear and nonlinear residuals), K steps per call against K calls,
// the point draws, a refused update, and the refusals of bad terms.
#include "helpers.hpp"

#include <ktr/core/error.hpp>
#include <ktr/models/model.hpp>
#include <ktr/train/pinn.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace {

using ktr::Pinn;
using ktr::pinn::Point;
using ktr::pinn::Points;
using PinnMatrix = ktr::JetMatrix<float>;
using PinnCube = ktr::JetCube<float>;
using PinnRange = Kokkos::RangePolicy<ktr::ExecSpace, Kokkos::IndexType<std::int64_t>>;
constexpr double pinn_pi = 3.14159265358979323846;

std::vector<float> pinn_host(Kokkos::View<float*, ktr::MemSpace> const& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<float>(h.data(), h.data() + h.size());
}

bool same_bits(std::vector<float> const& a, std::vector<float> const& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

ktr::OptimizerConfig pinn_adam() {
  ktr::OptimizerConfig c;
  c.kind = ktr::OptimizerConfig::Kind::adam;
  c.lr = 1e-2f;
  return c;
}

// Points in [0, 1]^2 from a fixed recurrence (the same on every backend).
PinnMatrix pinn_points(std::int64_t n, double a, double b) {
  PinnMatrix x("x", n, 2);
  auto h = Kokkos::create_mirror_view(x);
  for (std::int64_t i = 0; i < n; ++i) {
    double const u = (i + 1) * a, v = (i + 1) * b;
    h(i, 0) = float(u - std::floor(u)), h(i, 1) = float(v - std::floor(v));
  }
  Kokkos::deep_copy(x, h);
  return x;
}

struct PoissonResidual {  // -lap u - 2 pi^2 sin(pi x) sin(pi y), spec "lap"
  template <class D>
  KOKKOS_INLINE_FUNCTION D operator()(Point<D> const& p) const {
    return -p.d(0) - 2 * pinn_pi * pinn_pi * ktr::dual::sin(pinn_pi * p.x(0)) * ktr::dual::sin(pinn_pi * p.x(1));
  }
};

struct ValueResidual {  // u, spec ""
  template <class D>
  KOKKOS_INLINE_FUNCTION D operator()(Point<D> const& p) const {
    return p.u();
  }
};

struct BurgersResidual {  // u_t + u u_x - nu u_xx, inputs (x, t), spec "d1 d0 d0,0"
  double nu;
  template <class D>
  KOKKOS_INLINE_FUNCTION D operator()(Point<D> const& p) const {
    return p.d(0) + p.u() * p.d(1) - nu * p.d(2);
  }
};

struct HeatResidual {  // u_t - 0.4 u_xx, spec "d1 d0,0"
  template <class D>
  KOKKOS_INLINE_FUNCTION D operator()(Point<D> const& p) const {
    return p.d(0) - 0.4 * p.d(1);
  }
};

struct HeatInitial {  // u(x, 0) - sin(pi x)
  template <class D>
  KOKKOS_INLINE_FUNCTION D operator()(Point<D> const& p) const {
    return p.u() - ktr::dual::sin(pinn_pi * p.x(0));
  }
};

struct LogOfU {  // log(u - 1e9): not finite for any u the model gives
  template <class D>
  KOKKOS_INLINE_FUNCTION D operator()(Point<D> const& p) const {
    return ktr::dual::log(p.u() - 1e9);
  }
};

// The seeds written by hand (free functions: CUDA forbids extended lambdas inside a TEST body, a private member).
// Poisson's interior r = -lap u - f: d loss / d lap = 2 r (-1) / n.
void poisson_seeds(ktr::ExecSpace const& space, PinnMatrix const& xi, PinnCube const& lap,
                   PinnCube const& lap_seed) {
  std::int64_t const n = std::int64_t(xi.extent(0));
  Kokkos::parallel_for(
      "test::poisson_seed", PinnRange(space, 0, n), KOKKOS_LAMBDA(std::int64_t i) {
        double const f = 2 * pinn_pi * pinn_pi * ktr::dual::sin(pinn_pi * double(xi(i, 0))) *
                         ktr::dual::sin(pinn_pi * double(xi(i, 1)));
        double const r = -double(lap(i, 0, 0)) - f;
        lap_seed(i, 0, 0) = float(2 * (1.0 / double(n)) * r * -1.0);
      });
}

// The edges' r = u, weighted: d loss / d u = 2 w u / n.
void edge_seeds(ktr::ExecSpace const& space, PinnMatrix const& ub, PinnMatrix const& ub_seed, double w) {
  std::int64_t const n = std::int64_t(ub.extent(0));
  Kokkos::parallel_for(
      "test::edge_seed", PinnRange(space, 0, n),
      KOKKOS_LAMBDA(std::int64_t i) { ub_seed(i, 0) = float(2 * (w / double(n)) * double(ub(i, 0))); });
}

// Burgers' r = u_t + u u_x - nu u_xx, weighted: dr/du = u_x, dr/du_t = 1, dr/du_x = u, dr/du_xx = -nu.
void burgers_seeds(ktr::ExecSpace const& space, PinnMatrix const& u, PinnCube const& d, PinnMatrix const& u_seed,
                   PinnCube const& d_seed, double nu, double w) {
  std::int64_t const n = std::int64_t(u.extent(0));
  Kokkos::parallel_for(
      "test::burgers_seed", PinnRange(space, 0, n), KOKKOS_LAMBDA(std::int64_t i) {
        double const ui = u(i, 0), ut = d(i, 0, 0), ux = d(i, 0, 1), uxx = d(i, 0, 2);
        double const r = ut + ui * ux - nu * uxx, c = 2 * (w / double(n)) * r;
        u_seed(i, 0) = float(c * ux);
        d_seed(i, 0, 0) = float(c), d_seed(i, 0, 1) = float(c * ui), d_seed(i, 0, 2) = float(c * -nu);
      });
}

// A heat problem with drawn points: interior, both walls, the initial line.
void add_heat_terms(Pinn& pinn, std::int64_t n) {
  pinn.add_term("interior", "d1 d0,0", HeatResidual{}, Points::box({0, 0}, {1, 1}), n);
  pinn.add_term("walls", "", ValueResidual{}, Points::walls({0, 0}, {1, 1}, 0), n / 4, 10);
  pinn.add_term("initial", "", HeatInitial{}, Points::box({0, 0}, {1, 0}), n / 4, 10);
}

TEST(Dual, DerivativesOfACompositeExpressionMatchTheirClosedForms) {
  using namespace ktr::dual;
  for (double a : {0.3, 0.9, 1.7, 3.2}) {
    Dual const x(a, 1);
    Dual const f =
        sin(x) * exp(x) / (1 + square(x)) + sqrt(x) - tanh(x) / 3 + log(x) * cos(x) - 2 / x + (x - 0.5) * x;
    double const g = a * a + 1;
    double const expected = (std::cos(a) * std::exp(a) + std::sin(a) * std::exp(a)) / g -
                            std::sin(a) * std::exp(a) * 2 * a / (g * g) + 0.5 / std::sqrt(a) -
                            (1 - std::tanh(a) * std::tanh(a)) / 3 + std::cos(a) / a - std::log(a) * std::sin(a) +
                            2 / (a * a) + 2 * a - 0.5;
    EXPECT_NEAR(f.t, expected, 1e-12 * std::abs(expected)) << "at " << a;
    EXPECT_DOUBLE_EQ(f.v, std::sin(a) * std::exp(a) / g + std::sqrt(a) - std::tanh(a) / 3 +
                              std::log(a) * std::cos(a) - 2 / a + (a - 0.5) * a);
  }
}

TEST(Pinn, AFusedPoissonStepEqualsTheHandWrittenStepBitForBit) {
  ktr::ExecSpace space;
  constexpr std::int64_t n = 64, ne = 16;
  constexpr double wb = 100;
  char const* const desc = "in=2 dense:16:tanh dense:16:tanh dense:1";
  ktr::Model hand(space, desc, n), fused(space, desc, n);
  hand.init(space, 5), fused.init(space, 5);
  PinnMatrix const xi = pinn_points(n, 0.7548776662466927, 0.5698402909980532), xb = pinn_points(ne, 0.618, 0.382);

  // By hand, as examples/poisson_pinn.cpp did before the fused path.
  ktr::Optimizer optimizer(pinn_adam(), hand.arena().size(), space);
  Kokkos::View<std::int64_t, ktr::MemSpace> step("step");
  Kokkos::View<float*, ktr::MemSpace> grads("grads", std::size_t(hand.arena().size()));
  ktr::Jet<float> interior(hand, ktr::JetSpec::parse("lap", 2), n), edge(hand, ktr::JetSpec::parse("", 2), ne);
  PinnMatrix ui("ui", n, 1), ub("ub", ne, 1), ub_seed("ub_seed", ne, 1);
  PinnCube lap("lap", n, 1, 1), lap_seed("lap_seed", n, 1, 1);
  auto const params = hand.arena().params();
  for (int s = 0; s < 3; ++s) {
    Kokkos::deep_copy(space, grads, 0.0f);
    interior.forward(space, params, {}, {}, xi, ui, lap);
    poisson_seeds(space, xi, lap, lap_seed);
    interior.backward(space, params, {}, lap_seed, grads, {});
    edge.forward(space, params, {}, {}, xb, ub, {});
    edge_seeds(space, ub, ub_seed, wb);
    edge.backward(space, params, ub_seed, {}, grads, {});
    optimizer.update(space, params, grads, step);
  }

  Pinn pinn(space, fused, pinn_adam());
  pinn.add_term("interior", "lap", PoissonResidual{}, Points::fixed(xi), n);
  pinn.add_term("edges", "", ValueResidual{}, Points::fixed(xb), ne, wb);
  pinn.train(space, 3);
  EXPECT_TRUE(same_bits(pinn_host(hand.arena().params()), pinn_host(fused.arena().params())));
  EXPECT_EQ(pinn.steps(), 3);
  auto const losses = pinn.losses(space);
  ASSERT_EQ(losses.size(), 3u);
  EXPECT_GT(losses[0], 0);
  EXPECT_GT(losses[1], 0);
  EXPECT_FLOAT_EQ(float(losses[2]), float(losses[0]) + float(losses[1]));
}

TEST(Pinn, ANonlinearResidualsDualSeedsGiveTheGradientOfItsHandWrittenDerivatives) {
  ktr::ExecSpace space;
  constexpr std::int64_t n = 128;
  constexpr double nu = 0.01 / pinn_pi, w = 3;
  ktr::Model model(space, "in=2 dense:16:tanh dense:16:tanh dense:1", n);
  model.init(space, 7);
  PinnMatrix const x = pinn_points(n, 0.7548776662466927, 0.5698402909980532);

  // Burgers: r = u_t + u u_x - nu u_xx; dr/du = u_x, dr/du_t = 1, dr/du_x = u, dr/du_xx = -nu.
  ktr::Jet<float> jet(model, ktr::JetSpec::parse("d1 d0 d0,0", 2), n);
  PinnMatrix u("u", n, 1), u_seed("u_seed", n, 1);
  PinnCube d("d", n, 1, 3), d_seed("d_seed", n, 1, 3);
  Kokkos::View<float*, ktr::MemSpace> grads("grads", std::size_t(model.arena().size()));
  auto const params = model.arena().params();
  jet.forward(space, params, {}, {}, x, u, d);
  burgers_seeds(space, u, d, u_seed, d_seed, nu, w);
  jet.backward(space, params, u_seed, d_seed, grads, {});
  std::vector<float> const expected = pinn_host(grads);

  ktr::OptimizerConfig sgd;
  sgd.kind = ktr::OptimizerConfig::Kind::sgd;
  Pinn pinn(space, model, sgd);
  pinn.add_term("burgers", "d1 d0 d0,0", BurgersResidual{nu}, Points::fixed(x), n, w);
  pinn.train(space, 1);
  std::vector<float> const got = pinn_host(pinn.gradient());
  ASSERT_EQ(got.size(), expected.size());
  double largest = 0;
  for (float g : expected) largest = std::max(largest, double(std::abs(g)));
  ASSERT_GT(largest, 0);
  for (std::size_t k = 0; k < got.size(); ++k)
    EXPECT_NEAR(got[k], expected[k], 1e-6 * largest) << "parameter " << k;
}

struct RawResidual {  // u_x + 0.3 u_yy - 0.01 x in raw coordinates, spec "d0 d1,1"
  template <class D>
  KOKKOS_INLINE_FUNCTION D operator()(Point<D> const& p) const {
    return p.d(0) + 0.3 * p.d(1) - 0.01 * p.x(0);
  }
};

struct ScaledResidual {  // the same residual in transformed coordinates x' = x s + b
  double s0, s1, b0;
  template <class D>
  KOKKOS_INLINE_FUNCTION D operator()(Point<D> const& p) const {
    return s0 * p.d(0) + 0.3 * s1 * s1 * p.d(1) - 0.01 * ((p.x(0) - b0) / s0);
  }
};

TEST(Pinn, AnInputTransformGivesDerivativesWithRespectToTheRawInputs) {
  ktr::ExecSpace space;
  constexpr std::int64_t n = 64;
  double const s0 = 0.1, s1 = 0.5, b0 = -0.5, b1 = -0.5;
  char const* const desc = "in=2 dense:16:tanh dense:16:tanh dense:1";
  ktr::Model raw(space, desc, n), scaled(space, desc, n);
  raw.init(space, 4), scaled.init(space, 4);
  PinnMatrix const unit = pinn_points(n, 0.7548776662466927, 0.5698402909980532);
  PinnMatrix x("x", n, 2), xs("xs", n, 2);  // raw points in [0, 10] x [0, 2], and x s + b
  auto const uh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), unit);
  auto xh = Kokkos::create_mirror_view(x), xsh = Kokkos::create_mirror_view(xs);
  for (std::int64_t i = 0; i < n; ++i) {
    xh(i, 0) = 10 * uh(i, 0), xh(i, 1) = 2 * uh(i, 1);
    xsh(i, 0) = float(double(xh(i, 0)) * s0 + b0), xsh(i, 1) = float(double(xh(i, 1)) * s1 + b1);
  }
  Kokkos::deep_copy(x, xh), Kokkos::deep_copy(xs, xsh);
  ktr::OptimizerConfig sgd;
  sgd.kind = ktr::OptimizerConfig::Kind::sgd;
  Pinn with(space, raw, sgd), without(space, scaled, sgd);
  with.set_input_transform(space, {s0, s1}, {b0, b1});
  with.add_term("raw", "d0 d1,1", RawResidual{}, Points::fixed(x), n);
  without.add_term("scaled", "d0 d1,1", ScaledResidual{s0, s1, b0}, Points::fixed(xs), n);
  with.train(space, 1), without.train(space, 1);
  std::vector<float> const a = pinn_host(with.gradient()), b = pinn_host(without.gradient());
  double largest = 0;
  for (float g : b) largest = std::max(largest, double(std::abs(g)));
  ASSERT_GT(largest, 0);
  for (std::size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(a[k], b[k], 1e-4 * largest) << "parameter " << k;
  EXPECT_NEAR(with.losses(space)[0], without.losses(space)[0], 1e-4 * without.losses(space)[0]);

  using ktr::test::error_of;
  EXPECT_NE(error_of([&] {
              with.set_input_transform(space, {1}, {0});
            }).find("pinn input transform: it has 1 scales and 1 shifts, the model 2 inputs"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              with.set_input_transform(space, {1, 0}, {0, 0});
            }).find("input 1's scale"),
            std::string::npos);
}

TEST(Pinn, KStepsInOneCallEqualKCallsOfOneStepBitForBit) {
  ktr::ExecSpace space;
  char const* const desc = "in=2 dense:16:tanh dense:16:tanh dense:1";
  ktr::Model a(space, desc, 64), b(space, desc, 64);
  a.init(space, 11), b.init(space, 11);
  Pinn one_call(space, a, pinn_adam(), 42), many_calls(space, b, pinn_adam(), 42);
  add_heat_terms(one_call, 64);
  add_heat_terms(many_calls, 64);
  one_call.train(space, 6);
  for (int s = 0; s < 6; ++s) many_calls.train(space, 1);
  EXPECT_TRUE(same_bits(pinn_host(a.arena().params()), pinn_host(b.arena().params())));
  EXPECT_EQ(one_call.losses(space), many_calls.losses(space));
  EXPECT_EQ(one_call.steps(), 6);
}

TEST(Pinn, DrawsLieInTheBoxOnItsWallsAndChangeEveryStepUnlessKept) {
  ktr::ExecSpace space;
  ktr::Model model(space, "in=3 dense:8:tanh dense:1", 64);
  model.init(space, 1);
  ktr::OptimizerConfig sgd;
  sgd.kind = ktr::OptimizerConfig::Kind::sgd;
  sgd.lr = 1e-12f;
  Pinn pinn(space, model, sgd, 9);
  pinn.add_term("box", "", ValueResidual{}, Points::box({-1, 2, 0.5}, {1, 3, 0.5}), 64);
  pinn.add_term("walls", "", ValueResidual{}, Points::walls({-1, 2, 0}, {1, 3, 1}, 1), 64);
  pinn.add_term("kept", "", ValueResidual{}, Points::box({0, 0, 0}, {1, 1, 1}).once(), 64);
  auto points = [&](std::size_t t) {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), pinn.terms()[t]->points());
    return std::vector<float>(h.data(), h.data() + h.size());
  };
  pinn.train(space, 1);
  std::vector<float> const box = points(0), walls = points(1), kept = points(2);
  for (std::size_t i = 0; i < 64; ++i) {
    EXPECT_TRUE(box[3 * i] >= -1 && box[3 * i] <= 1 && box[3 * i + 1] >= 2 && box[3 * i + 1] <= 3) << i;
    EXPECT_EQ(box[3 * i + 2], 0.5f) << i;  // lo == hi fixes the coordinate
    EXPECT_EQ(walls[3 * i + 1], i % 2 ? 3.0f : 2.0f) << i;
    EXPECT_TRUE(walls[3 * i] >= -1 && walls[3 * i] <= 1 && walls[3 * i + 2] >= 0 && walls[3 * i + 2] <= 1) << i;
  }
  double mean = 0;
  for (std::size_t i = 0; i < 64; ++i) mean += box[3 * i] / 64.0;
  EXPECT_LT(std::abs(mean), 0.25);  // spread over [-1, 1], not piled at an end
  pinn.train(space, 1);
  EXPECT_NE(points(0), box);
  EXPECT_NE(points(1), walls);
  EXPECT_EQ(points(2), kept);

  // The same seed draws the same points; another seed other points.
  Pinn same(space, model, sgd, 9), other(space, model, sgd, 10);
  same.add_term("box", "", ValueResidual{}, Points::box({-1, 2, 0.5}, {1, 3, 0.5}), 64);
  other.add_term("box", "", ValueResidual{}, Points::box({-1, 2, 0.5}, {1, 3, 0.5}), 64);
  same.train(space, 1), other.train(space, 1);
  auto first = [&](Pinn const& p) {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p.terms()[0]->points());
    return std::vector<float>(h.data(), h.data() + h.size());
  };
  EXPECT_EQ(first(same), box);
  EXPECT_NE(first(other), box);
}

TEST(Pinn, ANonFiniteResidualIsRefusedAndMovesNothing) {
  ktr::ExecSpace space;
  ktr::Model model(space, "in=2 dense:8:tanh dense:1", 16);
  model.init(space, 2);
  std::vector<float> const before = pinn_host(model.arena().params());
  Pinn pinn(space, model, pinn_adam());
  pinn.add_term("log", "", LogOfU{}, Points::box({0, 0}, {1, 1}), 16);
  pinn.train(space, 2);
  EXPECT_TRUE(same_bits(pinn_host(model.arena().params()), before));
  std::int64_t refused = 0;
  Kokkos::deep_copy(refused, pinn.optimizer().refused());
  EXPECT_EQ(refused, 2);
  EXPECT_FALSE(std::isfinite(pinn.losses(space).back()));
}

TEST(Pinn, RefusesABadTermNamingItAndLbfgsOnRedrawnPoints) {
  using ktr::test::error_of;
  ktr::ExecSpace space;
  ktr::Model model(space, "in=2 dense:8:tanh dense:8:relu dense:1", 16);
  model.init(space, 2);
  Pinn pinn(space, model, pinn_adam());
  Points const box = Points::box({0, 0}, {1, 1});
  EXPECT_EQ(error_of([&] { pinn.train(space, 1); }), "pinn: it has no term to train on");
  std::string e = error_of([&] { pinn.add_term("interior", "d5", ValueResidual{}, box, 8); });
  EXPECT_NE(e.find("pinn term 'interior'"), std::string::npos) << e;
  EXPECT_NE(e.find("d5"), std::string::npos) << e;
  e = error_of([&] { pinn.add_term("second", "d0,0", ValueResidual{}, box, 8); });
  EXPECT_NE(e.find("pinn term 'second'"), std::string::npos) << e;
  EXPECT_NE(e.find("relu"), std::string::npos) << e;
  e = error_of([&] { pinn.add_term("short", "", ValueResidual{}, Points::box({0}, {1}), 8); });
  EXPECT_NE(e.find("pinn term 'short': its box has 1 and 1 bounds, the model 2 inputs"), std::string::npos) << e;
  e = error_of([&] { pinn.add_term("upside", "", ValueResidual{}, Points::box({0, 1}, {1, 0}), 8); });
  EXPECT_NE(e.find("coordinate 1's bounds"), std::string::npos) << e;
  e = error_of([&] { pinn.add_term("wall", "", ValueResidual{}, Points::walls({0, 0}, {1, 1}, 2), 8); });
  EXPECT_NE(e.find("its wall coordinate 2 is not an input"), std::string::npos) << e;
  e = error_of([&] { pinn.add_term("weight", "", ValueResidual{}, box, 8, -1); });
  EXPECT_NE(e.find("pinn term 'weight': the weight"), std::string::npos) << e;
  e = error_of([&] { pinn.add_term("none", "", ValueResidual{}, box, 0); });
  EXPECT_NE(e.find("pinn term 'none': its count 0"), std::string::npos) << e;
  e = error_of([&] { pinn.add_term("given", "", ValueResidual{}, Points::fixed(pinn_points(8, 0.1, 0.2)), 9); });
  EXPECT_NE(e.find("its count is 9 but it is given 8 points"), std::string::npos) << e;
  EXPECT_TRUE(pinn.terms().empty());  // nothing half-added

  ktr::OptimizerConfig lbfgs;
  lbfgs.kind = ktr::OptimizerConfig::Kind::lbfgs;
  lbfgs.lr = 1;
  Pinn full_batch(space, model, lbfgs);
  full_batch.add_term("walls", "", ValueResidual{}, Points::walls({0, 0}, {1, 1}, 0), 8);
  EXPECT_EQ(error_of([&] { full_batch.add_term("walls", "", ValueResidual{}, box, 8); }),
            "pinn term 'walls': a term of that name exists");
  e = error_of([&] { full_batch.train(space, 1); });
  EXPECT_NE(e.find("pinn term 'walls': it draws new points every step, and lbfgs needs a fixed batch"),
            std::string::npos)
      << e;
  Pinn kept(space, model, lbfgs);
  kept.add_term("walls", "", ValueResidual{}, Points::walls({0, 0}, {1, 1}, 0).once(), 8);
  EXPECT_EQ(error_of([&] { kept.train(space, 3); }), "(no error)");
}

struct HeatAndWall {  // both residuals of one point: u_t - 0.4 u_xx and u - x, spec "d1 d0,0"
  template <class D>
  KOKKOS_INLINE_FUNCTION ktr::pinn::Residuals<D, 2> operator()(Point<D> const& p) const {
    return {{p.d(0) - 0.4 * p.d(1), p.u() - p.x(0)}};
  }
};

struct UMinusX {  // u - x, spec "d1 d0,0" (the columns unread)
  template <class D>
  KOKKOS_INLINE_FUNCTION D operator()(Point<D> const& p) const {
    return p.u() - p.x(0);
  }
};

struct UMinusSinX {  // u - sin(pi x)
  template <class D>
  KOKKOS_INLINE_FUNCTION D operator()(Point<D> const& p) const {
    return p.u() - ktr::dual::sin(pinn_pi * p.x(0));
  }
};

struct UMinusTarget {  // u - y[i]: a measurement that goes with the point
  Kokkos::View<double*, ktr::MemSpace> y;
  template <class D>
  KOKKOS_INLINE_FUNCTION D operator()(Point<D> const& p) const {
    return p.u() - y(p.index());
  }
};

// One term of two residuals trains as the two as terms of their own on the same points: the same losses and
// gradient (within float rounding: two jets sum in another order than one).
TEST(Pinn, ATermOfTwoResidualsGivesTheLossAndGradientOfTwoTermsOfOne) {
  ktr::ExecSpace space;
  char const* const desc = "in=2 dense:12:tanh dense:12:tanh dense:1";
  ktr::Model a(space, desc, 48), b(space, desc, 48);
  a.init(space, 4), b.init(space, 4);
  ktr::OptimizerConfig sgd;
  sgd.kind = ktr::OptimizerConfig::Kind::sgd;
  sgd.lr = 1e-12f;
  PinnMatrix const x = pinn_points(48, 0.7548776662466927, 0.5698402909980532);
  Pinn one(space, a, sgd), two(space, b, sgd);
  one.add_term("both", "d1 d0,0", HeatAndWall{}, Points::fixed(x), 48, 3);
  two.add_term("heat", "d1 d0,0", HeatResidual{}, Points::fixed(x), 48, 3);
  two.add_term("wall", "d1 d0,0", UMinusX{}, Points::fixed(x), 48, 3);
  one.train(space, 1), two.train(space, 1);
  EXPECT_NEAR(one.losses(space).back(), two.losses(space).back(), 1e-6 * two.losses(space).back());
  std::vector<float> const g1 = pinn_host(one.gradient()), g2 = pinn_host(two.gradient());
  ASSERT_EQ(g1.size(), g2.size());
  double norm = 0;
  for (float v : g2) norm = std::max(norm, double(std::abs(v)));
  ASSERT_GT(norm, 0);
  for (std::size_t i = 0; i < g1.size(); ++i) EXPECT_NEAR(g1[i], g2[i], 1e-5 * norm) << i;
}

// A residual reads data that goes with its point by the point's index: a term u - y[index] with y = sin(pi x) at
// fixed points gives the loss and gradient of u - sin(pi x) itself, bit for bit.
TEST(Pinn, AResidualReadsItsPointsDataByIndex) {
  ktr::ExecSpace space;
  char const* const desc = "in=2 dense:8:tanh dense:1";
  ktr::Model a(space, desc, 40), b(space, desc, 40);
  a.init(space, 6), b.init(space, 6);
  PinnMatrix const x = pinn_points(40, 0.31, 0.77);
  Kokkos::View<double*, ktr::MemSpace> y("y", 40);
  auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
  auto hy = Kokkos::create_mirror_view(y);
  for (std::size_t i = 0; i < 40; ++i) hy(i) = ktr::dual::sin(pinn_pi * double(hx(i, 0)));
  Kokkos::deep_copy(y, hy);
  Pinn data(space, a, pinn_adam()), closed(space, b, pinn_adam());
  data.add_term("data", "", UMinusTarget{y}, Points::fixed(x), 40);
  closed.add_term("closed", "", UMinusSinX{}, Points::fixed(x), 40);
  data.train(space, 3), closed.train(space, 3);
  EXPECT_EQ(data.losses(space), closed.losses(space));
  EXPECT_TRUE(same_bits(pinn_host(a.arena().params()), pinn_host(b.arena().params())));
}

// The heat terms and one that keeps its first draw, every term's points kept when `kept` (what lbfgs needs).
void add_checkpoint_terms(Pinn& pinn, bool kept) {
  auto points = [kept](Points p) { return kept ? p.once() : p; };
  pinn.add_term("interior", "d1 d0,0", HeatResidual{}, points(Points::box({0, 0}, {1, 1})), 64);
  pinn.add_term("walls", "", ValueResidual{}, points(Points::walls({0, 0}, {1, 1}, 0)), 16, 10);
  pinn.add_term("initial", "", HeatInitial{}, points(Points::box({0, 0}, {1, 0})), 16, 10);
  pinn.add_term("kept", "", ValueResidual{}, Points::box({0, 0}, {1, 1}).once(), 16, 0.5);
}

TEST(PinnCheckpoint, ATrainingSavedAndLoadedGoesOnBitForBitAsOneThatNeverStopped) {
  ktr::ExecSpace space;
  char const* const desc = "in=2 dense:16:tanh dense:16:tanh dense:1";
  ktr::OptimizerConfig lbfgs;
  lbfgs.kind = ktr::OptimizerConfig::Kind::lbfgs;
  lbfgs.lr = 1;
  for (ktr::OptimizerConfig const& config : {pinn_adam(), lbfgs}) {
    bool const kept = config.kind == ktr::OptimizerConfig::Kind::lbfgs;
    SCOPED_TRACE(kept ? "lbfgs" : "adam");
    std::string const dir = ::testing::TempDir() + "ktr_pinn_ckpt_" + (kept ? "lbfgs" : "adam");
    std::filesystem::remove_all(dir);
    ktr::Model straight(space, desc, 64), first(space, desc, 64), resumed(space, desc, 64);
    straight.init(space, 5), first.init(space, 5), resumed.init(space, 99);
    auto make = [&](ktr::Model& model, double scale) {
      auto pinn = std::make_unique<Pinn>(space, model, config, 7);
      pinn->set_input_transform(space, {scale, scale}, {-1, -1});
      add_checkpoint_terms(*pinn, kept);
      return pinn;
    };
    auto uninterrupted = make(straight, 2), before = make(first, 2);
    auto after = make(resumed, 1);  // another transform and other weights: the file's replace them
    uninterrupted->train(space, 10);
    before->train(space, 4);
    before->save(space, dir);
    after->load(space, dir);
    EXPECT_EQ(after->steps(), 4);
    after->train(space, 6);
    EXPECT_TRUE(same_bits(pinn_host(resumed.arena().params()), pinn_host(straight.arena().params())));
    EXPECT_EQ(after->losses(space), uninterrupted->losses(space));
    auto const scale = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), after->scale());
    EXPECT_EQ(scale(0), 2.0f);  // the file's transform
    std::filesystem::remove_all(dir);
  }
}

TEST(PinnCheckpoint, ALoadOfAnotherTrainingIsRefusedNamingTheFieldAndChangesNothing) {
  using ktr::test::error_of;
  ktr::ExecSpace space;
  char const* const desc = "in=2 dense:8:tanh dense:1";
  std::string const dir = ::testing::TempDir() + "ktr_pinn_ckpt_refusals";
  std::filesystem::remove_all(dir);
  ktr::Model saved(space, desc, 64), other(space, desc, 64);
  saved.init(space, 1), other.init(space, 2);
  Pinn source(space, saved, pinn_adam(), 3);
  add_checkpoint_terms(source, false);
  source.train(space, 2);
  EXPECT_NE(error_of([&] { source.load(space, dir); }).find(dir), std::string::npos);  // nothing saved yet
  source.save(space, dir);

  std::vector<float> const before = pinn_host(other.arena().params());
  auto refusal = [&](Pinn& pinn) {
    std::string const e = error_of([&] { pinn.load(space, dir); });
    EXPECT_NE(e.find("pinn.ckpt"), std::string::npos) << e;
    EXPECT_TRUE(same_bits(pinn_host(other.arena().params()), before));
    EXPECT_EQ(pinn.steps(), 0);
    return e;
  };
  Pinn weighted(space, other, pinn_adam(), 3);  // the kept term weighted 1, not 0.5
  add_heat_terms(weighted, 64);
  weighted.add_term("kept", "", ValueResidual{}, Points::box({0, 0}, {1, 1}).once(), 16);
  EXPECT_NE(refusal(weighted).find("term_3"), std::string::npos);
  ktr::OptimizerConfig sgd;
  sgd.kind = ktr::OptimizerConfig::Kind::sgd;
  Pinn plain(space, other, sgd, 3);
  add_checkpoint_terms(plain, false);
  EXPECT_NE(refusal(plain).find("whose optimizer is 'adam'; this one's is 'sgd'"), std::string::npos);
  Pinn transformed(space, other, pinn_adam(), 3);
  transformed.set_input_transform(space, {1, 1}, {0, 0});
  add_checkpoint_terms(transformed, false);
  EXPECT_NE(refusal(transformed).find("transform"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
