// TorchFort's C interface over ktr's (capi/torchfort.cpp): TorchFort's values and signatures, its configuration's
// rules (a loss and an optimizer section, PyTorch's weight_decay under adam), its process-wide settings, tensor
// lists, and its habit of printing every failure to stderr.
#include <torchfort.h>

#include "../capi/api.hpp"  // reset_next_seed: torchfort_set_manual_seed holds for the rest of the process
#include "../capi/ktr_c.h"
#include "../core/types.hpp"
#include "../optim/schedule.hpp"

#include <gtest/gtest.h>

#include "helpers.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

namespace {

using ktr::test::write_file;

// The build's device: TORCHFORT_DEVICE_CPU on host builds, GPU 0 on GPU builds (where -1 would also run, with a
// warning: TorchFort.DeviceCpuRunsOnAGpuBuildsGpuWithAWarning).
int const kDevice = ktr::device_is_host ? TORCHFORT_DEVICE_CPU : 0;

std::string const kModel = "model: {type: mlp, parameters: {layer_sizes: [3, 16, 1]}}\n";

struct Batch {
  std::vector<float> x = std::vector<float>(96), y = std::vector<float>(32);
  int64_t xs[2] = {32, 3}, ys[2] = {32, 1};
  Batch() {
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(-1, 1);
    for (float& v : x) v = u(rng);
    for (int i = 0; i < 32; ++i) y[std::size_t(i)] = x[std::size_t(3 * i)] * x[std::size_t(3 * i + 1)];
  }
  torchfort_result_t train(char const* name, float* loss) {
    return torchfort_train(name, x.data(), 2, xs, y.data(), 2, ys, loss, TORCHFORT_FLOAT, nullptr);
  }
};

TEST(TorchFort, EnumValuesAndResultCodesAreTorchFortsOwn) {
  EXPECT_EQ(TORCHFORT_FLOAT, -1);
  EXPECT_EQ(TORCHFORT_DOUBLE, -2);
  EXPECT_EQ(TORCHFORT_INT32, -3);
  EXPECT_EQ(TORCHFORT_INT64, -4);
  EXPECT_EQ(TORCHFORT_DEVICE_CPU, -1);
  EXPECT_EQ(TORCHFORT_RESULT_NOT_SUPPORTED, 2);
  EXPECT_EQ(TORCHFORT_RESULT_CUDA_ERROR, 4);
  EXPECT_EQ(TORCHFORT_RESULT_NCCL_ERROR, 6);
}

// TorchFort programs pass TORCHFORT_DEVICE_CPU for "no GPU needed": a host build runs them quietly, a GPU build on
// its GPU with one warning per model. ktr's own door refuses -1 on a GPU build (CApi.DevicesAreTheBuildsOwn).
TEST(TorchFort, DeviceCpuRunsOnAGpuBuildsGpuWithAWarning) {
  std::string const cfg = write_file("tf_cpu.yaml", kModel + "loss: {type: MSE}\noptimizer: {type: adam}\n");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(torchfort_create_model("tf_cpu", cfg.c_str(), TORCHFORT_DEVICE_CPU), TORCHFORT_RESULT_SUCCESS);
  std::string const err = ::testing::internal::GetCapturedStderr();
  if (ktr::device_is_host)
    EXPECT_EQ(err, "");
  else
    EXPECT_NE(err.find("TORCHFORT::WARN: model tf_cpu: TORCHFORT_DEVICE_CPU asked for, but this build of ktr runs "
                       "on the GPU"),
              std::string::npos)
        << err;
  Batch b;
  float loss = -1;
  EXPECT_EQ(b.train("tf_cpu", &loss), TORCHFORT_RESULT_SUCCESS);
  EXPECT_TRUE(std::isfinite(loss));
  EXPECT_EQ(ktr_destroy_model("tf_cpu"), KTR_RESULT_SUCCESS);
}

// TorchFort has no default loss or optimizer: its first train fails without them, and says so on stderr.
TEST(TorchFort, AConfigWithoutALossOrAnOptimizerFailsTheFirstTrainOnStderr) {
  std::string const cfg = write_file("tf_noloss.yaml", kModel + "optimizer: {type: adam}\n");
  ASSERT_EQ(torchfort_create_model("tf_noloss", cfg.c_str(), kDevice), TORCHFORT_RESULT_SUCCESS);
  Batch b;
  float loss = 0;
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(b.train("tf_noloss", &loss), TORCHFORT_RESULT_INVALID_USAGE);
  std::string const err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("TORCHFORT::ERROR: torchfort_train: " + cfg + ": has no loss section"), std::string::npos)
      << err;
  ::setenv("KTR_QUIET", "1", 1);  // the layer's messages silenced; the result is the same
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(b.train("tf_noloss", &loss), TORCHFORT_RESULT_INVALID_USAGE);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  ::unsetenv("KTR_QUIET");
}

