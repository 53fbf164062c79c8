// `ktr` command dispatch, `ktr info`, `ktr --version`, and the error-to-exit-code policy.
#include "apps/cli.hpp"

#include <ktr/core/error.hpp>
#include <ktr/train/runtime.hpp>
#include "apps/flags.hpp"

#include <cstdio>
#include <string>

namespace ktr::cli {

namespace {

int usage(FILE* out) {
  std::fprintf(out,
               "usage: ktr <command> [flags]\n"
               "  train       train a model (default: the MLP on Fashion-MNIST); ktr train --help\n"
               "  eval        evaluate a checkpoint on a test set; ktr eval --help\n"
               "  bench       benchmarks (kernels, pipeline); ktr bench --help\n"
               "  synth       write a small synthetic dataset, IDX images or .npy arrays (for tests and demos)\n"
               "  export      a checkpoint's weights as Flax-named safetensors; ktr export --help\n"
               "  import      Flax-named safetensors into a checkpoint; ktr import --help\n"
               "  docs        the reference pages (settings, model descriptions, C API, commands) from the code\n"
               "  info        Kokkos version, backends, device, threads and BLAS of this build\n"
               "  --version   ktr and Kokkos versions and the execution space\n");
  return out == stderr ? 2 : 0;
}

}  // namespace

int run(int argc, char* argv[]) {
  if (argc < 2) return usage(stderr);
  std::string const cmd = argv[1];
  try {
    if (cmd == "--help" || cmd == "-h" || cmd == "help") return usage(stdout);
    if (cmd == "train") return train(argc, argv);
    if (cmd == "eval") return eval(argc, argv);
    if (cmd == "bench") return bench(argc, argv);
    if (cmd == "synth") return synth(argc, argv);
    if (cmd == "export") return export_weights_cmd(argc, argv);
    if (cmd == "import") return import_weights_cmd(argc, argv);
    if (cmd == "docs") return docs(argc, argv);
    bool const help = argc > 2 && (std::string(argv[2]) == "--help" || std::string(argv[2]) == "-h");
    if ((cmd == "--version" || cmd == "info") && help) {
      std::printf(cmd == "info"
                      ? "usage: ktr info\nKokkos version, backends, device, threads and BLAS of this build\n"
                      : "usage: ktr --version\n");
      return 0;
    }
    if ((cmd == "--version" || cmd == "info") && argc > 2)
      throw FlagError("unexpected argument '" + std::string(argv[2]) + "'");
    if (cmd == "--version") {
      Runtime runtime;
      std::printf("%s\n", version_line().c_str());
      return 0;
    }
    if (cmd == "info") {
      Runtime runtime;
      std::printf("%s", runtime_info().c_str());
      return 0;
    }
    std::fprintf(stderr, "ktr: unknown command '%s'\n", cmd.c_str());
    return usage(stderr);
  } catch (DivergenceError const& e) {
    std::fprintf(stderr, "ktr %s: %s\n", cmd.c_str(), e.what());
    return 3;
  } catch (UsageError const& e) {  // a flag, or a setting from the environment (OMP_NUM_THREADS, ...)
    std::fprintf(stderr, "ktr %s: %s (see: ktr %s --help)\n", cmd.c_str(), with_flag_names(e.what()).c_str(),
                 cmd.c_str());
    return 2;
  } catch (Error const& e) {
    std::fprintf(stderr, "ktr %s: %s\n", cmd.c_str(), with_flag_names(e.what()).c_str());
    return 1;
  } catch (std::exception const& e) {
    std::fprintf(stderr, "ktr %s: internal error: %s\n", cmd.c_str(), e.what());
    return 1;
  }
}

}  // namespace ktr::cli
