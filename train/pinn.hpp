// Physics-informed training with every step on the device (the fused path of docs/derivatives.md): a residual is
// written once, as a functor templated on its number type; ktr differentiates it with respect to the value and the
// derivative columns it reads by dual numbers (train/dual.hpp), draws its collocation points on the device, and
// runs K steps per call with nothing read back.
//
//   struct Heat {  // u_t = 0.4 u_xx, inputs (x, t), spec "d1 d0,0"
//     template <class D>
//     KOKKOS_INLINE_FUNCTION D operator()(ktr::pinn::Point<D> const& p) const { return p.d(0) - 0.4 * p.d(1); }
//   };
//   ktr::Pinn pinn(space, model, adam);
//   pinn.add_term("interior", "d1 d0,0", Heat{}, ktr::pinn::Points::box({0, 0}, {1, 1}), 1024);
//   pinn.add_term("walls", "", Wall{}, ktr::pinn::Points::walls({0, 0}, {1, 1}, 0), 256);
//   pinn.train(space, 1000);  // 1,000 steps queued; losses() reads back
//
// A step, per term: its points (drawn again, or kept), the jet of its spec (models/jet.hpp), one kernel that
// evaluates the residual r, its loss weight * mean(r^2) and its seeds weight * 2 r dr/dc / n for every column c,
// the jet's reverse pass into the gradient; then one optimiser update, refused on the device (as every update is)
// if the gradient or the loss is not finite. A term's draws are a pure function of (seed, term, step, point), so a
// run replays bit for bit, and K steps in one call equal K calls of one step.
#pragma once