// PyTorch's weight_decay under adam is an L2 penalty: 0.5 and 0 train differently (ktr ignored it before).
TEST(TorchFort, WeightDecayUnderAdamIsAnL2PenaltyNotIgnored) {
  float losses[2] = {};
  for (int i = 0; i < 2; ++i) {
    std::string const name = "tf_wd" + std::to_string(i);
    std::string const cfg =
        write_file(name + ".yaml", kModel +
                                       "loss: {type: MSE}\noptimizer: {type: adam, parameters: "
                                       "{learning_rate: 0.01, weight_decay: " +
                                       std::string(i ? "0.5" : "0") + "}}\n");
    ASSERT_EQ(torchfort_create_model(name.c_str(), cfg.c_str(), kDevice), TORCHFORT_RESULT_SUCCESS);
    Batch b;
    for (int s = 0; s < 20; ++s) ASSERT_EQ(b.train(name.c_str(), &losses[i]), TORCHFORT_RESULT_SUCCESS);
  }
  EXPECT_NE(losses[0], losses[1]);
}

// torchfort_set_manual_seed gives every model created afterwards its seed, over the file's; the double form of
// torchfort_train writes a double loss; the _F form reads Fortran's shapes of the same memory alike.
TEST(TorchFort, ManualSeedDoubleLossAndFortranShapesAgree) {
  ASSERT_EQ(torchfort_set_manual_seed(11), TORCHFORT_RESULT_SUCCESS);
  float loss[2] = {};
  for (int i = 0; i < 2; ++i) {
    std::string const name = "tf_seed" + std::to_string(i);
    std::string const cfg =
        write_file(name + ".yaml", "general: {seed: " + std::to_string(i + 3) + "}\n" + kModel +
                                       "loss: {type: MSE}\noptimizer: {type: adam}\n");
    ASSERT_EQ(torchfort_create_model(name.c_str(), cfg.c_str(), kDevice), TORCHFORT_RESULT_SUCCESS);
    Batch b;
    if (i == 0) {
      ASSERT_EQ(b.train(name.c_str(), &loss[i]), TORCHFORT_RESULT_SUCCESS);
    } else {
      int64_t xs_f[2] = {3, 32}, ys_f[2] = {1, 32};
      ASSERT_EQ(torchfort_train_F(name.c_str(), b.x.data(), 2, xs_f, b.y.data(), 2, ys_f, &loss[i],
                                  TORCHFORT_FLOAT, nullptr),
                TORCHFORT_RESULT_SUCCESS);
    }
  }
  ktr::capi::reset_next_seed();
  EXPECT_EQ(loss[0], loss[1]) << "the seed set by torchfort_set_manual_seed, and the same batch";
  std::vector<double> x(96), y(32);
  Batch b;
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = b.x[i];
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = b.y[i];
  double dloss = -1;
  EXPECT_EQ(torchfort_train("tf_seed0", x.data(), 2, b.xs, y.data(), 2, b.ys, &dloss, TORCHFORT_DOUBLE, nullptr),
            TORCHFORT_RESULT_SUCCESS);
  EXPECT_TRUE(std::isfinite(dloss) && dloss >= 0) << dloss;
}

