#include "off_policy.hpp"

#include "../core/error.hpp"
#include "random.hpp"
#include "sac.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace ktr::rl {

OffPolicyConfig::Algorithm OffPolicyConfig::parse_algorithm(std::string const& name) {
  std::string n = name;
  for (auto& c : n) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (n == "td3") return Algorithm::td3;
  if (n == "ddpg") return Algorithm::ddpg;
  if (n == "sac") return Algorithm::sac;
  throw Error("algorithm: '" + name + "' is not an off-policy algorithm ktr has (td3, ddpg, sac)");
}

// ---------------------------------------------------------------------------------------------- initialisation

void init_torch_default(ExecSpace const& space, Model const& model, std::uint64_t seed) {
  Arena const& arena = model.arena();
  std::int64_t fan_in = 1;
  for (std::size_t i = 0; i < arena.count(); ++i) {
    ParamSpec const& spec = arena.spec(i);
    if (spec.init == Init::ones) continue;                      // LayerNorm scales keep PyTorch's ones
    if (spec.init == Init::lecun_normal) fan_in = spec.fan_in;  // a bias follows its kernel and shares its fan-in
    auto p = arena.param(i).view();
    float const bound = float(1.0 / std::sqrt(double(fan_in)));
    std::uint64_t const key = stream_key(seed, 0x100 + i);
    Kokkos::parallel_for(
        "ktr::rl::init_uniform", Kokkos::RangePolicy<ExecSpace>(space, 0, arena.param(i).size()),
        KOKKOS_LAMBDA(std::int64_t j) { p(j) = bound * float(2.0 * uniform01(key, std::uint64_t(j)) - 1.0); });
  }
}

void init_orthogonal(ExecSpace const& space, Model const& model, std::uint64_t seed, double gain) {
  Arena const& arena = model.arena();
  for (std::size_t i = 0; i < arena.count(); ++i) {
    ParamSpec const& spec = arena.spec(i);
    Tensor const p = arena.param(i);
    if (spec.init != Init::lecun_normal) {
      if (spec.init == Init::zeros) Kokkos::deep_copy(space, p.view(), 0.0f);
      continue;
    }
    // The kernel as a (fan_in, rest) matrix: orthonormal columns (or rows, whichever are fewer) by modified
    // Gram-Schmidt on a normal draw, PyTorch's orthogonal_ up to the draw (a QR with the signs of R's diagonal).
    std::int64_t const rows = spec.fan_in, cols = p.size() / rows;
    bool const tall = rows >= cols;
    std::int64_t const n = tall ? rows : cols, k = tall ? cols : rows;  // k vectors of length n
    std::vector<double> v(std::size_t(n * k));
    std::uint64_t const key = stream_key(seed, 0x200 + i);
    for (std::int64_t j = 0; j < n * k; ++j) v[std::size_t(j)] = standard_normal(key, std::uint64_t(j));
    for (std::int64_t a = 0; a < k; ++a) {
      double* va = &v[std::size_t(a * n)];
      for (std::int64_t b = 0; b < a; ++b) {
        double const* vb = &v[std::size_t(b * n)];
        double dot = 0;
        for (std::int64_t t = 0; t < n; ++t) dot += va[t] * vb[t];
        for (std::int64_t t = 0; t < n; ++t) va[t] -= dot * vb[t];
      }
      double norm = 0;
      for (std::int64_t t = 0; t < n; ++t) norm += va[t] * va[t];
      norm = std::sqrt(norm);
      for (std::int64_t t = 0; t < n; ++t) va[t] /= norm;
    }
    std::vector<float> w(std::size_t(p.size()));
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c)
        w[std::size_t(r * cols + c)] =
            float(gain * (tall ? v[std::size_t(c * n + r)] : v[std::size_t(r * n + c)]));
    from_host(p, w);
  }
}

// ---------------------------------------------------------------------------------------------- the system