#include "../backends/collective.hpp"
#include "../backends/graph.hpp"
#include "../models/jet.hpp"
#include "../models/model.hpp"
#include "../optim/optimizer.hpp"
#include "dual.hpp"

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace ktr {

namespace pinn {

/// One point as a residual sees it: its coordinates, the model's outputs and the spec's derivative columns. With
/// D = double every column is a value; with D = dual::Dual the one column being differentiated carries tangent 1.
template <class D>
class Point {
 public:
  KOKKOS_INLINE_FUNCTION Point(float const* x, float const* u, float const* d, int tokens, int seed,
                               std::int64_t index = 0)
      : x_(x), u_(u), d_(d), tokens_(tokens), seed_(seed), index_(index) {}
  /// Coordinate i of the point.
  KOKKOS_INLINE_FUNCTION double x(int i) const { return double(x_[i]); }
  /// The point's row in its term's points (0 to count - 1): where a residual reads data that goes with the point
  /// (a measurement, a target derivative) from a view of its own, for a term of fixed points.
  KOKKOS_INLINE_FUNCTION std::int64_t index() const { return index_; }
  /// Output k.
  KOKKOS_INLINE_FUNCTION D u(int k = 0) const { return lift(u_[k], k * (1 + tokens_)); }
  /// The spec's token t (in the order written) of output k: d(0) is the first token's column of u.
  KOKKOS_INLINE_FUNCTION D d(int t, int k = 0) const {
    return lift(d_[k * tokens_ + t], k * (1 + tokens_) + 1 + t);
  }

 private:
  KOKKOS_INLINE_FUNCTION D lift(float v, int column) const {
    if constexpr (std::is_same_v<D, double>) {
      (void)column;
      return double(v);
    } else {
      return D(double(v), column == seed_ ? 1.0 : 0.0);
    }
  }
  float const* x_;
  float const* u_;
  float const* d_;
  int tokens_, seed_;
  std::int64_t index_;
};

/// N residuals of one point, which a term's loss sums the squares of: a system of equations (continuity and
/// momentum, say) in one term, one jet, one pass over its points. A residual functor returns `Residuals<D, N>`
/// instead of D: `return {{p.d(0) + p.d(3), p.u(0) * p.d(0) + p.d(4)}};`.
template <class D, int N>
struct Residuals {
  static_assert(N >= 1, "a term has at least one residual");
  D r[N];
  KOKKOS_INLINE_FUNCTION D const& operator[](int k) const { return r[k]; }
};

/// How many residuals a functor's result holds, and component k's value or tangent (a D is one residual).
template <class R>
struct ResidualCount {
  static constexpr int value = 1;
};
template <class D, int N>
struct ResidualCount<Residuals<D, N>> {
  static constexpr int value = N;
};
KOKKOS_INLINE_FUNCTION double residual_value(double r, int) { return r; }
KOKKOS_INLINE_FUNCTION double residual_tangent(dual::Dual r, int) { return r.t; }
template <int N>
KOKKOS_INLINE_FUNCTION double residual_value(Residuals<double, N> const& r, int k) {
  return r[k];
}
template <int N>
KOKKOS_INLINE_FUNCTION double residual_tangent(Residuals<dual::Dual, N> const& r, int k) {
  return r[k].t;
}

/// Where a term's collocation points come from.
struct Points {
  std::vector<double> lo, hi;    ///< the box, one bound per input; lo == hi fixes a coordinate
  int wall = -1;                 ///< >= 0: that coordinate is lo or hi (even points lo, odd hi), the rest uniform
  bool redraw = true;            ///< new points every step (false: drawn once, kept; what L-BFGS needs)
  JetMatrix<float const> given;  ///< not empty: these points (N, inputs), every step

  /// Uniform in [lo, hi].
  static Points box(std::vector<double> lo, std::vector<double> hi);
  /// On the two walls of [lo, hi] across coordinate `wall`: both ends of a 1-D domain in space, say.
  static Points walls(std::vector<double> lo, std::vector<double> hi, int wall);
  /// The caller's points (N, inputs), read in place at every step.
  static Points fixed(JetMatrix<float const> points);
  /// The same draw kept for every step.
  Points once() const;
};

/// A residual's device kernel: value, loss and seeds at each point (see the file comment).
template <class Residual>
struct ResidualKernel {
  Residual residual;
  JetMatrix<float const> x, u;
  JetCube<float const> derivs;
  JetMatrix<float> u_seed;
  JetCube<float> derivs_seed;
  int outputs, tokens;
  double weight_over_n;

  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i, float& loss) const {
    float const* xi = &x(i, 0);
    float const* ui = &u(i, 0);
    float const* di = tokens > 0 ? &derivs(i, 0, 0) : nullptr;
    auto const r = residual(Point<double>(xi, ui, di, tokens, -1, i));
    constexpr int n = ResidualCount<std::remove_cv_t<decltype(r)>>::value;
    double term_loss = weight_over_n * residual_value(r, 0) * residual_value(r, 0);
    for (int j = 1; j < n; ++j) term_loss += weight_over_n * residual_value(r, j) * residual_value(r, j);
    loss += float(term_loss);
    for (int k = 0; k < outputs; ++k)
      for (int c = 0; c <= tokens; ++c) {
        auto const dr = residual(Point<dual::Dual>(xi, ui, di, tokens, k * (1 + tokens) + c, i));
        double seed_sum = 2 * weight_over_n * residual_value(r, 0) * residual_tangent(dr, 0);
        for (int j = 1; j < n; ++j) seed_sum += 2 * weight_over_n * residual_value(r, j) * residual_tangent(dr, j);
        float const seed = float(seed_sum);
        if (c == 0)
          u_seed(i, k) = seed;
        else
          derivs_seed(i, k, c - 1) = seed;
      }
  }
};

/// One term of a Pinn: its points, jet and seeds (the residual kernel is the subclass's).
class Term {
 public:
  Term(Model const& model, std::string name, std::string const& spec, Points points, std::int64_t count,
       double weight, std::uint64_t key);
  virtual ~Term() = default;
  Term(Term const&) = delete;
  Term& operator=(Term const&) = delete;

  std::string const& name() const { return name_; }
  JetSpec const& spec() const { return jet_.spec(); }
  std::int64_t count() const { return count_; }
  bool redraws() const { return points_.given.size() == 0 && points_.redraw; }
  /// True if the term draws its points once and keeps them (Points::once()).
  bool keeps() const { return points_.given.size() == 0 && !points_.redraw; }
  double weight() const { return weight_; }
  /// The points of the last step (N, inputs): the caller's fixed ones, or this term's draws.
  JetMatrix<float const> points() const { return points_.given.size() != 0 ? points_.given : x_; }
  /// The term as a checkpoint records it: its name, spec, count, weight and where its points come from.
  std::string signature() const;
  /// The points this term keeps (drawn once, and drawn by now): what a checkpoint saves; empty otherwise.
  JetMatrix<float> kept_points() const { return keeps() && drawn_ ? x_ : JetMatrix<float>(); }
  /// Takes `values` (count x inputs, row-major: a checkpoint's) as the points this term keeps, drawn already.
  void restore_points(ExecSpace const& space, std::vector<float> const& values);
  /// Adds this term's gradient at the step `step()` counts (a device scalar, which keys the draws: a replayed
  /// program draws anew) into `grads` and writes its loss into `losses(index)`. `scale` and `shift`: the model's
  /// input transform x' = x * scale + shift (empty: none).
  void step(ExecSpace const& space, DeviceView<float*> const& params, DeviceView<float*> const& grads,
            Kokkos::View<float*, MemSpace> const& losses, std::size_t index,
            Kokkos::View<std::int64_t, MemSpace> const& step, Kokkos::View<float const*, MemSpace> const& scale,
            Kokkos::View<float const*, MemSpace> const& shift);

 protected:
  virtual void residual(ExecSpace const& space, Kokkos::View<float*, MemSpace> const& losses,
                        std::size_t index) = 0;

  std::string name_;
  Points points_;
  std::int64_t count_;
  double weight_;
  std::uint64_t key_;
  Jet<float> jet_;
  JetMatrix<float> x_;  // drawn points (empty for fixed ones)
  JetMatrix<float> u_, u_seed_;
  JetCube<float> derivs_, derivs_seed_;
  Kokkos::View<double*, MemSpace> lo_, hi_;  // the box (drawn points)
  bool drawn_ = false;
};

template <class Residual>
class ResidualTerm final : public Term {
 public:
  ResidualTerm(Model const& model, std::string name, std::string const& spec, Residual residual, Points points,
               std::int64_t count, double weight, std::uint64_t key)
      : Term(model, std::move(name), spec, std::move(points), count, weight, key), residual_(residual) {}

 private:
  void residual(ExecSpace const& space, Kokkos::View<float*, MemSpace> const& losses, std::size_t index) override {
    ResidualKernel<Residual> const kernel{residual_,
                                          points(),
                                          u_,
                                          derivs_,
                                          u_seed_,
                                          derivs_seed_,
                                          int(jet_.outputs()),
                                          int(jet_.spec().size()),
                                          weight_ / double(count_)};
    Kokkos::parallel_reduce("ktr::pinn::residual",
                            Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, count_),
                            kernel, Kokkos::subview(losses, index));
  }
  Residual residual_;
};

