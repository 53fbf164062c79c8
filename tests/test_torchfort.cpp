// TorchFort's C interface over ktr's (capi/torchfort.cpp): TorchFort's values and signatures, its configuration's
// rules (a loss and an optimizer section, PyTorch's weight_decay under adam), its process-wide settings, tensor
// lists, and its habit of printing every failure to stderr.
#include <torchfort.h>

#include "../capi/api.hpp"  // reset_next_seed: torchfort_set_manual_seed holds for the rest of the process

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace {

std::string write_file(std::string const& name, std::string const& text) {
  std::string const path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

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

// TorchFort has no default loss or optimizer: its first train fails without them, and says so on stderr.
TEST(TorchFort, AConfigWithoutALossOrAnOptimizerFailsTheFirstTrainOnStderr) {
  std::string const cfg = write_file("tf_noloss.yaml", kModel + "optimizer: {type: adam}\n");
  ASSERT_EQ(torchfort_create_model("tf_noloss", cfg.c_str(), TORCHFORT_DEVICE_CPU), TORCHFORT_RESULT_SUCCESS);
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
    ASSERT_EQ(torchfort_create_model(name.c_str(), cfg.c_str(), TORCHFORT_DEVICE_CPU), TORCHFORT_RESULT_SUCCESS);
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
    ASSERT_EQ(torchfort_create_model(name.c_str(), cfg.c_str(), TORCHFORT_DEVICE_CPU), TORCHFORT_RESULT_SUCCESS);
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
  ASSERT_EQ(torchfort_create_model("tf_lists", cfg.c_str(), TORCHFORT_DEVICE_CPU), TORCHFORT_RESULT_SUCCESS);
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
  ASSERT_EQ(torchfort_create_model("tf_saved", cfg.c_str(), TORCHFORT_DEVICE_CPU), TORCHFORT_RESULT_SUCCESS);
  ASSERT_EQ(torchfort_create_model("tf_loaded", cfg.c_str(), TORCHFORT_DEVICE_CPU), TORCHFORT_RESULT_SUCCESS);
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
  EXPECT_EQ(p1, p2);
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
  ASSERT_EQ(torchfort_create_model("tf_accum4", four.c_str(), TORCHFORT_DEVICE_CPU), TORCHFORT_RESULT_SUCCESS);
  ASSERT_EQ(torchfort_create_model("tf_accum1", one.c_str(), TORCHFORT_DEVICE_CPU), TORCHFORT_RESULT_SUCCESS);
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

}  // namespace
