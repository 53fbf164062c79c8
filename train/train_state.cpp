// A run's device state besides the model (TrainState): allocated once, checked before anything is allocated.
#include "train_state.hpp"

#include "../core/error.hpp"
#include "program_cache.hpp"

#include <string>

namespace ktr {

namespace {

// The micro-batch of one rank: batch / (ranks * accumulate), checked before anything is allocated.
std::int64_t micro_batch_of(Model const& model, std::int64_t batch, Parallelism const& p) {
  KTR_REQUIRE(p.accumulate >= 1, "accumulate", "must be at least 1");
  std::int64_t const parts = std::int64_t(p.comm.size()) * p.accumulate;
  KTR_REQUIRE(batch > 0 && batch % parts == 0, "batch",
              std::to_string(batch) + " is not a multiple of ranks x accumulate = " +
                  std::to_string(p.comm.size()) + " x " + std::to_string(p.accumulate));
  std::int64_t const micro = batch / parts;
  KTR_REQUIRE(
      micro <= model.max_batch(), "batch",
      "the micro-batch " + std::to_string(micro) + " must be in [1, " + std::to_string(model.max_batch()) + "]");
  return micro;
}

}  // namespace

TrainState::TrainState(Model const& model, OptimizerConfig const& opt, std::int64_t batch_, std::uint64_t seed_,
                       InputTransform transform_, int max_k_, Task task_, Parallelism parallel_)
    : TrainState(ExecSpace(), model, opt, batch_, seed_, std::move(transform_), max_k_, task_,
                 std::move(parallel_)) {}

TrainState::TrainState(ExecSpace const& space, Model const& model, OptimizerConfig const& opt, std::int64_t batch_,
                       std::uint64_t seed_, InputTransform transform_, int max_k_, Task task_,
                       Parallelism parallel_)
    : optimizer(opt, model.arena().size(), space),
      step(Kokkos::view_alloc(space, "ktr::train::step")),
      batch(batch_),
      parallel(std::move(parallel_)),
      micro_batch(micro_batch_of(model, batch_, parallel)),
      seed(seed_),
      input_transform(transform_),
      max_k(max_k_),
      task(task_),
      x(space, "ktr::train::x", model.input_shape(micro_batch)),
      y(Kokkos::view_alloc(space, "ktr::train::y"), task_ == Task::classification ? std::size_t(micro_batch) : 0),
      values(task_ == Task::regression
                 ? Tensor(space, "ktr::train::values", Shape{micro_batch, model.output_width()})
                 : Tensor()),
      grad_sum(parallel.accumulate > 1 ? DeviceView<float*>(Kokkos::view_alloc(space, Kokkos::WithoutInitializing,
                                                                               "ktr::train::grad_sum"),
                                                            std::size_t(model.arena().size()))
                                       : DeviceView<float*>()),
      loss(Kokkos::view_alloc(space, "ktr::train::loss"), std::size_t(max_k_) * std::size_t(parallel.accumulate)),
      correct(Kokkos::view_alloc(space, "ktr::train::correct"),
              std::size_t(max_k_) * std::size_t(parallel.accumulate)),
      loss_partials(!device_is_host && task_ == Task::regression
                        ? DeviceView<double*>(Kokkos::view_alloc(space, "ktr::train::loss_partials"),
                                              std::size_t(kLossPartials))
                        : DeviceView<double*>()) {
  KTR_REQUIRE(max_k_ > 0, "steps_per_dispatch", "must be positive");
  programs_ = std::make_unique<ProgramCache>();
}

TrainState::~TrainState() = default;

std::size_t TrainState::captured_programs() const { return programs_->size(); }
std::size_t TrainState::captured_program_capacity() const { return programs_->capacity(); }
void TrainState::limit_captured_programs(std::size_t capacity) { programs_->set_capacity(capacity); }
std::int64_t TrainState::evicted_programs() const { return programs_->evictions(); }

}  // namespace ktr
