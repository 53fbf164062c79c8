// The training loop: K complete optimiser steps per dispatch with no host synchronisation between them.
//
//   for k in 0..K-1:                       (all enqueued on one execution space instance)
//     for j in 0..N-1:                     (N = accumulate micro-batches per update; usually 1)
//       gather_batch(step, j, rank) -> x (b, ...), targets: labels (b) or values (b, T);  b = B / (R N)
//       out = model.forward(x)
//       loss[k,j], correct[k,j], dout = softmax_cross_entropy(out, labels) or mean_squared_error(out, values)
//       model.backward()   -> gradient arena (N > 1: summed into a second arena-sized buffer, times 1 / (R N))
//     comm.allreduce_sum(gradients)        (R ranks: the one collective of the step; a no-op on one rank)
//     optimizer.update()   -> parameter arena, moments, step += 1 (refused, changing nothing, where the gradient
//                             or the step's loss is not finite)
//   read loss[0..K), correct[0..K) back once (averaged over micro-batches and ranks)
//
// Data parallelism (R ranks of a Communicator): with replicated data every rank holds the whole dataset and takes
// rows [(j R + r) b, (j R + r + 1) b) of each global batch from the same permutation, so R ranks with global batch
// B follow the trajectory of one rank with batch B (up to summation order); with sharded data each rank takes
// its micro-batches from a permutation of its own shard.
//
// On CUDA (and HIP with Kokkos Kernels 4.x) the K-step program is captured once per (model, data, K, precision,
// stream) on the caller's stream and replayed (the last 8 programs are kept); elsewhere, and on the null stream,
// the same kernels run as a loop.
#pragma once

#include "../backends/stream.hpp"
#include "evaluate.hpp"
#include "train_state.hpp"

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ktr {

/// Enqueues K complete steps on `space`: no fence, no host copy, no allocation (but in a bf16 run's first call,
/// which makes its parameters' bf16 copy: TrainState::params16).
void train_steps(ExecSpace const& space, TrainState& state, Model& model, DeviceDataset const& data, int k);

/// One call's part of an update that spans state.parallel.accumulate calls (TorchFort's grad_accumulation_steps):
/// the forward and backward pass of `data` (one micro-batch, all of it: data.count == state.micro_batch) as
/// micro-batch `j`, its gradient added into the update's sum; the call with j == accumulate - 1 allreduces the sum
/// and applies the update (refused, as train_steps refuses one, where a loss or the gradient is not finite).
/// Micro-batch j's loss goes to state.loss[j].
void train_micro_step(ExecSpace const& space, TrainState& state, Model& model, DeviceDataset const& data, int j);

/// Runs K steps: replays the captured K-step program for (model, data, K, precision, stream) where the backend,
/// the instance and the communicator can capture (recording it on the first such dispatch, after running it
/// plainly; MPI without NCCL waits for the host in every step, so it runs plainly), else train_steps. Advances
/// state.host_step(). Asynchronous.
DispatchPath dispatch(ExecSpace const& space, TrainState& state, Model& model, DeviceDataset const& data, int k);

/// Per-step metrics of a dispatch.
struct StepMetrics {
  std::vector<float> loss;
  std::vector<std::int32_t> correct;
  std::int64_t refused = 0;  ///< updates the run's optimiser has refused so far (non-finite loss or gradient)
};
/// Reads the K metrics of the last dispatch back (waits for `space`, the instance that ran it; one transfer
/// each): per update, the mean loss over its micro-batches and ranks and the correct count of the whole global
/// batch (summed over ranks: a collective, so every rank calls it).
StepMetrics read_metrics(ExecSpace const& space, TrainState const& state, int k);

}  // namespace ktr
