// Activation names and properties (the functors are in activation_functors.hpp).
#include "activation_functors.hpp"

namespace ktr {

char const* activation_name(Activation a) {
  static char const* const names[] = {"identity",  "relu",       "tanh", "sigmoid",  "silu", "gelu",
                                      "gelu_tanh", "leaky_relu", "elu",  "softplus", "sine"};  // in enum order
  static_assert(sizeof names / sizeof names[0] == sizeof kActivations / sizeof kActivations[0], "a name each");
  return names[int(a)];
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
