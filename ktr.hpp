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

#include "backends/graph.hpp"
#include "backends/kokkos_compat.hpp"
#include "core/arena.hpp"
#include "core/error.hpp"
#include "core/loss.hpp"
#include "core/ops.hpp"
#include "core/permutation.hpp"
#include "core/tensor.hpp"
#include "core/types.hpp"
#include "data/dataset.hpp"
#include "data/idx.hpp"
#include "models/model.hpp"
#include "optim/optimizer.hpp"
#include "optim/schedule.hpp"
#include "train/checkpoint.hpp"
#include "train/runtime.hpp"
#include "train/session.hpp"
#include "train/train.hpp"