namespace {

struct Dims {
  std::int64_t state, action;
};

Dims dims_of(OffPolicyConfig const& c) {
  ModelPlan const policy = Model::plan(c.policy, 1);
  ModelPlan const critic = Model::plan(c.critic, 1);
  KTR_REQUIRE(policy.input.rank == 2, "policy_model", "takes a vector of state values (in=S), not an image");
  KTR_REQUIRE(critic.input.rank == 2, "critic_model", "takes a vector (in=S+A), not an image");
  bool const two_heads = c.algorithm == OffPolicyConfig::Algorithm::sac && c.state_dependent_sigma;
  KTR_REQUIRE(!two_heads || policy.output_width % 2 == 0, "policy_model",
              "outputs " + std::to_string(policy.output_width) +
                  " values; a SAC policy with a state-dependent sigma outputs the means and the log sigmas (2A)");
  std::int64_t const S = policy.input.inner(), A = two_heads ? policy.output_width / 2 : policy.output_width;
  KTR_REQUIRE(critic.input.inner() == S + A, "critic_model",
              "takes " + std::to_string(critic.input.inner()) + " values; the state and the action are " +
                  std::to_string(S) + " + " + std::to_string(A));
  KTR_REQUIRE(critic.output_width == 1, "critic_model",
              "must output one value, not " + std::to_string(critic.output_width));
  return {S, A};
}

// theta' <- rho theta' + (1 - rho) theta over a whole arena (padding stays zero).
void polyak(ExecSpace const& space, Model const& target, Model const& online, float rho) {
  auto t = target.arena().params();
  auto p = online.arena().params();
  Kokkos::parallel_for(
      "ktr::rl::polyak", Kokkos::RangePolicy<ExecSpace>(space, 0, t.extent(0)),
      KOKKOS_LAMBDA(std::size_t j) { t(j) = rho * t(j) + (1.0f - rho) * p(j); });
}

void copy_params(ExecSpace const& space, Model const& to, Model const& from) {
  Kokkos::deep_copy(space, to.arena().params(), from.arena().params());
}

void bump(ExecSpace const& space, Kokkos::View<std::int64_t[2], MemSpace> const& counters, int i) {
  Kokkos::parallel_for(
      "ktr::rl::next_draw", Kokkos::RangePolicy<ExecSpace>(space, 0, 1), KOKKOS_LAMBDA(int) { counters(i) += 1; });
}

Sampling sampling_of(OffPolicyConfig const& c) {
  Sampling s = c.sampling;
  s.gamma = c.gamma;
  return s;
}

}  // namespace

