// A training run as a library: the session (model, optimiser, step), its data, the per-epoch evaluation, the
// checkpoints and the policy that ties them together — dispatches of K steps with one read-back each, divergence
// detection (nothing non-finite is ever saved), a stop request honoured at the next dispatch on every rank, a
// checkpoint after every epoch and on a stop, and resuming a checkpoint bit for bit. The ktr CLI is this class
// plus flags and printing (its hooks print the progress line and write JSON records); an application implements
// the hooks however it likes, or none at all.
//
//   ktr::Trainer trainer(space, config, train_data, test_data);   // or Trainer::resume(space, "run.ckpt", ...)
//   ktr::RunSummary const s = trainer.fit(space, /*epochs=*/5);
//   trainer.predict(space, features, out);
#pragma once

#include "../core/error.hpp"
#include "session.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace ktr {

/// How a Trainer runs, beyond the RunConfig that a checkpoint records.
struct TrainerOptions {
  int steps_per_dispatch = 16;     ///< optimiser steps per dispatch (K): one metrics read-back each
  std::string checkpoint;          ///< saved after every epoch and when stopped; "" saves nothing (rank 0 saves)
  bool evaluate = true;            ///< evaluate the held-out data after every epoch (rank 0), if there is any
  std::int64_t eval_batch = 1000;  ///< samples per evaluation batch
  bool capture = true;             ///< replay captured K-step programs where the backend can (else the plain loop)
  /// replicated: every rank holds the whole training data and takes its rows of each update's batch; sharded:
  /// each rank's data is its own shard (an online run's replay buffer), of which it draws batch / ranks per
  /// update.
  DataLayout layout = DataLayout::replicated;
  /// Online updates over `accumulate` calls take the sum of the calls' gradients, as TorchFort's
  /// grad_accumulation_steps does (ktr's own: their mean).
  bool sum_accumulated_calls = false;
};

/// One dispatch of K steps, as read back.
struct DispatchRecord {
  std::int64_t step = 0;   ///< optimiser steps taken after it
  std::int64_t epoch = 0;  ///< the epoch it belongs to (1-based)
  int k = 0;               ///< steps in it
  double loss = 0;         ///< mean training loss of its steps
  double quality = 0;      ///< classification: accuracy; regression: RMSE
  double samples_per_s = 0;
};

/// One finished epoch.
struct EpochRecord {
  std::int64_t epoch = 0;
  double train_loss = 0, train_quality = 0;  ///< mean over the epoch's steps (quality: accuracy or RMSE)
  bool evaluated = false;                    ///< `test` holds the held-out figures
  EvalResult test;
  double wall_s = 0;  ///< since fit() started
};

/// What fit() did.
struct RunSummary {
  std::int64_t first_step = 0, last_step = 0;  ///< the step fit() started from and the one it reached
  double wall_s = 0, samples_per_s = 0;
  bool evaluated = false;  ///< `test` holds the held-out figures of the final model
  EvalResult test;
  bool stopped = false;  ///< a stop request ended the run early (its state was saved if a checkpoint was named)
};

/// Callbacks of a run; each does nothing unless overridden. They run on the host between dispatches.
class TrainerHooks {
 public:
  virtual ~TrainerHooks() = default;
  virtual void on_dispatch(DispatchRecord const& record) { (void)record; }
  virtual void on_epoch(EpochRecord const& record) { (void)record; }
  /// A step's loss was not finite: fit() throws DivergenceError right after this.
  virtual void on_divergence(std::int64_t step, float loss) { (void)step, (void)loss; }
  /// Capturing the K-step program failed (the run goes on with the plain loop); called once.
  virtual void on_capture_failed(std::string const& reason) { (void)reason; }
  /// Asked after every dispatch (any rank's true stops every rank at the same step).
  virtual bool stop_requested() { return false; }
};

