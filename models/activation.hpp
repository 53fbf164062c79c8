// Activations: an enum for descriptions and configurations, their names, and which derivatives need the input.
// The device functors that kernels take as template parameters are in activation_functors.hpp (internal).
//
// Definitions as flax.linen's (jax.nn): leaky_relu slope 0.01, elu alpha 1, gelu exact (erf) or its tanh
// approximation, softplus log(1 + e^z) computed stably.
#pragma once

#include <optional>
#include <string>

namespace ktr {

enum class Activation { identity, relu, tanh, sigmoid, silu, gelu, gelu_tanh, leaky_relu, elu, softplus, sine };

/// Every activation, in enum order.
constexpr Activation kActivations[] = {Activation::identity,  Activation::relu,       Activation::tanh,
                                       Activation::sigmoid,   Activation::silu,       Activation::gelu,
                                       Activation::gelu_tanh, Activation::leaky_relu, Activation::elu,
                                       Activation::softplus,  Activation::sine};

/// The activation's name in descriptions and configurations: "relu", "gelu_tanh", ...
char const* activation_name(Activation a);
/// The activation a name stands for ("swish" is silu), or nothing.
std::optional<Activation> parse_activation(std::string const& name);
/// "relu, tanh, ..." for error messages.
std::string activation_names();
/// True if the activation's derivative needs z (the layer then keeps z beside y).
bool activation_needs_input(Activation a);

}  // namespace ktr
