// A model's first batch. The C, Fortran and TorchFort doors make a model before its data: its first batch makes
// the run (the task from the targets, the input transform fitted on them). Every check the first step makes is
// made here, before anything is fitted on the batch or made from it, so that a refused first batch leaves the
// model as it was created (untrained: inference and checkpoints refused) whichever door it came through.
#pragma once

#include "trainer.hpp"

#include <cstdint>
#include <memory>

namespace ktr {

/// The Trainer that `first` makes for `run`: the task from its targets, the input transform fitted on it; the
/// run's batch is `batch` samples over all ranks, or (0) this batch's count x ranks x accumulate. Throws
/// ktr::Error naming what is wrong, having made and fitted nothing, unless the first step would take the batch:
/// class labels need a model ending in (B, classes) of at least 2 outputs, float targets one value per output;
/// every feature and target finite; and where the first step runs on this very batch (`stepped`; not a replay
/// buffer's push, whose steps draw batches from it), at most the run's micro-batch (batch / (ranks x accumulate))
/// of samples.
std::unique_ptr<Trainer> trainer_from_first_batch(ExecSpace const& space, RunConfig run, std::int64_t batch,
                                                  DeviceDataset const& first, bool stepped, TrainerOptions options,
                                                  Communicator comm);

}  // namespace ktr
