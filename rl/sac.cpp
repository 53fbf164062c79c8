// SAC's parts of an off-policy update (see off_policy.hpp): the entropy coefficient's step, the critics' target
// with its entropy term, and the reparameterised policy step. Every sample's noise is a counter-based draw, so the
// gradient kernels draw it again instead of keeping it.
#include "sac.hpp"
#include "off_policy.hpp"
#include "random.hpp"

#include <cmath>

namespace ktr::rl {

namespace {

// a = tanh(mu + sigma eps) of each row into dest[:, S:] (its state copied into dest[:, :S]), and log pi(a|s).
void squashed_sample(ExecSpace const& space, Squashed g, std::int64_t B, std::int64_t S, float const* state,
                     float* dest, float* logp, std::uint64_t key, std::int64_t const* draw) {
  std::int64_t const A = g.A;
  Kokkos::parallel_for(
      "ktr::rl::sac_sample", Kokkos::RangePolicy<ExecSpace>(space, 0, B), KOKKOS_LAMBDA(std::int64_t b) {
        for (std::int64_t j = 0; j < S; ++j) dest[b * (S + A) + j] = state[b * S + j];
        float lp = 0.0f;
        for (std::int64_t j = 0; j < A; ++j) {
          float ls = g.log_sigma(b, j);
          ls = ls < kLogSigmaMin ? kLogSigmaMin : (ls > kLogSigmaMax ? kLogSigmaMax : ls);
          float const eps = standard_normal(
              key,
              (std::uint64_t(*draw) * std::uint64_t(B) + std::uint64_t(b)) * std::uint64_t(A) + std::uint64_t(j));
          float const u = g.mean(b, j) + float(compat::exp(ls)) * eps;
          dest[b * (S + A) + S + j] = float(compat::tanh(u));
          lp += -0.5f * eps * eps - ls - 0.91893853f - log1m_tanh2(u);
        }
        logp[b] = lp;
      });
}

// alpha (device): exp(log alpha), or 0 where the entropy term is off.
KOKKOS_INLINE_FUNCTION float alpha_of(float const* log_alpha) {
  return log_alpha ? float(compat::exp(log_alpha[0])) : 0.0f;
}

}  // namespace

Squashed OffPolicySystem::squashed(Tensor const& out) const {
  Squashed g;
  g.out = out.data();
  g.A = action_dim_;
  g.stride = config_.state_dependent_sigma ? 2 * action_dim_ : action_dim_;
  g.free_log_sigma = config_.state_dependent_sigma ? nullptr : log_sigma_.data();
  return g;
}

float const* OffPolicySystem::log_alpha_or_null() const {
  return config_.alpha > 0 || config_.tune_alpha ? log_alpha_.data() : nullptr;
}

float OffPolicySystem::alpha(ExecSpace const& space) const {
  if (!sac() || !log_alpha_or_null()) return 0.0f;
  float v = 0;
  Kokkos::deep_copy(space, v, Kokkos::subview(log_alpha_, 0));
  space.fence();
  return std::exp(v);
}

void OffPolicySystem::sac_update_alpha(ExecSpace const& space) {
  std::int64_t const B = config_.batch_size, S = state_dim_, A = action_dim_;
  Tensor const out = policy_->forward(space, Precision{}, batch_.state);
  squashed_sample(space, squashed(out), B, S, batch_.state.data(), policy_state_action_.data(), logp_.data(),
                  stream_key(config_.seed, 13), draws_.data());
  float const te = config_.target_entropy > 0 ? -float(A) : config_.target_entropy;
  float const* logp = logp_.data();
  float const inv_b = 1.0f / float(B);
  // d/d log alpha of -mean(log alpha (log pi + target entropy)), the log-probabilities held fixed.
  Kokkos::parallel_reduce(
      "ktr::rl::sac_alpha_grad", Kokkos::RangePolicy<ExecSpace>(space, 0, B),
      KOKKOS_LAMBDA(std::int64_t b, float& sum) { sum -= (logp[b] + te) * inv_b; },
      Kokkos::subview(log_alpha_grad_, 0));
  apply(space, *alpha_opt_, log_alpha_, log_alpha_grad_, alpha_sum_, alpha_step_, nullptr, policy_window_end_);
}

void OffPolicySystem::sac_critic_target(ExecSpace const& space) {
  std::int64_t const B = config_.batch_size, S = state_dim_;
  Tensor const out = policy_->forward(space, Precision{}, batch_.next_state);
  squashed_sample(space, squashed(out), B, S, batch_.next_state.data(), next_state_action_.data(), logp_.data(),
                  stream_key(config_.seed, 14), draws_.data());
}

void OffPolicySystem::sac_update_policy(ExecSpace const& space) {
  OffPolicyConfig const& c = config_;
  std::int64_t const B = c.batch_size, S = state_dim_, A = action_dim_;
  int const nc = c.num_critics;
  Precision const fp32{};
  Tensor const out = policy_->forward(space, fp32, batch_.state);
  Squashed const g = squashed(out);
  std::uint64_t const key = stream_key(c.seed, 15);
  auto draws = draws_;
  squashed_sample(space, g, B, S, batch_.state.data(), policy_state_action_.data(), logp_.data(), key,
                  draws.data());
  Tensor const sa = policy_state_action_.reshaped(Shape{B, S + A});
  // The minimum of the online critics, and which critic gave it, for each sample.
  float* qmin = q_min_.data();
  float* which = argmin_.data();
  for (int i = 0; i < nc; ++i) {
    float const* q = critics_[std::size_t(i)]->forward(space, fp32, sa).data();
    Kokkos::parallel_for(
        "ktr::rl::sac_min_critic", Kokkos::RangePolicy<ExecSpace>(space, 0, B), KOKKOS_LAMBDA(std::int64_t b) {
          if (i == 0 || q[b] < qmin[b]) qmin[b] = q[b], which[b] = float(i);
        });
  }
  float const* logp = logp_.data();
  float const* log_alpha = log_alpha_or_null();
  float const inv_b = 1.0f / float(B);
  Kokkos::parallel_reduce(
      "ktr::rl::sac_policy_loss", Kokkos::RangePolicy<ExecSpace>(space, 0, B),
      KOKKOS_LAMBDA(std::int64_t b, float& sum) { sum += (alpha_of(log_alpha) * logp[b] - qmin[b]) * inv_b; },
      Kokkos::subview(losses_, std::size_t(nc)));
  // d loss / d a: through the critic that gave each sample's minimum.
  float* da = daction_.data();
  float const* dsa = dstate_action_.data();
  for (int i = 0; i < nc; ++i) {
    Model& critic = *critics_[std::size_t(i)];
    float* dq = critic.dlogits().data();
    Kokkos::parallel_for(
        "ktr::rl::sac_critic_seed", Kokkos::RangePolicy<ExecSpace>(space, 0, B),
        KOKKOS_LAMBDA(std::int64_t b) { dq[b] = which[b] == float(i) ? -inv_b : 0.0f; });
    critic.backward(space, fp32, dstate_action_);  // the critic's own gradient is overwritten, not applied
    Kokkos::parallel_for(
        "ktr::rl::sac_action_grad", Kokkos::RangePolicy<ExecSpace>(space, 0, B), KOKKOS_LAMBDA(std::int64_t b) {
          for (std::int64_t j = 0; j < A; ++j)
            da[b * A + j] = (i == 0 ? 0.0f : da[b * A + j]) + dsa[b * (S + A) + S + j];
        });
  }
  // d loss / d mean and d loss / d log sigma of each action value (the noise drawn again from its counter):
  // u = mean + sigma eps, a = tanh(u), log pi = sum -eps^2/2 - log sigma - log(2 pi)/2 - log(1 - a^2), so
  // d log pi / du = 2a, and d loss / du = alpha/B 2a + d loss/da (1 - a^2); d u / d log sigma = sigma eps, and
  // log sigma's own term gives -alpha/B; a clamped log sigma passes no gradient.
  float* dout = policy_->dlogits().data();
  bool const dependent = c.state_dependent_sigma;
  Kokkos::parallel_for(
      "ktr::rl::sac_policy_grad", Kokkos::RangePolicy<ExecSpace>(space, 0, B), KOKKOS_LAMBDA(std::int64_t b) {
        float const alpha_b = alpha_of(log_alpha) * inv_b;
        for (std::int64_t j = 0; j < A; ++j) {
          float const ls = g.log_sigma(b, j);
          bool const inside = ls >= kLogSigmaMin && ls <= kLogSigmaMax;
          float const lsc = ls < kLogSigmaMin ? kLogSigmaMin : (ls > kLogSigmaMax ? kLogSigmaMax : ls);
          float const eps = standard_normal(
              key, (std::uint64_t(draws(0)) * std::uint64_t(B) + std::uint64_t(b)) * std::uint64_t(A) +
                       std::uint64_t(j));
          float const sigma = float(compat::exp(lsc));
          float const a = float(compat::tanh(g.mean(b, j) + sigma * eps));
          float const gu = alpha_b * 2.0f * a + da[b * A + j] * (1.0f - a * a);
          dout[b * g.stride + j] = gu;
          if (dependent) dout[b * g.stride + A + j] = inside ? gu * sigma * eps - alpha_b : 0.0f;
        }
      });
  if (!dependent) {  // the free log sigma: the same gradient, summed over the batch
    float* dls = log_sigma_grad_.data();
    Kokkos::parallel_for(
        "ktr::rl::sac_log_sigma_grad", Kokkos::RangePolicy<ExecSpace>(space, 0, A), KOKKOS_LAMBDA(std::int64_t j) {
          float const alpha_b = alpha_of(log_alpha) * inv_b;
          float const ls = g.log_sigma(0, j);
          bool const inside = ls >= kLogSigmaMin && ls <= kLogSigmaMax;
          float const lsc = ls < kLogSigmaMin ? kLogSigmaMin : (ls > kLogSigmaMax ? kLogSigmaMax : ls);
          float const sigma = float(compat::exp(lsc));
          float sum = 0.0f;
          for (std::int64_t b = 0; b < B; ++b) {
            float const eps = standard_normal(
                key, (std::uint64_t(draws(0)) * std::uint64_t(B) + std::uint64_t(b)) * std::uint64_t(A) +
                         std::uint64_t(j));
            float const a = float(compat::tanh(g.mean(b, j) + sigma * eps));
            float const gu = alpha_b * 2.0f * a + da[b * A + j] * (1.0f - a * a);
            sum += gu * sigma * eps - alpha_b;
          }
          dls[j] = inside ? sum : 0.0f;
        });
  }
  policy_->backward(space, fp32);
  apply(space, *policy_opt_, policy_->arena().params(), policy_->arena().grads(), policy_sum_, policy_step_,
        losses_.data() + nc, policy_window_end_);
  if (!dependent)
    apply(space, *log_sigma_opt_, log_sigma_, log_sigma_grad_, log_sigma_sum_, log_sigma_step_,
          losses_.data() + nc, policy_window_end_);
}

}  // namespace ktr::rl
