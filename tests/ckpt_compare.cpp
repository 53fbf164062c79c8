// Compares the parameters (and optimiser state) of two checkpoints, for the command-line tests of data-parallel
// runs, whose results agree with one rank's up to float summation order:
//   ktr_ckpt_compare A B TOLERANCE
// passes (exit 0) when every value satisfies |a - b| <= TOLERANCE * (1 + |a|) and the steps agree; prints the
// largest relative difference either way.
#include <ktr/core/error.hpp>
#include <ktr/train/checkpoint.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>

int main(int argc, char* argv[]) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: ktr_ckpt_compare A B TOLERANCE\n");
    return 2;
  }
  try {
    ktr::Checkpoint const a = ktr::read_checkpoint(argv[1]), b = ktr::read_checkpoint(argv[2]);
    double const tolerance = std::atof(argv[3]);
    if (a.get("step") != b.get("step")) {
      std::printf("steps differ: %s and %s\n", a.get("step").c_str(), b.get("step").c_str());
      return 1;
    }
    if (a.buffers.size() != b.buffers.size()) {
      std::printf("buffer counts differ: %zu and %zu\n", a.buffers.size(), b.buffers.size());
      return 1;
    }
    double worst = 0;
    for (std::size_t i = 0; i < a.buffers.size(); ++i) {
      if (a.buffers[i].size() != b.buffers[i].size()) {
        std::printf("buffer %zu sizes differ\n", i);
        return 1;
      }
      for (std::size_t j = 0; j < a.buffers[i].size(); ++j) {
        double const x = a.buffers[i][j], y = b.buffers[i][j];
        double const d = std::abs(x - y) / (1 + std::abs(x));
        if (!(d <= worst)) worst = d;  // NaN counts as the worst
      }
    }
    std::printf("step %s, largest relative difference %.3g (tolerance %.3g)\n", a.get("step").c_str(), worst,
                tolerance);
    return worst <= tolerance ? 0 : 1;
  } catch (ktr::Error const& e) {
    std::fprintf(stderr, "ktr_ckpt_compare: %s\n", e.what());
    return 1;
  }
}
