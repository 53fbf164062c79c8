// One instance per stream for a model's life: see stream_instances.hpp.
#include "stream_instances.hpp"

#include "device_info.hpp"

namespace ktr {

StreamInstances::StreamInstances(Maker make) : make_(std::move(make)) {}
StreamInstances::StreamInstances() : StreamInstances(instance_of_stream) {}

ExecSpace StreamInstances::of(void* stream) {
  if (stream == nullptr) return default_;
  for (auto const& [s, space] : instances_)
    if (s == stream) return space;
  ExecSpace made = make_(stream);  // may throw (a host build has no streams): nothing is kept then
  instances_.emplace_back(stream, std::move(made));
  return instances_.back().second;
}

void StreamInstances::fence() const {
  default_.fence();
  for (auto const& entry : instances_) entry.second.fence();
}

}  // namespace ktr
