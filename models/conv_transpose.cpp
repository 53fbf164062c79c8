// Transposed convolution, kernel 2, stride 2 ("convT2x2:N[:ACT]"): (B, H, W, C) -> (B, 2H, 2W, N), as Flax's
// nn.ConvTranspose(N, (2, 2), strides=(2, 2)) (module ConvTranspose, kernel (2, 2, C, N)), which does not flip
// its kernel back: y[b, 2i + a, 2j + c, n] = bias[n] + sum_k x[b, i, j, k] W[1 - a, 1 - c, k, n].
//
// Every input pixel feeds its own 2x2 block of outputs, so the layer is one gemm: T (BHW, 4N) = x (BHW, C) Wt
// (C, 4N), where Wt holds the four taps side by side; T's rows are then scattered into their blocks and the bias
// and activation applied over y seen as (4BHW, N). Backward: the activation's derivative and the bias gradient
// over dy as it lies, dy gathered into T's layout, dWt = x^T dT and dx = dT Wt^T (one gemm each).
#include "../backends/gemm.hpp"
#include "../core/error.hpp"
#include "../core/ops.hpp"
#include "bias_act.hpp"
#include "layers.hpp"
#include "registry.hpp"

namespace ktr {

namespace {

// Tap t = 2a + c of the block: output (2i + a, 2j + c) reads kernel element (1 - a, 1 - c).
KOKKOS_INLINE_FUNCTION std::int64_t kernel_tap(std::int64_t t) { return 3 - t; }

// T's rows into their 2x2 blocks of y (to_blocks), or back.
void scatter(ExecSpace const& space, Shape const& in, std::int64_t N, float* t, float* y, bool to_blocks) {
  std::int64_t const H = in[1], W = in[2];
  for_pixels(
      to_blocks ? "ktr::conv_transpose::to_blocks" : "ktr::conv_transpose::from_blocks", space, in[0], H, W,
      KOKKOS_LAMBDA(std::int64_t b, std::int64_t i, std::int64_t j) {
        for (std::int64_t tap = 0; tap < 4; ++tap) {
          float* row = t + (((b * H + i) * W + j) * 4 + tap) * N;
          float* block = y + ((b * 2 * H + 2 * i + tap / 2) * 2 * W + 2 * j + tap % 2) * N;
          if (to_blocks)
            for (std::int64_t n = 0; n < N; ++n) block[n] = row[n];
          else
            for (std::int64_t n = 0; n < N; ++n) row[n] = block[n];
        }
      });
}

class ConvTranspose2 : public KernelBiasLayer {
 public:
  using KernelBiasLayer::KernelBiasLayer;
  std::string describe() const override { return "convT2x2:" + std::to_string(features_) + activation_suffix(); }
  char const* module() const override { return "ConvTranspose"; }
  Shape output_shape(Shape const& in) const override {
    KTR_REQUIRE(in.rank == 4, "model description",
                "'" + describe() + "' needs an image input (H, W, C), got " + in.str());
    return Shape{in[0], 2 * in[1], 2 * in[2], features_};
  }
  std::vector<ParamSpec> param_specs(Shape const& in) const override {
    return {ParamSpec{"kernel", Shape{2, 2, in[3], features_}, Init::lecun_normal, 4 * in[3]},
            ParamSpec{"bias", Shape{features_}, Init::zeros, 1}};
  }
  double forward_flops(Shape const& in) const override { return 2.0 * in.size() * 4 * features_; }
  // [Wt (C, 4N) | dWt (C, 4N) | T (BHW, 4N) | ones (GPUs) | z (4BHW, N) where the activation needs it]
  std::int64_t scratch_size(Shape const& in) const override {
    std::int64_t const outputs = 4 * in[0] * in[1] * in[2];
    return 2 * 4 * in[3] * features_ + outputs * features_ + impl::act_bias_backward_scratch(outputs) +
           (activation_needs_input(act_) ? outputs * features_ : 0);
  }
  void set_scratch(DeviceView<float*> const& scratch) override { scratch_ = scratch; }
  void forward(ExecSpace const& space, Precision const& precision, Tensor const& x, Tensor const& y) override;
  void backward(ExecSpace const& space, Precision const& precision, Tensor const& x, Tensor const& y,
                Tensor const& dy, Tensor const& dx) override;

