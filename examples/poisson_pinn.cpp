// A physics-informed network trained from C++ with every step on the device: the 2-D Poisson problem
//   -lap u = 2 pi^2 sin(pi x) sin(pi y) on [0, 1]^2, u = 0 on the boundary; exact u = sin(pi x) sin(pi y).
// Each step: the interior points' jet with spec "lap" (the forward Laplacian, one channel), the residual and its
// seed in one kernel whose loss reduces into a device scalar, the reverse pass; the boundary points' jet (no
// derivatives), their seed (the edge term weighted 100), the reverse pass; one Adam update. The host reads the
// loss back only every `report` steps, so K = report steps are queued with no synchronisation between them.
// Afterwards the relative L2 error on a 101 x 101 grid; the program fails if it exceeds the bound on its command
// line.
//
//   poisson_pinn [STEPS (4000)] [MAX_RELATIVE_L2 (1e-2)]
#include <ktr/backends/kokkos_compat.hpp>
#include <ktr/ktr.hpp>
#include <ktr/models/jet.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace {

using Range = Kokkos::RangePolicy<ktr::ExecSpace, Kokkos::IndexType<std::int64_t>>;
using Matrix = ktr::JetMatrix<float>;
using Cube = ktr::JetCube<float>;
constexpr double pi = 3.14159265358979323846;
constexpr std::int64_t interior_points = 1024, edge_points = 256, grid = 101;

KOKKOS_INLINE_FUNCTION double frac(double v) { return v - double(std::int64_t(v)); }  // v >= 0
KOKKOS_INLINE_FUNCTION double sin_pi(double v) { return ktr::compat::sin(pi * v); }

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
    float const wb = 100.0f;  // the edge term's weight: the residual's scale is 2 pi^2, about 20 times u's
    ktr::ExecSpace space;
    ktr::Model model(space, "in=2 dense:32:tanh dense:32:tanh dense:32:tanh dense:1", interior_points);
    model.init(space, 3);
    ktr::OptimizerConfig adam;
    adam.kind = ktr::OptimizerConfig::Kind::adam;
    adam.lr = 2e-3f;
    adam.schedule = ktr::Schedule::parse("cosine:" + std::to_string(steps) + ":0:0.05");
    ktr::Optimizer optimizer(adam, model.arena().size(), space);
    Kokkos::View<std::int64_t, ktr::MemSpace> step("example::step");
    Kokkos::View<float*, ktr::MemSpace> grads("example::grads", std::size_t(model.arena().size()));
    auto const params = model.arena().params();

    ktr::Jet<float> interior(model, ktr::JetSpec::parse("lap", 2), interior_points);
    ktr::Jet<float> edge(model, ktr::JetSpec::parse("", 2), edge_points);
    Matrix xi("example::xi", interior_points, 2), ui("example::ui", interior_points, 1);
    Cube lap("example::lap", interior_points, 1, 1), lap_seed("example::lap_seed", interior_points, 1, 1);
    Matrix xb("example::xb", edge_points, 2), ub("example::ub", edge_points, 1),
        ub_seed("example::ub_seed", edge_points, 1);
    Kokkos::View<double, ktr::MemSpace> loss_interior("example::loss_interior"), loss_edges("example::loss_edges");
    make_points(space, xi, xb);

    for (int s = 1; s <= steps; ++s) {
      Kokkos::deep_copy(space, grads, 0.0f);
      // Interior: r = -lap u - f, loss mean(r^2), seed d loss / d lap = -2 r / n.
      interior.forward(space, params, {}, {}, xi, ui, lap);
      Kokkos::parallel_reduce(
          "example::poisson_residual", Range(space, 0, interior_points),
          KOKKOS_LAMBDA(std::int64_t i, double& sum) {
            double const f = 2 * pi * pi * sin_pi(xi(i, 0)) * sin_pi(xi(i, 1));
            double const r = -double(lap(i, 0, 0)) - f;
            lap_seed(i, 0, 0) = float(-2 * r / interior_points);
            sum += r * r / interior_points;
          },
          loss_interior);
      interior.backward(space, params, {}, lap_seed, grads, {});
      // Edges: u = 0, loss wb mean(u^2), seed 2 wb u / n.
      edge.forward(space, params, {}, {}, xb, ub, {});
      Kokkos::parallel_reduce(
          "example::poisson_edges", Range(space, 0, edge_points),
          KOKKOS_LAMBDA(std::int64_t i, double& sum) {
            ub_seed(i, 0) = wb * 2 * ub(i, 0) / float(edge_points);
            sum += wb * double(ub(i, 0)) * ub(i, 0) / edge_points;
          },
          loss_edges);
      edge.backward(space, params, ub_seed, {}, grads, {});
      optimizer.update(space, params, grads, step);
      if (s % report == 0 || s == steps) {  // the only read-backs
        double a = 0, b = 0;
        Kokkos::deep_copy(space, a, loss_interior);
        Kokkos::deep_copy(space, b, loss_edges);
        space.fence();
        std::printf("step %d loss %.3e (interior %.3e, edges %.3e)\n", s, a + b, a, b);
      }
    }

    // The relative L2 error on the grid, through a jet with no derivatives (the value alone).
    ktr::Jet<float> values(model, ktr::JetSpec::parse("", 2), grid * grid);
    Matrix xg("example::xg", grid * grid, 2), ug("example::ug", grid * grid, 1);
    Kokkos::parallel_for(
        "example::grid", Range(space, 0, grid * grid), KOKKOS_LAMBDA(std::int64_t i) {
          xg(i, 0) = float(i % grid) / float(grid - 1), xg(i, 1) = float(i / grid) / float(grid - 1);
        });
    values.forward(space, params, {}, {}, xg, ug, {});
    double err = 0, norm = 0;
    Kokkos::parallel_reduce(
        "example::error", Range(space, 0, grid * grid),
        KOKKOS_LAMBDA(std::int64_t i, double& e) {
          double const exact = sin_pi(xg(i, 0)) * sin_pi(xg(i, 1));
          e += (ug(i, 0) - exact) * (ug(i, 0) - exact);
        },
        err);
    Kokkos::parallel_reduce(
        "example::norm", Range(space, 0, grid * grid),
        KOKKOS_LAMBDA(std::int64_t i, double& e) {
          double const exact = sin_pi(xg(i, 0)) * sin_pi(xg(i, 1));
          e += exact * exact;
        },
        norm);
    double const relative = std::sqrt(err / norm);
    std::printf("poisson_pinn: %d steps, relative L2 error %.3e (bound %.1e)\n", steps, relative, bound);
    status = relative <= bound ? 0 : 1;
  }
  Kokkos::finalize();
  return status;
}
