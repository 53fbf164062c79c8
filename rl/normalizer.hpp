// TorchFort's running normalisers (algorithm.parameters.normalize_states, normalize_rewards), on the device: per
// feature the count, mean and M2 of every pushed value, each push merged by Chan's parallel rule, and
//   x -> (x - mean) / sqrt(M2 / (count - 1) + 1e-8)      (states)
//   x -> x / sqrt(M2 / (count - 1) + 1e-8)               (rewards: scale only, the mean kept)
// the identity until two values are counted. A push's merge waits for nothing: it reads the buffer's refusal flag
// on the device and skips a refused slot, as the buffer does. Across ranks each rank keeps its own statistics and
// sync() recomputes their merge, which normalises from then on; the merge is never fed back into the local ones
// (TorchFort's is, and so counts every value once more at each sync).
#pragma once

#include "../backends/collective.hpp"
#include "../backends/kokkos_compat.hpp"
#include "../core/tensor.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace ktr::rl {

class RunningNormalizer {
 public:
  /// What kernels apply: operator()(f, x) normalises value x of feature f.
  struct Apply {
    Kokkos::View<float*, MemSpace> mean, m2;
    Kokkos::View<std::int64_t, MemSpace> count;
    bool scale_only = false;

    KOKKOS_INLINE_FUNCTION float operator()(std::int64_t f, float x) const {
      std::int64_t const n = count();
      if (n < 2) return x;
      float const sd = float(compat::sqrt(m2(f) / float(n - 1) + 1e-8f));
      return scale_only ? x / sd : (x - mean(f)) / sd;
    }
  };

  RunningNormalizer() = default;  ///< off
  RunningNormalizer(ExecSpace const& space, std::int64_t features, bool scale_only);
  bool on() const { return features_ > 0; }
  /// The map in use: the merge of every rank's statistics after a sync(), the local ones before.
  Apply const& apply() const { return synced_ ? merged_ : apply_; }
  /// Recomputes the merge of every rank's statistics (collective over `comm`; nothing with one rank).
  void sync(ExecSpace const& space, Communicator const& comm);

  /// Merges the rows x (n, features) unless *refused is not 0 (a device flag). Does not wait.
  void update(ExecSpace const& space, float const* x, std::int64_t n,
              Kokkos::View<std::int64_t, MemSpace> const& refused) const;

  /// The statistics on the host (a checkpoint): count, then mean and M2 side by side; and back (sizes checked).
  struct Stats {
    std::int64_t count = 0;
    std::vector<float> values;  ///< mean (features), then M2 (features)
  };
  Stats download(ExecSpace const& space) const;
  void check(Stats const& stats, std::string const& what) const;  ///< throws ktr::Error naming `what`
  void restore(ExecSpace const& space, Stats const& stats, std::string const& what) const;

 private:
  std::int64_t features_ = 0;
  Apply apply_, merged_;
  bool synced_ = false;
  DeviceView<float*> sums_;  // the sync's allreduce buffer: count, count * mean, then the M2 contributions
};

}  // namespace ktr::rl
