// Optimisers over the flat parameter arena: SGD (momentum, Nesterov), Adam, AdamW, with Optax/PyTorch defaults;
// and L-BFGS for a fixed batch (lbfgs.hpp: every update one evaluation of its line search).
//
// A step is two kernels on the caller's instance, whatever the model:
//   1. "ktr::optim::advance"  (one thread): step += 1; learning rate from the schedule; bias corrections;
//                             gradient-clipping scale from the gradient norm (if clipping) -> device scalars
//   2. "ktr::optim::<kind>"   (whole arena): reads those scalars, updates parameters and moments in place (and
//                             a bf16 run's copy of the parameters, chunk by chunk while they are in cache)
// plus one reduction for the gradient norm. Nothing is read from the host, so a captured multi-step program
// replays with the right step count and rate.
//
// A refused update changes nothing: where the gradient norm (or a loss the caller names) is not finite, the
// advance kernel leaves the step where it is and the update kernel leaves parameters and moments alone, on the
// device, with no host synchronisation; the refusal is counted on the device (refused()), for the next read-back
// to report.
#pragma once

#include "../core/types.hpp"
#include "schedule.hpp"

#include <memory>
#include <string>
#include <vector>

namespace ktr {

/// The accepted range of each optimiser setting, stated once: the Optimizer refuses values outside them, and the
/// settings table (train/run_settings.cpp) reads, checks and prints them for files, flags and checkpoints.
struct OptimizerRanges {
  static constexpr double lr_min = 1e-12, lr_max = 1e6;
  static constexpr double below_one = 0.999999;  ///< momentum, b1 and b2 lie in [0, below_one]
  static constexpr double eps_min = 1e-30, eps_max = 1;
  static constexpr double decay_max = 1e6;  ///< weight_decay and l2 lie in [0, decay_max]
  static constexpr double clip_max = 3.4e38;
  static constexpr int history_max = 1000, linesearch_max = 1000;  ///< lbfgs
};

struct OptimizerConfig {
  enum class Kind { sgd, adam, adamw, lbfgs };
  Kind kind = Kind::adam;
  float lr = 1e-3f;
  float momentum = 0.0f;  ///< sgd
  bool nesterov = false;  ///< sgd
  float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
  float weight_decay = 1e-4f;  ///< adamw (decoupled, scaled by the learning rate, as Optax)
  /// sgd and adam: PyTorch's weight_decay, an L2 penalty whose gradient l2 * p is added to the (clipped) gradient
  /// before the moments (optax.add_decayed_weights before the transform); 0: none.
  float l2 = 0.0f;
  float clip_norm = 0.0f;  ///< > 0: clip the gradient to this global norm first
  Schedule schedule;
  // lbfgs: `lr` is the first trial step of each direction (PyTorch's lr; 1 is the textbook's)
  int history = 10;                ///< lbfgs: the (s, y) pairs kept (Optax's memory_size)
  int linesearch = 20;             ///< lbfgs: trials per line search (Optax's max_linesearch_steps)
  float tolerance_grad = 1e-7f;    ///< lbfgs: converged once max |g| is at most this (PyTorch's)
  float tolerance_change = 1e-9f;  ///< lbfgs: ... or a step changes the loss or a parameter by less (PyTorch's)

  static Kind parse_kind(std::string const& name);  ///< "sgd", "adam", "adamw", "lbfgs"
  static char const* kind_name(Kind kind);
};

class Lbfgs;

class Optimizer {
 public:
  /// Allocates the moment buffers (zeroed, on `space`) for an arena of `size` floats.
  Optimizer(OptimizerConfig const& config, std::int64_t size, ExecSpace const& space = ExecSpace());

  OptimizerConfig const& config() const { return config_; }

  /// One update of `params` from `grads`, advancing `step` (the device step counter shared with the data), unless
  /// the gradient or one of the `loss_count` device losses at `losses` is not finite: then nothing changes but
  /// the refusal count. lbfgs: `losses` is the loss the gradient belongs to (loss_count 1), and the parameters
  /// move to the next point its line search evaluates. `params16`, where not empty (a bf16 run's copy of the
  /// parameters, as long as `params`), receives the updated parameters' bfloat16 bits in the same pass (bf16_bits:
  /// what its gemms read).
  void update(ExecSpace const& space, DeviceView<float*> const& params, DeviceView<const float*> const& grads,
              Kokkos::View<std::int64_t, MemSpace> const& step, float const* losses = nullptr, int loss_count = 0,
              DeviceView<std::uint16_t*> const& params16 = {}) const;
  /// Updates refused so far (device; shared by copies of this optimiser, as its moments are).
  Kokkos::View<std::int64_t, MemSpace> const& refused() const { return refused_; }

  /// The buffers a checkpoint must keep (moments; empty for plain SGD; lbfgs: its points, pairs and scalars).
  std::vector<DeviceView<float*>> state() const;
  /// The learning rate the last update used (a device scalar; index 0 of the scalars; lbfgs: the step taken).
  DeviceView<float*> const& scalars() const { return scalars_; }
  /// lbfgs's state (null for the others).
  Lbfgs const* lbfgs() const { return lbfgs_.get(); }
  /// Floats of optimiser state per parameter.
  static std::int64_t floats_per_parameter(OptimizerConfig const& config);

 private:
  OptimizerConfig config_;
  DeviceView<float*> m_, v_;
  DeviceView<float*> scalars_;  // lr, bias correction 1, bias correction 2, clip scale, 1 = apply (0 = refused)
  DeviceAccumulator grad_norm_sq_;
  Kokkos::View<std::int64_t, MemSpace> refused_;
  std::shared_ptr<Lbfgs const> lbfgs_;
};

}  // namespace ktr
