#include "transition_buffer.hpp"

#include "../core/error.hpp"
#include "random.hpp"

#include <cctype>
#include <cmath>
#include <string>

namespace ktr::rl {

void Sampling::set_reduction(std::string const& name) {
  std::string n = name;
  for (auto& c : n) c = char(std::tolower(static_cast<unsigned char>(c)));
  std::string const suffix = "_no_skip";
  skip = !(n.size() > suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0);
  if (!skip) n.resize(n.size() - suffix.size());
  if (n == "sum")
    reduction = Reduction::sum;
  else if (n == "mean")
    reduction = Reduction::mean;
  else if (n == "weighted_mean")
    reduction = Reduction::weighted_mean;
  else
    throw Error(
        "nstep_reward_reduction: '" + name +
        "' is not a reduction (sum, mean, weighted_mean, sum_no_skip, mean_no_skip, weighted_mean_no_skip)");
}

namespace {

constexpr int kTries = 64;  // draws a sample makes for a complete window before it takes a shortened one

// What a sample kernel reads a window with.
struct Windows {
  Kokkos::View<float**, Kokkos::LayoutRight, MemSpace> rows;
  std::int64_t S, A, E, cap;
  int nstep;
  float gamma;
  Sampling::Reduction reduction;
  float *sa, *st, *sn, *rw, *dn;

  // Sample b from the window of environment e that starts at slot `slot`. With `skip`, a window that meets a
  // terminal before its last transition is not taken (false); otherwise it ends at that terminal.
  KOKKOS_INLINE_FUNCTION bool read(std::int64_t slot, std::int64_t e, bool skip, std::int64_t b) const {
    float r = 0.0f, g = 1.0f, norm = 0.0f, d = 0.0f;
    int count = 0;
    std::int64_t const first = slot * E + e;
    std::int64_t last = first;
    for (int k = 0; k < nstep; ++k) {
      std::int64_t const row = ((slot + k) % cap) * E + e;
      r += g * rows(row, S + A);
      norm += g;
      ++count;
      last = row;
      if (rows(row, 2 * S + A + 1) != 0.0f) {
        d = 1.0f;
        if (k < nstep - 1) {
          if (skip) return false;
          break;
        }
      }
      g *= gamma;
    }
    for (std::int64_t j = 0; j < S; ++j) st[b * S + j] = sa[b * (S + A) + j] = rows(first, j);
    for (std::int64_t j = 0; j < A; ++j) sa[b * (S + A) + S + j] = rows(first, S + j);
    for (std::int64_t j = 0; j < S; ++j) sn[b * S + j] = rows(last, S + A + 1 + j);
    rw[b] = reduction == Sampling::Reduction::mean            ? r / float(count)
            : reduction == Sampling::Reduction::weighted_mean ? r / norm
                                                              : r;
    dn[b] = d;
    return true;
  }

