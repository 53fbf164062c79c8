// Conv2D 3x3 / stride 1 / SAME, NHWC, two ways, picked per layer by its input channel count on hosts (GPUs always
// take im2col + the vendor BLAS):
//   direct (few input channels): the kernels of conv_direct.hpp, with a following AvgPool2 fused in; scratch
//     holds the backward's per-chunk kernel-gradient partials (and dz when the input gradient is asked for).
//   im2col (many): im2col + gemm forward, gemm for the kernel gradient, gemm + col2im for the input gradient. The
//     im2col matrix (B*H*W, 9*Cin) lives in the model's scratch and is reused for its gradient.
#include "../backends/gemm.hpp"
#include "../core/error.hpp"
#include "conv_direct.hpp"
#include "layers.hpp"

namespace ktr {

namespace {

constexpr int K = 3;  // kernel size; SAME padding is K / 2 = 1 on each side

struct Geometry {
  std::int64_t batch, height, width, channels;
  KOKKOS_INLINE_FUNCTION std::int64_t pixels() const { return batch * height * width; }
  KOKKOS_INLINE_FUNCTION std::int64_t patch() const { return K * K * channels; }
};

Geometry geometry(Shape const& in) {
  KTR_REQUIRE(in.rank == 4, "ktr::Conv2D", "input must be (B, H, W, C), got " + in.str());
  return Geometry{in[0], in[1], in[2], in[3]};
}

// cols[(b, h, w), (kh, kw, c)] = x[b, h + kh - 1, w + kw - 1, c], zero outside the image. Hosts: one thread per
// pixel writes its 9 C columns (contiguous). GPUs: one thread per element of cols, so that neighbouring threads
// write neighbouring floats.
void im2col(ExecSpace const& space, Geometry g, float const* x, Matrix const& cols) {
  if constexpr (device_is_host) {
    Kokkos::parallel_for(
        "ktr::conv2d::im2col", MDRange<3>(space, {0, 0, 0}, {g.batch, g.height, g.width}),
        KOKKOS_LAMBDA(std::int64_t b, std::int64_t h, std::int64_t w) {
          std::int64_t const row = (b * g.height + h) * g.width + w;
          for (int kh = 0; kh < K; ++kh) {
            std::int64_t const hh = h + kh - K / 2;
            for (int kw = 0; kw < K; ++kw) {
              std::int64_t const ww = w + kw - K / 2;
              bool const inside = hh >= 0 && hh < g.height && ww >= 0 && ww < g.width;
              float const* src = x + ((b * g.height + hh) * g.width + ww) * g.channels;
              std::int64_t const col = (kh * K + kw) * g.channels;
              for (std::int64_t c = 0; c < g.channels; ++c) cols(row, col + c) = inside ? src[c] : 0.0f;
            }
          }
        });
  } else {
    std::int64_t const patch = g.patch();
    float* const out = cols.data();
    Kokkos::parallel_for(
        "ktr::conv2d::im2col",
        Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, g.pixels() * patch),
        KOKKOS_LAMBDA(std::int64_t e) {
          std::int64_t const row = e / patch, col = e % patch;
          std::int64_t const c = col % g.channels, tap = col / g.channels, kh = tap / K, kw = tap % K;
          std::int64_t const w = row % g.width, h = (row / g.width) % g.height, b = row / (g.width * g.height);
          std::int64_t const hh = h + kh - K / 2, ww = w + kw - K / 2;
          bool const inside = hh >= 0 && hh < g.height && ww >= 0 && ww < g.width;
          out[e] = inside ? x[((b * g.height + hh) * g.width + ww) * g.channels + c] : 0.0f;
        });
  }
}

// dx[b, h, w, c] of col2im on a GPU: the taps of dcols that read input pixel (h, w), channel c, in the host's
// order.
KOKKOS_INLINE_FUNCTION float col2im_sum(Geometry const& g, ConstMatrix const& dcols, std::int64_t b,
                                        std::int64_t h, std::int64_t w, std::int64_t c) {
  float acc = 0.0f;
  for (int kh = 0; kh < K; ++kh) {
    std::int64_t const oh = h - kh + K / 2;
    if (oh < 0 || oh >= g.height) continue;
    for (int kw = 0; kw < K; ++kw) {
      std::int64_t const ow = w - kw + K / 2;
      if (ow < 0 || ow >= g.width) continue;
      acc += dcols((b * g.height + oh) * g.width + ow, (kh * K + kw) * g.channels + c);
    }
  }
  return acc;
}

// dx[b, h, w, c] = sum_{kh, kw} dcols[(b, h - kh + 1, w - kw + 1), (kh, kw, c)]: a gather, so no atomics.
// Hosts: one thread per pixel; GPUs: one thread per element of dx.
void col2im(ExecSpace const& space, Geometry g, ConstMatrix const& dcols, float* dx) {
  if constexpr (device_is_host) {
    Kokkos::parallel_for(
        "ktr::conv2d::col2im", MDRange<3>(space, {0, 0, 0}, {g.batch, g.height, g.width}),
        KOKKOS_LAMBDA(std::int64_t b, std::int64_t h, std::int64_t w) {
          float* out = dx + ((b * g.height + h) * g.width + w) * g.channels;
          for (std::int64_t c = 0; c < g.channels; ++c) out[c] = 0.0f;
          for (int kh = 0; kh < K; ++kh) {  // the channel loop innermost: it vectorises
            std::int64_t const oh = h - kh + K / 2;
            if (oh < 0 || oh >= g.height) continue;
            for (int kw = 0; kw < K; ++kw) {
              std::int64_t const ow = w - kw + K / 2;
              if (ow < 0 || ow >= g.width) continue;
              std::int64_t const row = (b * g.height + oh) * g.width + ow, col = (kh * K + kw) * g.channels;
              for (std::int64_t c = 0; c < g.channels; ++c) out[c] += dcols(row, col + c);
            }
          }
        });
  } else {
    Kokkos::parallel_for(
        "ktr::conv2d::col2im",
        Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, g.pixels() * g.channels),
        KOKKOS_LAMBDA(std::int64_t e) {
          std::int64_t const c = e % g.channels, pixel = e / g.channels;
          std::int64_t const w = pixel % g.width, h = (pixel / g.width) % g.height,
                             b = pixel / (g.width * g.height);
          dx[e] = col2im_sum(g, dcols, b, h, w, c);
        });
  }
}

}  // namespace

