// The 1-D heat equation as DeepXDE's example poses it, trained with every step on the device through ktr::Pinn:
//   u_t = 0.4 u_xx on x in [0, 1], t in [0, 1]; u(0, t) = u(1, t) = 0; u(x, 0) = sin(pi x);
//   exact u = exp(-0.4 pi^2 t) sin(pi x).
// Three terms, each a residual written once (its derivatives by dual numbers), its points drawn again on the
// device at every step: the interior (spec "d1 d0,0": u_t and u_xx), both walls x = 0 and x = 1, the initial line
// t = 0. The host reads the losses back every `report` steps only. Afterwards the relative L2 error on a 101 x 101
// grid; the program fails if it exceeds the bound on its command line.
//
// In an MPI build it runs over the ranks it is started on: each rank draws its own points, every update takes the
// ranks' mean gradient, and the program also fails unless every rank ends with the same model to the bit.
//
// With LBFGS_STEPS > 0, L-BFGS then trains on from Adam's weights, on points drawn once (a second ktr::Pinn).
// With a CHECKPOINT_DIR, Adam saves its training there halfway (Pinn::save), and a second model and Pinn, made as
// the first, load it (Pinn::load) and train the other half beside it: the program fails unless both end with the
// same parameters to the bit.
//
//   heat_pinn [STEPS (4000)] [MAX_RELATIVE_L2 (1e-2)] [LBFGS_STEPS (0)] [SEED (1)] [CHECKPOINT_DIR]
//   mpirun -np 2 heat_pinn ...
#include <ktr/backends/kokkos_compat.hpp>
#include <ktr/ktr.hpp>
#include <ktr/train/pinn.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(KTR_ENABLE_MPI)
#include <mpi.h>
#endif

namespace {

constexpr double pi = 3.14159265358979323846, diffusivity = 0.4;

struct Heat {  // u_t - 0.4 u_xx; inputs (x, t), spec "d1 d0,0"
  template <class D>
  KOKKOS_INLINE_FUNCTION D operator()(ktr::pinn::Point<D> const& p) const {
    return p.d(0) - diffusivity * p.d(1);
  }
};

struct Wall {  // u = 0
  template <class D>
  KOKKOS_INLINE_FUNCTION D operator()(ktr::pinn::Point<D> const& p) const {
    return p.u();
  }
};

struct Initial {  // u = sin(pi x)
  template <class D>
  KOKKOS_INLINE_FUNCTION D operator()(ktr::pinn::Point<D> const& p) const {
    return p.u() - ktr::dual::sin(pi * p.x(0));
  }
};

struct Exact {  // exp(-0.4 pi^2 t) sin(pi x)
  KOKKOS_INLINE_FUNCTION double operator()(float const* x) const {
    return ktr::compat::exp(-diffusivity * pi * pi * x[1]) * ktr::compat::sin(pi * x[0]);
  }
};

// True where `a` and `b` hold the same parameters, bit for bit, on every rank.
bool same_bits(ktr::ExecSpace const& space, ktr::Model const& a, ktr::Model const& b,
               ktr::Communicator const& comm) {
  auto const ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.arena().params());
  auto const hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b.arena().params());
  space.fence();
  bool const same = ha.size() == hb.size() && std::memcmp(ha.data(), hb.data(), ha.size() * sizeof(float)) == 0;
  return !comm.any(!same);
}

// True where every rank holds the same parameters, bit for bit.
bool ranks_agree(ktr::Model const& model, ktr::Communicator const& comm) {
  if (comm.size() == 1) return true;
  auto const h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), model.arena().params());
  std::vector<float> lo(h.size()), hi(h.size());
#if defined(KTR_ENABLE_MPI)
  MPI_Allreduce(h.data(), lo.data(), int(h.size()), MPI_FLOAT, MPI_MIN, comm.mpi_comm());
  MPI_Allreduce(h.data(), hi.data(), int(h.size()), MPI_FLOAT, MPI_MAX, comm.mpi_comm());
#endif
  return lo == hi;
}

// The three terms: interior, walls and initial line, their points drawn every step or (kept) once.
void add_terms(ktr::Pinn& pinn, bool kept) {
  using ktr::pinn::Points;
  auto points = [kept](Points p) { return kept ? p.once() : p; };
  pinn.add_term("interior", "d1 d0,0", Heat{}, points(Points::box({0, 0}, {1, 1})), 1024);
  pinn.add_term("walls", "", Wall{}, points(Points::walls({0, 0}, {1, 1}, /*wall=*/0)), 256, 10);
  pinn.add_term("initial", "", Initial{}, points(Points::box({0, 0}, {1, 0})), 256, 10);
}

