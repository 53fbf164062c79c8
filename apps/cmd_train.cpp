// `ktr train` and `ktr eval`: the training loop as a user sees it — dispatches of K steps, one metrics read-back
// each, a progress line, an evaluation line per epoch, JSON-lines metrics, checkpoints, and a clean Ctrl-C.
#include <ktr/backends/collective.hpp>
#include <ktr/backends/device_info.hpp>
#include <ktr/backends/gemm.hpp>
#include <ktr/backends/graph.hpp>
#include <ktr/ktr_config.hpp>

#include <ktr/core/file.hpp>
#include <ktr/train/checkpoint.hpp>
#include <ktr/train/runtime.hpp>
#include <ktr/train/session.hpp>
#include <nlohmann/json.hpp>
#include "apps/cli.hpp"
#include "apps/data.hpp"
#include "apps/flags.hpp"
#include "apps/progress.hpp"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>

namespace ktr::cli {

namespace {

volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void on_sigint(int) { g_interrupted = 1; }

char const* const kExitStatus =
    "exit status: 0 done, 1 error (data, checkpoint, memory), 2 bad flag, 3 diverged (a non-finite loss or\n"
    "parameter: training stops and nothing non-finite is saved), 130 interrupted (Ctrl-C or SIGTERM)";

// Metrics records: JSON through nlohmann::json, which writes a non-finite number (NaN, infinity) as null (JSON has
// no such numbers), so every line of a metrics file is valid JSON.
using Json = nlohmann::ordered_json;

// Metrics as JSON lines, written straight to the file and flushed line by line, so that whatever was measured
// survives an error or a crash. A fresh run replaces an earlier ktr metrics file (never any other file); a resumed
// run appends to it.
class MetricsFile {
 public:
  MetricsFile(std::string path, bool append) : path_(std::move(path)) {
    if (path_.empty()) return;
    check(path_, append);
    file_ = std::fopen(path_.c_str(), append ? "a" : "w");
    if (!file_) throw Error("--metrics " + path_ + ": cannot open for writing (" + std::strerror(errno) + ")");
  }
  ~MetricsFile() {
    if (file_) std::fclose(file_);
  }
  MetricsFile(MetricsFile const&) = delete;
  MetricsFile& operator=(MetricsFile const&) = delete;
  void line(Json const& record) {
    if (!file_) return;
    if (std::fprintf(file_, "%s\n", record.dump().c_str()) < 0 || std::fflush(file_) != 0)
      throw Error("--metrics " + path_ + ": write failed (" + std::strerror(errno) + ")");
  }

  // Before any work: an existing file a fresh run would replace is ours, and a file can be written at `path`.
  static void check(std::string const& path, bool append) {
    if (!append) refuse_foreign(path);
    check_output_path(path, "--metrics");
  }

 private:
  // An existing file is ours if it is empty or its first line is a ktr metrics record.
  static void refuse_foreign(std::string const& path) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) return;
    char head[16] = {};
    std::size_t const n = std::fread(head, 1, sizeof head - 1, f);
    std::fclose(f);
    if (n > 0 && std::strncmp(head, "{\"type\":", 8) != 0)
      throw Error("--metrics " + path + ": exists and is not a ktr metrics file; refusing to replace it");
  }
  std::string path_;
  std::FILE* file_ = nullptr;
};

std::string fmt(char const* format, double a, double b = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, format, a, b);
  return buf;
}

