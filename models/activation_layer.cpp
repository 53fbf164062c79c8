// An activation as a layer of its own: the token is its name ("relu", "gelu_tanh", ...). y = f(x) element-wise;
// the backward has x (kept by the model) and y, so every activation's derivative is exact.
#include "../core/ops.hpp"
#include "activation_functors.hpp"
#include "layers.hpp"
#include "registry.hpp"

namespace ktr {

namespace {

// Function templates, not generic lambdas: nvcc cannot define a device lambda inside a generic lambda.
template <class A>
void forward_kernel(ExecSpace const& space, std::int64_t n, float const* KOKKOS_RESTRICT in,
                    float* KOKKOS_RESTRICT out) {
  chunked_for(
      "ktr::activation::forward", space, n, KOKKOS_LAMBDA(std::int64_t i0, std::int64_t i1) {
        for (std::int64_t i = i0; i < i1; ++i) out[i] = A::forward(in[i]);
      });
}

template <class A>
void backward_kernel(ExecSpace const& space, std::int64_t n, float const* KOKKOS_RESTRICT in,
                     float const* KOKKOS_RESTRICT out, float const* KOKKOS_RESTRICT g, float* KOKKOS_RESTRICT d) {
  chunked_for(
      "ktr::activation::backward", space, n, KOKKOS_LAMBDA(std::int64_t i0, std::int64_t i1) {
        for (std::int64_t i = i0; i < i1; ++i) d[i] = A::backward(g[i], in[i], out[i]);
      });
}

class ActivationLayer : public Layer {
 public:
  explicit ActivationLayer(Activation act) : act_(act) {}
  std::string describe() const override { return activation_name(act_); }
  Shape output_shape(Shape const& in) const override { return in; }
  void forward(ExecSpace const& space, Precision const&, Tensor const& x, Tensor const& y) override {
    with_activation(act_, [&](auto a) { forward_kernel<decltype(a)>(space, x.size(), x.data(), y.data()); });
  }
  void backward(ExecSpace const& space, Precision const&, Tensor const& x, Tensor const& y, Tensor const& dy,
                Tensor const& dx) override {
    if (dx.size() == 0) return;
    with_activation(act_, [&](auto a) {
      backward_kernel<decltype(a)>(space, x.size(), x.data(), y.data(), dy.data(), dx.data());
    });
  }

 private:
  Activation act_;
};

bool activation_accepts(std::string const& head) { return parse_activation(head).has_value(); }

std::unique_ptr<Layer> make_activation(LayerToken const& t) {
  t.expect_parts(1, 1, "an activation name alone");
  return std::make_unique<ActivationLayer>(*parse_activation(t.parts[0]));
}

}  // namespace

LayerKind const& activation_kind() {
  static LayerKind const kind{"relu, tanh, ... (an activation)", activation_accepts, make_activation,
                              "an element-wise activation on its own (a dense or conv token's :ACT fuses the same "
                              "function); Flax: `nn.relu`, `nn.gelu`, ...",
                              "in=8 dense:16 gelu dense:1"};
  return kind;
}

}  // namespace ktr
