// The C API, called as a C program calls it: every function with good and bad arguments, the in-place reading of
// device-readable data, the replay buffer's single read-back, datatype conversions, strided arrays, and a
// checkpoint that continues bit for bit.
#include <ktr/ktr_c.h>
#include <ktr/backends/gemm.hpp>
#include <ktr/backends/graph.hpp>
#include <ktr/backends/tools_counter.hpp>
#include <ktr/core/types.hpp>
#include "../capi/api.hpp"

#include <gtest/gtest.h>

#include "helpers.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using ktr::test::write_file;

// y = sin(x0) + x1 * x2 / 2 on x in [-1, 1]^3: a surrogate's small regression problem.
struct Surface {
  std::vector<float> x, y;
  explicit Surface(int n, unsigned seed) : x(std::size_t(3 * n)), y(std::size_t(n)) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (int i = 0; i < n; ++i) {
      float* s = &x[std::size_t(3 * i)];
      s[0] = u(rng), s[1] = u(rng), s[2] = u(rng);
      y[std::size_t(i)] = std::sin(s[0]) + s[1] * s[2] / 2;
    }
  }
};

std::string config(std::string const& general = "") {
  return "general:\n  seed: 3\n" + general +
         "model:\n  type: mlp\n  parameters:\n    layer_sizes: [3, 32, 32, 1]\n    activation: relu\n"
         "optimizer:\n  type: adam\n  parameters:\n    learning_rate: 0.005\n";
}

std::string last_error() { return ktr_last_error(); }

// RMS error of the model's predictions on `s`, and of predicting the mean.
std::pair<double, double> errors(char const* name, Surface const& s) {
  int64_t const n = int64_t(s.y.size());
  std::vector<float> out(s.y.size());
  int64_t const xs[2] = {n, 3}, os[2] = {n, 1};
  EXPECT_EQ(
      ktr_inference(name, const_cast<float*>(s.x.data()), 2, xs, KTR_FLOAT, out.data(), 2, os, KTR_FLOAT, nullptr),
      KTR_RESULT_SUCCESS)
      << last_error();
  double mean = 0, se = 0, sm = 0;
  for (float v : s.y) mean += v / double(n);
  for (std::size_t i = 0; i < s.y.size(); ++i)
    se += std::pow(out[i] - s.y[i], 2), sm += std::pow(mean - s.y[i], 2);
  return {std::sqrt(se / double(n)), std::sqrt(sm / double(n))};
}

