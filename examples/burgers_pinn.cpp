// Raissi's viscous Burgers problem through ktr::Pinn, every step on the device: Adam on points drawn every step
// (2,048 interior, 256 initial, 256 on the walls), then L-BFGS from Adam's weights on points drawn once (8,192
// interior: its line search's fixed batch, and more points than Adam's, as Raissi's 10,000).
//
//   u_t + u u_x - nu u_xx = 0 on x in [-1, 1], t in [0, 1], nu = 0.01 / pi,
//   u(x, 0) = -sin(pi x), u(-1, t) = u(1, t) = 0.
//
// Raissi's network (8 tanh layers of 20). Three terms: the interior (spec "d1 d0 d0,0": u_t, u_x, u_xx; the
// residual is nonlinear in u, so its seeds come from dual numbers), the initial line and both walls. The reference
// is the Cole-Hopf solution, integrated on the host as examples/fortran/burgers_pinn.f90 does (the trapezoidal
// rule over
// +-9 widths of the heat kernel, the largest exponent taken out). The program prints the relative L2 error on a
// 201 x 101 grid after each phase and fails if the last exceeds the bound on its command line.
//
//   burgers_pinn [ADAM_STEPS (5000)] [LBFGS_STEPS (4000)] [MAX_RELATIVE_L2 (1e-2)] [SEED (1)]
#include <ktr/backends/kokkos_compat.hpp>
#include <ktr/ktr.hpp>
#include <ktr/train/pinn.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr double pi = 3.14159265358979323846, nu = 0.01 / pi;
constexpr std::int64_t gx = 201, gt = 101;

struct Burgers {  // u_t + u u_x - nu u_xx; inputs (x, t), spec "d1 d0 d0,0"
  template <class D>
  KOKKOS_INLINE_FUNCTION D operator()(ktr::pinn::Point<D> const& p) const {
    return p.d(0) + p.u() * p.d(1) - nu * p.d(2);
  }
};

struct Initial {  // u(x, 0) = -sin(pi x)
  template <class D>
  KOKKOS_INLINE_FUNCTION D operator()(ktr::pinn::Point<D> const& p) const {
    return p.u() + ktr::dual::sin(pi * p.x(0));
  }
};

struct Wall {  // u = 0
  template <class D>
  KOKKOS_INLINE_FUNCTION D operator()(ktr::pinn::Point<D> const& p) const {
    return p.u();
  }
};

// The three terms, their points drawn every step or (kept) once.
void add_terms(ktr::Pinn& pinn, bool kept, std::int64_t interior) {
  using ktr::pinn::Points;
  auto points = [kept](Points p) { return kept ? p.once() : p; };
  pinn.add_term("interior", "d1 d0 d0,0", Burgers{}, points(Points::box({-1, 0}, {1, 1})), interior);
  pinn.add_term("initial", "", Initial{}, points(Points::box({-1, 0}, {1, 0})), 256);
  pinn.add_term("walls", "", Wall{}, points(Points::walls({-1, 0}, {1, 1}, /*wall=*/0)), 256);
}

void train(ktr::ExecSpace const& space, ktr::Pinn& pinn, int steps) {
  int const report = 1000;
  for (int s = 0; s < steps; s += report) {
    pinn.train(space, std::min(report, steps - s));
    auto const loss = pinn.losses(space);
    std::printf("%s step %d loss %.3e (interior %.3e, initial %.3e, walls %.3e)\n",
                pinn.optimizer().lbfgs() ? "lbfgs" : "adam", int(pinn.steps()), loss[3], loss[0], loss[1],
                loss[2]);
  }
}

// The Cole-Hopf solution at (x, t).
double cole_hopf(double x, double t) {
  if (t == 0) return -std::sin(pi * x);
  int const nq = 1201;
  double const w = std::sqrt(4 * nu * t);  // the heat kernel exp(-(y / w)^2)
  std::vector<double> e(nq);
  for (int q = 0; q < nq; ++q) {
    double const y = w * (-9 + 18 * double(q) / (nq - 1));
    e[std::size_t(q)] = -std::cos(pi * (x - y)) / (2 * pi * nu) - (y / w) * (y / w);
  }
  double const emax = *std::max_element(e.begin(), e.end());
  double top = 0, den = 0;
  for (int q = 0; q < nq; ++q) {
    double const y = w * (-9 + 18 * double(q) / (nq - 1));
    top -= std::sin(pi * (x - y)) * std::exp(e[std::size_t(q)] - emax);
    den += std::exp(e[std::size_t(q)] - emax);
  }
  return top / den;
}

