// Arena layout and on-device initialisation.
#include "arena.hpp"

#include "../backends/kokkos_compat.hpp"
#include "../core/checked.hpp"
#include "../core/ops.hpp"
#include "../core/permutation.hpp"

#include <cmath>

namespace ktr {

Arena::Arena(std::vector<ParamSpec> specs, bool allocate, ExecSpace const& space) : specs_(std::move(specs)) {
  for (auto const& s : specs_) {
    offsets_.push_back(size_);
    size_ =
        checked_add(size_, checked_add(s.shape.size(), alignment - 1, "parameter arena") / alignment * alignment,
                    "parameter arena");
  }
  if (!allocate) return;
  params_ = DeviceView<float*>(Kokkos::view_alloc(space, "ktr::arena::params"), static_cast<std::size_t>(size_));
  grads_ = DeviceView<float*>(Kokkos::view_alloc(space, "ktr::arena::grads"), static_cast<std::size_t>(size_));
}

Tensor Arena::param(std::size_t i) const {
  auto range = std::make_pair(offsets_[i], offsets_[i] + specs_[i].shape.size());
  return Tensor(Kokkos::subview(params_, range), specs_[i].shape);
}

Tensor Arena::grad(std::size_t i) const {
  auto range = std::make_pair(offsets_[i], offsets_[i] + specs_[i].shape.size());
  return Tensor(Kokkos::subview(grads_, range), specs_[i].shape);
}

std::int64_t Arena::num_parameters() const {
  std::int64_t n = 0;
  for (auto const& s : specs_) n += s.shape.size();
  return n;
}

namespace {

// A standard normal truncated to [-2, 2] from a counter-based hash: deterministic on every backend.
KOKKOS_INLINE_FUNCTION float truncated_normal(std::uint64_t key, std::uint64_t i) {
  for (std::uint64_t attempt = 0;; ++attempt) {
    std::uint64_t const h1 = mix64(key ^ mix64(2 * (i + attempt * 0x100000000ull)));
    std::uint64_t const h2 = mix64(key ^ mix64(2 * (i + attempt * 0x100000000ull) + 1));
    double const u1 = (double(h1 >> 11) + 1.0) * (1.0 / 9007199254740993.0);  // (0, 1]
    double const u2 = double(h2 >> 11) * (1.0 / 9007199254740992.0);          // [0, 1)
    double const z = compat::sqrt(-2.0 * compat::log(u1)) * compat::cos(6.283185307179586 * u2);
    if (z >= -2.0 && z <= 2.0) return static_cast<float>(z);
  }
}

}  // namespace

void Arena::initialize(ExecSpace const& space, std::uint64_t seed) const {
  for (std::size_t i = 0; i < specs_.size(); ++i) {
    auto p = param(i).view();
    if (specs_[i].init != Init::lecun_normal) {
      fill(space, p, specs_[i].init == Init::ones ? 1.0f : 0.0f);
      continue;
    }
    // Variance scaling (scale 1, fan_in, truncated normal) as Flax's lecun_normal: the stddev of a standard
    // normal truncated to [-2, 2] is 0.8796..., divided out so that the variance is 1 / fan_in.
    float const stddev = static_cast<float>(std::sqrt(1.0 / double(specs_[i].fan_in)) / 0.87962566103423978);
    std::uint64_t const key = mix64(seed ^ mix64(0xA2B1C3D4ull + i));
    Kokkos::parallel_for(
        "ktr::arena::init_lecun_normal", Kokkos::RangePolicy<ExecSpace>(space, 0, p.extent(0)),
        KOKKOS_LAMBDA(std::size_t j) { p(j) = stddev * truncated_normal(key, j); });
  }
}

}  // namespace ktr
