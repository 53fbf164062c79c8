// `ktr bench derivatives`: a physics-informed training step (a jet forward with Burgers' channels u, u_t, u_x,
// u_xx, the residual u_t + u u_x - nu u_xx and its seeds on the device, the reverse pass over the jet, an Adam
// update) beside a plain training step (forward, mean squared error, backward, the same update) at the same batch
// and width, in interleaved rounds: the jet's cost against its channel count C (issue 45's target: at most 1.25 C
// plain steps), and PINN steps per second; and the same step through ktr::Pinn (train/pinn.hpp: the residual as a
// functor, its seeds by dual numbers, the loss reduced on the device), whose cost over the hand-written one is the
// fused path's.
#include "bench.hpp"
#include "measure.hpp"

#include <ktr/backends/device_info.hpp>
#include <ktr/backends/kernel_timer.hpp>
#include <ktr/backends/kokkos_compat.hpp>
#include <ktr/models/jet.hpp>
#include <ktr/models/model.hpp>
#include <ktr/optim/optimizer.hpp>
#include <ktr/train/pinn.hpp>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace ktr::bench {

namespace {

using Range = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;

struct Burgers {  // u_t + u u_x - nu u_xx, spec "d1 d0 d0,0"
  template <class D>
  KOKKOS_INLINE_FUNCTION D operator()(pinn::Point<D> const& p) const {
    return p.d(0) + p.u() * p.d(1) - (0.01 / 3.14159265358979323846) * p.d(2);
  }
};

// One width's two steps on the same model, points and optimiser kind.
struct Case {
  Case(ExecSpace const& space, std::int64_t width, int depth, std::int64_t points)
      : model(space, description(width, depth), points),
        jet(model, JetSpec::parse("d1 d0 d0,0", 2), points),
        adam(OptimizerConfig{}, model.arena().size(), space),
        grads("ktr::bench::jet_grads", std::size_t(model.arena().size())),
        x("ktr::bench::points", points, 2),
        u("ktr::bench::u", points, 1),
        derivs("ktr::bench::derivs", points, 1, 3),
        u_seed("ktr::bench::u_seed", points, 1),
        d_seed("ktr::bench::d_seed", points, 1, 3),
        step("ktr::bench::step"),
        fused(space, model, OptimizerConfig{}) {
    model.init(space, 1);
    // Collocation points in [-1, 1] x [0, 1] (x, t), drawn once on the host.
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    auto h = Kokkos::create_mirror_view(x);
    for (std::int64_t n = 0; n < points; ++n) h(n, 0) = 2.0f * unit(rng) - 1.0f, h(n, 1) = unit(rng);
    Kokkos::deep_copy(space, x, h);
    xs = Tensor(DeviceView<float*>(x.data(), x.size()), Shape{points, 2});
    fused.add_term("burgers", "d1 d0 d0,0", Burgers{}, pinn::Points::fixed(x), points);
  }
  static std::string description(std::int64_t width, int depth) {
    std::string d = "in=2";
    for (int l = 0; l < depth; ++l) d += " dense:" + std::to_string(width) + ":tanh";
    return d + " dense:1";
  }

  // Forward, MSE against -sin(pi x) (the initial condition), backward, Adam.
  void plain_step(ExecSpace const& space) {
    Tensor const out = model.forward(space, Precision{}, xs);
    Tensor const g = model.dlogits();
    float* const o = out.data();
    float* const dl = g.data();
    auto const p = x;
    std::int64_t const n = x.extent(0);
    Kokkos::parallel_for(
        "ktr::bench::mse_gradient", Range(space, 0, n),
        KOKKOS_LAMBDA(std::int64_t i) { dl[i] = 2.0f * (o[i] + compat::sin(3.14159265f * p(i, 0))) / float(n); });
    model.backward(space, Precision{});
    adam.update(space, model.arena().params(), model.arena().grads(), step);
  }

