// The YAML configuration: see yaml_config.hpp. Every key of every section goes through one table of handlers
// (yaml_reader.hpp), so an unknown key is always refused and every message names the file, the line and the key's
// full path. This file reads ktr's keys (the `general` section), makes the run and holds the file's entry points;
// TorchFort's model, loss, optimiser and scheduler sections are translated in torchfort_schema.cpp.
#include "yaml_config.hpp"

#include "../core/file.hpp"
#include "yaml_schema.hpp"

#include <sys/stat.h>
#include <yaml-cpp/depthguard.h>

namespace ktr {

namespace {

using namespace config_impl;

// The `general` section.
void read_general(Reader const& r, YAML::Node const& n, std::string const& k, Draft& d) {
  // The draft's fields this section uses, by their short names.
  auto& c = d.c;
  // enable_graphs and TorchFort's enable_cuda_graphs name one setting: a file gives it once, in one spelling.
  std::string graphs;
  auto graphs_key = [&](YAML::Node const& v, std::string const& key) {
    if (!graphs.empty())
      r.fail(v, key, "is " + graphs + " under another name, given already (which one was meant?)");
    graphs = key;
    r.setting(general_settings(), c.general, "enable_graphs")(v, key);
  };
  r.section(
      n, k,
      {
          {"report_frequency", r.setting(general_settings(), c.general, "report_frequency")},
          {"verbose", r.setting(general_settings(), c.general, "verbose")},
          {"enable_graphs", graphs_key},
          {"enable_cuda_graphs", graphs_key},  // TorchFort's name
          {"steps_per_dispatch", r.setting(general_settings(), c.general, "steps_per_dispatch")},
          {"batch_size",  // the run's batch: samples per update over all ranks and accumulation steps
           [&](auto const& v, auto const& key) {
             r.setting(c.run, "batch")(v, key);
             c.general.batch_size = c.run.batch;
           }},
          {"buffer_size", r.setting(general_settings(), c.general, "buffer_size")},
          {"seed", r.setting(c.run, "seed")},
          {"precision",  // the run's: fp32, tf32 or bf16 (whether this build can run it is checked at creation)
           [&](auto const& v, auto const& key) {
             r.setting(c.run, "precision")(v, key);
             c.has_precision = true;
           }},
          {"normalize", r.setting(general_settings(), c.general, "normalize")},
          {"enable_wandb_hook", r.setting(general_settings(), c.general, "enable_wandb_hook")},
      });
}

// The `model` section.
void finish_run(Reader const& r, YAML::Node const& root, Draft& d) {
  auto& c = d.c;
  auto& huber_delta = d.huber_delta;
  if (c.general.buffer_size > 0 && c.general.batch_size == 0)
    r.fail(root["general"]["buffer_size"], "general.buffer_size",
           "needs general.batch_size (the size of the batches drawn from the replay buffer)");
  if (c.general.batch_size > 0 && c.general.batch_size % c.run.accumulate != 0)
    r.fail(root["optimizer"]["general"]["grad_accumulation_steps"], "optimizer.general.grad_accumulation_steps",
           std::to_string(c.run.accumulate) + " does not divide general.batch_size (" +
               std::to_string(c.general.batch_size) + ")");
  if (d.weight_decay >= 0) {  // TorchFort's (PyTorch's) meaning for each optimiser
    if (c.run.optimizer.kind == OptimizerConfig::Kind::adamw)
      c.run.optimizer.weight_decay = float(d.weight_decay);
    else
      c.run.optimizer.l2 = float(d.weight_decay);
  }
  if (c.loss.kind == LossChoice::Kind::regression) {
    if (c.loss.regression.kind == RegressionLoss::Kind::huber) c.loss.regression.delta = float(huber_delta);
    c.run.loss = c.loss.regression;
  }
  c.run.normalize = c.general.normalize;
  c.run.input_transform = InputTransform::identity();
}

FileConfig parse_config_checked(std::string const& yaml, std::string const& path);
}  // namespace

FileConfig parse_config(std::string const& yaml, std::string const& path) {
  try {
    return parse_config_checked(yaml, path);
  } catch (YAML::Exception const& e) {  // anything yaml-cpp refuses past the checks above, named
    throw ConfigError(path + (e.mark.line >= 0 ? ":" + std::to_string(e.mark.line + 1) : std::string()) +
                          ": cannot be read as a configuration: " + (e.msg.empty() ? "bad YAML" : e.msg),
                      false);
  }
}

namespace {
FileConfig parse_config_checked(std::string const& yaml, std::string const& path) {
  Reader const r(path);
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (YAML::DeepRecursion const& e) {
    throw ConfigError(path + ":" + std::to_string(e.mark.line + 1) +
                          ": nested deeper than a configuration can be (" + std::to_string(e.depth()) + " levels)",
                      false);
  } catch (YAML::Exception const& e) {
    throw ConfigError(path + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg, false);
  }
  Draft d;
  d.c.path = path;
  if (!root.IsDefined() || root.IsNull()) throw ConfigError(path + ": the file holds no configuration", false);
  auto reader = [&](void (*read)(Reader const&, YAML::Node const&, std::string const&, Draft&)) {
    return [&r, &d, read](YAML::Node const& n, std::string const& k) { read(r, n, k, d); };
  };
  r.section(root, "",
            {{"general", reader(read_general)},
             {"model", reader(read_model)},
             {"loss", reader(read_loss)},
             {"optimizer", reader(read_optimizer)},
             {"lr_scheduler", reader(read_lr_scheduler)}});
  finish_model(r, root, d);
  finish_schedule(r, d);
  finish_run(r, root, d);
  return d.c;
}

}  // namespace

std::vector<Setting<GeneralConfig>> const& general_settings() {
  using S = Setting<GeneralConfig>;
  using T = S::Type;
  auto integer = [](char const* name, double lo, double hi, char const* help, auto field) {
    S s;
    s.name = name, s.type = T::integer, s.lo = lo, s.hi = hi;
    s.help = help, s.recorded = false;
    s.get = [field](GeneralConfig const& g) { return std::to_string(g.*field); };
    s.set = [field, lo, hi](GeneralConfig& g, std::string const& t) {
      std::int64_t v = 0;
      (void)S::integer_value(t, std::int64_t(lo), std::int64_t(hi), v);  // check() accepted it
      g.*field = static_cast<std::remove_reference_t<decltype(g.*field)>>(v);
    };
    return s;
  };
  auto boolean = [](char const* name, char const* help, bool GeneralConfig::*field) {
    S s;
    s.name = name, s.type = T::boolean;
    s.help = help, s.recorded = false;
    s.get = [field](GeneralConfig const& g) { return std::string(g.*field ? "true" : "false"); };
    s.set = [field](GeneralConfig& g, std::string const& t) { g.*field = S::boolean_value(t) == 1; };
    return s;
  };
  static std::vector<S> const table = [&] {
    std::vector<S> t;
    t.push_back(integer("report_frequency", 0, double(1 << 30), "steps between loss reports on stdout (0: none)",
                        &GeneralConfig::report_frequency));
    t.push_back(boolean("verbose", "print the configuration when a model is created", &GeneralConfig::verbose));
    t.push_back(boolean("enable_graphs", "replay captured K-step programs where the backend can",
                        &GeneralConfig::enable_graphs));
    t.push_back(integer("steps_per_dispatch", 1, 4096, "optimiser steps per dispatch of ktr_train_steps",
                        &GeneralConfig::steps_per_dispatch));
    t.push_back(integer("buffer_size", 0, double(kMaxCount),
                        "each rank's replay buffer capacity in samples (0: none)", &GeneralConfig::buffer_size));
    t.push_back(boolean("enable_wandb_hook",
                        "TorchFort's metric log: loss, learning rate and torchfort_wandb_log lines to "
                        "$TORCHFORT_LOGDIR/torchfort.log",
                        &GeneralConfig::enable_wandb_hook));
    S normalize;
    normalize.name = "normalize", normalize.type = T::word;
    normalize.words = {"none", "standard"};
    normalize.help = "standard: fitted on the first batch; none: inputs as given";
    normalize.recorded = false;
    normalize.get = [](GeneralConfig const& g) { return std::string(input_transform_mode_name(g.normalize)); };
    normalize.set = [](GeneralConfig& g, std::string const& v) { g.normalize = parse_input_transform_mode(v); };
    t.push_back(normalize);
    return t;
  }();
  return table;
}

std::vector<YamlKey> const& yaml_run_keys() {
  static std::vector<YamlKey> const keys = {
      {"optimizer", "optimizer.type", "sgd"},
      {"lr", "optimizer.parameters.learning_rate", "0.5"},
      {"momentum", "optimizer.parameters.momentum", "0.9"},
      {"nesterov", "optimizer.parameters.nesterov", "true"},
      {"b1", "optimizer.parameters.beta1", "0.8"},
      {"b2", "optimizer.parameters.beta2", "0.99"},
      {"eps", "optimizer.parameters.eps", "1e-6"},
      {"weight_decay", "optimizer.parameters.weight_decay (adamw)", "0.01"},
      {"l2", "optimizer.parameters.weight_decay (sgd, adam)", "0.01"},
      {"clip_norm", "optimizer.general.max_grad_norm", "1.0"},
      {"history", "optimizer.parameters.history_size (lbfgs)", "20"},
      {"linesearch", "optimizer.parameters.max_linesearch_steps (lbfgs)", "30"},
      {"tolerance_grad", "optimizer.parameters.tolerance_grad (lbfgs)", "1e-9"},
      {"tolerance_change", "optimizer.parameters.tolerance_change (lbfgs)", "1e-12"},
      {"schedule", "lr_scheduler", "{type: cosine_annealing, parameters: {T_max: 100}}"},
      {"batch", "general.batch_size", "64"},
      {"accumulate", "optimizer.general.grad_accumulation_steps", "2"},
      {"seed", "general.seed", "7"},
      {"loss", "loss.type, loss.parameters.delta", "l1"},
      {"reduction", "loss.parameters.reduction", "sum"},
      {"normalize", "general.normalize (none, standard)", "none"},
      {"precision", "general.precision", "bf16"},
      {"derivatives", "loss.parameters.derivatives (Sobolev targets)", "'d0 d1'"},
      {"derivative_weight", "loss.parameters.derivative_weight", "0.5"},
  };
  return keys;
}

std::string read_config_text(std::string const& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > kMaxConfigBytes)
    throw ConfigError(path + ": " + std::to_string(st.st_size) + " bytes: a configuration file is at most " +
                          std::to_string(kMaxConfigBytes >> 20) + " MiB",
                      false);
  return read_regular_file(path);  // a missing file, a folder or a device: named, with the reason
}

void check_for_ranks(FileConfig const& c, int ranks) {
  std::int64_t const b = c.general.batch_size, parts = std::int64_t(ranks) * c.run.accumulate;
  if (b > 0 && b % parts != 0)
    throw ConfigError(c.path + ": general.batch_size: " + std::to_string(b) +
                          " samples per update do not split into " + std::to_string(ranks) + " rank" +
                          (ranks > 1 ? "s" : "") + " x " + std::to_string(c.run.accumulate) +
                          " accumulation step" + (c.run.accumulate > 1 ? "s" : "") + " of equal size",
                      false);
  if (c.general.buffer_size > 0 && c.general.buffer_size < b / ranks)
    throw ConfigError(c.path + ": general.buffer_size: " + std::to_string(c.general.buffer_size) +
                          " samples per rank, fewer than a rank's share of general.batch_size (" +
                          std::to_string(b / ranks) + ")",
                      false);
}

FileConfig read_config_file(std::string const& path) { return parse_config(read_config_text(path), path); }

std::string config_with_identifier(std::string const& yaml, std::string const& name) {
  YAML::Node root = YAML::Load(yaml);  // parse_config has read it already
  root["identifier"] = name;
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

}  // namespace ktr
