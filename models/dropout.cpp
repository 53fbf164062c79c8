// Inverted dropout, "dropout:P" (0 <= P < 1): in training each element is kept with probability 1 - P and
// divided by 1 - P (as flax.linen.Dropout), else zeroed; outside training (evaluation, prediction: no RandomKey)
// it passes its input through.
//
// The draw is a counter-based hash of (seed, optimiser step, layer index, the sample's row in the whole update,
// element), read on the device: a run is reproducible, a resumed run draws what it would have, and accumulation
// or more ranks draw what one rank does for the same global batch. The backward recomputes the mask.
#include "../core/error.hpp"
#include "../core/parse.hpp"
#include "../core/permutation.hpp"
#include "layers.hpp"
#include "registry.hpp"

#include <limits>
#include <sstream>

namespace ktr {

namespace {

class Dropout : public Layer {
 public:
  explicit Dropout(double rate) : rate_(rate) {}
  std::string describe() const override {
    // The shortest text that reads back as the same rate.
    for (int digits = 1;; ++digits) {
      std::ostringstream o;
      o.precision(digits);
      o << rate_;
      if (std::stod(o.str()) == rate_ || digits >= std::numeric_limits<double>::max_digits10)
        return "dropout:" + o.str();
    }
  }
  Shape output_shape(Shape const& in) const override { return in; }
  bool random() const override { return true; }
  void set_random_key(RandomKey const* key, int index) override {
    training_ = key != nullptr && rate_ > 0;
    if (key != nullptr) key_ = *key;
    index_ = index;
  }
  void forward(ExecSpace const& space, Precision const&, Tensor const& x, Tensor const& y) override {
    apply(space, x, y, "forward");
  }
  void backward(ExecSpace const& space, Precision const&, Tensor const&, Tensor const&, Tensor const& dy,
                Tensor const& dx) override {
    if (dx.size() > 0) apply(space, dy, dx, "backward");
  }

  // out = in * mask / (1 - P): the same mask both ways. (Public: nvcc's device lambdas need a public parent.)
  void apply(ExecSpace const& space, Tensor const& in, Tensor const& out, char const* way) {
    float const* src = in.data();
    float* dst = out.data();
    std::int64_t const n = in.size();
    if (!training_) {
      Kokkos::parallel_for(
          way[0] == 'f' ? "ktr::dropout::forward" : "ktr::dropout::backward",
          Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, n),
          KOKKOS_LAMBDA(std::int64_t e) { dst[e] = src[e]; });
      return;
    }
    std::int64_t const inner = in.shape().inner(), row0 = key_.row;
    std::int64_t const* step = key_.step;
    std::uint64_t const base = mix64(key_.seed ^ mix64(0xD1B54A32D192ED03ull + std::uint64_t(index_)));
    // Kept where the top 24 bits, as a fraction, reach P: P's threshold rounded to the same 2^-24 grid.
    std::uint64_t const threshold = std::uint64_t(rate_ * double(1u << 24) + 0.5);
    float const keep = float(1.0 - rate_);
    Kokkos::parallel_for(
        way[0] == 'f' ? "ktr::dropout::forward" : "ktr::dropout::backward",
        Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, n),
        KOKKOS_LAMBDA(std::int64_t e) {
          std::uint64_t const row = std::uint64_t(row0 + e / inner), col = std::uint64_t(e % inner);
          std::uint64_t const h = mix64(mix64(base ^ mix64(std::uint64_t(*step) ^ mix64(row))) + col);
          dst[e] = (h >> 40) >= threshold ? src[e] / keep : 0.0f;
        });
  }

 private:
  double rate_;
  bool training_ = false;
  RandomKey key_;
  int index_ = 0;
};

bool dropout_accepts(std::string const& head) { return head == "dropout"; }

std::unique_ptr<Layer> make_dropout(LayerToken const& t) {
  t.expect_parts(2, 2, "dropout:P (0 <= P < 1)");
  double rate = 0;
  if (!parse_number(t.parts[1], 0.0, 1.0, rate) || rate >= 1.0) t.fail("the rate must be a number in [0, 1)");
  return std::make_unique<Dropout>(rate);
}

}  // namespace

LayerKind const& dropout_kind() {
  static LayerKind const kind{"dropout:P", dropout_accepts, make_dropout,
                              "zeroes each value with probability P in training and scales the rest by 1 / (1 - "
                              "P); the identity in evaluation; Flax: `nn.Dropout`",
                              "in=8 dense:16:relu dropout:0.1 dense:1"};
  return kind;
}

}  // namespace ktr
