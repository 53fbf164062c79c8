// Captured K-step programs against the plain loop, on a stream of its own: parameters, optimiser state and
// per-step metrics bit for bit, against K single-step dispatches as well; programs keyed by model, data and K;
// per-stream BLAS handles driven from two host threads; the opt-in TF32 mode. The capture tests run where the
// build captures (CUDA; HIP with Kokkos Kernels 4.x) and report themselves skipped elsewhere, with the reason.
#include <ktr/backends/gemm.hpp>
#include <ktr/backends/graph.hpp>
#include <ktr/backends/stream_instances.hpp>
#include <ktr/core/error.hpp>
#include <ktr/rl/off_policy.hpp>
#include <ktr/rl/torchfort_check.hpp>
#include <ktr/train/pinn.hpp>
#include <ktr/train/program_cache.hpp>
#include <ktr/train/session.hpp>

#include "small_data.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>

namespace {

using ktr::DispatchPath;
using ktr::RunConfig;
using ktr::Session;

#define KTR_SKIP_UNLESS_CAPTURE()                                                                \
  do {                                                                                           \
    if (!ktr::CapturedProgram::supported())                                                      \
      GTEST_SKIP() << "needs a GPU build that captures (CUDA, or HIP with Kokkos Kernels 4.x): " \
                   << ktr::CapturedProgram::unsupported_reason();                                \
  } while (false)

std::string const kMlp = "in=8x8x1 flatten dense:32:relu dense:10";
std::string const kCnn = "in=8x8x1 conv3x3:4:relu avgpool2 flatten dense:10";

ktr::DeviceDataset small_dataset(std::int64_t n, std::uint32_t seed) {
  return ktr::test::small_dataset(n, seed, "capture-test");
}

RunConfig config(std::string const& model) {
  RunConfig c;
  c.model = model;
  c.batch = 16;
  c.seed = 11;
  c.optimizer.lr = 3e-3f;
  return c;
}

bool same_bits(std::vector<float> const& a, std::vector<float> const& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Parameters, optimiser moments and scalars, and the device step of two sessions, bit for bit.
void expect_same_state(Session& a, Session& b, std::string const& what) {
  SCOPED_TRACE(what);
  EXPECT_TRUE(same_bits(ktr::download(a.model().arena().params()), ktr::download(b.model().arena().params())))
      << "parameters differ";
  auto const sa = a.state().optimizer.state(), sb = b.state().optimizer.state();
  ASSERT_EQ(sa.size(), sb.size());
  for (std::size_t i = 0; i < sa.size(); ++i)
    EXPECT_TRUE(same_bits(ktr::download(sa[i]), ktr::download(sb[i]))) << "optimiser buffer " << i << " differs";
  EXPECT_TRUE(
      same_bits(ktr::download(a.state().optimizer.scalars()), ktr::download(b.state().optimizer.scalars())))
      << "optimiser scalars differ";
  std::int64_t step_a = 0, step_b = 0;
  Kokkos::deep_copy(step_a, a.state().step);
  Kokkos::deep_copy(step_b, b.state().step);
  EXPECT_EQ(step_a, step_b);
  EXPECT_EQ(a.state().host_step(), b.state().host_step());
}

// Everywhere: the default instance (on CUDA/HIP its stream is the null stream) is never captured.
TEST(Capture, TheDefaultInstanceRunsThePlainLoop) {
  auto data = small_dataset(100, 1);
  Session s(config(kMlp), 4);
  EXPECT_FALSE(ktr::CapturedProgram::can_capture(ktr::ExecSpace()));
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(ktr::dispatch(ktr::ExecSpace(), s.state(), s.model(), data, 4), DispatchPath::plain);
  EXPECT_TRUE(s.state().captured_programs() == 0);
}

// Everywhere (a host container): the cache keeps the most recently used keys up to its capacity, a key that
// differs only in its stream or its stream's BLAS resources is another key, and shrinking evicts the oldest.
TEST(Capture, TheProgramCacheKeepsTheMostRecentlyUsedPrograms) {
  ktr::Model const model(kMlp, 4);
  auto const data = small_dataset(40, 8);
  auto key = [&](int k, std::uintptr_t stream, std::uint64_t resources, std::uintptr_t instance = 1) {
    return ktr::ProgramKey(model, data, ktr::InputTransform{}, k, ktr::MatmulPrecision::fp32,
                           ktr::StreamIdentity{stream, resources, instance});
  };
  EXPECT_FALSE(key(4, 1, 1) == key(4, 2, 1)) << "two streams share a key";
  EXPECT_FALSE(key(4, 1, 1) == key(4, 1, 2)) << "a re-created stream's resources share a key";
  EXPECT_FALSE(key(4, 1, 1, 1) == key(4, 1, 1, 2)) << "two instances of one stream share a key";
  EXPECT_TRUE(key(4, 1, 1) == key(4, 1, 1));
  ktr::ProgramCache cache(2);
  auto fill = [&](ktr::ProgramKey const& k) {
    auto& slot = cache.slot(k);
    bool const fresh = slot == nullptr;
    if (fresh) slot = std::make_unique<ktr::CapturedProgram>();
    return fresh;
  };
  EXPECT_TRUE(fill(key(1, 1, 1)));
  EXPECT_TRUE(fill(key(2, 1, 1)));
  EXPECT_FALSE(fill(key(1, 1, 1)));  // kept; now the most recently used
  EXPECT_TRUE(fill(key(3, 1, 1)));   // evicts K = 2, the least recently used
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.evictions(), 1);
  EXPECT_FALSE(fill(key(1, 1, 1)));
  EXPECT_TRUE(fill(key(2, 1, 1))) << "the least recently used program was kept";
  cache.set_capacity(1);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_FALSE(fill(key(2, 1, 1))) << "shrinking evicted the most recently used program";
  EXPECT_THROW(cache.set_capacity(0), ktr::Error);
}

// Everywhere: a program holds the input transform's scale and shift by value and reads its per-feature views by
// address, so a run whose transform changed (weights loaded with their own) must not replay the old program.
TEST(Capture, AnotherInputTransformIsAnotherProgram) {
  ktr::Model const model(kMlp, 4);
  auto const data = small_dataset(40, 8);
  auto key = [&](ktr::InputTransform const& n) {
    return ktr::ProgramKey(model, data, n, 4, ktr::MatmulPrecision::fp32, ktr::StreamIdentity{1, 1, 1});
  };
  ktr::InputTransform const plain, scaled = ktr::InputTransform::standardized(0.25f, 0.5f);
  ktr::InputTransform a = plain, b = plain;
  a.feature_scale = ktr::DeviceView<float*>("ktr::test::scale_a", 784);
  a.feature_shift = ktr::DeviceView<float*>("ktr::test::shift_a", 784);
  b.feature_scale = ktr::DeviceView<float*>("ktr::test::scale_b", 784);
  b.feature_shift = a.feature_shift;
  EXPECT_TRUE(key(plain) == key(ktr::InputTransform{}));
  EXPECT_FALSE(key(plain) == key(scaled)) << "another scale and shift share a key";
  EXPECT_FALSE(key(plain) == key(a)) << "a per-feature transform shares the plain one's key";
  EXPECT_FALSE(key(a) == key(b)) << "other per-feature views share a key";
  EXPECT_TRUE(key(a) == key(a));
}

// Everywhere: a model makes one instance per stream it is handed and keeps it (a program captured on an instance
// refers to its scratch); nullptr is the default instance, made by nobody; a failed make keeps nothing.
TEST(Capture, OneInstancePerStreamForTheHoldersLife) {
  int made = 0;
  ktr::StreamInstances instances([&](void* stream) {
    if (stream == reinterpret_cast<void*>(0xbad)) throw ktr::Error("no such stream");
    ++made;
    return ktr::ExecSpace();
  });
  int a = 0, b = 0;
  for (int call = 0; call < 50; ++call) {
    (void)instances.of(&a);
    (void)instances.of(call % 2 ? &b : nullptr);
  }
  EXPECT_EQ(made, 2) << "an instance was made again for a stream it had seen";
  EXPECT_EQ(instances.made(), 2u);
  EXPECT_THROW((void)instances.of(reinterpret_cast<void*>(0xbad)), ktr::Error);
  EXPECT_EQ(instances.made(), 2u) << "a failed make was kept";
  instances.fence();
  if (ktr::device_is_host)  // host builds have no streams: a stream is refused by name
    EXPECT_THROW((void)ktr::StreamInstances().of(&a), ktr::Error);
}

TEST(Capture, CapturedKStepProgramEqualsPlainLoopAndSingleSteps) {
  KTR_SKIP_UNLESS_CAPTURE();
  constexpr int K = 8, dispatches = 3;
  auto data = small_dataset(300, 2);
  for (auto const& model : {kMlp, kCnn}) {
    SCOPED_TRACE(model);
    ktr::DeviceStream stream;  // a stream of its own: captures need one
    ktr::ExecSpace const& space = stream.space();
    ASSERT_TRUE(ktr::CapturedProgram::can_capture(space));
    Session captured(config(model), K), plain(config(model), K), single(config(model), K);
    ktr::StepMetrics mc, mp;
    std::vector<float> single_loss;
    std::vector<std::int32_t> single_correct;
    for (int d = 0; d < dispatches; ++d) {
      DispatchPath const path = ktr::dispatch(space, captured.state(), captured.model(), data, K);
      EXPECT_EQ(path, d == 0 ? DispatchPath::captured : DispatchPath::replayed)
          << ktr::dispatch_path_name(path) << ": " << captured.state().capture_error();
      mc = ktr::read_metrics(space, captured.state(), K);
      ktr::train_steps(space, plain.state(), plain.model(), data, K);
      plain.state().count_steps(K);
      mp = ktr::read_metrics(space, plain.state(), K);
      single_loss.clear(), single_correct.clear();
      for (int i = 0; i < K; ++i) {
        DispatchPath const one = ktr::dispatch(space, single.state(), single.model(), data, 1);
        EXPECT_EQ(one, d == 0 && i == 0 ? DispatchPath::captured : DispatchPath::replayed);
        auto const m1 = ktr::read_metrics(space, single.state(), 1);
        single_loss.push_back(m1.loss[0]), single_correct.push_back(m1.correct[0]);
      }
      EXPECT_TRUE(same_bits(mc.loss, mp.loss)) << "dispatch " << d << ": losses differ from the plain loop";
      EXPECT_EQ(mc.correct, mp.correct) << "dispatch " << d;
      EXPECT_TRUE(same_bits(mc.loss, single_loss)) << "dispatch " << d << ": losses differ from single steps";
      EXPECT_EQ(mc.correct, single_correct) << "dispatch " << d;
    }
    space.fence();
    expect_same_state(captured, plain, "captured vs plain loop");
    expect_same_state(captured, single, "captured vs single-step dispatches");
    EXPECT_EQ(captured.state().captured_programs(), 1u);
    EXPECT_TRUE(std::isfinite(mc.loss[K - 1]));
  }
}

TEST(Capture, ProgramsAreKeyedByModelDataAndK) {
  KTR_SKIP_UNLESS_CAPTURE();
  constexpr int K = 4;
  auto first = small_dataset(200, 3), second = small_dataset(200, 4);
  ktr::DeviceStream stream;
  ktr::ExecSpace const& space = stream.space();
  Session s(config(kMlp), K), reference(config(kMlp), K);
  // first data at K, second data at K, first again, then K/2 on the second: four keys, each captured once.
  struct Leg {
    ktr::DeviceDataset const* data;
    int k;
    DispatchPath expected;
  };
  Leg const legs[] = {{&first, K, DispatchPath::captured},     {&first, K, DispatchPath::replayed},
                      {&second, K, DispatchPath::captured},    {&second, K, DispatchPath::replayed},
                      {&first, K, DispatchPath::replayed},     {&second, K / 2, DispatchPath::captured},
                      {&second, K / 2, DispatchPath::replayed}};
  for (auto const& leg : legs) {
    DispatchPath const path = ktr::dispatch(space, s.state(), s.model(), *leg.data, leg.k);
    EXPECT_EQ(path, leg.expected) << ktr::dispatch_path_name(path) << " " << s.state().capture_error();
    auto const m = ktr::read_metrics(space, s.state(), leg.k);
    ktr::train_steps(space, reference.state(), reference.model(), *leg.data, leg.k);
    reference.state().count_steps(leg.k);
    auto const r = ktr::read_metrics(space, reference.state(), leg.k);
    EXPECT_TRUE(same_bits(m.loss, r.loss)) << "a replay used another key's data";
  }
  EXPECT_EQ(s.state().captured_programs(), 3u);
  expect_same_state(s, reference, "keyed programs vs plain loop");
}

// A regression run with the features a captured program must carry whole: gradient clipping (the global-norm
// reduction inside the program), two micro-batches per update, mean squared error and a cosine schedule with
// warm-up (the rate computed on the device from the step). Captured and replayed dispatches equal the plain loop.
// `dispatches` dispatches of K steps of `c`, captured (then replayed) on a stream of its own, against the plain
// loop: the same losses bit for bit, all finite, and the same parameters and optimiser state.
void expect_captured_equals_plain(RunConfig const& c, ktr::DeviceDataset const& data, int K, int dispatches,
                                  char const* what) {
  ktr::DeviceStream stream;
  ktr::ExecSpace const& space = stream.space();
  Session captured(c, K), plain(c, K);
  for (int d = 0; d < dispatches; ++d) {
    DispatchPath const path = ktr::dispatch(space, captured.state(), captured.model(), data, K);
    EXPECT_EQ(path, d == 0 ? DispatchPath::captured : DispatchPath::replayed)
        << ktr::dispatch_path_name(path) << ": " << captured.state().capture_error();
    auto const mc = ktr::read_metrics(space, captured.state(), K);
    ktr::train_steps(space, plain.state(), plain.model(), data, K);
    plain.state().count_steps(K);
    auto const mp = ktr::read_metrics(space, plain.state(), K);
    EXPECT_TRUE(same_bits(mc.loss, mp.loss))
        << what << ", dispatch " << d << ": losses differ from the plain loop";
    for (float l : mc.loss) EXPECT_TRUE(std::isfinite(l));
  }
  space.fence();
  expect_same_state(captured, plain, (std::string(what) + ", captured vs plain").c_str());
}

TEST(Capture, ClippingAccumulationRegressionAndCosineScheduleReplayBitForBit) {
  KTR_SKIP_UNLESS_CAPTURE();
  constexpr int K = 6, dispatches = 4;
  constexpr std::int64_t n = 240, D = 5, T = 2;
  std::mt19937 rng(21);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> x(std::size_t(n * D)), y(std::size_t(n * T));
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t d = 0; d < D; ++d) x[std::size_t(i * D + d)] = g(rng);
    y[std::size_t(i * T)] = x[std::size_t(i * D)] - 0.5f * x[std::size_t(i * D + 1)];
    y[std::size_t(i * T + 1)] = x[std::size_t(i * D + 2)] * x[std::size_t(i * D + 3)];
  }
  auto const data = ktr::make_device_dataset(x, {D}, {}, y, n, 0, "capture-regression");
  RunConfig c;
  c.model = "in=5 dense:16:relu dense:2";
  c.task = ktr::Task::regression;
  c.normalize = ktr::InputTransformMode::none;
  c.input_transform = ktr::InputTransform::identity();
  c.batch = 24;
  c.accumulate = 2;
  c.seed = 5;
  c.optimizer.lr = 2e-2f;
  c.optimizer.clip_norm = 0.05f;  // small enough to clip most steps
  c.optimizer.schedule.kind = ktr::Schedule::Kind::cosine;
  c.optimizer.schedule.warmup_steps = 4;
  c.optimizer.schedule.decay_steps = 16;
  expect_captured_equals_plain(c, data, K, dispatches, "clipping + accumulation + regression + cosine");
}

