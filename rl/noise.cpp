#include "noise.hpp"

#include "../core/error.hpp"
#include "random.hpp"

#include <cctype>
#include <cmath>

namespace ktr::rl {

NoiseKind parse_noise_kind(std::string const& name) {
  std::string n = name;
  for (auto& c : n) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (n == "space_noise") return NoiseKind::space;
  if (n == "space_noise_ou") return NoiseKind::space_ou;
  if (n == "parameter_noise") return NoiseKind::parameter;
  if (n == "parameter_noise_ou") return NoiseKind::parameter_ou;
  throw Error("'" + name +
              "' is not a noise actor (space_noise, space_noise_ou, parameter_noise, parameter_noise_ou)");
}

namespace {

bool ou(NoiseKind k) { return k == NoiseKind::space_ou || k == NoiseKind::parameter_ou; }

// dst[0] = sigma times the biased standard deviation of x[0, n), on the device (two passes: the mean, then the
// squared deviations from it).
void scaled_std(ExecSpace const& space, float const* x, std::int64_t n, float sigma, float* dst) {
  Kokkos::View<float[2], MemSpace> sums(Kokkos::view_alloc(space, "ktr::rl::noise_sums"));
  Kokkos::parallel_reduce(
      "ktr::rl::noise_mean", Kokkos::RangePolicy<ExecSpace>(space, 0, n),
      KOKKOS_LAMBDA(std::int64_t i, float& s) { s += x[i]; }, Kokkos::subview(sums, 0));
  Kokkos::parallel_reduce(
      "ktr::rl::noise_var", Kokkos::RangePolicy<ExecSpace>(space, 0, n),
      KOKKOS_LAMBDA(std::int64_t i, float& s) {
        float const d = x[i] - sums(0) / float(n);
        s += d * d;
      },
      Kokkos::subview(sums, 1));
  Kokkos::parallel_for(
      "ktr::rl::noise_scale", Kokkos::RangePolicy<ExecSpace>(space, 0, 1),
      KOKKOS_LAMBDA(int) { dst[0] = sigma * float(compat::sqrt(sums(1) / float(n))); });
}

// One noise value: z scaled, through the OU state where there is one, clipped.
struct Draw {
  bool ou;
  float dt, sqrt_dt, xi, clip;
  float* state;
  Kokkos::View<std::int64_t, MemSpace> started;

