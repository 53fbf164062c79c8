// Elementwise kernels and reductions over flat device views. Each takes the execution space instance it runs on,
// launches one labelled kernel, and never fences: reductions write their result to a device scalar.
#pragma once

#include "core/types.hpp"

namespace ktr {

/// x[i] = value
void fill(ExecSpace const& space, DeviceView<float*> const& x, float value);
/// y[i] += alpha * x[i]
void axpy(ExecSpace const& space, float alpha, DeviceView<const float*> const& x, DeviceView<float*> const& y);
/// x[i] *= alpha
void scale(ExecSpace const& space, float alpha, DeviceView<float*> const& x);
/// out = sum_i x[i]   (accumulated in double, written to device memory, no host synchronisation)
void sum(ExecSpace const& space, DeviceView<const float*> const& x, DeviceAccumulator const& out);
/// out = sum_i x[i]^2
void sum_squares(ExecSpace const& space, DeviceView<const float*> const& x, DeviceAccumulator const& out);

/// Reads a device scalar back (blocking; for tests and once-per-dispatch metrics).
float read_scalar(DeviceScalar const& s);
double read_scalar(DeviceAccumulator const& s);

}  // namespace ktr
