// Layer normalisation over the feature (last) axis, as flax.linen.LayerNorm: y = (x - mean) / sqrt(var + 1e-6)
// * scale + bias per row, scale and bias (C) learned (ones and zeros at first). Token "layernorm"; parameters
// LayerNorm_i.scale and LayerNorm_i.bias. On images (B, H, W, C) each pixel's channels are a row.
//
// forward   a row per thread: mean and variance in two passes, y; mean and 1 / std kept in scratch
// backward  dscale = sum_rows dy xhat, dbias = sum_rows dy (rows in order: deterministic, no atomics); then a row
//           per thread: dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy scale
#include "../backends/gemm.hpp"
#include "../backends/kokkos_compat.hpp"
#include "../core/error.hpp"
#include "layers.hpp"
#include "registry.hpp"

namespace ktr {

namespace {

constexpr float kEpsilon = 1e-6f;  // Flax's default

class LayerNorm : public Layer {
 public:
  std::string describe() const override { return "layernorm"; }
  char const* module() const override { return "LayerNorm"; }
  Shape output_shape(Shape const& in) const override { return in; }
  std::vector<ParamSpec> param_specs(Shape const& in) const override {
    std::int64_t const c = in[in.rank - 1];
    return {ParamSpec{"scale", Shape{c}, Init::ones, 1}, ParamSpec{"bias", Shape{c}, Init::zeros, 1}};
  }
  void bind(std::vector<Tensor> const& params, std::vector<Tensor> const& grads) override {
    scale_ = params.at(0), bias_ = params.at(1), dscale_ = grads.at(0), dbias_ = grads.at(1);
  }
  // Scratch: mean and 1 / std per row; on GPUs also dy xhat (rows, C) and a ones vector (rows) for the gemms.
  std::int64_t scratch_size(Shape const& in) const override {
    std::int64_t const rows = in.size() / in[in.rank - 1];
    return 2 * rows + (device_is_host ? 0 : in.size() + rows);
  }
  void set_scratch(DeviceView<float*> const& scratch) override { scratch_ = scratch; }

  void forward(ExecSpace const& space, Precision const&, Tensor const& x, Tensor const& y) override {
    std::int64_t const C = x.shape()[x.shape().rank - 1], rows = x.size() / C;
    float const* in = x.data();
    float const* s = scale_.data();
    float const* b = bias_.data();
    float* out = y.data();
    float* stats = scratch_.data();  // (rows, 2): mean, 1 / std
    Kokkos::parallel_for(
        "ktr::layernorm::forward", Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, rows),
        KOKKOS_LAMBDA(std::int64_t r) {
          float const* xr = in + r * C;
          float sum = 0.0f;
          for (std::int64_t j = 0; j < C; ++j) sum += xr[j];
          float const mean = sum / float(C);
          float sq = 0.0f;
          for (std::int64_t j = 0; j < C; ++j) sq += (xr[j] - mean) * (xr[j] - mean);
          float const rstd = 1.0f / compat::sqrt(sq / float(C) + kEpsilon);
          stats[2 * r] = mean, stats[2 * r + 1] = rstd;
          for (std::int64_t j = 0; j < C; ++j) out[r * C + j] = (xr[j] - mean) * rstd * s[j] + b[j];
        });
  }

  void backward(ExecSpace const& space, Precision const&, Tensor const& x, Tensor const&, Tensor const& dy,
                Tensor const& dx) override {
    std::int64_t const C = x.shape()[x.shape().rank - 1], rows = x.size() / C;
    float const* in = x.data();
    float const* g = dy.data();
    float const* s = scale_.data();
    float const* stats = scratch_.data();
    float* ds = dscale_.data();
    float* db = dbias_.data();
    param_grad(space, rows, C, in, g, stats, ds, db);
    if (dx.size() == 0) return;
    float* d = dx.data();
    Kokkos::parallel_for(
        "ktr::layernorm::input_grad",
        Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, rows),
        KOKKOS_LAMBDA(std::int64_t r) {
          float const mean = stats[2 * r], rstd = stats[2 * r + 1];
          float m1 = 0.0f, m2 = 0.0f;
          for (std::int64_t j = 0; j < C; ++j) {
            float const gh = g[r * C + j] * s[j];
            m1 += gh;
            m2 += gh * (in[r * C + j] - mean) * rstd;
          }
          m1 /= float(C), m2 /= float(C);
          for (std::int64_t j = 0; j < C; ++j) {
            float const xhat = (in[r * C + j] - mean) * rstd;
            d[r * C + j] = rstd * (g[r * C + j] * s[j] - m1 - xhat * m2);
          }
        });
  }

  // dscale = sum_rows dy xhat, dbias = sum_rows dy, rows in order (deterministic). Hosts: a block of columns per
  // thread, the column loop vectorised. GPUs: dy xhat in an element-parallel pass, then both sums as gemv-shaped
  // gemms with a ones vector (a thread per column would leave a few columns on a few threads).
  void param_grad(ExecSpace const& space, std::int64_t rows, std::int64_t C, float const* in, float const* g,
                  float const* stats, float* ds, float* db) const {
    if constexpr (device_is_host) {
      constexpr std::int64_t block = 64;
      Kokkos::parallel_for(
          "ktr::layernorm::param_grad",
          Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, (C + block - 1) / block),
          KOKKOS_LAMBDA(std::int64_t blk) {
            std::int64_t const j0 = blk * block, n = j0 + block < C ? block : C - j0;
            float a[block], c[block];
            for (std::int64_t j = 0; j < n; ++j) a[j] = 0.0f, c[j] = 0.0f;
            for (std::int64_t r = 0; r < rows; ++r) {
              float const mean = stats[2 * r], rstd = stats[2 * r + 1];
              for (std::int64_t j = 0; j < n; ++j) {
                float const gr = g[r * C + j0 + j];
                a[j] += gr * (in[r * C + j0 + j] - mean) * rstd;
                c[j] += gr;
              }
            }
            for (std::int64_t j = 0; j < n; ++j) ds[j0 + j] = a[j], db[j0 + j] = c[j];
          });
    } else {
      float* const t = scratch_.data() + 2 * rows;
      float* const ones = t + rows * C;
      Kokkos::parallel_for(
          "ktr::layernorm::grad_xhat",
          Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, rows * C),
          KOKKOS_LAMBDA(std::int64_t e) {
            std::int64_t const r = e / C;
            t[e] = g[e] * (in[e] - stats[2 * r]) * stats[2 * r + 1];
            if (e % C == 0) ones[r] = 1.0f;
          });
      column_sums(space, ConstMatrix(t, rows, C), ones, ds);
      column_sums(space, ConstMatrix(g, rows, C), ones, db);
    }
  }

 private:
  Tensor scale_, bias_, dscale_, dbias_;
  DeviceView<float*> scratch_;
};

bool layernorm_accepts(std::string const& head) { return head == "layernorm"; }

std::unique_ptr<Layer> make_layernorm(LayerToken const& t) {
  t.expect_parts(1, 1, "layernorm (no arguments)");
  return std::make_unique<LayerNorm>();
}

}  // namespace

LayerKind const& layernorm_kind() {
  static LayerKind const kind{
      "layernorm", layernorm_accepts, make_layernorm,
      "normalises each sample over its last axis, then scales and shifts (epsilon 1e-6); Flax: `nn.LayerNorm`",
      "in=8 dense:16 layernorm dense:1"};
  return kind;
}

}  // namespace ktr