// Tensor lists: one input and one label train; two inputs, or extra loss arguments, are not supported, by name.
TEST(TorchFort, TensorListsTakeOneTensorEachAndRefuseMoreByName) {
  std::string const cfg = write_file("tf_lists.yaml", kModel + "loss: {type: MSE}\noptimizer: {type: sgd}\n");
  ASSERT_EQ(torchfort_create_model("tf_lists", cfg.c_str(), kDevice), TORCHFORT_RESULT_SUCCESS);
  Batch b;
  torchfort_tensor_list_t in = nullptr, lab = nullptr;
  ASSERT_EQ(torchfort_tensor_list_create(&in), TORCHFORT_RESULT_SUCCESS);
  ASSERT_EQ(torchfort_tensor_list_create(&lab), TORCHFORT_RESULT_SUCCESS);
  ASSERT_EQ(torchfort_tensor_list_add_tensor(in, b.x.data(), 2, b.xs, TORCHFORT_FLOAT), TORCHFORT_RESULT_SUCCESS);
  ASSERT_EQ(torchfort_tensor_list_add_tensor(lab, b.y.data(), 2, b.ys, TORCHFORT_FLOAT), TORCHFORT_RESULT_SUCCESS);
  float loss = -1;
  EXPECT_EQ(torchfort_train_multiarg("tf_lists", in, lab, &loss, nullptr, nullptr), TORCHFORT_RESULT_SUCCESS);
  EXPECT_GT(loss, 0.0f);
  std::vector<float> out(32);
  torchfort_tensor_list_t outs = nullptr;
  ASSERT_EQ(torchfort_tensor_list_create(&outs), TORCHFORT_RESULT_SUCCESS);
  ASSERT_EQ(torchfort_tensor_list_add_tensor(outs, out.data(), 2, b.ys, TORCHFORT_FLOAT),
            TORCHFORT_RESULT_SUCCESS);
  EXPECT_EQ(torchfort_inference_multiarg("tf_lists", in, outs, nullptr), TORCHFORT_RESULT_SUCCESS);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(torchfort_train_multiarg("tf_lists", in, lab, &loss, lab, nullptr), TORCHFORT_RESULT_NOT_SUPPORTED);
  ASSERT_EQ(torchfort_tensor_list_add_tensor(in, b.x.data(), 2, b.xs, TORCHFORT_FLOAT), TORCHFORT_RESULT_SUCCESS);
  EXPECT_EQ(torchfort_train_multiarg("tf_lists", in, lab, &loss, nullptr, nullptr),
            TORCHFORT_RESULT_NOT_SUPPORTED);
  EXPECT_EQ(torchfort_tensor_list_add_tensor(in, b.x.data(), 9, b.xs, TORCHFORT_FLOAT),
            TORCHFORT_RESULT_INVALID_USAGE);
  std::string const err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("extra_loss_args: ktr's losses take no extra arguments"), std::string::npos) << err;
  EXPECT_NE(err.find("inputs: holds 2 tensors"), std::string::npos) << err;
  EXPECT_NE(err.find("dim: 9 dimensions"), std::string::npos) << err;
  for (auto* l : {in, lab, outs}) EXPECT_EQ(torchfort_tensor_list_destroy(l), TORCHFORT_RESULT_SUCCESS);
}

// TorchFort's inference-only workflow (create, load, infer) and its batches of any size: a model that never
// trained loads saved weights and predicts what the saved model does; a call larger than the first grows the run.
TEST(TorchFort, CreateLoadInferAndBatchesOfAnySize) {
  std::string const cfg = write_file("tf_load.yaml", kModel + "loss: {type: MSE}\noptimizer: {type: adam}\n");
  ASSERT_EQ(torchfort_create_model("tf_saved", cfg.c_str(), kDevice), TORCHFORT_RESULT_SUCCESS);
  ASSERT_EQ(torchfort_create_model("tf_loaded", cfg.c_str(), kDevice), TORCHFORT_RESULT_SUCCESS);
  Batch b;
  float loss = 0;
  int64_t small[2] = {8, 3}, small_y[2] = {8, 1};
  for (int i = 0; i < 5; ++i)  // batches of 8, then of 32: the run grows
    ASSERT_EQ(
        torchfort_train("tf_saved", b.x.data(), 2, small, b.y.data(), 2, small_y, &loss, TORCHFORT_FLOAT, nullptr),
        TORCHFORT_RESULT_SUCCESS);
  ASSERT_EQ(b.train("tf_saved", &loss), TORCHFORT_RESULT_SUCCESS);
  std::string const file = ::testing::TempDir() + "tf_load.safetensors";
  std::remove(file.c_str());
  ASSERT_EQ(torchfort_save_model("tf_saved", file.c_str()), TORCHFORT_RESULT_SUCCESS);
  ASSERT_EQ(torchfort_load_model("tf_loaded", file.c_str()), TORCHFORT_RESULT_SUCCESS);
  std::vector<float> p1(32), p2(32);
  ASSERT_EQ(torchfort_inference("tf_saved", b.x.data(), 2, b.xs, p1.data(), 2, b.ys, TORCHFORT_FLOAT, nullptr),
            TORCHFORT_RESULT_SUCCESS);
  ASSERT_EQ(torchfort_inference("tf_loaded", b.x.data(), 2, b.xs, p2.data(), 2, b.ys, TORCHFORT_FLOAT, nullptr),
            TORCHFORT_RESULT_SUCCESS);
  if (ktr::device_is_host)
    EXPECT_EQ(p1, p2);
  else  // cuBLAS may pick another kernel for the other model's buffers (their alignment): the last bit may differ
    for (std::size_t i = 0; i < p1.size(); ++i) EXPECT_NEAR(p1[i], p2[i], 1e-6f * (1.0f + std::abs(p1[i]))) << i;
  EXPECT_EQ(b.train("tf_loaded", &loss), TORCHFORT_RESULT_SUCCESS) << "the loaded model trains on";
  std::remove(file.c_str());
}