// A program recorded on one stream is never replayed on another: each stream gets its own, and a stream
// released and created again (possibly at the same address) records afresh.
TEST(Capture, ProgramsAreKeyedByStream) {
  KTR_SKIP_UNLESS_CAPTURE();
  constexpr int K = 4;
  auto data = small_dataset(200, 7);
  Session s(config(kMlp), K), reference(config(kMlp), K);
  auto leg = [&](ktr::ExecSpace const& space, DispatchPath expected) {
    DispatchPath const path = ktr::dispatch(space, s.state(), s.model(), data, K);
    EXPECT_EQ(path, expected) << ktr::dispatch_path_name(path) << " " << s.state().capture_error();
    auto const m = ktr::read_metrics(space, s.state(), K);
    ktr::train_steps(space, reference.state(), reference.model(), data, K);
    reference.state().count_steps(K);
    auto const r = ktr::read_metrics(space, reference.state(), K);
    EXPECT_TRUE(same_bits(m.loss, r.loss));
  };
  {
    ktr::DeviceStream a, b;
    leg(a.space(), DispatchPath::captured);
    leg(b.space(), DispatchPath::captured);  // same model, data and K: another stream, another program
    leg(a.space(), DispatchPath::replayed);
    leg(b.space(), DispatchPath::replayed);
  }
  ktr::DeviceStream again;  // the released streams' BLAS workspaces are gone: nothing recorded may replay here
  leg(again.space(), DispatchPath::captured);
  expect_same_state(s, reference, "per-stream programs vs plain loop");
}

