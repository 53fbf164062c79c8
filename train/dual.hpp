// Forward-mode dual numbers for residual functors (train/pinn.hpp): a value and one tangent, in double, on host
// and device. A residual written once as a template over its number type is evaluated with `double` for its value
// and with `Dual` once per column it reads, which gives its derivative with respect to that column exactly: the
// user writes no derivative by hand.
//
// The functions below take a double or a Dual, so one residual compiles for both: `ktr::dual::sin(p.u())`.
#pragma once

#include "../backends/kokkos_compat.hpp"

namespace ktr::dual {

struct Dual {
  double v = 0, t = 0;  ///< value, tangent
  KOKKOS_INLINE_FUNCTION Dual() = default;
  KOKKOS_INLINE_FUNCTION Dual(double value, double tangent = 0) : v(value), t(tangent) {}
};

KOKKOS_INLINE_FUNCTION Dual operator+(Dual a, Dual b) { return {a.v + b.v, a.t + b.t}; }
KOKKOS_INLINE_FUNCTION Dual operator-(Dual a, Dual b) { return {a.v - b.v, a.t - b.t}; }
KOKKOS_INLINE_FUNCTION Dual operator*(Dual a, Dual b) { return {a.v * b.v, a.t * b.v + a.v * b.t}; }
KOKKOS_INLINE_FUNCTION Dual operator/(Dual a, Dual b) {
  return {a.v / b.v, (a.t * b.v - a.v * b.t) / (b.v * b.v)};
}
KOKKOS_INLINE_FUNCTION Dual operator-(Dual a) { return {-a.v, -a.t}; }
KOKKOS_INLINE_FUNCTION Dual operator+(Dual a, double b) { return {a.v + b, a.t}; }
KOKKOS_INLINE_FUNCTION Dual operator+(double a, Dual b) { return {a + b.v, b.t}; }
KOKKOS_INLINE_FUNCTION Dual operator-(Dual a, double b) { return {a.v - b, a.t}; }
KOKKOS_INLINE_FUNCTION Dual operator-(double a, Dual b) { return {a - b.v, -b.t}; }
KOKKOS_INLINE_FUNCTION Dual operator*(Dual a, double b) { return {a.v * b, a.t * b}; }
KOKKOS_INLINE_FUNCTION Dual operator*(double a, Dual b) { return {a * b.v, a * b.t}; }
KOKKOS_INLINE_FUNCTION Dual operator/(Dual a, double b) { return {a.v / b, a.t / b}; }
KOKKOS_INLINE_FUNCTION Dual operator/(double a, Dual b) { return {a / b.v, -a * b.t / (b.v * b.v)}; }

/// The value of either kind.
KOKKOS_INLINE_FUNCTION double value(double a) { return a; }
KOKKOS_INLINE_FUNCTION double value(Dual a) { return a.v; }

// f(a) and f'(a) for each function, once: the Dual form is (f(v), f'(v) t).
#define KTR_DUAL_FUNCTION(name, f, df)                       \
  KOKKOS_INLINE_FUNCTION double name(double v) { return f; } \
  KOKKOS_INLINE_FUNCTION Dual name(Dual a) {                 \
    double const v = a.v;                                    \
    return {f, (df)*a.t};                                    \
  }
KTR_DUAL_FUNCTION(sin, compat::sin(v), compat::cos(v))
KTR_DUAL_FUNCTION(cos, compat::cos(v), -compat::sin(v))
KTR_DUAL_FUNCTION(exp, compat::exp(v), compat::exp(v))
KTR_DUAL_FUNCTION(log, compat::log(v), 1 / v)
KTR_DUAL_FUNCTION(sqrt, compat::sqrt(v), 0.5 / compat::sqrt(v))
KTR_DUAL_FUNCTION(tanh, compat::tanh(v), 1 - compat::tanh(v) * compat::tanh(v))
KTR_DUAL_FUNCTION(square, v* v, 2 * v)
#undef KTR_DUAL_FUNCTION

}  // namespace ktr::dual