OffPolicySystem::OffPolicySystem(ExecSpace const& space, OffPolicyConfig const& config, Communicator const& comm)
    : config_(config),
      comm_(comm),
      state_dim_(dims_of(config).state),
      action_dim_(dims_of(config).action),
      buffer_(space, config.max_size, state_dim_, action_dim_, config.n_envs, sampling_of(config)) {
  OffPolicyConfig& c = config_;
  if (c.algorithm == OffPolicyConfig::Algorithm::ddpg) c.num_critics = 1, c.policy_lag = 1;
  if (c.algorithm == OffPolicyConfig::Algorithm::sac) c.policy_lag = 1;  // SAC's policy steps every update
  KTR_REQUIRE(c.batch_size > 0, "batch_size", "must be positive, got " + std::to_string(c.batch_size));
  KTR_REQUIRE(c.num_critics >= 1 && c.num_critics <= 16, "num_critics",
              "must lie in [1, 16], got " + std::to_string(c.num_critics));
  KTR_REQUIRE(c.policy_lag >= 1, "policy_lag", "must be at least 1, got " + std::to_string(c.policy_lag));
  KTR_REQUIRE(c.gamma >= 0 && c.gamma <= 1, "gamma", "must lie in [0, 1], got " + std::to_string(c.gamma));
  KTR_REQUIRE(c.rho >= 0 && c.rho <= 1, "rho", "must lie in [0, 1], got " + std::to_string(c.rho));
  KTR_REQUIRE(c.a_low < c.a_high, "a_low", "must be below a_high");
  KTR_REQUIRE(c.clip >= 0 && c.sigma_train >= 0 && c.sigma_explore >= 0, "actor",
              "clip, sigma_train and sigma_explore must not be negative");
  KTR_REQUIRE(c.min_size >= 1 && c.min_size <= c.max_size, "min_size",
              "must lie in [1, max_size = " + std::to_string(c.max_size) + "], got " + std::to_string(c.min_size));
  KTR_REQUIRE(c.alpha >= 0 && std::isfinite(c.alpha), "alpha", "must be a finite value >= 0");

  std::int64_t const B = c.batch_size, rows = std::max(B, c.n_envs), S = state_dim_, A = action_dim_;
  policy_ = std::make_unique<Model>(space, c.policy, rows);
  init_torch_default(space, *policy_, c.seed);
  if (!sac()) {  // SAC has no policy target
    policy_target_ = std::make_unique<Model>(space, c.policy, B);
    copy_params(space, *policy_target_, *policy_);
  }
  policy_opt_ = std::make_unique<Optimizer>(c.policy_optimizer, policy_->arena().size(), space);
  policy_step_ = Kokkos::View<std::int64_t, MemSpace>(Kokkos::view_alloc(space, "ktr::rl::policy_step"));
  for (int i = 0; i < c.num_critics; ++i) {
    critics_.push_back(std::make_unique<Model>(space, c.critic, rows));
    critic_targets_.push_back(std::make_unique<Model>(space, c.critic, B));
    init_orthogonal(space, *critics_.back(), stream_key(c.seed, 1 + std::uint64_t(i)), std::sqrt(2.0));
    copy_params(space, *critic_targets_.back(), *critics_.back());
    critic_opts_.push_back(
        std::make_unique<Optimizer>(c.critic_optimizer, critics_.back()->arena().size(), space));
    critic_steps_.emplace_back(Kokkos::view_alloc(space, "ktr::rl::critic_step"));
  }
  draws_ = decltype(draws_)(Kokkos::view_alloc(space, "ktr::rl::draws"));
  if (c.normalize_states) {
    states_ = RunningNormalizer(space, S, false);
    normalized_state_ = Tensor(space, "ktr::rl::normalized_state", Shape{rows, S});
  }
  if (c.normalize_rewards) rewards_ = RunningNormalizer(space, 1, true);
  if (!sac() && (c.noise != NoiseKind::space || c.adaptive)) {
    train_noise_ = std::make_unique<NoiseActor>(
        space, NoiseConfig{c.noise, c.sigma_train, c.clip, c.adaptive, c.dt, c.xi}, c.policy, B, A);
    explore_noise_ = std::make_unique<NoiseActor>(
        space, NoiseConfig{c.noise, c.sigma_explore, 0.0f, c.adaptive, c.dt, c.xi}, c.policy, rows, A);
    noisy_action_ = Tensor(space, "ktr::rl::noisy_action", Shape{rows, A});
  }
  batch_ = TransitionBatch{Tensor(space, "ktr::rl::batch_sa", Shape{B, S + A}),
                           Tensor(space, "ktr::rl::batch_s", Shape{B, S}),
                           Tensor(space, "ktr::rl::batch_s_next", Shape{B, S}),
                           Tensor(space, "ktr::rl::batch_r", Shape{B}),
                           Tensor(space, "ktr::rl::batch_d", Shape{B}),
                           Tensor(),
                           {}};
  if (c.sampling.prioritized) {
    batch_.weight = Tensor(space, "ktr::rl::batch_weight", Shape{B});
    batch_.leaf =
        Kokkos::View<std::int64_t*, MemSpace>(Kokkos::view_alloc(space, "ktr::rl::batch_leaf"), std::size_t(B));
  }
  next_state_action_ = Tensor(space, "ktr::rl::next_sa", Shape{B, S + A});
  policy_state_action_ = Tensor(space, "ktr::rl::policy_sa", Shape{rows, S + A});
  dstate_action_ = Tensor(space, "ktr::rl::dsa", Shape{B, S + A});
  q_min_ = Tensor(space, "ktr::rl::q_min", Shape{B});
  y_ = Tensor(space, "ktr::rl::y", Shape{B});
  td_ = Tensor(space, "ktr::rl::td", Shape{B});
  losses_ = DeviceView<float*>(Kokkos::view_alloc(space, "ktr::rl::losses"), std::size_t(c.num_critics + 1));
  if (sac()) {
    logp_ = Tensor(space, "ktr::rl::sac_logp", Shape{B});
    argmin_ = Tensor(space, "ktr::rl::sac_argmin", Shape{B});
    daction_ = Tensor(space, "ktr::rl::sac_daction", Shape{B, A});
    if (!c.state_dependent_sigma) {  // a parameter of A values, with the policy's optimiser settings
      log_sigma_ = DeviceView<float*>(Kokkos::view_alloc(space, "ktr::rl::log_sigma"), std::size_t(A));
      log_sigma_grad_ = DeviceView<float*>(Kokkos::view_alloc(space, "ktr::rl::log_sigma_grad"), std::size_t(A));
      Kokkos::deep_copy(space, log_sigma_, c.log_sigma_init);
      log_sigma_opt_ = std::make_unique<Optimizer>(c.policy_optimizer, A, space);
      log_sigma_step_ = Kokkos::View<std::int64_t, MemSpace>(Kokkos::view_alloc(space, "ktr::rl::log_sigma_step"));
    }
    // TorchFort's: alpha 0 turns the entropy term off, unless alpha is tuned (it then starts at 0.01).
    log_alpha_ = DeviceView<float*>(Kokkos::view_alloc(space, "ktr::rl::log_alpha"), 1);
    log_alpha_grad_ = DeviceView<float*>(Kokkos::view_alloc(space, "ktr::rl::log_alpha_grad"), 1);
    Kokkos::deep_copy(space, log_alpha_, float(std::log(c.alpha > 0 ? double(c.alpha) : 0.01)));
    if (c.tune_alpha) {
      alpha_opt_ = std::make_unique<Optimizer>(c.alpha_optimizer, 1, space);
      alpha_step_ = Kokkos::View<std::int64_t, MemSpace>(Kokkos::view_alloc(space, "ktr::rl::alpha_step"));
    }
  }
  KTR_REQUIRE(c.accumulate >= 1, "grad_accumulation_steps",
              "must be at least 1, got " + std::to_string(c.accumulate));
  if (c.accumulate > 1) {
    auto sum_of = [&](std::int64_t n) {
      return DeviceView<float*>(Kokkos::view_alloc(space, "ktr::rl::grad_sum"), std::size_t(n));
    };
    for (auto const& q : critics_) critic_sums_.push_back(sum_of(q->arena().size()));
    policy_sum_ = sum_of(policy_->arena().size());
    if (log_sigma_opt_) log_sigma_sum_ = sum_of(A);
    if (alpha_opt_) alpha_sum_ = sum_of(1);
  }
  if (comm_.size() > 1) {  // every rank starts from rank 0's networks; the targets from them
    comm_.broadcast(space, policy_->arena().params());
    for (auto const& q : critics_) comm_.broadcast(space, q->arena().params());
    if (log_sigma_opt_) comm_.broadcast(space, log_sigma_);
    if (policy_target_) copy_params(space, *policy_target_, *policy_);
    for (std::size_t i = 0; i < critics_.size(); ++i) copy_params(space, *critic_targets_[i], *critics_[i]);
  }
}

