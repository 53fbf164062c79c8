// `ktr bench profile`: where a training step's time goes. Runs the real K-step dispatch (gather, forward, loss,
// backward, optimiser) of each model on random data, once plainly (the reference step time) and once under a
// KernelTimer that fences and times every kernel and gemm; prints each label's share of the step, its time and
// calls per step, and for gemms their GFLOP/s beside the same run's large sgemm. The time outside every kernel
// (host code between launches, the per-dispatch metric read-back) is the remainder.
#include <ktr/backends/gemm.hpp>
#include <ktr/backends/kernel_timer.hpp>
#include <ktr/core/error.hpp>
#include <ktr/train/runtime.hpp>
#include <ktr/train/session.hpp>
#include "bench/bench.hpp"
#include "bench/measure.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace ktr::bench {

namespace {

// FLOPs of a gemm from the label ktr::gemm gives its region ("ktr::gemm MxNxK ..."), else 0.
double gemm_flops(std::string const& label) {
  std::int64_t m = 0, n = 0, k = 0;
  if (std::sscanf(label.c_str(), "ktr::gemm %" SCNd64 "x%" SCNd64 "x%" SCNd64, &m, &n, &k) != 3) return 0;
  return 2.0 * double(m) * double(n) * double(k);
}

}  // namespace

int run_profile(ExecSpace const& space, ProfileOptions const& o) {
  KTR_REQUIRE(o.k > 0 && o.steps % o.k == 0, "--steps", "must be a multiple of --k (" + std::to_string(o.k) + ")");
  MatmulPrecision const precision = parse_matmul_precision(o.precision, "--precision");  // refused before any work
  DeviceDataset const images = random_dataset(8192, 7);
  std::vector<std::string> const models = model_names(o.models, true);
  bool const any_fields = std::any_of(models.begin(), models.end(), is_field_model);
  DeviceDataset const fields = any_fields ? random_fields(1024, 7) : DeviceDataset{};
  double const sgemm = sgemm_gflops(space, 2048);
  std::printf("%s\n", version_line().c_str());
  std::printf("gemm: %s; large sgemm %s GFLOP/s (same run); precision %s\n", gemm_backend().c_str(),
              num(sgemm).c_str(), matmul_precision_name(precision));
  std::printf(
      "each model: %lld steps in dispatches of K = %d, unprofiled (median of 3) then with every kernel and "
      "gemm fenced and timed\n",
      (long long)o.steps, o.k);

  for (std::string const& model : models) {
    DeviceDataset const& data = is_field_model(model) ? fields : images;
    RunConfig config = model_config(model, o.mlp_batch, o.cnn_batch);
    config.precision = precision;
    Session s(config, o.k);
    auto const run = [&] {  // o.steps steps in dispatches of K, one read-back each
      for (std::int64_t i = 0; i < o.steps / o.k; ++i) {
        train_steps(space, s.state(), s.model(), data, o.k);
        read_metrics(space, s.state(), o.k);
      }
    };
    double const step = median_seconds(space, run, 3, 1) / double(o.steps);  // after one warm-up run
    double const flops = s.model().train_flops(config.batch);                // forward + backward, per step
    double profiled = 0;
    std::vector<KernelTimer::Entry> entries;
    {
      KernelTimer timer;
      profiled = median_seconds(space, run, 1, 0) / double(o.steps);
      entries = timer.entries();
    }
    double inside = 0;
    for (auto const& e : entries) inside += e.seconds;
    inside /= double(o.steps);
    std::printf(
        "\n%s, batch %lld: %s ms/step (%s GFLOP/s forward+backward, %s%% of large sgemm); profiled %s "
        "ms/step\n",
        model.c_str(), (long long)config.batch, num(1e3 * step, 3).c_str(), num(flops / step / 1e9).c_str(),
        num(100 * flops / step / 1e9 / sgemm, 0).c_str(), num(1e3 * profiled, 3).c_str());
    std::printf("  %6s %9s %6s %8s  %s\n", "share", "us/step", "calls", "GFLOP/s", "label");
    for (auto const& e : entries) {
      double const per_step = e.seconds / double(o.steps);
      double const f = gemm_flops(e.label) * double(e.calls);
      std::printf("  %5s%% %9s %6s %8s  %s\n", num(100 * per_step / profiled).c_str(), num(1e6 * per_step).c_str(),
                  num(double(e.calls) / double(o.steps), 2).c_str(), f > 0 ? num(f / e.seconds / 1e9).c_str() : "",
                  e.label.c_str());
    }
    double const outside = profiled - inside;
    std::printf("  %5s%% %9s %6s %8s  %s\n", num(100 * outside / profiled).c_str(), num(1e6 * outside).c_str(), "",
                "", "outside kernels (host code, launches, fences, metric read-back)");
  }
  return 0;
}

}  // namespace ktr::bench
