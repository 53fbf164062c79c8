// Transitions (s, a, r, s', done) on the device, for off-policy learning, in TorchFort's layout: one slot holds a
// time step of every environment (n_envs rows), the last `capacity` slots are kept (the oldest overwritten).
//
// A push never waits for the device: its check (every value finite), its store and the counters run as three
// kernels on the caller's instance. A slot with a non-finite value is not stored; it is counted on the device
// (refused()), for the next call that reads back to report. The slot counters (head, stored, refused) live on the
// device too, so a sample drawn in a captured program sees every push before it.
//
// A sample is a window of `nstep` consecutive slots of one environment (TorchFort's n-step returns): the first
// slot's s and a, r = sum_k gamma^k r_k (k < N*), divided by N* (`mean`) or by sum_k gamma^k (`weighted_mean`),
// and the s' and terminal flag of the window's last transition. N* is nstep, except that a window never runs past
// a terminal: it is redrawn (`skip`, TorchFort's default) or ends there (`_no_skip`), also when the terminal is
// its first transition (TorchFort sums across an episode's end then). Draws are uniform over the windows, or (with
// `prioritized`) in proportion to p^alpha, stratified over B equal shares of the priority sum, with importance
// weights (min p^alpha / p_i^alpha)^beta, beta annealed from beta0 to beta_max over beta_steps sampling calls.
#pragma once

#include "../core/tensor.hpp"
#include "priority_tree.hpp"

#include <cstdint>
#include <vector>

namespace ktr::rl {

/// A sampled batch, as the updates read it: the critic's input (s, a) side by side, s alone (the policy's input),
/// s', the reward and the terminal flag (0 or 1); with prioritized replay each sample's importance weight and
/// leaf.
struct TransitionBatch {
  Tensor state_action;                         ///< (B, S + A)
  Tensor state;                                ///< (B, S)
  Tensor next_state;                           ///< (B, S)
  Tensor reward;                               ///< (B)
  Tensor done;                                 ///< (B)
  Tensor weight;                               ///< (B), prioritized replay only
  Kokkos::View<std::int64_t*, MemSpace> leaf;  ///< (B), prioritized replay only; -1: the sample drew nothing
};

/// How samples are drawn (TorchFort's algorithm.parameters.nstep and nstep_reward_reduction, and its
/// replay_buffer's type and parameters).
struct Sampling {
  enum class Reduction { sum, mean, weighted_mean };
  int nstep = 1;
  float gamma = 0.99f;
  Reduction reduction = Reduction::sum;
  bool skip = true;  ///< redraw a window that meets a terminal before its end (false: the `_no_skip` forms)
  bool prioritized = false;
  float alpha = 0.6f, beta0 = 0.4f, beta_max = 1.0f;
  std::int64_t beta_steps = 100000;

  /// Sets reduction and skip from TorchFort's names: sum, mean, weighted_mean and their _no_skip forms (any case);
  /// throws ktr::Error naming the reduction otherwise.
  void set_reduction(std::string const& name);
};

class TransitionBuffer {
 public:
  /// Storage for `capacity` slots of `n_envs` transitions, allocated (zeroed) once on `space`. Throws ktr::Error
  /// naming the size that is not positive.
  TransitionBuffer(ExecSpace const& space, std::int64_t capacity, std::int64_t state_dim, std::int64_t action_dim,
                   std::int64_t n_envs = 1, Sampling const& sampling = {});

  /// Appends one slot from device arrays: s and s' (n_envs, S), a (n_envs, A), r and done (n_envs); the actions
  /// are stored as a * action_scale + action_shift. Does not wait; the arrays may be reused once `space` has
  /// passed this point.
  void push(ExecSpace const& space, float const* s, float const* a, float const* r, float const* s_next,
            float const* done, float action_scale = 1.0f, float action_shift = 0.0f);

  /// Draws `out.reward.size()` windows (with replacement) from the stored ones, with draw number `draw` (a
  /// device counter, also the count of earlier sampling calls for beta) of the stream `key`. With no window stored
  /// the batch is zeros (weights 0). A sample that finds no complete window in 64 draws (episodes shorter than
  /// nstep nearly everywhere; TorchFort would loop for ever) takes its last draw's window, ended at the terminal.
  void sample(ExecSpace const& space, std::uint64_t key, std::int64_t const* draw,
              TransitionBatch const& out) const;
  /// Prioritized replay: the sampled leaves' raw priorities become |td| + 1e-6 (the last sample wins a leaf drawn
  /// twice). Does not wait.
  void update_priorities(ExecSpace const& space, TransitionBatch const& batch, float const* td) const;

  Sampling const& sampling() const { return sampling_; }
  /// Slots stored before a sample can be drawn: nstep.
  std::int64_t window() const { return sampling_.nstep; }

  /// Slots pushed (stored or refused), counted on the host.
  std::int64_t pushed() const { return pushed_; }
  /// head, stored slots, refused slots (device; read back by the caller when it reports).
  Kokkos::View<std::int64_t[3], MemSpace> const& counters() const { return counters_; }
  /// Whether the last push was refused (device; 0 or the count of its non-finite rows).
  Kokkos::View<std::int64_t, MemSpace> const& last_refused() const { return bad_; }
  std::int64_t capacity() const { return capacity_; }
  std::int64_t state_dim() const { return state_dim_; }
  std::int64_t action_dim() const { return action_dim_; }
  std::int64_t n_envs() const { return n_envs_; }

  /// The storage and counters on the host (a checkpoint), and back (every size checked first).
  struct Contents {
    std::vector<float> rows;  ///< capacity x n_envs rows of (s, a, r, s', done)
    std::int64_t counters[3] = {0, 0, 0};
    std::int64_t pushed = 0;
    std::vector<float> priorities;  ///< prioritized replay: each leaf's raw priority, then the largest seen
  };
  Contents download(ExecSpace const& space) const;
  void check(Contents const& contents, std::string const& what) const;  ///< ktr::Error naming `what`
  void restore(ExecSpace const& space, Contents const& contents, std::string const& what);

 private:
  std::int64_t capacity_, state_dim_, action_dim_, n_envs_, row_;
  Sampling sampling_;
  PriorityTree tree_;                                          // prioritized replay only
  Kokkos::View<float**, Kokkos::LayoutRight, MemSpace> rows_;  // (capacity * n_envs, row_)
  Kokkos::View<std::int64_t[3], MemSpace> counters_;
  Kokkos::View<std::int64_t, MemSpace> bad_;
  std::int64_t pushed_ = 0;
};

}  // namespace ktr::rl