// Fresh views every dispatch (an application that allocates its batch each time step): the programs kept stay
// within the capacity, the least recently used go, and the results still equal the plain loop.
TEST(Capture, TheProgramCacheIsBounded) {
  KTR_SKIP_UNLESS_CAPTURE();
  constexpr int K = 2;
  ktr::DeviceStream stream;
  Session s(config(kMlp), K), reference(config(kMlp), K);
  s.state().limit_captured_programs(3);
  // Every dataset is kept: views freed and made again may come back at the same addresses (cudaMalloc reuses
  // them), which is the same key, rightly (a program reads whatever lies at its addresses).
  std::vector<ktr::DeviceDataset> kept;
  for (int i = 0; i < 7; ++i) {
    auto const& data = kept.emplace_back(small_dataset(64, std::uint32_t(100 + i)));  // new device views each time
    for (int rep = 0; rep < 2; ++rep) {
      DispatchPath const path = ktr::dispatch(stream.space(), s.state(), s.model(), data, K);
      EXPECT_EQ(path, rep == 0 ? DispatchPath::captured : DispatchPath::replayed);
      ktr::train_steps(stream.space(), reference.state(), reference.model(), data, K);
      reference.state().count_steps(K);
    }
    EXPECT_LE(s.state().captured_programs(), 3u);
  }
  stream.space().fence();  // before the datasets' views go
  EXPECT_EQ(s.state().captured_programs(), 3u);
  EXPECT_EQ(s.state().evicted_programs(), 4);
  expect_same_state(s, reference, "bounded cache vs plain loop");
}

