// Transitions (s, a, r, s', done) on the device, for off-policy learning, in TorchFort's layout: one slot holds a
// time step of every environment (n_envs rows), the last `capacity` slots are kept (the oldest overwritten).
//
// A push never waits for the device: its check (every value finite), its store and the counters run as three
// kernels on the caller's instance. A slot with a non-finite value is not stored; it is counted on the device
// (refused()), for the next call that reads back to report. The slot counters (head, stored, refused) live on the
// device too, so a sample drawn in a captured program sees every push before it.
#pragma once

#include "../core/tensor.hpp"

#include <cstdint>
#include <vector>

namespace ktr::rl {

/// A sampled batch, as the updates read it: the critic's input (s, a) side by side, s alone (the policy's input),
/// s', the reward and the terminal flag (0 or 1).
struct TransitionBatch {
  Tensor state_action;  ///< (B, S + A)
  Tensor state;         ///< (B, S)
  Tensor next_state;    ///< (B, S)
  Tensor reward;        ///< (B)
  Tensor done;          ///< (B)
};

class TransitionBuffer {
 public:
  /// Storage for `capacity` slots of `n_envs` transitions, allocated (zeroed) once on `space`. Throws ktr::Error
  /// naming the size that is not positive.
  TransitionBuffer(ExecSpace const& space, std::int64_t capacity, std::int64_t state_dim, std::int64_t action_dim,
                   std::int64_t n_envs = 1);

  /// Appends one slot from device arrays: s and s' (n_envs, S), a (n_envs, A), r and done (n_envs); the actions
  /// are stored as a * action_scale + action_shift. Does not wait; the arrays may be reused once `space` has
  /// passed this point.
  void push(ExecSpace const& space, float const* s, float const* a, float const* r, float const* s_next,
            float const* done, float action_scale = 1.0f, float action_shift = 0.0f);

  /// Draws `out.reward.size()` transitions uniformly (with replacement) from the stored ones, with draw number
  /// `draw` (a device counter) of the stream `key`. With nothing stored the batch is zeros.
  void sample(ExecSpace const& space, std::uint64_t key, std::int64_t const* draw,
              TransitionBatch const& out) const;

  /// Slots pushed (stored or refused), counted on the host.
  std::int64_t pushed() const { return pushed_; }
  /// head, stored slots, refused slots (device; read back by the caller when it reports).
  Kokkos::View<std::int64_t[3], MemSpace> const& counters() const { return counters_; }
  std::int64_t capacity() const { return capacity_; }
  std::int64_t state_dim() const { return state_dim_; }
  std::int64_t action_dim() const { return action_dim_; }
  std::int64_t n_envs() const { return n_envs_; }

  /// The storage and counters on the host (a checkpoint), and back (every size checked first).
  struct Contents {
    std::vector<float> rows;  ///< capacity x n_envs rows of (s, a, r, s', done)
    std::int64_t counters[3] = {0, 0, 0};
    std::int64_t pushed = 0;
  };
  Contents download(ExecSpace const& space) const;
  void restore(ExecSpace const& space, Contents const& contents, std::string const& what);

 private:
  std::int64_t capacity_, state_dim_, action_dim_, n_envs_, row_;
  Kokkos::View<float**, Kokkos::LayoutRight, MemSpace> rows_;  // (capacity * n_envs, row_)
  Kokkos::View<std::int64_t[3], MemSpace> counters_;
  Kokkos::View<std::int64_t, MemSpace> bad_;
  std::int64_t pushed_ = 0;
};

}  // namespace ktr::rl
