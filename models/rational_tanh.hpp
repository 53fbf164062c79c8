// tanh in float as a rational function (the dense kernels' and the jets'), in a header of its own so that both the
// internal activation functors and the installed jet activations reach it.
#pragma once

#include "../backends/kokkos_compat.hpp"

namespace ktr::act {

// tanh as a rational function of z^2 (Eigen's and XLA's fast float tanh: within a few ulp of tanh on [-7.9, 7.9],
// +-1 beyond), branch-free so that the kernels' loops vectorise (libm's tanhf does not).
KOKKOS_INLINE_FUNCTION float tanh(float z) {
  float const x =
      z < -7.90531110763549805f ? -7.90531110763549805f : (z > 7.90531110763549805f ? 7.90531110763549805f : z);
  float const x2 = x * x;
  float p = -2.76076847742355e-16f;
  p = p * x2 + 2.00018790482477e-13f;
  p = p * x2 + -8.60467152213735e-11f;
  p = p * x2 + 5.12229709037114e-08f;
  p = p * x2 + 1.48572235717979e-05f;
  p = p * x2 + 6.37261928875436e-04f;
  p = p * x2 + 4.89352455891786e-03f;
  float q = 1.19825839466702e-06f;
  q = q * x2 + 1.18534705686654e-04f;
  q = q * x2 + 2.26843463243900e-03f;
  q = q * x2 + 4.89352518554385e-03f;
  return x * p / q;
}

}  // namespace ktr::act