/// The points of a grid over [lo, hi] with `per_side` points on each side (per_side^inputs in all, the first
/// coordinate fastest), as a check of a trained model takes them.
JetMatrix<float> grid(ExecSpace const& space, std::vector<double> const& lo, std::vector<double> const& hi,
                      std::int64_t per_side);

/// The squared error of the first output against `exact` at each point, and exact's square (relative_l2's sums).
template <class Exact>
struct ErrorKernel {
  Exact exact;
  JetMatrix<float const> x, u;
  bool norm;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i, double& sum) const {
    double const v = exact(&x(i, 0)), e = norm ? v : double(u(i, 0)) - v;
    sum += e * e;
  }
};

/// The relative L2 error sqrt(sum (u - exact)^2 / sum exact^2) of the model's first output at points x (N,
/// inputs); `exact(x)` takes a point's coordinates (a float pointer) and returns a double, on the device. `scale`
/// and `shift`: the input transform the model was trained with (Pinn::scale(), Pinn::shift()).
template <class Exact>
double relative_l2(ExecSpace const& space, Model const& model, JetMatrix<float const> const& x, Exact exact,
                   Kokkos::View<float const*, MemSpace> const& scale = {},
                   Kokkos::View<float const*, MemSpace> const& shift = {}) {
  std::int64_t const n = std::int64_t(x.extent(0));
  Jet<float> values(model, JetSpec::parse("", std::int64_t(x.extent(1))), n);
  JetMatrix<float> u("ktr::pinn::u", n, values.outputs());
  values.forward(space, model.arena().params(), scale, shift, x, u, {});
  Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>> const range(space, 0, n);
  double err = 0, norm = 0;
  Kokkos::parallel_reduce("ktr::pinn::error", range, ErrorKernel<Exact>{exact, x, u, false}, err);
  Kokkos::parallel_reduce("ktr::pinn::norm", range, ErrorKernel<Exact>{exact, x, u, true}, norm);
  return std::sqrt(err / norm);
}

}  // namespace pinn

/// A physics-informed training of one model: weighted residual terms, one optimiser, K steps per call.
///
/// Over several ranks (`comm`): every rank's model starts as rank 0's, each rank draws its own points (its draws
/// keyed by its rank too; fixed points are each rank's own), and every update takes the ranks' mean gradient and
/// mean losses (two allreduces a step), so the models stay equal to the bit and a refusal is every rank's.
class Pinn {
 public:
  /// Trains `model`'s parameters (in place) with `optimizer`; draws are keyed by `seed`. Collective over `comm`.
  Pinn(ExecSpace const& space, Model& model, OptimizerConfig const& optimizer, std::uint64_t seed = 0,
       Communicator const& comm = Communicator());