class Trainer {
 public:
  /// A fresh run of config.model on `train` (and `test`, evaluated after every epoch; may be empty). The task
  /// comes from the data, and the input transform is fitted on `train` as config.normalize says. Parameters are
  /// initialised on `space` from config.seed (and broadcast from rank 0 of `comm`).
  Trainer(ExecSpace const& space, RunConfig config, DeviceDataset train, DeviceDataset test = {},
          TrainerOptions options = {}, Communicator comm = Communicator());
  /// A run continued from the checkpoint at `path`: its model, optimiser, batch, seed, input transform and step.
  /// `accumulate` > 0 replaces the recorded accumulation (the trajectory does not depend on it).
  static std::unique_ptr<Trainer> resume(ExecSpace const& space, std::string const& path, DeviceDataset train,
                                         DeviceDataset test = {}, TrainerOptions options = {},
                                         Communicator comm = Communicator(), int accumulate = 0);
  /// The same from a checkpoint already read from `path`, with `config` (its run_config(), checked by the caller,
  /// with any allowed change such as the accumulation) in place of the recorded one.
  static std::unique_ptr<Trainer> resume(ExecSpace const& space, Checkpoint const& ckpt, std::string const& path,
                                         RunConfig const& config, DeviceDataset train, DeviceDataset test = {},
                                         TrainerOptions options = {}, Communicator comm = Communicator());

  /// A run that has seen no data: `config` carries its task and input transform (weights loaded for inference
  /// before any training, TorchFort's create-load-infer); nothing is fitted.
  static std::unique_ptr<Trainer> untrained(ExecSpace const& space, RunConfig const& config,
                                            TrainerOptions options = {}, Communicator comm = Communicator());
  /// This run with room for updates of `batch` samples (over all ranks): parameters, optimiser state, step and
  /// input transform carried over exactly (an online run whose callers' batches grew). One rank only: the others
  /// would not follow.
  std::unique_ptr<Trainer> with_batch(ExecSpace const& space, std::int64_t batch) const;
  /// Online calls taken toward the current accumulated update (0 when every update is complete).
  int pending_calls() const { return pending_; }
  /// Values per sample of the run's targets: the model's outputs (its classes, for labels), times 1 + the
  /// derivative tokens where the targets carry derivatives (RunConfig::derivatives).
  std::int64_t target_width() const;

  /// Trains on `space` until `epochs` epochs are done, counting those a resumed run had done (none left: it only
  /// evaluates). Throws DivergenceError on a non-finite loss (the checkpoint keeps its last finite state).
  RunSummary fit(ExecSpace const& space, std::int64_t epochs, TrainerHooks& hooks);
  RunSummary fit(ExecSpace const& space, std::int64_t epochs);

  /// Online training: one optimiser step on a batch the caller hands over, read in place (features and targets
  /// as dataset_from_views takes them: any layout, float or uint8 features, int32 labels or float values), with
  /// the run's input transform. The batch may have any size up to the run's micro-batch (its batch / (ranks x
  /// accumulate)); with several ranks, each hands its own batch and the update averages all of them. step()
  /// returns the step's loss (one read-back); enqueue_step() leaves it on the device (last_loss() reads it) and
  /// returns once the step is enqueued — for class labels after one small check that they lie within the model's
  /// classes (a reduction read back). Every update advances the run's step counter, schedule included. With
  /// accumulate N > 1 an update spans N calls (TorchFort's grad_accumulation_steps), each a micro-batch of one
  /// size: the N-th applies the mean gradient; the loss is each call's own. A checkpoint keeps completed updates.
  template <class FeatureView, class TargetView>
  float step(ExecSpace const& space, FeatureView const& x, TargetView const& y) {
    enqueue_step(space, x, y);
    return last_loss(space);
  }
  template <class FeatureView, class TargetView>
  void enqueue_step(ExecSpace const& space, FeatureView const& x, TargetView const& y) {
    int const classes = config().task == Task::classification ? int(model().output_width()) : 0;
    enqueue_step(space, dataset_from_views(space, x, y, classes));
  }
  void enqueue_step(ExecSpace const& space, DeviceDataset const& batch);
  /// The loss of the last online step (waits for `space`; a collective with several ranks).
  float last_loss(ExecSpace const& space);