// TorchFort sums the gradients of grad_accumulation_steps calls into one update (no 1/N): with SGD, 4 calls of 8
// samples train as one call of the 32 at 4 times the learning rate.
TEST(TorchFort, GradientAccumulationSumsTheCallsGradientsIntoOneUpdate) {
  std::string const model = kModel + "loss: {type: MSE}\noptimizer: {type: sgd, parameters: {learning_rate: ";
  std::string const four =
      write_file("tf_accum4.yaml", model + "0.025}, general: {grad_accumulation_steps: 4}}\n");
  std::string const one = write_file("tf_accum1.yaml", model + "0.1}}\n");
  ASSERT_EQ(torchfort_create_model("tf_accum4", four.c_str(), kDevice), TORCHFORT_RESULT_SUCCESS);
  ASSERT_EQ(torchfort_create_model("tf_accum1", one.c_str(), kDevice), TORCHFORT_RESULT_SUCCESS);
  Batch b;
  float loss = 0;
  int64_t xs[2] = {8, 3}, ys[2] = {8, 1};
  for (int round = 0; round < 3; ++round) {
    for (int j = 0; j < 4; ++j)
      ASSERT_EQ(torchfort_train("tf_accum4", b.x.data() + 24 * j, 2, xs, b.y.data() + 8 * j, 2, ys, &loss,
                                TORCHFORT_FLOAT, nullptr),
                TORCHFORT_RESULT_SUCCESS);
    ASSERT_EQ(b.train("tf_accum1", &loss), TORCHFORT_RESULT_SUCCESS);
  }
  std::vector<float> p4(32), p1(32);
  ASSERT_EQ(torchfort_inference("tf_accum4", b.x.data(), 2, b.xs, p4.data(), 2, b.ys, TORCHFORT_FLOAT, nullptr),
            TORCHFORT_RESULT_SUCCESS);
  ASSERT_EQ(torchfort_inference("tf_accum1", b.x.data(), 2, b.xs, p1.data(), 2, b.ys, TORCHFORT_FLOAT, nullptr),
            TORCHFORT_RESULT_SUCCESS);
  for (std::size_t i = 0; i < p1.size(); ++i) EXPECT_NEAR(p4[i], p1[i], 1e-5f + 1e-5f * std::abs(p1[i])) << i;
}

// TorchFort's reinforcement-learning calls ktr has not built yet (on-policy systems, checkpoints of a system) say
// so, on stderr, and touch nothing (C and C++: is_ready takes bool& here).
TEST(TorchFort, ReinforcementLearningCallsNotBuiltYetAnswerNotSupportedAndSayWhy) {
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(torchfort_rl_on_policy_create_system("tf_rl", "rl.yaml", TORCHFORT_DEVICE_CPU, kDevice),
            TORCHFORT_RESULT_NOT_SUPPORTED);
  float p = 7, q = 7;
  EXPECT_EQ(torchfort_rl_on_policy_train_step("tf_rl", &p, &q, nullptr), TORCHFORT_RESULT_NOT_SUPPORTED);
  EXPECT_EQ(p, 7.0f) << "no argument is touched";
  bool ready = true;
  EXPECT_EQ(torchfort_rl_on_policy_is_ready("tf_rl", ready), TORCHFORT_RESULT_NOT_SUPPORTED);
  EXPECT_TRUE(ready);
  EXPECT_EQ(torchfort_rl_on_policy_save_checkpoint("tf_rl", "dir"), TORCHFORT_RESULT_NOT_SUPPORTED);
  EXPECT_EQ(torchfort_rl_on_policy_load_model("tf_rl", "dir"), TORCHFORT_RESULT_NOT_SUPPORTED);
  std::string const err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("TORCHFORT::ERROR: torchfort_rl_on_policy_create_system: not in ktr's reinforcement learning "
                     "yet"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("TORCHFORT::ERROR: torchfort_rl_on_policy_save_checkpoint: "), std::string::npos) << err;
}