  KOKKOS_INLINE_FUNCTION float operator()(std::int64_t i, float sigma, float z) const {
    float v = sigma * z;
    if (ou) {
      v = started() != 0 ? state[i] + xi * (0.0f - state[i]) * dt + sigma * sqrt_dt * z : v;
      state[i] = v;
    }
    if (clip > 0) v = v < -clip ? -clip : (v > clip ? clip : v);
    return v;
  }
};

}  // namespace

NoiseActor::NoiseActor(ExecSpace const& space, NoiseConfig const& config, std::string const& policy,
                       std::int64_t rows, std::int64_t A)
    : config_(config), A_(A) {
  KTR_REQUIRE(config.sigma >= 0 && config.clip >= 0 && std::isfinite(config.sigma), "actor",
              "sigma and clip must be finite and not negative");
  KTR_REQUIRE(!ou(config.kind) || (config.dt > 0 && std::isfinite(config.dt) && std::isfinite(config.xi)),
              "actor.parameters.dt", "an Ornstein-Uhlenbeck actor needs a finite time step dt > 0");
  bool const parameter = config.kind == NoiseKind::parameter || config.kind == NoiseKind::parameter_ou;
  std::int64_t scales = 1, states = rows * A;
  if (parameter) {
    noisy_ = std::make_unique<Model>(space, policy, rows);
    scales = std::int64_t(noisy_->arena().count());
    states = noisy_->arena().size();
  }
  scale_ = DeviceView<float*>(Kokkos::view_alloc(space, "ktr::rl::noise_scale"), std::size_t(scales));
  Kokkos::deep_copy(space, scale_, config.sigma);
  if (ou(config.kind))
    state_ = DeviceView<float*>(Kokkos::view_alloc(space, "ktr::rl::noise_state"), std::size_t(states));
  started_ = Kokkos::View<std::int64_t, MemSpace>(Kokkos::view_alloc(space, "ktr::rl::noise_started"));
}

NoiseActor::~NoiseActor() = default;

std::vector<DeviceView<float*>> NoiseActor::saved_buffers() const {
  if (!ou(config_.kind)) return {};
  return {state_};
}

std::vector<Kokkos::View<std::int64_t, MemSpace>> NoiseActor::saved_steps() const {
  if (!ou(config_.kind)) return {};
  return {started_};
}

void NoiseActor::act(ExecSpace const& space, Model& policy, Tensor const& state, Tensor const& out,
                     std::uint64_t key, std::int64_t const* draw, std::int64_t offset) {
  std::int64_t const n = state.shape()[0];
  if (noisy_) {
    perturb(space, policy, key, draw);
    Tensor const a = noisy_->forward(space, Precision{}, state);
    Kokkos::deep_copy(space, Kokkos::subview(out.view(), std::make_pair(std::int64_t(0), n * A_)),
                      Kokkos::subview(a.view(), std::make_pair(std::int64_t(0), n * A_)));
  } else {
    add_space_noise(space, policy.forward(space, Precision{}, state), out, key, draw, offset);
  }
  if (ou(config_.kind)) {  // a kernel, not a fill from the host's stack, which a captured program cannot replay
    auto started = started_;
    Kokkos::parallel_for(
        "ktr::rl::noise_started", Kokkos::RangePolicy<ExecSpace>(space, 0, 1),
        KOKKOS_LAMBDA(int) { started() = 1; });
  }
}

void NoiseActor::add_space_noise(ExecSpace const& space, Tensor const& action, Tensor const& out,
                                 std::uint64_t key, std::int64_t const* draw, std::int64_t offset) {
  std::int64_t const n = action.shape()[0] * A_;
  float const* a = action.data();
  float* o = out.data();
  float* scale = scale_.data();
  if (config_.adaptive) scaled_std(space, a, n, config_.sigma, scale);
  Draw const noise{ou(config_.kind), config_.dt, float(std::sqrt(double(config_.dt))), config_.xi, config_.clip,
                   state_.data(),    started_};
  std::int64_t const first = offset * A_;
  Kokkos::parallel_for(
      "ktr::rl::space_noise", Kokkos::RangePolicy<ExecSpace>(space, 0, n), KOKKOS_LAMBDA(std::int64_t k) {
        float const z = standard_normal(key ^ mix64(std::uint64_t(*draw)), std::uint64_t(first + k));
        o[k] = a[k] + noise(first + k, scale[0], z);
      });
}

void NoiseActor::perturb(ExecSpace const& space, Model const& policy, std::uint64_t key,
                         std::int64_t const* draw) {
  Arena const& from = policy.arena();
  Arena const& to = noisy_->arena();
  Draw const noise{ou(config_.kind), config_.dt, float(std::sqrt(double(config_.dt))), config_.xi, config_.clip,
                   state_.data(),    started_};
  float* scale = scale_.data();
  for (std::size_t i = 0; i < from.count(); ++i) {
    Tensor const p = from.param(i), q = to.param(i);
    std::int64_t const at = p.data() - from.params().data();  // the parameter's place in the flat arena
    float const* pv = p.data();
    float* qv = q.data();
    if (config_.adaptive) scaled_std(space, pv, p.size(), config_.sigma, scale + i);
    Kokkos::parallel_for(
        "ktr::rl::parameter_noise", Kokkos::RangePolicy<ExecSpace>(space, 0, p.size()),
        KOKKOS_LAMBDA(std::int64_t j) {
          float const z = standard_normal(key ^ mix64(std::uint64_t(*draw)), std::uint64_t(at + j));
          qv[j] = pv[j] + noise(at + j, scale[i], z);
        });
  }
}

}  // namespace ktr::rl
