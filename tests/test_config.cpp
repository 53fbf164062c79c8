// The YAML configuration: TorchFort's keys become a RunConfig; unknown keys, wrong types, values out of range and
// TorchFort features ktr lacks are refused naming the file, the line and the key.
#include <ktr/config/rl_config.hpp>
#include <ktr/config/yaml_config.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

using ktr::ConfigError;
using ktr::FileConfig;
using ktr::parse_config;
using ktr::Reduction;
using ktr::RegressionLoss;

std::string const kMlp = R"(
general:
  report_frequency: 10
  enable_cuda_graphs: false
  steps_per_dispatch: 8
  batch_size: 32
  buffer_size: 1024
  seed: 7
model:
  type: mlp
  parameters:
    layer_sizes: [3, 64, 64, 1]
    activation: relu
    dropout: 0.0
    flatten_non_batch_dims: true
loss:
  type: MSE
optimizer:
  type: adam
  parameters:
    learning_rate: 0.002
    beta1: 0.8
    amsgrad: false
  general:
    grad_accumulation_steps: 2
    max_grad_norm: 1.5
lr_scheduler:
  type: cosine_annealing
  parameters:
    T_max: 100
    eta_min: 0.0002
)";

// The message a refused configuration gives, and whether it was "not supported".
std::pair<std::string, bool> refusal(std::string const& yaml) {
  try {
    parse_config(yaml, "test.yaml");
  } catch (ConfigError const& e) {
    return {e.what(), e.not_supported()};
  }
  return {"(accepted)", false};
}

TEST(Config, TorchFortKeysBecomeTheRunConfiguration) {
  ktr::FileConfig const c = parse_config(kMlp, "test.yaml");
  EXPECT_EQ(c.run.model, "in=3 dense:64:relu dense:64:relu dense:1");
  EXPECT_EQ(c.run.batch, 32);
  EXPECT_EQ(c.run.accumulate, 2);
  EXPECT_EQ(c.run.seed, 7u);
  EXPECT_EQ(c.run.optimizer.kind, ktr::OptimizerConfig::Kind::adam);
  EXPECT_FLOAT_EQ(c.run.optimizer.lr, 0.002f);
  EXPECT_FLOAT_EQ(c.run.optimizer.b1, 0.8f);
  EXPECT_FLOAT_EQ(c.run.optimizer.clip_norm, 1.5f);
  EXPECT_EQ(c.run.optimizer.schedule.kind, ktr::Schedule::Kind::cosine);
  EXPECT_EQ(c.run.optimizer.schedule.decay_steps, 100);
  EXPECT_FLOAT_EQ(c.run.optimizer.schedule.alpha, 0.1f);  // eta_min / learning_rate
  // cosine_annealing ends at eta_min and stays there
  EXPECT_NEAR(c.run.optimizer.schedule.scale(100) * 0.002, 0.0002, 1e-9);
  EXPECT_NEAR(c.run.optimizer.schedule.scale(500) * 0.002, 0.0002, 1e-9);
  EXPECT_FALSE(c.general.enable_graphs);
  EXPECT_EQ(c.general.steps_per_dispatch, 8);
  EXPECT_EQ(c.general.buffer_size, 1024);
  EXPECT_EQ(c.general.report_frequency, 10);
  EXPECT_EQ(c.general.normalize, ktr::InputTransformMode::none);
  EXPECT_EQ(c.loss.str(), "mse");
}

