// The captured K-step programs of a run, keyed by everything a replay depends on, least recently used out.
//
// A program replays the device addresses and the stream it was recorded with. An application that hands over
// freshly allocated views every time step (or changes K, or its stream) makes a new key each time, so the cache is
// bounded: past its capacity the least recently used program is destroyed (a graph still running finishes first;
// the runtime frees it afterwards).
#pragma once

#include "../backends/gemm.hpp"
#include "../backends/graph.hpp"
#include "../data/dataset.hpp"
#include "../models/model.hpp"

#include <cstdint>
#include <memory>
#include <vector>

namespace ktr {

/// What a captured K-step program was built from: a different model, dataset, K, input transform, gemm precision
/// (the run's: TrainState::precision) or instance (its stream, that stream's BLAS resources, the instance's own
/// scratch) needs a program of its own. Everything a program reads by address or holds by value is here.
struct ProgramKey {
  std::uintptr_t model = 0, params = 0, grads = 0;      ///< the model object and its arenas
  std::uintptr_t features = 0, targets = 0;             ///< the dataset's device views
  std::int64_t count = 0, feature_stride = 0;           ///< samples, and the stride between them
  std::uint32_t scale = 0, shift = 0;                   ///< the input transform's bits (held by value)
  std::uintptr_t feature_scale = 0, feature_shift = 0;  ///< its per-feature views (read by address), or 0
  int k = 0;
  int precision = 0;      ///< MatmulPrecision
  StreamIdentity stream;  ///< the instance: its stream, its BLAS resources, its scratch
  ProgramKey(Model const& model, DeviceDataset const& data, InputTransform const& transform, int k,
             MatmulPrecision precision, StreamIdentity stream = {});
  bool operator==(ProgramKey const& o) const;
  bool operator<(ProgramKey const& o) const;
};

/// At most `capacity` programs; the least recently used one goes first.
class ProgramCache {
 public:
  static constexpr std::size_t default_capacity = 8;
  explicit ProgramCache(std::size_t capacity = default_capacity);

  /// The slot for `key` (empty if new: the caller records into it), marked as just used. A new key beyond the
  /// capacity destroys the least recently used program first.
  std::unique_ptr<CapturedProgram>& slot(ProgramKey const& key);

  std::size_t size() const { return entries_.size(); }
  std::size_t capacity() const { return capacity_; }
  /// Changes the capacity (at least 1), destroying the least recently used programs beyond it.
  void set_capacity(std::size_t capacity);
  /// Programs destroyed to make room so far.
  std::int64_t evictions() const { return evictions_; }

 private:
  struct Entry {
    ProgramKey key;
    std::unique_ptr<CapturedProgram> program;
    std::uint64_t used;
  };
  void evict_to(std::size_t size);
  std::vector<Entry> entries_;
  std::size_t capacity_;
  std::uint64_t clock_ = 0;
  std::int64_t evictions_ = 0;
};

}  // namespace ktr
