// Conv2D KxK (K = 1, 3, 5, 7), stride 1 or 2, SAME (XLA's padding), VALID or CIRCULAR, NHWC, two ways
// (ConvAlgorithm):
//   direct (3x3, stride 1, SAME, few input channels, host builds): the kernels of conv_direct.hpp, with a
//     following AvgPool2 fused in; scratch holds the backward's per-chunk kernel-gradient partials (and dz when
//     the input gradient is asked for).
//   im2col (every form, the circular one wrapping its reads; GPUs always): im2col + gemm + bias/activation pass
//   forward, gemm for the kernel gradient,
//     gemm + col2im for the input gradient. The im2col matrix (B*Ho*Wo, K*K*Cin) lives in the layer's scratch and
//     is reused for its gradient; z = x * w + b is kept beside it where the activation's derivative needs it.
#include "../backends/conv.hpp"
#include "../backends/gemm.hpp"
#include "../core/bf16.hpp"
#include "../core/error.hpp"
#include "../core/ops.hpp"
#include "activation_functors.hpp"
#include "bias_act.hpp"
#include "conv_direct.hpp"
#include "layers.hpp"
#include "registry.hpp"

#include <algorithm>

namespace ktr {

namespace {

// The convolution of inputs (B, H, W, C): a K x K window at stride S, the first output's window starting at
// (-pad_h, -pad_w); outputs (B, Ho, Wo, F). Circular: a row or column outside the image is read from the other
// side (any number of times around, should the window be wider than the image).
struct Geometry {
  std::int64_t batch, height, width, channels;
  std::int64_t kernel, stride, pad_h, pad_w, out_height, out_width;
  bool circular;
  KOKKOS_INLINE_FUNCTION std::int64_t pixels() const { return batch * out_height * out_width; }
  KOKKOS_INLINE_FUNCTION std::int64_t patch() const { return kernel * kernel * channels; }
};

// Output extent and leading padding of one axis: SAME as XLA (ceil(n / S) outputs, the padding's smaller half
// first), VALID without padding (zero outputs where the window does not fit), CIRCULAR as Flax ((K - 1) / 2
// wrapped rows first, K / 2 after: ceil(n / S) outputs).
void axis(std::int64_t n, ConvForm f, std::int64_t& out, std::int64_t& pad) {
  if (f.padding == Padding::valid) {
    out = n >= f.kernel ? (n - f.kernel) / f.stride + 1 : 0;
    pad = 0;
    return;
  }
  out = (n + f.stride - 1) / f.stride;
  if (f.padding == Padding::circular) {
    pad = (f.kernel - 1) / 2;
    return;
  }
  std::int64_t const total = std::max<std::int64_t>((out - 1) * f.stride + f.kernel - n, 0);
  pad = total / 2;
}

Geometry geometry(Shape const& in, ConvForm f) {
  KTR_REQUIRE(in.rank == 4, "ktr::Conv2D", "input must be (B, H, W, C), got " + in.str());
  Geometry g{in[0], in[1], in[2], in[3], f.kernel, f.stride, 0, 0, 0, 0, f.padding == Padding::circular};
  axis(g.height, f, g.out_height, g.pad_h);
  axis(g.width, f, g.out_width, g.pad_w);
  return g;
}

// Where an axis of n positions reads padded position p: p inside [0, n); outside, the wrapped position (circular)
// or -1 (a zero).
KOKKOS_INLINE_FUNCTION std::int64_t read_at(std::int64_t p, std::int64_t n, bool circular) {
  if (p >= 0 && p < n) return p;
  return circular ? (p % n + n) % n : -1;
}

// A circular convolution through the library: the input copied with its wrapped rows and columns around it
// ((out - 1) S + K positions per axis: every position a window reads), then a VALID convolution of the copy.
std::int64_t wrapped_extent(std::int64_t out, Geometry const& g) { return (out - 1) * g.stride + g.kernel; }
std::int64_t wrapped_size(Geometry const& g) {
  return g.batch * wrapped_extent(g.out_height, g) * wrapped_extent(g.out_width, g) * g.channels;
}

// xp[b, p, q, c] = x[b, (p - pad_h) mod H, (q - pad_w) mod W, c]: floats, or (Out = std::uint16_t) the bf16
// bits a bf16 library convolution reads, rounded as it would round them.
template <class Out>
void wrap_copy(ExecSpace const& space, Geometry g, float const* x, Out* xp) {
  std::int64_t const Hp = wrapped_extent(g.out_height, g), Wp = wrapped_extent(g.out_width, g), C = g.channels;
  for_pixels(
      std::is_same_v<Out, std::uint16_t> ? "ktr::conv2d::wrap_copy_bf16" : "ktr::conv2d::wrap_copy", space,
      g.batch, Hp, Wp, KOKKOS_LAMBDA(std::int64_t b, std::int64_t p, std::int64_t q) {
        std::int64_t const h = read_at(p - g.pad_h, g.height, true), w = read_at(q - g.pad_w, g.width, true);
        float const* src = x + ((b * g.height + h) * g.width + w) * C;
        Out* dst = xp + ((b * Hp + p) * Wp + q) * C;
        for (std::int64_t c = 0; c < C; ++c) {
          if constexpr (std::is_same_v<Out, std::uint16_t>)  // no local in the condition: nvcc's device lambdas
            dst[c] = bf16_bits(src[c]);
          else
            dst[c] = src[c];
        }
      });
}

// dx[b, h, w, c] = the sum of dxp over every wrapped copy of (h, w), in the same order on every backend.
void fold_wrapped(ExecSpace const& space, Geometry g, float const* dxp, float* dx) {
  std::int64_t const Hp = wrapped_extent(g.out_height, g), Wp = wrapped_extent(g.out_width, g), C = g.channels;
  for_pixels(
      "ktr::conv2d::fold_wrapped", space, g.batch, g.height, g.width,
      KOKKOS_LAMBDA(std::int64_t b, std::int64_t h, std::int64_t w) {
        float* out = dx + ((b * g.height + h) * g.width + w) * C;
        for (std::int64_t c = 0; c < C; ++c) out[c] = 0.0f;
        // Padded position p reads h where p - pad = h + m H: p from the smallest such p >= 0 up to Hp - 1.
        for (std::int64_t p = (h + g.pad_h) % g.height; p < Hp; p += g.height)
          for (std::int64_t q = (w + g.pad_w) % g.width; q < Wp; q += g.width) {
            float const* src = dxp + ((b * Hp + p) * Wp + q) * C;
            for (std::int64_t c = 0; c < C; ++c) out[c] += src[c];
          }
      });
}

// cols[(b, i, j), (kh, kw, c)] = x[b, i S + kh - pad_h, j S + kw - pad_w, c], zero outside the image (wrapped
// around it where circular). Hosts: one
// thread per output pixel writes its K^2 C columns (contiguous). GPUs: one thread per element of cols, so that
// neighbouring threads write neighbouring floats.
void im2col(ExecSpace const& space, Geometry g, float const* x, Matrix const& cols) {
  std::int64_t const K = g.kernel;
  if constexpr (device_is_host) {
    for_pixels(
        "ktr::conv2d::im2col", space, g.batch, g.out_height, g.out_width,
        KOKKOS_LAMBDA(std::int64_t b, std::int64_t i, std::int64_t j) {
          std::int64_t const row = (b * g.out_height + i) * g.out_width + j;
          for (std::int64_t kh = 0; kh < K; ++kh) {
            std::int64_t const hh = read_at(i * g.stride + kh - g.pad_h, g.height, g.circular);
            for (std::int64_t kw = 0; kw < K; ++kw) {
              std::int64_t const ww = read_at(j * g.stride + kw - g.pad_w, g.width, g.circular);
              bool const inside = hh >= 0 && ww >= 0;
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
          std::int64_t const j = row % g.out_width, i = (row / g.out_width) % g.out_height,
                             b = row / (g.out_width * g.out_height);
          std::int64_t const hh = read_at(i * g.stride + kh - g.pad_h, g.height, g.circular),
                             ww = read_at(j * g.stride + kw - g.pad_w, g.width, g.circular);
          bool const inside = hh >= 0 && ww >= 0;
          out[e] = inside ? x[((b * g.height + hh) * g.width + ww) * g.channels + c] : 0.0f;
        });
  }
}

// The output index that tap k of an axis reads input position p from, or -1: p = o S + k - pad.
KOKKOS_INLINE_FUNCTION std::int64_t source(std::int64_t p, std::int64_t k, std::int64_t pad, std::int64_t stride,
                                           std::int64_t outs) {
  std::int64_t const t = p + pad - k;
  if (t < 0 || t % stride != 0 || t / stride >= outs) return -1;
  return t / stride;
}

// The padded positions p of an axis that read position h, as [first, last] in steps of n: h alone, or on a
// circular axis every h + m n within the windows' reach [-pad, (outs - 1) S + K - 1 - pad].
struct Aliases {
  std::int64_t first, last;
};
KOKKOS_INLINE_FUNCTION Aliases aliases(std::int64_t h, std::int64_t n, std::int64_t pad, std::int64_t outs,
                                       Geometry const& g) {
  if (!g.circular) return Aliases{h, h};
  return Aliases{h - n * ((h + pad) / n), (outs - 1) * g.stride + g.kernel - 1 - pad};
}

// Calls f(row, col) for every element of dcols that input pixel (b, h, w) went to (its channel 0), in the same
// order on hosts and GPUs.
template <class F>
KOKKOS_INLINE_FUNCTION void for_each_tap(Geometry const& g, std::int64_t b, std::int64_t h, std::int64_t w,
                                         F const& f) {
  Aliases const rows = aliases(h, g.height, g.pad_h, g.out_height, g),
                cols = aliases(w, g.width, g.pad_w, g.out_width, g);
  for (std::int64_t kh = 0; kh < g.kernel; ++kh)
    for (std::int64_t ph = rows.first; ph <= rows.last; ph += g.height) {
      std::int64_t const oh = source(ph, kh, g.pad_h, g.stride, g.out_height);
      if (oh < 0) continue;
      for (std::int64_t kw = 0; kw < g.kernel; ++kw)
        for (std::int64_t pw = cols.first; pw <= cols.last; pw += g.width) {
          std::int64_t const ow = source(pw, kw, g.pad_w, g.stride, g.out_width);
          if (ow >= 0) f((b * g.out_height + oh) * g.out_width + ow, (kh * g.kernel + kw) * g.channels);
        }
    }
}

// dx[b, h, w, c] = the sum over taps (kh, kw) whose window covers (h, w) (or a wrapped copy of it) of
// dcols[(b, oh, ow), (kh, kw, c)]: a gather, so no atomics. Hosts: one thread per pixel, the channel loop
// innermost (it vectorises); GPUs: one thread per element of dx.
void col2im(ExecSpace const& space, Geometry g, ConstMatrix const& dcols, float* dx) {
  if constexpr (device_is_host) {
    for_pixels(
        "ktr::conv2d::col2im", space, g.batch, g.height, g.width,
        KOKKOS_LAMBDA(std::int64_t b, std::int64_t h, std::int64_t w) {
          float* out = dx + ((b * g.height + h) * g.width + w) * g.channels;
          for (std::int64_t c = 0; c < g.channels; ++c) out[c] = 0.0f;
          for_each_tap(g, b, h, w, [&](std::int64_t row, std::int64_t col) {
            for (std::int64_t c = 0; c < g.channels; ++c) out[c] += dcols(row, col + c);
          });
        });
  } else {
    Kokkos::parallel_for(
        "ktr::conv2d::col2im",
        Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0,
                                                                        g.batch * g.height * g.width * g.channels),
        KOKKOS_LAMBDA(std::int64_t e) {
          std::int64_t const c = e % g.channels, pixel = e / g.channels;
          std::int64_t const w = pixel % g.width, h = (pixel / g.width) % g.height,
                             b = pixel / (g.width * g.height);
          float acc = 0.0f;
          for_each_tap(g, b, h, w, [&](std::int64_t row, std::int64_t col) { acc += dcols(row, col + c); });
          dx[e] = acc;
        });
  }
}

// At stride 1 the input gradient is itself a convolution: dx = conv(dy, W flipped in both axes with its channel
// axes swapped), stride 1, padding K - 1 - pad (SAME and CIRCULAR keep theirs, VALID pads K - 1), wrapped where
// the forward wraps. Its im2col matrix is K^2 F wide where col2im's is K^2 C: less memory traffic for a layer that
// narrows its channels (a U-Net's convolution after a concat), so it is taken where F < C.
bool input_grad_as_conv(Geometry const& g, std::int64_t features) {
  return g.stride == 1 && features < g.channels;
}

// The geometry of that convolution: dy (B, Ho, Wo, F) in, dx (B, H, W, C) out.
Geometry input_grad_geometry(Geometry const& g, std::int64_t features) {
  Geometry d = g;
  d.height = g.out_height, d.width = g.out_width, d.channels = features;
  d.out_height = g.height, d.out_width = g.width;
  d.pad_h = g.kernel - 1 - g.pad_h, d.pad_w = g.kernel - 1 - g.pad_w;
  return d;
}

// wf[(kh, kw, f), c] = w[(K-1-kh, K-1-kw, c), f].
void flip_kernel(ExecSpace const& space, Geometry const& g, std::int64_t features, float const* w, float* wf) {
  std::int64_t const K = g.kernel, C = g.channels, F = features;
  Kokkos::parallel_for(
      "ktr::conv2d::flip_kernel",
      Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, K * K * F * C),
      KOKKOS_LAMBDA(std::int64_t e) {
        std::int64_t const c = e % C, f = (e / C) % F, tap = e / (C * F);
        wf[e] = w[((K * K - 1 - tap) * C + c) * F + f];
      });
}

}  // namespace

std::string Conv2D::describe() const {
  std::string const k = std::to_string(form_.kernel);
  return "conv" + k + "x" + k + ":" + std::to_string(features_) + activation_suffix() +
         (form_.stride == 2 ? ":s2" : "") +
         (form_.padding == Padding::valid      ? ":valid"
          : form_.padding == Padding::circular ? ":circular"
                                               : "");
}

Shape Conv2D::output_shape(Shape const& in) const {
  KTR_REQUIRE(in.rank == 4, "model description",
              "'" + describe() + "' needs an image input (H, W, C), got " + in.str());
  auto g = geometry(in, form_);
  KTR_REQUIRE(g.out_height > 0 && g.out_width > 0, "model description",
              "'" + describe() + "' leaves nothing of " + in.str() + " (a VALID window larger than the image)");
  return Shape{g.batch, g.out_height, g.out_width, features_};
}

std::vector<ParamSpec> Conv2D::param_specs(Shape const& in) const {
  auto g = geometry(in, form_);
  return {ParamSpec{"kernel", Shape{g.kernel, g.kernel, g.channels, features_}, Init::lecun_normal, g.patch()},
          ParamSpec{"bias", Shape{features_}, Init::zeros, 1}};
}

double Conv2D::forward_flops(Shape const& in) const {
  auto g = geometry(in, form_);
  return 2.0 * double(g.pixels()) * double(g.patch()) * double(features_);
}

static_assert(Conv2D::direct_max_channels <= impl::conv_direct_max_channels, "direct kernels too narrow");

namespace {
impl::ConvDims dims(Shape const& in, std::int64_t features, int pool) {
  return impl::ConvDims{in[0], in[1], in[2], in[3], features, pool};
}
}  // namespace

bool Conv2D::direct(Shape const& in) const {
  auto g = geometry(in, form_);
  if (algorithm_ == ConvAlgorithm::im2col || algorithm_ == ConvAlgorithm::library) return false;
  if (algorithm_ == ConvAlgorithm::automatic && !device_is_host) return false;  // GPUs: im2col + the vendor BLAS
  bool const form = form_.kernel == 3 && form_.stride == 1 && form_.padding == Padding::same;
  bool const takes = impl::conv_direct_takes(act_, features_);
  if (algorithm_ == ConvAlgorithm::direct) {
    std::string why;
    if (!device_is_host)
      why = "runs on host builds only";
    else if (!form)
      why = "is 3x3, stride 1, SAME only, not '" + describe() + "'";
    else if (g.channels > impl::conv_direct_max_channels)
      why = "takes at most " + std::to_string(impl::conv_direct_max_channels) + " channels";
    else if (!takes)
      why = "with " + std::string(activation_name(act_)) + " needs a multiple of 8 output channels";
    KTR_REQUIRE(why.empty(), "ktr::Conv2D", "direct convolution " + why);
  }
  return form && g.channels <= direct_max_channels && takes;
}

namespace {
// The convolution as the library takes it: SAME's padding split as XLA splits it, VALID's none.
ConvShape library_shape(Geometry const& g, std::int64_t features) {
  ConvShape s;
  s.batch = g.batch, s.height = g.height, s.width = g.width, s.channels = g.channels, s.features = features;
  if (g.circular) {  // a VALID convolution of the wrapped copy
    s.height = wrapped_extent(g.out_height, g), s.width = wrapped_extent(g.out_width, g);
    s.kernel = g.kernel, s.stride = g.stride, s.out_height = g.out_height, s.out_width = g.out_width;
    return s;
  }
  s.kernel = g.kernel, s.stride = g.stride, s.out_height = g.out_height, s.out_width = g.out_width;
  s.pad_top = g.pad_h, s.pad_left = g.pad_w;
  s.pad_bottom = std::max<std::int64_t>(0, (g.out_height - 1) * g.stride + g.kernel - g.height - g.pad_h);
  s.pad_right = std::max<std::int64_t>(0, (g.out_width - 1) * g.stride + g.kernel - g.width - g.pad_w);
  return s;
}

// The bias and activation the library's forward applies in its own pass, where it can (bias null: the layer's
// pass follows).
ConvEpilogue library_epilogue(Activation act, float const* bias) {
  ConvEpilogue e;
  if (act == Activation::relu)
    e.act = ConvEpilogue::Act::relu;
  else if (act == Activation::leaky_relu)
    e.act = ConvEpilogue::Act::leaky_relu, e.slope = act::kLeakySlope;
  else if (act != Activation::identity)
    return e;
  e.bias = bias;
  return e;
}
}  // namespace

bool Conv2D::library(Shape const& in, Precision const& precision) const {
  if (algorithm_ == ConvAlgorithm::im2col || algorithm_ == ConvAlgorithm::direct) return false;
  if (algorithm_ == ConvAlgorithm::automatic && direct(in)) return false;
  auto const g = geometry(in, form_);
  std::string const why = conv_library_unavailable(library_shape(g, features_), precision);
  if (algorithm_ == ConvAlgorithm::library)
    KTR_REQUIRE(why.empty(), "ktr::Conv2D", "'" + describe() + "' through the convolution library: " + why);
  return why.empty();
}

bool Conv2D::fuse_next(Layer const& next, Shape const& in) {
  auto const* pool = dynamic_cast<Pool2 const*>(&next);
  if (pool_ != 1 || pool == nullptr || pool->max() || !direct(in)) return false;
  pool_ = 2;
  return true;
}

namespace {
// The im2col path's scratch: [cols (BHoWo, K^2 C), or the input gradient's (BHW, K^2 F) where larger | ones
// (GPUs) | z (BHoWo, F) where the activation needs it | the flipped kernel (K^2 F, C) where the input gradient is
// a convolution].
struct Im2colScratch {
  float *cols, *ones, *z, *flipped;
  std::int64_t cols_size, size;
  Im2colScratch(float* base, Geometry const& g, std::int64_t features, Activation act) {
    cols_size = g.pixels() * g.patch();
    if (g.circular) cols_size = std::max(cols_size, wrapped_size(g));  // the library's wrapped copy
    if (input_grad_as_conv(g, features))
      cols_size = std::max(cols_size, input_grad_geometry(g, features).pixels() * g.kernel * g.kernel * features);
    std::int64_t const z_size = activation_needs_input(act) ? g.pixels() * features : 0;
    std::int64_t const ones_size = impl::act_bias_backward_scratch(g.pixels());
    cols = base, ones = base + cols_size, z = z_size ? ones + ones_size : nullptr;
    flipped = ones + ones_size + z_size;
    size = cols_size + ones_size + z_size + (input_grad_as_conv(g, features) ? g.patch() * features : 0);
  }
};

// Under bf16, the copies a library convolution keeps in the columns the im2col path would use (after the wrapped
// copy, where circular): its input rounded by the forward for the backward, then its output gradient rounded by
// the activation backward; both null where they do not fit.
struct Bf16Copies {
  std::uint16_t *x16 = nullptr, *dz16 = nullptr;
};
Bf16Copies bf16_copies(Im2colScratch const& sc, Geometry const& g, ConvShape const& s,
                       Precision const& precision) {
  if (precision.matmul != MatmulPrecision::bf16) return {};
  std::int64_t const used = g.circular ? wrapped_size(g) : 0;
  std::int64_t const x_floats = (s.batch * s.height * s.width * s.channels + 1) / 2;
  std::int64_t const dz_floats = (s.batch * s.out_height * s.out_width * s.features + 1) / 2;
  if (used + x_floats + dz_floats > sc.cols_size) return {};
  return {reinterpret_cast<std::uint16_t*>(sc.cols + used),
          reinterpret_cast<std::uint16_t*>(sc.cols + used + x_floats)};
}
}  // namespace

// Scratch, im2col: Im2colScratch; direct: [partials | dz | the weights rounded to bf16 (conv_direct_operands)].
std::int64_t Conv2D::scratch_size(Shape const& in) const {
  auto g = geometry(in, form_);
  if (!direct(in)) return Im2colScratch(nullptr, g, features_, act_).size;
  auto const d = dims(in, features_, pool_);
  return direct_w16_offset(in) + impl::conv_direct_operands_size(d);
}

std::int64_t Conv2D::direct_w16_offset(Shape const& in) const {
  auto const d = dims(in, features_, pool_);
  return impl::conv_direct_chunks(d) * d.partial_size() + geometry(in, form_).pixels() * features_;
}

void Conv2D::forward(ExecSpace const& space, Precision const& precision, Tensor const& x, Tensor const& y) {
  bf16_input_of_ = nullptr;
  if (direct(x.shape())) {
    auto const d = dims(x.shape(), features_, pool_);
    KTR_REQUIRE(y.size() == d.batch * d.out_height() * d.out_width() * features_, "ktr::Conv2D",
                "output " + y.shape().str() + " does not fit the (pooled) convolution");
    float* const w16 = scratch_.data() + direct_w16_offset(x.shape());
    float const* const w =
        impl::conv_direct_operands(space, operand_of(precision), d, act_, x.data(), w_.data(), w16);
    impl::conv_direct_forward(space, operand_of(precision), d, x.data(), w, b_.data(), act_, y.data(), w16);
    return;
  }
  auto g = geometry(x.shape(), form_);
  Im2colScratch const sc(scratch_.data(), g, features_, act_);
  Matrix out(y.data(), g.pixels(), features_);
  if (library(x.shape(), precision)) {
    ConvEpilogue const epilogue = library_epilogue(act_, b_.data());
    ConvShape const s = library_shape(g, features_);
    std::uint16_t* const x16 = bf16_copies(sc, g, s, precision).x16;
    float const* in = x.data();
    if (g.circular && x16 != nullptr)  // bf16: the wrapped copy written rounded, the only copy either pass reads
      wrap_copy(space, g, x.data(), x16), in = nullptr;
    else if (g.circular)
      wrap_copy(space, g, x.data(), sc.cols), in = sc.cols;  // kept for the backward
    conv_library_forward(space, precision, s, in, w_.data(), y.data(), epilogue, x16);
    if (x16 != nullptr) bf16_input_of_ = x.data(), bf16_input_batch_ = g.batch;
    if (epilogue.bias == nullptr) impl::bias_act_forward(space, out, b_.view(), act_, sc.z);
    return;
  }
  Matrix cols(sc.cols, g.pixels(), g.patch());
  Matrix w(w_.data(), g.patch(), features_);
  im2col(space, g, x.data(), cols);
  gemm(space, precision, false, false, 1.0f, cols, w, 0.0f, out);  // (BHoWo, F) = (BHoWo, K^2 C) (K^2 C, F)
  impl::bias_act_forward(space, out, b_.view(), act_, sc.z);
}

void Conv2D::backward(ExecSpace const& space, Precision const& precision, Tensor const& x, Tensor const& y,
                      Tensor const& dy, Tensor const& dx) {
  if (direct(x.shape())) {
    auto const d = dims(x.shape(), features_, pool_);
    float* const partials = scratch_.data();
    float* const dz = dx.size() > 0 ? partials + impl::conv_direct_chunks(d) * d.partial_size() : nullptr;
    // Under bf16 the forward left the rounded weights in scratch (the weights do not change in between).
    float const* const w =
        operand_of(precision) == Operand::bf16 ? scratch_.data() + direct_w16_offset(x.shape()) : w_.data();
    impl::conv_direct_backward(space, operand_of(precision), d, x.data(), w, b_.data(), act_, dy.data(),
                               dw_.data(), db_.data(), partials, dz);
    if (dz != nullptr) impl::conv_direct_input_grad(space, d, dz, w, dx.data());
    return;
  }
  auto g = geometry(x.shape(), form_);
  Im2colScratch const sc(scratch_.data(), g, features_, act_);
  Matrix dout(dy.data(), g.pixels(), features_), out(y.data(), g.pixels(), features_);
  bool const lib = library(x.shape(), precision);
  ConvShape const s = library_shape(g, features_);
  Bf16Copies const copies = lib ? bf16_copies(sc, g, s, precision) : Bf16Copies{};
  // dy becomes dz, in place (and, for a bf16 library convolution, dz's rounding beside it)
  impl::act_bias_backward(space, dout, out, sc.z, db_.view(), act_, sc.ones, copies.dz16);
  if (lib) {
    // Circular: the kernel gradient from the wrapped copy, then the copy's input gradient over it, folded back.
    float* const dx_at = dx.size() == 0 ? nullptr : g.circular ? sc.cols : dx.data();
    // The forward's rounding of this very input (same tensor, same batch), if it kept one; else a circular
    // convolution wraps its input again (a bf16 forward wrote only the rounded copy).
    bool const kept = bf16_input_of_ == x.data() && bf16_input_batch_ == g.batch;
    std::uint16_t const* const x16 = kept ? copies.x16 : nullptr;
    if (g.circular && x16 == nullptr) wrap_copy(space, g, x.data(), sc.cols);
    conv_library_backward(space, precision, s, g.circular ? sc.cols : x.data(), dy.data(), w_.data(), dw_.data(),
                          dx_at, x16, copies.dz16);
    if (g.circular && dx_at != nullptr) fold_wrapped(space, g, sc.cols, dx.data());
    return;
  }
  Matrix cols(sc.cols, g.pixels(), g.patch());
  Matrix w(w_.data(), g.patch(), features_), dw(dw_.data(), g.patch(), features_);
  gemm(space, precision, true, false, 1.0f, cols, dout, 0.0f, dw);  // (K^2 C, F) = (BHoWo, K^2 C)^T (BHoWo, F)
  if (dx.size() == 0) return;
  if (input_grad_as_conv(g, features_)) {
    Geometry const d = input_grad_geometry(g, features_);
    Matrix dcols(sc.cols, d.pixels(), d.patch()), flipped(sc.flipped, d.patch(), g.channels);
    flip_kernel(space, g, features_, w_.data(), sc.flipped);
    im2col(space, d, dy.data(), dcols);
    gemm(space, precision, false, false, 1.0f, dcols, flipped, 0.0f, Matrix(dx.data(), d.pixels(), g.channels));
    return;
  }
  gemm(space, precision, false, true, 1.0f, dout, w, 0.0f,
       cols);  // dcols (BHoWo, K^2 C) = (BHoWo, F) (K^2 C, F)^T
  col2im(space, g, cols, dx.data());
}

namespace {

// "convKxK:N[:ACT][:s2][:valid|:circular]", K = 1, 3, 5, 7; the suffixes in any order, each once.
bool conv_accepts(std::string const& head) {
  return head == "conv1x1" || head == "conv3x3" || head == "conv5x5" || head == "conv7x7";
}

std::unique_ptr<Layer> make_conv(LayerToken const& t) {
  char const* usage = "convKxK:N[:ACT][:s2][:valid|:circular] (K = 1, 3, 5, 7; the suffixes in any order)";
  t.expect_parts(2, 5, usage);
  ConvForm form;
  form.kernel = t.parts[0][4] - '0';
  Activation act = Activation::identity;
  bool has_act = false, has_stride = false, has_padding = false;
  for (std::size_t i = 2; i < t.parts.size(); ++i) {  // each suffix once, in any order
    std::string const& part = t.parts[i];
    if (part == "s2") {
      if (has_stride) t.fail("gives s2 twice");
      form.stride = 2, has_stride = true;
    } else if (part == "valid" || part == "circular") {
      if (has_padding) t.fail("takes one padding: valid (none) or circular (wrapped), not both");
      form.padding = part == "valid" ? Padding::valid : Padding::circular, has_padding = true;
    } else {
      auto a = parse_activation(part);
      if (!a) t.fail("'" + part + "' is not an activation (" + activation_names() + "), s2, valid or circular");
      if (has_act) t.fail("takes one activation");
      act = *a, has_act = true;
    }
  }
  return std::make_unique<Conv2D>(t.extent(1, "feature count"), act, ConvAlgorithm::automatic, form);
}

}  // namespace

LayerKind const& conv_kind() {
  static LayerKind const kind{"convKxK:N[:ACT][:s2][:valid|:circular]", conv_accepts, make_conv,
                              "a 2-D convolution of N features, K = 1, 3, 5 or 7, NHWC, SAME padding (or VALID, "
                              "or CIRCULAR: periodic), stride 1 or 2, a fused activation; Flax: `nn.Conv`",
                              "in=16x16x2 conv3x3:8:relu conv3x3:8:s2:circular conv1x1:1"};
  return kind;
}

}  // namespace ktr
