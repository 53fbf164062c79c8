// Dense layer: gemm through backends/gemm, bias and ReLU fused into one kernel each way (forward: bias + ReLU;
// backward: ReLU gradient + bias gradient, so a host step has no bias-gradient gemm; a GPU sums the bias gradient
// with one gemv-shaped gemm). A layer with few outputs on a
// host (a classifier head) runs the narrow kernels of dense_narrow.hpp instead of its gemms.
#include "../backends/gemm.hpp"
#include "../core/error.hpp"
#include "../core/ops.hpp"
#include "dense_narrow.hpp"
#include "layers.hpp"

namespace ktr {

namespace impl {

void bias_act_forward(ExecSpace const& space, Matrix const& y, DeviceView<const float*> const& b, bool relu) {
  std::int64_t const rows = std::int64_t(y.extent(0)), cols = std::int64_t(y.extent(1));
  float* KOKKOS_RESTRICT const out = y.data();
  float const* KOKKOS_RESTRICT const bias = b.data();
  if constexpr (device_is_host) {  // a row per iteration: the column loop vectorises
    Kokkos::parallel_for(
        "ktr::dense::bias_act", Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, rows),
        KOKKOS_LAMBDA(std::int64_t i) {
          float* KOKKOS_RESTRICT const r = out + i * cols;
          for (std::int64_t j = 0; j < cols; ++j) {
            float const v = r[j] + bias[j];
            r[j] = (relu && v < 0.0f) ? 0.0f : v;
          }
        });
  } else {
    Kokkos::parallel_for(
        "ktr::dense::bias_act", MDRange<2>(space, {0, 0}, {rows, cols}),
        KOKKOS_LAMBDA(std::int64_t i, std::int64_t j) {
          float const v = out[i * cols + j] + bias[j];
          out[i * cols + j] = (relu && v < 0.0f) ? 0.0f : v;
        });
  }
}

void act_bias_backward(ExecSpace const& space, Matrix const& dy, ConstMatrix const& y,
                       DeviceView<float*> const& db, bool relu, float* ones) {
  std::int64_t const rows = std::int64_t(dy.extent(0)), cols = std::int64_t(dy.extent(1));
  float* KOKKOS_RESTRICT const g = dy.data();
  float const* KOKKOS_RESTRICT const out = y.data();
  if constexpr (device_is_host) {
    // A block of columns per thread, summed down the rows in order: the column loop vectorises.
    constexpr std::int64_t block = 64;
    float* const sum = db.data();
    Kokkos::parallel_for(
        "ktr::dense::act_bias_backward",
        Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, (cols + block - 1) / block),
        KOKKOS_LAMBDA(std::int64_t blk) {
          std::int64_t const j0 = blk * block, n = j0 + block < cols ? block : cols - j0;
          float acc[block];
          for (std::int64_t j = 0; j < n; ++j) acc[j] = 0.0f;
          for (std::int64_t i = 0; i < rows; ++i) {
            float* KOKKOS_RESTRICT const gi = g + i * cols + j0;
            float const* KOKKOS_RESTRICT const oi = out + i * cols + j0;
            for (std::int64_t j = 0; j < n; ++j) {
              float const v = (relu && !(oi[j] > 0.0f)) ? 0.0f : gi[j];
              gi[j] = v;
              acc[j] += v;
            }
          }
          for (std::int64_t j = 0; j < n; ++j) sum[j0 + j] = acc[j];
        });
  } else {
    // One thread per element (neighbouring threads, neighbouring floats); the first column's threads also write
    // the ones vector, so the bias gradient below needs no launch of its own to prepare it.
    Kokkos::parallel_for(
        "ktr::dense::act_backward",
        Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, rows * cols),
        KOKKOS_LAMBDA(std::int64_t e) {
          if (relu && !(out[e] > 0.0f)) g[e] = 0.0f;
          if (e % cols == 0) ones[e / cols] = 1.0f;
        });
    gemm(space, false, false, 1.0f, ConstMatrix(ones, 1, rows), ConstMatrix(g, rows, cols), 0.0f,
         Matrix(db.data(), 1, cols));
  }
}

}  // namespace impl

std::string KernelBiasLayer::describe() const {
  return kind_ + (":" + std::to_string(features_)) + (relu_ ? ":relu" : "");
}

void KernelBiasLayer::bind(std::vector<Tensor> const& params, std::vector<Tensor> const& grads) {
  w_ = params.at(0), b_ = params.at(1), dw_ = grads.at(0), db_ = grads.at(1);
}

StandaloneLayer::StandaloneLayer(Layer& layer, Shape const& in)
    : arena(layer.param_specs(in)), scratch("ktr::layer::scratch", std::size_t(layer.scratch_size(in)) + 1) {
  std::vector<Tensor> params, grads;
  for (std::size_t i = 0; i < arena.count(); ++i) params.push_back(arena.param(i)), grads.push_back(arena.grad(i));
  layer.bind(params, grads);
  layer.set_scratch(scratch);
}

Shape Dense::output_shape(Shape const& in) const { return Shape{in[0], features_}; }

std::vector<ParamSpec> Dense::param_specs(Shape const& in) const {
  std::int64_t const fan_in = in.inner();
  return {ParamSpec{"kernel", Shape{fan_in, features_}, Init::lecun_normal, fan_in},
          ParamSpec{"bias", Shape{features_}, Init::zeros, 1}};
}

std::int64_t Dense::scratch_size(Shape const& in) const {
  return impl::dense_narrow(features_) ? impl::dense_narrow_scratch(in.inner(), features_)
                                       : impl::act_bias_backward_scratch(in[0]);
}

void Dense::forward(ExecSpace const& space, Tensor const& x, Tensor const& y) {
  std::int64_t const batch = x.shape()[0], in = x.shape().inner();
  if (impl::dense_narrow(features_)) {  // few outputs on a host: the kernel transposed once, no gemm
    impl::dense_narrow_transpose(space, in, features_, w_.data(), scratch_.data());
    impl::dense_narrow_forward(space, batch, in, features_, x.data(), scratch_.data(), b_.data(), relu_, y.data());
    return;
  }
  // (B, out) = (B, in) (in, out)
  gemm(space, false, false, 1.0f, x.matrix(), w_.matrix(), 0.0f, y.matrix());
  impl::bias_act_forward(space, y.matrix(), b_.view(), relu_);
}

void Dense::backward(ExecSpace const& space, Tensor const& x, Tensor const& y, Tensor const& dy,
                     Tensor const& dx) {
  impl::act_bias_backward(space, dy.matrix(), y.matrix(), db_.view(), relu_, scratch_.data());
  if (impl::dense_narrow(features_)) {  // the transposed kernel is still in scratch from the forward
    std::int64_t const batch = x.shape()[0], in = x.shape().inner();
    impl::dense_narrow_kernel_grad(space, batch, in, features_, x.data(), dy.data(), dw_.data());
    if (dx.size() > 0)
      impl::dense_narrow_input_grad(space, batch, in, features_, dy.data(), scratch_.data(), dx.data());
    return;
  }
  gemm(space, true, false, 1.0f, x.matrix(), dy.matrix(), 0.0f, dw_.matrix());  // (in, out) = (B, in)^T (B, out)
  if (dx.size() > 0) gemm(space, false, true, 1.0f, dy.matrix(), w_.matrix(), 0.0f, dx.matrix());  // (B, in)
}

}  // namespace ktr
