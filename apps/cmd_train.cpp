// `ktr train` and `ktr eval`: the training loop as a user sees it — dispatches of K steps, one metrics read-back
// each, a progress line, an evaluation line per epoch, JSON-lines metrics, checkpoints, and a clean Ctrl-C.
#include "apps/cli.hpp"
#include "apps/flags.hpp"
#include "apps/progress.hpp"
#include "backends/graph.hpp"
#include "core/checkpoint.hpp"
#include "core/runtime.hpp"
#include "core/session.hpp"
#include "ktr_config.hpp"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>

namespace ktr::cli {

namespace {

volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void on_sigint(int) { g_interrupted = 1; }

char const* const kTrainHelp =
    "usage: ktr train [flags]\n"
    "  --model mlp|cnn|DESC        mlp (784-512-512-10, default), cnn (SimpleCNN), or a description such as\n"
    "                              'in=28x28x1 flatten dense:128:relu dense:10'\n"
    "  --data DIR                  MNIST-format IDX files (default " KTR_DEFAULT_DATA_DIR
    ")\n"
    "  --epochs N                  epochs to train to (default 5; with --resume: the total, counting done ones)\n"
    "  --batch B                   batch size (default 256 for mlp, 32 for cnn); the last partial batch of an\n"
    "                              epoch is dropped\n"
    "  --optimizer sgd|adam|adamw  (default adam)    --lr X (default 1e-3)    --momentum X    --nesterov\n"
    "  --weight-decay X            adamw decoupled weight decay (default 1e-4)\n"
    "  --clip-norm X               clip gradients to this global norm (default off)\n"
    "  --schedule S                constant | warmup:W | cosine:D[:W[:alpha]] | step:N[:factor]\n"
    "  --steps-per-dispatch K      optimiser steps per dispatch, one metrics read-back each (default 16)\n"
    "  --seed S                    initialisation and shuffling seed (default 0)\n"
    "  --normalize standard|unit   pixels standardised by the training set's mean/std (default), or to [0, 1]\n"
    "  --checkpoint FILE           save here after every epoch and on Ctrl-C\n"
    "  --resume FILE               continue from a checkpoint (model, optimiser, step, seed come from it)\n"
    "  --metrics FILE              JSON lines: one per dispatch, one per epoch, a summary\n"
    "  --threads N                 host threads (OpenMP backend; default: OMP_NUM_THREADS or all cores)\n"
    "  --no-eval                   skip the per-epoch test-set evaluation\n";

char const* const kEvalHelp =
    "usage: ktr eval --checkpoint FILE [--data DIR] [--split t10k|train] [--batch B] [--threads N]\n";

std::string model_description(std::string const& name) {
  if (name == "mlp") return Model::mlp();
  if (name == "cnn") return Model::simple_cnn();
  if (name.rfind("in=", 0) == 0) return name;
  throw FlagError("--model: unknown model '" + name + "' (mlp, cnn, or a description starting with in=)");
}

DeviceDataset load_split(std::string const& dir, std::string const& split) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw Error("--data " + dir + ": no such directory. " +
                (dir == KTR_DEFAULT_DATA_DIR
                     ? "Install Fashion-MNIST with `apt-get install dataset-fashion-mnist`, or pass --data DIR "
                       "holding train-/t10k-images-idx3-ubyte[.gz] and -labels-idx1-ubyte[.gz]"
                     : "Pass --data DIR holding train-/t10k-images-idx3-ubyte[.gz] and -labels-idx1-ubyte[.gz]"));
  }
  return load_idx_dataset(dir, split);
}

