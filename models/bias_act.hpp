// The bias and activation passes the dense and convolution layers share (after and before their gemms). Internal
// to models/.
#pragma once

#include "../core/tensor.hpp"
#include "activation.hpp"

#include <cstdint>

namespace ktr {

namespace impl {
/// y[i, j] = act(y[i, j] + b[j]) on a (rows, cols) matrix; if z is not null, z[i, j] = y[i, j] + b[j] too.
void bias_act_forward(ExecSpace const& space, Matrix const& y, DeviceView<const float*> const& b, Activation act,
                      float* z);
/// dz = act'(z) dy in place (from y = act(z), or from z where the activation needs it) and db[j] = sum_i dz[i, j].
/// Hosts: one pass, each thread owns a block of 64 columns and sums down the rows in order; with fewer blocks than
/// threads (a convolution's few features over every pixel), dz on every thread first, then the same sums. Where
/// `dz16` is not null (hosts), dz's bf16 bits (bf16_bits) go there too, for a bf16 convolution's backward. GPUs:
/// dz in one fully parallel pass (which also fills `ones`), then db (1, cols) = ones (1, rows) dz (rows, cols) as
/// one gemm (cuBLAS: a gemv over every SM, where a thread per column would leave the head's 10 columns on 10
/// threads). Deterministic, no atomics, either way.
void act_bias_backward(ExecSpace const& space, Matrix const& dy, ConstMatrix const& y, float const* z,
                       DeviceView<float*> const& db, Activation act, float* ones, std::uint16_t* dz16 = nullptr);
/// Floats of scratch act_bias_backward needs for `rows` rows: `rows` on GPUs (the ones vector), 0 on hosts.
constexpr std::int64_t act_bias_backward_scratch(std::int64_t rows) { return device_is_host ? 0 : rows; }
}  // namespace impl

}  // namespace ktr