// The held-out figures of an epoch or summary record (null when there is no held-out data).
void add_test_metrics(Json& record, bool evaluated, bool regression, EvalResult const& r) {
  if (!evaluated) {
    record["test_loss"] = nullptr;
  } else if (regression) {
    record["test_loss"] = r.loss, record["test_mse"] = r.loss, record["test_rmse"] = r.rmse();
  } else {
    record["test_loss"] = r.loss, record["test_accuracy"] = r.accuracy;
  }
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Everything a run can know before it allocates: the model against both splits' shapes and class count, the
// batch against the data, and the bytes the run will hold against the device's free memory.
void validate_run(RunConfig const& cfg, DeviceDataset const& train_data, DeviceDataset const* test_data,
                  std::string const& model_flag, int ranks = 1) {
  std::int64_t const micro = micro_batch(cfg, ranks);
  if (micro == 0)
    throw FlagError("--batch: " + std::to_string(cfg.batch) + " is not a multiple of ranks x accumulate = " +
                    std::to_string(ranks) + " x " + std::to_string(cfg.accumulate));
  ModelPlan const plan = Model::plan(cfg.model, micro);
  Shape const sample = train_data.batch_shape(1);
  KTR_REQUIRE(plan.input == sample, model_flag,
              "expects inputs " + plan.input.str() + ", the data has " + sample.str());
  KTR_REQUIRE(cfg.task == train_data.task(), model_flag,
              cfg.task == Task::regression ? "the model was trained for regression, the data has class labels"
                                           : "the model was trained for classification, the data has regression "
                                             "targets");
  if (cfg.task == Task::classification)
    KTR_REQUIRE(plan.classes == train_data.num_classes, model_flag,
                "the model outputs " + std::to_string(plan.classes) + " classes, the data has " +
                    std::to_string(train_data.num_classes));
  else
    KTR_REQUIRE(plan.classes == train_data.target_width(), model_flag,
                "the model outputs " + std::to_string(plan.classes) + " values, the targets have " +
                    std::to_string(train_data.target_width()));
  if (test_data) {
    KTR_REQUIRE(test_data->batch_shape(1) == sample, "--data",
                "the test split's samples are " + test_data->batch_shape(1).str() + ", the training split's " +
                    sample.str());
    KTR_REQUIRE(test_data->task() == train_data.task() && test_data->target_width() == train_data.target_width(),
                "--data", "the test split's targets do not match the training split's");
  }
  KTR_REQUIRE(cfg.batch <= train_data.count, "--batch",
              std::to_string(cfg.batch) + " is larger than the training set (" + std::to_string(train_data.count) +
                  " samples)");
  std::int64_t const need = run_device_bytes(cfg, plan, ranks);
  std::int64_t const have = device_memory_available();
  if (have >= 0 && need > have)
    throw Error("--batch " + std::to_string(cfg.batch) + ": the model and its workspace need " +
                fmt("%.2f GiB of device memory, %.2f GiB are free", need / 1073741824.0, have / 1073741824.0));
}

}  // namespace

