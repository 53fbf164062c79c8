#include "transition_buffer.hpp"

#include "../core/error.hpp"
#include "random.hpp"

#include <string>

namespace ktr::rl {

TransitionBuffer::TransitionBuffer(ExecSpace const& space, std::int64_t capacity, std::int64_t state_dim,
                                   std::int64_t action_dim, std::int64_t n_envs)
    : capacity_(capacity),
      state_dim_(state_dim),
      action_dim_(action_dim),
      n_envs_(n_envs),
      row_(2 * state_dim + action_dim + 2) {
  KTR_REQUIRE(capacity > 0, "replay buffer", "max_size must be positive, got " + std::to_string(capacity));
  KTR_REQUIRE(state_dim > 0 && action_dim > 0, "replay buffer", "states and actions need at least one value");
  KTR_REQUIRE(n_envs > 0, "replay buffer", "n_envs must be positive, got " + std::to_string(n_envs));
  KTR_REQUIRE(capacity <= (std::int64_t(1) << 40) / n_envs / row_, "replay buffer",
              "max_size x n_envs x the transition's values is absurdly large");
  rows_ = decltype(rows_)(Kokkos::view_alloc(space, "ktr::rl::transitions"), std::size_t(capacity * n_envs),
                          std::size_t(row_));
  counters_ = decltype(counters_)(Kokkos::view_alloc(space, "ktr::rl::buffer_counters"));
  bad_ = decltype(bad_)(Kokkos::view_alloc(space, "ktr::rl::buffer_bad"));
}

void TransitionBuffer::push(ExecSpace const& space, float const* s, float const* a, float const* r,
                            float const* s_next, float const* done, float action_scale, float action_shift) {
  std::int64_t const S = state_dim_, A = action_dim_, E = n_envs_, cap = capacity_;
  auto rows = rows_;
  auto counters = counters_;
  auto bad = bad_;
  // 1. Count the non-finite values of the slot (x - x is 0 for finite x, NaN otherwise).
  Kokkos::parallel_reduce(
      "ktr::rl::push_check", Kokkos::RangePolicy<ExecSpace>(space, 0, E),
      KOKKOS_LAMBDA(std::int64_t e, std::int64_t & n) {
        float sum = (r[e] - r[e]) + (done[e] - done[e]);
        for (std::int64_t j = 0; j < S; ++j)
          sum += (s[e * S + j] - s[e * S + j]) + (s_next[e * S + j] - s_next[e * S + j]);
        for (std::int64_t j = 0; j < A; ++j) sum += a[e * A + j] - a[e * A + j];
        if (!(sum == 0.0f)) ++n;
      },
      bad);
  // 2. Store the slot at head unless something was not finite.
  Kokkos::parallel_for(
      "ktr::rl::push_store", Kokkos::RangePolicy<ExecSpace>(space, 0, E), KOKKOS_LAMBDA(std::int64_t e) {
        if (bad() != 0) return;
        std::int64_t const row = counters(0) * E + e;
        std::int64_t c = 0;
        for (std::int64_t j = 0; j < S; ++j) rows(row, c++) = s[e * S + j];
        for (std::int64_t j = 0; j < A; ++j) rows(row, c++) = a[e * A + j] * action_scale + action_shift;
        rows(row, c++) = r[e];
        for (std::int64_t j = 0; j < S; ++j) rows(row, c++) = s_next[e * S + j];
        rows(row, c) = done[e] != 0.0f ? 1.0f : 0.0f;
      });
  // 3. Advance head and the stored count, or count the refusal.
  Kokkos::parallel_for(
      "ktr::rl::push_advance", Kokkos::RangePolicy<ExecSpace>(space, 0, 1), KOKKOS_LAMBDA(int) {
        if (bad() != 0) {
          counters(2) += 1;
          return;
        }
        counters(0) = (counters(0) + 1) % cap;
        if (counters(1) < cap) counters(1) += 1;
      });
  ++pushed_;
}

void TransitionBuffer::sample(ExecSpace const& space, std::uint64_t key, std::int64_t const* draw,
                              TransitionBatch const& out) const {
  std::int64_t const S = state_dim_, A = action_dim_, E = n_envs_;
  std::int64_t const B = out.reward.size();
  auto rows = rows_;
  auto counters = counters_;
  float* sa = out.state_action.data();
  float* st = out.state.data();
  float* sn = out.next_state.data();
  float* rw = out.reward.data();
  float* dn = out.done.data();
  Kokkos::parallel_for(
      "ktr::rl::sample", Kokkos::RangePolicy<ExecSpace>(space, 0, B), KOKKOS_LAMBDA(std::int64_t b) {
        std::uint64_t const n = std::uint64_t(counters(1) * E);
        if (n == 0) {
          for (std::int64_t j = 0; j < S + A; ++j) sa[b * (S + A) + j] = 0.0f;
          for (std::int64_t j = 0; j < S; ++j) st[b * S + j] = sn[b * S + j] = 0.0f;
          rw[b] = dn[b] = 0.0f;
          return;
        }
        std::uint64_t const h = mix64(key ^ mix64(std::uint64_t(*draw) * std::uint64_t(B) + std::uint64_t(b)));
        std::int64_t const row = std::int64_t(h % n);
        std::int64_t c = 0;
        for (std::int64_t j = 0; j < S; ++j, ++c) st[b * S + j] = sa[b * (S + A) + j] = rows(row, c);
        for (std::int64_t j = 0; j < A; ++j, ++c) sa[b * (S + A) + S + j] = rows(row, c);
        rw[b] = rows(row, c++);
        for (std::int64_t j = 0; j < S; ++j, ++c) sn[b * S + j] = rows(row, c);
        dn[b] = rows(row, c);
      });
}

TransitionBuffer::Contents TransitionBuffer::download(ExecSpace const& space) const {
  Contents out;
  out.rows.resize(rows_.size());
  Kokkos::View<float**, Kokkos::LayoutRight, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(
      out.rows.data(), rows_.extent(0), rows_.extent(1));
  Kokkos::deep_copy(space, h, rows_);
  Kokkos::View<std::int64_t[3], HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> c(out.counters);
  Kokkos::deep_copy(space, c, counters_);
  space.fence();
  out.pushed = pushed_;
  return out;
}

void TransitionBuffer::restore(ExecSpace const& space, Contents const& contents, std::string const& what) {
  KTR_REQUIRE(contents.rows.size() == rows_.size(), what,
              "holds " + std::to_string(contents.rows.size()) + " buffer values, this buffer has " +
                  std::to_string(rows_.size()));
  KTR_REQUIRE(contents.counters[0] >= 0 && contents.counters[0] < capacity_ && contents.counters[1] >= 0 &&
                  contents.counters[1] <= capacity_ && contents.counters[2] >= 0 && contents.pushed >= 0,
              what, "the buffer's counters are out of range");
  Kokkos::View<float const**, Kokkos::LayoutRight, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(
      contents.rows.data(), rows_.extent(0), rows_.extent(1));
  Kokkos::deep_copy(space, rows_, h);
  Kokkos::View<std::int64_t const[3], HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> c(contents.counters);
  Kokkos::deep_copy(space, counters_, c);
  space.fence();
  pushed_ = contents.pushed;
}

}  // namespace ktr::rl