OffPolicySystem::~OffPolicySystem() = default;

void OffPolicySystem::push(ExecSpace const& space, float const* s, float const* a, float const* r,
                           float const* s_next, float const* done) {
  buffer_.push(space, s, a, r, s_next, done, action_scale(), action_shift());
  states_.update(space, s, config_.n_envs, buffer_.last_refused());  // TorchFort's: s, not s'
  rewards_.update(space, r, config_.n_envs, buffer_.last_refused());
}

float OffPolicySystem::action_scale() const { return sac() ? 2.0f / (config_.a_high - config_.a_low) : 1.0f; }
float OffPolicySystem::action_shift() const {
  return sac() ? -1.0f - 2.0f * config_.a_low / (config_.a_high - config_.a_low) : 0.0f;
}

bool OffPolicySystem::ready(ExecSpace const& space) {
  if (ready_) return true;
  std::int64_t const needed = std::max(config_.min_size, buffer_.window());  // and one whole window
  if (buffer_.pushed() < needed) return false;  // cannot have stored enough yet: no read-back
  std::int64_t stored = 0;
  Kokkos::deep_copy(space, stored, Kokkos::subview(buffer_.counters(), 1));
  space.fence();
  return ready_ = stored >= needed;
}

std::int64_t OffPolicySystem::refused(ExecSpace const& space) const {
  std::int64_t n = 0;
  Kokkos::deep_copy(space, n, Kokkos::subview(buffer_.counters(), 2));
  space.fence();
  return n;
}

std::pair<float, float> OffPolicySystem::learning_rates(ExecSpace const& space) const {
  float p = 0, q = 0;
  Kokkos::deep_copy(space, p, Kokkos::subview(policy_opt_->scalars(), 0));
  Kokkos::deep_copy(space, q, Kokkos::subview(critic_opts_[0]->scalars(), 0));
  space.fence();
  return {p, q};
}

bool OffPolicySystem::advance() {
  ++updates_;  // counted from 1: no policy update at the first
  // Accumulation windows: the critics count every update, the policy its own (SAC: every update too).
  critic_window_end_ = updates_ % config_.accumulate == 0;
  policy_window_end_ = (updates_ / config_.policy_lag) % config_.accumulate == 0;
  return updates_ % config_.policy_lag == 0;  // SAC's lag is 1
}