// Metrics as JSON lines, written to "<path>.tmp" and renamed into place when the run ends (or is interrupted).
class MetricsFile {
 public:
  explicit MetricsFile(std::string path) : path_(std::move(path)) {
    if (path_.empty()) return;
    file_ = std::fopen((path_ + ".tmp").c_str(), "w");
    if (!file_) throw Error("--metrics " + path_ + ": cannot create " + path_ + ".tmp");
  }
  ~MetricsFile() {
    if (file_) {  // not committed: an error ended the run
      std::fclose(file_);
      std::remove((path_ + ".tmp").c_str());
    }
  }
  void line(std::string const& json) {
    if (!file_) return;
    std::fprintf(file_, "%s\n", json.c_str());
    std::fflush(file_);
  }
  void commit() {
    if (!file_) return;
    bool ok = std::fclose(file_) == 0;
    file_ = nullptr;
    if (!ok || std::rename((path_ + ".tmp").c_str(), path_.c_str()) != 0)
      throw Error("--metrics " + path_ + ": could not write the metrics file");
  }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

std::string fmt(char const* format, double a, double b = 0, double c = 0, double d = 0, double e = 0,
                double f = 0) {
  char buf[512];
  std::snprintf(buf, sizeof buf, format, a, b, c, d, e, f);
  return buf;
}

}  // namespace

