// `ktr bench kernels|pipeline`: the benchmarks of bench/, from the command line.
#include <ktr/backends/gemm.hpp>
#include <ktr/train/runtime.hpp>
#include "apps/cli.hpp"
#include "apps/flags.hpp"
#include "bench/bench.hpp"

#include <cstdio>
#include <string>

namespace ktr::cli {

namespace {
char const* const kBenchHelp =
    "usage: ktr bench <benchmark> [flags]\n"
    "  kernels     each kernel of a training step beside the machine limit it should approach (same run)\n"
    "  pipeline    naive vs resident vs multistep-K vs graph-K training steps, samples/s\n"
    "ktr bench <benchmark> --help lists its flags\n";
}  // namespace

int bench(int argc, char* argv[]) {
  std::string const which = argc > 2 ? argv[2] : "";
  if (which == "--help" || which == "-h") {
    std::printf("%s", kBenchHelp);
    return 0;
  }
  bool const help = argc > 3 && (std::string(argv[3]) == "--help" || std::string(argv[3]) == "-h");
  if (which == "pipeline") {
    if (help) {
      std::printf(
          "usage: ktr bench pipeline [--models mlp,cnn] [--steps N per round (default 64)] [--rounds R (default "
          "5)]\n"
          "                          [--k 4,16,64]\n"
          "                          [--json FILE] [--plot FILE.png] [--threads N] [--precision fp32|tf32]\n"
          "naive vs resident vs multistep-K vs graph-K, samples/s and speed-up, against the same run's limits\n");
      return 0;
    }
    Flags const f(
        argc, argv, 3,
        {"models", "steps", "rounds", "k", "json", "plot", "threads", "mlp-batch", "cnn-batch", "precision"});
    bench::PipelineOptions o;
    o.models = f.str("models", o.models);
    o.steps = f.integer("steps", o.steps, 1, 1 << 20);
    o.rounds = int(f.integer("rounds", o.rounds, 1, 1000));
    o.ks = f.str("k", o.ks);
    o.json = f.str("json", "");
    o.plot = f.str("plot", "");
    o.mlp_batch = f.integer("mlp-batch", o.mlp_batch, 1, 1 << 16);
    o.cnn_batch = f.integer("cnn-batch", o.cnn_batch, 1, 1 << 16);
    o.precision = f.str("precision", o.precision);
    try {
      parse_matmul_precision(o.precision);
    } catch (Error const& e) {
      throw FlagError(e.what());
    }
    Runtime runtime(int(f.integer("threads", -1, 1, 4096)));
    return bench::run_pipeline(ExecSpace(), o);
  }
  if (which == "kernels") {
    if (help) {
      std::printf(
          "usage: ktr bench kernels [--quick] [--threads N]\n"
          "gather, optimiser and model rates beside copy bandwidth and large-sgemm rate, same run\n");
      return 0;
    }
    Flags const f(argc, argv, 3, {"threads"}, {"quick"});
    Runtime runtime(int(f.integer("threads", -1, 1, 4096)));
    return bench::run_kernels(ExecSpace(), f.on("quick"));
  }
  throw FlagError(which.empty() ? std::string("expected a benchmark: kernels or pipeline")
                                : "unknown benchmark '" + which + "' (kernels or pipeline)");
}

}  // namespace ktr::cli
