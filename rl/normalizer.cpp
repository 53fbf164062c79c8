#include "normalizer.hpp"

#include "../core/error.hpp"

#include <cmath>

namespace ktr::rl {

RunningNormalizer::RunningNormalizer(ExecSpace const& space, std::int64_t features, bool scale_only)
    : features_(features) {
  apply_.mean =
      Kokkos::View<float*, MemSpace>(Kokkos::view_alloc(space, "ktr::rl::norm_mean"), std::size_t(features));
  apply_.m2 = Kokkos::View<float*, MemSpace>(Kokkos::view_alloc(space, "ktr::rl::norm_m2"), std::size_t(features));
  apply_.count = Kokkos::View<std::int64_t, MemSpace>(Kokkos::view_alloc(space, "ktr::rl::norm_count"));
  apply_.scale_only = scale_only;
}

void RunningNormalizer::update(ExecSpace const& space, float const* x, std::int64_t n,
                               Kokkos::View<std::int64_t, MemSpace> const& refused) const {
  if (!on()) return;
  Apply const a = apply_;
  std::int64_t const F = features_;
  using Team = Kokkos::TeamPolicy<ExecSpace>;
  Kokkos::parallel_for(
      "ktr::rl::normalizer_update", Team(space, 1, Kokkos::AUTO), KOKKOS_LAMBDA(Team::member_type const& team) {
        if (refused() != 0) return;
        std::int64_t const before = a.count();
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, F), [&](std::int64_t f) {
          float mean = 0.0f, m2 = 0.0f;
          for (std::int64_t e = 0; e < n; ++e) mean += x[e * F + f];
          mean /= float(n);
          for (std::int64_t e = 0; e < n; ++e) m2 += (x[e * F + f] - mean) * (x[e * F + f] - mean);
          if (before == 0) {
            a.mean(f) = mean, a.m2(f) = m2;
            return;
          }
          float const total = float(before + n), delta = mean - a.mean(f);
          a.mean(f) += delta * (float(n) / total);
          a.m2(f) += m2 + delta * delta * (float(before) * float(n) / total);
        });
        team.team_barrier();
        Kokkos::single(Kokkos::PerTeam(team), [&] { a.count() = before + n; });
      });
}

void RunningNormalizer::sync(ExecSpace const& space, Communicator const& comm) {
  if (!on() || comm.size() == 1) return;
  std::int64_t const F = features_;
  if (!synced_) {
    merged_.mean =
        Kokkos::View<float*, MemSpace>(Kokkos::view_alloc(space, "ktr::rl::norm_merged_mean"), std::size_t(F));
    merged_.m2 =
        Kokkos::View<float*, MemSpace>(Kokkos::view_alloc(space, "ktr::rl::norm_merged_m2"), std::size_t(F));
    merged_.count = Kokkos::View<std::int64_t, MemSpace>(Kokkos::view_alloc(space, "ktr::rl::norm_merged_count"));
    merged_.scale_only = apply_.scale_only;
    sums_ = DeviceView<float*>(Kokkos::view_alloc(space, "ktr::rl::norm_sums"), std::size_t(1 + 2 * F));
    synced_ = true;
  }
  Apply const a = apply_, m = merged_;
  auto sums = sums_;
  // 1. The total count and the count-weighted means.
  Kokkos::parallel_for(
      "ktr::rl::norm_sync_means", Kokkos::RangePolicy<ExecSpace>(space, 0, F + 1), KOKKOS_LAMBDA(std::int64_t f) {
        sums(std::size_t(f)) = f == 0 ? float(a.count()) : float(a.count()) * a.mean(f - 1);
      });
  comm.allreduce_sum(space, DeviceView<float*>(sums.data(), std::size_t(F + 1)));
  // 2. Each rank's M2 about the merged mean (Chan): M2_r + n_r (mean_r - mean)^2, summed.
  Kokkos::parallel_for(
      "ktr::rl::norm_sync_m2", Kokkos::RangePolicy<ExecSpace>(space, 0, F), KOKKOS_LAMBDA(std::int64_t f) {
        float const total = sums(0), mean = total > 0 ? sums(std::size_t(1 + f)) / total : 0.0f;
        float const d = a.mean(f) - mean;
        sums(std::size_t(1 + F + f)) = a.count() > 0 ? a.m2(f) + float(a.count()) * d * d : 0.0f;
      });
  comm.allreduce_sum(space, DeviceView<float*>(sums.data() + F + 1, std::size_t(F)));
  Kokkos::parallel_for(
      "ktr::rl::norm_sync_merge", Kokkos::RangePolicy<ExecSpace>(space, 0, F), KOKKOS_LAMBDA(std::int64_t f) {
        float const total = sums(0);
        m.mean(f) = total > 0 ? sums(std::size_t(1 + f)) / total : 0.0f;
        m.m2(f) = sums(std::size_t(1 + F + f));
        if (f == 0) m.count() = std::int64_t(total);
      });
}

RunningNormalizer::Stats RunningNormalizer::download(ExecSpace const& space) const {
  Stats s;
  if (!on()) return s;
  s.values.resize(std::size_t(2 * features_));
  using HostFloats = Kokkos::View<float*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  Kokkos::deep_copy(space, HostFloats(s.values.data(), std::size_t(features_)), apply_.mean);
  Kokkos::deep_copy(space, HostFloats(s.values.data() + features_, std::size_t(features_)), apply_.m2);
  Kokkos::deep_copy(space, s.count, apply_.count);
  space.fence();
  return s;
}

void RunningNormalizer::check(Stats const& stats, std::string const& what) const {
  KTR_REQUIRE(std::int64_t(stats.values.size()) == 2 * features_ && stats.count >= 0, what,
              "holds normaliser statistics of " + std::to_string(stats.values.size() / 2) +
                  " features; this system's have " + std::to_string(features_));
  for (std::size_t i = 0; i < stats.values.size(); ++i)
    KTR_REQUIRE(std::isfinite(stats.values[i]) && (i < std::size_t(features_) || stats.values[i] >= 0), what,
                "holds a normaliser statistic that is not finite or a negative M2");
}

void RunningNormalizer::restore(ExecSpace const& space, Stats const& stats, std::string const& what) const {
  check(stats, what);
  using HostFloats = Kokkos::View<float const*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  Kokkos::deep_copy(space, apply_.mean, HostFloats(stats.values.data(), std::size_t(features_)));
  Kokkos::deep_copy(space, apply_.m2, HostFloats(stats.values.data() + features_, std::size_t(features_)));
  Kokkos::deep_copy(space, apply_.count, stats.count);
  space.fence();
}

}  // namespace ktr::rl