TEST(Config, AKtrDescriptionAndAStepScheduleAreRead) {
  ktr::FileConfig const c = parse_config(R"(
model: {type: ktr, parameters: {description: "in=8x8x1 conv3x3:4:relu avgpool2 flatten dense:10"}}
optimizer: {type: sgd, parameters: {learning_rate: 0.1, momentum: 0.9, nesterov: true}}
lr_scheduler: {type: step, parameters: {step_size: 10, gamma: 0.5}}
)",
                                         "k.yaml");
  EXPECT_EQ(c.run.model, "in=8x8x1 conv3x3:4:relu avgpool2 flatten dense:10");
  EXPECT_TRUE(c.run.optimizer.nesterov);
  EXPECT_EQ(c.run.optimizer.schedule.kind, ktr::Schedule::Kind::step);
  EXPECT_DOUBLE_EQ(c.run.optimizer.schedule.scale(25), 0.25);
  // The description may also sit in the model section itself (a U-Net here), but not in both places.
  ktr::FileConfig const unet = parse_config(R"(
model: {type: ktr, description: "in=16x16x1 conv3x3:8:relu:circular save:a maxpool2 convT2x2:8 concat:a conv1x1:1"}
)",
                                            "u.yaml");
  EXPECT_EQ(unet.run.model, "in=16x16x1 conv3x3:8:relu:circular save:a maxpool2 convT2x2:8 concat:a conv1x1:1");
  auto const [twice, not_supported] =
      refusal("model: {type: ktr, description: \"in=2 dense:1\", parameters: {description: \"in=2 dense:1\"}}\n");
  EXPECT_NE(twice.find("given twice"), std::string::npos) << twice;
  auto const [unsaved, _] = refusal("model: {type: ktr, description: \"in=4 dense:4 add:r dense:1\"}\n");
  EXPECT_NE(unsaved.find("'add:r': nothing is saved as 'r'"), std::string::npos) << unsaved;
}

// TorchFort's other schedules, as PyTorch defines them: MultiStepLR, PolynomialLR, LinearLR.
TEST(Config, MultistepPolynomialAndLinearSchedulesFollowPyTorch) {
  auto schedule = [](std::string const& yaml) {
    return parse_config("model: {type: mlp, parameters: {layer_sizes: [2, 1]}}\nlr_scheduler: " + yaml + "\n",
                        "s.yaml")
        .run.optimizer.schedule;
  };
  ktr::Schedule const m = schedule("{type: multistep, parameters: {milestones: [10, 30], gamma: 0.5}}");
  EXPECT_DOUBLE_EQ(m.scale(9), 1.0);
  EXPECT_DOUBLE_EQ(m.scale(10), 0.5);
  EXPECT_DOUBLE_EQ(m.scale(29), 0.5);
  EXPECT_DOUBLE_EQ(m.scale(30), 0.25);
  ktr::Schedule const p = schedule("{type: polynomial, parameters: {total_iters: 10, power: 2}}");
  EXPECT_DOUBLE_EQ(p.scale(0), 1.0);
  EXPECT_DOUBLE_EQ(p.scale(5), 0.25);
  EXPECT_DOUBLE_EQ(p.scale(10), 0.0);
  EXPECT_DOUBLE_EQ(p.scale(50), 0.0);
  ktr::Schedule const l =
      schedule("{type: linear, parameters: {start_factor: 0.5, end_factor: 1.0, total_iters: 4}}");
  EXPECT_DOUBLE_EQ(l.scale(0), 0.5);
  EXPECT_DOUBLE_EQ(l.scale(2), 0.75);
  EXPECT_DOUBLE_EQ(l.scale(9), 1.0);
  for (ktr::Schedule const& s : {m, p, l}) {  // the text form checkpoints record gives the schedule back
    ktr::Schedule const back = ktr::Schedule::parse(s.str());
    for (std::int64_t t : {0, 3, 10, 29, 30, 100}) EXPECT_DOUBLE_EQ(back.scale(t), s.scale(t)) << s.str();
  }
}

TEST(Config, L1AndHuberLossesAreRead) {
  auto loss = [](std::string const& yaml) {
    return parse_config("model: {type: mlp, parameters: {layer_sizes: [2, 1]}}\nloss: " + yaml + "\n", "l.yaml");
  };
  EXPECT_EQ(loss("{type: L1}").run.loss.str(), "l1");
  EXPECT_EQ(loss("{type: huber, parameters: {delta: 0.5}}").run.loss.str(), "huber:0.5");
  EXPECT_EQ(loss("{type: huber}").run.loss.str(), "huber:1");
  EXPECT_EQ(loss("{type: MSE}").run.loss.str(), "mse");
}

