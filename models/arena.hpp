// The parameter arena: every parameter of a model in one flat device buffer, the gradients in a second buffer of
// the same layout. Layers hold windows (offset + shape) into both and never own memory; the optimiser updates the
// whole buffer in one kernel; a checkpoint is the buffer. Offsets are padded to 64 bytes; padding stays zero.
#pragma once

#include "../core/tensor.hpp"

#include <string>
#include <vector>

namespace ktr {

/// How a parameter starts: zero (biases), one (LayerNorm scales) or a truncated normal with variance scale /
/// fan_in (LeCun normal, the Flax/Haiku default for Dense and Conv kernels).
enum class Init { zeros, ones, lecun_normal };

struct ParamSpec {
  std::string name;  ///< Flax's parameter path: "Dense_0.kernel", "Conv_0.bias"
  Shape shape;
  Init init = Init::zeros;
  std::int64_t fan_in = 1;
};

class Arena {
 public:
  static constexpr std::int64_t alignment = 16;  // floats

  Arena() = default;
  /// Lays out and, if `allocate`, allocates (zeroed) parameter and gradient buffers for `specs`.
  /// Lays out `specs`; allocates (zeroed on `space`) unless `allocate` is false (a plan only).
  explicit Arena(std::vector<ParamSpec> specs, bool allocate = true, ExecSpace const& space = ExecSpace());

  std::int64_t size() const { return size_; }
  std::size_t count() const { return specs_.size(); }
  ParamSpec const& spec(std::size_t i) const { return specs_[i]; }
  std::int64_t offset(std::size_t i) const { return offsets_[i]; }
  /// Parameter / gradient i as a tensor window into the arena.
  Tensor param(std::size_t i) const;
  Tensor grad(std::size_t i) const;
  DeviceView<float*> const& params() const { return params_; }
  DeviceView<float*> const& grads() const { return grads_; }
  /// Sum of the parameters' element counts (without padding).
  std::int64_t num_parameters() const;

  /// Initialises every parameter on the device from `seed` (one kernel per parameter, no host data).
  void initialize(ExecSpace const& space, std::uint64_t seed) const;

 private:
  std::vector<ParamSpec> specs_;
  std::vector<std::int64_t> offsets_;
  std::int64_t size_ = 0;
  DeviceView<float*> params_, grads_;
};

}  // namespace ktr
