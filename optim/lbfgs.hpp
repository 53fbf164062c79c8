// L-BFGS over the flat parameter arena, driven one evaluation at a time and never read by the host.
//
// Each call hands the optimiser the loss and gradient at the current parameters; it decides on the device what
// the next parameters are (reverse communication, as the Fortran L-BFGS codes are driven):
//   - a trial of the strong Wolfe line search (Nocedal & Wright, algorithms 3.5 and 3.6, with PyTorch's cubic
//     interpolation) along the current direction: bracket, then zoom, from x0 + alpha d;
//   - or, once a trial meets both Wolfe conditions, the pair (s, y) is kept in a ring of `history` pairs and the
//     two-loop recursion gives the next direction, whose first trial is alpha = lr (min(1, 1/|g|_1) lr while the
//     history is empty, as PyTorch).
// A line search that runs out of trials settles on its best point if it lowered the loss, else drops the
// history and starts again along -g; with no history to drop, the run has converged. Converged (max |g| at most
// tolerance_grad, or a step that changes the loss or the parameters by less than tolerance_change), further
// calls leave the parameters alone.
//
// The host launches the same kernels whatever the device decides (each masked by a device flag), so a captured
// multi-step program replays L-BFGS as it replays Adam. Every evaluation is a step; a non-finite loss or
// gradient at a trial shrinks the step, and at a new direction's start it is refused (counted, nothing moves).
#pragma once

#include "../core/types.hpp"

#include <vector>

namespace ktr {

struct OptimizerConfig;

class Lbfgs {
 public:
  Lbfgs(OptimizerConfig const& config, std::int64_t size, ExecSpace const& space);

  /// One evaluation: `loss` (a device float) and `grads` at `params`, which move to the next point to evaluate.
  /// `step` += 1 unless the evaluation is refused (then `refused` += 1).
  void evaluate(ExecSpace const& space, DeviceView<float*> const& params, DeviceView<const float*> const& grads,
                float const* loss, Kokkos::View<std::int64_t, MemSpace> const& step,
                Kokkos::View<std::int64_t, MemSpace> const& refused) const;

  /// What a checkpoint keeps: x0, g0, the direction, the history pairs and the search's scalars.
  std::vector<DeviceView<float*>> state() const;

  /// Floats of state per parameter (for a run's device size): x0, g0, d and `history` pairs.
  static std::int64_t floats_per_parameter(int history) { return 3 + 2 * std::int64_t(history); }

  /// The scalar state's entries (read by tests and reports).
  enum Scalar : int {
    kPhase,    ///< 0: no direction yet; 1: line search; 2: settling on its best point; 3: converged
    kF0,       ///< the loss at x0
    kGd0,      ///< g0 . d
    kAlpha,    ///< the step of the point being evaluated, along d from x0
    kLoAlpha,  ///< the bracket's low end (the best point so far): step, loss, slope
    kLoF,
    kLoGd,
    kHiAlpha,  ///< the bracket's other end
    kHiF,
    kHiGd,
    kBracketed,   ///< 1 once the search zooms
    kEvals,       ///< trials of this line search
    kCount,       ///< history pairs held
    kHead,        ///< the ring slot of the next pair
    kAccept,      ///< this evaluation starts a new direction
    kRecord,      ///< ... and keeps the pair (s, y) of the step that led to it
    kReset,       ///< the new direction is -g (the recursion's was no descent direction)
    kMove,        ///< the parameters move to x0 + alpha d
    kIterations,  ///< accepted steps
    kDmax,        ///< max |d|
    kGamma,       ///< y.s / y.y of the newest pair: the initial inverse Hessian's scale
    kScalars
  };
  DeviceView<float*> const& scalars() const { return s_; }

 private:
  int m_;
  float lr_, tol_grad_, tol_change_;
  int max_trials_;
  std::int64_t n_;
  DeviceView<float*> x0_, g0_, d_, pairs_s_, pairs_y_, rho_, s_;
  Kokkos::View<double*, MemSpace> dots_;  // reductions: g.d, g.g, max|g|, sum|g|, y.s, y.y, then 2 per pair
};

}  // namespace ktr