  /// Predictions for features alone (any layout, (N, ...) as the model takes them) into `out` (N, width).
  template <class FeatureView>
  void predict(ExecSpace const& space, FeatureView const& x,
               Kokkos::View<float**, Kokkos::LayoutStride, MemSpace> const& out) {
    predict(space, dataset_from_features(x), out);
  }

  /// A field model's predictions into an (N, H, W, C) view of any layout, whose extents must be the model's
  /// output's (else ktr::Error naming them): a contiguous LayoutRight view is written in place, any other through
  /// one (N, H W C) buffer.
  template <class... P>
  void predict(ExecSpace const& space, DeviceDataset const& inputs, Kokkos::View<float****, P...> const& out) {
    Shape const want = model().output_shape(std::int64_t(out.extent(0)));
    Shape const got{std::int64_t(out.extent(0)), std::int64_t(out.extent(1)), std::int64_t(out.extent(2)),
                    std::int64_t(out.extent(3))};
    KTR_REQUIRE(got == want, "ktr::Trainer::predict",
                "the output view is " + got.str() + ", the model predicts " + want.str());
    std::int64_t const n = got[0], h = got[1], w = got[2], c = got[3];
    using Out = Kokkos::View<float****, P...>;
    if constexpr (std::is_same_v<typename Out::array_layout, Kokkos::LayoutRight>) {
      if (out.span_is_contiguous()) {
        predict(space, inputs,
                Kokkos::View<float**, Kokkos::LayoutStride, MemSpace>(
                    out.data(),
                    Kokkos::LayoutStride(std::size_t(n), std::size_t(h * w * c), std::size_t(h * w * c), 1)));
        return;
      }
    }
    Kokkos::View<float**, Kokkos::LayoutRight, MemSpace> flat(
        Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "ktr::trainer::field_predictions"), std::size_t(n),
        std::size_t(h * w * c));
    predict(space, inputs, Kokkos::View<float**, Kokkos::LayoutStride, MemSpace>(flat));
    Kokkos::parallel_for(
        "ktr::trainer::store_field",
        Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<4>, Kokkos::IndexType<std::int64_t>>(space, {0, 0, 0, 0},
                                                                                           {n, h, w, c}),
        KOKKOS_LAMBDA(std::int64_t s, std::int64_t i, std::int64_t j, std::int64_t k) {
          out(s, i, j, k) = flat(s, (i * w + j) * c + k);
        });
  }
  template <class FeatureView, class... P>
  void predict(ExecSpace const& space, FeatureView const& x, Kokkos::View<float****, P...> const& out) {
    predict(space, dataset_from_features(x), out);
  }

  /// Replaces the data the run trains on and evaluates (an in-situ run whose data grows between calls; the
  /// samples and targets must match the model). The step counter goes on: the shuffle continues from it.
  void set_data(DeviceDataset train, DeviceDataset test = {});
  /// Trains `steps` more steps on the current data in dispatches of K (one read-back each; no evaluation, no
  /// checkpoint, no epoch bookkeeping: an in-situ loop calls it between simulation steps). Returns the mean loss
  /// of the last dispatch; a non-finite loss throws DivergenceError; a stop request ends it early.
  double advance(ExecSpace const& space, std::int64_t steps, TrainerHooks& hooks);
  double advance(ExecSpace const& space, std::int64_t steps);
  /// The same with no read-back at all: returns once the dispatches are enqueued. last_advance_loss() then reads
  /// the last dispatch back (the mean loss of its steps), and throws DivergenceError if any update since the last
  /// read-back was refused or a loss of that dispatch is not finite.
  void enqueue_advance(ExecSpace const& space, std::int64_t steps);
  double last_advance_loss(ExecSpace const& space);

  /// Loss and accuracy (or MSE) of the current model on `data`, with the run's input transform.
  EvalResult evaluate(ExecSpace const& space, DeviceDataset const& data);
  /// Predictions for every sample of `inputs` into `out` (N, width), with the run's input transform.
  void predict(ExecSpace const& space, DeviceDataset const& inputs,
               Kokkos::View<float**, Kokkos::LayoutStride, MemSpace> const& out);
  /// Replaces the model's parameters (the arena's `params.size()` floats, every one finite) and, if `transform` is
  /// given, the input transform they were trained with; optimiser state and step stay. Throws ktr::Error naming
  /// `what` and changes nothing otherwise.
  void set_weights(ExecSpace const& space, std::vector<float> const& params, InputTransform const* transform,
                   std::string const& what);
  /// Saves the run (parameters, optimiser state, step, configuration) atomically to `path`.
  void save(ExecSpace const& space, std::string const& path) const;

  RunConfig const& config() const { return session_->config(); }
  Model& model() { return session_->model(); }
  Session& session() { return *session_; }
  /// The optimiser updates taken so far (a resumed run counts from its checkpoint's).
  std::int64_t steps_taken() const { return session_->state().host_step(); }
  std::int64_t steps_per_epoch() const { return steps_per_epoch_; }
  /// Samples one rank's training data must hold for an update: the batch, or with sharded data its share.
  std::int64_t samples_per_update_here() const;
  DeviceDataset const& train_data() const { return train_; }
  DeviceDataset const& test_data() const { return test_; }
  TrainerOptions const& options() const { return options_; }
  Communicator const& communicator() const { return comm_; }

 private:
  Trainer(std::unique_ptr<Session> session, DeviceDataset train, DeviceDataset test, TrainerOptions options,
          Communicator comm);
  bool lead() const { return comm_.rank() == 0; }
  std::string derivatives_note() const;  // ", with derivatives '...': targets (N, m, 1 + T)", or ""
  // One dispatch of k steps and its read-back: divergence checked, the record reported; the sum of its k losses
  // and its correct answers in `loss` and `hits`.
  DispatchRecord run_dispatch(ExecSpace const& space, int k, TrainerHooks& hooks, double& loss,
                              std::int64_t& hits);
  void enqueue_dispatch(ExecSpace const& space, int k, TrainerHooks& hooks);  // captured or plain, as options say
  // Throws DivergenceError for a refused update since the last read-back or a non-finite loss among the k.
  void check_metrics(ExecSpace const& space, StepMetrics const& m, int k, TrainerHooks& hooks);
  void save_if_asked(ExecSpace const& space) const;
  // After a read-back: true if the optimiser refused an update since the last one (its step then did not
  // advance: the host's count follows the device's again).
  bool refused_since_last(ExecSpace const& space, StepMetrics const& m);
  Evaluator& evaluator(
      ExecSpace const& space);  // rank 0's evaluation, in batches of up to eval_batch (at most the model's batch)

  std::unique_ptr<Session> session_;
  DeviceDataset train_, test_;
  TrainerOptions options_;
  Communicator comm_;
  std::int64_t steps_per_epoch_ = 0;
  bool capture_reported_ = false;
  std::int64_t refused_seen_ = 0;  // the optimiser's refusals already reported
  int last_k_ = 0;                 // steps of the last dispatch enqueued
  // Online steps: one state per batch size, sharing the run's optimiser moments and step counter.
  std::map<std::int64_t, std::unique_ptr<TrainState>> online_;
  TrainState* last_online_ = nullptr;
  int pending_ = 0;                 // calls of the current accumulated update taken (TorchFort's accumulation)
  int last_micro_ = 0;              // the micro-batch index of the last online call
  std::int64_t pending_count_ = 0;  // their batch size
  std::unique_ptr<Evaluator> evaluator_;  // made on first use and kept
  std::unique_ptr<Predictor> predictor_;
};

}  // namespace ktr
