// Pooling: 2x2 stride-2 VALID average and maximum ("avgpool2", "maxpool2", one kernel each way) and the global
// average over the image ("globalavgpool": (B, H, W, C) -> (B, C)), and the "flatten" kind (its layer, a view,
// is in layers.hpp).
#include "../core/error.hpp"
#include "../core/ops.hpp"
#include "layers.hpp"
#include "registry.hpp"

namespace ktr {

namespace {

Shape image(Shape const& in, std::string const& token) {
  KTR_REQUIRE(in.rank == 4, "model description",
              "'" + token + "' needs an image input (H, W, C), got " + in.str());
  return in;
}

}  // namespace

Shape Pool2::output_shape(Shape const& in) const {
  image(in, describe());
  return Shape{in[0], in[1] / 2, in[2] / 2, in[3]};
}

void Pool2::forward(ExecSpace const& space, Precision const&, Tensor const& x, Tensor const& y) {
  Shape const s = x.shape();
  std::int64_t const H = s[1], W = s[2], C = s[3], Ho = H / 2, Wo = W / 2;
  float const* in = x.data();
  float* out = y.data();
  bool const max = max_;
  for_pixels(
      max ? "ktr::maxpool2::forward" : "ktr::avgpool2::forward", space, s[0], Ho, Wo,
      KOKKOS_LAMBDA(std::int64_t b, std::int64_t i, std::int64_t j) {
        for (std::int64_t c = 0; c < C; ++c) {
          float const* p = in + ((b * H + 2 * i) * W + 2 * j) * C + c;
          float const v0 = p[0], v1 = p[C], v2 = p[W * C], v3 = p[W * C + C];
          float const m01 = v1 > v0 ? v1 : v0, m23 = v3 > v2 ? v3 : v2;
          out[((b * Ho + i) * Wo + j) * C + c] = max ? (m23 > m01 ? m23 : m01) : 0.25f * (v0 + v1 + v2 + v3);
        }
      });
}

void Pool2::backward(ExecSpace const& space, Precision const&, Tensor const& x, Tensor const&, Tensor const& dy,
                     Tensor const& dx) {
  if (dx.size() == 0) return;
  Shape const s = x.shape();
  std::int64_t const H = s[1], W = s[2], C = s[3], Ho = H / 2, Wo = W / 2;
  float const* in = x.data();
  float const* g = dy.data();
  float* out = dx.data();
  bool const max = max_;
  for_pixels(
      max ? "ktr::maxpool2::backward" : "ktr::avgpool2::backward", space, s[0], H, W,
      KOKKOS_LAMBDA(std::int64_t b, std::int64_t h, std::int64_t w) {
        std::int64_t const i = h / 2, j = w / 2;
        float* dst = out + ((b * H + h) * W + w) * C;
        float const* src = g + ((b * Ho + i) * Wo + j) * C;
        bool const inside = i < Ho && j < Wo;
        if (!max) {
          for (std::int64_t c = 0; c < C; ++c) dst[c] = inside ? 0.25f * src[c] : 0.0f;
          return;
        }
        // The gradient goes to the window's first maximum (row-major), as the forward's comparisons pick it.
        int const mine = int(h % 2) * 2 + int(w % 2);
        float const* p = in + ((b * H + 2 * i) * W + 2 * j) * C;
        for (std::int64_t c = 0; c < C; ++c) {
          float best = 0.0f;
          int arg = -1;
          if (inside)
            for (int k = 0; k < 4; ++k) {
              float const v = p[((k / 2) * W + k % 2) * C + c];
              if (arg < 0 || v > best) best = v, arg = k;
            }
          dst[c] = arg == mine ? src[c] : 0.0f;
        }
      });
}

namespace {

/// (B, H, W, C) -> (B, C): the mean over the image, as jnp.mean(x, axis=(1, 2)).
class GlobalAvgPool : public Layer {
 public:
  std::string describe() const override { return "globalavgpool"; }
  Shape output_shape(Shape const& in) const override {
    image(in, describe());
    return Shape{in[0], in[3]};
  }
  void forward(ExecSpace const& space, Precision const&, Tensor const& x, Tensor const& y) override {
    Shape const s = x.shape();
    std::int64_t const P = s[1] * s[2], C = s[3];
    float const* in = x.data();
    float* out = y.data();
    float const scale = 1.0f / float(P);
    Kokkos::parallel_for(
        "ktr::globalavgpool::forward", MDRange<2>(space, {0, 0}, {s[0], C}),
        KOKKOS_LAMBDA(std::int64_t b, std::int64_t c) {
          float sum = 0.0f;
          for (std::int64_t p = 0; p < P; ++p) sum += in[(b * P + p) * C + c];
          out[b * C + c] = sum * scale;
        });
  }
  void backward(ExecSpace const& space, Precision const&, Tensor const& x, Tensor const&, Tensor const& dy,
                Tensor const& dx) override {
    if (dx.size() == 0) return;
    Shape const s = x.shape();
    std::int64_t const P = s[1] * s[2], C = s[3];
    float const* g = dy.data();
    float* out = dx.data();
    float const scale = 1.0f / float(P);
    Kokkos::parallel_for(
        "ktr::globalavgpool::backward",
        Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, s.size()),
        KOKKOS_LAMBDA(std::int64_t e) { out[e] = scale * g[(e / (P * C)) * C + e % C]; });
  }
};

bool pool_accepts(std::string const& head) { return head == "avgpool2" || head == "maxpool2"; }
std::unique_ptr<Layer> make_pool(LayerToken const& t) {
  t.expect_parts(1, 1, "avgpool2 or maxpool2 (no arguments)");
  return std::make_unique<Pool2>(t.parts[0] == "maxpool2");
}

bool global_pool_accepts(std::string const& head) { return head == "globalavgpool"; }
std::unique_ptr<Layer> make_global_pool(LayerToken const& t) {
  t.expect_parts(1, 1, "globalavgpool (no arguments)");
  return std::make_unique<GlobalAvgPool>();
}

bool flatten_accepts(std::string const& head) { return head == "flatten"; }
std::unique_ptr<Layer> make_flatten(LayerToken const& t) {
  t.expect_parts(1, 1, "flatten (no arguments)");
  return std::make_unique<Flatten>();
}

}  // namespace

LayerKind const& pool_kind() {
  static LayerKind const kind{
      "avgpool2, maxpool2", pool_accepts, make_pool,
      "2x2 average or maximum pooling, stride 2 (VALID); Flax: `nn.avg_pool`, `nn.max_pool`",
      "in=8x8x2 conv3x3:4 avgpool2 maxpool2 flatten dense:2"};
  return kind;
}
LayerKind const& global_pool_kind() {
  static LayerKind const kind{
      "globalavgpool", global_pool_accepts, make_global_pool,
      "the mean over height and width of each channel: (H, W, C) to (C); Flax: `jnp.mean(x, axis=(1, 2))`",
      "in=8x8x2 conv3x3:4:relu globalavgpool dense:2"};
  return kind;
}
LayerKind const& flatten_kind() {
  static LayerKind const kind{"flatten", flatten_accepts, make_flatten,
                              "(H, W, C) to (H W C) per sample, no copy; Flax: `x.reshape((x.shape[0], -1))`",
                              "in=4x4x2 flatten dense:2"};
  return kind;
}

}  // namespace ktr
