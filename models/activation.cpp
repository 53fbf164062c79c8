// Activation names and properties (the functors are in activation.hpp).
#include "activation.hpp"

namespace ktr {

char const* activation_name(Activation a) {
  switch (a) {
    case Activation::identity:
      return "identity";
    case Activation::relu:
      return "relu";
    case Activation::tanh:
      return "tanh";
    case Activation::sigmoid:
      return "sigmoid";
    case Activation::silu:
      return "silu";
    case Activation::gelu:
      return "gelu";
    case Activation::gelu_tanh:
      return "gelu_tanh";
    case Activation::leaky_relu:
      return "leaky_relu";
    case Activation::elu:
      return "elu";
    case Activation::softplus:
      return "softplus";
    case Activation::sine:
      return "sine";
  }
  return "?";
}

std::optional<Activation> parse_activation(std::string const& name) {
  if (name == "swish") return Activation::silu;
  for (Activation a : kActivations)
    if (name == activation_name(a)) return a;
  return std::nullopt;
}

std::string activation_names() {
  std::string s;
  for (Activation a : kActivations) s += (s.empty() ? "" : ", ") + std::string(activation_name(a));
  return s;
}

bool activation_needs_input(Activation a) {
  bool needs = false;
  with_activation(a, [&](auto f) { needs = decltype(f)::needs_input; });
  return needs;
}

}  // namespace ktr
