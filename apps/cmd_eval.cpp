// `ktr eval`: a checkpoint evaluated on the held-out (or the training) split, in the arithmetic asked for.
#include <ktr/train/checkpoint.hpp>
#include <ktr/train/run_settings.hpp>
#include <ktr/train/runtime.hpp>
#include <ktr/train/session.hpp>
#include <ktr/train/sobolev.hpp>
#include "apps/cli.hpp"
#include "apps/data.hpp"
#include "apps/flags.hpp"
#include "apps/metrics.hpp"
#include "apps/progress.hpp"

#include <algorithm>
#include <cstdio>

namespace ktr::cli {

int eval(int argc, char* argv[]) {
  CLI::App app{
      "Evaluates a checkpoint on the held-out split (IDX t10k; arrays: --test-* or --test-fraction) or, "
      "with --split train, on the training split.",
      "ktr eval"};
  std::string ckpt, split = "t10k", precision = "fp32";
  std::int64_t batch = 1000;
  int threads = -1;
  app.add_option("--checkpoint", ckpt, "the checkpoint to evaluate")->required();
  app.add_option("--precision", precision,
                 "matmul arithmetic of the evaluation: fp32 (the parameters as stored, whatever the run trained "
                 "in), tf32 or bf16")
      ->check(setting_validator(setting_named(run_settings(), "precision")))
      ->capture_default_str();
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
  bool const held_out = split == "t10k" && loaded.test.count > 0;
  std::string which = held_out ? (loaded.arrays ? "held-out" : "t10k") : "train";
  if (loaded.arrays)  // the arrays' own file, whatever it is called
    which += " split (" +
             (held_out ? data_options.test_features.empty() ? "--test-fraction of " + data_options.features
                                                            : data_options.test_features
                       : data_options.features) +
             ")";
  else
    which += " split";
  config.batch = std::min(batch, data.count);  // one model sized for the evaluation batch
  ModelPlan const plan = Model::plan(config.model, 1);
  if (config.task == Task::regression)
    check_target_shape(loaded, plan.output, ckpt, sobolev_columns(config.derivatives, plan.input.inner()));
  validate_run(config, data, nullptr, ckpt);
  ExecSpace const space;
  MatmulPrecision const arithmetic = parse_matmul_precision(precision, "--precision");
  TrainedModel m = load_trained_model(space, c, ckpt, config.batch);
  Evaluator evaluator = evaluator_for(space, m, config.batch);
  evaluator.set_precision(arithmetic);  // the flag's, whatever the checkpoint's run used
  EvalResult const r = evaluator.run(space, *m.model, data);
  std::string const result = config.task == Task::regression
                                 ? regression_figures(r, "")
                                 : fmt("accuracy %.2f%%, loss %.4f", 100 * r.accuracy, r.loss);
  std::printf("%s: %s on %s: %s over %lld samples (step %s)\n", ckpt.c_str(), config.model.c_str(), which.c_str(),
              result.c_str(), (long long)r.count, c.get("step").c_str());
  return 0;
}

}  // namespace ktr::cli
