// The settings tables: every row reads back what it prints, a checkpoint header carries every recorded setting
// through a save and a restore, and the YAML file, the checkpoint header and the table refuse a value out of
// range with the same range.
#include <ktr/config/yaml_config.hpp>
#include <ktr/train/checkpoint.hpp>
#include <ktr/train/run_settings.hpp>
#include <ktr/train/session.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <limits>
#include <string>

namespace {

using ktr::RunConfig;

template <class Config>
void expect_rows_read_back(std::vector<ktr::Setting<Config>> const& table) {
  Config const defaults{};
  for (auto const& s : table) {
    std::string const text = s.get(defaults);
    EXPECT_EQ(s.check(text), "") << s.name << ": its own default '" << text << "' is refused";
    Config c{};
    s.set(c, text);
    EXPECT_EQ(s.get(c), text) << s.name;
    EXPECT_NE(s.check("not a value"), "") << s.name << " accepts anything";
    EXPECT_NE(std::string(s.help), "") << s.name << " has no help";
  }
}

TEST(Settings, EveryRowReadsBackWhatItPrintsAndRefusesGarbage) {
  expect_rows_read_back(ktr::run_settings());
  expect_rows_read_back(ktr::general_settings());
}

TEST(Settings, ACheckpointHeaderCarriesEverySettingThatDiffersFromTheDefault) {
  RunConfig c;
  c.model = "in=4 dense:3";
  ktr::set_run_setting(c, "optimizer", "sgd");
  ktr::set_run_setting(c, "lr", "0.0123");
  ktr::set_run_setting(c, "momentum", "0.875");
  ktr::set_run_setting(c, "nesterov", "true");
  ktr::set_run_setting(c, "clip_norm", "2.5");
  ktr::set_run_setting(c, "schedule", "cosine:100:10:0.5");
  ktr::set_run_setting(c, "batch", "8");
  ktr::set_run_setting(c, "accumulate", "2");
  ktr::set_run_setting(c, "seed", "18446744073709551615");  // every uint64 a C++ caller may choose
  ktr::set_run_setting(c, "reduction", "sum");
  std::string const path = ::testing::TempDir() + "ktr_settings.ckpt";
  ktr::Session(c, 1).save(ktr::ExecSpace(), path);
  ktr::Checkpoint const ckpt = ktr::read_checkpoint(path);
  RunConfig const back = ktr::run_config(ckpt, path);
  for (auto const& s : ktr::run_settings())
    if (s.recorded) EXPECT_EQ(s.get(back), s.get(c)) << s.name;
  EXPECT_FALSE(ckpt.has("loss")) << "the default loss is left out (older files' bytes)";
  EXPECT_EQ(ckpt.get("reduction"), "sum");
  EXPECT_FALSE(ckpt.has("precision")) << "a resumed run chooses its own precision";
  std::remove(path.c_str());
}

TEST(Settings, TheYamlFileAndTheTableRefuseAValueWithTheSameRange) {
  std::string const range = ktr::setting_named(ktr::run_settings(), "lr").range();
  EXPECT_EQ(range, "[1e-12, 1000000]");
  try {
    ktr::parse_config(
        "model: {type: mlp, parameters: {layer_sizes: [2, 1]}}\n"
        "optimizer: {parameters: {learning_rate: 2e6}}\n",
        "t.yaml");
    ADD_FAILURE() << "a learning rate of 2e6 was accepted";
  } catch (ktr::ConfigError const& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "t.yaml:2: optimizer.parameters.learning_rate: '2e6' is not a number in " + range),
              std::string::npos)
        << e.what();
  }
  RunConfig c;
  try {
    ktr::set_run_setting(c, "lr", "2e6");
    ADD_FAILURE() << "set_run_setting accepted 2e6";
  } catch (ktr::Error const& e) {
    EXPECT_EQ(std::string(e.what()), "lr: '2e6' is not a number in " + range);
  }
  // TorchFort's 0/1 booleans are booleans here too.
  ktr::FileConfig const f = ktr::parse_config(
      "model: {type: mlp, parameters: {layer_sizes: [2, 1]}}\ngeneral: {verbose: 1, enable_cuda_graphs: 0}\n"
      "optimizer: {type: SGD, parameters: {nesterov: 1, momentum: 0.5}}\n",
      "t.yaml");
  EXPECT_TRUE(f.general.verbose);
  EXPECT_FALSE(f.general.enable_graphs);
  EXPECT_TRUE(f.run.optimizer.nesterov);
  EXPECT_EQ(f.run.optimizer.kind, ktr::OptimizerConfig::Kind::sgd);
}

}  // namespace

// The reference's YAML keys (ktr docs) are the reader's: each example value, at the first path its row names, sets
// the setting to something other than its default.
TEST(Settings, EveryYamlKeyOfTheReferenceSetsItsSetting) {
  RunConfig const defaults;
  for (auto const& k : ktr::yaml_run_keys()) {
    std::string path = k.key;
    path = path.substr(0, path.find_first_of(" ,"));
    std::string yaml = k.example, open;
    for (std::size_t end = path.size(); end != std::string::npos;) {
      std::size_t const dot = path.rfind('.', end - 1);
      std::string const name = path.substr(dot == std::string::npos ? 0 : dot + 1, end - (dot + 1));
      bool const top = dot == std::string::npos;
      yaml = top ? name + ": " + yaml : "{" + name + ": " + yaml + "}";
      end = top ? std::string::npos : dot;
    }
    if (std::string(k.setting) == "weight_decay")  // adamw's decoupled decay (sgd's and adam's: l2)
      yaml = "optimizer: {type: adamw, parameters: {weight_decay: " + std::string(k.example) + "}}";
    SCOPED_TRACE(yaml);
    ktr::FileConfig const c =
        ktr::parse_config("model: {type: mlp, parameters: {layer_sizes: [2, 1]}}\n" + yaml + "\n", "t.yaml");
    auto const& s = ktr::setting_named(ktr::run_settings(), k.setting);
    EXPECT_NE(s.get(c.run), s.get(defaults)) << k.setting << " is not set by " << k.key;
  }
}
