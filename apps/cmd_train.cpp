// `ktr train`: the training loop as a user sees it — dispatches of K steps, one metrics read-back
// each, a progress line, an evaluation line per epoch, JSON-lines metrics, checkpoints, and a clean Ctrl-C.
#include <ktr/backends/collective.hpp>
#include <ktr/backends/device_info.hpp>
#include <ktr/backends/gemm.hpp>
#include <ktr/backends/graph.hpp>
#include <ktr/config/yaml_config.hpp>
#include <ktr/ktr_config.hpp>

#include <ktr/core/file.hpp>
#include <ktr/models/description.hpp>
#include <ktr/train/checkpoint.hpp>
#include <ktr/train/interop.hpp>
#include <ktr/train/run_settings.hpp>
#include <ktr/train/runtime.hpp>
#include <ktr/train/safetensors.hpp>
#include <ktr/train/session.hpp>
#include <ktr/train/sobolev.hpp>
#include <ktr/train/trainer.hpp>
#include "apps/cli.hpp"
#include "apps/data.hpp"
#include "apps/flags.hpp"
#include "apps/metrics.hpp"
#include "apps/progress.hpp"

#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <map>
#include <optional>

namespace ktr::cli {

namespace {

volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void on_sigint(int) { g_interrupted = 1; }

char const* const kExitStatus =
    "exit status: 0 done, 1 error (data, checkpoint, memory), 2 bad flag, 3 diverged (a non-finite loss or\n"
    "parameter: training stops and nothing non-finite is saved), 130 interrupted (Ctrl-C or SIGTERM)";

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Every flag of `ktr train`, as parsed.
struct TrainFlags {
  std::string model_name, normalize = "standard", precision = "fp32";
  std::string ckpt_path, resume, init, metrics_path, config_path;
  std::map<std::string, std::string> setting;  // the value given for each of setting_flags(), as text
  std::string loss_text = "default";
  LossChoice loss;  // from --loss or --config, checked against the data
  std::int64_t epochs = 5;
  int k = 16, threads = -1;
  bool nesterov = false, no_eval = false, time_allreduce = false;
  DataOptions data;
};

// The flags a checkpoint records: the model, the optimiser and its schedule, the batch, the seed.
void add_model_flags(CLI::App& app, TrainFlags& f) {
  app.add_option("--config", f.config_path,
                 "a YAML configuration (TorchFort's schema, as the C and Fortran API read it): model, loss, "
                 "optimizer, lr_scheduler, general.batch_size, seed, normalize, steps_per_dispatch; flags given "
                 "beside it override it");
  app.add_option("--model", f.model_name,
                 "mlp (784-512-512-10, default for IDX data), cnn (SimpleCNN), or a description such as "
                 "'in=28x28x1 flatten dense:128:relu dense:10' or 'in=16 dense:64:relu dense:3' (default for "
                 "arrays: in=<sample> dense:128:relu dense:128:relu dense:<classes or T>)");
  RunConfig const defaults;
  for (SettingFlag const& sf : setting_flags()) {
    RunSetting const& s = setting_named(run_settings(), sf.setting);
    std::string& value = f.setting[sf.setting];
    value = s.get(defaults);
    if (s.type == RunSetting::Type::number) value = RunSetting::shortest(RunSetting::number_value(value));
    static char const* const type_names[] = {"FLOAT", "INT", "BOOL", "WORD", "TEXT"};
    app.add_option(sf.flag, value, std::string(s.help) + sf.more)
        ->check(setting_validator(s))
        ->type_name(type_names[int(s.type)])
        ->capture_default_str();
  }
  app.add_option("--loss", f.loss_text,
                 "float targets: mse (default), l1, huber or huber:DELTA (delta 1 by default), bce (sigmoid "
                 "binary cross-entropy of logits, multi-label targets in [0, 1]); class labels: cross_entropy "
                 "(default)")
      ->check(CLI::Validator(
          [](std::string& text) {
            try {
              (void)LossChoice::parse(text);
              return std::string();
            } catch (Error const& e) {
              std::string const what = e.what();
              return what.rfind("loss: ", 0) == 0 ? what.substr(6) : what;
            }
          },
          "LOSS"));
  app.add_flag("--nesterov", f.nesterov, setting_named(run_settings(), "nesterov").help);
  app.add_option("--normalize", f.normalize,
                 "standard: pixels by the training set's mean/std, float vectors each feature by its own, float "
                 "fields (N, H, W, C) per channel; unit: pixels "
                 "to [0, 1]; none: inputs as given")
      ->check(one_of({"standard", "unit", "none"}))  // recorded: a checkpoint's alone
      ->capture_default_str();
}

// The flags of this run alone: how long, how, where its outputs go.
void add_run_flags(CLI::App& app, TrainFlags& f) {
  app.add_option("--epochs", f.epochs, "epochs to train to (with --resume: the total, counting done ones)")
      ->check(integer_in(1, 100000))
      ->capture_default_str();
  app.add_option("--steps-per-dispatch", f.k, "optimiser steps per dispatch, one metrics read-back each")
      ->check(integer_in(1, 4096))
      ->capture_default_str();
  app.add_option("--precision", f.precision, setting_named(run_settings(), "precision").help)
      ->check(setting_validator(setting_named(run_settings(), "precision")))
      ->capture_default_str();
  app.add_option("--checkpoint", f.ckpt_path,
                 "save here after every epoch and on Ctrl-C (an existing file is replaced only if it is a ktr "
                 "checkpoint)");
  app.add_option("--resume", f.resume,
                 "continue from a checkpoint (model, optimiser, batch, seed, normalisation come from it; a flag "
                 "of one of these is accepted where it equals the recorded value)");
  app.add_option("--init", f.init,
                 "a fresh run whose initial parameters come from FILE.safetensors (ktr export's, or Flax-named "
                 "float32 tensors of this model; its recorded input transform too); the optimiser starts fresh");
  app.add_option("--metrics", f.metrics_path,
                 "JSON lines: one per dispatch, one per epoch, a summary (appended to when resuming; non-finite "
                 "values are written as null)");
  app.add_option("--threads", f.threads, "host threads (OpenMP backend; default: OMP_NUM_THREADS or all cores)")
      ->check(thread_count());
  app.add_flag("--no-eval", f.no_eval, "skip the per-epoch held-out evaluation");
  app.add_flag("--time-allreduce", f.time_allreduce,
               "benchmarks: a barrier before each gradient allreduce, so that its time is reported apart from the "
               "wait for the slowest rank (adds synchronisation)");
  add_data_options(app, f.data);
  app.footer(
      std::string(kExitStatus) +
      "\ndata parallelism: mpirun -np R ktr train ... (an MPI build): every rank loads the data and takes its "
      "B / R samples of each batch; rank 0 prints, evaluates and writes metrics and checkpoints");
}

// The run the flags describe (a fresh run; a resumed one takes its configuration from the checkpoint): the
// defaults, or the --config file, with the flags given on top (each one that overrides the file says so).
RunConfig config_from_flags(CLI::App const& app, TrainFlags& f) {
  RunConfig config;
  bool const file = !f.config_path.empty();
  if (file) {
    FileConfig const fc = read_config_file(f.config_path);
    config = fc.run;
    if (!given(app, "--loss")) f.loss = fc.loss;
    if (!given(app, "--steps-per-dispatch")) f.k = fc.general.steps_per_dispatch;
  }
  if (!file || given(app, "--loss")) f.loss = LossChoice::parse(f.loss_text);  // the validator accepted it
  auto apply = [&](char const* flag, auto&& set) {
    if (file && !given(app, flag)) return;
    set();
    if (file && given(app, flag))
      std::fprintf(stderr, "ktr train: %s overrides %s\n", flag, f.config_path.c_str());
  };
  apply("--model", [&] { config.model = f.model_name.empty() ? "" : model_flag(f.model_name); });
  for (SettingFlag const& sf : setting_flags())
    apply(sf.flag, [&] { set_run_setting(config, sf.setting, f.setting[sf.setting]); });
  if (!file && !given(app, "--batch") && f.model_name == "cnn") config.batch = 32;
  apply("--nesterov", [&] { config.optimizer.nesterov = f.nesterov; });
  // the flag's validator accepts only the fittable modes
  apply("--normalize", [&] { config.normalize = parse_input_transform_mode(f.normalize); });
  if (given(app, "--loss") && file)
    std::fprintf(stderr, "ktr train: --loss overrides %s\n", f.config_path.c_str());
  if (f.loss.kind == LossChoice::Kind::regression) config.loss = f.loss.regression;
  return config;
}

std::string reduction_suffix(RunConfig const& cfg) { return cfg.reduction == Reduction::sum ? " (sum)" : ""; }

// The run's opening lines: version, data, model, optimiser, parallelism, dispatch.
void print_header(Trainer& trainer, RunData const& data, double load_s, bool resumed, ExecSpace const& space,
                  MatmulPrecision precision) {
  RunConfig const& cfg = trainer.config();
  Communicator const& comm = trainer.communicator();
  std::printf("%s\n", version_line().c_str());
  std::printf("data: %s (%lld train, %lld test, %.1f MB on the device, loaded in %.2f s)\n", data.source.c_str(),
              (long long)data.train.count, (long long)data.test.count,
              (data.train.device_bytes() + data.test.device_bytes()) / 1e6, load_s);
  std::printf(
      "model: %s (%lld parameters)%s\n", cfg.model.c_str(), (long long)trainer.model().arena().num_parameters(),
      (cfg.task == Task::regression ? ", loss " + cfg.loss.str() + reduction_suffix(cfg)
                                    : (cfg.reduction == Reduction::sum ? ", loss cross_entropy (sum)" : ""))
          .c_str());
  std::printf("optimizer: %s lr %g schedule %s, batch %lld, %lld steps/epoch, K=%d steps per dispatch%s\n",
              OptimizerConfig::kind_name(cfg.optimizer.kind), cfg.optimizer.lr,
              cfg.optimizer.schedule.str().c_str(), (long long)cfg.batch, (long long)trainer.steps_per_epoch(),
              trainer.options().steps_per_dispatch,
              resumed ? (", resumed at step " + std::to_string(trainer.steps_taken())).c_str() : "");
  std::string const changed = describe_run_settings(cfg, true);  // the settings table's rows not at their default
  if (!changed.empty()) std::printf("settings: %s\n", changed.c_str());
  if (comm.size() > 1 || cfg.accumulate > 1)
    std::printf("data parallel: %d rank%s (%s), %d micro-batch%s of %lld per rank and update\n", comm.size(),
                comm.size() > 1 ? "s" : "", comm.transport().c_str(), cfg.accumulate,
                cfg.accumulate > 1 ? "es" : "", (long long)trainer.session().state().micro_batch);
  std::string const dispatch_mode =
      !CapturedProgram::can_capture(space) ? "plain loop (" + CapturedProgram::unsupported_reason() + ")"
      : comm.host_synchronised()           ? "plain loop (the MPI allreduce waits for the host)"
                                           : "captured K-step programs, replayed";
  std::printf("dispatch: %s, matmul %s\n", dispatch_mode.c_str(), matmul_precision_name(precision));
  std::fflush(stdout);
}

// The command line's side of a run: the progress line, the metrics records, Ctrl-C and SIGTERM.
class CliHooks : public TrainerHooks {
 public:
  CliHooks(Trainer const& trainer, std::int64_t epochs, MetricsFile& metrics, bool evaluate)
      : progress_(epochs * trainer.steps_per_epoch(), trainer.steps_per_epoch(), trainer.config().batch,
                  trainer.config().task == Task::regression),
        metrics_(metrics),
        regression_(trainer.config().task == Task::regression),
        evaluate_(evaluate) {
    g_interrupted = 0;
    previous_int_ = std::signal(SIGINT, on_sigint);    // Ctrl-C
    previous_term_ = std::signal(SIGTERM, on_sigint);  // a batch scheduler's stop
  }
  ~CliHooks() override { std::signal(SIGINT, previous_int_), std::signal(SIGTERM, previous_term_); }
  CliHooks(CliHooks const&) = delete;
  CliHooks& operator=(CliHooks const&) = delete;