  // Burgers' residual r = u_t + u u_x - nu u_xx and the seeds of mean(r^2), then the reverse pass and Adam.
  void jet_step(ExecSpace const& space) {
    jet.forward(space, model.arena().params(), {}, {}, x, u, derivs);
    auto const uu = u, us = u_seed;
    auto const d = derivs, ds = d_seed;
    std::int64_t const n = x.extent(0);
    float const nu = 0.01f / 3.14159265f;
    Kokkos::parallel_for(
        "ktr::bench::burgers_seeds", Range(space, 0, n), KOKKOS_LAMBDA(std::int64_t i) {
          float const v = uu(i, 0), ut = d(i, 0, 0), ux = d(i, 0, 1), uxx = d(i, 0, 2);
          float const r = 2.0f * (ut + v * ux - nu * uxx) / float(n);
          us(i, 0) = r * ux, ds(i, 0, 0) = r, ds(i, 0, 1) = r * v, ds(i, 0, 2) = -nu * r;
        });
    Kokkos::deep_copy(space, grads, 0.0f);
    jet.backward(space, model.arena().params(), u_seed, d_seed, grads, {});
    adam.update(space, model.arena().params(), grads, step);
  }

  Model model;
  Jet<float> jet;
  Optimizer adam;
  Kokkos::View<float*, MemSpace> grads;
  JetMatrix<float> x, u;
  JetCube<float> derivs;
  JetMatrix<float> u_seed;
  JetCube<float> d_seed;
  Kokkos::View<std::int64_t, MemSpace> step;
  Tensor xs;
  Pinn fused;
};

}  // namespace

int run_derivatives(ExecSpace const& space, DerivativesBenchOptions const& o) {
  std::printf("ktr bench derivatives on %s\n", device_description().c_str());
  std::printf(
      "Burgers' physics-informed step (jet of u, u_t, u_x, u_xx: C = 4 channels; residual and seeds on the "
      "device; "
      "reverse pass; Adam) beside a plain step (forward, MSE, backward, Adam), %lld points, %d tanh layers; "
      "%d interleaved rounds of %d steps, medians; 'fused': the same step through ktr::Pinn\n",
      static_cast<long long>(o.points), o.depth, o.rounds, o.steps);
  std::printf("  %6s %14s %14s %14s %10s %16s %10s\n", "width", "plain us/step", "jet us/step", "fused us/step",
              "jet/plain", "jet/(1.25 C)", "fused/jet");
  for (std::int64_t width : o.widths) {
    Case c(space, width, o.depth, o.points);
    std::vector<double> plain, jet, fused, ratio, fused_ratio;
    for (int w = 0; w < 3; ++w) c.plain_step(space), c.jet_step(space), c.fused.train(space, 1);
    for (int round = 0; round < o.rounds; ++round) {
      double const tp = median_seconds(
          space,
          [&] {
            for (int s = 0; s < o.steps; ++s) c.plain_step(space);
          },
          1, 0);
      double const tj = median_seconds(
          space,
          [&] {
            for (int s = 0; s < o.steps; ++s) c.jet_step(space);
          },
          1, 0);
      double const tf = median_seconds(
          space, [&] { c.fused.train(space, o.steps); }, 1, 0);
      plain.push_back(1e6 * tp / o.steps), jet.push_back(1e6 * tj / o.steps), fused.push_back(1e6 * tf / o.steps);
      ratio.push_back(tj / tp), fused_ratio.push_back(tf / tj);
    }
    double const r = median(ratio);
    std::printf("  %6lld %14.1f %14.1f %14.1f %10.2f %16.2f %10.2f\n", static_cast<long long>(width),
                median(plain), median(jet), median(fused), r, r / (1.25 * c.jet.channels()), median(fused_ratio));
  }
  std::printf(
      "PINN steps per second = 1e6 / (jet us/step); a ratio jet/(1.25 C) at most 1 meets issue 45's target\n");
  // Where the narrowest case's jet step goes: every kernel and gemm fenced and timed by label.
  {
    Case c(space, o.widths.front(), o.depth, o.points);
    c.jet_step(space);
    space.fence();
    KernelTimer timer;
    for (int s = 0; s < o.steps; ++s) c.jet_step(space);
    space.fence();
    auto const entries = timer.entries();
    std::printf("one jet step at width %lld, kernel by kernel (fenced): %.1f us in %zu labels\n",
                static_cast<long long>(o.widths.front()), 1e6 * timer.total_seconds() / o.steps, entries.size());
    for (std::size_t i = 0; i < entries.size() && i < 10; ++i)
      std::printf("  %-44s %8.1f us %5.1f calls\n", entries[i].label.c_str(), 1e6 * entries[i].seconds / o.steps,
                  double(entries[i].calls) / o.steps);
  }
  return 0;
}

}  // namespace ktr::bench
