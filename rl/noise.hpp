// TorchFort's noise actors (actor.type), for TD3 and DDPG: what perturbs the target policy's action (sigma_train,
// clipped to `clip`: target policy smoothing) and the online policy's in predict_explore (sigma_explore,
// unclipped).
//   space_noise          the action plus sigma N(0, 1), drawn afresh at every call
//   space_noise_ou       the action plus an Ornstein-Uhlenbeck state per action value: sigma N(0, 1) at the first
//                        call, then x += xi (0 - x) dt + sigma sqrt(dt) N(0, 1)
//   parameter_noise      the action of the policy whose every parameter has sigma N(0, 1) added
//   parameter_noise_ou   the same with an Ornstein-Uhlenbeck state per parameter
// `adaptive`: sigma times the (biased) standard deviation of this call's actions (space noise) or of each
// parameter tensor (parameter noise), as TorchFort's. Every draw is a counter-based one and the OU states are
// saved with the system, so a restored system continues bit for bit.
#pragma once

#include "../models/model.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ktr::rl {

enum class NoiseKind { space, space_ou, parameter, parameter_ou };

/// "space_noise", "space_noise_ou", "parameter_noise" or "parameter_noise_ou" (any case); throws ktr::Error naming
/// the type otherwise.
NoiseKind parse_noise_kind(std::string const& name);

struct NoiseConfig {
  NoiseKind kind = NoiseKind::space;
  float sigma = 0.1f, clip = 0.0f;  ///< clip 0: unclipped
  bool adaptive = false;
  float dt = 1.0f, xi = 0.0f;  ///< the OU kinds
};

class NoiseActor {
 public:
  /// Noise for up to `rows` actions of A values of `policy` (a ktr description; parameter noise keeps a perturbed
  /// copy of it).
  NoiseActor(ExecSpace const& space, NoiseConfig const& config, std::string const& policy, std::int64_t rows,
             std::int64_t A);
  ~NoiseActor();

  /// The perturbed action of `policy` (n rows of `state`, before any clamp), into `out` (n, A). The draws are
  /// those of call number *draw of the stream `key`; `offset` places these rows among a call's (predict's chunks).
  void act(ExecSpace const& space, Model& policy, Tensor const& state, Tensor const& out, std::uint64_t key,
           std::int64_t const* draw, std::int64_t offset);

  NoiseConfig const& config() const { return config_; }
  /// What a checkpoint keeps: the OU states (empty for the other kinds) and whether each has started.
  std::vector<DeviceView<float*>> saved_buffers() const;
  std::vector<Kokkos::View<std::int64_t, MemSpace>> saved_steps() const;

  /// The kernels' parts (public because the CUDA compiler refuses device lambdas in private members).
  void add_space_noise(ExecSpace const& space, Tensor const& action, Tensor const& out, std::uint64_t key,
                       std::int64_t const* draw, std::int64_t offset);
  void perturb(ExecSpace const& space, Model const& policy, std::uint64_t key, std::int64_t const* draw);

 private:
  NoiseConfig config_;
  std::int64_t A_;
  std::unique_ptr<Model> noisy_;      // parameter noise: the policy with perturbed parameters
  DeviceView<float*> state_, scale_;  // OU states; sigma of this call (space: 1 value; parameter: one a tensor)
  Kokkos::View<std::int64_t, MemSpace> started_;  // the OU states hold a draw
};

}  // namespace ktr::rl
