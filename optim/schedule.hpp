// Learning-rate schedules, evaluated on the device from the device step count (so a replayed graph sees the
// right rate), with Optax's conventions: the rate for update t (t = 0, 1, ...) is schedule(t).
#pragma once

#include <cstdint>
#include <string>

namespace ktr {

struct Schedule {
  enum class Kind { constant, warmup, cosine, step, multistep, polynomial, linear };
  static constexpr int max_milestones = 8;
  Kind kind = Kind::constant;
  std::int64_t warmup_steps = 0;  ///< warmup, cosine: linear ramp from 0 over this many steps
  std::int64_t decay_steps = 0;   ///< cosine: steps (after warmup) to decay over
  float alpha = 0.0f;             ///< cosine: final rate as a fraction of the peak
  bool periodic = false;          ///< cosine: past the decay, on periodically (PyTorch's) or held (Optax's)
  std::int64_t step_every = 0;    ///< step: multiply by `factor` every this many steps
  float factor = 0.1f;            ///< step, multistep: the multiplier
  std::int64_t milestones[max_milestones] = {};  ///< multistep: the steps where the rate is multiplied, ascending
  int milestone_count = 0;
  std::int64_t total_steps = 0;           ///< polynomial, linear: steps to reach the final rate (and stay there)
  float power = 1.0f;                     ///< polynomial: (1 - t / total)^power
  float start = 1.0f / 3.0f, end = 1.0f;  ///< linear: the multiplier goes from start to end (PyTorch's LinearLR)

  /// The multiplier of the base rate at update t, on the host (kernels call schedule_scale, schedule_scale.hpp).
  double scale(std::int64_t t) const;

  /// Parses "constant", "warmup:W", "cosine:D[:W[:alpha[:periodic]]]", "step:N[:factor]",
  /// "multistep:M1,M2,...[:factor]", "poly:T[:power]", "linear:T[:start[:end]]"; throws ktr::Error otherwise.
  static Schedule parse(std::string const& text);
  std::string str() const;
};

}  // namespace ktr