// `steps` steps, the losses read back every `report`.
void train(ktr::ExecSpace const& space, ktr::Pinn& pinn, int steps, int report, ktr::Communicator const& comm) {
  for (int s = 0; s < steps; s += report) {
    pinn.train(space, std::min(report, steps - s));  // queued: nothing read back until losses()
    auto const loss = pinn.losses(space);
    if (comm.rank() == 0)
      std::printf("%s step %d loss %.3e (interior %.3e, walls %.3e, initial %.3e)\n",
                  pinn.optimizer().lbfgs() ? "lbfgs" : "adam", int(pinn.steps()), loss[3], loss[0], loss[1],
                  loss[2]);
  }
}

}  // namespace

int main(int argc, char* argv[]) {
#if defined(KTR_ENABLE_MPI)
  MPI_Init(&argc, &argv);
#endif
  Kokkos::initialize(argc, argv);
  int status = 0;
  {
    ktr::Communicator const comm = ktr::Communicator::world();
    int const steps = argc > 1 ? std::atoi(argv[1]) : 4000, report = 1000;
    double const bound = argc > 2 ? std::atof(argv[2]) : 1e-2;
    int const lbfgs_steps = argc > 3 ? std::atoi(argv[3]) : 0;
    std::uint64_t const seed = argc > 4 ? std::uint64_t(std::atoll(argv[4])) : 1;
    char const* const checkpoint = argc > 5 ? argv[5] : nullptr;
    ktr::ExecSpace space;
    ktr::Model model(space, "in=2 dense:32:tanh dense:32:tanh dense:32:tanh dense:1", 1024);
    auto const xg = ktr::pinn::grid(space, {0, 0}, {1, 1}, 101);
    auto const error = [&] { return ktr::pinn::relative_l2(space, model, xg, Exact{}); };
    model.init(space, seed);
    ktr::OptimizerConfig adam;
    adam.kind = ktr::OptimizerConfig::Kind::adam;
    adam.lr = 1e-2f;
    adam.schedule = ktr::Schedule::parse("cosine:" + std::to_string(steps) + ":0:0.05");
    ktr::Pinn pinn(space, model, adam, seed, comm);
    add_terms(pinn, false);
    bool resumed_equal = true;
    if (checkpoint) {  // half of Adam's steps, a save, the other half; a second training resumes from the save
      train(space, pinn, steps / 2, report, comm);
      pinn.save(space, checkpoint);
      train(space, pinn, steps - steps / 2, report, comm);
      ktr::Model other(space, model.description(), 1024);
      other.init(space, seed + 1);  // other weights: the save's replace them
      ktr::Pinn resumed(space, other, adam, seed, comm);
      add_terms(resumed, false);
      resumed.load(space, checkpoint);
      train(space, resumed, steps - steps / 2, report, comm);
      resumed_equal = same_bits(space, model, other, comm);
      if (comm.rank() == 0)
        std::printf("heat_pinn: the training resumed from %s %s\n", checkpoint,
                    resumed_equal ? "equals the uninterrupted one" : "DIFFERS from the uninterrupted one");
    } else {
      train(space, pinn, steps, report, comm);
    }
    if (lbfgs_steps > 0) {  // then L-BFGS from Adam's weights, on points drawn once (its line search's batch)
      double const after_adam = error();
      if (comm.rank() == 0)
        std::printf("heat_pinn: after %d Adam steps, relative L2 error %.3e\n", steps, after_adam);
      ktr::OptimizerConfig lbfgs;
      lbfgs.kind = ktr::OptimizerConfig::Kind::lbfgs;
      lbfgs.lr = 1;
      lbfgs.tolerance_change = 0;  // the loss is near 1e-5: an absolute 1e-9 would stop it early
      ktr::Pinn refine(space, model, lbfgs, seed + 1, comm);
      add_terms(refine, true);
      train(space, refine, lbfgs_steps, report, comm);
    }
    double const relative = error();
    bool const agree = ranks_agree(model, comm);
    if (comm.rank() == 0)
      std::printf("heat_pinn: %d rank(s), %d steps (+ %d L-BFGS), relative L2 error %.3e (bound %.1e)%s\n",
                  comm.size(), steps, lbfgs_steps, relative, bound,
                  comm.size() == 1 ? "" : (agree ? "; the ranks' models agree" : "; RANKS DIFFER"));
    status = relative <= bound && agree && resumed_equal ? 0 : 1;
  }
  Kokkos::finalize();
#if defined(KTR_ENABLE_MPI)
  MPI_Finalize();
#endif
  return status;
}