void OffPolicySystem::train(ExecSpace const& space, std::int64_t updates, float* p_loss, float* q_loss) {
  KTR_REQUIRE(updates >= 1, "train", "asks for " + std::to_string(updates) + " updates");
  bool policy_updated = false;
  auto run_plain = [&] {
    for (std::int64_t k = 0; k < updates; ++k) {
      policy_updated = advance();
      update(space, policy_updated);
    }
  };
  // On a stream of its own (CUDA; HIP with Kokkos Kernels 4.x) the K updates are one captured program, replayed
  // by later calls of the same K and phase: what an update does on the host's side (the policy's turn, the
  // accumulation windows) depends on the update count modulo policy_lag x accumulate alone, and everything else
  // it reads (the buffer's counters, the draws, the steps) lives on the device. A collective that waits for the
  // host cannot be captured: such systems, and every other backend, run the kernels one by one.
  if (!config_.graphs || !CapturedProgram::can_capture(space) || comm_.host_synchronised()) {
    run_plain();
  } else {
    std::int64_t const period = std::int64_t(config_.policy_lag) * config_.accumulate;
    StreamIdentity const stream = stream_identity(space);
    RlProgramKey const key{updates, updates_ % period, stream};
    auto found = std::find_if(programs_.begin(), programs_.end(), [&](auto const& e) { return e.first == key; });
    if (!warm_stream_.same_stream(stream)) warm_stream_ = {0, 0, stream};
    if (found != programs_.end() && found->second->valid()) {
      found->second->replay(space);
      for (std::int64_t k = 0; k < updates; ++k) policy_updated = advance();  // the host's count of them
    } else if (found != programs_.end() || warm_stream_.updates < period) {
      // A key whose capture failed, or a stream's first calls: kernel by kernel, until every phase's code has run
      // once on this stream (making every lazily made buffer and handle before a capture).
      run_plain();
      warm_stream_.updates += updates;
    } else {
      // This K and phase's first call after the warm-up: record the program (nothing runs), the host's counters
      // put back after recording, then replay it; a failed capture keeps this key on the plain path.
      if (programs_.size() >= kMaxPrograms) programs_.erase(programs_.begin());  // the oldest goes first
      programs_.emplace_back(key, std::make_unique<CapturedProgram>());
      CapturedProgram& program = *programs_.back().second;
      std::int64_t const count = updates_;
      bool const critic_end = critic_window_end_, policy_end = policy_window_end_;
      space.fence();  // not captured: the capture must start on an idle stream
      bool const recorded = program.capture(space, run_plain);
      updates_ = count, critic_window_end_ = critic_end, policy_window_end_ = policy_end;
      if (recorded) {
        program.replay(space);
        for (std::int64_t k = 0; k < updates; ++k) policy_updated = advance();
      } else {
        run_plain();
      }
    }
  }
  if (!p_loss && !q_loss) return;
  auto h = Kokkos::create_mirror_view(losses_);
  Kokkos::deep_copy(space, h, losses_);
  space.fence();
  std::vector<double> losses = {0.0, policy_updated ? double(h(std::size_t(config_.num_critics))) : 0.0};
  for (int i = 0; i < config_.num_critics; ++i) losses[0] += h(std::size_t(i));
  if (comm_.size() > 1) {  // the ranks' mean
    comm_.sum(losses);
    for (double& v : losses) v /= comm_.size();
  }
  if (q_loss) *q_loss = float(losses[0]);
  if (p_loss) *p_loss = float(losses[1]);
}