int train(int argc, char* argv[]) {
  CLI::App app{"Trains a model with the whole training loop on the device.", "ktr train"};
  std::string model_name, optimizer = "adam", schedule = "constant", normalize = "standard",
                          precision_name = "fp32";
  std::string ckpt_path, resume, metrics_path;
  std::int64_t batch = 256, seed = 0, epochs = 5;
  double lr = 1e-3, momentum = 0, weight_decay = 1e-4, clip_norm = 0;
  int k = 16, threads = -1, accumulate = 1;
  bool nesterov = false, no_eval = false, time_allreduce = false;
  app.add_option("--model", model_name,
                 "mlp (784-512-512-10, default for IDX data), cnn (SimpleCNN), or a description such as "
                 "'in=28x28x1 flatten dense:128:relu dense:10' or 'in=16 dense:64:relu dense:3' (default for "
                 "arrays: in=<sample> dense:128:relu dense:128:relu dense:<classes or T>)");
  app.add_option("--epochs", epochs, "epochs to train to (with --resume: the total, counting done ones)")
      ->check(integer_in(1, 100000))
      ->capture_default_str();
  app.add_option("--batch", batch,
                 "samples per optimiser step (default 256, 32 for cnn, at most N for arrays); the last partial "
                 "batch of an epoch is dropped")
      ->check(integer_in(1, 1 << 24));
  app.add_option("--optimizer", optimizer, "sgd, adam or adamw")
      ->check(one_of({"sgd", "adam", "adamw"}))
      ->capture_default_str();
  app.add_option("--lr", lr, "learning rate")->check(number_in(1e-12, 1e3))->capture_default_str();
  app.add_option("--momentum", momentum, "sgd momentum")->check(number_in(0, 0.999999))->capture_default_str();
  app.add_flag("--nesterov", nesterov, "sgd with Nesterov momentum");
  app.add_option("--weight-decay", weight_decay, "adamw decoupled weight decay")
      ->check(number_in(0, 10))
      ->capture_default_str();
  app.add_option("--clip-norm", clip_norm, "clip gradients to this global norm (0: off)")
      ->check(number_in(0, 1e9))
      ->capture_default_str();
  app.add_option("--schedule", schedule, "constant | warmup:W | cosine:D[:W[:alpha]] | step:N[:factor]")
      ->capture_default_str();
  app.add_option("--steps-per-dispatch", k, "optimiser steps per dispatch, one metrics read-back each")
      ->check(integer_in(1, 4096))
      ->capture_default_str();
  app.add_option("--seed", seed, "initialisation and shuffling seed")
      ->check(integer_in(0, INT64_MAX))
      ->capture_default_str();
  app.add_option("--normalize", normalize,
                 "standard: pixels by the training set's mean/std, float features each by its own; unit: pixels "
                 "to [0, 1]; none: inputs as given")
      ->check(one_of({"standard", "unit", "none"}))
      ->capture_default_str();
  app.add_option("--precision", precision_name, "matmul arithmetic: fp32, or tf32 (opt-in, CUDA tensor cores)")
      ->check(one_of({"fp32", "tf32"}))
      ->capture_default_str();
  app.add_option("--checkpoint", ckpt_path,
                 "save here after every epoch and on Ctrl-C (an existing file is replaced only if it is a ktr "
                 "checkpoint)");
  app.add_option("--resume", resume,
                 "continue from a checkpoint (model, optimiser, batch, seed, normalisation come from it)");
  app.add_option("--metrics", metrics_path,
                 "JSON lines: one per dispatch, one per epoch, a summary (appended to when resuming; non-finite "
                 "values are written as null)");
  app.add_option("--threads", threads, "host threads (OpenMP backend; default: OMP_NUM_THREADS or all cores)")
      ->check(thread_count());
  app.add_flag("--no-eval", no_eval, "skip the per-epoch held-out evaluation");
  app.add_option("--accumulate", accumulate,
                 "average N micro-batches' gradients per update; each rank's micro-batch is B / (ranks x N), a "
                 "whole number")
      ->check(integer_in(1, 1 << 20))
      ->capture_default_str();
  app.add_flag("--time-allreduce", time_allreduce,
               "benchmarks: a barrier before each gradient allreduce, so that its time is reported apart from the "
               "wait for the slowest rank (adds synchronisation)");
  DataOptions data_options;
  add_data_options(app, data_options);
  app.footer(
      std::string(kExitStatus) +
      "\ndata parallelism: mpirun -np R ktr train ... (an MPI build): every rank loads the data and takes its "
      "B / R samples of each batch; rank 0 prints, evaluates and writes metrics and checkpoints");
  if (!parse(app, argc, argv, 2)) return 0;
  // Flags first: every usage error is reported before any file is read or memory committed.
  if (!resume.empty()) {
    for (char const* fixed : {"--model", "--batch", "--optimizer", "--lr", "--momentum", "--nesterov",
                              "--weight-decay", "--clip-norm", "--schedule", "--seed", "--normalize"})
      if (given(app, fixed)) throw FlagError(std::string(fixed) + ": comes from the checkpoint when resuming");
  }
  std::optional<Runtime> runtime;  // declared first: it outlives every device view below
  // MPI_COMM_WORLD when the ktr binary was built with MPI (main initialised it), else one rank.
  Communicator const comm = Communicator::world();
  comm.set_timing(time_allreduce);
  bool const lead = comm.rank() == 0;  // prints, evaluates, writes metrics and checkpoints
  // The other ranks stay quiet on stdout (their errors still reach stderr).
  if (!lead && !std::freopen("/dev/null", "w", stdout))
    throw Error("cannot silence rank " + std::to_string(comm.rank()));
  RunConfig config;
  config.model = model_name.empty() ? "" : model_flag(model_name);
  config.batch = given(app, "--batch") ? batch : model_name == "cnn" ? 32 : 256;
  config.seed = std::uint64_t(seed);
  config.accumulate = accumulate;
  auto& o = config.optimizer;
  try {
    o.kind = OptimizerConfig::parse_kind(optimizer);
    o.schedule = Schedule::parse(schedule);
  } catch (Error const& e) {
    throw FlagError(e.what());
  }
  o.lr = float(lr);
  o.momentum = float(momentum);
  o.nesterov = nesterov;
  o.weight_decay = float(weight_decay);
  o.clip_norm = float(clip_norm);
  config.normalize = normalize;
  MatmulPrecision const precision = parse_matmul_precision(precision_name);
  bool const do_eval = !no_eval;
  // Every output is checked before any work: a run never trains for an epoch to fail on its first write.
  if (!ckpt_path.empty()) check_checkpoint_output(ckpt_path, "--checkpoint");
  if (!metrics_path.empty() && lead) MetricsFile::check(metrics_path, !resume.empty());
  Checkpoint resumed;
  if (!resume.empty()) resumed = read_checkpoint(resume);
  // Several ranks on a GPU node: one device each, by node-local rank.
  runtime.emplace(threads, comm.size() > 1 && !device_is_host ? comm.local_rank() : -1);
  set_matmul_precision(precision);
  if (!resume.empty()) {
    int const accumulate = config.accumulate;
    config = run_config(resumed, resume);
    if (given(app, "--accumulate")) config.accumulate = accumulate;  // the trajectory does not depend on it
  }
  auto const t_load = std::chrono::steady_clock::now();
  RunData const data = load_run_data(data_options, do_eval, config.seed);
  DeviceDataset const& train_data = data.train;
  DeviceDataset const& test_data = data.test;
  bool const evaluate = do_eval && test_data.count > 0;
  double const load_s = seconds_since(t_load);
  if (resume.empty()) {
    config.task = train_data.task();
    if (config.model.empty()) config.model = data.arrays ? default_model(train_data) : Model::mlp();
    if (data.arrays && !given(app, "--batch"))
      config.batch = std::min<std::int64_t>(config.batch, train_data.count);
  }
  validate_run(config, train_data, evaluate ? &test_data : nullptr, resume.empty() ? "--model" : resume,
               comm.size());
  if (resume.empty()) config.norm = fit_normalization(ExecSpace(), train_data, config.normalize);
  std::int64_t const spe = steps_per_epoch(train_data, config.batch);
  std::int64_t const total = epochs * spe;
  std::unique_ptr<Session> session = resume.empty() ? std::make_unique<Session>(config, k, comm)
                                                    : Session::restore(resumed, resume, k, comm, &config);
  RunConfig const& cfg = session->config();
  Model& model = session->model();
  TrainState& state = session->state();
  if (state.host_step > total)
    throw FlagError("--epochs: " + std::to_string(epochs) + " epochs are " + std::to_string(total) +
                    " steps, the checkpoint is already at step " + std::to_string(state.host_step));

  std::printf("%s\n", version_line().c_str());
  std::printf("data: %s (%lld train, %lld test, %.1f MB on the device, loaded in %.2f s)\n", data.source.c_str(),
              (long long)train_data.count, (long long)test_data.count,
              (train_data.device_bytes() + test_data.device_bytes()) / 1e6, load_s);
  std::printf("model: %s (%lld parameters)\n", cfg.model.c_str(), (long long)model.arena().num_parameters());
  std::printf("optimizer: %s lr %g schedule %s, batch %lld, %lld steps/epoch, K=%d steps per dispatch%s\n",
              OptimizerConfig::kind_name(cfg.optimizer.kind), cfg.optimizer.lr,
              cfg.optimizer.schedule.str().c_str(), (long long)cfg.batch, (long long)spe, k,
              resume.empty() ? "" : (", resumed at step " + std::to_string(state.host_step)).c_str());
  if (comm.size() > 1 || cfg.accumulate > 1)
    std::printf("data parallel: %d rank%s (%s), %d micro-batch%s of %lld per rank and update\n", comm.size(),
                comm.size() > 1 ? "s" : "", comm.transport().c_str(), cfg.accumulate,
                cfg.accumulate > 1 ? "es" : "", (long long)state.micro_batch);
  std::fflush(stdout);

  MetricsFile metrics(lead ? metrics_path : "", !resume.empty());
  Evaluator evaluator(model, 1000, cfg.norm, cfg.task);
  bool const regression = cfg.task == Task::regression;
  DeviceStream const stream;  // its own stream on CUDA, so the K-step program can be captured and replayed
  ExecSpace const& space = stream.space();
  std::string const dispatch_mode =
      !CapturedProgram::can_capture(space) ? "plain loop (" + CapturedProgram::unsupported_reason() + ")"
      : comm.host_synchronised()           ? "plain loop (the MPI allreduce waits for the host)"
                                           : "captured K-step programs, replayed";
  std::printf("dispatch: %s, matmul %s\n", dispatch_mode.c_str(), matmul_precision_name(precision));
  bool capture_reported = false;
  Progress progress(total, spe, cfg.batch, regression);
  g_interrupted = 0;
  auto const previous_int = std::signal(SIGINT, on_sigint);    // Ctrl-C
  auto const previous_term = std::signal(SIGTERM, on_sigint);  // a batch scheduler's stop
  struct RestoreSignals {
    decltype(previous_int) i, t;
    ~RestoreSignals() { std::signal(SIGINT, i), std::signal(SIGTERM, t); }
  } const restore_signals{previous_int, previous_term};
  auto const t_start = std::chrono::steady_clock::now();
  std::int64_t const first_step = state.host_step;
  double epoch_loss = 0;
  std::int64_t epoch_steps = 0, epoch_hits = 0;
  EvalResult last_eval;
  bool evaluated = false, interrupted = false;

  while (state.host_step < total) {
    std::int64_t const in_epoch = state.host_step % spe;
    int const kk = int(std::min<std::int64_t>(k, spe - in_epoch));  // dispatches never straddle an epoch end
    auto const t0 = std::chrono::steady_clock::now();
    if (dispatch(space, state, model, train_data, kk) == DispatchPath::capture_failed && !capture_reported) {
      std::fprintf(stderr, "\nktr train: capturing the K-step program failed (%s): running the plain loop\n",
                   state.capture_error.c_str());
      capture_reported = true;
    }
    StepMetrics const m = read_metrics(space, state, kk);  // the one host synchronisation of the dispatch
    double const dt = seconds_since(t0);
    double loss = 0;
    std::int64_t hits = 0;
    for (int i = 0; i < kk; ++i) {
      float const l = m.loss[std::size_t(i)];
      if (!std::isfinite(l)) {  // diverged: stop before anything non-finite reaches a checkpoint
        std::int64_t const bad_step = state.host_step - kk + i + 1;
        progress.finish();
        metrics.line(Json{{"type", "diverged"}, {"step", bad_step}, {"loss", double(l)}});
        throw DivergenceError("training diverged: the loss of step " + std::to_string(bad_step) + " is " +
                              (std::isnan(l) ? "nan" : "infinite") +
                              (ckpt_path.empty()
                                   ? std::string()
                                   : "; the checkpoint " + ckpt_path + " keeps its last finite state") +
                              " (try a lower --lr or --clip-norm)");
      }
      loss += l, hits += m.correct[std::size_t(i)];
    }
    epoch_loss += loss, epoch_steps += kk, epoch_hits += hits;
    double const samples_per_s = kk * cfg.batch / dt;
    // classification: accuracy; regression: the RMSE of the dispatch
    double const quality = regression ? std::sqrt(loss / kk) : double(hits) / double(kk * cfg.batch);
    progress.update(state.host_step, loss / kk, quality, samples_per_s);
    metrics.line(Json{{"type", "dispatch"},
                      {"step", state.host_step},
                      {"epoch", (state.host_step - 1) / spe + 1},
                      {"loss", loss / kk},
                      {regression ? "rmse" : "accuracy", quality},
                      {"samples_per_s", samples_per_s}});
    if (comm.any(g_interrupted)) {  // every rank stops at the same step
      interrupted = true;
      break;
    }
    if (state.host_step % spe == 0) {
      std::int64_t const epoch = state.host_step / spe;
      double const wall = seconds_since(t_start);
      if (evaluate && lead) last_eval = evaluator.run(space, model, test_data), evaluated = true;
      double const train_loss = epoch_loss / double(epoch_steps);
      double const train_quality =
          regression ? std::sqrt(train_loss) : double(epoch_hits) / double(epoch_steps * cfg.batch);
      progress.epoch_line(epoch, train_loss, train_quality, evaluate, last_eval.loss,
                          regression ? last_eval.rmse() : last_eval.accuracy, wall);
      Json record{{"type", "epoch"},
                  {"epoch", epoch},
                  {"train_loss", train_loss},
                  {regression ? "train_rmse" : "train_accuracy", train_quality}};
      add_test_metrics(record, evaluate, regression, last_eval);
      record["wall_s"] = wall;
      metrics.line(record);
      epoch_loss = 0, epoch_steps = 0, epoch_hits = 0;
      if (!ckpt_path.empty() && lead) session->save(space, ckpt_path);
    }
  }
  double const wall = seconds_since(t_start);
  double const trained = double(state.host_step - first_step) * double(cfg.batch);
  if (interrupted) {
    progress.finish();
    if (!ckpt_path.empty() && lead) session->save(space, ckpt_path);
    std::printf("interrupted at step %lld%s\n", (long long)state.host_step,
                ckpt_path.empty() ? " (no --checkpoint given: nothing saved)"
                                  : (", checkpoint saved to " + ckpt_path).c_str());
    metrics.line(Json{{"type", "interrupted"}, {"step", state.host_step}});
    return 130;
  }
  // A resumed run that had nothing left to do still reports the model it holds.
  if (evaluate && !evaluated && lead) last_eval = evaluator.run(space, model, test_data);
  if (comm.size() > 1) {  // the share of the run spent in the gradient allreduce (host-staged MPI measures it)
    CollectiveStats const c = comm.stats();
    std::printf("allreduce: %lld calls of %.2f MB, %.3f s (%.1f%% of the run)", (long long)c.calls,
                c.calls ? c.bytes / double(c.calls) / 1e6 : 0.0, c.seconds,
                wall > 0 ? 100 * c.seconds / wall : 0.0);
    if (time_allreduce)
      std::printf(", after waiting %.3f s (%.1f%%) for the slowest rank", c.wait_seconds,
                  wall > 0 ? 100 * c.wait_seconds / wall : 0.0);
    std::printf("\n");
  }
  std::string const result =
      !evaluate    ? ""
      : regression ? fmt(", test mse %.6g, test rmse %.6g", last_eval.loss, last_eval.rmse())
                   : fmt(", test accuracy %.2f%%, test loss %.4f", 100 * last_eval.accuracy, last_eval.loss);
  std::printf("done: %lld steps in %.2f s, %.0f samples/s%s\n", (long long)(state.host_step - first_step), wall,
              wall > 0 ? trained / wall : 0.0, result.c_str());
  Json summary{{"type", "summary"},
               {"steps", state.host_step},
               {"wall_s", wall},
               {"samples_per_s", wall > 0 ? trained / wall : 0.0}};
  add_test_metrics(summary, evaluate, regression, last_eval);
  metrics.line(summary);
  return 0;
}

