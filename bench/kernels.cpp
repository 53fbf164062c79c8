// `ktr bench kernels`: each building block of a training step beside the machine limit it should approach,
// measured in the same run, with the ratio:
//   gather (uint8 -> float batch)      GB/s   vs  device copy GB/s
//   Adam update over the MLP arena     GB/s   vs  device copy GB/s
//   model forward + backward           GFLOP/s vs large-sgemm GFLOP/s   (MLP and SimpleCNN, batch 32 and 256)
//   empty-kernel launch cost
#include "bench/bench.hpp"
#include "bench/measure.hpp"
#include "core/dataset.hpp"
#include "core/loss.hpp"
#include "core/ops.hpp"
#include "models/model.hpp"
#include "optim/optimizer.hpp"

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
  std::int64_t const copy_bytes = quick ? (1 << 20) : (64 << 20);
  double const copy = copy_gbps(space, copy_bytes);
  double const sgemm = sgemm_gflops(space, quick ? 128 : 2048, quick ? 3 : 7);
  LaunchCost const launch = launch_cost(space, quick ? 200 : 2000);
  DeviceDataset const data = random_dataset(quick ? 600 : 60000);
  std::printf("%-44s %12s %12s %8s\n", "kernel", "achieved", "limit", "ratio");
  auto row = [](std::string const& what, double got, double limit, char const* unit) {
    std::printf("%-44s %9s %s %9s %s %7.0f%%\n", what.c_str(), num(got).c_str(), unit, num(limit).c_str(), unit,
                100 * got / limit);
  };
  std::printf("%-44s %9s GB/s\n", "device copy (limit for memory-bound kernels)", num(copy).c_str());
  std::printf("%-44s %9s GF/s\n", "large sgemm through ktr::gemm (limit for FLOPs)", num(sgemm).c_str());
  std::printf("%-44s %9s us back-to-back, %s us with a fence\n", "empty kernel launch",
              num(launch.async_us, 2).c_str(), num(launch.synced_us, 2).c_str());
  for (std::int64_t b : {32, 256})
    row("gather batch " + std::to_string(b), gather_gbps(space, data, b), copy, "GB/s");
  row("adam update, MLP arena (669706 floats)", adam_gbps(space, 669706), copy, "GB/s");
  for (auto const& [name, desc] : {std::pair<char const*, std::string>{"mlp", Model::mlp()},
                                   std::pair<char const*, std::string>{"cnn", Model::simple_cnn()}}) {
    for (std::int64_t b : {32, 256}) {
      ModelRate const r = model_rate(space, desc, quick ? 8 : b);
      row(std::string(name) + " forward+backward batch " + std::to_string(quick ? 8 : b) + " (" +
              num(r.samples_per_s, 0) + " samples/s)",
          r.gflops, sgemm, "GF/s");
    }
  }
  return 0;
}

}  // namespace ktr::bench
