#include "pinn.hpp"

#include "../core/checked.hpp"
#include "../core/error.hpp"
#include "../core/permutation.hpp"
#include "../models/model.hpp"

#include <cmath>

namespace ktr {
namespace {

using Range = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;

// KTR_REQUIRE's UsageError: a term or a call the caller got wrong.
#define KTR_PINN_REQUIRE(ok, what, why)                                   \
  do {                                                                    \
    if (!(ok)) throw ::ktr::UsageError(std::string(what) + ": " + (why)); \
  } while (false)

}  // namespace

namespace pinn {
namespace {

Jet<float> make_jet(Model const& model, std::string const& name, std::string const& spec, std::int64_t count) {
  try {
    return Jet<float>(model, JetSpec::parse(spec, model.input_shape(1).inner()), count);
  } catch (UsageError const& e) {
    throw UsageError("pinn term '" + name + "': " + e.what());
  }
}

}  // namespace

Points Points::box(std::vector<double> lo, std::vector<double> hi) {
  Points p;
  p.lo = std::move(lo), p.hi = std::move(hi);
  return p;
}

Points Points::walls(std::vector<double> lo, std::vector<double> hi, int wall) {
  Points p = box(std::move(lo), std::move(hi));
  p.wall = wall;
  return p;
}

Points Points::fixed(JetMatrix<float const> points) {
  Points p;
  p.given = std::move(points);
  return p;
}

Points Points::once() const {
  Points p = *this;
  p.redraw = false;
  return p;
}

JetMatrix<float> grid(ExecSpace const& space, std::vector<double> const& lo, std::vector<double> const& hi,
                      std::int64_t per_side) {
  std::size_t const d = lo.size();
  KTR_PINN_REQUIRE(d > 0 && hi.size() == d && per_side >= 2, "ktr::pinn::grid",
                   "it takes as many upper as lower bounds (at least one) and at least 2 points a side");
  std::int64_t n = 1;
  for (std::size_t j = 0; j < d; ++j) n = checked_mul(n, per_side, "ktr::pinn::grid: the point count");
  JetMatrix<float> x("ktr::pinn::grid", n, d);
  auto h = Kokkos::create_mirror_view(x);
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t rest = i;
    for (std::size_t j = 0; j < d; ++j, rest /= per_side)
      h(i, j) = float(lo[j] + (hi[j] - lo[j]) * double(rest % per_side) / double(per_side - 1));
  }
  Kokkos::deep_copy(space, x, h);
  space.fence();
  return x;
}

Term::Term(Model const& model, std::string name, std::string const& spec, Points points, std::int64_t count,
           double weight, std::uint64_t key)
    : name_(std::move(name)),
      points_(std::move(points)),
      count_(count),
      weight_(weight),
      key_(key),
      jet_(make_jet(model, name_, spec, count)) {
  std::int64_t const d = jet_.inputs(), m = jet_.outputs(), T = std::int64_t(jet_.spec().size());
  u_ = JetMatrix<float>("ktr::pinn::u", count, m);
  u_seed_ = JetMatrix<float>("ktr::pinn::u_seed", count, m);
  derivs_ = JetCube<float>("ktr::pinn::derivs", count, m, T);
  derivs_seed_ = JetCube<float>("ktr::pinn::derivs_seed", count, m, T);
  if (points_.given.size() == 0) {
    x_ = JetMatrix<float>("ktr::pinn::points", count, d);
    lo_ = Kokkos::View<double*, MemSpace>("ktr::pinn::lo", std::size_t(d));
    hi_ = Kokkos::View<double*, MemSpace>("ktr::pinn::hi", std::size_t(d));
    auto lo_h = Kokkos::create_mirror_view(lo_), hi_h = Kokkos::create_mirror_view(hi_);
    for (std::int64_t j = 0; j < d; ++j)
      lo_h(j) = points_.lo[std::size_t(j)], hi_h(j) = points_.hi[std::size_t(j)];
    Kokkos::deep_copy(lo_, lo_h);
    Kokkos::deep_copy(hi_, hi_h);
  }
}

void Term::step(ExecSpace const& space, DeviceView<float*> const& params, DeviceView<float*> const& grads,
                Kokkos::View<float*, MemSpace> const& losses, std::size_t index,
                Kokkos::View<std::int64_t, MemSpace> const& step,
                Kokkos::View<float const*, MemSpace> const& scale,
                Kokkos::View<float const*, MemSpace> const& shift) {
  if (points_.given.size() == 0 && (points_.redraw || !drawn_)) {
    // Coordinate j of point i at step s: lo_j + (hi_j - lo_j) u, u a hash of (key, s, i, j); a wall coordinate
    // alternates between its ends.
    std::int64_t const d = jet_.inputs();
    auto const x = x_;
    auto const lo = lo_, hi = hi_;
    int const wall = points_.wall;
    std::uint64_t const term_key = key_;
    Kokkos::parallel_for(
        "ktr::pinn::draw_points", Range(space, 0, count_), KOKKOS_LAMBDA(std::int64_t i) {
          std::uint64_t const key = mix64(term_key ^ mix64(std::uint64_t(step()) + 0x2545F4914F6CDD1Dull));
          for (std::int64_t j = 0; j < d; ++j) {
            double const u =
                double(mix64(key ^ mix64(std::uint64_t(i * d + j))) >> 11) * (1.0 / 9007199254740992.0);
            double const t = j == wall ? double(i % 2) : u;
            x(i, j) = float(lo(j) + (hi(j) - lo(j)) * t);
          }
        });
    drawn_ = true;
  }
  jet_.forward(space, params, scale, shift, points(), u_, derivs_);
  residual(space, losses, index);
  jet_.backward(space, params, u_seed_, derivs_seed_, grads, {});
}

}  // namespace pinn

