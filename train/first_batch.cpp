// A model's first batch: see first_batch.hpp.
#include "first_batch.hpp"

#include "../core/error.hpp"
#include "session.hpp"

#include <algorithm>
#include <string>

namespace ktr {

std::unique_ptr<Trainer> trainer_from_first_batch(ExecSpace const& space, RunConfig run, std::int64_t batch,
                                                  DeviceDataset const& first, bool stepped, TrainerOptions options,
                                                  Communicator comm) {
  ModelPlan const plan = Model::plan(run.model, 1);
  std::string const why = targets_mismatch(plan, first, false, run.derivatives);
  KTR_REQUIRE(why.empty(), "label", why);
  run.batch = batch > 0 ? batch : first.count * comm.size() * std::max(run.accumulate, 1);
  std::int64_t const micro = micro_batch(run, comm.size()) > 0 ? micro_batch(run, comm.size()) : run.batch;
  KTR_REQUIRE(!stepped || first.count <= micro, "batch",
              "a batch of " + std::to_string(first.count) + " samples is larger than the run's micro-batch (" +
                  std::to_string(micro) + "): nothing was made from it");
  std::int64_t const bad = non_finite_values(space, first);
  KTR_REQUIRE(bad == 0, "input",
              "the first batch holds " + std::to_string(bad) +
                  " features or targets that are not finite (NaN or infinite): nothing was made from it");
  return std::make_unique<Trainer>(space, run, first, DeviceDataset{}, std::move(options), std::move(comm));
}

}  // namespace ktr