void OffPolicySystem::update(ExecSpace const& space, bool update_policy) {
  OffPolicyConfig const& c = config_;
  std::int64_t const B = c.batch_size, S = state_dim_, A = action_dim_;
  int const nc = c.num_critics;
  Precision const fp32{};
  auto draws = draws_;
  buffer_.sample(space, stream_key(c.seed, 10), draws.data(), batch_);
  states_.sync(space, comm_);  // the ranks' merged statistics (nothing with one rank)
  rewards_.sync(space, comm_);
  normalize_batch(space);

  if (sac()) {
    if (c.tune_alpha) sac_update_alpha(space);
    sac_critic_target(space);  // a' ~ pi(s') into the target critics' input, log pi(a'|s') into logp_
  } else {
    // The target action: the target policy's, smoothed by clipped noise, clamped to the action range.
    Tensor const ap = train_noise_ ? noisy_action_.reshaped(Shape{B, A})
                                   : policy_target_->forward(space, fp32, batch_.next_state);
    if (train_noise_)
      train_noise_->act(space, *policy_target_, batch_.next_state, ap, stream_key(c.seed, 11), draws.data(), 0);
    float const* a = ap.data();
    float const* sn = batch_.next_state.data();
    float* nsa = next_state_action_.data();
    std::uint64_t const key = stream_key(c.seed, 11);
    float const sigma = train_noise_ ? 0.0f : c.sigma_train, clip = c.clip, lo = c.a_low, hi = c.a_high;
    Kokkos::parallel_for(
        "ktr::rl::target_action", Kokkos::RangePolicy<ExecSpace>(space, 0, B), KOKKOS_LAMBDA(std::int64_t b) {
          for (std::int64_t j = 0; j < S; ++j) nsa[b * (S + A) + j] = sn[b * S + j];
          std::uint64_t const base = std::uint64_t(draws(0)) * std::uint64_t(B * A) + std::uint64_t(b * A);
          for (std::int64_t j = 0; j < A; ++j) {
            float noise = sigma * standard_normal(key, base + std::uint64_t(j));
            if (clip > 0) noise = noise < -clip ? -clip : (noise > clip ? clip : noise);
            float const v = a[b * A + j] + noise;
            nsa[b * (S + A) + S + j] = v < lo ? lo : (v > hi ? hi : v);
          }
        });
  }
  // y = r + gamma^nstep (1 - d) min_i target_critic_i(s', a') (SAC: minus alpha log pi(a'|s')).
  float const* logp = sac() ? logp_.data() : nullptr;
  float const* log_alpha = sac() ? log_alpha_or_null() : nullptr;
  for (int i = 0; i < nc; ++i) {
    Tensor const q = critic_targets_[std::size_t(i)]->forward(space, fp32, next_state_action_);
    float const* qv = q.data();
    float* qmin = q_min_.data();
    float* y = y_.data();
    float const* r = batch_.reward.data();
    float const* d = batch_.done.data();
    bool const first = i == 0, last = i == nc - 1;
    float const gamma = float(std::pow(double(c.gamma), double(c.sampling.nstep)));
    Kokkos::parallel_for(
        "ktr::rl::critic_target", Kokkos::RangePolicy<ExecSpace>(space, 0, B), KOKKOS_LAMBDA(std::int64_t b) {
          float const m = first ? qv[b] : (qv[b] < qmin[b] ? qv[b] : qmin[b]);
          qmin[b] = m;
          float const entropy = log_alpha ? float(compat::exp(log_alpha[0])) * logp[b] : 0.0f;
          if (last) y[b] = r[b] + gamma * (1.0f - d[b]) * (m - entropy);
        });
  }
  // Each critic: loss_i = mean (q_i - y)^2, its gradient, its optimiser step.
  for (int i = 0; i < nc; ++i) {
    Model& critic = *critics_[std::size_t(i)];
    Tensor const q = critic.forward(space, fp32, batch_.state_action);
    float const* qv = q.data();
    float const* y = y_.data();
    float* dq = critic.dlogits().data();
    float const inv_b = 1.0f / float(B);
    float const* w = batch_.weight.data();  // null: uniform replay
    float* td = i == 0 ? td_.data() : nullptr;
    Kokkos::parallel_reduce(
        "ktr::rl::critic_loss", Kokkos::RangePolicy<ExecSpace>(space, 0, B),
        KOKKOS_LAMBDA(std::int64_t b, float& sum) {
          float const e = qv[b] - y[b], we = w ? w[b] * e : e;
          if (td) td[b] = e;
          dq[b] = 2.0f * we * inv_b;
          sum += we * e * inv_b;
        },
        Kokkos::subview(losses_, std::size_t(i)));
    critic.backward(space, fp32);
    apply(space, *critic_opts_[std::size_t(i)], critic.arena().params(), critic.arena().grads(),
          c.accumulate > 1 ? critic_sums_[std::size_t(i)] : DeviceView<float*>(), critic_steps_[std::size_t(i)],
          losses_.data() + i, critic_window_end_);
  }
  buffer_.update_priorities(space, batch_, td_.data());  // prioritized replay: critic 0's |q - y|
  if (sac()) {
    sac_update_policy(space);
    if (policy_window_end_)
      for (int i = 0; i < nc; ++i)
        polyak(space, *critic_targets_[std::size_t(i)], *critics_[std::size_t(i)], c.rho);
  } else if (update_policy) {
    // The policy's loss: -mean critic_0(s, policy(s)); its gradient reaches the policy through the critic's input.
    Model& critic = *critics_[0];
    Tensor const a = policy_->forward(space, fp32, batch_.state);
    float const* av = a.data();
    float const* st = batch_.state.data();
    float* psa = policy_state_action_.data();
    Kokkos::parallel_for(
        "ktr::rl::policy_input", Kokkos::RangePolicy<ExecSpace>(space, 0, B), KOKKOS_LAMBDA(std::int64_t b) {
          for (std::int64_t j = 0; j < S; ++j) psa[b * (S + A) + j] = st[b * S + j];
          for (std::int64_t j = 0; j < A; ++j) psa[b * (S + A) + S + j] = av[b * A + j];
        });
    Tensor const q = critic.forward(space, fp32, policy_state_action_.reshaped(Shape{B, S + A}));
    float const* qv = q.data();
    float* dq = critic.dlogits().data();
    float const inv_b = 1.0f / float(B);
    Kokkos::parallel_reduce(
        "ktr::rl::policy_loss", Kokkos::RangePolicy<ExecSpace>(space, 0, B),
        KOKKOS_LAMBDA(std::int64_t b, float& sum) {
          dq[b] = -inv_b;
          sum -= qv[b] * inv_b;
        },
        Kokkos::subview(losses_, std::size_t(nc)));
    critic.backward(space, fp32, dstate_action_);  // the critic's own gradient is overwritten, not applied
    float const* dsa = dstate_action_.data();
    float* da = policy_->dlogits().data();
    Kokkos::parallel_for(
        "ktr::rl::policy_grad", Kokkos::RangePolicy<ExecSpace>(space, 0, B), KOKKOS_LAMBDA(std::int64_t b) {
          for (std::int64_t j = 0; j < A; ++j) da[b * A + j] = dsa[b * (S + A) + S + j];
        });
    policy_->backward(space, fp32);
    apply(space, *policy_opt_, policy_->arena().params(), policy_->arena().grads(), policy_sum_, policy_step_,
          losses_.data() + nc, policy_window_end_);
    if (policy_window_end_) {  // the targets move when the policy's update is made
      for (int i = 0; i < nc; ++i)
        polyak(space, *critic_targets_[std::size_t(i)], *critics_[std::size_t(i)], c.rho);
      polyak(space, *policy_target_, *policy_, c.rho);
    }
  }
  bump(space, draws_, 0);
}

