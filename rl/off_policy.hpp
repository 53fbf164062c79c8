// Off-policy actor-critic learning on the device: TD3, DDPG and SAC with TorchFort's semantics
// (torchfort_rl_off_policy_*).
//
// One update, all on the caller's instance, nothing read back unless a loss is asked for:
//   sample B transitions (uniform)  ->  a' = clamp(target_policy(s') + clip(sigma_train N(0,1)), a_low, a_high)
//   y = r + gamma^nstep (1 - d) min_i target_critic_i(s', a')
//   each critic i: loss_i = mean w (critic_i(s, a) - y)^2 (w: prioritized replay's importance weights, else 1)
//   (the critic loss is their sum), its optimiser steps every policy_lag-th update (counted from 1): the policy's
//   loss -mean critic_0(s, policy(s)), its optimiser steps, then every target moves by Polyak averaging: theta' <-
//   rho theta' + (1 - rho) theta
// DDPG is the same with one critic and policy_lag 1. SAC (a squashed Gaussian policy, no policy target):
//   with alpha tuned, first log alpha's step on -mean(log alpha (log pi(a|s) + target_entropy)), a ~ pi(s)
//   y = r + gamma (1 - d) (min_i target_critic_i(s', a') - alpha log pi(a'|s')), a' ~ pi(s')
//   the critics as above; the policy's loss mean(alpha log pi(a|s) - min_i critic_i(s, a)), a ~ pi(s)
//   (reparameterised: its gradient reaches the mean and log sigma through the critics' input gradient and the
//   log-probability's own), then the critics' targets move by Polyak averaging, every update.
// SAC's actions are tanh-squashed in [-1, 1]: what it stores, trains on and evaluates is in that scale, and
// predict maps it onto [a_low, a_high]. train(K) runs K updates back to back with no host synchronisation between
// them (the lax.scan of the supervised loop).
#pragma once

#include "../backends/graph.hpp"
#include "../models/model.hpp"
#include "../optim/optimizer.hpp"
#include "noise.hpp"
#include "normalizer.hpp"
#include "transition_buffer.hpp"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ktr::rl {

struct Squashed;  // sac.hpp

struct OffPolicyConfig {
  enum class Algorithm { ddpg, td3, sac };
  Algorithm algorithm = Algorithm::td3;
  std::int64_t batch_size = 128;
  int num_critics = 2;  ///< td3 (ddpg: 1)
  int policy_lag = 2;   ///< td3 (ddpg: 1)
  float gamma = 0.99f, rho = 0.995f;
  // The actor (space_noise): actions clamped to [a_low, a_high]; target smoothing noise sigma_train clipped to
  // [-clip, clip] (clip 0: unclipped); exploration noise sigma_explore.
  float a_low = -1.0f, a_high = 1.0f, clip = 0.5f, sigma_train = 0.2f, sigma_explore = 0.1f;
  /// TD3 and DDPG: TorchFort's actor.type (noise.hpp), `adaptive` sigma, and the OU kinds' dt and xi.
  NoiseKind noise = NoiseKind::space;
  bool adaptive = false;
  float dt = 1.0f, xi = 0.0f;
  std::int64_t max_size = 1 << 20, min_size = 1;  ///< buffer slots kept; slots stored before training starts
  std::int64_t n_envs = 1;                        ///< environments per slot
  /// n-step windows and prioritized replay (TransitionBuffer); its gamma is set from `gamma`. The critics'
  /// target is then y = r + gamma^nstep (1 - d) Q'(s', a'), their loss mean w (q - y)^2 with the importance
  /// weights w, and the priorities follow critic 0's |q - y| (before its step), in the same dispatch.
  Sampling sampling;
  /// TorchFort's running normalisers (normalizer.hpp): states for every network's input (predict, evaluate and the
  /// updates alike), rewards scaled (after the n-step reduction), statistics of every stored push.
  bool normalize_states = false, normalize_rewards = false;
  /// optimizer.general.grad_accumulation_steps: each network sums the gradients of this many of its own
  /// micro-steps (TorchFort's sum, no 1/N) into one optimiser update; the targets move only at the policy's (SAC:
  /// the critics') window end.
  int accumulate = 1;
  /// Replay the K updates of a call as a captured program where the backend can (YAML general.enable_graphs,
  /// TorchFort's enable_cuda_graphs); false: kernel by kernel everywhere.
  bool graphs = true;
  std::string policy;  ///< a ktr description: in=S ... dense:A
  std::string critic;  ///< in=S+A ... dense:1 (state and action side by side)
  OptimizerConfig policy_optimizer, critic_optimizer;
  std::uint64_t seed = 0;
  // SAC: the entropy coefficient (0: no entropy term, unless tuned: it then starts at 0.01), tuned by its own
  // optimiser where `tune_alpha`; the target entropy (> 0: minus the action's values); the policy's log sigma
  // state-dependent (the policy outputs 2A values: the means, then the log sigmas) or a free parameter of A values
  // starting at log_sigma_init. Log sigma is clamped to [-20, 2].
  float alpha = 0.0f, target_entropy = 1.0f;
  bool tune_alpha = false;
  OptimizerConfig alpha_optimizer;
  bool state_dependent_sigma = true;
  float log_sigma_init = 0.0f;

