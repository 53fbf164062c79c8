// `ktr bench kernels|pipeline|profile|rl|derivatives`: the benchmarks of bench/, from the command line.
#include "apps/cli.hpp"
#include "apps/flags.hpp"
#include "bench/bench.hpp"
#if defined(KTR_CLI_TORCHFORT_BENCH)
#include "apps/bench_torchfort_rl.hpp"
#endif

#include <ktr/backends/gemm.hpp>
#include <ktr/train/runtime.hpp>

#include <cstdio>
#include <string>

namespace ktr::cli {

namespace {

// The models a step benchmark runs and their batches (pipeline, profile).
void model_options(CLI::App* sub, std::string& models, std::int64_t& mlp_batch, std::int64_t& cnn_batch) {
  sub->add_option("--models", models, "models to run")->capture_default_str();
  sub->add_option("--mlp-batch", mlp_batch, "MLP batch")->check(integer_in(1, 1 << 16))->capture_default_str();
  sub->add_option("--cnn-batch", cnn_batch, "CNN batch")->check(integer_in(1, 1 << 16))->capture_default_str();
}

}  // namespace

int bench(int argc, char* argv[]) {
  CLI::App app{"Benchmarks, each beside the same run's machine limits.", "ktr bench"};
  app.require_subcommand(1);
  int threads = -1;
  app.add_option("--threads", threads, "host threads")->check(thread_count());
  auto* kernels = app.add_subcommand(
      "kernels",
      "each kernel of a training step beside the limit it should approach (sgemm, copies), interleaved");
  bool quick = false;
  kernels->add_flag("--quick", quick, "tiny sizes (a smoke run)");
  kernels->add_option("--threads", threads, "host threads")->check(thread_count());
  auto* pipeline =
      app.add_subcommand("pipeline", "naive vs resident vs multistep-K vs graph-K training steps, samples/s");
  bench::PipelineOptions o;
  pipeline->add_option("--steps", o.steps, "timed steps per variant and round (a multiple of every K)")
      ->check(integer_in(1, 1 << 20))
      ->capture_default_str();
  pipeline->add_option("--rounds", o.rounds, "interleaved rounds (the median is reported)")
      ->check(integer_in(1, 1000))
      ->capture_default_str();
  pipeline->add_option("--k", o.ks, "steps per dispatch to compare")->capture_default_str();
  pipeline->add_option("--json", o.json, "write the results as JSON");
  pipeline->add_option("--plot", o.plot, "write a gnuplot PNG");
  model_options(pipeline, o.models, o.mlp_batch, o.cnn_batch);
  pipeline
      ->add_option("--precision", o.precision,
                   "fp32, tf32 (CUDA) or bf16 (CUDA; oneDNN on CPUs with AVX512-BF16 or AMX)")
      ->check(one_of({"fp32", "tf32", "bf16"}))
      ->capture_default_str();
  pipeline->add_option("--threads", threads, "host threads")->check(thread_count());
  auto* profile = app.add_subcommand("profile", "where a training step's time goes, kernel by kernel");
  bench::ProfileOptions po;
  profile->add_option("--steps", po.steps, "profiled steps per model (a multiple of --k)")
      ->check(integer_in(1, 1 << 20))
      ->capture_default_str();
  profile->add_option("--k", po.k, "steps per dispatch")->check(integer_in(1, 1 << 16))->capture_default_str();
  model_options(profile, po.models, po.mlp_batch, po.cnn_batch);
  profile->get_option("--models")
      ->description(
          "models to run: mlp, cnn, unet, periodic (the field surrogates of "
          "bench/peers/ktr-vs-torch-fields.sh, at the CNN batch)");
  profile->add_option("--precision", po.precision, "fp32, tf32 (CUDA) or bf16")
      ->check(one_of({"fp32", "tf32", "bf16"}))
      ->capture_default_str();
  profile->add_option("--threads", threads, "host threads")->check(thread_count());
  auto* rl = app.add_subcommand("rl",
                                "off-policy RL updates per second (K = 1 and 16 per call), call latency, "
                                "TorchFort's convergence suite (--suite)");
  bench::RlBenchOptions ro;
  rl->add_option("--updates", ro.updates, "timed updates per case and round (a multiple of 16)")
      ->check(integer_in(16, 1 << 24))
      ->capture_default_str();
  rl->add_option("--rounds", ro.rounds, "interleaved rounds (medians are reported)")
      ->check(integer_in(1, 1000))
      ->capture_default_str();
  rl->add_flag("--suite", ro.suite, "TorchFort's off-policy convergence suite at its full counts, timed");
  rl->add_option("--seeds", ro.seeds, "seeds of the suite")->check(integer_in(1, 100))->capture_default_str();
  rl->add_option("--threads", threads, "host threads")->check(thread_count());
  auto* derivatives = app.add_subcommand(
      "derivatives", "a physics-informed step (jet, residual, reverse pass) beside a plain step, same batch");
  bench::DerivativesBenchOptions dopt;
  derivatives->add_option("--widths", dopt.widths, "hidden widths, one case each")
      ->delimiter(',')
      ->check(integer_in(1, 1 << 14))
      ->capture_default_str();
  derivatives->add_option("--depth", dopt.depth, "hidden tanh layers")
      ->check(integer_in(1, 64))
      ->capture_default_str();
  derivatives->add_option("--points", dopt.points, "collocation points")
      ->check(integer_in(1, 1 << 20))
      ->capture_default_str();
  derivatives->add_option("--rounds", dopt.rounds, "interleaved rounds (medians are reported)")
      ->check(integer_in(1, 1000))
      ->capture_default_str();
  derivatives->add_option("--steps", dopt.steps, "timed steps per round")
      ->check(integer_in(1, 1 << 20))
      ->capture_default_str();
  derivatives->add_option("--threads", threads, "host threads")->check(thread_count());
  std::string const which = argc > 2 ? argv[2] : "";
  if (!which.empty() && which[0] != '-' && which != "kernels" && which != "pipeline" && which != "profile" &&
      which != "rl" && which != "derivatives")
    throw FlagError("unknown benchmark '" + which + "' (kernels, pipeline, profile, rl or derivatives)");
  if (!parse(app, argc, argv, 2)) return 0;
  if (profile->parsed() && po.steps % po.k != 0)
    throw FlagError("--steps: must be a multiple of --k (" + std::to_string(po.k) + ")");
  if (rl->parsed() && ro.updates % 16 != 0) throw FlagError("--updates: must be a multiple of 16");
  Runtime runtime(threads);
  if (rl->parsed()) {
    int const failed = bench::run_rl(ExecSpace(), ro);
#if defined(KTR_CLI_TORCHFORT_BENCH)
    if (!ro.suite) run_torchfort_rl_layer(ro.rounds);
#endif
    return failed;
  }
  if (derivatives->parsed()) return bench::run_derivatives(ExecSpace(), dopt);
  if (pipeline->parsed()) return bench::run_pipeline(ExecSpace(), o);
  if (profile->parsed()) return bench::run_profile(ExecSpace(), po);
  return bench::run_kernels(ExecSpace(), quick);
}

}  // namespace ktr::cli