// Two host threads, each with its own stream and session: with one BLAS handle per stream neither sees the other's
// stream; the results equal the same runs made one after the other.
TEST(Capture, TwoHostThreadsOnTwoStreams) {
  if (!ktr::gemm_handles_per_stream())
    GTEST_SKIP() << "needs per-stream BLAS handles (CUDA); this build's gemm: " << ktr::gemm_backend();
  constexpr int K = 8, dispatches = 4;
  auto data = small_dataset(300, 5);
  auto train = [&](ktr::DeviceStream const& stream, Session& s) {
    for (int d = 0; d < dispatches; ++d) ktr::dispatch(stream.space(), s.state(), s.model(), data, K);
    stream.space().fence();
  };
  Session a(config(kMlp), K), b(config(kCnn), K), a_alone(config(kMlp), K), b_alone(config(kCnn), K);
  ktr::DeviceStream stream_a, stream_b;  // instances are created on this thread; only the work runs on two
  train(stream_a, a_alone);
  train(stream_b, b_alone);
  std::thread ta([&] { train(stream_a, a); }), tb([&] { train(stream_b, b); });
  ta.join(), tb.join();
  expect_same_state(a, a_alone, "MLP, concurrent vs alone");
  expect_same_state(b, b_alone, "CNN, concurrent vs alone");
}