  /// "td3", "ddpg" or "sac" (any case); throws ktr::Error naming the algorithm otherwise.
  static Algorithm parse_algorithm(std::string const& name);
};

/// The initialisation of TorchFort's native networks: PyTorch's Linear default (weights and biases uniform in
/// +-1/sqrt(fan_in)) for a policy, orthogonal weights with gain sqrt(2) and zero biases for a critic. On the
/// device for the uniform draw; orthogonal matrices are made on the host, once.
void init_torch_default(ExecSpace const& space, Model const& model, std::uint64_t seed);
void init_orthogonal(ExecSpace const& space, Model const& model, std::uint64_t seed, double gain);

class OffPolicySystem {
 public:
  /// Builds the networks, targets, optimisers and buffer; throws ktr::Error naming what does not fit (the
  /// critic's input must be the policy's input plus its output, its output one value).
  /// Over several ranks (`comm`): every rank's networks start as rank 0's, each rank keeps its own buffer (its own
  /// n_envs) and normaliser statistics, every update averages the networks' gradients over the ranks (one
  /// allreduce per network and update), normalises by the ranks' merged statistics, and reports the mean loss.
  OffPolicySystem(ExecSpace const& space, OffPolicyConfig const& config,
                  Communicator const& comm = Communicator());
  ~OffPolicySystem();

  OffPolicyConfig const& config() const { return config_; }
  std::int64_t state_dim() const { return state_dim_; }
  std::int64_t action_dim() const { return action_dim_; }

  /// One time step of every environment, device arrays (see TransitionBuffer::push). Does not wait.
  void push(ExecSpace const& space, float const* s, float const* a, float const* r, float const* s_next,
            float const* done);
  /// True once min_size slots are stored (reads the device's count until then; never after).
  bool ready(ExecSpace const& space);
  /// Slots the buffer refused so far (non-finite values; reads back).
  std::int64_t refused(ExecSpace const& space) const;

  /// `updates` updates back to back. Where p_loss / q_loss are not null they receive the last update's policy
  /// loss (0 if it did not update the policy) and critic loss, read back once at the end.
  void train(ExecSpace const& space, std::int64_t updates = 1, float* p_loss = nullptr, float* q_loss = nullptr);
  /// Updates made so far (the policy-lag count).
  std::int64_t updates() const { return updates_; }
  /// The learning rates the last updates used: the policy's, then critic 0's (reads back).
  std::pair<float, float> learning_rates(ExecSpace const& space) const;

