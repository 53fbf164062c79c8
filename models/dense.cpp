// Dense layer: gemm through backends/gemm, bias and ReLU fused into one kernel each way.
#include "backends/gemm.hpp"
#include "core/error.hpp"
#include "models/layers.hpp"

namespace ktr {

namespace impl {

void bias_act_forward(ExecSpace const& space, Matrix const& y, DeviceView<const float*> const& b, bool relu) {
  std::int64_t const rows = y.extent(0), cols = y.extent(1);
  Kokkos::parallel_for(
      "ktr::dense::bias_act", Kokkos::RangePolicy<ExecSpace>(space, 0, rows * cols),
      KOKKOS_LAMBDA(std::int64_t k) {
        std::int64_t const i = k / cols, j = k % cols;
        float const v = y(i, j) + b(j);
        y(i, j) = (relu && v < 0.0f) ? 0.0f : v;
      });
}

void act_bias_backward(ExecSpace const& space, Matrix const& dy, ConstMatrix const& y,
                       DeviceView<float*> const& db, bool relu) {
  using Team = Kokkos::TeamPolicy<ExecSpace>::member_type;
  int const rows = static_cast<int>(dy.extent(0));
  Kokkos::parallel_for(
      "ktr::dense::act_bias_backward", Kokkos::TeamPolicy<ExecSpace>(space, int(dy.extent(1)), Kokkos::AUTO),
      KOKKOS_LAMBDA(Team const& team) {
        int const j = team.league_rank();
        float total = 0.0f;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, rows),
            [&](int i, float& acc) {
              float g = dy(i, j);
              if (relu && y(i, j) <= 0.0f) g = 0.0f;
              dy(i, j) = g;
              acc += g;
            },
            total);
        Kokkos::single(Kokkos::PerTeam(team), [&] { db(j) = total; });
      });
}

}  // namespace impl

std::string Dense::describe() const { return "dense:" + std::to_string(features_) + (relu_ ? ":relu" : ""); }

Shape Dense::output_shape(Shape const& in) const { return Shape{in[0], features_}; }

std::vector<ParamSpec> Dense::param_specs(Shape const& in) const {
  std::int64_t const fan_in = in.inner();
  return {ParamSpec{"kernel", Shape{fan_in, features_}, Init::lecun_normal, fan_in},
          ParamSpec{"bias", Shape{features_}, Init::zeros, 1}};
}

void Dense::bind(std::vector<Tensor> const& params, std::vector<Tensor> const& grads) {
  w_ = params.at(0), b_ = params.at(1), dw_ = grads.at(0), db_ = grads.at(1);
}

void Dense::forward(ExecSpace const& space, Tensor const& x, Tensor const& y) {
  // (B, out) = (B, in) (in, out)
  gemm(space, false, false, 1.0f, x.matrix(), w_.matrix(), 0.0f, y.matrix());
  impl::bias_act_forward(space, y.matrix(), b_.view(), relu_);
}

void Dense::backward(ExecSpace const& space, Tensor const& x, Tensor const& y, Tensor const& dy,
                     Tensor const& dx) {
  impl::act_bias_backward(space, dy.matrix(), y.matrix(), db_.view(), relu_);
  gemm(space, true, false, 1.0f, x.matrix(), dy.matrix(), 0.0f, dw_.matrix());  // (in, out) = (B, in)^T (B, out)
  if (dx.size() > 0) gemm(space, false, true, 1.0f, dy.matrix(), w_.matrix(), 0.0f, dx.matrix());  // (B, in)
}

}  // namespace ktr
