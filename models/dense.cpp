// Dense layer: gemm through backends/gemm, bias and activation fused into one kernel each way (forward: bias +
// activation; backward: activation gradient + bias gradient, so a host step has no bias-gradient gemm; a GPU sums
// the bias gradient with one gemv-shaped gemm). A layer with few outputs on a host (a classifier head) runs the
// narrow kernels of dense_narrow.hpp instead of its gemms.
#include "../backends/gemm.hpp"
#include "../core/bf16.hpp"
#include "../core/error.hpp"
#include "../core/ops.hpp"
#include "bias_act.hpp"
#include "dense_narrow.hpp"
#include "layers.hpp"
#include "registry.hpp"

namespace ktr {

namespace impl {

namespace {

template <class A>
void bias_act_forward(ExecSpace const& space, Matrix const& y, DeviceView<const float*> const& b, float* z) {
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
            if (A::needs_input) z[i * cols + j] = v;
            r[j] = A::forward(v);
          }
        });
  } else {
    Kokkos::parallel_for(
        "ktr::dense::bias_act", MDRange<2>(space, {0, 0}, {rows, cols}),
        KOKKOS_LAMBDA(std::int64_t i, std::int64_t j) {
          float const v = out[i * cols + j] + bias[j];
          if (A::needs_input) z[i * cols + j] = v;
          out[i * cols + j] = A::forward(v);
        });
  }
}

template <class A>
void act_bias_backward(ExecSpace const& space, Matrix const& dy, ConstMatrix const& y, float const* z,
                       DeviceView<float*> const& db, float* ones, std::uint16_t* dz16) {
  std::int64_t const rows = std::int64_t(dy.extent(0)), cols = std::int64_t(dy.extent(1));
  float* KOKKOS_RESTRICT const g = dy.data();
  float const* KOKKOS_RESTRICT const out = y.data();
  if constexpr (device_is_host) {
    // A block of columns per thread, summed down the rows in order: the column loop vectorises. Where there are
    // fewer blocks than threads (a convolution's 16 or 32 features over every pixel), the activation gradient
    // runs first over chunks of the elements on every thread, then the sums (the same sums in the same order:
    // the same bits), rather than all on one thread.
    constexpr std::int64_t block = 64;
    std::int64_t const blocks = (cols + block - 1) / block;
    float* const sum = db.data();
    constexpr bool identity = std::is_same_v<A, Act<Activation::identity>>;
    if (!identity && blocks < std::int64_t(space.concurrency()) && rows >= 2 * block) {
      float const* const zs = A::needs_input ? z : out;
      chunked_for(
          "ktr::dense::act_backward", space, rows * cols, KOKKOS_LAMBDA(std::int64_t begin, std::int64_t end) {
            if (dz16 == nullptr) {
              for (std::int64_t e = begin; e < end; ++e) g[e] = A::backward(g[e], zs[e], out[e]);
            } else {
              for (std::int64_t e = begin; e < end; ++e) {
                float const v = A::backward(g[e], zs[e], out[e]);
                g[e] = v, dz16[e] = bf16_bits(v);
              }
            }
          });
      Kokkos::parallel_for(
          "ktr::dense::bias_gradient",
          Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, blocks),
          KOKKOS_LAMBDA(std::int64_t blk) {
            std::int64_t const j0 = blk * block, n = j0 + block < cols ? block : cols - j0;
            float acc[block];
            for (std::int64_t j = 0; j < n; ++j) acc[j] = 0.0f;
            for (std::int64_t i = 0; i < rows; ++i)
              for (std::int64_t j = 0; j < n; ++j) acc[j] += g[i * cols + j0 + j];
            for (std::int64_t j = 0; j < n; ++j) sum[j0 + j] = acc[j];
          });
      return;
    }
    Kokkos::parallel_for(
        "ktr::dense::act_bias_backward",
        Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, blocks),
        KOKKOS_LAMBDA(std::int64_t blk) {
          std::int64_t const j0 = blk * block, n = j0 + block < cols ? block : cols - j0;
          float acc[block];
          for (std::int64_t j = 0; j < n; ++j) acc[j] = 0.0f;
          for (std::int64_t i = 0; i < rows; ++i) {
            float* KOKKOS_RESTRICT const gi = g + i * cols + j0;
            float const* KOKKOS_RESTRICT const oi = out + i * cols + j0;
            float const* KOKKOS_RESTRICT const zi = A::needs_input ? z + i * cols + j0 : oi;
            for (std::int64_t j = 0; j < n; ++j) {
              float const v = A::backward(gi[j], zi[j], oi[j]);
              gi[j] = v;
              acc[j] += v;
            }
            if (dz16 != nullptr)
              for (std::int64_t j = 0; j < n; ++j) dz16[i * cols + j0 + j] = bf16_bits(gi[j]);
          }
          for (std::int64_t j = 0; j < n; ++j) sum[j0 + j] = acc[j];
        });
  } else {
    // One thread per element (neighbouring threads, neighbouring floats); the first column's threads also write
    // the ones vector, so the bias gradient below needs no launch of its own to prepare it.
    float const* const zs = A::needs_input ? z : out;
    Kokkos::parallel_for(
        "ktr::dense::act_backward",
        Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, rows * cols),
        KOKKOS_LAMBDA(std::int64_t e) {
          g[e] = A::backward(g[e], zs[e], out[e]);
          if (e % cols == 0) ones[e / cols] = 1.0f;
        });
    column_sums(space, ConstMatrix(g, rows, cols), ones, db.data());
  }
}

}  // namespace