  /// action (N, A) = clamp(policy(state), a_low, a_high), state (N, S); with `explore`, plus sigma_explore N(0,1)
  /// noise before the clamp (draws counted on the device).
  void predict(ExecSpace const& space, Tensor const& state, Tensor const& action, bool explore = false);
  /// q (N) = critic_0(state, action).
  void evaluate(ExecSpace const& space, Tensor const& state, Tensor const& action, Tensor const& q);

  /// Saves the whole system into the checkpoint directory `dir` as one generation (train/run_directory.hpp):
  /// every network and target, the optimisers' moments and steps, the buffer, the update count and the draw
  /// counters (so a restored system trains on bit for bit), and `config_text` as config.yaml. Waits for `space`.
  /// Over several ranks it is collective: rank 0 writes every rank's state into the one generation (the
  /// directory need only be rank 0's); a refused save throws on every rank.
  void save(ExecSpace const& space, std::string const& dir, std::string const& config_text = "") const;
  /// Restores a save of a system of the same algorithm, networks and buffer (checked first; ktr::Error naming the
  /// file otherwise, the system unchanged). `networks_only` (TorchFort's load_model): the online networks only,
  /// the targets copied from them, nothing else restored. Over several ranks it is collective and every rank
  /// reads `dir`: each reads and restores its own file alone, from a save over as many ranks (`networks_only`:
  /// rank 0's networks, from a save over any number); a checkpoint one rank refuses throws on every rank and
  /// changes none.
  void load(ExecSpace const& space, std::string const& dir, bool networks_only = false);

  Model& policy() { return *policy_; }
  Model& critic(int i) { return *critics_[std::size_t(i)]; }
  Model& policy_target() { return *policy_target_; }  ///< TD3 and DDPG (SAC has none)
  Model& critic_target(int i) { return *critic_targets_[std::size_t(i)]; }
  TransitionBuffer& buffer() { return buffer_; }
  RunningNormalizer const& state_normalizer() const { return states_; }
  RunningNormalizer const& reward_normalizer() const { return rewards_; }
  /// The last update's batch, and its target critics' input (s', a' after smoothing): for checks against a
  /// reference implementation.
  TransitionBatch const& last_batch() const { return batch_; }
  /// SAC's free log sigma (A values; empty for a state-dependent one).
  DeviceView<float*> const& log_sigma() const { return log_sigma_; }
  Tensor const& last_target_input() const { return next_state_action_; }

  /// Counts one more update on the host and sets the accumulation windows it ends; true where it updates the
  /// policy (train's bookkeeping).
  bool advance();
  /// One update (train's step; public because the CUDA compiler refuses device lambdas in private members), the
  /// policy's part and the targets' where `update_policy`.
  void update(ExecSpace const& space, bool update_policy);
  /// SAC's parts of an update (public for the same reason).
  void sac_update_alpha(ExecSpace const& space);
  void sac_critic_target(ExecSpace const& space);
  void sac_update_policy(ExecSpace const& space);
  /// The running normalisers' parts (public for the same reason): states (n, S) normalised into a scratch
  /// tensor, and a sampled batch's states and rewards in place.
  Tensor normalized(ExecSpace const& space, Tensor const& state);
  void normalize_batch(ExecSpace const& space);
  /// One optimiser update of `params` from `grads`, or (accumulate > 1) `grads` added into `sum` and the update
  /// made from the sum at the window's end (`window_end`), the sum then cleared (public for the same reason).
  void apply(ExecSpace const& space, Optimizer const& opt, DeviceView<float*> const& params,
             DeviceView<float*> const& grads, DeviceView<float*> const& sum,
             Kokkos::View<std::int64_t, MemSpace> const& step, float const* loss, bool window_end);

  bool sac() const { return config_.algorithm == OffPolicyConfig::Algorithm::sac; }
  /// SAC's entropy coefficient (device; read back).
  float alpha(ExecSpace const& space) const;