int train(int argc, char* argv[]) {
  if (argc > 2 && (std::string(argv[2]) == "--help" || std::string(argv[2]) == "-h")) {
    std::printf("%s", kTrainHelp);
    return 0;
  }
  Flags const f(
      argc, argv, 2,
      {"model", "data", "epochs", "batch", "optimizer", "lr", "momentum", "weight-decay", "clip-norm", "schedule",
       "steps-per-dispatch", "seed", "checkpoint", "resume", "metrics", "threads", "normalize"},
      {"nesterov", "no-eval"});
  std::string const resume = f.str("resume", "");
  if (!resume.empty()) {
    for (char const* fixed :
         {"model", "batch", "optimizer", "lr", "momentum", "weight-decay", "clip-norm", "schedule", "seed"})
      if (f.has(fixed)) throw FlagError(std::string("--") + fixed + ": comes from the checkpoint when resuming");
  }
  RunConfig config;
  std::string const model_name = f.str("model", "mlp");
  config.model = model_description(model_name);
  config.batch = f.integer("batch", model_name == "cnn" ? 32 : 256, 1, 1 << 20);
  config.seed = std::uint64_t(f.integer("seed", 0, 0, INT64_MAX));
  auto& o = config.optimizer;
  try {
    o.kind = OptimizerConfig::parse_kind(f.str("optimizer", "adam"));
  } catch (Error const& e) {
    throw FlagError(e.what());
  }
  o.lr = float(f.number("lr", 1e-3, 1e-12, 1e3));
  o.momentum = float(f.number("momentum", 0.0, 0.0, 0.999999));
  o.nesterov = f.on("nesterov");
  o.weight_decay = float(f.number("weight-decay", 1e-4, 0.0, 10.0));
  o.clip_norm = float(f.number("clip-norm", 0.0, 0.0, 1e9));
  try {
    o.schedule = Schedule::parse(f.str("schedule", "constant"));
  } catch (Error const& e) {
    throw FlagError(e.what());
  }
  int const k = int(f.integer("steps-per-dispatch", 16, 1, 4096));
  std::int64_t const epochs = f.integer("epochs", 5, 1, 100000);
  std::string const data_dir = f.str("data", KTR_DEFAULT_DATA_DIR);
  std::string const ckpt_path = f.str("checkpoint", "");
  bool const do_eval = !f.on("no-eval");

  Runtime runtime(int(f.integer("threads", -1, 1, 4096)));
  auto const t_load = std::chrono::steady_clock::now();
  DeviceDataset const train_data = load_split(data_dir, "train");
  DeviceDataset const test_data = do_eval ? load_split(data_dir, "t10k") : DeviceDataset();
  double const load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_load).count();

  std::string const normalize = f.str("normalize", "standard");
  if (normalize == "standard") {
    PixelStatistics const stats = pixel_statistics(ExecSpace(), train_data);
    config.norm = Normalization::standardized(float(stats.mean), float(stats.std));
  } else if (normalize != "unit") {
    throw FlagError("--normalize: must be standard or unit, got '" + normalize + "'");
  }
  std::unique_ptr<Session> session =
      resume.empty() ? std::make_unique<Session>(config, k) : Session::restore(resume, k);
  RunConfig const& cfg = session->config();
  Model& model = session->model();
  TrainState& state = session->state();
  KTR_REQUIRE(
      model.input_shape(1) == train_data.batch_shape(1), "--model",
      "expects inputs " + model.input_shape(1).str() + ", the data has " + train_data.batch_shape(1).str());
  KTR_REQUIRE(cfg.batch <= train_data.count, "--batch", "larger than the training set");
  std::int64_t const spe = steps_per_epoch(train_data, cfg.batch);
  std::int64_t const total = epochs * spe;
  KTR_REQUIRE(
      state.host_step <= total, "--epochs",
      "the checkpoint is already at step " + std::to_string(state.host_step) + " > " + std::to_string(total));

  std::printf("%s\n", version_line().c_str());
  std::printf("data: %s (%lld train, %lld test, %.1f MB on the device, loaded in %.2f s)\n", data_dir.c_str(),
              (long long)train_data.count, (long long)test_data.count,
              (train_data.device_bytes() + test_data.device_bytes()) / 1e6, load_s);
  std::printf("model: %s (%lld parameters)\n", cfg.model.c_str(), (long long)model.arena().num_parameters());
  std::printf("optimizer: %s lr %g schedule %s, batch %lld, %lld steps/epoch, K=%d steps per dispatch%s\n",
              OptimizerConfig::kind_name(cfg.optimizer.kind), cfg.optimizer.lr,
              cfg.optimizer.schedule.str().c_str(), (long long)cfg.batch, (long long)spe, k,
              resume.empty() ? "" : (", resumed at step " + std::to_string(state.host_step)).c_str());
  std::fflush(stdout);

  MetricsFile metrics(f.str("metrics", ""));
  Evaluator evaluator(model, 1000, cfg.norm);
  DeviceStream const stream;  // its own stream on CUDA, so the K-step program can be captured and replayed
  ExecSpace const& space = stream.space();
  Progress progress(total, spe, cfg.batch);
  g_interrupted = 0;
  auto const previous_int = std::signal(SIGINT, on_sigint);    // Ctrl-C
  auto const previous_term = std::signal(SIGTERM, on_sigint);  // a batch scheduler's stop
  auto const t_start = std::chrono::steady_clock::now();
  std::int64_t const first_step = state.host_step;
  double epoch_loss = 0;
  std::int64_t epoch_steps = 0, epoch_hits = 0;
  EvalResult last_eval;
  bool interrupted = false;

  while (state.host_step < total) {
    std::int64_t const in_epoch = state.host_step % spe;
    int const kk = int(std::min<std::int64_t>(k, spe - in_epoch));  // dispatches never straddle an epoch end
    auto const t0 = std::chrono::steady_clock::now();
    dispatch(space, state, model, train_data, kk);
    StepMetrics const m = read_metrics(state, kk);  // the one host synchronisation of the dispatch
    double const dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double loss = 0;
    std::int64_t hits = 0;
    for (int i = 0; i < kk; ++i) loss += m.loss[std::size_t(i)], hits += m.correct[std::size_t(i)];
    epoch_loss += loss, epoch_steps += kk, epoch_hits += hits;
    double const samples_per_s = kk * cfg.batch / dt;
    progress.update(state.host_step, loss / kk, double(hits) / double(kk * cfg.batch), samples_per_s);
    metrics.line(
        fmt("{\"type\":\"dispatch\",\"step\":%.0f,\"epoch\":%.0f,\"loss\":%.6f,\"accuracy\":%.6f,"
            "\"samples_per_s\":%.1f}",
            double(state.host_step), double((state.host_step - 1) / spe + 1), loss / kk,
            double(hits) / double(kk * cfg.batch), samples_per_s));
    if (g_interrupted) {
      interrupted = true;
      break;
    }
    if (state.host_step % spe == 0) {
      std::int64_t const epoch = state.host_step / spe;
      double const wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
      if (do_eval) last_eval = evaluator.run(space, model, test_data);
      progress.epoch_line(epoch, epoch_loss / double(epoch_steps),
                          double(epoch_hits) / double(epoch_steps * cfg.batch), do_eval, last_eval.loss,
                          last_eval.accuracy, wall);
      metrics.line(
          fmt("{\"type\":\"epoch\",\"epoch\":%.0f,\"train_loss\":%.6f,\"train_accuracy\":%.6f,"
              "\"test_loss\":%.6f,\"test_accuracy\":%.6f,\"wall_s\":%.3f}",
              double(epoch), epoch_loss / double(epoch_steps),
              double(epoch_hits) / double(epoch_steps * cfg.batch), last_eval.loss, last_eval.accuracy, wall));
      epoch_loss = 0, epoch_steps = 0, epoch_hits = 0;
      if (!ckpt_path.empty()) session->save(ckpt_path);
    }
  }
  std::signal(SIGINT, previous_int);
  std::signal(SIGTERM, previous_term);
  double const wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  double const trained = double(state.host_step - first_step) * double(cfg.batch);
  if (interrupted) {
    progress.finish();
    if (!ckpt_path.empty()) session->save(ckpt_path);
    std::printf("interrupted at step %lld%s\n", (long long)state.host_step,
                ckpt_path.empty() ? " (no --checkpoint given: nothing saved)"
                                  : (", checkpoint saved to " + ckpt_path).c_str());
    metrics.line(fmt("{\"type\":\"interrupted\",\"step\":%.0f}", double(state.host_step)));
    metrics.commit();
    return 130;
  }
  std::printf("done: %lld steps in %.2f s, %.0f samples/s%s\n", (long long)(state.host_step - first_step), wall,
              wall > 0 ? trained / wall : 0.0,
              do_eval
                  ? fmt(", test accuracy %.2f%%, test loss %.4f", 100 * last_eval.accuracy, last_eval.loss).c_str()
                  : "");
  metrics.line(
      fmt("{\"type\":\"summary\",\"steps\":%.0f,\"wall_s\":%.3f,\"samples_per_s\":%.1f,"
          "\"test_accuracy\":%.6f,\"test_loss\":%.6f}",
          double(state.host_step), wall, wall > 0 ? trained / wall : 0.0, last_eval.accuracy, last_eval.loss));
  metrics.commit();
  return 0;
}

