// `ktr bench kernels`: each building block of a training step beside the machine limit it should approach,
// measured in the same run, with the ratio:
//   gather (uint8 -> float batch)      GB/s   vs  device copy GB/s
//   Adam update over the MLP arena     GB/s   vs  device copy GB/s
//   model forward + backward           GFLOP/s vs large-sgemm GFLOP/s   (MLP and SimpleCNN, batch 32 and 256)
//   empty-kernel launch cost
#include <ktr/core/loss.hpp>
#include <ktr/core/ops.hpp>
#include <ktr/data/dataset.hpp>
#include <ktr/models/model.hpp>
#include <ktr/optim/optimizer.hpp>
#include "bench/bench.hpp"
#include "bench/measure.hpp"

#include <cstdio>
#include <random>

namespace ktr::bench {

namespace {

DeviceDataset random_dataset(std::int64_t n) {
  std::mt19937 rng(1);
  std::vector<std::uint8_t> px(std::size_t(n * 784)), lb(static_cast<std::size_t>(n));
  for (auto& p : px) p = std::uint8_t(rng());
  for (auto& l : lb) l = std::uint8_t(rng() % 10);
  return make_device_dataset(px, lb, n, 28, 28, 1, 10, "random");
}

}  // namespace

double gather_gbps(ExecSpace const& space, DeviceDataset const& data, std::int64_t batch) {
  BatchCursor cursor{Kokkos::View<std::int64_t, MemSpace>("ktr::bench::step"), 0, 1, batch};
  Tensor x("ktr::bench::x", data.batch_shape(batch));
  DeviceView<std::int32_t*> y("ktr::bench::y", std::size_t(batch));
  double const s = median_seconds(
      space, [&] { gather_batch(space, data, cursor, Normalization{}, x, y); }, 31, 3);
  double const bytes = double(batch) * (double(data.sample_size()) * (1 + 4) + 8);  // uint8 in, float out, labels
  return bytes / s / 1e9;
}

double adam_gbps(ExecSpace const& space, std::int64_t n) {
  DeviceView<float*> p("ktr::bench::p", std::size_t(n)), g("ktr::bench::g", std::size_t(n));
  Optimizer opt(OptimizerConfig{}, n);
  Kokkos::View<std::int64_t, MemSpace> step("ktr::bench::step");
  double const s = median_seconds(
      space, [&] { opt.update(space, p, g, step); }, 31, 3);
  return 7.0 * 4.0 * double(n) / s / 1e9;  // read p, g, m, v; write p, m, v
}

ModelRate model_rate(ExecSpace const& space, std::string const& description, std::int64_t batch) {
  Model model(description, batch);
  model.init(space, 0);
  Tensor x("ktr::bench::x", model.input_shape(batch));
  fill(space, x.view(), 0.5f);
  DeviceView<std::int32_t*> y("ktr::bench::y", std::size_t(batch));
  DeviceView<float*> loss("ktr::bench::loss", 1);
  DeviceView<std::int32_t*> correct("ktr::bench::correct", 1);
  double const s = median_seconds(
      space,
      [&] {
        Tensor const logits = model.forward(space, x);
        softmax_cross_entropy(space, logits, y, model.dlogits(), LossOutput{loss, correct, 0, false});
        model.backward(space);
      },
      batch >= 256 ? 9 : 31, 3);
  return ModelRate{double(batch) / s, model.train_flops(batch) / s / 1e9};
}

int run_kernels(ExecSpace const& space, bool quick) {
  double const sgemm = sgemm_gflops(space, quick ? 128 : 2048, quick ? 3 : 7);
  LaunchCost const launch = launch_cost(space, quick ? 200 : 2000);
  DeviceDataset const data = random_dataset(quick ? 600 : 60000);
  std::printf("%-46s %12s %22s %8s\n", "kernel", "achieved", "limit (same run)", "ratio");
  auto row = [](std::string const& what, double got, double limit, char const* unit, char const* limit_name) {
    std::printf("%-46s %7s %s %9s %s %-6s %6.0f%%\n", what.c_str(), num(got).c_str(), unit, num(limit).c_str(),
                unit, limit_name, 100 * got / limit);
  };
  std::printf("%-46s %7s GF/s\n", "large sgemm through ktr::gemm", num(sgemm).c_str());
  std::printf("%-46s %7s us back-to-back, %s us with a fence\n", "empty kernel launch",
              num(launch.async_us, 2).c_str(), num(launch.synced_us, 2).c_str());
  // Memory-bound kernels beside a device copy of the same buffer, measured just before: for the gather, a copy of
  // the float batch it produces; for the optimiser, a copy as large as the arena traffic. GB/s count bytes read
  // plus bytes written, for the kernel (gather: 1 + 4 bytes a pixel) and the copy (4 + 4) alike.
  for (std::int64_t b : {32, 256}) {
    double const copy = copy_gbps(space, b * 784 * 4, quick ? 3 : 31);
    row("gather batch " + std::to_string(b), gather_gbps(space, data, b), copy, "GB/s", "copy");
  }
  std::int64_t const arena = quick ? 10000 : 669706;  // the MLP's parameters
  double const adam_copy = copy_gbps(space, std::int64_t(3.5 * 4 * double(arena)), quick ? 3 : 31);
  row("adam update, arena of " + std::to_string(arena) + " floats", adam_gbps(space, arena), adam_copy, "GB/s",
      "copy");
  for (auto const& [name, desc] : {std::pair<char const*, std::string>{"mlp", Model::mlp()},
                                   std::pair<char const*, std::string>{"cnn", Model::simple_cnn()}}) {
    for (std::int64_t b : {32, 256}) {
      ModelRate const r = model_rate(space, desc, quick ? 8 : b);
      row(std::string(name) + " fwd+bwd batch " + std::to_string(quick ? 8 : b) + " (" + num(r.samples_per_s, 0) +
              " samples/s)",
          r.gflops, sgemm, "GF/s", "sgemm");
    }
  }
  return 0;
}

}  // namespace ktr::bench
