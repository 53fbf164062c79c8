// `ktr bench kernels`: each building block of a training step beside the machine limit it should approach. Each
// kernel and its limit are measured back to back, over 5 interleaved rounds; the table gives medians and the
// median (and range) of the same-round ratio, so that a ratio never compares runs seconds apart:
//   gather (uint8 -> float batch)      GB/s   vs  device copy GB/s
//   Adam update over the MLP arena     GB/s   vs  device copy GB/s
//   model forward + backward           GFLOP/s vs large-sgemm GFLOP/s   (MLP, SimpleCNN and a U-Net on 16x16
//                                                                        fields, batch 32 and 256)
//   the same in bf16, where it runs    GFLOP/s vs large bf16 gemm GFLOP/s (the same entry point in bf16:
//                                                                        oneDNN on hosts, cuBLAS on GPUs)
//   each convolution of the 32x32 field   GFLOP/s vs large sgemm (bf16 gemm) GFLOP/s (forward, kernel and input
//   surrogates with >= 32 input and       gradients of the layer alone, through the path a model takes: oneDNN
//   output channels, batch 128            where the build has it, else im2col + gemm)
//   empty-kernel launch cost
#include <ktr/backends/gemm.hpp>
#include <ktr/core/ops.hpp>
#include <ktr/data/dataset.hpp>
#include <ktr/models/layers.hpp>
#include <ktr/models/loss.hpp>
#include <ktr/models/model.hpp>
#include <ktr/optim/optimizer.hpp>
#include "bench/bench.hpp"
#include "bench/measure.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <tuple>