 private:
  // What a checkpoint holds, in its order: parameter-sized buffers and step counters (system_io.cpp).
  std::vector<DeviceView<float*>> saved_buffers(bool networks_only) const;
  std::vector<Kokkos::View<std::int64_t, MemSpace>> saved_steps() const;
  // SAC: the Gaussian a policy output describes; log alpha where the entropy term is on, else null.
  Squashed squashed(Tensor const& out) const;
  float const* log_alpha_or_null() const;
  // The map of an action onto what the buffer and critics hold: a * scale + shift (SAC: [a_low, a_high] onto
  // [-1, 1]; the others: the identity).
  float action_scale() const;
  float action_shift() const;

  OffPolicyConfig config_;
  Communicator comm_;
  std::int64_t state_dim_ = 0, action_dim_ = 0;
  std::unique_ptr<Model> policy_, policy_target_;
  std::vector<std::unique_ptr<Model>> critics_, critic_targets_;
  std::unique_ptr<Optimizer> policy_opt_;
  std::vector<std::unique_ptr<Optimizer>> critic_opts_;
  Kokkos::View<std::int64_t, MemSpace> policy_step_;
  std::vector<Kokkos::View<std::int64_t, MemSpace>> critic_steps_;
  Kokkos::View<std::int64_t[2], MemSpace> draws_;  // samples drawn, exploration draws
  TransitionBuffer buffer_;
  RunningNormalizer states_, rewards_;
  // TD3 and DDPG with any actor but plain space noise (which the update and predict draw themselves).
  std::unique_ptr<NoiseActor> train_noise_, explore_noise_;
  // Gradient accumulation: each network's running sum (empty without), and whether this update ends the critics'
  // and the policy's windows.
  std::vector<DeviceView<float*>> critic_sums_;
  DeviceView<float*> policy_sum_, log_sigma_sum_, alpha_sum_;
  bool critic_window_end_ = true, policy_window_end_ = true;
  Tensor noisy_action_;
  TransitionBatch batch_;
  Tensor next_state_action_, policy_state_action_, dstate_action_, normalized_state_;
  Tensor q_min_, y_, td_;
  DeviceView<float*> losses_;  // critic i's loss at i, the policy's at num_critics
  // SAC: the free log sigma and log alpha (each a one-parameter "arena" with its gradient, optimiser and step),
  // the sampled actions' log-probabilities, the minimum critic of each sample and the action gradient.
  DeviceView<float*> log_sigma_, log_sigma_grad_, log_alpha_, log_alpha_grad_;
  std::unique_ptr<Optimizer> log_sigma_opt_, alpha_opt_;
  Kokkos::View<std::int64_t, MemSpace> log_sigma_step_, alpha_step_;
  Tensor logp_, argmin_, daction_;
  std::int64_t updates_ = 0;
  bool ready_ = false;
  // The captured programs of K updates (GPU builds, a stream of its own), by K, the update count's phase modulo
  // policy_lag x accumulate and the stream; the oldest goes first past kMaxPrograms. A stream's first
  // policy_lag x accumulate updates run kernel by kernel (every phase's code once) before any capture.
  struct RlProgramKey {
    std::int64_t updates = 0, phase = 0;
    StreamIdentity stream;
    bool same_stream(StreamIdentity const& o) const {
      return stream.stream == o.stream && stream.resources == o.resources && stream.instance == o.instance;
    }
    bool operator==(RlProgramKey const& o) const {
      return updates == o.updates && phase == o.phase && same_stream(o.stream);
    }
  };
  static constexpr std::size_t kMaxPrograms = 8;
  std::vector<std::pair<RlProgramKey, std::unique_ptr<CapturedProgram>>> programs_;
  RlProgramKey warm_stream_;  // the stream the last calls ran on, and the updates run kernel by kernel there
};

}  // namespace ktr::rl
