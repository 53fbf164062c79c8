// Skip connections: "save:NAME" remembers the current tensor, "add:NAME" adds it to a later one of the same shape
// (a residual), "concat:NAME" appends its channels after a later one's (a U-Net's skip). The parser checks the
// names (models/description.cpp); the model routes the remembered tensor and its gradient (models/model.cpp).
#include "../core/error.hpp"
#include "../core/ops.hpp"
#include "layers.hpp"
#include "registry.hpp"

namespace ktr {

Shape Join::output_shape(Shape const& in) const {
  KTR_REQUIRE(saved_.rank > 0, "ktr::Join", "'" + describe() + "' was not told the shape of '" + source_ + "'");
  return joined_shape(in, saved_.with_batch(in[0]));
}

void Join::forward(ExecSpace const&, Precision const&, Tensor const&, Tensor const&) {
  throw Error("ktr::Join: '" + describe() + "' runs inside a model, which hands it the tensor saved as '" +
              source_ + "'");
}

void Join::backward(ExecSpace const&, Precision const&, Tensor const&, Tensor const&, Tensor const&,
                    Tensor const&) {
  throw Error("ktr::Join: '" + describe() + "' runs inside a model, which hands it the tensor saved as '" +
              source_ + "'");
}

namespace {

std::string per_sample(Shape const& s) {  // (H, W, C) or (N)
  std::string out = "(";
  for (int i = 1; i < s.rank; ++i) out += (i > 1 ? ", " : "") + std::to_string(s[i]);
  return out + ")";
}

// ds = g, or ds += g (ds.size() elements).
void gradient_into(ExecSpace const& space, Tensor const& g, Tensor const& ds, bool accumulate) {
  float const* src = g.data();
  float* dst = ds.data();
  Kokkos::parallel_for(
      "ktr::skip::saved_gradient",
      Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, ds.size()),
      KOKKOS_LAMBDA(std::int64_t e) { dst[e] = accumulate ? dst[e] + src[e] : src[e]; });
}

/// y = x + s.
class Add : public Join {
 public:
  using Join::Join;
  std::string describe() const override { return "add:" + source_; }
  Shape joined_shape(Shape const& in, Shape const& saved) const override {
    if (in != saved)
      throw Error("model description: '" + describe() + "': its input " + per_sample(in) +
                  " and the tensor saved as '" + source_ + "' " + per_sample(saved) + " differ in shape");
    return in;
  }
  void join_forward(ExecSpace const& space, Tensor const& x, Tensor const& s, Tensor const& y) override {
    float const *a = x.data(), *b = s.data();
    float* out = y.data();
    Kokkos::parallel_for(
        "ktr::add::forward", Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, y.size()),
        KOKKOS_LAMBDA(std::int64_t e) { out[e] = a[e] + b[e]; });
  }
  void join_backward(ExecSpace const& space, Tensor const& dy, Tensor const& dx, Tensor const& ds,
                     bool accumulate) override {
    gradient_into(space, dy, ds, accumulate);
    if (dx.size() > 0) gradient_into(space, dy, dx, false);
  }
};

/// y = [x, s] along the last axis (channels of a field, features of a vector).
class Concat : public Join {
 public:
  using Join::Join;
  std::string describe() const override { return "concat:" + source_; }
  Shape joined_shape(Shape const& in, Shape const& saved) const override {
    bool fits = in.rank == saved.rank;
    for (int i = 1; fits && i + 1 < in.rank; ++i) fits = in[i] == saved[i];
    if (!fits)
      throw Error("model description: '" + describe() + "': its input " + per_sample(in) +
                  " and the tensor saved as '" + source_ + "' " + per_sample(saved) +
                  " differ in more than the last (channel) extent");
    Shape out = in;
    out.dims[std::size_t(in.rank - 1)] = in[in.rank - 1] + saved[in.rank - 1];
    return out;
  }
  void join_forward(ExecSpace const& space, Tensor const& x, Tensor const& s, Tensor const& y) override {
    std::int64_t const cx = last(x), cs = last(s), cy = cx + cs;
    float const *a = x.data(), *b = s.data();
    float* out = y.data();
    for_pixels(
        "ktr::concat::forward", space, 1, y.size() / cy, device_is_host ? 1 : cy,
        KOKKOS_LAMBDA(std::int64_t, std::int64_t r, std::int64_t c) {
          if (device_is_host) {  // a whole row: two copies that vectorise
            for (std::int64_t k = 0; k < cx; ++k) out[r * cy + k] = a[r * cx + k];
            for (std::int64_t k = 0; k < cs; ++k) out[r * cy + cx + k] = b[r * cs + k];
          } else {
            out[r * cy + c] = c < cx ? a[r * cx + c] : b[r * cs + c - cx];
          }
        });
  }
  void join_backward(ExecSpace const& space, Tensor const& dy, Tensor const& dx, Tensor const& ds,
                     bool accumulate) override {
    std::int64_t const cs = last(ds), cy = last(dy), cx = cy - cs;
    float const* g = dy.data();
    float *gx = dx.size() > 0 ? dx.data() : nullptr, *gs = ds.data();
    for_pixels(
        "ktr::concat::backward", space, 1, dy.size() / cy, device_is_host ? 1 : cy,
        KOKKOS_LAMBDA(std::int64_t, std::int64_t r, std::int64_t c) {
          if (device_is_host) {  // a whole row: a copy and a copy or sum, each vectorises
            if (gx != nullptr)
              for (std::int64_t k = 0; k < cx; ++k) gx[r * cx + k] = g[r * cy + k];
            if (accumulate)
              for (std::int64_t k = 0; k < cs; ++k) gs[r * cs + k] += g[r * cy + cx + k];
            else
              for (std::int64_t k = 0; k < cs; ++k) gs[r * cs + k] = g[r * cy + cx + k];
          } else {
            float const v = g[r * cy + c];
            if (c >= cx)
              gs[r * cs + c - cx] = accumulate ? gs[r * cs + c - cx] + v : v;
            else if (gx != nullptr)
              gx[r * cx + c] = v;
          }
        });
  }

 private:
  static std::int64_t last(Tensor const& t) { return t.shape()[t.shape().rank - 1]; }
};

bool skip_accepts(std::string const& head) { return head == "save" || head == "add" || head == "concat"; }

std::unique_ptr<Layer> make_skip(LayerToken const& t) {
  t.expect_parts(2, 2, "save:NAME, add:NAME or concat:NAME");
  std::string const& name = t.parts[1];
  bool plain = !name.empty() && name.size() <= 64;
  for (char c : name)
    plain = plain && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_');
  if (!plain) t.fail("a NAME is 1 to 64 letters, digits or underscores");
  if (t.parts[0] == "save") return std::make_unique<Save>(name);
  if (t.parts[0] == "add") return std::make_unique<Add>(name);
  return std::make_unique<Concat>(name);
}

}  // namespace

LayerKind const& skip_kind() {
  static LayerKind const kind{
      "save:NAME, add:NAME, concat:NAME", skip_accepts, make_skip,
      "skip connections: save:NAME remembers the tensor there, add:NAME adds it to a later one of the same shape "
      "(a residual), concat:NAME appends its channels after a later one's (a U-Net)",
      "in=16x16x1 conv3x3:8:relu save:a maxpool2 conv3x3:8:relu upsample2 concat:a conv3x3:1"};
  return kind;
}

}  // namespace ktr