Shape Conv2D::output_shape(Shape const& in) const {
  auto g = geometry(in);
  return Shape{g.batch, g.height, g.width, features_};
}

std::vector<ParamSpec> Conv2D::param_specs(Shape const& in) const {
  auto g = geometry(in);
  return {ParamSpec{"kernel", Shape{K, K, g.channels, features_}, Init::lecun_normal, g.patch()},
          ParamSpec{"bias", Shape{features_}, Init::zeros, 1}};
}

static_assert(Conv2D::direct_max_channels <= impl::conv_direct_max_channels, "direct kernels too narrow");

namespace {
impl::ConvDims dims(Shape const& in, std::int64_t features, int pool) {
  auto g = geometry(in);
  return impl::ConvDims{g.batch, g.height, g.width, g.channels, features, pool};
}
}  // namespace

bool Conv2D::direct(Shape const& in) const {
  auto g = geometry(in);
  if (algorithm_ == ConvAlgorithm::im2col) return false;
  if (algorithm_ == ConvAlgorithm::automatic && !device_is_host) return false;  // GPUs: im2col + the vendor BLAS
  KTR_REQUIRE(g.channels <= impl::conv_direct_max_channels || algorithm_ == ConvAlgorithm::automatic,
              "ktr::Conv2D",
              "direct convolution takes at most " + std::to_string(impl::conv_direct_max_channels) + " channels");
  return g.channels <= direct_max_channels;
}

bool Conv2D::fuse_next(Layer const& next, Shape const& in) {
  if (pool_ != 1 || dynamic_cast<AvgPool2 const*>(&next) == nullptr || !direct(in)) return false;
  pool_ = 2;
  return true;
}

std::int64_t Conv2D::scratch_size(Shape const& in) const {
  auto g = geometry(in);
  if (!direct(in)) return g.pixels() * g.patch() + impl::act_bias_backward_scratch(g.pixels());  // cols, ones
  auto const d = dims(in, features_, pool_);
  return impl::conv_direct_chunks(d) * d.partial_size() + g.pixels() * features_;  // partials, dz
}

void Conv2D::forward(ExecSpace const& space, Tensor const& x, Tensor const& y) {
  if (direct(x.shape())) {
    auto const d = dims(x.shape(), features_, pool_);
    KTR_REQUIRE(y.size() == d.batch * d.out_height() * d.out_width() * features_, "ktr::Conv2D",
                "output " + y.shape().str() + " does not fit the (pooled) convolution");
    impl::conv_direct_forward(space, d, x.data(), w_.data(), b_.data(), relu_, y.data());
    return;
  }
  auto g = geometry(x.shape());
  Matrix cols(scratch_.data(), g.pixels(), g.patch());
  Matrix w(w_.data(), g.patch(), features_);
  Matrix out(y.data(), g.pixels(), features_);
  im2col(space, g, x.data(), cols);
  gemm(space, false, false, 1.0f, cols, w, 0.0f, out);  // (BHW, F) = (BHW, 9C) (9C, F)
  impl::bias_act_forward(space, out, b_.view(), relu_);
}

void Conv2D::backward(ExecSpace const& space, Tensor const& x, Tensor const& y, Tensor const& dy,
                      Tensor const& dx) {
  if (direct(x.shape())) {
    auto const d = dims(x.shape(), features_, pool_);
    float* const partials = scratch_.data();
    float* const dz = dx.size() > 0 ? partials + impl::conv_direct_chunks(d) * d.partial_size() : nullptr;
    impl::conv_direct_backward(space, d, x.data(), w_.data(), b_.data(), relu_, dy.data(), dw_.data(), db_.data(),
                               partials, dz);
    if (dz != nullptr) impl::conv_direct_input_grad(space, d, dz, w_.data(), dx.data());
    return;
  }
  auto g = geometry(x.shape());
  Matrix cols(scratch_.data(), g.pixels(), g.patch());
  Matrix w(w_.data(), g.patch(), features_), dw(dw_.data(), g.patch(), features_);
  Matrix dout(dy.data(), g.pixels(), features_), out(y.data(), g.pixels(), features_);
  impl::act_bias_backward(space, dout, out, db_.view(), relu_, scratch_.data() + g.pixels() * g.patch());
  gemm(space, true, false, 1.0f, cols, dout, 0.0f, dw);  // (9C, F) = (BHW, 9C)^T (BHW, F)
  if (dx.size() == 0) return;
  gemm(space, false, true, 1.0f, dout, w, 0.0f, cols);  // dcols (BHW, 9C) = (BHW, F) (9C, F)^T
  col2im(space, g, cols, dx.data());
}

}  // namespace ktr
