// The Trainer's online steps: a caller's batch per call (TorchFort's train step, with gradient accumulation over
// calls), and advancing over data the caller sets (set_data, advance) for codes that train in situ.
#include "trainer.hpp"

#include "../backends/region.hpp"
#include "../core/error.hpp"
#include "sobolev.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ktr {

void Trainer::enqueue_step(ExecSpace const& space, DeviceDataset const& batch) {
  Region const region("ktr::Trainer::step");
  TrainState& run = session_->state();
  RunConfig const& cfg = config();
  KTR_REQUIRE(batch.has_targets(), "ktr::Trainer::step", "the batch has no targets to learn from");
  KTR_REQUIRE(batch.task() == cfg.task && batch.target_width() == target_width(), "ktr::Trainer::step",
              "the batch's targets do not match the model (" +
                  std::string(cfg.task == Task::regression ? "regression" : "classification") + ", " +
                  std::to_string(model().output_width()) + " outputs" + derivatives_note() + ")");
  KTR_REQUIRE(batch.batch_shape(1) == model().input_shape(1), "ktr::Trainer::step",
              "the batch's samples are " + batch.batch_shape(1).str() + ", the model takes " +
                  model().input_shape(1).str());
  KTR_REQUIRE(batch.count <= model().max_batch(), "ktr::Trainer::step",
              "a batch of " + std::to_string(batch.count) + " samples is larger than the run's micro-batch (" +
                  std::to_string(model().max_batch()) + ")");
  int const n = cfg.accumulate;  // calls per update (TorchFort's grad_accumulation_steps)
  KTR_REQUIRE(n == 1 || pending_ == 0 || batch.count == pending_count_, "batch",
              "the calls of one accumulated update must be of one size: this one has " +
                  std::to_string(batch.count) + " samples, the update's first had " +
                  std::to_string(pending_count_));
  auto& slot = online_[batch.count];
  if (!slot) {  // each rank's own batch of b samples: b x ranks x n per update, one micro-batch per call
    slot =
        std::make_unique<TrainState>(space, model(), cfg.optimizer, batch.count * comm_.size() * n, cfg.seed,
                                     cfg.input_transform, 1, cfg.task, Parallelism{comm_, n, DataLayout::sharded});
    slot->optimizer = run.optimizer;  // shares the run's moments (views are shared handles)
    slot->step = run.step;            // and its device step counter (the schedule's position)
    slot->precision = cfg.precision;
    slot->regression = cfg.loss;
    slot->reduction = cfg.reduction;
    slot->sum_over_calls = options_.sum_accumulated_calls;
    if (run.sobolev) train_on_derivatives(space, *slot, model(), cfg.derivatives, cfg.derivative_weight);
  }
  // The plain step, never a captured program: a caller's batch usually lives at a new address every call, and a
  // program is keyed by the data's address (one step gains little from a graph anyway).
  train_micro_step(space, *slot, model(), batch, pending_);
  last_micro_ = pending_;
  pending_count_ = batch.count;
  pending_ = (pending_ + 1) % n;
  if (pending_ == 0) run.host_step_ += 1;
  last_online_ = slot.get();
}

float Trainer::last_loss(ExecSpace const& space) {
  Region const region("ktr::Trainer::last_loss");
  KTR_REQUIRE(last_online_, "ktr::Trainer::last_loss", "no online step has been taken");
  StepMetrics const m = read_metrics(space, *last_online_, 1);
  if (refused_since_last(space, m))  // this step's, or one enqueued since the last read-back
    return std::isfinite(m.loss.at(0)) ? std::numeric_limits<float>::quiet_NaN() : m.loss.at(0);
  if (last_online_->parallel.accumulate == 1) return m.loss.at(0);
  // An update over calls: this call's micro-batch loss (the others' of this update may not exist yet), over ranks.
  std::vector<double> loss(1, 0.0);
  float here = 0;
  Kokkos::deep_copy(space, Kokkos::View<float, HostSpace, Kokkos::MemoryUnmanaged>(&here),
                    Kokkos::subview(last_online_->loss, std::size_t(last_micro_)));
  space.fence();
  loss[0] = here;
  comm_.sum(loss);
  return float(loss[0] / (last_online_->reduction == Reduction::sum ? 1.0 : double(comm_.size())));
}

void Trainer::set_data(DeviceDataset train, DeviceDataset test) {
  for (DeviceDataset const* d : {&train, &test}) {
    if (d->count == 0 && d == &test) continue;
    KTR_REQUIRE(d->has_targets() && d->task() == config().task && d->target_width() == target_width() &&
                    d->batch_shape(1) == model().input_shape(1),
                "ktr::Trainer::set_data",
                "the data's samples " + d->batch_shape(1).str() + " or targets do not match the model's (" +
                    model().input_shape(1).str() + ", " + std::to_string(model().output_width()) + " outputs)");
  }
  std::int64_t const need = samples_per_update_here();
  KTR_REQUIRE(train.count >= need, "ktr::Trainer::set_data",
              "the training data holds " + std::to_string(train.count) + " samples, fewer than " +
                  (need == config().batch ? "the batch (" : "this rank's share of the batch (") +
                  std::to_string(need) + ")");
  train_ = std::move(train), test_ = std::move(test);
  steps_per_epoch_ = ktr::steps_per_epoch(train_, need);
}

double Trainer::advance(ExecSpace const& space, std::int64_t steps, TrainerHooks& hooks) {
  Region const region("ktr::Trainer::advance");
  double loss = std::numeric_limits<double>::quiet_NaN();
  for (std::int64_t done = 0; done < steps;) {
    int const k = int(std::min<std::int64_t>(options_.steps_per_dispatch, steps - done));
    double sum = 0;
    std::int64_t hits = 0;
    loss = run_dispatch(space, k, hooks, sum, hits).loss;
    done += k;
    if (comm_.any(hooks.stop_requested())) break;
  }
  return loss;
}

void Trainer::enqueue_advance(ExecSpace const& space, std::int64_t steps) {
  Region const region("ktr::Trainer::advance");
  TrainerHooks none;
  for (std::int64_t done = 0; done < steps;) {
    int const k = int(std::min<std::int64_t>(options_.steps_per_dispatch, steps - done));
    enqueue_dispatch(space, k, none);
    done += k;
  }
}

double Trainer::last_advance_loss(ExecSpace const& space) {
  Region const region("ktr::Trainer::last_advance_loss");
  KTR_REQUIRE(last_k_ > 0, "ktr::Trainer::last_advance_loss", "no dispatch has been enqueued");
  StepMetrics const m = read_metrics(space, session_->state(), last_k_);
  TrainerHooks none;
  check_metrics(space, m, last_k_, none);
  double loss = 0;
  for (int i = 0; i < last_k_; ++i) loss += m.loss[std::size_t(i)];
  return loss / last_k_;
}

double Trainer::advance(ExecSpace const& space, std::int64_t steps) {
  TrainerHooks none;
  return advance(space, steps, none);
}

}  // namespace ktr