Pinn::Pinn(ExecSpace const& space, Model& model, OptimizerConfig const& optimizer, std::uint64_t seed,
           Communicator const& comm)
    : model_(&model),
      comm_(comm),
      optimizer_(optimizer, model.arena().size(), space),
      grads_("ktr::pinn::grads", std::size_t(model.arena().size())),
      step_("ktr::pinn::step"),
      draw_step_("ktr::pinn::draw_step"),
      // Rank r's terms are keyed apart from every other rank's (rank 0's as a one-rank run's).
      key_(mix64(seed ^ 0x9E6C63D0676A9A99ull) ^ (comm.rank() == 0 ? 0 : mix64(std::uint64_t(comm.rank())))) {
  if (comm_.size() > 1) comm_.broadcast(space, model.arena().params());
}

void Pinn::set_input_transform(ExecSpace const& space, std::vector<double> const& scale,
                               std::vector<double> const& shift) {
  std::size_t const d = std::size_t(model_->input_shape(1).inner());
  KTR_PINN_REQUIRE(scale.size() == d && shift.size() == d, "pinn input transform",
                   "it has " + std::to_string(scale.size()) + " scales and " + std::to_string(shift.size()) +
                       " shifts, the model " + std::to_string(d) + " inputs");
  for (std::size_t j = 0; j < d; ++j)
    KTR_PINN_REQUIRE(std::isfinite(scale[j]) && std::isfinite(shift[j]) && scale[j] != 0, "pinn input transform",
                     "input " + std::to_string(j) + "'s scale " + std::to_string(scale[j]) + " and shift " +
                         std::to_string(shift[j]) + " are not finite with a scale other than 0");
  programs_.clear();  // they read the transform's old buffers
  scale_ = Kokkos::View<float*, MemSpace>("ktr::pinn::scale", d);
  shift_ = Kokkos::View<float*, MemSpace>("ktr::pinn::shift", d);
  auto sh = Kokkos::create_mirror_view(scale_), bh = Kokkos::create_mirror_view(shift_);
  for (std::size_t j = 0; j < d; ++j) sh(j) = float(scale[j]), bh(j) = float(shift[j]);
  Kokkos::deep_copy(space, scale_, sh);
  Kokkos::deep_copy(space, shift_, bh);
  space.fence();
}

void Pinn::check_term(std::string const& name, pinn::Points const& points, std::int64_t count,
                      double weight) const {
  std::string const what = "pinn term '" + name + "'";
  std::int64_t const d = model_->input_shape(1).inner();
  KTR_PINN_REQUIRE(std::isfinite(weight) && weight >= 0, what,
                   "the weight " + std::to_string(weight) + " is not a finite number >= 0");
  if (points.given.size() != 0) {
    KTR_PINN_REQUIRE(points.given.extent(1) == std::size_t(d), what,
                     "its points have " + std::to_string(points.given.extent(1)) + " coordinates, the model " +
                         std::to_string(d) + " inputs");
    KTR_PINN_REQUIRE(std::int64_t(points.given.extent(0)) == count, what,
                     "its count is " + std::to_string(count) + " but it is given " +
                         std::to_string(points.given.extent(0)) + " points");
  } else {
    KTR_PINN_REQUIRE(std::int64_t(points.lo.size()) == d && std::int64_t(points.hi.size()) == d, what,
                     "its box has " + std::to_string(points.lo.size()) + " and " +
                         std::to_string(points.hi.size()) + " bounds, the model " + std::to_string(d) + " inputs");
    for (std::int64_t j = 0; j < d; ++j) {
      double const lo = points.lo[std::size_t(j)], hi = points.hi[std::size_t(j)];
      KTR_PINN_REQUIRE(std::isfinite(lo) && std::isfinite(hi) && lo <= hi, what,
                       "coordinate " + std::to_string(j) + "'s bounds [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "] are not finite with lo <= hi");
    }
    KTR_PINN_REQUIRE(points.wall >= -1 && points.wall < d, what,
                     "its wall coordinate " + std::to_string(points.wall) + " is not an input");
  }
  KTR_PINN_REQUIRE(count > 0 && count <= (std::int64_t(1) << 31), what,
                   "its count " + std::to_string(count) + " is not in [1, 2^31]");
  for (auto const& t : terms_) KTR_PINN_REQUIRE(t->name() != name, what, "a term of that name exists");
}

