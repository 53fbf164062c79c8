// A training session: the run's configuration, its model and its device state, created fresh from a seed or
// restored from a checkpoint. This is what the CLI drives and what a resumed run continues bit for bit.
#pragma once

#include "checkpoint.hpp"
#include "train.hpp"

#include <string>
#include <vector>

namespace ktr {

struct RunConfig {
  std::string model = Model::mlp();
  OptimizerConfig optimizer;
  std::int64_t batch = 256;  ///< samples per optimiser update, over all ranks
  int accumulate = 1;        ///< micro-batches averaged per update (optax.MultiSteps); checkpoint key, default 1
  std::uint64_t seed = 0;
  Task task = Task::classification;  ///< softmax cross-entropy on labels, or `loss` on values
  RegressionLoss loss;  ///< regression: mse (default), l1, huber or bce (checkpoints record a non-default one)
  Reduction reduction = Reduction::mean;  ///< of the element losses (checkpoints record sum)
  InputTransformMode normalize =
      InputTransformMode::standard;  ///< how `input_transform` was chosen (checkpoints record the name)
  InputTransform input_transform;    ///< the input transform the gather applies (kept in checkpoints)
  /// The arithmetic of the run's matrix products and convolutions: fp32, tf32 (CUDA builds) or bf16 (mixed
  /// precision: backends/gemm.hpp). Checkpoints record a precision other than fp32; a resume continues in it
  /// unless told otherwise (`ktr train --resume --precision`).
  MatmulPrecision precision = MatmulPrecision::fp32;
  /// Sobolev training (train/sobolev.hpp): a JetSpec ("d0 d1", "d0,0 lap", ...) whose derivatives the regression
  /// targets carry beside each value ((N, m, 1 + T)), and the weight of their mean squared error in the loss.
  /// Empty: plain targets. Checkpoints record both where the spec is not empty.
  std::string derivatives;
  float derivative_weight = 1.0f;
};

class Session {
 public:
  /// Builds the model and its state, parameters initialised on the device from config.seed and broadcast from
  /// rank 0 of `comm` (every rank of a data-parallel run constructs its Session; the data is replicated).
  Session(RunConfig const& config, int max_k, Communicator const& comm = Communicator());
  /// The same on the caller's instance: initialisation is enqueued on `space` (work the caller enqueues there
  /// afterwards sees it; nothing else is fenced).
  Session(ExecSpace const& space, RunConfig const& config, int max_k, Communicator const& comm = Communicator());
  /// Rebuilds a session from a checkpoint (model description, optimiser, step, seed) with room for max_k. Any
  /// rank count that divides the batch (with the accumulation) resumes the same run.
  static std::unique_ptr<Session> restore(std::string const& path, int max_k,
                                          Communicator const& comm = Communicator());
  /// The same from a checkpoint already read from `path` (validate its run_config() before allocating), with
  /// `config` (run_config(ckpt) with any allowed changes, such as accumulate) in place of the checkpoint's.
  static std::unique_ptr<Session> restore(Checkpoint const& ckpt, std::string const& path, int max_k,
                                          Communicator const& comm = Communicator(),
                                          RunConfig const* config = nullptr);
  /// The same on the caller's instance: allocations, uploads and their waits use `space` alone.
  static std::unique_ptr<Session> restore(ExecSpace const& space, Checkpoint const& ckpt, std::string const& path,
                                          int max_k, Communicator const& comm = Communicator(),
                                          RunConfig const* config = nullptr);
  /// Writes parameters, optimiser state, step and configuration atomically to `path`, after waiting for `space`
  /// (the instance that ran the training). Refuses (ktr::Error, file untouched) to save non-finite values.
  /// Data-parallel runs keep identical state on every rank: one rank (the CLI: rank 0) saves.
  void save(ExecSpace const& space, std::string const& path) const;
  /// What save() writes, in memory (a run resized or moved restores from it); refuses non-finite state naming
  /// `what`.
  Checkpoint snapshot(ExecSpace const& space, std::string const& what) const;