namespace ktr::bench {

namespace {}  // namespace

double gather_gbps(ExecSpace const& space, DeviceDataset const& data, std::int64_t batch) {
  BatchCursor cursor{Kokkos::View<std::int64_t, MemSpace>("ktr::bench::step"), 0, 1, batch};
  Tensor x("ktr::bench::x", data.batch_shape(batch));
  DeviceView<std::int32_t*> y("ktr::bench::y", std::size_t(batch));
  double const s = median_seconds(
      space, [&] { gather_batch(space, data, cursor, InputTransform{}, x, y); }, 31, 3);
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

ModelRate model_rate(ExecSpace const& space, std::string const& description, std::int64_t batch,
                     MatmulPrecision precision) {
  Model model(description, batch);
  model.init(space, 0);
  Tensor x("ktr::bench::x", model.input_shape(batch));
  fill(space, x.view(), 0.5f);
  DeviceView<std::int32_t*> y("ktr::bench::y", std::size_t(batch));
  DeviceView<float*> loss("ktr::bench::loss", 1);
  DeviceView<std::int32_t*> correct("ktr::bench::correct", 1);
  // A model that ends in a field regresses (the mean squared error over every element); others classify.
  bool const field = model.output_shape(1).rank == 4;
  Tensor targets("ktr::bench::targets", field ? model.output_shape(batch) : Shape{1});
  double const s = median_seconds(
      space,
      [&] {
        Tensor const logits = model.forward(space, Precision{precision, {}}, x);
        if (field)
          regression_loss(space, RegressionLoss{}, logits, targets, model.dlogits(),
                          LossOutput{loss, correct, 0, false});
        else
          softmax_cross_entropy(space, logits, y, model.dlogits(), LossOutput{loss, correct, 0, false});
        model.backward(space, Precision{precision, {}});
      },
      batch >= 256 ? 9 : 31, 3);
  return ModelRate{double(batch) / s, model.train_flops(batch) / s / 1e9};
}

namespace {

// One convolution layer alone on inputs of shape `in`: its forward, then its backward with the kernel and input
// gradients, as a model runs it in the middle of a network; GFLOP/s of the three products (3 x its forward's).
// Constant inputs and weights keep a relu's outputs positive, so the gradient it passes on stays as it was.
double conv_gflops(ExecSpace const& space, std::string const& token, Shape const& in, MatmulPrecision precision) {
  auto layer = make_layer(token);
  Shape const out = layer->output_shape(in);
  std::vector<Tensor> params, grads;
  for (ParamSpec const& spec : layer->param_specs(in)) {
    params.emplace_back(space, "ktr::bench::param", spec.shape);
    grads.emplace_back(space, "ktr::bench::grad", spec.shape);
    fill(space, params.back().view(), 0.01f);
  }
  layer->bind(params, grads);
  layer->set_scratch(
      DeviceView<float*>("ktr::bench::scratch", std::size_t(std::max<std::int64_t>(1, layer->scratch_size(in)))));
  Tensor x(space, "ktr::bench::x", in), y(space, "ktr::bench::y", out), dy(space, "ktr::bench::dy", out),
      dx(space, "ktr::bench::dx", in);
  fill(space, x.view(), 0.5f);
  fill(space, dy.view(), 1e-3f);
  Precision const p{precision, {}};
  double const s = median_seconds(
      space,
      [&] {
        layer->forward(space, p, x, y);
        layer->backward(space, p, x, y, dy, dx);
      },
      9, 3);
  return 3 * layer->forward_flops(in) / s / 1e9;
}

// A kernel and the limit it is compared with, measured back to back in every round.
struct Row {
  std::string what;
  char const *unit, *limit_name;
  std::function<double()> kernel, limit;
  std::vector<double> got, lim, ratio;
};

}  // namespace

int run_kernels(ExecSpace const& space, bool quick) {
  int const rounds = quick ? 2 : 5;
  std::int64_t const n = quick ? 128 : 2048;
  auto sgemm = [&space, n, quick] { return sgemm_gflops(space, n, quick ? 1 : 3, 1); };
  LaunchCost const launch = launch_cost(space, quick ? 200 : 2000);
  DeviceDataset const data = random_dataset(quick ? 600 : 60000, 1);
  std::vector<Row> rows;
  // Memory-bound kernels beside a device copy of the same buffer: for the gather, a copy of the float batch it
  // produces; for the optimiser, a copy as large as the arena traffic. GB/s count bytes read plus bytes written,
  // for the kernel (gather: 1 + 4 bytes a pixel) and the copy (4 + 4) alike.
  int const copy_reps = quick ? 3 : 15;
  for (std::int64_t b : {32, 256})
    rows.push_back(Row{"gather batch " + std::to_string(b), "GB/s", "copy",
                       [&space, &data, b] { return gather_gbps(space, data, b); },
                       [&space, b, copy_reps] { return copy_gbps(space, b * 784 * 4, copy_reps); }});
  std::int64_t const arena = quick ? 10000 : 669706;  // the MLP's parameters
  rows.push_back(Row{
      "adam update, arena of " + std::to_string(arena) + " floats", "GB/s", "copy",
      [&space, arena] { return adam_gbps(space, arena); },
      [&space, arena, copy_reps] { return copy_gbps(space, std::int64_t(3.5 * 4 * double(arena)), copy_reps); }});
  // Forward + loss + backward of both models beside a large sgemm through the same gemm entry point.
  // The field surrogate of the U-Net issue: 16x16 fields, a skip across a max pool, mse over every element.
  std::string const unet =
      "in=16x16x1 conv3x3:16:relu save:a maxpool2 conv3x3:32:relu upsample2 concat:a conv3x3:16:relu conv1x1:1";
  // bf16 (where this build and machine run it): each model again, beside a bf16 gemm of the same size.
  bool const bf16 = matmul_bf16_available();
  auto bf16_gemm = [&space, n, quick] { return sgemm_gflops(space, n, quick ? 1 : 3, 1, MatmulPrecision::bf16); };
  std::vector<double> samples(12);
  int slot = 0;
  for (MatmulPrecision precision : {MatmulPrecision::fp32, MatmulPrecision::bf16}) {
    if (precision == MatmulPrecision::bf16 && !bf16) continue;
    std::string const tag = precision == MatmulPrecision::bf16 ? " bf16" : "";
    for (auto const& [name, desc] : {std::pair<char const*, std::string>{"mlp", Model::mlp()},
                                     std::pair<char const*, std::string>{"cnn", Model::simple_cnn()},
                                     std::pair<char const*, std::string>{"unet", unet}}) {
      for (std::int64_t b : {32, 256}) {
        std::int64_t const batch = quick ? b / 8 : b;  // two distinct rows per model (4 and 32)
        double* sps = &samples[std::size_t(slot++)];
        rows.push_back(Row{std::string(name) + tag + " fwd+bwd batch " + std::to_string(batch), "GF/s",
                           tag.empty() ? "sgemm" : "bf16mm",
                           [&space, desc = desc, batch, sps, precision] {
                             ModelRate const r = model_rate(space, desc, batch, precision);
                             *sps = r.samples_per_s;
                             return r.gflops;
                           },
                           tag.empty() ? std::function<double()>(sgemm) : std::function<double()>(bf16_gemm)});
      }
    }
  }

  // The convolutions of the field surrogates (bench/peers/ktr-vs-torch-fields.sh) with >= 32 input and output
  // channels: the U-Net's 32 -> 64 at 8x8 and 96 -> 32 after its concat at 16x16, the periodic net's circular
  // 32 -> 32 at 16x16 (relu here, for a steady gradient; its gelu pass is not a product).
  std::int64_t const conv_batch = quick ? 2 : 128;
  for (MatmulPrecision precision : {MatmulPrecision::fp32, MatmulPrecision::bf16}) {
    if (precision == MatmulPrecision::bf16 && !bf16) continue;
    bool const b16 = precision == MatmulPrecision::bf16;
    for (auto const& [token, in, label] :
         {std::tuple<char const*, Shape, char const*>{"conv3x3:64:relu", Shape{conv_batch, 8, 8, 32},
                                                      "32->64 8x8"},
          std::tuple<char const*, Shape, char const*>{"conv3x3:32:relu", Shape{conv_batch, 16, 16, 96},
                                                      "96->32 16x16"},
          std::tuple<char const*, Shape, char const*>{"conv3x3:32:relu:circular", Shape{conv_batch, 16, 16, 32},
                                                      "32->32 circ 16x16"}})
      rows.push_back(Row{std::string("conv") + (b16 ? " bf16 " : " ") + label + " b" + std::to_string(conv_batch),
                         "GF/s", b16 ? "bf16mm" : "sgemm",
                         [&space, token = std::string(token), in = in, precision] {
                           return conv_gflops(space, token, in, precision);
                         },
                         b16 ? std::function<double()>(bf16_gemm) : std::function<double()>(sgemm)});
  }

  std::vector<double> empty_us;
  for (int r = 0; r < rounds; ++r)
    for (auto& row : rows) {
      double const limit = row.limit(), got = row.kernel();
      row.lim.push_back(limit), row.got.push_back(got), row.ratio.push_back(got / limit);
    }

  std::printf("%d interleaved rounds (each: limit, then kernel); medians, and the range of the same-round ratio\n",
              rounds);
  std::printf("%-40s %12s %22s %8s %13s\n", "kernel", "achieved", "limit (same round)", "ratio", "ratio range");
  std::printf("%-40s %7s us back-to-back, %s us with a fence\n", "empty kernel launch",
              num(launch.async_us, 2).c_str(), num(launch.synced_us, 2).c_str());
  for (auto const& row : rows) {
    auto const [lo, hi] = std::minmax_element(row.ratio.begin(), row.ratio.end());
    std::printf("%-40s %7s %s %9s %s %-6s %6.0f%% %5.0f-%.0f%%\n", row.what.c_str(), num(median(row.got)).c_str(),
                row.unit, num(median(row.lim)).c_str(), row.unit, row.limit_name, 100 * median(row.ratio),
                100 * *lo, 100 * *hi);
  }
  std::printf("(samples/s of the last round: mlp %s / %s, cnn %s / %s, unet %s / %s at the two batches)\n",
              num(samples[0], 0).c_str(), num(samples[1], 0).c_str(), num(samples[2], 0).c_str(),
              num(samples[3], 0).c_str(), num(samples[4], 0).c_str(), num(samples[5], 0).c_str());
  if (bf16)
    std::printf("(bf16: mlp %s / %s, cnn %s / %s, unet %s / %s; bf16 matmuls: %s)\n", num(samples[6], 0).c_str(),
                num(samples[7], 0).c_str(), num(samples[8], 0).c_str(), num(samples[9], 0).c_str(),
                num(samples[10], 0).c_str(), num(samples[11], 0).c_str(), matmul_bf16_backend().c_str());
  else
    std::printf("(no bf16 rows: %s)\n", matmul_unavailable(MatmulPrecision::bf16).c_str());
  return 0;
}

}  // namespace ktr::bench
