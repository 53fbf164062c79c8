// Dense layer: gemm through backends/gemm, bias and ReLU fused into one kernel each way.
#include "../backends/gemm.hpp"
#include "../core/error.hpp"
#include "../core/ops.hpp"
#include "layers.hpp"

namespace ktr {

namespace impl {

void bias_act_forward(ExecSpace const& space, Matrix const& y, DeviceView<const float*> const& b, bool relu) {
  Kokkos::parallel_for(
      "ktr::dense::bias_act", MDRange<2>(space, {0, 0}, {std::int64_t(y.extent(0)), std::int64_t(y.extent(1))}),
      KOKKOS_LAMBDA(std::int64_t i, std::int64_t j) {
        float const v = y(i, j) + b(j);
        y(i, j) = (relu && v < 0.0f) ? 0.0f : v;
      });
}

void act_bias_backward(ExecSpace const& space, Matrix const& dy, ConstMatrix const& y,
                       DeviceView<float*> const& db, DeviceView<const float*> const& ones, bool relu) {
  if (relu) {  // element-wise on contiguous matrices: a flat loop
    float* KOKKOS_RESTRICT const g = dy.data();
    float const* KOKKOS_RESTRICT const out = y.data();
    chunked_for(
        "ktr::dense::relu_backward", space, std::int64_t(dy.size()),
        KOKKOS_LAMBDA(std::int64_t begin, std::int64_t end) {
          for (std::int64_t k = begin; k < end; ++k) g[k] = out[k] > 0.0f ? g[k] : 0.0f;
        });
  }
  // db (1, cols) = ones (1, rows) dz (rows, cols): a column sum, as a gemm so it runs at BLAS speed.
  KTR_REQUIRE(ones.extent(0) >= dy.extent(0), "ktr::act_bias_backward", "ones buffer too short");
  ConstMatrix const ones_row(ones.data(), 1, dy.extent(0));
  Matrix const db_row(db.data(), 1, dy.extent(1));
  gemm(space, false, false, 1.0f, ones_row, dy, 0.0f, db_row);
}

}  // namespace impl

std::string KernelBiasLayer::describe() const {
  return kind_ + (":" + std::to_string(features_)) + (relu_ ? ":relu" : "");
}

void KernelBiasLayer::bind(std::vector<Tensor> const& params, std::vector<Tensor> const& grads) {
  w_ = params.at(0), b_ = params.at(1), dw_ = grads.at(0), db_ = grads.at(1);
}

StandaloneLayer::StandaloneLayer(Layer& layer, Shape const& in)
    : arena(layer.param_specs(in)),
      scratch("ktr::layer::scratch", std::size_t(layer.scratch_size(in)) + 1),
      ones("ktr::layer::ones", std::size_t(layer.ones_size(in)) + 1) {
  std::vector<Tensor> params, grads;
  for (std::size_t i = 0; i < arena.count(); ++i) params.push_back(arena.param(i)), grads.push_back(arena.grad(i));
  layer.bind(params, grads);
  layer.set_scratch(scratch);
  Kokkos::deep_copy(ones, 1.0f);
  layer.set_ones(ones);
}

Shape Dense::output_shape(Shape const& in) const { return Shape{in[0], features_}; }

std::vector<ParamSpec> Dense::param_specs(Shape const& in) const {
  std::int64_t const fan_in = in.inner();
  return {ParamSpec{"kernel", Shape{fan_in, features_}, Init::lecun_normal, fan_in},
          ParamSpec{"bias", Shape{features_}, Init::zeros, 1}};
}

void Dense::forward(ExecSpace const& space, Tensor const& x, Tensor const& y) {
  // (B, out) = (B, in) (in, out)
  gemm(space, false, false, 1.0f, x.matrix(), w_.matrix(), 0.0f, y.matrix());
  impl::bias_act_forward(space, y.matrix(), b_.view(), relu_);
}

void Dense::backward(ExecSpace const& space, Tensor const& x, Tensor const& y, Tensor const& dy,
                     Tensor const& dx) {
  impl::act_bias_backward(space, dy.matrix(), y.matrix(), db_.view(), ones_, relu_);
  gemm(space, true, false, 1.0f, x.matrix(), dy.matrix(), 0.0f, dw_.matrix());  // (in, out) = (B, in)^T (B, out)
  if (dx.size() > 0) gemm(space, false, true, 1.0f, dy.matrix(), w_.matrix(), 0.0f, dx.matrix());  // (B, in)
}

}  // namespace ktr