// A lower precision's losses: each within `tol` of fp32's, and not all of them equal to fp32's bit for bit (else
// the run computed in fp32).
void expect_close_but_not_equal(std::vector<float> const& low, std::vector<float> const& fp32, float tol,
                                char const* name) {
  ASSERT_EQ(low.size(), fp32.size());
  bool any_different = false;
  for (std::size_t i = 0; i < low.size(); ++i) {
    EXPECT_NEAR(low[i], fp32[i], tol) << name << " step " << i;
    any_different |= low[i] != fp32[i];
  }
  EXPECT_TRUE(any_different) << "the " << name << " run's losses equal the fp32 run's bit for bit: it ran fp32";
}

TEST(Capture, Tf32IsOptInAndCloseToFp32) {
  EXPECT_EQ(ktr::parse_matmul_precision("fp32"), ktr::MatmulPrecision::fp32);
  EXPECT_THROW(ktr::parse_matmul_precision("fp16"), ktr::Error);
  RunConfig tf32_config = config(kMlp);
  tf32_config.precision = ktr::MatmulPrecision::tf32;
  if (!ktr::matmul_tf32_available()) {
    EXPECT_THROW(ktr::parse_matmul_precision("tf32"), ktr::Error);
    EXPECT_THROW(Session(tf32_config, 1), ktr::Error);
    GTEST_SKIP() << "TF32 needs a CUDA build (refusal checked); this build runs on " << ktr::ExecSpace::name();
  }
  constexpr int K = 8;
  auto data = small_dataset(200, 6);
  ktr::DeviceStream stream;
  // The run's precision is its config's: every gemm of its capture is TF32.
  Session fp32(config(kMlp), K), tf32(tf32_config, K);
  std::int64_t const f0 = ktr::gemm_calls(ktr::MatmulPrecision::fp32);
  ktr::dispatch(stream.space(), fp32.state(), fp32.model(), data, K);
  auto const m32 = ktr::read_metrics(stream.space(), fp32.state(), K);
  std::int64_t const f1 = ktr::gemm_calls(ktr::MatmulPrecision::fp32),
                     t1 = ktr::gemm_calls(ktr::MatmulPrecision::tf32);
  ktr::dispatch(stream.space(), tf32.state(), tf32.model(), data, K);
  auto const mtf = ktr::read_metrics(stream.space(), tf32.state(), K);
  EXPECT_GT(f1, f0);                                           // the fp32 run's gemms ran fp32
  EXPECT_EQ(ktr::gemm_calls(ktr::MatmulPrecision::fp32), f1);  // none of the tf32 run's did
  EXPECT_GT(ktr::gemm_calls(ktr::MatmulPrecision::tf32), t1);
  expect_close_but_not_equal(mtf.loss, m32.loss, 2e-2, "TF32");
}