// The layer registry's activations and dropout in an MLP, BCE and a summed reduction.
TEST(Config, ActivationsDropoutBceAndSumReductionAreRead) {
  FileConfig const c = parse_config(
      "model:\n  type: mlp\n  parameters:\n    layer_sizes: [6, 64, 64, 2]\n    activation: SiLU\n"
      "    output_activation: sigmoid\n    dropout: 0.1\nloss:\n  type: BCE\n  parameters: {reduction: sum}\n",
      "test.yaml");
  EXPECT_EQ(c.run.model, "in=6 dense:64:silu dropout:0.1 dense:64:silu dropout:0.1 dense:2:sigmoid");
  EXPECT_EQ(c.loss.str(), "bce");
  EXPECT_EQ(c.run.loss.kind, RegressionLoss::Kind::bce);
  EXPECT_EQ(c.run.reduction, Reduction::sum);
  for (char const* a : {"tanh", "gelu", "gelu_tanh", "leaky_relu", "elu", "softplus", "sine", "swish", "linear"}) {
    FileConfig const m = parse_config(
        std::string("model: {type: mlp, parameters: {layer_sizes: [3, 8, 1], activation: ") + a + "}}\n",
        "test.yaml");
    EXPECT_EQ(
        m.run.model.find("dense:8:" + std::string(a == std::string("swish") ? "silu" : a)) != std::string::npos,
        a != std::string("linear"))
        << m.run.model;
  }
}

TEST(Config, GeneralPrecisionIsTheRunsAndMarkedGiven) {
  FileConfig const plain = parse_config("model: {type: mlp, parameters: {layer_sizes: [2, 1]}}\n", "p.yaml");
  EXPECT_EQ(plain.run.precision, ktr::MatmulPrecision::fp32);
  EXPECT_FALSE(plain.has_precision);
  FileConfig const b = parse_config(
      "general: {precision: bf16}\nmodel: {type: mlp, parameters: {layer_sizes: [2, 1]}}\n", "p.yaml");
  EXPECT_EQ(b.run.precision, ktr::MatmulPrecision::bf16);  // parsed by name; whether it runs: at creation
  EXPECT_TRUE(b.has_precision);
  auto const [why, not_supported] =
      refusal("general: {precision: fp8}\nmodel: {type: mlp, parameters: {layer_sizes: [2, 1]}}\n");
  EXPECT_NE(why.find("general.precision"), std::string::npos) << why;
  EXPECT_NE(why.find("fp8"), std::string::npos) << why;
}

TEST(Config, RefusalsNameTheFileTheLineAndTheKey) {
  struct Case {
    std::string yaml, expected;
    bool not_supported;
  };
  Case const cases[] = {
      {"model: {type: mlp, parameters: {layer_sizes: [2, 1]}}\nfoo: 1\n", "test.yaml:2: foo: unknown key", false},
      {"model:\n  type: mlp\n  parameters:\n    layer_sizes: [2, 1]\n    widths: 3\n",
       "test.yaml:5: model.parameters.widths: unknown key", false},
      {"model: {type: mlp, parameters: {layer_sizes: [2, 1]}}\noptimizer:\n  parameters:\n    learning_rate: "
       "fast\n",
       "test.yaml:4: optimizer.parameters.learning_rate: 'fast' is not a number", false},
      {"model: {type: mlp, parameters: {layer_sizes: [2, 1]}}\ngeneral:\n  batch_size: -3\n",
       "test.yaml:3: general.batch_size: '-3' is not an integer", false},
      {"model: {type: mlp, parameters: {layer_sizes: [2, 1]}}\noptimizer:\n  parameters:\n    amsgrad: true\n",
       "test.yaml:4: optimizer.parameters.amsgrad: 'true' is not supported", true},
      {"model:\n  type: torchscript\n", "test.yaml:2: model.type: TorchScript models need libtorch", true},
      {"model: {type: mlp, parameters: {layer_sizes: [2, 1], activation: tanhh}}\n",
       "model.parameters.activation: 'tanhh' is not an activation (identity, relu, tanh", false},
      {"model: {type: mlp, parameters: {layer_sizes: [2, 1], dropout: 1}}\n",
       "model.parameters.dropout: must be in [0, 1)", false},
      {"model: {type: mlp, parameters: {layer_sizes: [2, 1]}}\nloss: {type: SmoothL1}\n",
       "loss.type: 'smoothl1' is not supported", true},
      {"model: {type: mlp, parameters: {layer_sizes: [2, 1]}}\nloss: {type: torchscript}\n",
       "loss.type: TorchScript losses need libtorch", true},
      {"model: {type: mlp, parameters: {layer_sizes: [2, 1]}}\nloss: {type: mse, parameters: {reduction: max}}\n",
       "loss.parameters.reduction: must be one of mean, sum, got 'max'", false},
      {"model: {type: mlp, parameters: {layer_sizes: [2, 1]}}\nlr_scheduler: {type: exponential}\n",
       "lr_scheduler.type: 'exponential' is not a schedule", false},
      {"model: {type: mlp, parameters: {layer_sizes: [2, 1]}}\nlr_scheduler:\n  type: multistep\n  parameters:\n"
       "    milestones: [10, 5]\n",
       "test.yaml:5: lr_scheduler.parameters.milestones: must increase", false},
      {"general: {buffer_size: 8}\nmodel: {type: mlp, parameters: {layer_sizes: [2, 1]}}\n",
       "test.yaml:1: general.buffer_size: needs general.batch_size", false},
      {"model: {type: ktr, parameters: {description: \"in=2 dense:0\"}}\n", "test.yaml:1: model:", false},
      {"model: [1, 2\n", "test.yaml:", false},
      {"general: {seed: 1}\n", "model: missing", false},
  };
  for (Case const& c : cases) {
    auto const [message, not_supported] = refusal(c.yaml);
    EXPECT_NE(message.find(c.expected), std::string::npos) << c.yaml << "\n -> " << message;
    EXPECT_EQ(not_supported, c.not_supported) << message;
  }
  EXPECT_EQ(
      refusal("model: {type: mlp, parameters: {layer_sizes: [2, 1]}}\noptimizer: {parameters: {amsgrad: false}}\n")
          .first,
      "(accepted)")
      << "a TorchFort key at its default value is accepted";
}