// The relative L2 error of the model on the grid against the reference.
double error(ktr::ExecSpace const& space, ktr::Model const& model, ktr::JetMatrix<float> const& grid,
             std::vector<double> const& exact) {
  ktr::Jet<float> values(model, ktr::JetSpec::parse("", 2), gx * gt);
  ktr::JetMatrix<float> u("example::u", gx * gt, 1);
  values.forward(space, model.arena().params(), {}, {}, grid, u, {});
  auto const h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), u);
  double err = 0, norm = 0;
  for (std::size_t i = 0; i < exact.size(); ++i)
    err += (h(i, 0) - exact[i]) * (h(i, 0) - exact[i]), norm += exact[i] * exact[i];
  return std::sqrt(err / norm);
}

}  // namespace

int main(int argc, char* argv[]) {
  Kokkos::initialize(argc, argv);
  int status = 0;
  {
    int const adam_steps = argc > 1 ? std::atoi(argv[1]) : 5000,
              lbfgs_steps = argc > 2 ? std::atoi(argv[2]) : 4000;
    double const bound = argc > 3 ? std::atof(argv[3]) : 1e-2;
    std::uint64_t const seed = argc > 4 ? std::uint64_t(std::atoll(argv[4])) : 1;
    ktr::ExecSpace space;
    std::string description = "in=2";
    for (int l = 0; l < 8; ++l) description += " dense:20:tanh";
    ktr::Model model(space, description + " dense:1", 8192);
    model.init(space, seed);
    // The grid (x fastest) and the reference on it.
    ktr::JetMatrix<float> xg("example::grid", gx * gt, 2);
    std::vector<double> exact(std::size_t(gx * gt));
    {
      auto h = Kokkos::create_mirror_view(xg);
      for (std::int64_t b = 0; b < gt; ++b)
        for (std::int64_t a = 0; a < gx; ++a) {
          double const x = -1 + 2 * double(a) / (gx - 1), t = double(b) / (gt - 1);
          std::int64_t const i = a + b * gx;
          h(i, 0) = float(x), h(i, 1) = float(t);
          exact[std::size_t(i)] = cole_hopf(x, t);
        }
      Kokkos::deep_copy(space, xg, h);
    }

    ktr::OptimizerConfig adam;
    adam.kind = ktr::OptimizerConfig::Kind::adam;
    adam.lr = 5e-3f;
    adam.schedule = ktr::Schedule::parse("cosine:" + std::to_string(std::max(adam_steps, 1)) + ":0:0.05");
    ktr::Pinn pinn(space, model, adam, seed);
    add_terms(pinn, false, 2048);
    train(space, pinn, adam_steps);
    double relative = error(space, model, xg, exact);
    std::printf("burgers_pinn: after %d Adam steps, relative L2 error %.3e\n", adam_steps, relative);
    if (lbfgs_steps > 0) {
      ktr::OptimizerConfig lbfgs;
      lbfgs.kind = ktr::OptimizerConfig::Kind::lbfgs;
      lbfgs.lr = 1;
      lbfgs.history = 20;
      lbfgs.tolerance_change = 0;  // the loss falls below 1e-5: an absolute 1e-9 would stop it early
      ktr::Pinn refine(space, model, lbfgs, seed + 1);
      add_terms(refine, true, 8192);
      train(space, refine, lbfgs_steps);
      relative = error(space, model, xg, exact);
      std::printf("burgers_pinn: after %d L-BFGS steps, relative L2 error %.3e\n", lbfgs_steps, relative);
    }
    std::printf("burgers_pinn: relative L2 error %.3e (bound %.1e)\n", relative, bound);
    status = relative <= bound ? 0 : 1;
  }
  Kokkos::finalize();
  return status;
}
