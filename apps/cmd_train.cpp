// `ktr train` and `ktr eval`: the training loop as a user sees it — dispatches of K steps, one metrics read-back
// each, a progress line, an evaluation line per epoch, JSON-lines metrics, checkpoints, and a clean Ctrl-C.
#include <ktr/backends/collective.hpp>
#include <ktr/backends/device_info.hpp>
#include <ktr/backends/gemm.hpp>
#include <ktr/backends/graph.hpp>
#include <ktr/ktr_config.hpp>
#include <ktr/train/checkpoint.hpp>
#include <ktr/train/runtime.hpp>
#include <ktr/train/session.hpp>
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

char const* const kTrainHelp =
    "usage: ktr train [flags]\n"
    "  --model mlp|cnn|DESC        mlp (784-512-512-10, default for IDX data), cnn (SimpleCNN), or a description\n"
    "                              such as 'in=28x28x1 flatten dense:128:relu dense:10' or 'in=16 dense:64:relu\n"
    "                              dense:3' (default for arrays: in=<sample> dense:128:relu dense:128:relu\n"
    "                              dense:<classes or T>)\n"
    "  --epochs N                  epochs to train to (default 5; with --resume: the total, counting done ones)\n"
    "  --batch B                   samples per optimiser update, over all ranks (default 256, 32 for cnn, at "
    "most\n"
    "                              N for arrays); the last partial batch of an epoch is dropped\n"
    "  --accumulate N              average N micro-batches' gradients per update (default 1); each rank's\n"
    "                              micro-batch is B / (ranks x N), a whole number\n"
    "  --optimizer sgd|adam|adamw  (default adam)    --lr X (default 1e-3)    --momentum X    --nesterov\n"
    "  --weight-decay X            adamw decoupled weight decay (default 1e-4)\n"
    "  --clip-norm X               clip gradients to this global norm (default off)\n"
    "  --schedule S                constant | warmup:W | cosine:D[:W[:alpha]] | step:N[:factor]\n"
    "  --steps-per-dispatch K      optimiser steps per dispatch, one metrics read-back each (default 16)\n"
    "  --seed S                    initialisation and shuffling seed (default 0)\n"
    "  --normalize standard|unit|none\n"
    "                              standard (default): pixels by the training set's mean/std, float features\n"
    "                              each by its own; unit: pixels to [0, 1]; none: inputs as given\n"
    "  --checkpoint FILE           save here after every epoch and on Ctrl-C (an existing FILE is replaced only\n"
    "                              if it is a ktr checkpoint)\n"
    "  --resume FILE               continue from a checkpoint (model, optimiser, batch, seed, normalisation come\n"
    "                              from it)\n"
    "  --metrics FILE              JSON lines: one per dispatch, one per epoch, a summary (appended to when\n"
    "                              resuming; non-finite values are written as null)\n"
    "  --precision fp32|tf32       matmul arithmetic: fp32 (default) or tf32 (opt-in, CUDA tensor cores)\n"
    "  --threads N                 host threads (OpenMP backend; default: OMP_NUM_THREADS or all cores)\n"
    "  --no-eval                   skip the per-epoch test-set evaluation\n"
    "  --time-allreduce            benchmarks: a barrier before each gradient allreduce, so that its time is\n"
    "                              reported apart from the wait for the slowest rank (adds synchronisation)\n"
    "data parallelism: mpirun -np R ktr train ... (an MPI build): every rank loads the data and takes its B / R\n"
    "samples of each batch; rank 0 prints, evaluates and writes metrics and checkpoints\n"
    "exit status: 0 done, 1 error (data, checkpoint, memory), 2 bad flag, 3 diverged (a non-finite loss or\n"
    "parameter: training stops and nothing non-finite is saved), 130 interrupted (Ctrl-C or SIGTERM)\n";

char const* const kEvalHelp =
    "usage: ktr eval --checkpoint FILE [data flags] [--split t10k|train] [--batch B] [--threads N]\n"
    "  evaluates on the held-out split (IDX t10k; arrays: --test-* or --test-fraction) or, with --split train,\n"
    "  on the training split\n";

std::string model_description(std::string const& name) {
  if (name == "mlp") return Model::mlp();
  if (name == "cnn") return Model::simple_cnn();
  if (name.rfind("in=", 0) == 0) return name;
  throw FlagError("--model: unknown model '" + name + "' (mlp, cnn, or a description starting with in=)");
}