  /// Adds the term weight * mean over `count` points of residual(point)^2 (of the sum of the squares, for a
  /// residual functor that returns Residuals<D, N>), its columns those of `spec` (the derivative tokens of
  /// models/jet.hpp). Throws UsageError naming the term and what is wrong: a spec token the
  /// model cannot give, bounds that do not match the inputs, no points, a weight that is negative or not finite.
  template <class Residual>
  void add_term(std::string name, std::string const& spec, Residual residual, pinn::Points points,
                std::int64_t count, double weight = 1) {
    check_term(name, points, count, weight);
    terms_.push_back(std::make_unique<pinn::ResidualTerm<Residual>>(
        *model_, std::move(name), spec, residual, std::move(points), count, weight, key_ + terms_.size()));
    losses_ = Kokkos::View<float*, MemSpace>("ktr::pinn::losses", terms_.size() + 1);
    programs_.clear();  // they replay the terms and buffers they were recorded with
  }

  /// Sets the model's input transform x' = x * scale + shift (one value per input; a PINN on a domain far from
  /// [-1, 1] takes it there). Residuals still see raw coordinates, and every derivative column is with respect to
  /// the raw inputs: the jet carries the transform exactly. Throws UsageError unless both have one finite value
  /// per input and no scale is 0.
  void set_input_transform(ExecSpace const& space, std::vector<double> const& scale,
                           std::vector<double> const& shift);
  Kokkos::View<float const*, MemSpace> scale() const { return scale_; }
  Kokkos::View<float const*, MemSpace> shift() const { return shift_; }

  /// Queues `steps` steps on `space` with nothing read back (over several ranks: collective, each step's
  /// allreduces wait for the host where the transport does). Throws UsageError if there is no term, or (L-BFGS)
  /// if a term draws new points every step, naming it. On a stream of its own where the build captures (CUDA;
  /// HIP with Kokkos Kernels 4.x) the steps are one program, recorded at the first call of a step count and
  /// replayed by later ones (the draws are keyed by a device counter); elsewhere, and where a collective waits
  /// for the host, they run kernel by kernel.
  void train(ExecSpace const& space, int steps);

  /// Saves the training as the next generation of the checkpoint directory `dir`, with the guarantees of
  /// train/run_directory.hpp (each file written to a temporary name and renamed, the previous generation current
  /// until the new one is complete, a foreign file never replaced): pinn.ckpt holds the model's parameters, the
  /// optimiser's state and step, the step count, the input transform and the points of the terms that keep a
  /// draw; over several ranks rank r's own points are rank-<r>.ckpt. Collective; reads back.
  void save(ExecSpace const& space, std::string const& dir) const;
  /// Restores what save wrote into this Pinn, made as the saved one was (its model's description, optimiser kind,
  /// terms, transform and rank count are checked first: a mismatch throws naming the file and the field, and
  /// changes nothing), so that training goes on bit for bit: redrawn points are keyed by the step count, kept
  /// ones come from the file. Collective.
  void load(ExecSpace const& space, std::string const& dir);

  /// Each term's loss at the last step (weighted; over several ranks the ranks' mean), then their sum: reads back.
  std::vector<double> losses(ExecSpace const& space) const;
  /// The gradient of the last step (arena layout).
  DeviceView<float*> const& gradient() const { return grads_; }
  std::int64_t steps() const { return steps_; }
  Optimizer const& optimizer() const { return optimizer_; }
  std::vector<std::unique_ptr<pinn::Term>> const& terms() const { return terms_; }
  Communicator const& communicator() const { return comm_; }

  /// The step's gradient and losses become the ranks' means (train's; public because the CUDA compiler refuses
  /// device lambdas in private members).
  void mean_over_ranks(ExecSpace const& space);
  /// One step of every term, its update and the draw counter's advance (train's; public for the same reason).
  void step(ExecSpace const& space);

 private:
  void check_term(std::string const& name, pinn::Points const& points, std::int64_t count, double weight) const;

  Model* model_;
  Communicator comm_;
  Optimizer optimizer_;
  DeviceView<float*> grads_;
  Kokkos::View<std::int64_t, MemSpace> step_;
  Kokkos::View<std::int64_t, MemSpace> draw_step_;  // steps made (every one, refused or not): keys the draws
  Kokkos::View<float*, MemSpace> losses_;           // per term, then the total
  Kokkos::View<float*, MemSpace> scale_, shift_;    // the input transform (empty: none)
  std::vector<std::unique_ptr<pinn::Term>> terms_;
  std::uint64_t key_;
  std::int64_t steps_ = 0;
  // The captured programs of K steps (GPU builds, a stream of its own), by K and stream; the oldest goes first
  // past kMaxPrograms.
  struct ProgramKey {
    int steps = 0;
    StreamIdentity stream;
    bool operator==(ProgramKey const& o) const {
      return steps == o.steps && stream.stream == o.stream.stream && stream.resources == o.stream.resources &&
             stream.instance == o.stream.instance;
    }
  };
  static constexpr std::size_t kMaxPrograms = 8;
  std::vector<std::pair<ProgramKey, std::unique_ptr<CapturedProgram>>> programs_;
};

}  // namespace ktr
