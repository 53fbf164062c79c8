// The ktr command line: `ktr info`, `ktr --version`, `ktr train`, `ktr eval`, `ktr bench`.
#include "core/error.hpp"
#include "core/runtime.hpp"

#include <cstdio>
#include <cstring>
#include <string>

namespace {

int usage(FILE* out) {
  std::fprintf(out,
               "usage: ktr <command> [flags]\n"
               "  info        Kokkos version, backends, device, threads and BLAS of this build\n"
               "  --version   one line: ktr and Kokkos versions and the execution space\n");
  return out == stderr ? 2 : 0;
}

}  // namespace

int main(int argc, char* argv[]) {
  if (argc < 2) return usage(stderr);
  std::string const cmd = argv[1];
  try {
    if (cmd == "--help" || cmd == "-h" || cmd == "help") return usage(stdout);
    if (cmd == "--version") {
      ktr::Runtime runtime;
      std::printf("%s\n", ktr::version_line().c_str());
      return 0;
    }
    if (cmd == "info") {
      ktr::Runtime runtime;
      std::printf("%s", ktr::runtime_info().c_str());
      return 0;
    }
    std::fprintf(stderr, "ktr: unknown command '%s'\n", cmd.c_str());
    return usage(stderr);
  } catch (ktr::Error const& e) {
    std::fprintf(stderr, "ktr %s: %s\n", cmd.c_str(), e.what());
    return 1;
  }
}