std::string read_text(std::string const& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// enable_wandb_hook with TORCHFORT_LOGDIR: TorchFort's metric lines (the loss and rate every report_frequency
// calls, and torchfort_wandb_log's) in torchfort.log, and the configuration with its identifier beside it;
// report_frequency's line on stdout in TorchFort's format.
TEST(TorchFort, WandbHookWritesTorchFortsMetricLinesUnderTorchFortLogdir) {
  std::string const dir = ::testing::TempDir() + "tf_logdir";
  std::remove((dir + "/torchfort.log").c_str());
  ::setenv("TORCHFORT_LOGDIR", dir.c_str(), 1);
  std::string const cfg = write_file("tf_wandb.yaml", "general: {report_frequency: 2, enable_wandb_hook: 1}\n" +
                                                          kModel + "loss: {type: MSE}\noptimizer: {type: adam}\n");
  ASSERT_EQ(torchfort_create_model("tf_wandb", cfg.c_str(), kDevice), TORCHFORT_RESULT_SUCCESS);
  ::unsetenv("TORCHFORT_LOGDIR");
  Batch b;
  float loss = 0;
  ::testing::internal::CaptureStdout();
  for (int i = 0; i < 4; ++i) ASSERT_EQ(b.train("tf_wandb", &loss), TORCHFORT_RESULT_SUCCESS);
  std::string const out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("TORCHFORT::INFO: model: tf_wandb, step_train: 2, loss: "), std::string::npos) << out;
  EXPECT_NE(out.find("TORCHFORT::INFO: model: tf_wandb, step_train: 4, loss: "), std::string::npos) << out;
  EXPECT_EQ(out.find("step_train: 3"), std::string::npos) << out;
  EXPECT_EQ(torchfort_wandb_log_float("tf_wandb", "val_loss", 7, 0.5f), TORCHFORT_RESULT_SUCCESS);
  EXPECT_EQ(torchfort_wandb_log_int("tf_wandb", "epoch", 7, 3), TORCHFORT_RESULT_SUCCESS);
  std::string const log = read_text(dir + "/torchfort.log");
  EXPECT_NE(log.find("TORCHFORT::WANDB: model: tf_wandb, step: 2, train_loss: "), std::string::npos) << log;
  EXPECT_NE(log.find("TORCHFORT::WANDB: model: tf_wandb, step: 4, train_lr: 0.001\n"), std::string::npos) << log;
  EXPECT_NE(log.find("TORCHFORT::WANDB: model: tf_wandb, step: 7, val_loss: 0.5\n"), std::string::npos) << log;
  EXPECT_NE(log.find("TORCHFORT::WANDB: model: tf_wandb, step: 7, epoch: 3\n"), std::string::npos) << log;
  EXPECT_NE(read_text(dir + "/config_tf_wandb.yaml").find("identifier: tf_wandb"), std::string::npos);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(torchfort_wandb_log_float("tf_nonesuch", "val_loss", 7, 0.5f), TORCHFORT_RESULT_INVALID_USAGE);
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("model 'tf_nonesuch': does not exist"),
            std::string::npos);
}

// Issue 40, defect 4: a metric line that cannot be written (torchfort.log is a folder here) does not fail the call
// whose step was applied already (a caller would retry it, applying the step twice): one warning per model, every
// call succeeds, and the model took exactly the steps called for.
TEST(TorchFort, AMetricLineThatCannotBeWrittenWarnsOnceAndTheStepStands) {
  std::string const dir = ::testing::TempDir() + "tf_badlog";
  std::filesystem::create_directories(dir + "/torchfort.log");
  ::setenv("TORCHFORT_LOGDIR", dir.c_str(), 1);
  std::string const cfg = write_file("tf_badlog.yaml", "general: {report_frequency: 1, enable_wandb_hook: 1}\n" +
                                                           kModel + "loss: {type: MSE}\noptimizer: {type: sgd}\n");
  ASSERT_EQ(torchfort_create_model("tf_badlog", cfg.c_str(), kDevice), TORCHFORT_RESULT_SUCCESS);
  ASSERT_EQ(torchfort_create_model("tf_goodlog", cfg.c_str(), kDevice), TORCHFORT_RESULT_SUCCESS);
  ::unsetenv("TORCHFORT_LOGDIR");
  Batch b;
  float bad = 0, good = 0;
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(b.train("tf_badlog", &bad), TORCHFORT_RESULT_SUCCESS) << "call " << i;
    (void)ktr_last_error();
  }
  std::string const err = ::testing::internal::GetCapturedStderr();
  (void)::testing::internal::GetCapturedStdout();
  EXPECT_NE(err.find("TORCHFORT::WARN: model tf_badlog: " + dir + "/torchfort.log"), std::string::npos) << err;
  EXPECT_EQ(err.find("TORCHFORT::WARN", err.find("TORCHFORT::WARN") + 1), std::string::npos)
      << "one warning: " << err;
  // The same three steps on a twin model (its log unwritable too, its lines unread) give the same loss: no step
  // was applied twice or dropped.
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(b.train("tf_goodlog", &good), TORCHFORT_RESULT_SUCCESS);
  (void)::testing::internal::GetCapturedStderr();
  (void)::testing::internal::GetCapturedStdout();
  EXPECT_EQ(bad, good);
  for (char const* n : {"tf_badlog", "tf_goodlog"}) EXPECT_EQ(ktr_destroy_model(n), KTR_RESULT_SUCCESS);
}

