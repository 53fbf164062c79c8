// The optimiser kernels: a one-thread advance of the device scalars, then one fused update over the arena.
#include "optimizer.hpp"

#include <cmath>

#include "../core/bf16.hpp"
#include "../core/error.hpp"
#include "../core/ops.hpp"
#include "lbfgs.hpp"
#include "schedule_scale.hpp"

namespace ktr {

namespace {

// The moments of a parameter whose gradient stays zero (a dead ReLU unit, an input that is always zero) decay
// geometrically: after ~800 Adam steps m is subnormal, and every multiply that reads or writes a subnormal float
// takes a microcode assist on x86 CPUs (~100x slower: Adam over the MLP went from 0.3 to 6.6 ms per step). Such a
// state is zero for every purpose of the update (it moves a parameter by less than 1e-30), so it is stored as
// zero, whatever the threads' floating-point mode: the same bits on every backend.
KOKKOS_INLINE_FUNCTION float flush_subnormal(float x) {
  return (x < 1.17549435e-38f && x > -1.17549435e-38f) ? 0.0f : x;
}

// A bf16 run's copy of the chunk of parameters just updated (still in cache): p16 = bf16_bits(p) over [begin,
// end).
KOKKOS_INLINE_FUNCTION void store_bf16(float const* KOKKOS_RESTRICT p, std::uint16_t* KOKKOS_RESTRICT p16,
                                       std::int64_t begin, std::int64_t end) {
  if (p16 == nullptr) return;
  for (std::int64_t i = begin; i < end; ++i) p16[i] = bf16_bits(p[i]);
}

}  // namespace

OptimizerConfig::Kind OptimizerConfig::parse_kind(std::string const& name) {
  if (name == "sgd") return Kind::sgd;
  if (name == "adam") return Kind::adam;
  if (name == "adamw") return Kind::adamw;
  if (name == "lbfgs") return Kind::lbfgs;
  throw Error("optimizer: unknown optimiser '" + name + "' (sgd, adam, adamw, lbfgs)");
}

char const* OptimizerConfig::kind_name(Kind kind) {
  switch (kind) {
    case Kind::sgd:
      return "sgd";
    case Kind::adam:
      return "adam";
    case Kind::adamw:
      return "adamw";
    case Kind::lbfgs:
      return "lbfgs";
  }
  return "?";
}

Optimizer::Optimizer(OptimizerConfig const& config, std::int64_t size, ExecSpace const& space)
    : config_(config),
      scalars_(Kokkos::view_alloc(space, "ktr::optim::scalars"), 5),
      grad_norm_sq_(Kokkos::view_alloc(space, "ktr::optim::grad_norm_sq")),
      refused_(Kokkos::view_alloc(space, "ktr::optim::refused")) {
  // Library checks name the setting, not a command-line flag: the values may come from a checkpoint or an API.
  using R = OptimizerRanges;
  // The settings are floats: the bounds as the floats they round to (1e-12 given is float(1e-12)); NaN is false.
  auto in = [](float v, double lo, double hi) { return v >= float(lo) && v <= float(hi); };
  KTR_REQUIRE(in(config.lr, R::lr_min, R::lr_max), "ktr::Optimizer", "lr must be in [1e-12, 1e6]");
  KTR_REQUIRE(in(config.b1, 0, R::below_one) && in(config.b2, 0, R::below_one), "ktr::Optimizer",
              "b1 and b2 must be in [0, 0.999999]");
  KTR_REQUIRE(in(config.momentum, 0, R::below_one), "ktr::Optimizer", "momentum must be in [0, 0.999999]");
  KTR_REQUIRE(in(config.eps, R::eps_min, R::eps_max), "ktr::Optimizer", "eps must be in [1e-30, 1]");
  KTR_REQUIRE(in(config.l2, 0, R::decay_max), "ktr::Optimizer", "l2 must be in [0, 1e6]");
  KTR_REQUIRE(in(config.weight_decay, 0, R::decay_max) && in(config.clip_norm, 0, R::clip_max), "ktr::Optimizer",
              "weight_decay must be in [0, 1e6] and clip_norm in [0, 3.4e38]");
  if (config.kind == OptimizerConfig::Kind::lbfgs) {
    KTR_REQUIRE(config.history >= 1 && config.history <= R::history_max, "ktr::Optimizer",
                "history must be in [1, 1000]");
    KTR_REQUIRE(config.linesearch >= 1 && config.linesearch <= R::linesearch_max, "ktr::Optimizer",
                "linesearch must be in [1, 1000]");
    KTR_REQUIRE(in(config.tolerance_grad, 0, R::clip_max) && in(config.tolerance_change, 0, R::clip_max),
                "ktr::Optimizer", "tolerance_grad and tolerance_change must be in [0, 3.4e38]");
    KTR_REQUIRE(config.clip_norm == 0 && config.l2 == 0 && config.schedule.kind == Schedule::Kind::constant,
                "ktr::Optimizer",
                "lbfgs takes no clip_norm, l2 penalty or schedule: its line search chooses each step");
    lbfgs_ = std::make_shared<Lbfgs const>(config, size, space);
    return;
  }
  bool const adam = config.kind != OptimizerConfig::Kind::sgd;
  if (adam || config.momentum > 0)
    m_ = DeviceView<float*>(Kokkos::view_alloc(space, "ktr::optim::m"), std::size_t(size));
  if (adam) v_ = DeviceView<float*>(Kokkos::view_alloc(space, "ktr::optim::v"), std::size_t(size));
}

std::int64_t Optimizer::floats_per_parameter(OptimizerConfig const& c) {
  switch (c.kind) {
    case OptimizerConfig::Kind::lbfgs:
      return Lbfgs::floats_per_parameter(c.history);
    case OptimizerConfig::Kind::sgd:
      return c.momentum > 0 ? 1 : 0;
    default:
      return 2;
  }
}

std::vector<DeviceView<float*>> Optimizer::state() const {
  if (lbfgs_) return lbfgs_->state();
  std::vector<DeviceView<float*>> s;
  if (m_.extent(0)) s.push_back(m_);
  if (v_.extent(0)) s.push_back(v_);
  return s;
}

void Optimizer::update(ExecSpace const& space, DeviceView<float*> const& params,
                       DeviceView<const float*> const& grads, Kokkos::View<std::int64_t, MemSpace> const& step,
                       float const* losses, int loss_count, DeviceView<std::uint16_t*> const& params16) const {
  KTR_REQUIRE(params16.extent(0) == 0 || params16.extent(0) == params.extent(0), "ktr::Optimizer::update",
              "the parameters' bf16 copy holds " + std::to_string(params16.extent(0)) + " values, not " +
                  std::to_string(params.extent(0)));
  if (lbfgs_) {
    KTR_REQUIRE(losses != nullptr && loss_count == 1 && params16.extent(0) == 0, "ktr::Optimizer::update",
                "lbfgs needs the loss of each evaluation (one rank, one micro-batch) and fp32 or tf32 parameters");
    lbfgs_->evaluate(space, params, grads, losses, step, refused_);
    auto scalars = scalars_;
    float const* const ls = lbfgs_->scalars().data();
    Kokkos::parallel_for(
        "ktr::optim::lbfgs_report", Kokkos::RangePolicy<ExecSpace>(space, 0, 1),
        KOKKOS_LAMBDA(int) { scalars(0) = ls[Lbfgs::kAlpha], scalars(4) = 1.0f; });
    return;
  }
  OptimizerConfig const c = config_;
  auto scalars = scalars_;
  auto norm_sq = grad_norm_sq_;
  auto refused = refused_;
  sum_squares(space, grads, norm_sq);  // in double: finite for every finite float gradient
  Kokkos::parallel_for(
      "ktr::optim::advance", Kokkos::RangePolicy<ExecSpace>(space, 0, 1), KOKKOS_LAMBDA(int) {
        double const sq = norm_sq();
        bool apply = sq - sq == 0.0;  // false for NaN and infinity
        for (int j = 0; j < loss_count; ++j) apply = apply && losses[j] - losses[j] == 0.0f;
        scalars(4) = apply ? 1.0f : 0.0f;
        if (!apply) {
          refused() += 1;
          return;
        }
        std::int64_t const t = step();  // updates done so far
        step() = t + 1;
        scalars(0) = float(double(c.lr) * schedule_scale(c.schedule, t));
        scalars(1) = float(1.0 - compat::pow(double(c.b1), double(t + 1)));
        scalars(2) = float(1.0 - compat::pow(double(c.b2), double(t + 1)));
        float clip = 1.0f;
        if (c.clip_norm > 0) {
          double const norm = compat::sqrt(sq);
          if (norm > c.clip_norm) clip = float(c.clip_norm / norm);
        }
        scalars(3) = clip;
      });

  float* KOKKOS_RESTRICT const p = params.data();
  float const* KOKKOS_RESTRICT const g = grads.data();
  float* KOKKOS_RESTRICT const m = m_.data();
  float* KOKKOS_RESTRICT const v = v_.data();
  float const* const s = scalars_.data();
  std::uint16_t* const p16 = params16.extent(0) ? params16.data() : nullptr;
  std::int64_t const n = params.extent(0);
  switch (c.kind) {
    case OptimizerConfig::Kind::sgd:
      chunked_for(
          "ktr::optim::sgd", space, n, KOKKOS_LAMBDA(std::int64_t begin, std::int64_t end) {
            if (s[4] == 0.0f) return;  // refused
            float const lr = s[0], clip = s[3], mu = c.momentum, l2 = c.l2;
            bool const nesterov = c.nesterov;
            if (mu > 0) {
              for (std::int64_t i = begin; i < end; ++i) {
                float const gi = g[i] * clip + l2 * p[i];
                float const trace = flush_subnormal(gi + mu * m[i]);
                m[i] = trace;
                p[i] -= lr * (nesterov ? gi + mu * trace : trace);
              }
            } else {
              for (std::int64_t i = begin; i < end; ++i) p[i] -= lr * (g[i] * clip + l2 * p[i]);
            }
            store_bf16(p, p16, begin, end);
          });
      break;
    case OptimizerConfig::Kind::adam:
    case OptimizerConfig::Kind::adamw: {
      float const decay = c.kind == OptimizerConfig::Kind::adamw ? c.weight_decay : 0.0f;
      float const l2 = c.kind == OptimizerConfig::Kind::adam ? c.l2 : 0.0f;
      chunked_for(
          "ktr::optim::adam", space, n, KOKKOS_LAMBDA(std::int64_t begin, std::int64_t end) {
            if (s[4] == 0.0f) return;  // refused
            float const lr = s[0], inv_bc1 = 1.0f / s[1], inv_bc2 = 1.0f / s[2], clip = s[3];
            float const b1 = c.b1, b2 = c.b2, eps = c.eps;
            for (std::int64_t i = begin; i < end; ++i) {
              float const gi = g[i] * clip + l2 * p[i];
              float const mi = flush_subnormal(b1 * m[i] + (1.0f - b1) * gi);
              float const vi = flush_subnormal(b2 * v[i] + (1.0f - b2) * gi * gi);
              m[i] = mi;
              v[i] = vi;
              p[i] -= lr * ((mi * inv_bc1) / (compat::sqrt(vi * inv_bc2) + eps) + decay * p[i]);
            }
            store_bf16(p, p16, begin, end);
          });
      break;
    }
    case OptimizerConfig::Kind::lbfgs:
      break;  // above
  }
}

}  // namespace ktr