// bf16 mixed precision as a run's setting: every gemm of its dispatches (plain, or captured where the backend
// captures) runs bf16, none of an fp32 run's does, and the trajectory stays near fp32's.
TEST(Capture, Bf16IsARunsOwnPrecisionAndStaysCloseToFp32) {
  RunConfig bf16_config = config(kMlp);
  bf16_config.precision = ktr::MatmulPrecision::bf16;
  if (!ktr::matmul_bf16_available()) {
    EXPECT_THROW(Session(bf16_config, 1), ktr::Error);
    GTEST_SKIP() << "bf16 cannot run here (refusal checked): "
                 << ktr::matmul_unavailable(ktr::MatmulPrecision::bf16);
  }
  constexpr int K = 8;
  auto data = small_dataset(200, 6);
  ktr::DeviceStream stream;
  Session fp32(config(kMlp), K), bf16(bf16_config, K);
  std::int64_t const b0 = ktr::gemm_calls(ktr::MatmulPrecision::bf16);
  ktr::StepMetrics m32, m16;
  for (int d = 0; d < 2; ++d) {  // on a capturing backend: the capture, then a replay
    ktr::dispatch(stream.space(), fp32.state(), fp32.model(), data, K);
    m32 = ktr::read_metrics(stream.space(), fp32.state(), K);
  }
  EXPECT_EQ(ktr::gemm_calls(ktr::MatmulPrecision::bf16), b0);  // none of the fp32 run's
  std::int64_t const f1 = ktr::gemm_calls(ktr::MatmulPrecision::fp32);
  for (int d = 0; d < 2; ++d) {
    ktr::dispatch(stream.space(), bf16.state(), bf16.model(), data, K);
    m16 = ktr::read_metrics(stream.space(), bf16.state(), K);
  }
  EXPECT_GT(ktr::gemm_calls(ktr::MatmulPrecision::bf16), b0);
  EXPECT_EQ(ktr::gemm_calls(ktr::MatmulPrecision::fp32), f1);  // none of the bf16 run's
  expect_close_but_not_equal(m16.loss, m32.loss, 5e-2, "bf16");
}