// Without TORCHFORT_LOGDIR the hook says once, at creation, that nothing is logged; the log calls still succeed.
TEST(TorchFort, WandbHookWithoutALogdirGivesOneNoticeAndLogsNothing) {
  ::unsetenv("TORCHFORT_LOGDIR");
  std::string const cfg = write_file("tf_wandb_off.yaml", "general: {enable_wandb_hook: true}\n" + kModel +
                                                              "loss: {type: MSE}\noptimizer: {type: adam}\n");
  ::testing::internal::CaptureStderr();
  ASSERT_EQ(torchfort_create_model("tf_wandb_off", cfg.c_str(), kDevice), TORCHFORT_RESULT_SUCCESS);
  EXPECT_EQ(torchfort_wandb_log_double("tf_wandb_off", "val_loss", 1, 0.25), TORCHFORT_RESULT_SUCCESS);
  std::string const err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(
      err.find("TORCHFORT::WARN: " + cfg + ": general.enable_wandb_hook is true but TORCHFORT_LOGDIR is not set"),
      std::string::npos)
      << err;
  EXPECT_EQ(err.find("TORCHFORT::WARN", err.find("TORCHFORT::WARN") + 1), std::string::npos) << "one notice";
}

// TorchFort reads its keys case-blind and without spaces (PyTorch's `T_max` as `t_max`); one key given twice in
// two spellings is refused.
TEST(TorchFort, YamlKeysAreCaseBlindAsTorchFortReadsThem) {
  std::string const ok = write_file(
      "tf_case.yaml", kModel +
                          "loss: {type: MSE}\noptimizer: {type: Adam, parameters: {Learning_Rate: 0.01}}\n"
                          "lr_scheduler: {type: cosine_annealing, parameters: {t_max: 10}}\n"
                          "general: {Report_Frequency: 0}\n");
  EXPECT_EQ(torchfort_create_model("tf_case", ok.c_str(), kDevice), TORCHFORT_RESULT_SUCCESS);
  std::string const twice = write_file(
      "tf_case2.yaml",
      kModel +
          "loss: {type: MSE}\noptimizer: {type: adam, parameters: {learning_rate: 0.01, Learning_Rate: 0.1}}\n");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(torchfort_create_model("tf_case2", twice.c_str(), kDevice), TORCHFORT_RESULT_INVALID_USAGE);
  std::string const err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("optimizer.parameters.Learning_Rate: appears twice"), std::string::npos) << err;
}

// TorchFort's cosine_annealing is PyTorch's CosineAnnealingLR, which goes on past T_max periodically (T_max 2:
// 0.05, 0, 0.05, 0.1 after calls 1 to 4); ktr's own door holds the final rate, as Optax's cosine decay does.
TEST(TorchFort, CosineAnnealingGoesOnPeriodicallyPastTmaxAsPyTorchDoes) {
  std::string const cfg =
      write_file("tf_cos.yaml", "general: {report_frequency: 1}\n" + kModel +
                                    "loss: {type: MSE}\noptimizer: {type: sgd, parameters: {learning_rate: 0.1}}\n"
                                    "lr_scheduler: {type: cosine_annealing, parameters: {T_max: 2}}\n");
  ASSERT_EQ(torchfort_create_model("tf_cos", cfg.c_str(), kDevice), TORCHFORT_RESULT_SUCCESS);
  Batch b;
  float loss = 0;
  ::testing::internal::CaptureStdout();
  for (int i = 0; i < 4; ++i) ASSERT_EQ(b.train("tf_cos", &loss), TORCHFORT_RESULT_SUCCESS);
  std::string const out = ::testing::internal::GetCapturedStdout();
  std::vector<double> lrs;
  for (std::size_t at = out.find("lr: "); at != std::string::npos; at = out.find("lr: ", at + 1))
    lrs.push_back(std::atof(out.c_str() + at + 4));
  ASSERT_EQ(lrs.size(), 4u) << out;
  double const expected[4] = {0.05, 0.0, 0.05, 0.1};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(lrs[std::size_t(i)], expected[i], 1e-6) << "after call " << i + 1;
  ktr::Schedule held = ktr::Schedule::parse("cosine:2:0:0");
  EXPECT_NEAR(held.scale(4), 0.0, 1e-12) << "ktr's own cosine holds its final rate";
  EXPECT_EQ(ktr::Schedule::parse(ktr::Schedule::parse("cosine:2:0:0:periodic").str()).periodic, true);
}

