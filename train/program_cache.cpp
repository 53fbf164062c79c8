// The captured programs of a run: see program_cache.hpp.
#include "program_cache.hpp"

#include "../core/error.hpp"

#include <algorithm>
#include <cstring>
#include <tuple>

namespace ktr {

namespace {
std::uintptr_t address(void const* p) { return reinterpret_cast<std::uintptr_t>(p); }

auto tied(ProgramKey const& k) {
  return std::tie(k.model, k.params, k.grads, k.features, k.targets, k.count, k.feature_stride, k.scale, k.shift,
                  k.feature_scale, k.feature_shift, k.k, k.precision, k.stream.stream, k.stream.resources,
                  k.stream.instance);
}

std::uint32_t bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}
}  // namespace

ProgramKey::ProgramKey(Model const& m, DeviceDataset const& data, InputTransform const& transform, int k_,
                       MatmulPrecision precision_, StreamIdentity stream_)
    : model(address(&m)),
      params(address(m.arena().params().data())),
      grads(address(m.arena().grads().data())),
      features(data.feature_kind == DeviceDataset::Features::float32 ? address(data.features.data())
                                                                     : address(data.pixels.data())),
      targets(data.target_kind == DeviceDataset::Targets::values ? address(data.values.data())
                                                                 : address(data.labels.data())),
      count(data.count),
      feature_stride(std::int64_t(data.feature_kind == DeviceDataset::Features::float32 ? data.features.stride(0)
                                                                                        : data.pixels.stride(0))),
      scale(bits(transform.scale)),
      shift(bits(transform.shift)),
      feature_scale(address(transform.feature_scale.data())),
      feature_shift(address(transform.feature_shift.data())),
      k(k_),
      precision(int(precision_)),
      stream(stream_) {}

bool ProgramKey::operator==(ProgramKey const& o) const { return tied(*this) == tied(o); }
bool ProgramKey::operator<(ProgramKey const& o) const { return tied(*this) < tied(o); }

ProgramCache::ProgramCache(std::size_t capacity) : capacity_(capacity) {
  KTR_REQUIRE(capacity >= 1, "ktr::ProgramCache", "the capacity must be at least 1");
}

std::unique_ptr<CapturedProgram>& ProgramCache::slot(ProgramKey const& key) {
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](Entry const& e) { return e.key == key; });
  if (it == entries_.end()) {
    evict_to(capacity_ - 1);
    entries_.push_back(Entry{key, nullptr, 0});
    it = entries_.end() - 1;
  }
  it->used = ++clock_;
  return it->program;
}

void ProgramCache::set_capacity(std::size_t capacity) {
  KTR_REQUIRE(capacity >= 1, "ktr::ProgramCache", "the capacity must be at least 1");
  capacity_ = capacity;
  evict_to(capacity_);
}

void ProgramCache::evict_to(std::size_t size) {
  while (entries_.size() > size) {
    auto oldest = std::min_element(entries_.begin(), entries_.end(),
                                   [](Entry const& a, Entry const& b) { return a.used < b.used; });
    entries_.erase(oldest);
    ++evictions_;
  }
}

}  // namespace ktr
