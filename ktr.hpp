// ktr: a device-resident training runtime on Kokkos. The one header an application includes:
//
//   #include <ktr/ktr.hpp>
//
// Layers of the library, each using only those above it:
//   core/      tensors, element-wise kernels, the parameter arena, checked sizes, the losses
//   backends/  everything backend-specific: Kokkos 3.4/4.x compatibility, gemm dispatch, captured graphs
//   models/    model descriptions, layers and the models built from them
//   optim/     optimisers and learning-rate schedules over the arena
//   data/      datasets on the device: IDX files, batches gathered and normalised on the device
//   train/     the K-step training loop, evaluation, sessions, checkpoints, Kokkos lifetime
#pragma once

#include <ktr/backends/collective.hpp>
#include <ktr/backends/graph.hpp>
#include <ktr/backends/kokkos_compat.hpp>
#include <ktr/core/error.hpp>
#include <ktr/core/ops.hpp>
#include <ktr/core/permutation.hpp>
#include <ktr/core/tensor.hpp>
#include <ktr/core/types.hpp>
#include <ktr/data/dataset.hpp>
#include <ktr/data/idx.hpp>
#include <ktr/models/arena.hpp>
#include <ktr/models/loss.hpp>
#include <ktr/models/model.hpp>
#include <ktr/optim/optimizer.hpp>
#include <ktr/optim/schedule.hpp>
#include <ktr/train/checkpoint.hpp>
#include <ktr/train/runtime.hpp>
#include <ktr/train/session.hpp>
#include <ktr/train/train.hpp>
#include <ktr/train/trainer.hpp>