 private:
  struct Parts {
    Matrix wt, dwt, t;
    float *ones, *z;
  };
  Parts parts(Shape const& in) const {
    std::int64_t const C = in[3], N = features_, pixels = in[0] * in[1] * in[2];
    float* p = scratch_.data();
    Parts s{Matrix(p, C, 4 * N), Matrix(p + 4 * C * N, C, 4 * N), Matrix(p + 8 * C * N, pixels, 4 * N), nullptr,
            nullptr};
    s.ones = p + 8 * C * N + pixels * 4 * N;
    s.z = activation_needs_input(act_) ? s.ones + impl::act_bias_backward_scratch(4 * pixels) : nullptr;
    return s;
  }
  DeviceView<float*> scratch_;
};

void ConvTranspose2::forward(ExecSpace const& space, Precision const& precision, Tensor const& x,
                             Tensor const& y) {
  Shape const in = x.shape();
  std::int64_t const C = in[3], N = features_, pixels = in[0] * in[1] * in[2];
  Parts const s = parts(in);
  float const* w = w_.data();
  float* wt = s.wt.data();
  Kokkos::parallel_for(
      "ktr::conv_transpose::taps", MDRange<3>(space, {0, 0, 0}, {C, 4, N}),
      KOKKOS_LAMBDA(std::int64_t k, std::int64_t tap, std::int64_t n) {
        wt[(k * 4 + tap) * N + n] = w[(kernel_tap(tap) * C + k) * N + n];
      });
  gemm(space, precision, false, false, 1.0f, ConstMatrix(x.data(), pixels, C), s.wt, 0.0f, s.t);
  scatter(space, in, N, s.t.data(), y.data(), true);
  impl::bias_act_forward(space, Matrix(y.data(), 4 * pixels, N), b_.view(), act_, s.z);
}

void ConvTranspose2::backward(ExecSpace const& space, Precision const& precision, Tensor const& x, Tensor const& y,
                              Tensor const& dy, Tensor const& dx) {
  Shape const in = x.shape();
  std::int64_t const C = in[3], N = features_, pixels = in[0] * in[1] * in[2];
  Parts const s = parts(in);
  impl::act_bias_backward(space, Matrix(dy.data(), 4 * pixels, N), ConstMatrix(y.data(), 4 * pixels, N), s.z,
                          db_.view(), act_, s.ones);
  scatter(space, in, N, s.t.data(), dy.data(), false);
  gemm(space, precision, true, false, 1.0f, ConstMatrix(x.data(), pixels, C), s.t, 0.0f, s.dwt);  // (C, 4N)
  float const* dwt = s.dwt.data();
  float* dw = dw_.data();
  Kokkos::parallel_for(
      "ktr::conv_transpose::kernel_grad", MDRange<3>(space, {0, 0, 0}, {4, C, N}),
      KOKKOS_LAMBDA(std::int64_t tap, std::int64_t k, std::int64_t n) {
        dw[(tap * C + k) * N + n] = dwt[(k * 4 + kernel_tap(tap)) * N + n];
      });
  if (dx.size() > 0) gemm(space, precision, false, true, 1.0f, s.t, s.wt, 0.0f, Matrix(dx.data(), pixels, C));
}

bool conv_transpose_accepts(std::string const& head) { return head == "convT2x2"; }

std::unique_ptr<Layer> make_conv_transpose(LayerToken const& t) {
  t.expect_parts(2, 3, "convT2x2:N[:ACT]");
  Activation act = Activation::identity;
  if (t.parts.size() == 3) {
    auto a = parse_activation(t.parts[2]);
    if (!a) t.fail("'" + t.parts[2] + "' is not an activation (" + activation_names() + ")");
    act = *a;
  }
  return std::make_unique<ConvTranspose2>(t.extent(1, "feature count"), act);
}

}  // namespace

LayerKind const& conv_transpose_kind() {
  static LayerKind const kind{"convT2x2:N[:ACT]", conv_transpose_accepts, make_conv_transpose,
                              "a 2x2 transposed convolution of stride 2 (doubles height and width); Flax: "
                              "`nn.ConvTranspose(N, (2, 2), strides=(2, 2))`",
                              "in=8x8x4 convT2x2:2:relu conv1x1:1"};
  return kind;
}

}  // namespace ktr
