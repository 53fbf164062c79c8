// In-situ surrogate training: a 2-D heat solver (explicit finite differences, periodic, on Kokkos) runs batches
// of simulations; while it runs, ktr trains an MLP surrogate on the fields it produces, in place on the solver's
// own device views and execution space instance. The surrogate learns to jump S solver steps at once:
//
//   u(t + S dt) ~ MLP(u(t))          u on a G x G grid, flattened to G*G features
//
// Held-out simulations (other initial conditions) measure it against the trivial baseline of predicting the mean
// field. The last line is the result: the surrogate must be at least 5x better than the mean field.
#include <ktr/ktr.hpp>

#include <cmath>
#include <cstdio>
#include <memory>

namespace {

constexpr int G = 16;           // grid points per side
constexpr int S = 8;            // solver steps the surrogate jumps
constexpr int kSnapshots = 6;   // (u(t), u(t + S dt)) pairs per simulation
constexpr float kAlpha = 0.2f;  // diffusion number alpha dt / dx^2 (stable below 0.25)

using Field = Kokkos::View<float**, ktr::MemSpace>;  // (simulations, G*G)

// One explicit step of u_t = alpha lap(u) for every simulation at once: out = in + kAlpha * lap(in).
void step(ktr::ExecSpace const& space, Field const& in, Field const& out) {
  Kokkos::parallel_for(
      "insitu::heat_step",
      Kokkos::MDRangePolicy<ktr::ExecSpace, Kokkos::Rank<3>>(space, {0, 0, 0}, {int(in.extent(0)), G, G}),
      KOKKOS_LAMBDA(int s, int i, int j) {
        auto at = [&](int ii, int jj) { return in(s, ((ii + G) % G) * G + (jj + G) % G); };
        out(s, i * G + j) =
            at(i, j) + kAlpha * (at(i - 1, j) + at(i + 1, j) + at(i, j - 1) + at(i, j + 1) - 4 * at(i, j));
      });
}

// A counter-based hash (splitmix64's finaliser): the same random numbers on every backend.
KOKKOS_INLINE_FUNCTION std::uint64_t hash(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Random initial fields: a few Gaussian bumps and a background.
void initial_conditions(ktr::ExecSpace const& space, Field const& u, std::uint64_t seed) {
  Kokkos::parallel_for(
      "insitu::initial", Kokkos::RangePolicy<ktr::ExecSpace>(space, 0, int(u.extent(0))), KOKKOS_LAMBDA(int s) {
        auto uniform = [&](int k) {
          return float(hash(seed * 1000003u + std::uint64_t(s) * 64u + std::uint64_t(k)) >> 40) / float(1 << 24);
        };
        for (int p = 0; p < G * G; ++p) u(s, p) = 0.5f * uniform(0);
        for (int b = 0; b < 3; ++b) {
          float const ci = G * uniform(4 * b + 1), cj = G * uniform(4 * b + 2), a = 2 * uniform(4 * b + 3) - 1;
          float const r = 1.5f + 2.5f * uniform(4 * b + 4);
          for (int i = 0; i < G; ++i)
            for (int j = 0; j < G; ++j) {
              // fminf, fabsf, expf: the C functions CUDA, HIP and the host all provide
              float const di = fminf(fabsf(i - ci), G - fabsf(i - ci));
              float const dj = fminf(fabsf(j - cj), G - fabsf(j - cj));
              u(s, i * G + j) += a * expf(-(di * di + dj * dj) / (2 * r * r));
            }
        }
      });
}

// Runs `sims` simulations and writes pairs (u(t), u(t + S dt)) straight into rows [first, ...) of x and y.
void simulate(ktr::ExecSpace const& space, int sims, std::uint64_t seed, Field const& x, Field const& y,
              int first) {
  Field a("insitu::u", sims, G * G), b("insitu::v", sims, G * G);
  initial_conditions(space, a, seed);
  for (int snap = 0; snap < kSnapshots; ++snap) {
    auto rows = std::make_pair(first + snap * sims, first + (snap + 1) * sims);
    Kokkos::deep_copy(space, Kokkos::subview(x, rows, Kokkos::ALL), a);
    for (int k = 0; k < S; ++k) step(space, a, b), std::swap(a, b);
    Kokkos::deep_copy(space, Kokkos::subview(y, rows, Kokkos::ALL), a);
  }
}

// Root-mean-square error of predictions against targets, and of the mean training target against them.
double rms(ktr::ExecSpace const& space, Field const& p, Field const& y) {
  double sum = 0;
  Kokkos::parallel_reduce(
      "insitu::rms",
      Kokkos::MDRangePolicy<ktr::ExecSpace, Kokkos::Rank<2>>(space, {0, 0}, {int(y.extent(0)), G * G}),
      KOKKOS_LAMBDA(int i, int j, double& s) { s += double(p(i, j) - y(i, j)) * (p(i, j) - y(i, j)); }, sum);
  return std::sqrt(sum / double(y.size()));
}

}  // namespace

int main(int argc, char* argv[]) {
  Kokkos::initialize(argc, argv);
  int status = 1;
  {
    ktr::ExecSpace const space;  // the solver's instance: ktr runs on it too
    int const rounds = 8, sims_per_round = 64, per_round = sims_per_round * kSnapshots;
    int const n = rounds * per_round, held_sims = 64, held = held_sims * kSnapshots;
    Field x("insitu::x", n, G * G), y("insitu::y", n, G * G);  // the solver's output, the training data
    Field hx("insitu::held_x", held, G * G), hy("insitu::held_y", held, G * G), pred("insitu::pred", held, G * G);
    simulate(space, held_sims, 999, hx, hy, 0);

    ktr::RunConfig cfg;
    cfg.model = "in=256 dense:256:relu dense:256";
    cfg.batch = 64;
    cfg.optimizer.lr = 1e-3f;
    std::unique_ptr<ktr::Trainer> trainer;
    for (int r = 0; r < rounds; ++r) {
      // The simulation campaign goes on: a new batch of runs lands in the next rows of x and y...
      simulate(space, sims_per_round, std::uint64_t(r + 1), x, y, r * per_round);
      // ...and the surrogate trains on everything produced so far, read in place.
      auto const filled = std::make_pair(0, (r + 1) * per_round);
      ktr::DeviceDataset const data = ktr::dataset_from_views(space, Kokkos::subview(x, filled, Kokkos::ALL),
                                                              Kokkos::subview(y, filled, Kokkos::ALL));
      if (!trainer)  // the input standardisation is fitted on the first round's fields, and kept
        trainer = std::make_unique<ktr::Trainer>(space, cfg, data);
      else
        trainer->set_data(data);
      double const loss = trainer->advance(space, 320);  // 20 dispatches of 16 steps, one read-back each
      std::printf("round %d: %d samples, training mse %.3g\n", r + 1, (r + 1) * per_round, loss);
    }
    trainer->predict(space, hx, pred);  // the held-out fields alone
    // The baseline: the mean training target field, for every held-out sample.
    Field mean("insitu::mean", held, G * G);
    Kokkos::parallel_for(
        "insitu::mean_field", Kokkos::RangePolicy<ktr::ExecSpace>(space, 0, G * G), KOKKOS_LAMBDA(int p) {
          double s = 0;
          for (int i = 0; i < n; ++i) s += y(i, p);
          for (int i = 0; i < held; ++i) mean(i, p) = float(s / n);
        });
    double const surrogate = rms(space, pred, hy), baseline = rms(space, mean, hy);
    status = surrogate * 5 <= baseline ? 0 : 1;
    std::printf("held-out rmse: surrogate %.4f, mean field %.4f: the surrogate is %.1fx better (%s)\n", surrogate,
                baseline, baseline / surrogate, status == 0 ? "ok, at least 5x" : "FAILED, less than 5x");
  }
  Kokkos::finalize();
  return status;
}
