// Activation functors: per activation a device functor that the dense and convolution kernels take as a template
// parameter (with_activation turns the enum into the functor once per launch), so a fused activation costs what
// ReLU does: no branch on the kind inside a kernel. Internal: kernels include it, the public surface has
// activation.hpp.
//
//   Act<A>::forward(z)          y = f(z)
//   Act<A>::backward(g, z, y)   g f'(z), from z or from y = f(z) (needs_input says which: the layers keep z only
//                               for the activations whose derivative cannot be had from y: silu, gelu,
//                               gelu_tanh, sine)
#pragma once

#include "../backends/kokkos_compat.hpp"
#include "activation.hpp"
#include "normal_cdf.hpp"
#include "rational_tanh.hpp"

namespace ktr {

namespace act {

KOKKOS_INLINE_FUNCTION float sigmoid(float z) {
  // Never exp of a large positive number: e^z / (1 + e^z) below zero.
  if (z >= 0.0f) return 1.0f / (1.0f + compat::exp(-z));
  float const e = compat::exp(z);
  return e / (1.0f + e);
}

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluTanhCubic = 0.044715f;
constexpr float kInvSqrt2Pi = 0.3989422804014327f;
constexpr float kLeakySlope = 0.01f;

}  // namespace act

template <Activation A>
struct Act;

template <>
struct Act<Activation::identity> {
  static constexpr bool needs_input = false;
  KOKKOS_INLINE_FUNCTION static float forward(float z) { return z; }
  KOKKOS_INLINE_FUNCTION static float backward(float g, float, float) { return g; }
};

template <>
struct Act<Activation::relu> {
  static constexpr bool needs_input = false;
  KOKKOS_INLINE_FUNCTION static float forward(float z) { return z < 0.0f ? 0.0f : z; }
  KOKKOS_INLINE_FUNCTION static float backward(float g, float, float y) { return y > 0.0f ? g : 0.0f; }
};

template <>
struct Act<Activation::tanh> {
  static constexpr bool needs_input = false;
  KOKKOS_INLINE_FUNCTION static float forward(float z) { return act::tanh(z); }
  KOKKOS_INLINE_FUNCTION static float backward(float g, float, float y) { return g * (1.0f - y * y); }
};

template <>
struct Act<Activation::sigmoid> {
  static constexpr bool needs_input = false;
  KOKKOS_INLINE_FUNCTION static float forward(float z) { return act::sigmoid(z); }
  KOKKOS_INLINE_FUNCTION static float backward(float g, float, float y) { return g * y * (1.0f - y); }
};

template <>
struct Act<Activation::silu> {  // z sigmoid(z); f' = s (1 + z (1 - s))
  static constexpr bool needs_input = true;
  KOKKOS_INLINE_FUNCTION static float forward(float z) { return z * act::sigmoid(z); }
  KOKKOS_INLINE_FUNCTION static float backward(float g, float z, float) {
    float const s = act::sigmoid(z);
    return g * s * (1.0f + z * (1.0f - s));
  }
};

template <>
struct Act<Activation::gelu> {  // z Phi(z); f' = Phi(z) + z phi(z)
  static constexpr bool needs_input = true;
  KOKKOS_INLINE_FUNCTION static float forward(float z) {
    float gauss;
    return z * act::normal_cdf(z, gauss);
  }
  KOKKOS_INLINE_FUNCTION static float backward(float g, float z, float) {
    float gauss;
    float const cdf = act::normal_cdf(z, gauss);
    return g * (cdf + z * (act::kInvSqrt2Pi * gauss));
  }
};

template <>
struct Act<Activation::gelu_tanh> {  // z (1 + tanh(u)) / 2, u = sqrt(2/pi) (z + 0.044715 z^3)
  static constexpr bool needs_input = true;
  KOKKOS_INLINE_FUNCTION static float forward(float z) {
    float const u = act::kSqrt2OverPi * (z + act::kGeluTanhCubic * z * z * z);
    return 0.5f * z * (1.0f + act::tanh(u));
  }
  KOKKOS_INLINE_FUNCTION static float backward(float g, float z, float) {
    float const u = act::kSqrt2OverPi * (z + act::kGeluTanhCubic * z * z * z);
    float const t = act::tanh(u);
    float const du = act::kSqrt2OverPi * (1.0f + 3.0f * act::kGeluTanhCubic * z * z);
    return g * (0.5f * (1.0f + t) + 0.5f * z * (1.0f - t * t) * du);
  }
};

template <>
struct Act<Activation::leaky_relu> {  // Flax: where(z >= 0, z, 0.01 z); y >= 0 exactly where z >= 0
  static constexpr bool needs_input = false;
  KOKKOS_INLINE_FUNCTION static float forward(float z) { return z >= 0.0f ? z : act::kLeakySlope * z; }
  KOKKOS_INLINE_FUNCTION static float backward(float g, float, float y) {
    return y >= 0.0f ? g : act::kLeakySlope * g;
  }
};

template <>
struct Act<Activation::elu> {  // z > 0 ? z : e^z - 1; f' = y + 1 below zero
  static constexpr bool needs_input = false;
  KOKKOS_INLINE_FUNCTION static float forward(float z) { return z > 0.0f ? z : compat::expm1(z); }
  KOKKOS_INLINE_FUNCTION static float backward(float g, float, float y) { return y > 0.0f ? g : g * (y + 1.0f); }
};

template <>
struct Act<Activation::softplus> {  // log(1 + e^z) = max(z, 0) + log1p(e^-|z|); f' = sigmoid(z) = 1 - e^-y
  static constexpr bool needs_input = false;
  KOKKOS_INLINE_FUNCTION static float forward(float z) {
    float const a = z < 0.0f ? -z : z;
    return (z > 0.0f ? z : 0.0f) + compat::log1p(compat::exp(-a));
  }
  KOKKOS_INLINE_FUNCTION static float backward(float g, float, float y) { return -g * compat::expm1(-y); }
};

template <>
struct Act<Activation::sine> {
  static constexpr bool needs_input = true;
  KOKKOS_INLINE_FUNCTION static float forward(float z) { return compat::sin(z); }
  KOKKOS_INLINE_FUNCTION static float backward(float g, float z, float) { return g * compat::cos(z); }
};
/// Runs f(Act<A>{}) for the activation a names: one instantiation of f's kernels per activation.
template <class F>
void with_activation(Activation a, F&& f) {
  switch (a) {
    case Activation::identity:
      return f(Act<Activation::identity>{});
    case Activation::relu:
      return f(Act<Activation::relu>{});
    case Activation::tanh:
      return f(Act<Activation::tanh>{});
    case Activation::sigmoid:
      return f(Act<Activation::sigmoid>{});
    case Activation::silu:
      return f(Act<Activation::silu>{});
    case Activation::gelu:
      return f(Act<Activation::gelu>{});
    case Activation::gelu_tanh:
      return f(Act<Activation::gelu_tanh>{});
    case Activation::leaky_relu:
      return f(Act<Activation::leaky_relu>{});
    case Activation::elu:
      return f(Act<Activation::elu>{});
    case Activation::softplus:
      return f(Act<Activation::softplus>{});
    case Activation::sine:
      return f(Act<Activation::sine>{});
  }
}

}  // namespace ktr
