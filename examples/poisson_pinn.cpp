// A physics-informed network trained from C++ with every step on the device: the 2-D Poisson problem
//   -lap u = 2 pi^2 sin(pi x) sin(pi y) on [0, 1]^2, u = 0 on the boundary; exact u = sin(pi x) sin(pi y).
// Through ktr::Pinn (train/pinn.hpp): the residual is written once, as a functor; each step takes the interior
// points' jet with spec "lap" (the forward Laplacian, one channel), the residual, its loss and seeds in one kernel
// (the seeds by dual numbers), the reverse pass; the same for the edge term u = 0 (weighted 100); one Adam update.
// The host reads the loss back only every `report` steps: those steps are queued with no synchronisation between
// them.
// Afterwards the relative L2 error on a 101 x 101 grid (ktr::pinn::relative_l2); the program fails if it exceeds
// the bound on its command line.
//
//   poisson_pinn [STEPS (4000)] [MAX_RELATIVE_L2 (1e-2)]
#include <ktr/backends/kokkos_compat.hpp>
#include <ktr/ktr.hpp>
#include <ktr/train/pinn.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace {

using Range = Kokkos::RangePolicy<ktr::ExecSpace, Kokkos::IndexType<std::int64_t>>;
using Matrix = ktr::JetMatrix<float>;
constexpr double pi = 3.14159265358979323846;
constexpr std::int64_t interior_points = 1024, edge_points = 256, grid = 101;

KOKKOS_INLINE_FUNCTION double frac(double v) { return v - double(std::int64_t(v)); }  // v >= 0
KOKKOS_INLINE_FUNCTION double sin_pi(double v) { return ktr::compat::sin(pi * v); }

struct Poisson {  // -lap u - 2 pi^2 sin(pi x) sin(pi y)
  template <class D>
  KOKKOS_INLINE_FUNCTION D operator()(ktr::pinn::Point<D> const& p) const {
    return -p.d(0) - 2 * pi * pi * sin_pi(p.x(0)) * sin_pi(p.x(1));
  }
};

struct Edge {  // u = 0
  template <class D>
  KOKKOS_INLINE_FUNCTION D operator()(ktr::pinn::Point<D> const& p) const {
    return p.u();
  }
};

// Interior points from the plastic number's additive recurrence; edge points spread over the four sides.
void make_points(ktr::ExecSpace const& space, Matrix const& interior, Matrix const& edges) {
  Kokkos::parallel_for(
      "example::interior_points", Range(space, 0, interior_points), KOKKOS_LAMBDA(std::int64_t i) {
        interior(i, 0) = float(frac(0.5 + 0.7548776662466927 * double(i + 1)));
        interior(i, 1) = float(frac(0.5 + 0.5698402909980532 * double(i + 1)));
      });
  Kokkos::parallel_for(
      "example::edge_points", Range(space, 0, edge_points), KOKKOS_LAMBDA(std::int64_t i) {
        float const s = float(i / 4) / float(edge_points / 4 - 1);
        int const side = int(i % 4);
        edges(i, 0) = side == 0 ? 0.0f : side == 1 ? 1.0f : s;
        edges(i, 1) = side == 2 ? 0.0f : side == 3 ? 1.0f : s;
      });
}

}  // namespace

int main(int argc, char* argv[]) {
  Kokkos::initialize(argc, argv);
  int status = 0;
  {
    int const steps = argc > 1 ? std::atoi(argv[1]) : 4000, report = 500;
    double const bound = argc > 2 ? std::atof(argv[2]) : 1e-2;
    double const wb = 100;  // the edge term's weight: the residual's scale is 2 pi^2, about 20 times u's
    ktr::ExecSpace space;
    ktr::Model model(space, "in=2 dense:32:tanh dense:32:tanh dense:32:tanh dense:1", interior_points);
    model.init(space, 3);
    ktr::OptimizerConfig adam;
    adam.kind = ktr::OptimizerConfig::Kind::adam;
    adam.lr = 2e-3f;
    adam.schedule = ktr::Schedule::parse("cosine:" + std::to_string(steps) + ":0:0.05");
    Matrix xi("example::xi", interior_points, 2), xb("example::xb", edge_points, 2);
    make_points(space, xi, xb);

    ktr::Pinn pinn(space, model, adam);
    pinn.add_term("interior", "lap", Poisson{}, ktr::pinn::Points::fixed(xi), interior_points);
    pinn.add_term("edges", "", Edge{}, ktr::pinn::Points::fixed(xb), edge_points, wb);
    for (int s = 0; s < steps; s += report) {
      pinn.train(space, std::min(report, steps - s));  // queued: nothing read back until losses()
      auto const loss = pinn.losses(space);
      std::printf("step %d loss %.3e (interior %.3e, edges %.3e)\n", int(pinn.steps()), loss[2], loss[0], loss[1]);
    }
    // The relative L2 error on a 101 x 101 grid.
    auto const xg = ktr::pinn::grid(space, {0, 0}, {1, 1}, grid);
    double const relative = ktr::pinn::relative_l2(
        space, model, xg, KOKKOS_LAMBDA(float const* x) { return sin_pi(x[0]) * sin_pi(x[1]); });
    std::printf("poisson_pinn: %d steps, relative L2 error %.3e (bound %.1e)\n", steps, relative, bound);
    status = relative <= bound ? 0 : 1;
  }
  Kokkos::finalize();
  return status;
}