void bias_act_forward(ExecSpace const& space, Matrix const& y, DeviceView<const float*> const& b, Activation act,
                      float* z) {
  KTR_REQUIRE(z != nullptr || !activation_needs_input(act), "ktr::dense::bias_act",
              std::string(activation_name(act)) + " needs somewhere to keep its input");
  with_activation(act, [&](auto a) { bias_act_forward<decltype(a)>(space, y, b, z); });
}

void act_bias_backward(ExecSpace const& space, Matrix const& dy, ConstMatrix const& y, float const* z,
                       DeviceView<float*> const& db, Activation act, float* ones, std::uint16_t* dz16) {
  KTR_REQUIRE(z != nullptr || !activation_needs_input(act), "ktr::dense::act_bias_backward",
              std::string(activation_name(act)) + " needs its input");
  KTR_REQUIRE(dz16 == nullptr || device_is_host, "ktr::dense::act_bias_backward",
              "dz's bf16 copy is written on host builds only");
  with_activation(act, [&](auto a) { act_bias_backward<decltype(a)>(space, dy, y, z, db, ones, dz16); });
}

}  // namespace impl

std::string KernelBiasLayer::activation_suffix() const {
  return act_ == Activation::identity ? std::string() : ":" + std::string(activation_name(act_));
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

// Scratch: [the transposed kernel (narrow) or the ones vector (GPUs) | z (B, N) where the activation needs it].
std::int64_t Dense::kernel_scratch(Shape const& in) const {
  return impl::dense_narrow(features_) ? impl::dense_narrow_scratch(in.inner(), features_)
                                       : impl::act_bias_backward_scratch(in[0]);
}

std::int64_t Dense::scratch_size(Shape const& in) const {
  return kernel_scratch(in) + (activation_needs_input(act_) ? in[0] * features_ : 0);
}

float* Dense::saved_input(Shape const& in) const {
  return activation_needs_input(act_) ? scratch_.data() + kernel_scratch(in) : nullptr;
}

void Dense::forward(ExecSpace const& space, Precision const& precision, Tensor const& x, Tensor const& y) {
  std::int64_t const batch = x.shape()[0], in = x.shape().inner();
  if (impl::dense_narrow(features_)) {  // few outputs on a host: the kernel transposed once, no gemm
    impl::dense_narrow_transpose(space, operand_of(precision), in, features_, w_.data(), scratch_.data());
    impl::dense_narrow_forward(space, operand_of(precision), batch, in, features_, x.data(), scratch_.data(),
                               b_.data(), act_, saved_input(x.shape()), y.data());
    return;
  }
  // (B, out) = (B, in) (in, out)
  gemm(space, precision, false, false, 1.0f, x.matrix(), w_.matrix(), 0.0f, y.matrix());
  impl::bias_act_forward(space, y.matrix(), b_.view(), act_, saved_input(x.shape()));
}

void Dense::backward(ExecSpace const& space, Precision const& precision, Tensor const& x, Tensor const& y,
                     Tensor const& dy, Tensor const& dx) {
  impl::act_bias_backward(space, dy.matrix(), y.matrix(), saved_input(x.shape()), db_.view(), act_,
                          scratch_.data());
  if (impl::dense_narrow(features_)) {  // the transposed kernel is still in scratch from the forward
    std::int64_t const batch = x.shape()[0], in = x.shape().inner();
    impl::dense_narrow_kernel_grad(space, operand_of(precision), batch, in, features_, x.data(), dy.data(),
                                   dw_.data());
    if (dx.size() > 0)
      impl::dense_narrow_input_grad(space, operand_of(precision), batch, in, features_, dy.data(), scratch_.data(),
                                    dx.data());
    return;
  }
  gemm(space, precision, true, false, 1.0f, x.matrix(), dy.matrix(), 0.0f,
       dw_.matrix());  // (in, out) = (B, in)^T (B, out)
  if (dx.size() > 0)
    gemm(space, precision, false, true, 1.0f, dy.matrix(), w_.matrix(), 0.0f, dx.matrix());  // (B, in)
}

namespace {

// "dense:N[:ACT]"
bool dense_accepts(std::string const& head) { return head == "dense"; }

std::unique_ptr<Layer> make_dense(LayerToken const& t) {
  t.expect_parts(2, 3, "dense:N[:ACT]");
  Activation act = Activation::identity;
  if (t.parts.size() == 3) {
    auto a = parse_activation(t.parts[2]);
    if (!a) t.fail("unknown activation '" + t.parts[2] + "' (" + activation_names() + ")");
    act = *a;
  }
  return std::make_unique<Dense>(t.extent(1, "feature count"), act);
}

}  // namespace

LayerKind const& dense_kind() {
  static LayerKind const kind{"dense:N[:ACT]", dense_accepts, make_dense,
                              "a fully connected layer of N outputs (inputs of any shape are flattened per "
                              "sample) with a fused activation; Flax: `nn.Dense`",
                              "in=28x28x1 flatten dense:128:relu dense:10"};
  return kind;
}

}  // namespace ktr