int eval(int argc, char* argv[]) {
  if (argc > 2 && (std::string(argv[2]) == "--help" || std::string(argv[2]) == "-h")) {
    std::printf("%s", kEvalHelp);
    return 0;
  }
  Flags const f(argc, argv, 2, {"checkpoint", "data", "split", "batch", "threads"});
  std::string const ckpt = f.str("checkpoint", "");
  if (ckpt.empty()) throw FlagError("--checkpoint: required");
  std::string const split = f.str("split", "t10k");
  if (split != "t10k" && split != "train") throw FlagError("--split: must be t10k or train");
  std::int64_t const batch = f.integer("batch", 1000, 1, 1 << 20);
  Runtime runtime(int(f.integer("threads", -1, 1, 4096)));
  DeviceDataset const data = load_split(f.str("data", KTR_DEFAULT_DATA_DIR), split);
  auto session = Session::restore(ckpt, 1);
  Model& model = session->model();
  KTR_REQUIRE(model.input_shape(1) == data.batch_shape(1), ckpt,
              "the model expects " + model.input_shape(1).str() + ", the data has " + data.batch_shape(1).str());
  // The evaluator needs a model sized for its batch: rebuild with room for it, sharing the restored parameters.
  Model eval_model(session->config().model, batch);
  Kokkos::deep_copy(eval_model.arena().params(), model.arena().params());
  Evaluator evaluator(eval_model, batch, session->config().norm);
  EvalResult const r = evaluator.run(ExecSpace(), eval_model, data);
  std::printf("%s: %s on %s split: accuracy %.2f%%, loss %.4f over %lld samples (step %lld)\n", ckpt.c_str(),
              session->config().model.c_str(), split.c_str(), 100 * r.accuracy, r.loss, (long long)r.count,
              (long long)session->state().host_step);
  return 0;
}

}  // namespace ktr::cli
