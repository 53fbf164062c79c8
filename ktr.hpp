// ktr: a device-resident training runtime on Kokkos. The one header an application includes:
//
//   #include <ktr/ktr.hpp>
//
// It exports what an application uses: the Trainer (a run: fit, online steps, evaluate, predict, checkpoints),
// the session, dispatch and evaluation underneath it, datasets over files or the application's own views,
// models, optimisers and schedules, checkpoints and safetensors, the Kokkos lifetime, the communicator for
// data-parallel runs and DeviceStream (an instance with a stream of its own). Kernels and their functors, the
// Kokkos 3.4/4.x compatibility layer, stream capture and the captured-program cache, the host BLAS's internals and
// hashing are not part of it: no impl:: or compat:: name is reachable from here (test
// Umbrella.KtrHppReachesPublicHeadersOnly); tests and benchmarks include those headers by name.
//
// Layers of the library, each using only those above it (cmake/layers.txt, checked in CI):
//   core/      tensors, element-wise kernels, checked sizes, strict parsing
//   backends/  everything backend-specific: Kokkos 3.4/4.x compatibility, gemm dispatch, captured graphs
//   models/    model descriptions, the layer registry, activations, the parameter arena, layers, losses, models
//   optim/     optimisers and learning-rate schedules over the arena
//   data/      datasets on the device: IDX and .npy files, caller views, batches gathered on the device
//   train/     the Trainer, the K-step loop, evaluation, sessions, checkpoints, safetensors, Kokkos lifetime
#pragma once

#include <ktr/backends/collective.hpp>
#include <ktr/backends/stream.hpp>
#include <ktr/core/error.hpp>
#include <ktr/core/tensor.hpp>
#include <ktr/core/types.hpp>
#include <ktr/data/dataset.hpp>
#include <ktr/data/idx.hpp>
#include <ktr/models/activation.hpp>
#include <ktr/models/loss.hpp>
#include <ktr/models/model.hpp>
#include <ktr/models/registry.hpp>
#include <ktr/optim/optimizer.hpp>
#include <ktr/optim/schedule.hpp>
#include <ktr/train/checkpoint.hpp>
#include <ktr/train/interop.hpp>
#include <ktr/train/runtime.hpp>
#include <ktr/train/session.hpp>
#include <ktr/train/train.hpp>
#include <ktr/train/trainer.hpp>
