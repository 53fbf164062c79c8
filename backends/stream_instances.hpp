// The execution space instances of one model, one per stream a caller hands it, kept for the model's life.
//
// Kokkos makes an instance's reduction scratch when the instance is made and frees it when the last copy goes; a
// captured K-step program refers to that scratch. An instance made afresh for every call would make the scratch
// (with its allocations and synchronous memsets) every call, and leave a replayed program reading freed memory.
#pragma once

#include "../core/types.hpp"

#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

namespace ktr {

class StreamInstances {
 public:
  using Maker = std::function<ExecSpace(void*)>;
  /// `make`: the instance of a stream (instance_of_stream; tests count with their own).
  explicit StreamInstances(Maker make);
  StreamInstances();

  /// The instance of `stream`: the default instance for nullptr, else the one made on the first call with it.
  ExecSpace of(void* stream);
  /// Waits for everything enqueued on every instance handed out so far (the default one included).
  void fence() const;
  /// Instances made so far (one per distinct non-null stream).
  std::size_t made() const { return instances_.size(); }

 private:
  Maker make_;
  ExecSpace default_;
  std::vector<std::pair<void*, ExecSpace>> instances_;
};

}  // namespace ktr
