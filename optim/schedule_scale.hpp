// A schedule's multiplier at update t, as kernels evaluate it from the device step count (so a replayed graph sees
// the right rate). Internal: optimizer.cpp's kernels include it; Schedule::scale is the host's door.
#pragma once

#include "../backends/kokkos_compat.hpp"
#include "schedule.hpp"

namespace ktr {

KOKKOS_INLINE_FUNCTION double schedule_scale(Schedule const& s, std::int64_t t) {
  double warm = 1.0;
  if ((s.kind == Schedule::Kind::warmup || s.kind == Schedule::Kind::cosine) && s.warmup_steps > 0 &&
      t < s.warmup_steps)
    warm = double(t) / double(s.warmup_steps);
  switch (s.kind) {
    case Schedule::Kind::constant:
      return 1.0;
    case Schedule::Kind::warmup:
      return warm;
    case Schedule::Kind::cosine: {
      if (t < s.warmup_steps) return warm;
      double const since = double(t - s.warmup_steps);
      double const progress = s.decay_steps > 0
                                  ? (s.periodic || since < double(s.decay_steps) ? since : double(s.decay_steps)) /
                                        double(s.decay_steps)
                                  : 1.0;
      double const cosine = 0.5 * (1.0 + compat::cos(3.141592653589793 * progress));
      return (1.0 - s.alpha) * cosine + s.alpha;
    }
    case Schedule::Kind::step:
      return s.step_every > 0 ? compat::pow(double(s.factor), double(t / s.step_every)) : 1.0;
    case Schedule::Kind::multistep: {
      int passed = 0;
      for (int i = 0; i < s.milestone_count; ++i) passed += t >= s.milestones[i] ? 1 : 0;
      return compat::pow(double(s.factor), double(passed));
    }
    case Schedule::Kind::polynomial: {
      double const done = s.total_steps > 0 && t < s.total_steps ? double(t) / double(s.total_steps) : 1.0;
      return compat::pow(1.0 - done, double(s.power));
    }
    case Schedule::Kind::linear: {
      double const done = s.total_steps > 0 && t < s.total_steps ? double(t) / double(s.total_steps) : 1.0;
      return double(s.start) + (double(s.end) - double(s.start)) * done;
    }
  }
  return 1.0;
}

}  // namespace ktr