  RunConfig const& config() const { return config_; }
  Model& model() { return model_; }
  TrainState& state() { return state_; }
  /// Replaces the run's input transform (weights loaded with the transform they were trained with): recorded
  /// from here on, as a checkpoint records it.
  void set_input_transform(InputTransform transform) {
    config_.input_transform = transform, config_.normalize = InputTransformMode::recorded;
    state_.input_transform = std::move(transform), state_.normalize = InputTransformMode::recorded;
  }

 private:
  void make_sobolev(ExecSpace const& space);  // RunConfig::derivatives: the Sobolev loss and its targets' buffer

  RunConfig config_;
  Model model_;
  TrainState state_;
};

/// The run configuration a checkpoint records; throws ktr::Error naming `path` and the field otherwise.
/// A recorded per-feature input transform is uploaded on `space`.
RunConfig run_config(Checkpoint const& ckpt, std::string const& path, ExecSpace const& space = ExecSpace());

/// A trained model loaded for inference (from a checkpoint written by the CLI or by Session::save): the model
/// sized for batches up to max_batch, its input transform and task in `config`, and the step it was saved at.
struct TrainedModel {
  RunConfig config;
  std::unique_ptr<Model> model;
  std::int64_t step = 0;
};
TrainedModel load_trained_model(std::string const& path, std::int64_t max_batch);
/// The same from a checkpoint already read from `path` (so that its run_config() can be checked first).
TrainedModel load_trained_model(Checkpoint const& ckpt, std::string const& path, std::int64_t max_batch);
/// The same on the caller's instance: allocation, upload and their wait use `space` alone.
TrainedModel load_trained_model(ExecSpace const& space, Checkpoint const& ckpt, std::string const& path,
                                std::int64_t max_batch);

/// An Evaluator and a Predictor for a session's (or a loaded model's) model, with the input transform and the task
/// the model was trained with: the low-level counterparts of Trainer::evaluate and Trainer::predict, with no way
/// to pass another transform. Buffers for batches of up to `batch` samples are allocated on `space`.
Evaluator evaluator_for(ExecSpace const& space, Session& session, std::int64_t batch);
Evaluator evaluator_for(ExecSpace const& space, TrainedModel const& model, std::int64_t batch);
Predictor predictor_for(ExecSpace const& space, Session& session, std::int64_t batch);
Predictor predictor_for(ExecSpace const& space, TrainedModel const& model, std::int64_t batch);

/// Bytes of device memory a Session for `config` holds on one of `ranks` ranks (model arena, gradients, optimiser
/// state, workspace, micro-batch buffers, evaluation batch), from the host-side plan of its model (planned for
/// the micro-batch); checked arithmetic.
std::int64_t run_device_bytes(RunConfig const& config, ModelPlan const& plan, int ranks = 1);

/// Why a model of `plan` cannot learn `data`'s targets, "" if it can (the one statement of the rule, for every
/// door): class labels need a model that ends in (B, classes) with at least 2 outputs, and (`check_classes`)
/// exactly the data's num_classes; float targets one value per output, or with `derivatives` (a run's
/// RunConfig::derivatives) 1 + its tokens per output.
std::string targets_mismatch(ModelPlan const& plan, DeviceDataset const& data, bool check_classes,
                             std::string const& derivatives = "");

/// Refuses (ktr::Error) a run whose model, optimiser state and workspace on one of `ranks` ranks
/// (run_device_bytes) exceed the device memory free now: a model of hundreds of GiB is refused by name, not by a
/// failed allocation. Every Session checks it. The message starts with `what`.
void check_fits_in_memory(RunConfig const& config, int ranks = 1, std::string const& what = "ktr::Session");

/// Samples of one rank's micro-batch: config.batch / (ranks * config.accumulate), or 0 if that is not whole.
std::int64_t micro_batch(RunConfig const& config, int ranks);

/// A device buffer copied to the host on `space`, after the work enqueued there (fences that instance only).
std::vector<float> download(ExecSpace const& space, DeviceView<float*> const& v);
/// The same on the default instance (tests, tools).
std::vector<float> download(DeviceView<float*> const& v);

}  // namespace ktr