  KOKKOS_INLINE_FUNCTION void zero(std::int64_t b) const {
    for (std::int64_t j = 0; j < S + A; ++j) sa[b * (S + A) + j] = 0.0f;
    for (std::int64_t j = 0; j < S; ++j) st[b * S + j] = sn[b * S + j] = 0.0f;
    rw[b] = dn[b] = 0.0f;
  }
};

}  // namespace

TransitionBuffer::TransitionBuffer(ExecSpace const& space, std::int64_t capacity, std::int64_t state_dim,
                                   std::int64_t action_dim, std::int64_t n_envs, Sampling const& sampling)
    : capacity_(capacity),
      state_dim_(state_dim),
      action_dim_(action_dim),
      n_envs_(n_envs),
      row_(2 * state_dim + action_dim + 2),
      sampling_(sampling) {
  KTR_REQUIRE(capacity > 0, "replay buffer", "max_size must be positive, got " + std::to_string(capacity));
  KTR_REQUIRE(state_dim > 0 && action_dim > 0, "replay buffer", "states and actions need at least one value");
  KTR_REQUIRE(n_envs > 0, "replay buffer", "n_envs must be positive, got " + std::to_string(n_envs));
  KTR_REQUIRE(capacity <= (std::int64_t(1) << 40) / n_envs / row_, "replay buffer",
              "max_size x n_envs x the transition's values is absurdly large");
  KTR_REQUIRE(
      sampling.nstep >= 1 && sampling.nstep <= capacity, "nstep",
      "must lie in [1, max_size = " + std::to_string(capacity) + "], got " + std::to_string(sampling.nstep));
  KTR_REQUIRE(sampling.beta0 >= 0 && sampling.beta_max >= 0 && sampling.beta_steps >= 0 &&
                  std::isfinite(sampling.beta0) && std::isfinite(sampling.beta_max),
              "replay_buffer.parameters", "beta0, beta_max and beta_steps must be finite and not negative");
  if (sampling.prioritized) tree_ = PriorityTree(space, capacity * n_envs, sampling.alpha);
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
  // 4. Prioritized replay: the new slot's transitions start no window yet (priority 0); the slot nstep - 1 before
  //    it now starts a complete one and takes the largest priority seen (TorchFort's rule).
  if (sampling_.prioritized) {
    PriorityTree const tree = tree_;
    std::int64_t const nstep = sampling_.nstep;
    using Team = Kokkos::TeamPolicy<ExecSpace>;
    Kokkos::parallel_for(
        "ktr::rl::push_priorities", Team(space, 1, Kokkos::AUTO), KOKKOS_LAMBDA(Team::member_type const& team) {
          if (bad() != 0) return;
          std::int64_t const pos = (counters(0) + cap - 1) % cap, start = (pos + cap - (nstep - 1)) % cap;
          bool const complete = counters(1) >= nstep;
          float const top = tree.max_raw();
          tree.write(
              team, complete ? 2 * E : E, [&](std::int64_t i) { return i < E ? pos * E + i : start * E + i - E; },
              [&](std::int64_t i) { return i < E ? 0.0f : top; });
        });
  }
  ++pushed_;
}

void TransitionBuffer::sample(ExecSpace const& space, std::uint64_t key, std::int64_t const* draw,
                              TransitionBatch const& out) const {
  std::int64_t const E = n_envs_, cap = capacity_, nstep = sampling_.nstep;
  std::int64_t const B = out.reward.size();
  bool const skip = sampling_.skip;
  auto counters = counters_;
  Windows const w{rows_,
                  state_dim_,
                  action_dim_,
                  E,
                  cap,
                  sampling_.nstep,
                  sampling_.gamma,
                  sampling_.reduction,
                  out.state_action.data(),
                  out.state.data(),
                  out.next_state.data(),
                  out.reward.data(),
                  out.done.data()};
  if (!sampling_.prioritized) {
    Kokkos::parallel_for(
        "ktr::rl::sample", Kokkos::RangePolicy<ExecSpace>(space, 0, B), KOKKOS_LAMBDA(std::int64_t b) {
          // The windows start at the oldest nstep - 1 slots short of the newest: (stored - nstep + 1) E of them.
          std::int64_t const stored = counters(1), oldest = (counters(0) + cap - stored) % cap;
          std::uint64_t const n = stored >= nstep ? std::uint64_t((stored - nstep + 1) * E) : 0;
          if (n == 0) return w.zero(b);
          std::uint64_t h = mix64(key ^ mix64(std::uint64_t(*draw) * std::uint64_t(B) + std::uint64_t(b)));
          for (int t = 0; t < kTries; ++t, h = mix64(h + 0x9E3779B97F4A7C15ull)) {
            std::int64_t const i = std::int64_t(h % n);
            if (w.read((oldest + i / E) % cap, i % E, skip && t < kTries - 1, b)) return;
          }
        });
    return;
  }
  PriorityTree const tree = tree_;
  float* weight = out.weight.data();
  auto leaf = out.leaf;
  float const beta0 = sampling_.beta0, beta_max = sampling_.beta_max;
  float const step = sampling_.beta_steps > 0 ? (beta_max - beta0) / float(sampling_.beta_steps) : 0.0f;
  Kokkos::parallel_for(
      "ktr::rl::sample_prioritized", Kokkos::RangePolicy<ExecSpace>(space, 0, B), KOKKOS_LAMBDA(std::int64_t b) {
        // beta as TorchFort anneals it, once before each sampling call: the draw counter counts earlier calls.
        float beta = beta0 + step * float(*draw + 1);
        beta = beta < beta_max ? beta : beta_max;
        float const total = tree.sum(1), share = total / float(B), lowest = tree.min(1);
        weight[b] = 0.0f;
        leaf(b) = -1;  // drew nothing: its priority is not updated
        for (int t = 0; total > 0 && t < kTries; ++t) {
          float const u = float(
              uniform01(key, (std::uint64_t(*draw) * std::uint64_t(B) + std::uint64_t(b)) * std::uint64_t(kTries) +
                                 std::uint64_t(t)));
          float v = (float(b) + u) * share;
          v = v < total * (1.0f - 1e-6f) ? v : total * (1.0f - 1e-6f);
          std::int64_t const l = tree.find(v);
          float const p = tree.sum(tree.P + l);
          if (!(p > 0)) continue;  // rounding reached an inactive leaf
          if (!w.read(l / E, l % E, skip && t < kTries - 1, b)) continue;
          weight[b] = float(compat::pow(lowest / p, beta));
          leaf(b) = l;
          return;
        }
        w.zero(b);  // no window stored, or rounding found none
      });
}

void TransitionBuffer::update_priorities(ExecSpace const& space, TransitionBatch const& batch,
                                         float const* td) const {
  if (!sampling_.prioritized) return;
  PriorityTree const tree = tree_;
  std::int64_t const B = batch.reward.size();
  auto leaf = batch.leaf;
  using Team = Kokkos::TeamPolicy<ExecSpace>;
  Kokkos::parallel_for(
      "ktr::rl::update_priorities", Team(space, 1, Kokkos::AUTO), KOKKOS_LAMBDA(Team::member_type const& team) {
        // A sample that drew nothing (leaf -1) updates nothing.
        auto fresh = [&](std::int64_t b) { return leaf(b) >= 0 ? float(compat::fabs(td[b])) + 1e-6f : 0.0f; };
        tree.write(
            team, B, [&](std::int64_t b) { return leaf(b); }, fresh);
        float top = 0.0f;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, B),
            [&](std::int64_t b, float& m) {
              float const r = fresh(b);
              m = r > m ? r : m;
            },
            Kokkos::Max<float>(top));
        Kokkos::single(Kokkos::PerTeam(team), [&] {
          if (top > tree.max_raw()) tree.max_raw() = top;
        });
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
  if (sampling_.prioritized) out.priorities = tree_.download(space);
  return out;
}

void TransitionBuffer::check(Contents const& contents, std::string const& what) const {
  KTR_REQUIRE(contents.rows.size() == rows_.size(), what,
              "holds " + std::to_string(contents.rows.size()) + " buffer values, this buffer has " +
                  std::to_string(rows_.size()));
  KTR_REQUIRE(contents.counters[0] >= 0 && contents.counters[0] < capacity_ && contents.counters[1] >= 0 &&
                  contents.counters[1] <= capacity_ && contents.counters[2] >= 0 && contents.pushed >= 0,
              what, "the buffer's counters are out of range");
  KTR_REQUIRE(contents.priorities.empty() != sampling_.prioritized, what,
              sampling_.prioritized ? "holds no priorities; this buffer is prioritized"
                                    : "holds priorities; this buffer is uniform");
  if (sampling_.prioritized) tree_.check(contents.priorities, what);
}

void TransitionBuffer::restore(ExecSpace const& space, Contents const& contents, std::string const& what) {
  check(contents, what);  // before anything changes
  if (sampling_.prioritized) tree_.restore(space, contents.priorities, what);
  Kokkos::View<float const**, Kokkos::LayoutRight, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(
      contents.rows.data(), rows_.extent(0), rows_.extent(1));
  Kokkos::deep_copy(space, rows_, h);
  Kokkos::View<std::int64_t const[3], HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> c(contents.counters);
  Kokkos::deep_copy(space, counters_, c);
  space.fence();
  pushed_ = contents.pushed;
}

}  // namespace ktr::rl
