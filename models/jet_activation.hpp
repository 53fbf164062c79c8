// An activation's value and first three derivatives at z, in float or double, for the jets (models/jet.hpp):
//   JetAct<A>::eval(z, d)   d.f = f(z), d.f1 = f'(z), d.f2 = f''(z), d.f3 = f'''(z)
// relu and leaky_relu have f'' = f''' = 0 away from their kink; elu's are e^z below zero and 0 above. Jets refuse
// second derivatives through all three (f' is not continuous, or f'' is not), but a first derivative's parameter
// gradient takes f'' (elu's included).
// Definitions as models/activation_functors.hpp's (flax.linen's). Internal.
#pragma once

#include "../backends/kokkos_compat.hpp"
#include "activation.hpp"
#include "rational_tanh.hpp"

#include <type_traits>

namespace ktr {

template <class T>
struct JetDerivs {
  T f, f1, f2, f3;
};

namespace jet_act {

// tanh: float as the dense kernels' (act::tanh, a rational function that vectorises), double the library's.
template <class T>
KOKKOS_INLINE_FUNCTION T tanh(T z) {
  if constexpr (std::is_same_v<T, float>)
    return act::tanh(z);
  else
    return compat::tanh(z);
}

template <class T>
KOKKOS_INLINE_FUNCTION T sigmoid(T z) {
  if (z >= T(0)) return T(1) / (T(1) + compat::exp(-z));
  T const e = compat::exp(z);
  return e / (T(1) + e);
}

}  // namespace jet_act

template <Activation A>
struct JetAct;

template <>
struct JetAct<Activation::identity> {
  template <class T>
  KOKKOS_INLINE_FUNCTION static void eval(T z, JetDerivs<T>& d) {
    d = {z, T(1), T(0), T(0)};
  }
};

template <>
struct JetAct<Activation::relu> {
  template <class T>
  KOKKOS_INLINE_FUNCTION static void eval(T z, JetDerivs<T>& d) {
    d = {z < T(0) ? T(0) : z, z > T(0) ? T(1) : T(0), T(0), T(0)};
  }
};

template <>
struct JetAct<Activation::leaky_relu> {
  template <class T>
  KOKKOS_INLINE_FUNCTION static void eval(T z, JetDerivs<T>& d) {
    T const slope = T(0.01);
    d = {z >= T(0) ? z : slope * z, z >= T(0) ? T(1) : slope, T(0), T(0)};
  }
};

template <>
struct JetAct<Activation::elu> {  // below zero every derivative is e^z: the parameter gradient of u' needs f''
  template <class T>
  KOKKOS_INLINE_FUNCTION static void eval(T z, JetDerivs<T>& d) {
    T const e = compat::exp(z < T(0) ? z : T(0));
    d = z > T(0) ? JetDerivs<T>{z, T(1), T(0), T(0)} : JetDerivs<T>{compat::expm1(z), e, e, e};
  }
};

template <>
struct JetAct<Activation::tanh> {  // f' = 1 - t^2, f'' = -2 t f', f''' = f' (6 t^2 - 2)
  template <class T>
  KOKKOS_INLINE_FUNCTION static void eval(T z, JetDerivs<T>& d) {
    // f' as (1 - t)(1 + t), as JAX's rule has it (and gelu_tanh's below): 1 - t t loses the digits of an f'
    // near 0 (t t rounds by up to half an ulp of 1, as large as f' itself where t nears 1), and f' scales every
    // derivative channel. With 1 - t t, Burgers' error after Adam was 1.4x higher (median of 5 seeds).
    T const t = jet_act::tanh(z), q = (T(1) - t) * (T(1) + t);
    d = {t, q, T(-2) * t * q, q * (T(6) * t * t - T(2))};
  }
};

template <>
struct JetAct<Activation::sigmoid> {  // f' = s(1-s), f'' = f'(1-2s), f''' = f'(1 - 6s + 6s^2)
  template <class T>
  KOKKOS_INLINE_FUNCTION static void eval(T z, JetDerivs<T>& d) {
    T const s = jet_act::sigmoid(z), q = s * (T(1) - s);
    d = {s, q, q * (T(1) - T(2) * s), q * (T(1) - T(6) * q)};
  }
};

template <>
struct JetAct<Activation::softplus> {  // f' = s, f'' = s(1-s), f''' = s(1-s)(1-2s)
  template <class T>
  KOKKOS_INLINE_FUNCTION static void eval(T z, JetDerivs<T>& d) {
    T const a = z < T(0) ? -z : z;
    T const s = jet_act::sigmoid(z), q = s * (T(1) - s);
    d = {(z > T(0) ? z : T(0)) + compat::log1p(compat::exp(-a)), s, q, q * (T(1) - T(2) * s)};
  }
};

template <>
struct JetAct<Activation::silu> {  // z s: f' = s(1 + z(1-s)), f'' = q(2 + z(1-2s)), q = s(1-s)
  template <class T>
  KOKKOS_INLINE_FUNCTION static void eval(T z, JetDerivs<T>& d) {
    T const s = jet_act::sigmoid(z), q = s * (T(1) - s), r = T(1) - T(2) * s;
    // f''' = q' (2 + z r) + q (r - 2 z q), q' = q r
    d = {z * s, s * (T(1) + z * (T(1) - s)), q * (T(2) + z * r), q * r * (T(2) + z * r) + q * (r - T(2) * z * q)};
  }
};

template <>
struct JetAct<Activation::gelu> {  // z Phi: f' = Phi + z phi, f'' = phi (2 - z^2), f''' = phi (z^3 - 4 z)
  template <class T>
  KOKKOS_INLINE_FUNCTION static void eval(T z, JetDerivs<T>& d) {
    T const cdf = T(0.5) * (T(1) + compat::erf(z * T(0.7071067811865476)));
    T const pdf = T(0.3989422804014327) * compat::exp(T(-0.5) * z * z);
    d = {z * cdf, cdf + z * pdf, pdf * (T(2) - z * z), pdf * (z * z * z - T(4) * z)};
  }
};

template <>
struct JetAct<Activation::gelu_tanh> {  // z g / 2, g = 1 + tanh(u), u = c (z + k z^3)
  template <class T>
  KOKKOS_INLINE_FUNCTION static void eval(T z, JetDerivs<T>& d) {
    T const c = T(0.7978845608028654), k = T(0.044715);
    T const u = c * (z + k * z * z * z), u1 = c * (T(1) + T(3) * k * z * z), u2 = T(6) * c * k * z,
            u3 = T(6) * c * k;
    T const t = jet_act::tanh(u), q = (T(1) - t) * (T(1) + t), q1 = T(-2) * t * q,
            q2 = T(-2) * q * q + T(4) * t * t * q;
    T const g = T(1) + t, g1 = q * u1, g2 = q1 * u1 * u1 + q * u2,
            g3 = q2 * u1 * u1 * u1 + T(3) * q1 * u1 * u2 + q * u3;
    d = {T(0.5) * z * g, T(0.5) * (g + z * g1), T(0.5) * (T(2) * g1 + z * g2), T(0.5) * (T(3) * g2 + z * g3)};
  }
};

template <>
struct JetAct<Activation::sine> {
  template <class T>
  KOKKOS_INLINE_FUNCTION static void eval(T z, JetDerivs<T>& d) {
    T const s = compat::sin(z), c = compat::cos(z);
    d = {s, c, -s, -c};
  }
};

/// True where the activation has the second derivative a jet needs (not relu, leaky_relu, elu).
inline bool jet_second_order(Activation a) {
  return a != Activation::relu && a != Activation::leaky_relu && a != Activation::elu;
}

/// Runs f(JetAct<A>{}) for the activation a names.
template <class F>
void with_jet_activation(Activation a, F&& f) {
  switch (a) {
    case Activation::identity:
      return f(JetAct<Activation::identity>{});
    case Activation::relu:
      return f(JetAct<Activation::relu>{});
    case Activation::tanh:
      return f(JetAct<Activation::tanh>{});
    case Activation::sigmoid:
      return f(JetAct<Activation::sigmoid>{});
    case Activation::silu:
      return f(JetAct<Activation::silu>{});
    case Activation::gelu:
      return f(JetAct<Activation::gelu>{});
    case Activation::gelu_tanh:
      return f(JetAct<Activation::gelu_tanh>{});
    case Activation::leaky_relu:
      return f(JetAct<Activation::leaky_relu>{});
    case Activation::elu:
      return f(JetAct<Activation::elu>{});
    case Activation::softplus:
      return f(JetAct<Activation::softplus>{});
    case Activation::sine:
      return f(JetAct<Activation::sine>{});
  }
}

}  // namespace ktr