  void on_dispatch(DispatchRecord const& r) override {
    progress_.update(r.step, r.loss, r.quality, r.samples_per_s);
    metrics_.line(Json{{"type", "dispatch"},
                       {"step", r.step},
                       {"epoch", r.epoch},
                       {"loss", r.loss},
                       {regression_ ? "rmse" : "accuracy", r.quality},
                       {"samples_per_s", r.samples_per_s}});
  }
  void on_epoch(EpochRecord const& e) override {
    progress_.epoch_line(e.epoch, e.train_loss, e.train_quality, evaluate_, e.test.loss,
                         regression_ ? e.test.rmse() : e.test.accuracy, e.wall_s);
    Json record{{"type", "epoch"},
                {"epoch", e.epoch},
                {"train_loss", e.train_loss},
                {regression_ ? "train_rmse" : "train_accuracy", e.train_quality}};
    add_test_metrics(record, evaluate_, regression_, e.test);
    record["wall_s"] = e.wall_s;
    metrics_.line(record);
  }
  void on_divergence(std::int64_t step, float loss) override {
    progress_.finish();
    metrics_.line(Json{{"type", "diverged"}, {"step", step}, {"loss", double(loss)}});
  }
  void on_capture_failed(std::string const& reason) override {
    std::fprintf(stderr, "\nktr train: capturing the K-step program failed (%s): running the plain loop\n",
                 reason.c_str());
  }
  bool stop_requested() override { return g_interrupted != 0; }
  void finish() { progress_.finish(); }

