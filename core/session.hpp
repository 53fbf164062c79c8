// A training session: the run's configuration, its model and its device state, created fresh from a seed or
// restored from a checkpoint. This is what the CLI drives and what a resumed run continues bit for bit.
#pragma once

#include "core/train.hpp"

#include <string>

namespace ktr {

struct RunConfig {
  std::string model = Model::mlp();
  OptimizerConfig optimizer;
  std::int64_t batch = 256;
  std::uint64_t seed = 0;
  Normalization norm;
};

class Session {
 public:
  /// Builds the model and its state, parameters initialised on the device from config.seed.
  Session(RunConfig const& config, int max_k);
  /// Rebuilds a session from a checkpoint (model description, optimiser, step, seed) with room for max_k.
  static std::unique_ptr<Session> restore(std::string const& path, int max_k);
  /// Writes parameters, optimiser state, step and configuration atomically to `path` (waits for the device).
  void save(std::string const& path) const;

  RunConfig const& config() const { return config_; }
  Model& model() { return model_; }
  TrainState& state() { return state_; }

 private:
  RunConfig config_;
  Model model_;
  TrainState state_;
};

}  // namespace ktr