// TorchFort's step_train counts training calls: with grad_accumulation_steps 4, a checkpoint after 8 calls (2
// updates) gives back 8; inference calls are counted too.
TEST(TorchFort, CheckpointStepTrainCountsCallsWithAccumulation) {
  std::string const cfg = write_file("tf_steps.yaml", kModel +
                                                          "loss: {type: MSE}\noptimizer: {type: sgd, general: "
                                                          "{grad_accumulation_steps: 4}}\n");
  ASSERT_EQ(torchfort_create_model("tf_steps", cfg.c_str(), kDevice), TORCHFORT_RESULT_SUCCESS);
  Batch b;
  float loss = 0;
  for (int i = 0; i < 8; ++i) ASSERT_EQ(b.train("tf_steps", &loss), TORCHFORT_RESULT_SUCCESS);
  std::vector<float> p(32);
  ASSERT_EQ(torchfort_inference("tf_steps", b.x.data(), 2, b.xs, p.data(), 2, b.ys, TORCHFORT_FLOAT, nullptr),
            TORCHFORT_RESULT_SUCCESS);
  std::string const dir = ::testing::TempDir() + "tf_steps_ckpt";
  std::system(("rm -rf '" + dir + "'").c_str());
  ASSERT_EQ(torchfort_save_checkpoint("tf_steps", dir.c_str()), TORCHFORT_RESULT_SUCCESS);
  int64_t step_train = -1, step_inference = -1;
  ASSERT_EQ(torchfort_load_checkpoint("tf_steps", dir.c_str(), &step_train, &step_inference),
            TORCHFORT_RESULT_SUCCESS);
  EXPECT_EQ(step_train, 8);
  EXPECT_EQ(step_inference, 1);
}

// TorchFort infers with a model's initial weights before any training; two models of one seed agree, and the
// model then trains.
TEST(TorchFort, InferenceBeforeAnyTrainingUsesTheInitialWeights) {
  std::string const cfg = write_file(
      "tf_infer0.yaml", "general: {seed: 9}\n" + kModel + "loss: {type: MSE}\noptimizer: {type: adam}\n");
  ASSERT_EQ(torchfort_create_model("tf_infer0", cfg.c_str(), kDevice), TORCHFORT_RESULT_SUCCESS);
  ASSERT_EQ(torchfort_create_model("tf_infer1", cfg.c_str(), kDevice), TORCHFORT_RESULT_SUCCESS);
  Batch b;
  std::vector<float> p0(32, -99), p1(32, -99);
  ASSERT_EQ(torchfort_inference("tf_infer0", b.x.data(), 2, b.xs, p0.data(), 2, b.ys, TORCHFORT_FLOAT, nullptr),
            TORCHFORT_RESULT_SUCCESS);
  ASSERT_EQ(torchfort_inference("tf_infer1", b.x.data(), 2, b.xs, p1.data(), 2, b.ys, TORCHFORT_FLOAT, nullptr),
            TORCHFORT_RESULT_SUCCESS);
  EXPECT_EQ(p0, p1);
  bool varied = false;
  for (float v : p0) varied = varied || (std::isfinite(v) && v != p0[0]);
  EXPECT_TRUE(varied) << "random initial weights give varied, finite outputs";
  float loss = 0;
  EXPECT_EQ(b.train("tf_infer0", &loss), TORCHFORT_RESULT_SUCCESS);
}

// TorchFort's device -1 is the CPU: a host build runs there, a GPU build on its GPU (with a warning:
// DeviceCpuRunsOnAGpuBuildsGpuWithAWarning); a device the build does not have is answered by name.
TEST(TorchFort, DeviceCpuRunsOnAHostBuildAndIsNamedOtherwise) {
  std::string const cfg = write_file("tf_dev.yaml", kModel + "loss: {type: MSE}\noptimizer: {type: adam}\n");
  ::setenv("KTR_QUIET", "1", 1);
  torchfort_result_t const cpu = torchfort_create_model("tf_dev_cpu", cfg.c_str(), TORCHFORT_DEVICE_CPU);
  std::string const cpu_err = ktr_last_error();
  torchfort_result_t const gpu = torchfort_create_model("tf_dev_gpu", cfg.c_str(), 5);
  std::string const gpu_err = ktr_last_error();
  ::unsetenv("KTR_QUIET");
  EXPECT_EQ(cpu, TORCHFORT_RESULT_SUCCESS) << cpu_err;
  EXPECT_EQ(gpu, TORCHFORT_RESULT_NOT_SUPPORTED);
  EXPECT_NE(
      gpu_err.find(ktr::device_is_host ? "device 5: this build runs on the host" : "device 5: not a GPU index"),
      std::string::npos)
      << gpu_err;
}

}  // namespace

