// Google Benchmark micro-benchmarks of the kernels a training step is made of, with FLOP/s or bytes/s counters.
// The first argument of every benchmark is the batch (or, for the optimiser, thousands of parameters), so
// `--benchmark_filter='/8(/|$)'` runs each once at its smallest size (the CTest smoke run).
#include <ktr/backends/gemm.hpp>
#include <ktr/core/ops.hpp>
#include <ktr/models/layers.hpp>
#include <ktr/models/loss.hpp>
#include <ktr/optim/optimizer.hpp>
#include <ktr/train/runtime.hpp>
#include "bench/bench.hpp"
#include "bench/measure.hpp"

#include <benchmark/benchmark.h>

namespace {

using ktr::ExecSpace;
using ktr::Shape;
using ktr::Tensor;

void set_rate(benchmark::State& state, double per_iteration, char const* name) {
  state.counters[name] = benchmark::Counter(per_iteration, benchmark::Counter::kIsIterationInvariantRate);
}

// (B, in) x (in, out): the dense layers of both models.
void BM_Gemm(benchmark::State& state) {
  std::int64_t const b = state.range(0), in = state.range(1), out = state.range(2);
  ExecSpace space;
  Tensor x("x", {b, in}), w("w", {in, out}), y("y", {b, out});
  ktr::fill(space, x.view(), 0.5f);
  ktr::fill(space, w.view(), 0.25f);
  for (auto _ : state) {
    ktr::gemm(space, ktr::Precision{}, false, false, 1.0f, x.matrix(), w.matrix(), 0.0f, y.matrix());
    space.fence();
  }
  set_rate(state, 2.0 * b * in * out, "FLOP/s");
}
BENCHMARK(BM_Gemm)
    ->Args({8, 784, 512})
    ->Args({256, 784, 512})
    ->Args({256, 512, 512})
    ->Args({256, 512, 10})
    ->Args({32, 6272, 10})
    ->UseRealTime();

// The gemms of a dense layer's backward: range(0) = B, then in, out, and which: 0 the kernel gradient
// (in, out) = (B, in)^T (B, out), 1 the input gradient (B, in) = (B, out) (in, out)^T.
void BM_GemmBackward(benchmark::State& state) {
  std::int64_t const b = state.range(0), in = state.range(1), out = state.range(2);
  bool const input_gradient = state.range(3) == 1;
  ExecSpace space;
  Tensor x("x", {b, in}), w("w", {in, out}), dy("dy", {b, out});
  ktr::fill(space, x.view(), 0.5f);
  ktr::fill(space, w.view(), 0.25f);
  ktr::fill(space, dy.view(), 0.25f);
  for (auto _ : state) {
    if (input_gradient)
      ktr::gemm(space, ktr::Precision{}, false, true, 1.0f, dy.matrix(), w.matrix(), 0.0f, x.matrix());
    else
      ktr::gemm(space, ktr::Precision{}, true, false, 1.0f, x.matrix(), dy.matrix(), 0.0f, w.matrix());
    space.fence();
  }
  set_rate(state, 2.0 * b * in * out, "FLOP/s");
}
BENCHMARK(BM_GemmBackward)
    ->Args({32, 6272, 10, 0})
    ->Args({32, 6272, 10, 1})
    ->Args({256, 784, 512, 0})
    ->Args({256, 512, 512, 1})
    ->UseRealTime();

// Layer forward or backward on a batch of (B, H, W, C).
template <class LayerT, bool Backward>
void BM_Layer(benchmark::State& state, LayerT layer, Shape sample) {
  std::int64_t const b = state.range(0);
  ExecSpace space;
  Shape const in{b, sample[1], sample[2], sample[3]};
  Shape const out = layer.output_shape(in);
  ktr::StandaloneLayer standalone(layer, in);
  Tensor x("x", in), y("y", out), dy("dy", out), dx("dx", in);
  ktr::fill(space, x.view(), 0.5f);
  ktr::fill(space, dy.view(), 0.1f);
  layer.forward(space, ktr::Precision{}, x, y);
  for (auto _ : state) {
    if (Backward)
      layer.backward(space, ktr::Precision{}, x, y, dy, dx);
    else
      layer.forward(space, ktr::Precision{}, x, y);
    space.fence();
  }
  double const flops = layer.forward_flops(in) * (Backward ? 2 : 1);
  if (flops > 0)
    set_rate(state, flops, "FLOP/s");
  else
    set_rate(state, 4.0 * double(in.size() + out.size()), "bytes/s");
}
void BM_ConvForward(benchmark::State& s) {
  BM_Layer<ktr::Conv2D, false>(s, ktr::Conv2D(32, ktr::Activation::relu), {1, 28, 28, 1});
}
void BM_ConvBackward(benchmark::State& s) {
  BM_Layer<ktr::Conv2D, true>(s, ktr::Conv2D(32, ktr::Activation::relu), {1, 28, 28, 1});
}
// Conv2D + ReLU with the AvgPool2 after it fused in, as the SimpleCNN runs it (direct kernels; backward without
// the input gradient, as for a first layer).
template <bool Backward>
void BM_ConvPool(benchmark::State& state) {
  std::int64_t const b = state.range(0);
  ExecSpace space;
  ktr::Conv2D layer(32, ktr::Activation::relu);
  Shape const in{b, 28, 28, 1}, out{b, 14, 14, 32};
  if (!layer.fuse_next(ktr::AvgPool2(), in)) state.SkipWithError("conv did not fuse the pool");
  ktr::StandaloneLayer standalone(layer, in);
  Tensor x("x", in), y("y", out), dy("dy", out);
  ktr::fill(space, x.view(), 0.5f);
  ktr::fill(space, dy.view(), 0.1f);
  layer.forward(space, ktr::Precision{}, x, y);
  for (auto _ : state) {
    if (Backward)
      layer.backward(space, ktr::Precision{}, x, y, dy, Tensor());
    else
      layer.forward(space, ktr::Precision{}, x, y);
    space.fence();
  }
  set_rate(state, layer.forward_flops(in), "FLOP/s");
}
void BM_ConvPoolForward(benchmark::State& s) { BM_ConvPool<false>(s); }
void BM_ConvPoolBackward(benchmark::State& s) { BM_ConvPool<true>(s); }
BENCHMARK(BM_ConvPoolForward)->Arg(8)->Arg(32)->Arg(256)->UseRealTime();
BENCHMARK(BM_ConvPoolBackward)->Arg(8)->Arg(32)->Arg(256)->UseRealTime();

// The dense layers of both models, forward (gemm + bias/ReLU) and backward (bias gradient, two gemms).
void BM_DenseHeadForward(benchmark::State& s) {
  BM_Layer<ktr::Dense, false>(s, ktr::Dense(10, ktr::Activation::identity), {1, 14, 14, 32});
}
void BM_DenseHeadBackward(benchmark::State& s) {
  BM_Layer<ktr::Dense, true>(s, ktr::Dense(10, ktr::Activation::identity), {1, 14, 14, 32});
}
void BM_DenseHiddenForward(benchmark::State& s) {
  BM_Layer<ktr::Dense, false>(s, ktr::Dense(512, ktr::Activation::relu), {1, 1, 1, 512});
}
void BM_DenseHiddenBackward(benchmark::State& s) {
  BM_Layer<ktr::Dense, true>(s, ktr::Dense(512, ktr::Activation::relu), {1, 1, 1, 512});
}
BENCHMARK(BM_DenseHeadForward)->Arg(8)->Arg(32)->Arg(256)->UseRealTime();
BENCHMARK(BM_DenseHeadBackward)->Arg(8)->Arg(32)->Arg(256)->UseRealTime();
BENCHMARK(BM_DenseHiddenForward)->Arg(8)->Arg(32)->Arg(256)->UseRealTime();
BENCHMARK(BM_DenseHiddenBackward)->Arg(8)->Arg(32)->Arg(256)->UseRealTime();

void BM_PoolForward(benchmark::State& s) { BM_Layer<ktr::AvgPool2, false>(s, ktr::AvgPool2(), {1, 28, 28, 32}); }
void BM_PoolBackward(benchmark::State& s) { BM_Layer<ktr::AvgPool2, true>(s, ktr::AvgPool2(), {1, 28, 28, 32}); }
BENCHMARK(BM_ConvForward)->Arg(8)->Arg(32)->Arg(256)->UseRealTime();
BENCHMARK(BM_ConvBackward)->Arg(8)->Arg(32)->Arg(256)->UseRealTime();
BENCHMARK(BM_PoolForward)->Arg(8)->Arg(32)->Arg(256)->UseRealTime();
BENCHMARK(BM_PoolBackward)->Arg(8)->Arg(32)->Arg(256)->UseRealTime();

void BM_Gather(benchmark::State& state) {
  std::int64_t const b = state.range(0), n = 4096;
  auto data = ktr::bench::random_dataset(n, 1);
  ExecSpace space;
  ktr::BatchCursor cursor{Kokkos::View<std::int64_t, ktr::MemSpace>("step"), 0, 1, b};
  Tensor x("x", data.batch_shape(b));
  ktr::DeviceView<std::int32_t*> y("y", std::size_t(b));
  for (auto _ : state) {
    ktr::gather_batch(space, data, cursor, ktr::InputTransform{}, x, y);
    space.fence();
  }
  set_rate(state, double(b) * 784 * 5, "bytes/s");
}
BENCHMARK(BM_Gather)->Arg(8)->Arg(32)->Arg(256)->UseRealTime();

void BM_Loss(benchmark::State& state) {
  std::int64_t const b = state.range(0);
  ExecSpace space;
  Tensor z("z", {b, 10}), dz("dz", {b, 10});
  ktr::fill(space, z.view(), 0.1f);
  ktr::DeviceView<std::int32_t*> y("y", std::size_t(b));
  ktr::DeviceView<float*> loss("loss", 1);
  ktr::DeviceView<std::int32_t*> correct("correct", 1);
  for (auto _ : state) {
    ktr::softmax_cross_entropy(space, z, y, dz, ktr::LossOutput{loss, correct, 0, false});
    space.fence();
  }
  set_rate(state, double(b) * 10 * 8, "bytes/s");
}
BENCHMARK(BM_Loss)->Arg(8)->Arg(32)->Arg(256)->UseRealTime();

// Adam over an arena of range(0) thousand floats (670 = the MLP).
void BM_Adam(benchmark::State& state) {
  std::int64_t const n = state.range(0) * 1000;
  ExecSpace space;
  ktr::DeviceView<float*> p("p", std::size_t(n)), g("g", std::size_t(n));
  ktr::Optimizer opt(ktr::OptimizerConfig{}, n);
  Kokkos::View<std::int64_t, ktr::MemSpace> step("step");
  for (auto _ : state) {
    opt.update(space, p, g, step);
    space.fence();
  }
  set_rate(state, 7.0 * 4 * double(n), "bytes/s");
}
BENCHMARK(BM_Adam)->Arg(8)->Arg(63)->Arg(670)->UseRealTime();

}  // namespace

int main(int argc, char* argv[]) {
  ktr::Runtime runtime(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
