// Nearest-neighbour upsampling by 2 in H and W ("upsample2"): (B, H, W, C) -> (B, 2H, 2W, C), as
// jnp.repeat(jnp.repeat(x, 2, axis=1), 2, axis=2); its gradient sums each 2x2 block (one writer per element).
#include "../core/error.hpp"
#include "../core/ops.hpp"
#include "layers.hpp"
#include "registry.hpp"

namespace ktr {

namespace {

class Upsample2 : public Layer {
 public:
  std::string describe() const override { return "upsample2"; }
  Shape output_shape(Shape const& in) const override {
    KTR_REQUIRE(in.rank == 4, "model description", "'upsample2' needs an image input (H, W, C), got " + in.str());
    return Shape{in[0], 2 * in[1], 2 * in[2], in[3]};
  }
  void forward(ExecSpace const& space, Precision const&, Tensor const& x, Tensor const& y) override {
    Shape const s = x.shape();
    std::int64_t const H = s[1], W = s[2], C = s[3];
    float const* in = x.data();
    float* out = y.data();
    for_pixels(
        "ktr::upsample2::forward", space, s[0], 2 * H, 2 * W,
        KOKKOS_LAMBDA(std::int64_t b, std::int64_t h, std::int64_t w) {
          float const* src = in + ((b * H + h / 2) * W + w / 2) * C;
          float* dst = out + ((b * 2 * H + h) * 2 * W + w) * C;
          for (std::int64_t c = 0; c < C; ++c) dst[c] = src[c];
        });
  }
  void backward(ExecSpace const& space, Precision const&, Tensor const& x, Tensor const&, Tensor const& dy,
                Tensor const& dx) override {
    if (dx.size() == 0) return;
    Shape const s = x.shape();
    std::int64_t const H = s[1], W = s[2], C = s[3];
    float const* g = dy.data();
    float* out = dx.data();
    for_pixels(
        "ktr::upsample2::backward", space, s[0], H, W,
        KOKKOS_LAMBDA(std::int64_t b, std::int64_t i, std::int64_t j) {
          std::int64_t const row = 2 * W * C;  // one output row
          float const* src = g + ((b * 2 * H + 2 * i) * 2 * W + 2 * j) * C;
          float* dst = out + ((b * H + i) * W + j) * C;
          for (std::int64_t c = 0; c < C; ++c) dst[c] = src[c] + src[C + c] + src[row + c] + src[row + C + c];
        });
  }
};

bool upsample_accepts(std::string const& head) { return head == "upsample2"; }
std::unique_ptr<Layer> make_upsample(LayerToken const& t) {
  t.expect_parts(1, 1, "upsample2 (no arguments)");
  return std::make_unique<Upsample2>();
}

}  // namespace

LayerKind const& upsample_kind() {
  static LayerKind const kind{
      "upsample2", upsample_accepts, make_upsample,
      "nearest-neighbour upsampling by 2 in height and width; Flax: `jax.image.resize(..., method='nearest')`",
      "in=8x8x2 upsample2 conv3x3:1"};
  return kind;
}

}  // namespace ktr
