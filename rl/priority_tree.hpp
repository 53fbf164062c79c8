// The priorities of prioritized experience replay (Schaul et al. 2016), on the device: a sum tree and a min tree
// over one leaf per transition (leaf = slot * n_envs + environment), padded to a power of two so that every leaf
// sits at the same depth. A leaf holds p^alpha for a raw priority p > 0 (|TD error| + eps), or 0 while its
// transition cannot start a window (inactive: the min tree holds +max there, so the minimum is over active
// leaves).
//
// Writes run inside one team (write()): a leaf written twice in one call takes the value of the larger index (as a
// sequential loop would), and every tree node above the written leaves is recomputed once, by the thread that won
// it (an atomic max, then a compare-and-swap that also clears the claim): no two threads write one node, and the
// result does not depend on the thread schedule, so a run replays bit for bit on every backend. A team of one
// thread (the host backends) writes in order without claims: the same values.
#pragma once

#include "../backends/kokkos_compat.hpp"
#include "../core/tensor.hpp"

#include <cfloat>
#include <cstdint>
#include <string>
#include <vector>

namespace ktr::rl {

struct PriorityTree {
  static constexpr float kInactive = FLT_MAX;  ///< the min tree's neutral element

  Kokkos::View<float*, MemSpace> sum, min;  ///< 2P nodes each: the root at 1, the leaves at P + t
  Kokkos::View<float*, MemSpace> raw;       ///< the raw priority of each leaf (0: inactive)
  Kokkos::View<int*, MemSpace> owner;       ///< 2P claims, all 0 between writes
  Kokkos::View<float, MemSpace> max_raw;    ///< the largest raw priority seen (new transitions get it), from 1
  std::int64_t leaves = 0, P = 0;
  int depth = 0;  ///< P = 2^depth
  float alpha = 0.6f;

  PriorityTree() = default;
  /// All leaves inactive, max_raw 1.
  PriorityTree(ExecSpace const& space, std::int64_t leaves, float alpha);

  /// Writes n leaves: leaf_of(i) gets the raw priority raw_of(i) (<= 0: inactive; a negative leaf_of(i): nothing),
  /// then the nodes above them. Call from every thread of one team.
  template <class Member, class LeafOf, class RawOf>
  KOKKOS_INLINE_FUNCTION void write(Member const& team, std::int64_t n, LeafOf const& leaf_of,
                                    RawOf const& raw_of) const {
    if (team.team_size() == 1) {  // one thread (host backends): in order, no claims; the last write of a leaf wins
      for (std::int64_t i = 0; i < n; ++i)
        if (leaf_of(i) >= 0) set_leaf(leaf_of(i), raw_of(i));
      for (std::int64_t i = 0; i < n; ++i)
        if (leaf_of(i) >= 0)
          for (std::int64_t node = (P + leaf_of(i)) >> 1; node >= 1; node >>= 1) update_node(node);
      return;
    }
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](std::int64_t i) {
      if (leaf_of(i) >= 0) compat::atomic_max(&owner(P + leaf_of(i)), int(i + 1));
    });
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](std::int64_t i) {
      std::int64_t const t = leaf_of(i);
      if (t < 0 || Kokkos::atomic_compare_exchange(&owner(P + t), int(i + 1), 0) != int(i + 1)) return;
      set_leaf(t, raw_of(i));
    });
    team.team_barrier();
    for (int level = 1; level <= depth; ++level) {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](std::int64_t i) {
        if (leaf_of(i) >= 0) compat::atomic_max(&owner((P + leaf_of(i)) >> level), int(i + 1));
      });
      team.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](std::int64_t i) {
        if (leaf_of(i) < 0) return;
        std::int64_t const node = (P + leaf_of(i)) >> level;
        if (Kokkos::atomic_compare_exchange(&owner(node), int(i + 1), 0) != int(i + 1)) return;
        update_node(node);
      });
      team.team_barrier();
    }
  }

  KOKKOS_INLINE_FUNCTION void set_leaf(std::int64_t t, float r) const {
    float const p = r > 0 ? float(compat::pow(r, alpha)) : 0.0f;
    raw(t) = r > 0 ? r : 0.0f;
    sum(P + t) = p;
    min(P + t) = r > 0 ? p : kInactive;
  }
  KOKKOS_INLINE_FUNCTION void update_node(std::int64_t node) const {
    sum(node) = sum(2 * node) + sum(2 * node + 1);
    float const l = min(2 * node), r = min(2 * node + 1);
    min(node) = l < r ? l : r;
  }

  /// The leaf whose share of [0, total) holds `value` (a zero leaf is never chosen unless rounding overshoots).
  KOKKOS_INLINE_FUNCTION std::int64_t find(float value) const {
    std::int64_t node = 1;
    while (node < P) {
      float const left = sum(2 * node);
      if (value < left) {
        node = 2 * node;
      } else {
        value -= left;
        node = 2 * node + 1;
      }
    }
    return node - P;
  }

  /// The raw priorities and max_raw on the host (a checkpoint: leaves + 1 values), and back (the tree rebuilt).
  std::vector<float> download(ExecSpace const& space) const;
  void check(std::vector<float> const& values, std::string const& what) const;  ///< ktr::Error naming `what`
  void restore(ExecSpace const& space, std::vector<float> const& values, std::string const& what);
};

}  // namespace ktr::rl