 private:
  Progress progress_;
  MetricsFile& metrics_;
  bool regression_, evaluate_;
  void (*previous_int_)(int) = nullptr;
  void (*previous_term_)(int) = nullptr;
};

// The run's closing lines and summary record; the exit status.
int finish_run(Trainer& trainer, RunSummary const& s, CliHooks& hooks, MetricsFile& metrics, bool evaluate,
               bool time_allreduce) {
  std::string const& ckpt_path = trainer.options().checkpoint;
  if (s.stopped) {
    hooks.finish();
    std::printf("interrupted at step %lld%s\n", (long long)s.last_step,
                ckpt_path.empty() ? " (no --checkpoint given: nothing saved)"
                                  : (", checkpoint saved to " + ckpt_path).c_str());
    metrics.line(Json{{"type", "interrupted"}, {"step", s.last_step}});
    return 130;
  }
  Communicator const& comm = trainer.communicator();
  if (comm.size() > 1) {  // the share of the run spent in the gradient allreduce (host-staged MPI measures it)
    CollectiveStats const c = comm.stats();
    std::printf("allreduce: %lld calls of %.2f MB, %.3f s (%.1f%% of the run)", (long long)c.calls,
                c.calls ? c.bytes / double(c.calls) / 1e6 : 0.0, c.seconds,
                s.wall_s > 0 ? 100 * c.seconds / s.wall_s : 0.0);
    if (time_allreduce)
      std::printf(", after waiting %.3f s (%.1f%%) for the slowest rank", c.wait_seconds,
                  s.wall_s > 0 ? 100 * c.wait_seconds / s.wall_s : 0.0);
    std::printf("\n");
  }
  bool const regression = trainer.config().task == Task::regression;
  std::string const result =
      !evaluate    ? ""
      : regression ? ", " + regression_figures(s.test, "test ")
                   : fmt(", test accuracy %.2f%%, test loss %.4f", 100 * s.test.accuracy, s.test.loss);
  std::printf("done: %lld steps in %.2f s, %.0f samples/s%s\n", (long long)(s.last_step - s.first_step), s.wall_s,
              s.samples_per_s, result.c_str());
  Json summary{
      {"type", "summary"}, {"steps", s.last_step}, {"wall_s", s.wall_s}, {"samples_per_s", s.samples_per_s}};
  add_test_metrics(summary, evaluate, regression, s.test);
  metrics.line(summary);
  return 0;
}

}  // namespace

// --resume continues the checkpoint's run: a flag of one of its recorded settings is accepted where it says what
// the checkpoint records (a script that repeats its flags), and refused naming both values where it differs.
void check_resume_flags(CLI::App const& app, TrainFlags const& f, Checkpoint const& resumed) {
  auto same = [&](char const* flag, char const* name, auto&& set) {
    if (!given(app, flag)) return;
    RunSetting const& s = setting_named(run_settings(), name);
    RunConfig mine;
    set(mine);
    std::string const want = s.get(mine);
    std::string const recorded = resumed.has(name) ? resumed.get(name) : s.omit_default ? s.get(RunConfig{}) : "";
    if (want == recorded) return;
    auto shown = [&](std::string const& text) {  // a float setting as the float it is ("0.001")
      if (s.type != RunSetting::Type::number) return escaped(text);
      char buf[32];
      auto const r = std::to_chars(buf, buf + sizeof buf, float(RunSetting::number_value(text)));
      return std::string(buf, r.ptr);
    };
    throw FlagError(std::string(flag) + ": '" + shown(want) + "' differs from " + f.resume + ", which records '" +
                    shown(recorded) + "' (a resumed run keeps its checkpoint's settings)");
  };
  for (SettingFlag const& sf : setting_flags())
    if (std::string(sf.setting) != "accumulate")  // the trajectory does not depend on it: it may change
      same(sf.flag, sf.setting, [&](RunConfig& c) { set_run_setting(c, sf.setting, f.setting.at(sf.setting)); });
  same("--nesterov", "nesterov", [&](RunConfig& c) { c.optimizer.nesterov = f.nesterov; });
  same("--normalize", "normalize", [&](RunConfig& c) { c.normalize = parse_input_transform_mode(f.normalize); });
  if (given(app, "--model")) {
    std::string const want = parse_description(model_flag(f.model_name)).text();
    std::string recorded = resumed.has("model") ? resumed.get("model") : "";
    try {
      recorded = parse_description(recorded).text();
    } catch (Error const&) {  // the checkpoint's own fault: reported, naming it, when the run is read
    }
    if (want != recorded)
      throw FlagError("--model: '" + want + "' differs from " + f.resume + ", which records '" +
                      escaped(recorded) + "' (a resumed run keeps its checkpoint's model)");
  }
}

int train(int argc, char* argv[]) {
  CLI::App app{"Trains a model with the whole training loop on the device.", "ktr train"};
  TrainFlags f;
  add_model_flags(app, f);
  add_run_flags(app, f);
  if (!parse(app, argc, argv, 2)) return 0;
  // Flags first: every usage error is reported before any file is read or memory committed.
  if (!f.resume.empty()) {
    for (char const* fixed : {"--config", "--loss", "--init"})
      if (given(app, fixed)) throw FlagError(std::string(fixed) + ": comes from the checkpoint when resuming");
  }
  std::optional<Runtime> runtime;  // declared first: it outlives every device view below
  // MPI_COMM_WORLD when the ktr binary was built with MPI (main initialised it), else one rank.
  Communicator const comm = Communicator::world();
  comm.set_timing(f.time_allreduce);
  bool const lead = comm.rank() == 0;  // prints, evaluates, writes metrics and checkpoints
  // The other ranks stay quiet on stdout (their errors still reach stderr).
  if (!lead && !std::freopen("/dev/null", "w", stdout))
    throw Error("cannot silence rank " + std::to_string(comm.rank()));
  RunConfig config = config_from_flags(app, f);
  // --precision, else the --config file's general.precision, else fp32; a resume continues in its checkpoint's
  // unless --precision says otherwise.
  bool const precision_given = given(app, "--precision");
  if (precision_given) (void)parse_matmul_precision(f.precision, "--precision");  // refused before any work
  // Every output is checked before any work: a run never trains for an epoch to fail on its first write.
  if (!f.ckpt_path.empty()) check_checkpoint_output(f.ckpt_path, "--checkpoint");
  if (!f.metrics_path.empty() && lead) MetricsFile::check(f.metrics_path, !f.resume.empty());
  Checkpoint resumed;
  if (!f.resume.empty()) {
    resumed = read_checkpoint(f.resume);
    check_resume_flags(app, f, resumed);
  }
  SafeTensors initial;
  if (!f.init.empty()) initial = read_safetensors(f.init);  // before any work: a bad file is refused first
  // Several ranks on a GPU node: one device each, by node-local rank.
  runtime.emplace(f.threads, comm.size() > 1 && !device_is_host ? comm.local_rank() : -1);
  if (!f.resume.empty()) {
    config = run_config(resumed, f.resume);
    if (given(app, "--accumulate"))  // the trajectory does not depend on it
      set_run_setting(config, "accumulate", f.setting["accumulate"]);
  }
  if (precision_given) {
    config.precision = parse_matmul_precision(f.precision, "--precision");
  } else {
    std::string const why = matmul_unavailable(config.precision);
    std::string const from =
        !f.resume.empty() ? f.resume + ": records precision " : f.config_path + ": general.precision ";
    KTR_REQUIRE(why.empty(), from + matmul_precision_name(config.precision),
                why + " (--precision fp32 runs it in fp32)");
  }
  MatmulPrecision const precision = config.precision;  // the run's own, not the process's
  auto const t_load = std::chrono::steady_clock::now();
  RunData const data = load_run_data(f.data, !f.no_eval, config.seed);
  bool const evaluate = !f.no_eval && data.test.count > 0;
  double const load_s = seconds_since(t_load);
  if (f.resume.empty()) {
    config.task = data.train.task();
    if (!f.loss.mismatch(config.task == Task::classification).empty()) {
      std::string const what = given(app, "--loss") ? std::string("--loss") : f.config_path;
      throw Error(what + ": loss " + f.loss.str() + " does not fit the data's " +
                  (config.task == Task::regression ? "float targets" : "class labels"));
    }
    if (config.model.empty()) config.model = data.arrays ? default_model(data.train) : Model::mlp();
    if (data.arrays && !given(app, "--batch"))
      config.batch = std::min<std::int64_t>(config.batch, data.train.count);
  }
  if (config.task == Task::regression) {  // a field's shape first: the width check alone would say less
    ModelPlan const plan = Model::plan(config.model, 1);
    check_target_shape(data, plan.output, f.resume.empty() ? "--model" : f.resume,
                       sobolev_columns(config.derivatives, plan.input.inner()));
  }
  validate_run(config, data.train, evaluate ? &data.test : nullptr, f.resume.empty() ? "--model" : f.resume,
               comm.size());
  DeviceStream const stream;  // its own stream on CUDA, so the K-step program can be captured and replayed
  ExecSpace const& space = stream.space();
  TrainerOptions options;
  options.steps_per_dispatch = f.k;
  options.checkpoint = f.ckpt_path;
  options.evaluate = !f.no_eval;
  DeviceDataset const test = evaluate ? data.test : DeviceDataset{};
  std::unique_ptr<Trainer> trainer =
      f.resume.empty() ? std::make_unique<Trainer>(space, config, data.train, test, options, comm)
                       : Trainer::resume(space, resumed, f.resume, config, data.train, test, options, comm);
  if (!f.init.empty()) {  // the model's initial parameters (and the file's input transform) from --init
    ImportedWeights const w = import_weights(trainer->model(), initial, "--init " + f.init);
    char const* const task = config.task == Task::regression ? "regression" : "classification";
    if (!w.task.empty() && w.task != task)
      throw Error("--init " + f.init + ": holds a " + escaped(w.task) + " model, the data make this run a " +
                  task);
    trainer->set_weights(space, w.params, w.has_transform ? &w.input_transform : nullptr, f.init);
  }
  if (trainer->steps_taken() > f.epochs * trainer->steps_per_epoch())
    throw FlagError("--epochs: " + std::to_string(f.epochs) + " epochs are " +
                    std::to_string(f.epochs * trainer->steps_per_epoch()) +
                    " steps, the checkpoint is already at step " + std::to_string(trainer->steps_taken()));
  print_header(*trainer, data, load_s, !f.resume.empty(), space, precision);
  MetricsFile metrics(lead ? f.metrics_path : "", !f.resume.empty());
  CliHooks hooks(*trainer, f.epochs, metrics, evaluate);
  RunSummary summary;
  try {
    summary = trainer->fit(space, f.epochs, hooks);
  } catch (DivergenceError const& e) {  // the library names no flag; the command line suggests its own
    throw DivergenceError(std::string(e.what()) + " (try a lower --lr or --clip-norm)");
  }
  return finish_run(*trainer, summary, hooks, metrics, evaluate, f.time_allreduce);
}

}  // namespace ktr::cli