// Metrics as JSON lines, written straight to the file and flushed line by line, so that whatever was measured
// survives an error or a crash. A fresh run replaces an earlier ktr metrics file (never any other file); a resumed
// run appends to it.
class MetricsFile {
 public:
  MetricsFile(std::string path, bool append) : path_(std::move(path)) {
    if (path_.empty()) return;
    if (!append) refuse_foreign(path_);
    file_ = std::fopen(path_.c_str(), append ? "a" : "w");
    if (!file_) throw Error("--metrics " + path_ + ": cannot open for writing (" + std::strerror(errno) + ")");
  }
  ~MetricsFile() {
    if (file_) std::fclose(file_);
  }
  MetricsFile(MetricsFile const&) = delete;
  MetricsFile& operator=(MetricsFile const&) = delete;
  void line(std::string const& json) {
    if (!file_) return;
    if (std::fprintf(file_, "%s\n", json.c_str()) < 0 || std::fflush(file_) != 0)
      throw Error("--metrics " + path_ + ": write failed (" + std::strerror(errno) + ")");
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

// A JSON number; JSON has no NaN or infinity, so a non-finite value is written as null.
std::string json_number(double v, int decimals = 6) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string fmt(char const* format, double a, double b = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, format, a, b);
  return buf;
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
  if (argc > 2 && (std::string(argv[2]) == "--help" || std::string(argv[2]) == "-h")) {
    std::printf("%s%s", kTrainHelp, kDataHelp);
    return 0;
  }
  std::set<std::string> known{"model",     "epochs",       "batch",     "optimizer", "lr",
                              "momentum",  "weight-decay", "clip-norm", "schedule",  "steps-per-dispatch",
                              "seed",      "checkpoint",   "resume",    "metrics",   "threads",
                              "normalize", "precision",    "accumulate"};
  std::set<std::string> const switches{"nesterov", "no-eval", "time-allreduce"};
  known.merge(data_flags());
  Flags const f(argc, argv, 2, known, switches);
  // Flags first: every usage error is reported before any file is read or memory committed.
  std::string const resume = f.str("resume", "");
  if (!resume.empty()) {
    for (char const* fixed : {"model", "batch", "optimizer", "lr", "momentum", "nesterov", "weight-decay",
                              "clip-norm", "schedule", "seed", "normalize"})
      if (f.has(fixed)) throw FlagError(std::string("--") + fixed + ": comes from the checkpoint when resuming");
  }
  std::optional<Runtime> runtime;  // declared first: it outlives every device view below
  // MPI_COMM_WORLD when the ktr binary was built with MPI (main initialised it), else one rank.
  Communicator const comm = Communicator::world();
  comm.set_timing(f.on("time-allreduce"));
  bool const lead = comm.rank() == 0;  // prints, evaluates, writes metrics and checkpoints
  // The other ranks stay quiet on stdout (their errors still reach stderr).
  if (!lead && !std::freopen("/dev/null", "w", stdout))
    throw Error("cannot silence rank " + std::to_string(comm.rank()));
  RunConfig config;
  std::string const model_name = f.str("model", "");
  config.model = model_name.empty() ? "" : model_description(model_name);
  config.batch = f.integer("batch", model_name == "cnn" ? 32 : 256, 1, 1 << 24);
  config.seed = std::uint64_t(f.integer("seed", 0, 0, INT64_MAX));
  config.accumulate = int(f.integer("accumulate", 1, 1, 1 << 20));
  auto& o = config.optimizer;
  try {
    o.kind = OptimizerConfig::parse_kind(f.str("optimizer", "adam"));
    o.schedule = Schedule::parse(f.str("schedule", "constant"));
  } catch (Error const& e) {
    throw FlagError(e.what());
  }
  o.lr = float(f.number("lr", 1e-3, 1e-12, 1e3));
  o.momentum = float(f.number("momentum", 0.0, 0.0, 0.999999));
  o.nesterov = f.on("nesterov");
  o.weight_decay = float(f.number("weight-decay", 1e-4, 0.0, 10.0));
  o.clip_norm = float(f.number("clip-norm", 0.0, 0.0, 1e9));
  config.normalize = f.str("normalize", "standard");
  if (config.normalize != "standard" && config.normalize != "unit" && config.normalize != "none")
    throw FlagError("--normalize: must be standard, unit or none, got '" + config.normalize + "'");
  int const k = int(f.integer("steps-per-dispatch", 16, 1, 4096));
  MatmulPrecision precision = MatmulPrecision::fp32;
  try {
    precision = parse_matmul_precision(f.str("precision", "fp32"));
  } catch (Error const& e) {
    throw FlagError(e.what());
  }
  std::int64_t const epochs = f.integer("epochs", 5, 1, 100000);
  std::string const ckpt_path = f.str("checkpoint", "");
  bool const do_eval = !f.on("no-eval");
  if (!ckpt_path.empty()) check_checkpoint_target(ckpt_path, "--checkpoint");
  int const threads = int(f.integer("threads", -1, 1, 4096));
  Checkpoint resumed;
  if (!resume.empty()) resumed = read_checkpoint(resume);
  // Several ranks on a GPU node: one device each, by node-local rank.
  runtime.emplace(threads, comm.size() > 1 && !device_is_host ? comm.local_rank() : -1);
  set_matmul_precision(precision);
  if (!resume.empty()) {
    int const accumulate = config.accumulate;
    config = run_config(resumed, resume);
    if (f.has("accumulate")) config.accumulate = accumulate;  // the trajectory does not depend on it
  }
  auto const t_load = std::chrono::steady_clock::now();
  RunData const data = load_run_data(f, do_eval, config.seed);
  DeviceDataset const& train_data = data.train;
  DeviceDataset const& test_data = data.test;
  bool const evaluate = do_eval && test_data.count > 0;
  double const load_s = seconds_since(t_load);
  if (resume.empty()) {
    config.task = train_data.task();
    if (config.model.empty()) config.model = data.arrays ? default_model(train_data) : Model::mlp();
    if (data.arrays && !f.has("batch")) config.batch = std::min<std::int64_t>(config.batch, train_data.count);
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
  KTR_REQUIRE(
      state.host_step <= total, "--epochs",
      "the checkpoint is already at step " + std::to_string(state.host_step) + " > " + std::to_string(total));

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

  MetricsFile metrics(lead ? f.str("metrics", "") : "", !resume.empty());
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
        metrics.line("{\"type\":\"diverged\",\"step\":" + std::to_string(bad_step) + ",\"loss\":null}");
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
    metrics.line("{\"type\":\"dispatch\",\"step\":" + std::to_string(state.host_step) +
                 ",\"epoch\":" + std::to_string((state.host_step - 1) / spe + 1) +
                 ",\"loss\":" + json_number(loss / kk) + (regression ? ",\"rmse\":" : ",\"accuracy\":") +
                 json_number(quality) + ",\"samples_per_s\":" + json_number(samples_per_s, 1) + "}");
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
      std::string const test = !evaluate    ? ",\"test_loss\":null"
                               : regression ? ",\"test_loss\":" + json_number(last_eval.loss) +
                                                  ",\"test_mse\":" + json_number(last_eval.loss) +
                                                  ",\"test_rmse\":" + json_number(last_eval.rmse())
                                            : ",\"test_loss\":" + json_number(last_eval.loss) +
                                                  ",\"test_accuracy\":" + json_number(last_eval.accuracy);
      metrics.line("{\"type\":\"epoch\",\"epoch\":" + std::to_string(epoch) + ",\"train_loss\":" +
                   json_number(train_loss) + (regression ? ",\"train_rmse\":" : ",\"train_accuracy\":") +
                   json_number(train_quality) + test + ",\"wall_s\":" + json_number(wall, 3) + "}");
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
    metrics.line("{\"type\":\"interrupted\",\"step\":" + std::to_string(state.host_step) + "}");
    return 130;
  }
  // A resumed run that had nothing left to do still reports the model it holds.
  if (evaluate && !evaluated && lead) last_eval = evaluator.run(space, model, test_data);
  if (comm.size() > 1) {  // the share of the run spent in the gradient allreduce (host-staged MPI measures it)
    CollectiveStats const c = comm.stats();
    std::printf("allreduce: %lld calls of %.2f MB, %.3f s (%.1f%% of the run)", (long long)c.calls,
                c.calls ? c.bytes / double(c.calls) / 1e6 : 0.0, c.seconds,
                wall > 0 ? 100 * c.seconds / wall : 0.0);
    if (f.on("time-allreduce"))
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
  std::string const summary = !evaluate    ? ",\"test_loss\":null"
                              : regression ? ",\"test_mse\":" + json_number(last_eval.loss) +
                                                 ",\"test_rmse\":" + json_number(last_eval.rmse())
                                           : ",\"test_accuracy\":" + json_number(last_eval.accuracy) +
                                                 ",\"test_loss\":" + json_number(last_eval.loss);
  metrics.line("{\"type\":\"summary\",\"steps\":" + std::to_string(state.host_step) +
               ",\"wall_s\":" + json_number(wall, 3) +
               ",\"samples_per_s\":" + json_number(wall > 0 ? trained / wall : 0.0, 1) + summary + "}");
  return 0;
}

int eval(int argc, char* argv[]) {
  if (argc > 2 && (std::string(argv[2]) == "--help" || std::string(argv[2]) == "-h")) {
    std::printf("%s%s", kEvalHelp, kDataHelp);
    return 0;
  }
  std::set<std::string> known{"checkpoint", "split", "batch", "threads"};
  known.merge(data_flags());
  Flags const f(argc, argv, 2, known);
  std::string const ckpt = f.str("checkpoint", "");
  if (ckpt.empty()) throw FlagError("--checkpoint: required");
  std::string const split = f.str("split", "t10k");
  if (split != "t10k" && split != "train") throw FlagError("--split: must be t10k or train");
  std::int64_t const batch = f.integer("batch", 1000, 1, 1 << 24);
  int const threads = int(f.integer("threads", -1, 1, 4096));
  Checkpoint const c = read_checkpoint(ckpt);
  Runtime runtime(threads);
  RunConfig config = run_config(c, ckpt);
  config.optimizer.kind = OptimizerConfig::Kind::sgd;  // evaluation holds no optimiser state
  config.optimizer.momentum = 0;
  // The split to evaluate: IDX t10k/train, or the held-out (else the training) arrays.
  RunData const loaded = load_run_data(f, split == "t10k", config.seed);
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