void OffPolicySystem::predict(ExecSpace const& space, Tensor const& state, Tensor const& action, bool explore) {
  std::int64_t const N = state.shape()[0], S = state_dim_, A = action_dim_;
  KTR_REQUIRE(state.size() == N * S && action.size() == N * A, "predict",
              "states (" + std::to_string(N) + ", " + std::to_string(S) + ") need actions of " +
                  std::to_string(N * A) + " values, got " + std::to_string(action.size()));
  bool const actor = explore && explore_noise_;  // any noise actor but plain space noise
  float const lo = config_.a_low, hi = config_.a_high, sigma = explore && !actor ? config_.sigma_explore : 0.0f;
  std::uint64_t const key = stream_key(config_.seed, 12);
  auto draws = draws_;
  for (std::int64_t at = 0; at < N; at += policy_->max_batch()) {
    std::int64_t const n = std::min(policy_->max_batch(), N - at);
    Tensor in(DeviceView<float*>(state.data() + at * S, std::size_t(n * S)), Shape{n, S});
    if (states_.on()) in = normalized(space, in);
    Tensor const a = actor ? noisy_action_.reshaped(Shape{n, A}) : policy_->forward(space, Precision{}, in);
    if (actor) explore_noise_->act(space, *policy_, in, a, key, draws.data() + 1, at);
    float const* av = a.data();
    float* out = action.data() + at * A;
    if (sac()) {  // tanh(mean), or tanh of a draw, onto [a_low, a_high]
      Squashed const g = squashed(a);
      bool const draw = explore;
      Kokkos::parallel_for(
          "ktr::rl::sac_predict", Kokkos::RangePolicy<ExecSpace>(space, 0, n * A), KOKKOS_LAMBDA(std::int64_t k) {
            std::int64_t const row = k / A, j = k % A;
            float u = g.mean(row, j);
            if (draw) {
              float ls = g.log_sigma(row, j);
              ls = ls < kLogSigmaMin ? kLogSigmaMin : (ls > kLogSigmaMax ? kLogSigmaMax : ls);
              u += float(compat::exp(ls)) *
                   standard_normal(key ^ mix64(std::uint64_t(draws(1))), std::uint64_t(at * A + k));
            }
            out[k] = lo + (float(compat::tanh(u)) + 1.0f) * 0.5f * (hi - lo);
          });
      continue;
    }
    Kokkos::parallel_for(
        "ktr::rl::predict", Kokkos::RangePolicy<ExecSpace>(space, 0, n * A), KOKKOS_LAMBDA(std::int64_t j) {
          float v = av[j];
          if (sigma > 0)
            v += sigma * standard_normal(key ^ mix64(std::uint64_t(draws(1))), std::uint64_t(at * A + j));
          out[j] = v < lo ? lo : (v > hi ? hi : v);
        });
  }
  if (explore) bump(space, draws_, 1);
}