TEST(Capture, CapturedBf16ProgramEqualsThePlainLoop) {
  KTR_SKIP_UNLESS_CAPTURE();
  if (!ktr::matmul_bf16_available())
    GTEST_SKIP() << "bf16 cannot run here: " << ktr::matmul_unavailable(ktr::MatmulPrecision::bf16);
  constexpr int K = 8;
  auto data = small_dataset(300, 2);
  for (auto const& model : {kMlp, kCnn}) {
    SCOPED_TRACE(model);
    RunConfig c = config(model);
    c.precision = ktr::MatmulPrecision::bf16;
    expect_captured_equals_plain(c, data, K, 3, "bf16");
  }
}

// An off-policy system's K updates per call against single updates, bit for bit: every network, target and the
// last losses. Where the build captures, the K = 3 calls run on a stream of their own, as programs captured once
// per K and phase (TD3 updates its policy every second update, so its calls alternate two phases) and replayed,
// and the single updates kernel by kernel on the default instance; elsewhere both run kernel by kernel.
TEST(Capture, OffPolicyUpdatesInCallsOfKEqualSingleUpdatesBitForBitCapturedWhereTheBuildCaptures) {
  using ktr::rl::OffPolicyConfig;
  using ktr::rl::OffPolicySystem;
  ktr::DeviceStream stream;
  ktr::ExecSpace const& space = stream.space();
  ktr::ExecSpace const plain;
  for (auto algorithm : {OffPolicyConfig::Algorithm::td3, OffPolicyConfig::Algorithm::sac}) {
    SCOPED_TRACE(algorithm == OffPolicyConfig::Algorithm::td3 ? "td3" : "sac");
    OffPolicyConfig c = ktr::rl::torchfort_check_config(algorithm, 7);
    c.max_size = 64, c.min_size = 16, c.batch_size = 8;
    OffPolicySystem in_calls(space, c), single(plain, c);
    std::int64_t const n = 24;
    ktr::Tensor s("s", ktr::Shape{n + 1, 1}), a("a", ktr::Shape{n, 1}), r("r", ktr::Shape{n}),
        d("d", ktr::Shape{n});
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(-1, 1);
    std::size_t const rows = std::size_t(n);
    std::vector<float> hs(rows + 1), ha(rows), hr(rows), hd(rows);
    for (auto* v : {&hs, &ha, &hr}) std::generate(v->begin(), v->end(), [&] { return u(rng); });
    for (std::size_t i = 0; i < hd.size(); ++i) hd[i] = i % 5 == 4 ? 1.0f : 0.0f;
    ktr::from_host(s, hs), ktr::from_host(a, ha), ktr::from_host(r, hr), ktr::from_host(d, hd);
    for (std::int64_t i = 0; i < n; ++i) {
      in_calls.push(space, s.data() + i, a.data() + i, r.data() + i, s.data() + i + 1, d.data() + i);
      single.push(plain, s.data() + i, a.data() + i, r.data() + i, s.data() + i + 1, d.data() + i);
    }
    ASSERT_TRUE(in_calls.ready(space) && single.ready(plain));
    float p_calls = 0, q_calls = 0, p_single = 0, q_single = 0;
    for (int call = 0; call < 4; ++call) in_calls.train(space, 3, &p_calls, &q_calls);
    for (int update = 0; update < 12; ++update) single.train(plain, 1, &p_single, &q_single);
    EXPECT_EQ(in_calls.updates(), 12);
    EXPECT_EQ(p_calls, p_single);
    EXPECT_EQ(q_calls, q_single);
    auto same = [&](ktr::Model& x, ktr::Model& y, char const* what) {
      EXPECT_TRUE(same_bits(ktr::download(x.arena().params()), ktr::download(y.arena().params()))) << what;
    };
    same(in_calls.policy(), single.policy(), "policy");
    for (int i = 0; i < c.num_critics; ++i) {
      same(in_calls.critic(i), single.critic(i), "critic");
      same(in_calls.critic_target(i), single.critic_target(i), "critic target");
    }
    if (algorithm == OffPolicyConfig::Algorithm::td3)
      same(in_calls.policy_target(), single.policy_target(), "target");
  }
}

