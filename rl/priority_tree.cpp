#include "priority_tree.hpp"

#include "../core/error.hpp"

#include <cmath>

namespace ktr::rl {

PriorityTree::PriorityTree(ExecSpace const& space, std::int64_t leaves_, float alpha_)
    : leaves(leaves_), P(1), alpha(alpha_) {
  KTR_REQUIRE(leaves > 0, "prioritized replay", "needs at least one transition");
  KTR_REQUIRE(alpha >= 0 && std::isfinite(alpha), "replay_buffer.parameters.alpha",
              "must be a finite value >= 0, got " + std::to_string(alpha));
  while (P < leaves) P *= 2, ++depth;
  sum = decltype(sum)(Kokkos::view_alloc(space, "ktr::rl::priority_sum"), std::size_t(2 * P));
  min = decltype(min)(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "ktr::rl::priority_min"),
                      std::size_t(2 * P));
  Kokkos::deep_copy(space, min, kInactive);
  raw = decltype(raw)(Kokkos::view_alloc(space, "ktr::rl::priority_raw"), std::size_t(leaves));
  owner = decltype(owner)(Kokkos::view_alloc(space, "ktr::rl::priority_owner"), std::size_t(2 * P));
  max_raw = decltype(max_raw)(Kokkos::view_alloc(space, "ktr::rl::priority_max"));
  Kokkos::deep_copy(space, max_raw, 1.0f);
}

std::vector<float> PriorityTree::download(ExecSpace const& space) const {
  std::vector<float> out(std::size_t(leaves + 1));
  Kokkos::View<float*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(out.data(), std::size_t(leaves));
  Kokkos::deep_copy(space, h, raw);
  Kokkos::View<float, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> m(out.data() + leaves);
  Kokkos::deep_copy(space, m, max_raw);
  space.fence();
  return out;
}

void PriorityTree::check(std::vector<float> const& values, std::string const& what) const {
  KTR_REQUIRE(std::int64_t(values.size()) == leaves + 1, what,
              "holds " + std::to_string(values.size()) + " priority values, this buffer has " +
                  std::to_string(leaves + 1));
  for (float v : values)
    KTR_REQUIRE(std::isfinite(v) && v >= 0, what, "holds a priority that is negative or not finite");
}

void PriorityTree::restore(ExecSpace const& space, std::vector<float> const& values, std::string const& what) {
  check(values, what);
  // Every leaf written again through write(): the same p^alpha and the same sums as the saved run had.
  Kokkos::View<float*, MemSpace> saved(Kokkos::view_alloc(space, "ktr::rl::priority_saved"), std::size_t(leaves));
  Kokkos::deep_copy(space, saved,
                    Kokkos::View<float const*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                        values.data(), std::size_t(leaves)));
  Kokkos::deep_copy(space, max_raw, values.back() > 0 ? values.back() : 1.0f);
  PriorityTree const tree = *this;
  std::int64_t const n = leaves;
  using Team = Kokkos::TeamPolicy<ExecSpace>;
  Kokkos::parallel_for(
      "ktr::rl::priority_restore", Team(space, 1, Kokkos::AUTO), KOKKOS_LAMBDA(Team::member_type const& team) {
        tree.write(
            team, n, [](std::int64_t i) { return i; }, [&](std::int64_t i) { return saved(i); });
      });
  space.fence();
}

}  // namespace ktr::rl
