// AvgPool 2x2 stride 2 (VALID) and its gradient, one kernel each.
#include "../core/error.hpp"
#include "layers.hpp"

namespace ktr {

Shape AvgPool2::output_shape(Shape const& in) const {
  KTR_REQUIRE(in.rank == 4, "ktr::AvgPool2", "input must be (B, H, W, C), got " + in.str());
  return Shape{in[0], in[1] / 2, in[2] / 2, in[3]};
}

void AvgPool2::forward(ExecSpace const& space, Tensor const& x, Tensor const& y) {
  Shape const s = x.shape();
  std::int64_t const H = s[1], W = s[2], C = s[3], Ho = H / 2, Wo = W / 2;
  float const* in = x.data();
  float* out = y.data();
  Kokkos::parallel_for(
      "ktr::avgpool2::forward", MDRange<4>(space, {0, 0, 0, 0}, {s[0], Ho, Wo, C}),
      KOKKOS_LAMBDA(std::int64_t b, std::int64_t i, std::int64_t j, std::int64_t c) {
        float const* p = in + ((b * H + 2 * i) * W + 2 * j) * C + c;
        out[((b * Ho + i) * Wo + j) * C + c] = 0.25f * (p[0] + p[C] + p[W * C] + p[W * C + C]);
      });
}

void AvgPool2::backward(ExecSpace const& space, Tensor const& x, Tensor const&, Tensor const& dy,
                        Tensor const& dx) {
  if (dx.size() == 0) return;
  Shape const s = x.shape();
  std::int64_t const H = s[1], W = s[2], C = s[3], Ho = H / 2, Wo = W / 2;
  float const* g = dy.data();
  float* out = dx.data();
  Kokkos::parallel_for(
      "ktr::avgpool2::backward", MDRange<3>(space, {0, 0, 0}, {s[0], H, W}),
      KOKKOS_LAMBDA(std::int64_t b, std::int64_t h, std::int64_t w) {
        std::int64_t const i = h / 2, j = w / 2;
        float* dst = out + ((b * H + h) * W + w) * C;
        float const* src = g + ((b * Ho + i) * Wo + j) * C;
        bool const inside = i < Ho && j < Wo;
        for (std::int64_t c = 0; c < C; ++c) dst[c] = inside ? 0.25f * src[c] : 0.0f;
      });
}

}  // namespace ktr