namespace {

// TorchFort's mlp3.yaml: flatten_non_batch_dims false, the MLP applied to the last dimension.
std::string const kPerPoint =
    "model: {type: mlp, parameters: {dropout: 0.0, layer_sizes: [10, 10, 10], flatten_non_batch_dims: false}}\n"
    "loss: {type: MSE}\noptimizer: {type: adam, parameters: {learning_rate: 1e-3}}\n";

}  // namespace

// TorchFort's TrainTestMLPCPUCPUNoFlatten, ...1DNoFlatten and ...NoFlattenDimError: (10, 2, 10) arrays are 20
// points of 10 values (the same predictions as the (20, 10) array they are), a (10) array is one point, and
// (10, 2, 5) arrays are refused naming the input; a model of image input refuses the key.
TEST(TorchFort, FlattenNonBatchDimsFalseAppliesTheMlpToTheLastDimension) {
  std::string const cfg = write_file("tf_points.yaml", kPerPoint);
  ASSERT_EQ(torchfort_create_model("tf_points", cfg.c_str(), kDevice), TORCHFORT_RESULT_SUCCESS);
  std::vector<float> x(200), y(200), out3(200), out2(200);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.1f * float(i)), y[i] = std::cos(0.1f * float(i));
  int64_t three[3] = {10, 2, 10}, two[2] = {20, 10}, one[1] = {10}, wrong[3] = {10, 2, 5};
  float loss = -1;
  EXPECT_EQ(torchfort_train("tf_points", x.data(), 3, three, y.data(), 3, three, &loss, TORCHFORT_FLOAT, nullptr),
            TORCHFORT_RESULT_SUCCESS);
  EXPECT_TRUE(std::isfinite(loss) && loss > 0);
  EXPECT_EQ(torchfort_inference("tf_points", x.data(), 3, three, out3.data(), 3, three, TORCHFORT_FLOAT, nullptr),
            TORCHFORT_RESULT_SUCCESS);
  EXPECT_EQ(torchfort_inference("tf_points", x.data(), 2, two, out2.data(), 2, two, TORCHFORT_FLOAT, nullptr),
            TORCHFORT_RESULT_SUCCESS);
  EXPECT_EQ(out3, out2) << "(10, 2, 10) is 20 points";
  std::vector<float> out1(10);
  EXPECT_EQ(torchfort_inference("tf_points", x.data(), 1, one, out1.data(), 1, one, TORCHFORT_FLOAT, nullptr),
            TORCHFORT_RESULT_SUCCESS);
  EXPECT_EQ(out1, std::vector<float>(out2.begin(), out2.begin() + 10)) << "(10) is one point";
  EXPECT_EQ(torchfort_train("tf_points", x.data(), 1, one, y.data(), 1, one, &loss, TORCHFORT_FLOAT, nullptr),
            TORCHFORT_RESULT_SUCCESS);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(torchfort_train("tf_points", x.data(), 3, wrong, y.data(), 3, wrong, &loss, TORCHFORT_FLOAT, nullptr),
            TORCHFORT_RESULT_INVALID_USAGE);
  std::string image = kPerPoint;
  image.replace(image.find("{type: mlp, parameters: {dropout: 0.0, layer_sizes: [10, 10, 10], "),
                std::string("{type: mlp, parameters: {dropout: 0.0, layer_sizes: [10, 10, 10], ").size(),
                "{type: ktr, parameters: {description: \"in=4x4x1 conv3x3:2 flatten dense:3\", ");
  EXPECT_EQ(torchfort_create_model("tf_points_image", write_file("tf_points_image.yaml", image).c_str(), kDevice),
            TORCHFORT_RESULT_INVALID_USAGE);
  std::string const err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("input: samples of 5 values, the model takes"), std::string::npos) << err;
  EXPECT_NE(err.find("flatten_non_batch_dims: false needs a model of flat input"), std::string::npos) << err;
}