TEST(CApi, TrainsASurrogateOnCallerBatchesAndBeatsTheMean) {
  std::string const cfg = write_file("capi_online.yaml", config());
  ASSERT_EQ(ktr_create_model("online", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
  Surface const train(2048, 1), test(512, 2);
  float first = 0, loss = 0;
  for (int step = 0; step < 400; ++step) {
    int64_t const b = 64, at = (step * b) % 2048;
    int64_t const xs[2] = {b, 3}, ys[2] = {b, 1};
    float* l = step % 4 == 3 ? nullptr : &loss;  // some steps leave the loss on the device
    ASSERT_EQ(ktr_train("online", const_cast<float*>(&train.x[std::size_t(3 * at)]), 2, xs, KTR_FLOAT,
                        const_cast<float*>(&train.y[std::size_t(at)]), 2, ys, KTR_FLOAT, l, nullptr),
              KTR_RESULT_SUCCESS)
        << last_error();
    if (step == 0) first = loss;
  }
  EXPECT_LT(loss, first / 5);
  auto const [model, mean] = errors("online", test);
  EXPECT_LT(model * 5, mean) << "surrogate RMS " << model << " vs the mean's " << mean;
  EXPECT_EQ(ktr_destroy_model("online"), KTR_RESULT_SUCCESS);
}

// general.precision: bf16 trains a surrogate in mixed precision where the machine runs it, and is refused at
// creation naming the file's key and why where it does not (KTR_BF16=off stands in for such a CPU).
TEST(CApi, Bf16PrecisionFromTheFileTrainsOrIsRefusedNamingTheKey) {
  std::string const cfg = write_file("capi_bf16.yaml", config("  precision: bf16\n"));
  if (ktr::matmul_bf16_available()) {
    ASSERT_EQ(ktr_create_model("bf16", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
    Surface const train(2048, 1), test(512, 2);
    std::int64_t const calls = ktr::gemm_calls(ktr::MatmulPrecision::bf16);
    for (int step = 0; step < 400; ++step) {
      int64_t const b = 64, at = (step * b) % 2048;
      int64_t const xs[2] = {b, 3}, ys[2] = {b, 1};
      ASSERT_EQ(ktr_train("bf16", const_cast<float*>(&train.x[std::size_t(3 * at)]), 2, xs, KTR_FLOAT,
                          const_cast<float*>(&train.y[std::size_t(at)]), 2, ys, KTR_FLOAT, nullptr, nullptr),
                KTR_RESULT_SUCCESS)
          << last_error();
    }
    EXPECT_GT(ktr::gemm_calls(ktr::MatmulPrecision::bf16), calls);
    auto const [model, mean] = errors("bf16", test);
    EXPECT_LT(model * 5, mean) << "bf16 surrogate RMS " << model << " vs the mean's " << mean;
    EXPECT_EQ(ktr_destroy_model("bf16"), KTR_RESULT_SUCCESS);
  }
  if (!ktr::device_is_host) return;  // KTR_BF16=off switches off a host's bf16 alone (GPUs: cuBLAS's)
  char const* const old = std::getenv("KTR_BF16");
  std::string const saved = old ? old : "";
  ::setenv("KTR_BF16", "off", 1);
  ktr_result_t const refused = ktr_create_model("bf16_off", cfg.c_str(), KTR_DEVICE_DEFAULT);
  std::string const why = last_error();
  if (old)
    ::setenv("KTR_BF16", saved.c_str(), 1);
  else
    ::unsetenv("KTR_BF16");
  EXPECT_NE(refused, KTR_RESULT_SUCCESS);
  EXPECT_NE(why.find("general.precision"), std::string::npos) << why;
  EXPECT_NE(why.find("capi_bf16.yaml"), std::string::npos) << why;
  ktr_destroy_model("bf16_off");
}

// A checkpoint restores the saved run's state into the model its file describes, in that file's precision: a bf16
// run's checkpoint loaded into an fp32 model trains in fp32 (and so on a CPU without bf16).
TEST(CApi, ACheckpointLoadsInTheLoadingModelsPrecision) {
  if (!ktr::matmul_bf16_available())
    GTEST_SKIP() << "bf16 cannot run here: " << ktr::matmul_unavailable(ktr::MatmulPrecision::bf16);
  std::string const b16 = write_file("capi_ckpt_bf16.yaml", config("  precision: bf16\n"));
  std::string const f32 = write_file("capi_ckpt_fp32.yaml", config());
  std::string const dir = ::testing::TempDir() + "capi_ckpt_bf16_dir";
  std::filesystem::remove_all(dir);
  Surface const s(256, 4);
  int64_t const xs[2] = {64, 3}, ys[2] = {64, 1};
  auto train = [&](char const* name) {
    return ktr_train(name, const_cast<float*>(s.x.data()), 2, xs, KTR_FLOAT, const_cast<float*>(s.y.data()), 2, ys,
                     KTR_FLOAT, nullptr, nullptr);
  };
  ASSERT_EQ(ktr_create_model("ckpt16", b16.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
  ASSERT_EQ(train("ckpt16"), KTR_RESULT_SUCCESS) << last_error();
  ASSERT_EQ(ktr_save_checkpoint("ckpt16", dir.c_str()), KTR_RESULT_SUCCESS) << last_error();
  ASSERT_EQ(ktr_create_model("ckpt32", f32.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
  ASSERT_EQ(ktr_load_checkpoint("ckpt32", dir.c_str(), nullptr, nullptr), KTR_RESULT_SUCCESS) << last_error();
  std::int64_t const bf16_calls = ktr::gemm_calls(ktr::MatmulPrecision::bf16);
  ASSERT_EQ(train("ckpt32"), KTR_RESULT_SUCCESS) << last_error();
  EXPECT_EQ(ktr::gemm_calls(ktr::MatmulPrecision::bf16), bf16_calls) << "the fp32 model trained in bf16";
  ASSERT_EQ(train("ckpt16"), KTR_RESULT_SUCCESS) << last_error();
  EXPECT_GT(ktr::gemm_calls(ktr::MatmulPrecision::bf16), bf16_calls);
  EXPECT_EQ(ktr_destroy_model("ckpt16"), KTR_RESULT_SUCCESS);
  EXPECT_EQ(ktr_destroy_model("ckpt32"), KTR_RESULT_SUCCESS);
  std::filesystem::remove_all(dir);
}

TEST(CApi, BadArgumentsAreRefusedNamingTheProblemAndTheModelGoesOn) {
  std::string const cfg = write_file("capi_bad.yaml", config());
  ASSERT_EQ(ktr_create_model("bad", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
  Surface const s(64, 3);
  float* x = const_cast<float*>(s.x.data());
  float* y = const_cast<float*>(s.y.data());
  int64_t const xs[2] = {64, 3}, ys[2] = {64, 1}, wrong[2] = {64, 4}, fewer[2] = {32, 1};
  std::int32_t labels[64] = {};
  struct Case {
    ktr_result_t got, expected;
    char const* message;
  };
  float loss = 0;
  auto train = [&](char const* name, void* in, int64_t dim, int64_t const* shape, ktr_datatype_t t, void* lab,
                   int64_t const* lshape, ktr_datatype_t lt) {
    ktr_result_t const r = ktr_train(name, in, dim, shape, t, lab, 2, lshape, lt, &loss, nullptr);
    return std::make_pair(r, last_error());
  };
  std::vector<std::pair<std::pair<ktr_result_t, std::string>, std::pair<ktr_result_t, char const*>>> const cases =
      {
          {train("nobody", x, 2, xs, KTR_FLOAT, y, ys, KTR_FLOAT),
           {KTR_RESULT_INVALID_USAGE, "model 'nobody': does not exist"}},
          {train("bad", nullptr, 2, xs, KTR_FLOAT, y, ys, KTR_FLOAT),
           {KTR_RESULT_INVALID_USAGE, "input: is a null pointer"}},
          {train("bad", x, 0, xs, KTR_FLOAT, y, ys, KTR_FLOAT),
           {KTR_RESULT_INVALID_USAGE, "input: has 0 dimensions"}},
          {train("bad", x, 2, xs, KTR_INT32, y, ys, KTR_FLOAT),
           {KTR_RESULT_INVALID_USAGE, "input: must be KTR_FLOAT or"}},
          {train("bad", x, 2, xs, ktr_datatype_t(9), y, ys, KTR_FLOAT),
           {KTR_RESULT_INVALID_USAGE, "unknown datatype 9"}},
          {train("bad", x, 2, wrong, KTR_FLOAT, y, ys, KTR_FLOAT),
           {KTR_RESULT_INVALID_USAGE, "samples of 4 values, the model takes (3)"}},
          {train("bad", x, 2, xs, KTR_FLOAT, y, fewer, KTR_FLOAT),
           {KTR_RESULT_INVALID_USAGE, "label: holds 32 samples, the input 64"}},
          {train(nullptr, x, 2, xs, KTR_FLOAT, y, ys, KTR_FLOAT),
           {KTR_RESULT_INVALID_USAGE, "name: is null or empty"}},
      };
  for (auto const& c : cases) {
    EXPECT_EQ(c.first.first, c.second.first) << c.first.second;
    EXPECT_NE(c.first.second.find(c.second.second), std::string::npos) << c.first.second;
  }
  // The first good batch makes it a regression; class labels are then refused.
  ASSERT_EQ(train("bad", x, 2, xs, KTR_FLOAT, y, ys, KTR_FLOAT).first, KTR_RESULT_SUCCESS) << last_error();
  int64_t const ls[2] = {64, 1};
  auto const r = train("bad", x, 2, xs, KTR_FLOAT, labels, ls, KTR_INT32);
  EXPECT_EQ(r.first, KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(r.second.find("targets do not match the model"), std::string::npos) << r.second;
  // Model management and files.
  EXPECT_EQ(ktr_create_model("bad", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find("model 'bad': exists already"), std::string::npos) << last_error();
  EXPECT_EQ(ktr_create_model("other", "/nonexistent.yaml", KTR_DEVICE_DEFAULT), KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find("/nonexistent.yaml: cannot open (No such file or directory)"), std::string::npos)
      << last_error();
  std::string const unknown = write_file("capi_unknown.yaml", config() + "widgets: 3\n");
  EXPECT_EQ(ktr_create_model("other", unknown.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find("capi_unknown.yaml:12: widgets: unknown key"), std::string::npos) << last_error();
  std::string const ts = write_file("capi_ts.yaml", "model: {type: torchscript}\n");
  EXPECT_EQ(ktr_create_model("other", ts.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_NOT_SUPPORTED) << last_error();
  EXPECT_EQ(ktr_create_model("other", cfg.c_str(), 5), KTR_RESULT_NOT_SUPPORTED);
  EXPECT_NE(last_error().find("device 5"), std::string::npos) << last_error();
  EXPECT_EQ(ktr_train_steps("bad", 4, &loss, nullptr), KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find("replay buffer"), std::string::npos) << last_error();
  EXPECT_EQ(ktr_push("bad", x, 2, xs, KTR_FLOAT, y, 2, ys, KTR_FLOAT, nullptr), KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find("no replay buffer"), std::string::npos) << last_error();
  EXPECT_EQ(ktr_train_steps("bad", 0, &loss, nullptr), KTR_RESULT_INVALID_USAGE);
  std::vector<float> out(64);
  EXPECT_EQ(ktr_inference("bad", x, 2, xs, KTR_FLOAT, out.data(), 2, wrong, KTR_FLOAT, nullptr),
            KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find("output: must hold (64, 1) values"), std::string::npos) << last_error();
  EXPECT_EQ(ktr_destroy_model("nobody"), KTR_RESULT_INVALID_USAGE);
#if !defined(KTR_ENABLE_MPI)
  EXPECT_EQ(ktr_create_distributed_model_F("other", cfg.c_str(), 0, KTR_DEVICE_DEFAULT), KTR_RESULT_NOT_SUPPORTED);
  EXPECT_NE(last_error().find("built without MPI"), std::string::npos) << last_error();
#endif
  // ... and after all of that the model still trains.
  EXPECT_EQ(train("bad", x, 2, xs, KTR_FLOAT, y, ys, KTR_FLOAT).first, KTR_RESULT_SUCCESS) << last_error();
  EXPECT_TRUE(std::isfinite(loss));
  EXPECT_STREQ(ktr_last_error(), "");
  EXPECT_EQ(ktr_destroy_model("bad"), KTR_RESULT_SUCCESS);
}

// The same steps from float + float targets and from double + double give the same model (the conversions are
// exact for these values), and double outputs hold the float predictions.
// ktr_inference keeps its output buffer: after a call of a size, calls of that size or smaller allocate nothing on
// a host build (a GPU build packs a host input into a device buffer of its own each call: one allocation).
TEST(CApi, InferenceKeepsItsOutputBufferBetweenCalls) {
  std::string const cfg = write_file("capi_infer.yaml", config());
  ASSERT_EQ(ktr_create_model("infer", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
  Surface const s(64, 12);
  int64_t const xs[2] = {64, 3}, ys[2] = {64, 1}, small[2] = {16, 3}, small_out[2] = {16, 1};
  float* x = const_cast<float*>(s.x.data());
  ASSERT_EQ(
      ktr_train("infer", x, 2, xs, KTR_FLOAT, const_cast<float*>(s.y.data()), 2, ys, KTR_FLOAT, nullptr, nullptr),
      KTR_RESULT_SUCCESS)
      << last_error();
  std::vector<float> out(64), again(64);
  ASSERT_EQ(ktr_inference("infer", x, 2, xs, KTR_FLOAT, out.data(), 2, ys, KTR_FLOAT, nullptr),
            KTR_RESULT_SUCCESS);
  {
    ktr::ToolsCounter counter;
    ASSERT_EQ(ktr_inference("infer", x, 2, xs, KTR_FLOAT, again.data(), 2, ys, KTR_FLOAT, nullptr),
              KTR_RESULT_SUCCESS);
    std::vector<float> part(16);
    ASSERT_EQ(ktr_inference("infer", x, 2, small, KTR_FLOAT, part.data(), 2, small_out, KTR_FLOAT, nullptr),
              KTR_RESULT_SUCCESS);
    for (int i = 0; i < 16;
         ++i)  // cuBLAS may take another kernel for 16 rows than for 64: the last bit may differ
      EXPECT_NEAR(part[std::size_t(i)], out[std::size_t(i)],
                  ktr::device_is_host ? 0.0f : 1e-6f * (1.0f + std::abs(out[std::size_t(i)])))
          << i;
    EXPECT_EQ(counter.allocations(), ktr::device_is_host ? 0 : 2) << "an inference call allocated";
  }
  EXPECT_EQ(out, again);
  EXPECT_EQ(ktr_destroy_model("infer"), KTR_RESULT_SUCCESS);
}

// KTR_DEVICE_DEFAULT is the build's device wherever it runs; KTR_DEVICE_CPU is the host build's alone; another
// GPU, or any device of a host build but 0, is not supported; other negative numbers are not devices at all.
TEST(CApi, DevicesAreTheBuildsOwn) {
  std::string const cfg = write_file("capi_devices.yaml", config());
  ASSERT_EQ(ktr_create_model("devices", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
  EXPECT_EQ(ktr_destroy_model("devices"), KTR_RESULT_SUCCESS);
  EXPECT_EQ(ktr_create_model("devices", cfg.c_str(), KTR_DEVICE_CPU),
            ktr::device_is_host ? KTR_RESULT_SUCCESS : KTR_RESULT_NOT_SUPPORTED)
      << last_error();
  if (!ktr::device_is_host)
    EXPECT_NE(last_error().find("KTR_DEVICE_DEFAULT is this build's device"), std::string::npos) << last_error();
  (void)ktr_destroy_model("devices");
  EXPECT_EQ(ktr_create_model("devices", cfg.c_str(), 0), KTR_RESULT_SUCCESS) << last_error();
  EXPECT_EQ(ktr_destroy_model("devices"), KTR_RESULT_SUCCESS);
  EXPECT_EQ(ktr_create_model("devices", cfg.c_str(), 64), KTR_RESULT_NOT_SUPPORTED);
  EXPECT_NE(last_error().find("device 64"), std::string::npos) << last_error();
  EXPECT_EQ(ktr_create_model("devices", cfg.c_str(), -3), KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find("device: -3 is neither a device index"), std::string::npos) << last_error();
}

TEST(CApi, DoublesTrainAsFloatsDo) {
  std::string const cfg = write_file("capi_types.yaml", config());
  Surface const s(96, 4);
  std::vector<double> xd(s.x.begin(), s.x.end()), yd(s.y.begin(), s.y.end());
  int64_t const xs[2] = {96, 3}, ys[2] = {96, 1};
  std::vector<std::vector<float>> predictions;
  for (int variant = 0; variant < 2; ++variant) {
    ASSERT_EQ(ktr_create_model("types", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
    for (int step = 0; step < 5; ++step) {
      ktr_result_t const r =
          variant == 0
              ? ktr_train("types", const_cast<float*>(s.x.data()), 2, xs, KTR_FLOAT,
                          const_cast<float*>(s.y.data()), 2, ys, KTR_FLOAT, nullptr, nullptr)
              : ktr_train("types", xd.data(), 2, xs, KTR_DOUBLE, yd.data(), 2, ys, KTR_DOUBLE, nullptr, nullptr);
      ASSERT_EQ(r, KTR_RESULT_SUCCESS) << last_error();
    }
    std::vector<float> out(96);
    ASSERT_EQ(ktr_inference("types", const_cast<float*>(s.x.data()), 2, xs, KTR_FLOAT, out.data(), 2, ys,
                            KTR_FLOAT, nullptr),
              KTR_RESULT_SUCCESS)
        << last_error();
    std::vector<double> outd(96);
    ASSERT_EQ(ktr_inference("types", xd.data(), 2, xs, KTR_DOUBLE, outd.data(), 2, ys, KTR_DOUBLE, nullptr),
              KTR_RESULT_SUCCESS)
        << last_error();
    for (int i = 0; i < 96; ++i) EXPECT_EQ(float(outd[std::size_t(i)]), out[std::size_t(i)]) << i;
    predictions.push_back(out);
    ASSERT_EQ(ktr_destroy_model("types"), KTR_RESULT_SUCCESS);
  }
  EXPECT_EQ(predictions[0], predictions[1]) << "double inputs trained differently from floats";
}

TEST(CApi, TrainOnDeviceReadableDataCopiesNothingAndTrainStepsReadsBackOnce) {
  std::string const cfg =
      write_file("capi_buffer.yaml", config("  batch_size: 32\n  buffer_size: 256\n  steps_per_dispatch: 4\n"));
  ASSERT_EQ(ktr_create_model("buf", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
  Surface const s(32, 5);
  int64_t const xs[2] = {32, 3}, ys[2] = {32, 1};
  float* x = const_cast<float*>(s.x.data());
  float* y = const_cast<float*>(s.y.data());
  ASSERT_EQ(ktr_train("buf", x, 2, xs, KTR_FLOAT, y, 2, ys, KTR_FLOAT, nullptr, nullptr), KTR_RESULT_SUCCESS)
      << last_error();  // the first step creates the run
  {
    ktr::ToolsCounter counter;
    for (int i = 0; i < 3; ++i)
      ASSERT_EQ(ktr_train("buf", x, 2, xs, KTR_FLOAT, y, 2, ys, KTR_FLOAT, nullptr, nullptr), KTR_RESULT_SUCCESS);
    // A host build reads the caller's host batch in place; a GPU build packs each array (features, targets) into a
    // device buffer of its own, one allocation and one copy per array and call.
    std::int64_t const per_call = ktr::device_is_host ? 0 : 2;
    EXPECT_EQ(counter.deep_copies(), 3 * per_call) << "copies of the caller's batch";
    EXPECT_EQ(counter.allocations(), 3 * per_call) << "allocations by a step";
  }
  Surface const more(300, 6);  // more than the buffer holds: the oldest samples are overwritten
  for (int at = 0; at < 300; at += 60) {
    int64_t const bs[2] = {60, 3}, bl[2] = {60, 1};
    ASSERT_EQ(ktr_push("buf", const_cast<float*>(&more.x[std::size_t(3 * at)]), 2, bs, KTR_FLOAT,
                       const_cast<float*>(&more.y[std::size_t(at)]), 2, bl, KTR_FLOAT, nullptr),
              KTR_RESULT_SUCCESS)
        << last_error();
  }
  float loss = 0;
  ASSERT_EQ(ktr_train_steps("buf", 10, &loss, nullptr), KTR_RESULT_SUCCESS) << last_error();  // warm-up
  {
    ktr::ToolsCounter counter;
    ASSERT_EQ(ktr_train_steps("buf", 10, &loss, nullptr), KTR_RESULT_SUCCESS) << last_error();
    // One read-back: the last dispatch's losses and correct counts, and the optimiser's refusals.
    EXPECT_EQ(counter.deep_copies(), 3) << "ktr_train_steps reads back once";
    ASSERT_EQ(ktr_train_steps("buf", 10, nullptr, nullptr), KTR_RESULT_SUCCESS) << last_error();
    EXPECT_EQ(counter.deep_copies(), 3) << "without loss_val nothing is read back";
  }
  EXPECT_TRUE(std::isfinite(loss));
  EXPECT_EQ(ktr_destroy_model("buf"), KTR_RESULT_SUCCESS);
}

// Device memory (a Kokkos view of the build's memory space: cudaMalloc'd on CUDA, hipMalloc'd on HIP, host memory
// on host builds) is read in place: no copy and no allocation per step, for inputs and targets alike.
TEST(CApi, DeviceArraysAreReadInPlace) {
  std::string const cfg = write_file("capi_device.yaml", config());
  ASSERT_EQ(ktr_create_model("dev", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
  Surface const s(64, 10);
  Kokkos::View<float**, Kokkos::LayoutRight, ktr::MemSpace> x("x", 64, 3), y("y", 64, 1);
  Kokkos::deep_copy(
      x,
      Kokkos::View<float const**, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
          s.x.data(), 64, 3));
  Kokkos::deep_copy(
      y,
      Kokkos::View<float const**, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
          s.y.data(), 64, 1));
  int64_t const xs[2] = {64, 3}, ys[2] = {64, 1};
  ASSERT_EQ(ktr_train("dev", x.data(), 2, xs, KTR_FLOAT, y.data(), 2, ys, KTR_FLOAT, nullptr, nullptr),
            KTR_RESULT_SUCCESS)
      << last_error();
  {
    ktr::ToolsCounter counter;
    for (int i = 0; i < 4; ++i)
      ASSERT_EQ(ktr_train("dev", x.data(), 2, xs, KTR_FLOAT, y.data(), 2, ys, KTR_FLOAT, nullptr, nullptr),
                KTR_RESULT_SUCCESS)
          << last_error();
    EXPECT_EQ(counter.deep_copies(), 0) << "device data was copied";
    EXPECT_EQ(counter.allocations(), 0) << "a step on device data allocated";
  }
  Kokkos::View<float**, Kokkos::LayoutRight, ktr::MemSpace> out("out", 64, 1);
  EXPECT_EQ(ktr_inference("dev", x.data(), 2, xs, KTR_FLOAT, out.data(), 2, ys, KTR_FLOAT, nullptr),
            KTR_RESULT_SUCCESS)
      << last_error();
  auto const host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  for (int i = 0; i < 64; ++i) EXPECT_TRUE(std::isfinite(host(i, 0))) << i;
  EXPECT_EQ(ktr_destroy_model("dev"), KTR_RESULT_SUCCESS);
}

// Save after some buffered training, go on; load the checkpoint into a fresh model and go on the same way: the
// same losses and predictions, bit for bit.
TEST(CApi, ACheckpointContinuesBitForBit) {
  std::string const cfg =
      write_file("capi_ckpt.yaml", config("  batch_size: 16\n  buffer_size: 128\n  steps_per_dispatch: 4\n"));
  std::string const dir = ::testing::TempDir() + "capi_ckpt_dir";
  Surface const s(200, 7), probe(20, 8);
  int64_t const xs[2] = {100, 3}, ys[2] = {100, 1}, ps[2] = {20, 3}, po[2] = {20, 1};
  auto push = [&](char const* name, int half) {
    return ktr_push(name, const_cast<float*>(&s.x[std::size_t(300 * half)]), 2, xs, KTR_FLOAT,
                    const_cast<float*>(&s.y[std::size_t(100 * half)]), 2, ys, KTR_FLOAT, nullptr);
  };
  auto go_on = [&](char const* name) {
    std::vector<float> trace;
    for (int i = 0; i < 3; ++i) {
      float loss = 0;
      EXPECT_EQ(ktr_train_steps(name, 6, &loss, nullptr), KTR_RESULT_SUCCESS) << last_error();
      trace.push_back(loss);
    }
    EXPECT_EQ(push(name, 1), KTR_RESULT_SUCCESS) << last_error();  // the buffer's state matters too
    float loss = 0;
    EXPECT_EQ(ktr_train_steps(name, 6, &loss, nullptr), KTR_RESULT_SUCCESS) << last_error();
    trace.push_back(loss);
    std::vector<float> out(20);
    EXPECT_EQ(ktr_inference(name, const_cast<float*>(probe.x.data()), 2, ps, KTR_FLOAT, out.data(), 2, po,
                            KTR_FLOAT, nullptr),
              KTR_RESULT_SUCCESS);
    trace.insert(trace.end(), out.begin(), out.end());
    return trace;
  };
  ASSERT_EQ(ktr_create_model("a", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
  ASSERT_EQ(push("a", 0), KTR_RESULT_SUCCESS) << last_error();
  ASSERT_EQ(ktr_train_steps("a", 8, nullptr, nullptr), KTR_RESULT_SUCCESS) << last_error();
  ASSERT_EQ(ktr_save_checkpoint("a", dir.c_str()), KTR_RESULT_SUCCESS) << last_error();
  std::vector<float> const expected = go_on("a");
  ASSERT_EQ(ktr_create_model("b", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
  int64_t step = -1, calls = -1;
  ASSERT_EQ(ktr_load_checkpoint("b", dir.c_str(), &step, &calls), KTR_RESULT_SUCCESS) << last_error();
  EXPECT_EQ(step, 8);
  EXPECT_EQ(calls, 0);
  std::vector<float> const got = go_on("b");
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)), 0) << "the resumed run differs";
  EXPECT_EQ(ktr_load_checkpoint("b", "/nonexistent", nullptr, nullptr), KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find("/nonexistent: is not a ktr checkpoint directory"), std::string::npos)
      << last_error();
  EXPECT_EQ(ktr_destroy_model("a"), KTR_RESULT_SUCCESS);
  EXPECT_EQ(ktr_destroy_model("b"), KTR_RESULT_SUCCESS);
}

// Weights out as Flax-named safetensors and into another model: the same predictions; bad files and names refused.
TEST(CApi, SavedWeightsLoadIntoAnotherModel) {
  std::string const cfg = write_file("capi_weights.yaml", config());
  std::string const file = ::testing::TempDir() + "capi_weights.safetensors";
  Surface const s(64, 11);
  int64_t const xs[2] = {64, 3}, ys[2] = {64, 1};
  float* x = const_cast<float*>(s.x.data());
  float* y = const_cast<float*>(s.y.data());
  ASSERT_EQ(ktr_create_model("w1", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
  ASSERT_EQ(ktr_create_model("w2", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
  EXPECT_EQ(ktr_save_model("w1", file.c_str()), KTR_RESULT_INVALID_USAGE);  // nothing trained yet
  EXPECT_NE(last_error().find("has no weights yet"), std::string::npos) << last_error();
  for (int i = 0; i < 20; ++i)
    ASSERT_EQ(ktr_train("w1", x, 2, xs, KTR_FLOAT, y, 2, ys, KTR_FLOAT, nullptr, nullptr), KTR_RESULT_SUCCESS);
  ASSERT_EQ(ktr_train("w2", x, 2, xs, KTR_FLOAT, y, 2, ys, KTR_FLOAT, nullptr, nullptr), KTR_RESULT_SUCCESS);
  ASSERT_EQ(ktr_save_model("w1", file.c_str()), KTR_RESULT_SUCCESS) << last_error();
  ASSERT_EQ(ktr_load_model("w2", file.c_str()), KTR_RESULT_SUCCESS) << last_error();
  std::vector<float> a(64), b(64);
  ASSERT_EQ(ktr_inference("w1", x, 2, xs, KTR_FLOAT, a.data(), 2, ys, KTR_FLOAT, nullptr), KTR_RESULT_SUCCESS);
  ASSERT_EQ(ktr_inference("w2", x, 2, xs, KTR_FLOAT, b.data(), 2, ys, KTR_FLOAT, nullptr), KTR_RESULT_SUCCESS);
  EXPECT_EQ(a, b) << "the loaded weights predict differently";
  EXPECT_EQ(ktr_load_model("w2", "/nonexistent.safetensors"), KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find("/nonexistent.safetensors"), std::string::npos) << last_error();
  EXPECT_EQ(ktr_save_model("w1", nullptr), KTR_RESULT_INVALID_USAGE);
  EXPECT_EQ(ktr_save_checkpoint("w1", "/nonexistent/dir/ckpt"), KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find("/nonexistent/dir/ckpt"), std::string::npos) << last_error();
  std::string const other =
      write_file("capi_other.yaml", "model: {type: mlp, parameters: {layer_sizes: [3, 8, 1]}}\n");
  ASSERT_EQ(ktr_create_model("w3", other.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
  ASSERT_EQ(ktr_train("w3", x, 2, xs, KTR_FLOAT, y, 2, ys, KTR_FLOAT, nullptr, nullptr), KTR_RESULT_SUCCESS);
  EXPECT_EQ(ktr_load_model("w3", file.c_str()), KTR_RESULT_INVALID_USAGE) << "another architecture's weights";
  for (char const* n : {"w1", "w2", "w3"}) EXPECT_EQ(ktr_destroy_model(n), KTR_RESULT_SUCCESS);
}

TEST(CApi, ClassLabelsAsInt32OrInt64AndTheVersion) {
  std::string const cfg =
      write_file("capi_cls.yaml",
                 "model: {type: mlp, parameters: {layer_sizes: [3, 16, 4]}}\nloss: {type: cross_entropy}\n"
                 "optimizer: {parameters: {learning_rate: 0.01}}\n");
  Surface const s(64, 9);
  std::vector<std::int32_t> l32(64);
  std::vector<std::int64_t> l64(64);
  for (int i = 0; i < 64; ++i)
    l32[std::size_t(i)] = (s.x[std::size_t(3 * i)] > 0) + 2 * (s.x[std::size_t(3 * i + 1)] > 0);
  std::copy(l32.begin(), l32.end(), l64.begin());
  int64_t const xs[2] = {64, 3}, ls[1] = {64};
  float loss32 = 0, loss64 = 0;
  for (int variant = 0; variant < 2; ++variant) {
    ASSERT_EQ(ktr_create_model("cls", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
    ktr_result_t const r = variant == 0 ? ktr_train("cls", const_cast<float*>(s.x.data()), 2, xs, KTR_FLOAT,
                                                    l32.data(), 1, ls, KTR_INT32, &loss32, nullptr)
                                        : ktr_train("cls", const_cast<float*>(s.x.data()), 2, xs, KTR_FLOAT,
                                                    l64.data(), 1, ls, KTR_INT64, &loss64, nullptr);
    ASSERT_EQ(r, KTR_RESULT_SUCCESS) << last_error();
    ASSERT_EQ(ktr_destroy_model("cls"), KTR_RESULT_SUCCESS);
  }
  EXPECT_EQ(loss32, loss64);
  EXPECT_NEAR(loss32, std::log(4.0f), 0.5f);
  l32[3] = 7;  // beyond the model's 4 classes
  ASSERT_EQ(ktr_create_model("cls", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
  EXPECT_EQ(ktr_train("cls", const_cast<float*>(s.x.data()), 2, xs, KTR_FLOAT, l32.data(), 1, ls, KTR_INT32,
                      &loss32, nullptr),
            KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find("7"), std::string::npos) << last_error();
  EXPECT_EQ(ktr_destroy_model("cls"), KTR_RESULT_SUCCESS);
  EXPECT_STRNE(ktr_version(), "");
}

}  // namespace

namespace {

// Where the application initialised Kokkos (as this test program does), a call from a thread that cannot run
// Kokkos work (Kokkos 3.4's OpenMP backend runs only on the thread that initialised it) is refused by name; on
// other backends it runs. Never a Kokkos abort.
TEST(CApi, ACallFromAnotherThreadRunsOrIsRefusedByName) {
  std::string const path = write_file("ktr_capi_thread.yaml", config());
  ASSERT_EQ(ktr_create_model("threaded", path.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
  Surface const s(64, 5);
  int64_t const xs[2] = {64, 3}, ys[2] = {64, 1};
  float loss = 0;
  ASSERT_EQ(ktr_train("threaded", const_cast<float*>(s.x.data()), 2, xs, KTR_FLOAT, const_cast<float*>(s.y.data()),
                      2, ys, KTR_FLOAT, &loss, nullptr),
            KTR_RESULT_SUCCESS)
      << last_error();
  ktr_result_t result = KTR_RESULT_INTERNAL_ERROR;
  std::string message;
  std::thread other([&] {
    result = ktr_train("threaded", const_cast<float*>(s.x.data()), 2, xs, KTR_FLOAT,
                       const_cast<float*>(s.y.data()), 2, ys, KTR_FLOAT, &loss, nullptr);
    message = ktr_last_error();
  });
  other.join();
  bool const omp34 = std::string(ktr::ExecSpace::name()) == "OpenMP" && KOKKOS_VERSION < 40000;
  if (omp34) {
    EXPECT_EQ(result, KTR_RESULT_INVALID_USAGE);
    EXPECT_NE(message.find("this thread cannot run Kokkos work"), std::string::npos) << message;
  } else {
    EXPECT_EQ(result, KTR_RESULT_SUCCESS) << message;
  }
  EXPECT_EQ(ktr_destroy_model("threaded"), KTR_RESULT_SUCCESS);
}

// Control characters from a file's bytes reach ktr_last_error() escaped.
TEST(CApi, ControlCharactersInMessagesAreEscaped) {
  std::string const path = write_file("ktr_capi_ctrl.yaml", "general:\n  seed: 3\n  bogus\x1b[31m: 1\n");
  EXPECT_NE(ktr_create_model("ctrl", path.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS);
  std::string const message = last_error();
  EXPECT_EQ(message.find('\x1b'), std::string::npos) << message;
  EXPECT_NE(message.find("\\x1b"), std::string::npos) << message;
}

}  // namespace

namespace {

bool exists(std::string const& path) { return std::ifstream(path).good(); }

// A model with a replay buffer and one step taken, ready to save.
void buffered_model(char const* name, std::string const& cfg, Surface const& s) {
  int64_t const xs[2] = {64, 3}, ys[2] = {64, 1};
  ASSERT_EQ(ktr_create_model(name, cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
  ASSERT_EQ(ktr_push(name, const_cast<float*>(s.x.data()), 2, xs, KTR_FLOAT, const_cast<float*>(s.y.data()), 2, ys,
                     KTR_FLOAT, nullptr),
            KTR_RESULT_SUCCESS)
      << last_error();
  float loss = 0;
  ASSERT_EQ(ktr_train_steps(name, 4, &loss, nullptr), KTR_RESULT_SUCCESS) << last_error();
}

// Hostile checkpoint directories: a folder of another program's files is never written into; a refused save
// leaves no folder; a directory whose files do not match its manifest (a save cut short, a flipped byte), or of
// another architecture or buffer, is refused and the model is left as it was.
TEST(CApi, CheckpointDirectoriesAreKtrsAloneAndAllOrNothing) {
  std::string const cfg = write_file("capi_dir.yaml", config("  batch_size: 16\n  buffer_size: 64\n"));
  Surface const s(64, 11);
  buffered_model("d", cfg, s);
  std::string const foreign = ::testing::TempDir() + "capi_foreign_dir";
  std::system(("rm -rf '" + foreign + "' && mkdir -p '" + foreign + "'").c_str());
  write_file("capi_foreign_dir/config.yaml", "another program's file\n");
  EXPECT_EQ(ktr_save_checkpoint("d", foreign.c_str()), KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find("not ktr's"), std::string::npos) << last_error();
  std::ifstream kept(foreign + "/config.yaml");
  std::string line;
  std::getline(kept, line);
  EXPECT_EQ(line, "another program's file");
  EXPECT_FALSE(exists(foreign + "/model.ckpt"));

  std::string const missing_parent = ::testing::TempDir() + "capi_no_such_parent/dir";
  EXPECT_NE(ktr_save_checkpoint("d", missing_parent.c_str()), KTR_RESULT_SUCCESS);
  std::string const dir = ::testing::TempDir() + "capi_good_dir";
  std::system(("rm -rf '" + dir + "'").c_str());
  ASSERT_EQ(ktr_save_checkpoint("d", dir.c_str()), KTR_RESULT_SUCCESS) << last_error();
  ASSERT_EQ(ktr_save_checkpoint("d", dir.c_str()), KTR_RESULT_SUCCESS) << "a ktr directory is ktr's to replace";

  // Another architecture, and another buffer size, are refused naming the difference.
  std::string const wide =
      write_file("capi_dir_wide.yaml",
                 "general:\n  seed: 3\n  batch_size: 16\n  buffer_size: 64\nmodel:\n  type: mlp\n"
                 "  parameters:\n    layer_sizes: [3, 16, 1]\n");
  ASSERT_EQ(ktr_create_model("other", wide.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
  EXPECT_EQ(ktr_load_checkpoint("other", dir.c_str(), nullptr, nullptr), KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find("holds the model"), std::string::npos) << last_error();
  std::string const small = write_file("capi_dir_small.yaml", config("  batch_size: 16\n  buffer_size: 32\n"));
  ASSERT_EQ(ktr_create_model("small", small.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
  EXPECT_EQ(ktr_load_checkpoint("small", dir.c_str(), nullptr, nullptr), KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find("replay buffer"), std::string::npos) << last_error();
  EXPECT_EQ(ktr_train_steps("small", 1, nullptr, nullptr), KTR_RESULT_INVALID_USAGE) << "a refused load trained";

  // A flipped byte in the stored buffer, and a file changed after the save, are refused (the second save is
  // generation 2, and the first's folder is gone).
  EXPECT_FALSE(std::filesystem::exists(dir + "/ktr-gen-1"));
  std::string const state = dir + "/ktr-gen-2/state.bin";
  ASSERT_TRUE(exists(state));
  {
    std::fstream f(state, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-40, std::ios::end);
    char c = 0;
    f.read(&c, 1);
    f.seekp(-40, std::ios::end);
    c = char(c ^ 0x10);
    f.write(&c, 1);
  }
  ASSERT_EQ(ktr_create_model("e", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
  EXPECT_EQ(ktr_load_checkpoint("e", dir.c_str(), nullptr, nullptr), KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find("does not match the manifest"), std::string::npos) << last_error();
  // Without a manifest (a save cut short before it) the directory is not a checkpoint.
  std::remove((dir + "/ktr-manifest").c_str());
  EXPECT_EQ(ktr_load_checkpoint("e", dir.c_str(), nullptr, nullptr), KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find("no ktr-manifest"), std::string::npos) << last_error();
  for (char const* n : {"d", "other", "small", "e"}) EXPECT_EQ(ktr_destroy_model(n), KTR_RESULT_SUCCESS) << n;
}

// ktr_push checks a batch as ktr_train does before anything changes: the targets' width and kind, finite values.
TEST(CApi, PushRefusesWhatTrainRefusesAndTheBufferGoesOn) {
  std::string const cfg = write_file("capi_push.yaml", config("  batch_size: 16\n  buffer_size: 64\n"));
  Surface const s(64, 12);
  buffered_model("p", cfg, s);
  float* x = const_cast<float*>(s.x.data());
  std::vector<float> two(128, 0.5f), bad(s.y);
  bad[7] = std::numeric_limits<float>::quiet_NaN();
  int64_t const xs[2] = {64, 3}, ys[2] = {64, 1}, y2[2] = {64, 2};
  std::vector<int32_t> labels(64, 0);
  EXPECT_EQ(ktr_push("p", x, 2, xs, KTR_FLOAT, two.data(), 2, y2, KTR_FLOAT, nullptr), KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find("targets"), std::string::npos) << last_error();
  EXPECT_EQ(ktr_push("p", x, 2, xs, KTR_FLOAT, labels.data(), 1, ys, KTR_INT32, nullptr),
            KTR_RESULT_INVALID_USAGE);
  EXPECT_EQ(ktr_push("p", x, 2, xs, KTR_FLOAT, bad.data(), 2, ys, KTR_FLOAT, nullptr), KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find("not finite"), std::string::npos) << last_error();
  float loss = 0;
  EXPECT_EQ(ktr_train_steps("p", 8, &loss, nullptr), KTR_RESULT_SUCCESS) << last_error();
  EXPECT_TRUE(std::isfinite(loss));
  // A NaN batch through ktr_train with no loss read back: refused on the device, reported by the next read-back,
  // and the model trains on as before (batches of the run's 16).
  int64_t const s16[2] = {16, 3}, y16[2] = {16, 1};
  EXPECT_EQ(ktr_train("p", x, 2, s16, KTR_FLOAT, bad.data(), 2, y16, KTR_FLOAT, nullptr, nullptr),
            KTR_RESULT_SUCCESS);
  EXPECT_EQ(
      ktr_train("p", x, 2, s16, KTR_FLOAT, const_cast<float*>(s.y.data()), 2, y16, KTR_FLOAT, &loss, nullptr),
      KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find("refused"), std::string::npos) << last_error();
  EXPECT_EQ(
      ktr_train("p", x, 2, s16, KTR_FLOAT, const_cast<float*>(s.y.data()), 2, y16, KTR_FLOAT, &loss, nullptr),
      KTR_RESULT_SUCCESS)
      << last_error();
  EXPECT_TRUE(std::isfinite(loss));
  EXPECT_EQ(ktr_destroy_model("p"), KTR_RESULT_SUCCESS);
}

}  // namespace

namespace {

// A refused first batch makes nothing: no run, no transform fitted on it (inference and checkpoints still refuse).
TEST(CApi, ARefusedFirstBatchMakesNoModel) {
  std::string const cfg = write_file("capi_first.yaml", config("  normalize: standard\n"));
  ASSERT_EQ(ktr_create_model("first", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
  Surface s(32, 13);
  s.x[5] = std::numeric_limits<float>::quiet_NaN();
  int64_t const xs[2] = {32, 3}, ys[2] = {32, 1};
  float loss = 0;
  EXPECT_EQ(ktr_train("first", s.x.data(), 2, xs, KTR_FLOAT, s.y.data(), 2, ys, KTR_FLOAT, &loss, nullptr),
            KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find("not finite"), std::string::npos) << last_error();
  std::vector<float> out(32);
  EXPECT_EQ(ktr_inference("first", s.x.data(), 2, xs, KTR_FLOAT, out.data(), 2, ys, KTR_FLOAT, nullptr),
            KTR_RESULT_INVALID_USAGE);
  EXPECT_EQ(ktr_save_checkpoint("first", (::testing::TempDir() + "capi_first_dir").c_str()),
            KTR_RESULT_INVALID_USAGE);
  s.x[5] = 0.25f;  // the good batch then makes the run, its transform fitted on good data
  EXPECT_EQ(ktr_train("first", s.x.data(), 2, xs, KTR_FLOAT, s.y.data(), 2, ys, KTR_FLOAT, &loss, nullptr),
            KTR_RESULT_SUCCESS)
      << last_error();
  EXPECT_TRUE(std::isfinite(loss));
  EXPECT_EQ(ktr_destroy_model("first"), KTR_RESULT_SUCCESS);
}

// Every check of the first step is made before the first batch makes the run (train/first_batch.hpp): a batch
// larger than general.batch_size, or with more targets than the model has outputs, is refused and leaves the model
// exactly as created (inference and checkpoints refused, no folder made); a valid batch then makes the run with
// the transform fitted on it alone: the model predicts bit for bit what a model that only ever saw that batch
// does.
TEST(CApi, ARefusedFirstBatchOfAnySizeOrWidthLeavesTheModelAsCreated) {
  std::string const cfg = write_file("capi_first16.yaml", config("  batch_size: 16\n  normalize: standard\n"));
  for (char const* name : {"refused16", "fresh16"})
    ASSERT_EQ(ktr_create_model(name, cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
  Surface big(64, 21);
  for (float& v : big.x) v = v * 4.0f + 2.0f;  // statistics of their own: a transform fitted on them would show
  Surface good(16, 22);
  int64_t const x64[2] = {64, 3}, y64[2] = {64, 1}, x16[2] = {16, 3}, y16[2] = {16, 1}, w16[2] = {16, 2};
  EXPECT_EQ(
      ktr_train("refused16", big.x.data(), 2, x64, KTR_FLOAT, big.y.data(), 2, y64, KTR_FLOAT, nullptr, nullptr),
      KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find("micro-batch (16)"), std::string::npos) << last_error();
  std::vector<float> two(32, 0.5f);
  EXPECT_EQ(
      ktr_train("refused16", big.x.data(), 2, x16, KTR_FLOAT, two.data(), 2, w16, KTR_FLOAT, nullptr, nullptr),
      KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find("2 targets per sample"), std::string::npos) << last_error();
  std::vector<float> out(16), fresh(16);
  EXPECT_EQ(ktr_inference("refused16", good.x.data(), 2, x16, KTR_FLOAT, out.data(), 2, y16, KTR_FLOAT, nullptr),
            KTR_RESULT_INVALID_USAGE);
  std::string const dir = ::testing::TempDir() + "capi_first16_dir";
  std::filesystem::remove_all(dir);
  EXPECT_EQ(ktr_save_checkpoint("refused16", dir.c_str()), KTR_RESULT_INVALID_USAGE);
  EXPECT_FALSE(std::filesystem::exists(dir)) << "a refused first save leaves no folder";
  for (char const* name : {"refused16", "fresh16"})
    ASSERT_EQ(
        ktr_train(name, good.x.data(), 2, x16, KTR_FLOAT, good.y.data(), 2, y16, KTR_FLOAT, nullptr, nullptr),
        KTR_RESULT_SUCCESS)
        << last_error();
  ASSERT_EQ(ktr_inference("refused16", good.x.data(), 2, x16, KTR_FLOAT, out.data(), 2, y16, KTR_FLOAT, nullptr),
            KTR_RESULT_SUCCESS)
      << last_error();
  ASSERT_EQ(ktr_inference("fresh16", good.x.data(), 2, x16, KTR_FLOAT, fresh.data(), 2, y16, KTR_FLOAT, nullptr),
            KTR_RESULT_SUCCESS)
      << last_error();
  EXPECT_EQ(std::memcmp(out.data(), fresh.data(), out.size() * sizeof(float)), 0);
  for (char const* name : {"refused16", "fresh16"}) EXPECT_EQ(ktr_destroy_model(name), KTR_RESULT_SUCCESS);
}

// Weights loaded with ktr_load_model come with the input transform they were trained with: the loaded model
// predicts what the saved one did. A regression's file is refused by a classifier.
TEST(CApi, LoadedWeightsBringTheirInputTransform) {
  std::string const cfg = write_file("capi_weights.yaml", config("  normalize: standard\n"));
  Surface const a(64, 14);
  Surface b(64, 15);
  for (float& v : b.x) v = v * 5.0f + 3.0f;  // another fitted transform
  int64_t const xs[2] = {64, 3}, ys[2] = {64, 1};
  float loss = 0;
  ASSERT_EQ(ktr_create_model("wa", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS);
  ASSERT_EQ(ktr_create_model("wb", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS);
  for (int i = 0; i < 20; ++i)
    ASSERT_EQ(ktr_train("wa", const_cast<float*>(a.x.data()), 2, xs, KTR_FLOAT, const_cast<float*>(a.y.data()), 2,
                        ys, KTR_FLOAT, &loss, nullptr),
              KTR_RESULT_SUCCESS);
  ASSERT_EQ(ktr_train("wb", b.x.data(), 2, xs, KTR_FLOAT, b.y.data(), 2, ys, KTR_FLOAT, &loss, nullptr),
            KTR_RESULT_SUCCESS);
  std::string const file = ::testing::TempDir() + "capi_weights.safetensors";
  ASSERT_EQ(ktr_save_model("wa", file.c_str()), KTR_RESULT_SUCCESS) << last_error();
  ASSERT_EQ(ktr_load_model("wb", file.c_str()), KTR_RESULT_SUCCESS) << last_error();
  std::vector<float> pa(64), pb(64);
  ASSERT_EQ(
      ktr_inference("wa", const_cast<float*>(a.x.data()), 2, xs, KTR_FLOAT, pa.data(), 2, ys, KTR_FLOAT, nullptr),
      KTR_RESULT_SUCCESS);
  ASSERT_EQ(
      ktr_inference("wb", const_cast<float*>(a.x.data()), 2, xs, KTR_FLOAT, pb.data(), 2, ys, KTR_FLOAT, nullptr),
      KTR_RESULT_SUCCESS);
  for (std::size_t i = 0; i < pa.size(); ++i) EXPECT_NEAR(pa[i], pb[i], 1e-5f) << i;
  std::string const classes =
      write_file("capi_weights_cls.yaml",
                 "general:\n  seed: 3\nmodel:\n  type: mlp\n  parameters:\n    layer_sizes: [3, 32, 32, 2]\n");
  ASSERT_EQ(ktr_create_model("wc", classes.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS);
  std::vector<int32_t> labels(64, 0);
  int64_t const ls[1] = {64};
  ASSERT_EQ(ktr_train("wc", const_cast<float*>(a.x.data()), 2, xs, KTR_FLOAT, labels.data(), 1, ls, KTR_INT32,
                      &loss, nullptr),
            KTR_RESULT_SUCCESS)
      << last_error();
  EXPECT_EQ(ktr_load_model("wc", file.c_str()), KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find("regression"), std::string::npos) << last_error();
  for (char const* n : {"wa", "wb", "wc"}) EXPECT_EQ(ktr_destroy_model(n), KTR_RESULT_SUCCESS);
}

// The raw stream of a DeviceStream (CUDA/HIP), for the C API's `stream` argument.
void* raw_stream(ktr::ExecSpace const& space) {
#if defined(KOKKOS_ENABLE_CUDA)
  return space.cuda_stream();
#elif defined(KOKKOS_ENABLE_HIP)
  return space.hip_stream();
#else
  (void)space;
  return nullptr;
#endif
}

// GPU builds: ktr_train_steps on a caller's stream, replaying captured K-step programs, steps bit for bit as the
// same model driven on the default instance (the plain loop), call after call, also after weights with another
// input transform are loaded between calls (a program holding the old transform must not replay); the model makes
// one instance for the stream and keeps it.
TEST(CApi, StepsOnACallersStreamEqualThePlainLoopAcrossReloads) {
  if (ktr::device_is_host) GTEST_SKIP() << "needs a GPU build: host builds have no streams";
  ktr::DeviceStream stream;
  void* const s = raw_stream(stream.space());
  ASSERT_NE(s, nullptr);
  std::string const cfg =
      write_file("capi_stream.yaml",
                 config("  batch_size: 32\n  buffer_size: 256\n  enable_graphs: true\n  normalize: standard\n"));
  int64_t const xs[2] = {256, 3}, ys[2] = {256, 1};
  Surface const data(256, 21);
  Surface other(32, 22);
  for (float& v : other.x) v = v * 4.0f - 2.0f;  // another fitted transform
  int64_t const os[2] = {32, 3}, oy[2] = {32, 1};
  ASSERT_EQ(ktr_create_model("other", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
  float loss = 0;
  ASSERT_EQ(ktr_train("other", other.x.data(), 2, os, KTR_FLOAT, other.y.data(), 2, oy, KTR_FLOAT, &loss, nullptr),
            KTR_RESULT_SUCCESS)
      << last_error();
  std::string const weights = ::testing::TempDir() + "capi_stream.safetensors";
  ASSERT_EQ(ktr_save_model("other", weights.c_str()), KTR_RESULT_SUCCESS) << last_error();
  for (char const* name : {"on_stream", "plain"}) {
    ASSERT_EQ(ktr_create_model(name, cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
    ASSERT_EQ(
        ktr_push(name, const_cast<float*>(data.x.data()), 2, xs, KTR_FLOAT, const_cast<float*>(data.y.data()), 2,
                 ys, KTR_FLOAT, std::string(name) == "plain" ? nullptr : s),
        KTR_RESULT_SUCCESS)
        << last_error();
  }
  for (int call = 0; call < 12; ++call) {
    if (call == 4 || call == 8)
      for (char const* name : {"on_stream", "plain"})
        ASSERT_EQ(ktr_load_model(name, weights.c_str()), KTR_RESULT_SUCCESS) << last_error();
    float on_stream = 0, plain = 0;
    ASSERT_EQ(ktr_train_steps("on_stream", 8, &on_stream, s), KTR_RESULT_SUCCESS) << last_error();
    ASSERT_EQ(ktr_train_steps("plain", 8, &plain, nullptr), KTR_RESULT_SUCCESS) << last_error();
    EXPECT_EQ(on_stream, plain) << "call " << call;
  }
  EXPECT_EQ(ktr::capi::stream_instances("on_stream"), 1);
  EXPECT_EQ(ktr::capi::stream_instances("plain"), 0);
  for (char const* name : {"on_stream", "plain", "other"}) EXPECT_EQ(ktr_destroy_model(name), KTR_RESULT_SUCCESS);
}

// Defect 10 (NaN weights saved with success): a model driven toward overflow (adamw at lr 1e6 and weight decay
// 1e6, steps with no read-back, a NaN batch among them) saves only weights that load back, or refuses and writes
// nothing; a file is never half-written or non-finite.
TEST(CApi, AModelDrivenTowardOverflowSavesOnlyFiniteWeights) {
  std::string const cfg =
      write_file("capi_overflow.yaml",
                 "general: {seed: 3}\nmodel: {type: mlp, parameters: {layer_sizes: [3, 32, 32, 1]}}\n"
                 "optimizer: {type: adamw, parameters: {learning_rate: 1e6, weight_decay: 1e6}}\n");
  ASSERT_EQ(ktr_create_model("blow", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
  ASSERT_EQ(ktr_create_model("fresh", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
  Surface s(32, 21);
  int64_t const xs[2] = {32, 3}, ys[2] = {32, 1};
  float loss = 0;
  ASSERT_EQ(ktr_train("fresh", s.x.data(), 2, xs, KTR_FLOAT, s.y.data(), 2, ys, KTR_FLOAT, &loss, nullptr),
            KTR_RESULT_SUCCESS);
  ASSERT_EQ(ktr_train("blow", s.x.data(), 2, xs, KTR_FLOAT, s.y.data(), 2, ys, KTR_FLOAT, &loss, nullptr),
            KTR_RESULT_SUCCESS);
  Surface poisoned = s;
  poisoned.x[7] = std::numeric_limits<float>::quiet_NaN();
  for (int i = 0; i < 12; ++i) {  // no read-back: each call only enqueues its step
    Surface& batch = i == 5 ? poisoned : s;
    (void)ktr_train("blow", batch.x.data(), 2, xs, KTR_FLOAT, batch.y.data(), 2, ys, KTR_FLOAT, nullptr, nullptr);
  }
  std::string const file = ::testing::TempDir() + "capi_overflow.safetensors";
  std::remove(file.c_str());
  ktr_result_t const saved = ktr_save_model("blow", file.c_str());
  std::FILE* f = std::fopen(file.c_str(), "rb");
  if (saved == KTR_RESULT_SUCCESS) {
    ASSERT_NE(f, nullptr);
    std::fclose(f);
    EXPECT_EQ(ktr_load_model("fresh", file.c_str()), KTR_RESULT_SUCCESS)
        << "a saved file is refused on load: " << last_error();
  } else {
    EXPECT_NE(last_error().find("not finite"), std::string::npos) << last_error();
    EXPECT_EQ(f, nullptr) << "a refused save wrote a file";
    if (f) std::fclose(f);
  }
  std::remove(file.c_str());
  for (char const* n : {"blow", "fresh"}) EXPECT_EQ(ktr_destroy_model(n), KTR_RESULT_SUCCESS);
}

// Absurd sizes from a configuration file: a model of a terabyte is refused when it is created, naming the file,
// not by a failed allocation at its first batch.
TEST(CApi, AModelLargerThanTheMemoryIsRefusedWhenCreated) {
  std::string const cfg = write_file(
      "capi_huge.yaml", "model: {type: mlp, parameters: {layer_sizes: [3, 300000, 300000, 1]}}\n");  // 1.3 TiB
  EXPECT_EQ(ktr_create_model("huge", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find(cfg + ": model: the model 'in=3 dense:300000:relu"), std::string::npos)
      << last_error();
  EXPECT_NE(last_error().find("GiB of device memory"), std::string::npos) << last_error();
  EXPECT_EQ(ktr_destroy_model("huge"), KTR_RESULT_INVALID_USAGE) << "a refused model was kept";
}

// Class labels for a model of one output would make a classifier of one class (loss 0 for ever, and the model
// stuck as a classifier): refused, and the model then trains on float targets.
TEST(CApi, LabelsForAModelOfOneOutputAreRefusedAndFloatsTrainIt) {
  std::string const cfg = write_file("capi_one.yaml", config());
  ASSERT_EQ(ktr_create_model("one", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS);
  Surface s(16, 22);
  std::vector<int32_t> labels(16, 0);
  int64_t const xs[2] = {16, 3}, ys[2] = {16, 1};
  float loss = 0;
  EXPECT_EQ(ktr_train("one", s.x.data(), 2, xs, KTR_FLOAT, labels.data(), 2, ys, KTR_INT32, &loss, nullptr),
            KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find("need a model of at least 2 outputs"), std::string::npos) << last_error();
  EXPECT_EQ(ktr_train("one", s.x.data(), 2, xs, KTR_FLOAT, s.y.data(), 2, ys, KTR_FLOAT, &loss, nullptr),
            KTR_RESULT_SUCCESS)
      << last_error();
  EXPECT_GT(loss, 0.0f);
  EXPECT_EQ(ktr_destroy_model("one"), KTR_RESULT_SUCCESS);
}

// An image batch of the right size in another layout (NCHW for a channels-last model) is refused by name, not
// misread; the model's own (N, H, W, C) and a flat (N, H x W x C) array train.
TEST(CApi, AnImageBatchInAnotherLayoutIsRefusedNotMisread) {
  std::string const cfg =
      write_file("capi_nchw.yaml",
                 "model: {type: ktr, parameters: {description: \"in=4x4x2 conv3x3:4:relu flatten dense:3\"}}\n");
  ASSERT_EQ(ktr_create_model("nchw", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
  std::vector<float> x(8 * 32, 0.5f);
  std::vector<int32_t> labels(8, 1);
  int64_t const ls[1] = {8}, nhwc[4] = {8, 4, 4, 2}, nchw[4] = {8, 2, 4, 4}, flat[2] = {8, 32};
  float loss = 0;
  EXPECT_EQ(ktr_train("nchw", x.data(), 4, nchw, KTR_FLOAT, labels.data(), 1, ls, KTR_INT32, &loss, nullptr),
            KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find("an NCHW array for a channels-last model"), std::string::npos) << last_error();
  EXPECT_EQ(ktr_train("nchw", x.data(), 4, nhwc, KTR_FLOAT, labels.data(), 1, ls, KTR_INT32, &loss, nullptr),
            KTR_RESULT_SUCCESS)
      << last_error();
  EXPECT_EQ(ktr_train("nchw", x.data(), 2, flat, KTR_FLOAT, labels.data(), 1, ls, KTR_INT32, &loss, nullptr),
            KTR_RESULT_SUCCESS)
      << last_error();
  EXPECT_EQ(ktr_destroy_model("nchw"), KTR_RESULT_SUCCESS);
  // Size-1 dimensions may sit anywhere (TorchFort's Fortran (n, n, 1, batch), i.e. (batch, 1, n, n)).
  std::string const gray =
      write_file("capi_gray.yaml",
                 "model: {type: ktr, parameters: {description: \"in=4x4x1 conv3x3:4:relu flatten dense:3\"}}\n");
  ASSERT_EQ(ktr_create_model("gray", gray.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
  int64_t const n1hw[4] = {8, 1, 4, 4}, n1hw5[5] = {8, 1, 4, 1, 4}, nwh2[4] = {8, 2, 8, 1};
  EXPECT_EQ(ktr_train("gray", x.data(), 4, n1hw, KTR_FLOAT, labels.data(), 1, ls, KTR_INT32, &loss, nullptr),
            KTR_RESULT_SUCCESS)
      << last_error();
  EXPECT_EQ(ktr_train("gray", x.data(), 5, n1hw5, KTR_FLOAT, labels.data(), 1, ls, KTR_INT32, &loss, nullptr),
            KTR_RESULT_SUCCESS)
      << last_error();
  EXPECT_EQ(ktr_train("gray", x.data(), 4, nwh2, KTR_FLOAT, labels.data(), 1, ls, KTR_INT32, &loss, nullptr),
            KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find("samples are (2, 8, 1), the model takes (H, W, C) = (4, 4, 1)"), std::string::npos)
      << last_error();
  EXPECT_EQ(ktr_destroy_model("gray"), KTR_RESULT_SUCCESS);
}

// A field-to-field model (a U-Net on a periodic grid, from the YAML file): its targets are float arrays of its
// output's (N, H, W, C), its predictions go to one; the same values in another layout are refused naming the
// array, not misread; training lowers the loss.
TEST(CApi, AFieldModelTrainsOnRank4TargetsAndPredictsIntoARank4Array) {
  std::string const cfg = write_file(
      "capi_unet.yaml",
      "general: {seed: 4, normalize: none}\n"
      "model: {type: ktr, parameters: {description: \"in=4x6x1 conv3x3:4:relu:circular save:a maxpool2 "
      "convT2x2:4 concat:a conv1x1:2\"}}\noptimizer: {type: adam, parameters: {learning_rate: 0.01}}\n");
  ASSERT_EQ(ktr_create_model("unet", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS) << last_error();
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(8 * 24), y(8 * 24 * 2), out(y.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = u(rng), y[2 * i] = x[i], y[2 * i + 1] = -0.5f * x[i];
  int64_t const xs[4] = {8, 4, 6, 1}, ys[4] = {8, 4, 6, 2}, nchw[4] = {8, 2, 4, 6}, swapped[4] = {8, 6, 4, 2};
  float first = 0, loss = 0;
  EXPECT_EQ(ktr_train("unet", x.data(), 4, xs, KTR_FLOAT, y.data(), 4, nchw, KTR_FLOAT, &loss, nullptr),
            KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find("label: samples are (2, 4, 6), the model takes (H, W, C) = (4, 6, 2)"),
            std::string::npos)
      << last_error();
  EXPECT_EQ(ktr_train("unet", x.data(), 4, xs, KTR_FLOAT, y.data(), 4, swapped, KTR_FLOAT, &loss, nullptr),
            KTR_RESULT_INVALID_USAGE);
  for (int step = 0; step < 60; ++step) {
    ASSERT_EQ(ktr_train("unet", x.data(), 4, xs, KTR_FLOAT, y.data(), 4, ys, KTR_FLOAT, &loss, nullptr),
              KTR_RESULT_SUCCESS)
        << last_error();
    if (step == 0) first = loss;
  }
  EXPECT_LT(loss, 0.5f * first);
  EXPECT_EQ(ktr_inference("unet", x.data(), 4, xs, KTR_FLOAT, out.data(), 4, nchw, KTR_FLOAT, nullptr),
            KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find("output: samples are (2, 4, 6)"), std::string::npos) << last_error();
  ASSERT_EQ(ktr_inference("unet", x.data(), 4, xs, KTR_FLOAT, out.data(), 4, ys, KTR_FLOAT, nullptr),
            KTR_RESULT_SUCCESS)
      << last_error();
  double se = 0;
  for (std::size_t i = 0; i < y.size(); ++i) se += std::pow(out[i] - y[i], 2);
  EXPECT_NEAR(se / double(y.size()), loss, 0.5 * loss + 1e-6);  // the predictions are the field just trained
  EXPECT_EQ(ktr_destroy_model("unet"), KTR_RESULT_SUCCESS);
}

// Numbers that would wrap: a 64-bit label beyond int32, and shapes whose product overflows.
TEST(CApi, LabelsAndShapesThatWouldWrapAreRefused) {
  std::string const cfg = write_file(
      "capi_wrap.yaml", "general:\n  seed: 3\nmodel:\n  type: mlp\n  parameters:\n    layer_sizes: [3, 8, 4]\n");
  ASSERT_EQ(ktr_create_model("wrap", cfg.c_str(), KTR_DEVICE_DEFAULT), KTR_RESULT_SUCCESS);
  Surface const s(16, 16);
  std::vector<int64_t> labels(16, 1);
  labels[3] = 4294967297ll;  // 2^32 + 1: class 1 once truncated
  int64_t const xs[2] = {16, 3}, ls[1] = {16};
  float loss = 0;
  EXPECT_EQ(ktr_train("wrap", const_cast<float*>(s.x.data()), 2, xs, KTR_FLOAT, labels.data(), 1, ls, KTR_INT64,
                      &loss, nullptr),
            KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find("outside 0 .. 2^31 - 1"), std::string::npos) << last_error();
  int64_t const huge[3] = {int64_t(1) << 30, int64_t(1) << 30, 3};
  EXPECT_EQ(ktr_train("wrap", const_cast<float*>(s.x.data()), 3, huge, KTR_FLOAT, labels.data(), 1, ls, KTR_INT64,
                      &loss, nullptr),
            KTR_RESULT_INVALID_USAGE);
  EXPECT_NE(last_error().find("overflows"), std::string::npos) << last_error();
  EXPECT_EQ(ktr_destroy_model("wrap"), KTR_RESULT_SUCCESS);
}

}  // namespace