void OffPolicySystem::evaluate(ExecSpace const& space, Tensor const& state, Tensor const& action,
                               Tensor const& q) {
  std::int64_t const N = state.shape()[0], S = state_dim_, A = action_dim_;
  KTR_REQUIRE(state.size() == N * S && action.size() == N * A && q.size() == N, "evaluate",
              "states (" + std::to_string(N) + ", " + std::to_string(S) + ") need actions (" + std::to_string(N) +
                  ", " + std::to_string(A) + ") and " + std::to_string(N) + " values");
  Model& critic = *critics_[0];
  for (std::int64_t at = 0; at < N; at += critic.max_batch()) {
    std::int64_t const n = std::min(critic.max_batch(), N - at);
    float const* st = state.data() + at * S;
    float const* av = action.data() + at * A;
    float* psa = policy_state_action_.data();
    float const scale = action_scale(), shift = action_shift();  // SAC's critics take [-1, 1]
    bool const norm = states_.on();
    RunningNormalizer::Apply const ns = states_.apply();
    Kokkos::parallel_for(
        "ktr::rl::evaluate_input", Kokkos::RangePolicy<ExecSpace>(space, 0, n), KOKKOS_LAMBDA(std::int64_t b) {
          for (std::int64_t j = 0; j < S; ++j) psa[b * (S + A) + j] = norm ? ns(j, st[b * S + j]) : st[b * S + j];
          for (std::int64_t j = 0; j < A; ++j) psa[b * (S + A) + S + j] = av[b * A + j] * scale + shift;
        });
    Tensor const out = critic.forward(space, Precision{}, policy_state_action_.reshaped(Shape{n, S + A}));
    Kokkos::deep_copy(space, Kokkos::subview(q.view(), std::make_pair(at, at + n)),
                      Kokkos::subview(out.view(), std::make_pair(std::int64_t(0), n)));
  }
}

void OffPolicySystem::apply(ExecSpace const& space, Optimizer const& opt, DeviceView<float*> const& params,
                            DeviceView<float*> const& grads, DeviceView<float*> const& sum,
                            Kokkos::View<std::int64_t, MemSpace> const& step, float const* loss, bool window_end) {
  if (sum.extent(0) > 0) {
    Kokkos::parallel_for(
        "ktr::rl::grad_accumulate", Kokkos::RangePolicy<ExecSpace>(space, 0, sum.extent(0)),
        KOKKOS_LAMBDA(std::size_t j) { sum(j) += grads(j); });
    if (!window_end) return;
  }
  DeviceView<float*> const g = sum.extent(0) > 0 ? sum : grads;
  if (comm_.size() > 1) {  // the ranks' mean gradient
    comm_.allreduce_sum(space, g);
    float const inv = 1.0f / float(comm_.size());
    Kokkos::parallel_for(
        "ktr::rl::grad_mean", Kokkos::RangePolicy<ExecSpace>(space, 0, g.extent(0)),
        KOKKOS_LAMBDA(std::size_t j) { g(j) *= inv; });
  }
  opt.update(space, params, g, step, loss, loss ? 1 : 0);
  if (sum.extent(0) > 0) Kokkos::deep_copy(space, sum, 0.0f);
}

Tensor OffPolicySystem::normalized(ExecSpace const& space, Tensor const& state) {
  std::int64_t const n = state.shape()[0], S = state_dim_;
  float const* in = state.data();
  float* out = normalized_state_.data();
  RunningNormalizer::Apply const ns = states_.apply();
  Kokkos::parallel_for(
      "ktr::rl::normalize_state", Kokkos::RangePolicy<ExecSpace>(space, 0, n * S),
      KOKKOS_LAMBDA(std::int64_t k) { out[k] = ns(k % S, in[k]); });
  return normalized_state_.reshaped(Shape{n, S});
}

void OffPolicySystem::normalize_batch(ExecSpace const& space) {
  if (!states_.on() && !rewards_.on()) return;
  std::int64_t const B = config_.batch_size, S = state_dim_, A = action_dim_;
  bool const by_state = states_.on(), by_reward = rewards_.on();
  RunningNormalizer::Apply const ns = states_.apply(), nr = rewards_.apply();
  float* sa = batch_.state_action.data();
  float* st = batch_.state.data();
  float* sn = batch_.next_state.data();
  float* rw = batch_.reward.data();
  Kokkos::parallel_for(
      "ktr::rl::normalize_batch", Kokkos::RangePolicy<ExecSpace>(space, 0, B), KOKKOS_LAMBDA(std::int64_t b) {
        if (by_state)
          for (std::int64_t j = 0; j < S; ++j) {
            st[b * S + j] = sa[b * (S + A) + j] = ns(j, st[b * S + j]);
            sn[b * S + j] = ns(j, sn[b * S + j]);
          }
        if (by_reward) rw[b] = nr(0, rw[b]);
      });
}

}  // namespace ktr::rl