void Pinn::train(ExecSpace const& space, int steps) {
  KTR_PINN_REQUIRE(!terms_.empty(), "pinn", "it has no term to train on");
  KTR_PINN_REQUIRE(steps >= 0, "pinn", "the step count " + std::to_string(steps) + " is negative");
  if (optimizer_.config().kind == OptimizerConfig::Kind::lbfgs)
    for (auto const& t : terms_)
      KTR_PINN_REQUIRE(
          !t->redraws(), "pinn term '" + t->name() + "'",
          "it draws new points every step, and lbfgs needs a fixed batch (Points::once() or fixed points)");
  auto run_plain = [&] {
    for (int s = 0; s < steps; ++s) step(space);
  };
  if (steps == 0 || !CapturedProgram::can_capture(space) || comm_.host_synchronised()) {
    run_plain();
    return;
  }
  ProgramKey const key{steps, stream_identity(space)};
  for (auto& [k, program] : programs_)
    if (k == key) {
      if (!program->valid()) {
        run_plain();  // capture failed once for this step count
        return;
      }
      program->replay(space);
      steps_ += steps;
      return;
    }
  // First call of this step count: run it plainly (warming up every lazily made buffer and handle, and the kept
  // points' first draw), then record it without running it; later calls replay it.
  run_plain();
  if (programs_.size() >= kMaxPrograms) programs_.erase(programs_.begin());  // the oldest goes first
  programs_.emplace_back(key, std::make_unique<CapturedProgram>());
  space.fence();                                       // not captured: the capture must start on an idle stream
  programs_.back().second->capture(space, run_plain);  // a failed capture leaves it empty: plain from then on
  steps_ -= steps;                                     // recording ran nothing
}

void Pinn::step(ExecSpace const& space) {
  auto const params = model_->arena().params();
  auto const losses = losses_;
  auto const draw_step = draw_step_;
  std::size_t const n = terms_.size();
  Kokkos::deep_copy(space, grads_, 0.0f);
  for (std::size_t t = 0; t < n; ++t)
    terms_[t]->step(space, params, grads_, losses_, t, draw_step_, scale_, shift_);
  Kokkos::parallel_for(
      "ktr::pinn::total_loss", Range(space, 0, 1), KOKKOS_LAMBDA(std::int64_t) {
        float total = 0;
        for (std::size_t t = 0; t < n; ++t) total += losses(t);
        losses(n) = total;
        draw_step() += 1;  // the next step's draws
      });
  if (comm_.size() > 1) mean_over_ranks(space);
  optimizer_.update(space, params, grads_, step_, losses_.data() + n, 1);
  ++steps_;
}

void Pinn::mean_over_ranks(ExecSpace const& space) {
  float const share = 1.0f / float(comm_.size());
  auto const grads = grads_, losses = losses_;
  Kokkos::parallel_for(
      "ktr::pinn::rank_share", Range(space, 0, std::int64_t(grads.extent(0))),
      KOKKOS_LAMBDA(std::int64_t i) { grads(i) *= share; });
  Kokkos::parallel_for(
      "ktr::pinn::rank_loss_share", Range(space, 0, std::int64_t(losses.extent(0))),
      KOKKOS_LAMBDA(std::int64_t i) { losses(i) *= share; });
  comm_.allreduce_sum(space, grads_);
  comm_.allreduce_sum(space, losses_);
}

std::vector<double> Pinn::losses(ExecSpace const& space) const {
  auto const h = Kokkos::create_mirror_view(losses_);
  Kokkos::deep_copy(space, h, losses_);
  space.fence();
  return std::vector<double>(h.data(), h.data() + h.size());
}

}  // namespace ktr