// Hostile YAML: complex keys, duplicate keys and sections, a description under an mlp, an accumulation that cannot
// divide the batch, nesting deep enough to exhaust a recursive parser, and a sparse file of 2 TiB: each refused
// naming the file (and the key where there is one), never a conversion error or an allocation.
TEST(Config, HostileYamlIsRefusedNamingTheFileAndTheKey) {
  std::string const mlp = "model: {type: mlp, parameters: {layer_sizes: [2, 1]}}\n";
  std::pair<std::string, std::string> const cases[] = {
      {"? [a, b]\n: 1\n" + mlp, "test.yaml:1: (top level): a key must be a plain name"},
      {mlp + "general: {seed: 1, seed: 2}\n", "test.yaml:2: general.seed: appears twice"},
      {mlp + "general: {enable_graphs: true, enable_cuda_graphs: false}\n",
       "general.enable_cuda_graphs: is general.enable_graphs under another name, given already"},
      {mlp + "model: {type: mlp, parameters: {layer_sizes: [3, 1]}}\n", "test.yaml:2: model: appears twice"},
      {"model: {type: mlp, parameters: {layer_sizes: [2, 1], description: \"in=2 dense:1\"}}\n",
       "model.parameters.description: belongs to a model of type ktr"},
      {"model: {type: ktr, parameters: {layer_sizes: [2, 1], description: \"in=2 dense:1\"}}\n",
       "model.parameters.layer_sizes: belongs to a model of type mlp"},
      {mlp + "general: {batch_size: 10}\noptimizer: {general: {grad_accumulation_steps: 3}}\n",
       "optimizer.general.grad_accumulation_steps: 3 does not divide general.batch_size (10)"},
      {std::string(5000, '[') + std::string(5000, ']') + "\n", "nested deeper than a configuration can be"},
  };
  for (auto const& [yaml, expected] : cases) {
    auto const [message, not_supported] = refusal(yaml);
    EXPECT_NE(message.find(expected), std::string::npos) << yaml.substr(0, 80) << "\n -> " << message;
    EXPECT_FALSE(not_supported) << message;
  }
  std::string const sparse = ::testing::TempDir() + "ktr_sparse.yaml";
  ASSERT_EQ(
      std::system(("truncate -s 2T '" + sparse + "' 2>/dev/null || truncate -s 2G '" + sparse + "'").c_str()), 0);
  try {
    ktr::read_config_file(sparse);
    ADD_FAILURE() << "a sparse file of terabytes was read";
  } catch (ConfigError const& e) {
    EXPECT_NE(std::string(e.what()).find(sparse + ": "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("at most 16 MiB"), std::string::npos) << e.what();
  }
  std::remove(sparse.c_str());
}

// general.batch_size is the samples of an update over all ranks and accumulation steps (as ktr train's batch):
// a model created on R ranks refuses a batch that does not split into R x accumulation equal parts, and a
// per-rank replay buffer smaller than its rank's share.
TEST(Config, BatchSizeIsTheUpdateOverAllRanksAndSplitsEvenly) {
  FileConfig const c = parse_config(
      "model: {type: mlp, parameters: {layer_sizes: [2, 1]}}\ngeneral: {batch_size: 96, buffer_size: 96}\n"
      "optimizer: {general: {grad_accumulation_steps: 2}}\n",
      "test.yaml");
  EXPECT_EQ(c.run.batch, 96) << "the run's batch is general.batch_size itself, not times the ranks";
  EXPECT_NO_THROW(ktr::check_for_ranks(c, 1));
  EXPECT_NO_THROW(ktr::check_for_ranks(c, 2));  // 2 ranks x 2 accumulation steps of 24 samples
  EXPECT_NO_THROW(ktr::check_for_ranks(c, 3));  // 3 x 2 of 16
  for (int ranks : {5, 7}) {
    try {
      ktr::check_for_ranks(c, ranks);
      ADD_FAILURE() << ranks << " ranks accepted";
    } catch (ConfigError const& e) {
      EXPECT_NE(
          std::string(e.what()).find("test.yaml: general.batch_size: 96 samples per update do not split into " +
                                     std::to_string(ranks) + " ranks x 2 accumulation steps"),
          std::string::npos)
          << e.what();
    }
  }
  FileConfig small = c;
  small.general.buffer_size = 40;
  EXPECT_NO_THROW(ktr::check_for_ranks(small, 3)) << "3 ranks' shares are 32 each";
  try {
    ktr::check_for_ranks(small, 1);
    ADD_FAILURE() << "a buffer of 40 accepted for a batch of 96 on one rank";
  } catch (ConfigError const& e) {
    EXPECT_NE(std::string(e.what()).find("general.buffer_size: 40 samples per rank, fewer than a rank's share of "
                                         "general.batch_size (96)"),
              std::string::npos)
        << e.what();
  }
}

TEST(Config, AMissingFileIsNamed) {
  try {
    ktr::read_config_file("/nonexistent/ktr.yaml");
    FAIL() << "no error";
  } catch (ktr::Error const& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/ktr.yaml: cannot open"), std::string::npos) << e.what();
  }
}

// An RL file's general.enable_graphs (TorchFort's enable_cuda_graphs) turns captured update programs off; one
// setting, given once in one spelling.
TEST(Config, AnRlFilesEnableGraphsIsReadOnceInEitherSpelling) {
  std::string const body = R"(
algorithm: {type: td3}
actor: {type: space_noise, parameters: {a_low: -1, a_high: 1, clip: 0.3, sigma_train: 0.2, sigma_explore: 1.0}}
replay_buffer: {type: uniform, parameters: {max_size: 64, min_size: 16}}
policy_model: {type: MLP, parameters: {layer_sizes: [1, 8, 1]}}
critic_model: {type: CriticMLP, parameters: {layer_sizes: [2, 8, 1]}}
optimizer: {type: adam, parameters: {learning_rate: 1e-4}}
)";
  EXPECT_TRUE(ktr::parse_rl_config(body, "rl.yaml").system.graphs);
  EXPECT_FALSE(ktr::parse_rl_config("general: {enable_cuda_graphs: false}\n" + body, "rl.yaml").system.graphs);
  EXPECT_FALSE(ktr::parse_rl_config("general: {enable_graphs: 0}\n" + body, "rl.yaml").system.graphs);
  try {
    (void)ktr::parse_rl_config("general: {enable_graphs: 1, enable_cuda_graphs: 0}\n" + body, "rl.yaml");
    ADD_FAILURE() << "both spellings were accepted";
  } catch (ConfigError const& e) {
    EXPECT_NE(std::string(e.what()).find("enable_cuda_graphs"), std::string::npos) << e.what();
  }
}

}  // namespace