int eval(int argc, char* argv[]) {
  CLI::App app{
      "Evaluates a checkpoint on the held-out split (IDX t10k; arrays: --test-* or --test-fraction) or, "
      "with --split train, on the training split.",
      "ktr eval"};
  std::string ckpt, split = "t10k";
  std::int64_t batch = 1000;
  int threads = -1;
  app.add_option("--checkpoint", ckpt, "the checkpoint to evaluate")->required();
  app.add_option("--split", split, "t10k (held out) or train")
      ->check(one_of({"t10k", "train"}))
      ->capture_default_str();
  app.add_option("--batch", batch, "evaluation batch")->check(integer_in(1, 1 << 24))->capture_default_str();
  app.add_option("--threads", threads, "host threads")->check(thread_count());
  DataOptions data_options;
  add_data_options(app, data_options);
  if (!parse(app, argc, argv, 2)) return 0;
  Checkpoint const c = read_checkpoint(ckpt);
  Runtime runtime(threads);
  RunConfig config = run_config(c, ckpt);
  config.optimizer.kind = OptimizerConfig::Kind::sgd;  // evaluation holds no optimiser state
  config.optimizer.momentum = 0;
  // The split to evaluate: IDX t10k/train, or the held-out (else the training) arrays.
  RunData const loaded = load_run_data(data_options, split == "t10k", config.seed);
  DeviceDataset const& data = split == "t10k" && loaded.test.count > 0 ? loaded.test : loaded.train;
  std::string const which =
      split == "train" || loaded.test.count == 0 ? "train" : (loaded.arrays ? "held-out" : "t10k");
  config.batch = std::min(batch, data.count);  // one model sized for the evaluation batch
  validate_run(config, data, nullptr, ckpt);
  Model model(config.model, config.batch);
  KTR_REQUIRE(!c.buffers.empty() && c.buffers[0].size() == std::size_t(model.arena().size()), ckpt,
              "its parameters do not fit the model it names");
  Kokkos::deep_copy(model.arena().params(), HostView<const float*>(c.buffers[0].data(), c.buffers[0].size()));
  Evaluator evaluator(model, config.batch, config.norm, config.task);
  ExecSpace const space;
  EvalResult const r = evaluator.run(space, model, data);
  std::string const result = config.task == Task::regression
                                 ? fmt("mse %.6g, rmse %.6g", r.loss, r.rmse())
                                 : fmt("accuracy %.2f%%, loss %.4f", 100 * r.accuracy, r.loss);
  std::printf("%s: %s on %s split: %s over %lld samples (step %s)\n", ckpt.c_str(), config.model.c_str(),
              which.c_str(), result.c_str(), (long long)r.count, c.get("step").c_str());
  return 0;
}

}  // namespace ktr::cli
