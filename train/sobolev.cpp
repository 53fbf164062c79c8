// Sobolev training's loss: see sobolev.hpp.
#include "sobolev.hpp"

#include "../core/error.hpp"
#include "../models/model.hpp"
#include "train_state.hpp"

namespace ktr {

int sobolev_columns(std::string const& spec, std::int64_t inputs) {
  try {
    return spec.empty() ? 1 : int(JetSpec::parse(spec, inputs).size()) + 1;
  } catch (UsageError const& e) {
    throw UsageError(std::string("derivatives: ") + e.what());
  }
}

namespace {

JetSpec spec_of(Model const& model, std::string const& spec) {
  JetSpec parsed = JetSpec::parse(spec, model.input_shape(1).inner());
  if (parsed.size() == 0) throw UsageError("the spec '" + spec + "' names no derivative");
  return parsed;
}

}  // namespace

SobolevLoss::SobolevLoss(ExecSpace const& space, Model const& model, std::string const& spec, float weight,
                         std::int64_t batch)
    : jet_(model, spec_of(model, spec), batch), weight_(weight) {
  std::int64_t const d = jet_.inputs(), m = jet_.outputs(), t = std::int64_t(jet_.spec().size());
  auto alloc = [&](char const* label) {
    return Kokkos::view_alloc(space, Kokkos::WithoutInitializing, std::string(label));
  };
  scale_ = Kokkos::View<float*, MemSpace>(alloc("ktr::sobolev::scale"), std::size_t(d));
  shift_ = Kokkos::View<float*, MemSpace>(alloc("ktr::sobolev::shift"), std::size_t(d));
  u_ = JetMatrix<float>(alloc("ktr::sobolev::u"), std::size_t(batch), std::size_t(m));
  u_seed_ = JetMatrix<float>(alloc("ktr::sobolev::u_seed"), std::size_t(batch), std::size_t(m));
  derivs_ = JetCube<float>(alloc("ktr::sobolev::derivs"), std::size_t(batch), std::size_t(m), std::size_t(t));
  derivs_seed_ =
      JetCube<float>(alloc("ktr::sobolev::derivs_seed"), std::size_t(batch), std::size_t(m), std::size_t(t));
}

void SobolevLoss::pass(ExecSpace const& space, Model const& model, InputTransform const& transform,
                       Tensor const& x, Tensor const& targets, LossOutput const& out,
                       DeviceView<float*> const& grads) {
  std::int64_t const b = x.shape()[0], d = jet_.inputs(), m = jet_.outputs(), t = std::int64_t(spec().size());
  std::int64_t const cols = t + 1;
  KTR_REQUIRE(
      b <= std::int64_t(u_.extent(0)) && x.size() == b * d && targets.size() == b * m * cols, "ktr::SobolevLoss",
      "a batch of " + std::to_string(b) + " points needs inputs (" + std::to_string(b) + ", " + std::to_string(d) +
          ") and targets (" + std::to_string(b) + ", " + std::to_string(m) + ", " + std::to_string(cols) + ")");
  // The run's input transform, one entry per input (a scalar one spread over them).
  Kokkos::View<float const*, MemSpace> scale = transform.feature_scale, shift = transform.feature_shift;
  if (!transform.per_feature()) {
    float const a = transform.scale, c = transform.shift;
    if (!(a == spread_[0] && c == spread_[1])) {  // spread again only when the transform changed, not every step
      auto s = scale_, h = shift_;
      Kokkos::parallel_for(
          "ktr::sobolev::transform", Kokkos::RangePolicy<ExecSpace>(space, 0, std::size_t(d)),
          KOKKOS_LAMBDA(std::size_t i) { s(i) = a, h(i) = c; });
      spread_[0] = a, spread_[1] = c;
    }
    scale = scale_, shift = shift_;
  }
  JetMatrix<float> const u(u_.data(), std::size_t(b), std::size_t(m));
  JetCube<float> const dv(derivs_.data(), std::size_t(b), std::size_t(m), std::size_t(t));
  jet_.forward(space, model.arena().params(), scale, shift, JetMatrix<float const>(x.data(), b, d), u, dv);

  // The loss and its seeds in one kernel: one team sums the squared errors in a fixed order (the same bits in a
  // replayed program), writing each element's seed on the way.
  bool const train = !out.accumulate;
  double const inv_v = out.reduction == Reduction::sum ? 1.0 : 1.0 / double(b * m);
  double const inv_d = out.reduction == Reduction::sum ? 1.0 : 1.0 / double(b * m * t);
  double const w = weight_;
  float const* up = u.data();
  float const* dp = dv.data();
  float const* y = targets.data();
  float* us = u_seed_.data();
  float* ds = derivs_seed_.data();
  auto loss = out.loss;
  int const index = out.index;
  using Team = Kokkos::TeamPolicy<ExecSpace>::member_type;
  Kokkos::parallel_for(
      "ktr::sobolev::loss", Kokkos::TeamPolicy<ExecSpace>(space, 1, Kokkos::AUTO),
      KOKKOS_LAMBDA(Team const& team) {
        double sv = 0, sd = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, b * m),
            [&](std::int64_t i, double& acc) {
              double const e = double(up[i]) - double(y[i * cols]);
              acc += e * e;
              if (train) us[i] = float(2.0 * e * inv_v);
            },
            sv);
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, b * m * t),
            [&](std::int64_t i, double& acc) {
              std::int64_t const nk = i / t, c = i - nk * t;
              double const e = double(dp[i]) - double(y[nk * cols + 1 + c]);
              acc += e * e;
              if (train) ds[i] = float(w * 2.0 * e * inv_d);
            },
            sd);
        Kokkos::single(Kokkos::PerTeam(team), [&] {
          if (train) {
            loss(index) = float(sv * inv_v + w * sd * inv_d);
          } else {
            loss(index) += float(sv);
            loss(index + 1) += float(sd);
          }
        });
      });
  if (!train) return;
  Kokkos::deep_copy(space, grads, 0.0f);  // the jet's reverse pass adds
  jet_.backward(space, model.arena().params(), JetMatrix<float const>(us, b, m), JetCube<float const>(ds, b, m, t),
                grads, JetMatrix<float>());
}

void train_on_derivatives(ExecSpace const& space, TrainState& state, Model const& model, std::string const& spec,
                          float weight) {
  try {
    state.sobolev = std::make_shared<SobolevLoss>(space, model, spec, weight, state.micro_batch);
  } catch (UsageError const& e) {  // a token or a layer the jet refuses: named as the setting's
    throw UsageError(std::string("derivatives: ") + e.what());
  }
  state.values = Tensor(space, "ktr::train::values",
                        Shape{state.micro_batch, model.output_width() * state.sobolev->columns()});
}

}  // namespace ktr