struct CaptureHeatResidual {  // u_t - 0.4 u_xx, spec "d1 d0,0"
  template <class D>
  KOKKOS_INLINE_FUNCTION D operator()(ktr::pinn::Point<D> const& p) const {
    return p.d(0) - 0.4 * p.d(1);
  }
};

struct CaptureWallResidual {  // u - x, spec ""
  template <class D>
  KOKKOS_INLINE_FUNCTION D operator()(ktr::pinn::Point<D> const& p) const {
    return p.u() - p.x(0);
  }
};

// A Pinn's K steps per call against single steps, bit for bit (parameters and losses), with Adam on points drawn
// every step and with L-BFGS on kept ones. Where the build captures, the calls of 4 run on a stream of their own
// as one program recorded at the first call and replayed (its draws keyed by a device counter, so a replay draws
// new points), the single steps kernel by kernel on the default instance; elsewhere both run kernel by kernel.
TEST(Capture, PinnStepsInCallsOfKEqualSingleStepsBitForBitCapturedWhereTheBuildCaptures) {
  using ktr::pinn::Points;
  ktr::DeviceStream stream;
  ktr::ExecSpace const& space = stream.space();
  ktr::ExecSpace const plain;
  ktr::OptimizerConfig adam, lbfgs;
  adam.lr = 1e-2f;
  lbfgs.kind = ktr::OptimizerConfig::Kind::lbfgs;
  lbfgs.lr = 1;
  for (ktr::OptimizerConfig const& optimizer : {adam, lbfgs}) {
    bool const kept = optimizer.kind == ktr::OptimizerConfig::Kind::lbfgs;
    SCOPED_TRACE(kept ? "lbfgs" : "adam");
    char const* const desc = "in=2 dense:16:tanh dense:16:tanh dense:1";
    ktr::Model a(space, desc, 64), b(plain, desc, 64);
    a.init(space, 3), b.init(plain, 3);
    ktr::Pinn in_calls(space, a, optimizer, 5), single(plain, b, optimizer, 5);
    for (ktr::Pinn* p : {&in_calls, &single}) {
      Points const box = Points::box({0, 0}, {1, 1}), walls = Points::walls({0, 0}, {1, 1}, 0);
      p->add_term("interior", "d1 d0,0", CaptureHeatResidual{}, kept ? box.once() : box, 64);
      p->add_term("walls", "", CaptureWallResidual{}, kept ? walls.once() : walls, 16, 10);
    }
    for (int call = 0; call < 3; ++call) in_calls.train(space, 4);
    for (int step = 0; step < 12; ++step) single.train(plain, 1);
    EXPECT_EQ(in_calls.steps(), 12);
    EXPECT_TRUE(same_bits(ktr::download(a.arena().params()), ktr::download(b.arena().params())));
    EXPECT_EQ(in_calls.losses(space), single.losses(plain));
  }
}

}  // namespace
