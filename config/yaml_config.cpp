// The YAML configuration: see yaml_config.hpp. Every key of every section goes through one table of handlers, so
// an unknown key is always refused and every message names the file, the line and the key's full path.
#include "yaml_config.hpp"

#include "../core/file.hpp"
#include "../core/parse.hpp"
#include "../models/activation.hpp"
#include "../train/run_settings.hpp"

#include <sys/stat.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <vector>

namespace ktr {

namespace {

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(YAML::Node const& at, std::string const& key, std::string const& reason,
                         bool not_supported = false) const {
    std::string where = path_;
    if (at.IsDefined() && at.Mark().line >= 0) where += ":" + std::to_string(at.Mark().line + 1);
    throw ConfigError(where + ": " + key + ": " + reason, not_supported);
  }

  using Handler = std::function<void(YAML::Node const&, std::string const&)>;

  /// A key as it is looked up: case-blind and without spaces, as TorchFort reads them (`T_max` is `t_max`).
  static std::string key_name(std::string const& key) {
    std::string k;
    for (char c : key)
      if (c != ' ') k += char(std::tolower(static_cast<unsigned char>(c)));
    return k;
  }

  /// Runs the handler of each key of the map `node` (the section `name`); an unknown key is refused.
  void section(YAML::Node const& node, std::string const& name,
               std::map<std::string, Handler> const& handlers) const {
    if (!node.IsMap()) fail(node, name, "must be a mapping of keys to values");
    std::map<std::string, int> seen;
    for (auto const& entry : node) {
      if (!entry.first.IsScalar())
        fail(entry.first, name.empty() ? "(top level)" : name, "a key must be a plain name, not a list or a map");
      std::string const key = entry.first.as<std::string>();
      std::string const full = name.empty() ? key : name + "." + key;
      if (seen[key_name(key)]++ > 0) fail(entry.first, full, "appears twice (which one was meant?)");
      auto h = handlers.begin();
      while (h != handlers.end() && key_name(h->first) != key_name(key)) ++h;
      if (h == handlers.end()) {
        std::string known;
        for (auto const& k : handlers) known += (known.empty() ? "" : ", ") + k.first;
        fail(entry.first, full, "unknown key (known here: " + known + ")");
      }
      h->second(entry.second, full);
    }
  }

  std::string text(YAML::Node const& n, std::string const& key) const {
    if (!n.IsScalar()) fail(n, key, "must be a single value");
    return n.as<std::string>();
  }
  double number(YAML::Node const& n, std::string const& key, double lo, double hi) const {
    double v = 0;
    std::string const t = text(n, key);
    if (!parse_number(t, lo, hi, v))
      fail(n, key, "'" + escaped(t) + "' is not a number in [" + fmt(lo) + ", " + fmt(hi) + "]");
    return v;
  }
  /// An integer in [lo, hi], also written as a number with no fraction (TorchFort's `T_max: 1e5`).
  std::int64_t integer(YAML::Node const& n, std::string const& key, std::int64_t lo, std::int64_t hi) const {
    std::int64_t v = 0;
    std::string const t = text(n, key);
    if (Setting<GeneralConfig>::integer_value(t, lo, hi, v)) return v;
    fail(n, key,
         "'" + escaped(t) + "' is not an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  bool boolean(YAML::Node const& n, std::string const& key) const {
    std::string const t = text(n, key);
    int const b = Setting<GeneralConfig>::boolean_value(t);  // TorchFort's 0 and 1 too
    if (b < 0) fail(n, key, "'" + escaped(t) + "' is not true or false (or 1 or 0)");
    return b == 1;
  }
  /// A TorchFort key ktr does not implement: accepted at its default, refused (not supported) otherwise.
  Handler only_default(double default_value) const {
    return [this, default_value](YAML::Node const& n, std::string const& key) {
      std::string const t = text(n, key);
      double v = 0;
      bool const is_default = (t == "false" && default_value == 0) || (t == "true" && default_value == 1) ||
                              (parse_number(t, -1e300, 1e300, v) && v == default_value);
      if (!is_default)
        fail(n, key, "'" + escaped(t) + "' is not supported by ktr (only the default, " + fmt(default_value) + ")",
             true);
    };
  }
  /// A key that is a row of a settings table (core/settings.hpp): its type, range and values. `lowercase`: the
  /// value is read case-blind (TorchFort's `Adam`).
  template <class Config>
  Handler setting(std::vector<Setting<Config>> const& table, Config& config, char const* name,
                  bool lowercase = false) const {
    Setting<Config> const& s = setting_named(table, name);
    return [this, &config, &s, lowercase](YAML::Node const& n, std::string const& key) {
      std::string t = text(n, key);
      if (lowercase)
        for (char& ch : t) ch = char(std::tolower(static_cast<unsigned char>(ch)));
      std::string const why = s.check(t);
      if (!why.empty()) fail(n, key, why);
      s.set(config, t);
    };
  }
  Handler setting(RunConfig& run, char const* name, bool lowercase = false) const {
    return setting(run_settings(), run, name, lowercase);
  }
  Handler ignored() const {
    return [](YAML::Node const&, std::string const&) {};
  }

 private:
  static std::string fmt(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
  }
  std::string path_;
};

constexpr double kBig = 1e30;
constexpr std::int64_t kMaxCount = std::int64_t(1) << 40;

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The activation a layer token takes, as ":NAME" ("" for identity; "none" and "linear" name it too): every
// activation of the layer registry (models/activation.hpp).
std::string activation_suffix(Reader const& r, YAML::Node const& n, std::string const& key) {
  std::string const a = lower(r.text(n, key));
  if (a == "identity" || a == "none" || a == "linear") return "";
  if (auto act = parse_activation(a)) return ":" + std::string(activation_name(*act));
  r.fail(n, key, "'" + escaped(a) + "' is not an activation (" + activation_names() + ")");
}

}  // namespace

namespace {
// What the sections read, and what they leave for the checks that need several sections.
struct ModelDraft {
  bool has_model = false;
  std::vector<std::int64_t> sizes;  // an MLP's sizes and activations
  std::string hidden = ":relu", output;
  double dropout = 0;
  YAML::Node sizes_node, description_node;
  std::string description_key;  // model.description or model.parameters.description
  bool has_sizes = false, has_description = false;
  std::string model_type;
  YAML::Node model_type_node;
};
struct ScheduleDraft {
  std::string schedule = "constant";
  YAML::Node schedule_node;
  double step_size = 0, gamma = 0.1, t_max = 0, eta_min = 0, power = 1, start = 1.0 / 3.0, end = 1;
  std::vector<std::int64_t> milestones;
  std::int64_t total_iters = 5;  // PyTorch's default for polynomial and linear
};
struct Draft {
  FileConfig c;
  double weight_decay = -1;  // optimizer.parameters.weight_decay, as given (-1: not given)
  ModelDraft model;
  ScheduleDraft schedule;
  double huber_delta = 1.0;
};

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
void read_model(Reader const& r, YAML::Node const& n, std::string const& k, Draft& d) {
  auto& c = d.c;
  ModelDraft& m = d.model;
  m.has_model = true;
  auto read_description = [&](YAML::Node const& v, std::string const& key) {
    if (m.has_description)
      r.fail(v, key,
             "the model's description is given twice (model.description and model.parameters.description)");
    c.run.model = r.text(v, key);
    m.description_node = v;
    m.description_key = key;
    m.has_description = true;
  };
  r.section(
      n, k,
      {
          {"type",
           [&](auto const& v, auto const& key) {
             m.model_type = lower(r.text(v, key));
             m.model_type_node = v;
             if (m.model_type == "torchscript")
               r.fail(v, key,
                      "TorchScript models need libtorch, which ktr does not use: describe the model with "
                      "type: mlp (layer_sizes) or type: ktr (a description such as \"in=4 dense:64:relu "
                      "dense:1\")",
                      true);
             if (m.model_type != "mlp" && m.model_type != "ktr")
               r.fail(v, key, "'" + escaped(m.model_type) + "' must be mlp or ktr");
           }},
          {"parameters",
           [&](YAML::Node const& p, std::string const& pk) {
             r.section(
                 p, pk,
                 {
                     {"layer_sizes",
                      [&](auto const& v, auto const& key) {
                        if (!v.IsSequence() || v.size() < 2)
                          r.fail(v, key, "must be a list of at least two sizes [in, ..., out]");
                        m.sizes.clear();
                        for (std::size_t i = 0; i < v.size(); ++i)
                          m.sizes.push_back(r.integer(v[i], key + "[" + std::to_string(i) + "]", 1, 1 << 24));
                        m.sizes_node = v;
                        m.has_sizes = true;
                      }},
                     {"activation",
                      [&](auto const& v, auto const& key) { m.hidden = activation_suffix(r, v, key); }},
                     {"output_activation",
                      [&](auto const& v, auto const& key) { m.output = activation_suffix(r, v, key); }},
                     {"dropout",
                      [&](auto const& v, auto const& key) {
                        m.dropout = r.number(v, key, 0, 1);
                        if (m.dropout >= 1) r.fail(v, key, "must be in [0, 1)");
                      }},
                     {"flatten_non_batch_dims",
                      [&](auto const& v, auto const& key) {
                        if (!r.boolean(v, key))
                          r.fail(v, key, "false is not supported: an MLP takes each sample flattened", true);
                      }},
                     {"description", [&](auto const& v, auto const& key) { read_description(v, key); }},
                 });
           }},
          // model: {type: ktr, description: ...} as well as under parameters (not both)
          {"description", [&](auto const& v, auto const& key) { read_description(v, key); }},
      });
}

// The `loss` section.
void read_loss(Reader const& r, YAML::Node const& n, std::string const& k, Draft& d) {
  // The draft's fields this section uses, by their short names.
  auto& c = d.c;
  c.has_loss = true;
  auto& huber_delta = d.huber_delta;
  r.section(n, k,
            {
                {"type",
                 [&](auto const& v, auto const& key) {
                   std::string const t = lower(r.text(v, key));
                   if (t == "mse" || t == "l2")
                     c.loss = LossChoice::parse("mse");
                   else if (t == "l1" || t == "huber")
                     c.loss = LossChoice::parse(t);  // huber's delta: finish_run
                   else if (t == "cross_entropy" || t == "crossentropy")
                     c.loss = LossChoice::parse("cross_entropy");
                   else if (t == "bce" || t == "bcewithlogits")
                     c.loss = LossChoice::parse("bce");
                   else if (t == "torchscript")
                     r.fail(v, key,
                            "TorchScript losses need libtorch, which ktr does not use: mse, l1, huber, bce or "
                            "cross_entropy",
                            true);
                   else if (t == "smoothl1")
                     r.fail(v, key,
                            "'" + escaped(t) +
                                "' is not supported by this ktr (huber with delta 1 is smooth L1 times 1)",
                            true);
                   else
                     r.fail(v, key, "'" + escaped(t) + "' is not a loss (mse, l1, huber, bce, cross_entropy)");
                 }},
                {"parameters",
                 [&](YAML::Node const& p, std::string const& pk) {
                   r.section(p, pk,
                             {
                                 {"delta", [&](auto const& v,
                                               auto const& key) { huber_delta = r.number(v, key, 1e-30, kBig); }},
                                 {"reduction", r.setting(c.run, "reduction")},
                             });
                 }},
            });
}

// The `optimizer` section.
void read_optimizer(Reader const& r, YAML::Node const& n, std::string const& k, Draft& d) {
  // The draft's fields this section uses, by their short names.
  auto& c = d.c;
  c.has_optimizer = true;
  r.section(
      n, k,
      {
          {"type", r.setting(c.run, "optimizer", true)},
          {"parameters",
           [&](YAML::Node const& p, std::string const& pk) {
             r.section(
                 p, pk,
                 {
                     {"learning_rate", r.setting(c.run, "lr")},
                     {"momentum", r.setting(c.run, "momentum")},
                     {"nesterov", r.setting(c.run, "nesterov")},
                     {"weight_decay",  // adamw's decoupled decay, or sgd's and adam's L2 penalty (finish_run)
                      [&](auto const& v, auto const& key) {
                        r.setting(c.run, "l2")(v, key);  // one range for both
                        d.weight_decay = c.run.optimizer.l2;
                        c.run.optimizer.l2 = 0;
                      }},
                     {"beta1", r.setting(c.run, "b1")},
                     {"beta2", r.setting(c.run, "b2")},
                     {"eps", r.setting(c.run, "eps")},
                     {"dampening", r.only_default(0)},
                     {"amsgrad", r.only_default(0)},
                     {"maximize", r.only_default(0)},
                 });
           }},
          {"general",
           [&](YAML::Node const& p, std::string const& pk) {
             r.section(p, pk,
                       {
                           {"grad_accumulation_steps", r.setting(c.run, "accumulate")},
                           {"max_grad_norm", r.setting(c.run, "clip_norm")},
                       });
           }},
      });
}

// The `lr_scheduler` section.
void read_lr_scheduler(Reader const& r, YAML::Node const& n, std::string const& k, Draft& d) {
  ScheduleDraft& sd = d.schedule;
  r.section(
      n, k,
      {
          {"type",
           [&](auto const& v, auto const& key) {
             sd.schedule = lower(r.text(v, key));
             sd.schedule_node = v;
             if (sd.schedule != "constant" && sd.schedule != "step" && sd.schedule != "cosine_annealing" &&
                 sd.schedule != "multistep" && sd.schedule != "polynomial" && sd.schedule != "linear")
               r.fail(v, key,
                      "'" + escaped(sd.schedule) +
                          "' is not a schedule (constant, step, multistep, polynomial, linear, "
                          "cosine_annealing)");
           }},
          {"parameters",
           [&](YAML::Node const& p, std::string const& pk) {
             r.section(
                 p, pk,
                 {
                     {"step_size",
                      [&](auto const& v, auto const& key) {
                        sd.step_size = double(r.integer(v, key, 1, kMaxCount));
                      }},
                     {"gamma", [&](auto const& v, auto const& key) { sd.gamma = r.number(v, key, 0, kBig); }},
                     {"T_max",
                      [&](auto const& v, auto const& key) { sd.t_max = double(r.integer(v, key, 1, kMaxCount)); }},
                     {"eta_min", [&](auto const& v, auto const& key) { sd.eta_min = r.number(v, key, 0, kBig); }},
                     {"milestones",
                      [&](auto const& v, auto const& key) {
                        if (!v.IsSequence() || v.size() == 0 || v.size() > std::size_t(Schedule::max_milestones))
                          r.fail(v, key,
                                 "must be a list of 1 to " + std::to_string(Schedule::max_milestones) + " steps");
                        sd.milestones.clear();
                        for (std::size_t i = 0; i < v.size(); ++i) {
                          sd.milestones.push_back(
                              r.integer(v[i], key + "[" + std::to_string(i) + "]", 1, kMaxCount));
                          if (i > 0 && sd.milestones[i] <= sd.milestones[i - 1])
                            r.fail(v[i], key, "must increase");
                        }
                      }},
                     {"total_iters",
                      [&](auto const& v, auto const& key) { sd.total_iters = r.integer(v, key, 1, kMaxCount); }},
                     {"power", [&](auto const& v, auto const& key) { sd.power = r.number(v, key, 0, 1000); }},
                     {"start_factor", [&](auto const& v, auto const& key) { sd.start = r.number(v, key, 0, 1); }},
                     {"end_factor", [&](auto const& v, auto const& key) { sd.end = r.number(v, key, 0, 1); }},
                 });
           }},
      });
}

// The model the sections describe, checked and normalised.
void finish_model(Reader const& r, YAML::Node const& root, Draft& d) {
  auto& c = d.c;
  ModelDraft& m = d.model;

  if (!m.has_model) r.fail(root, "model", "missing: the file must describe a model");
  if (m.model_type.empty()) r.fail(root, "model.type", "missing (mlp or ktr)");
  if (m.model_type == "mlp" && m.has_description)
    r.fail(m.description_node, m.description_key,
           "belongs to a model of type ktr; an mlp is given by layer_sizes");
  if (m.model_type == "ktr" && m.has_sizes)
    r.fail(m.sizes_node, "model.parameters.layer_sizes",
           "belongs to a model of type mlp; a ktr model has a description");
  if (m.model_type == "mlp") {
    if (m.sizes.empty())
      r.fail(m.model_type_node, "model.parameters.layer_sizes", "missing: an mlp needs its sizes");
    std::string description = "in=" + std::to_string(m.sizes[0]);
    std::ostringstream rate;  // after each hidden layer's activation, as TorchFort's MLP
    rate.precision(17);
    rate << m.dropout;
    for (std::size_t i = 1; i < m.sizes.size(); ++i) {
      description += " dense:" + std::to_string(m.sizes[i]) + (i + 1 < m.sizes.size() ? m.hidden : m.output);
      if (i + 1 < m.sizes.size() && m.dropout > 0) description += " dropout:" + rate.str();
    }
    c.run.model = description;
  } else if (c.run.model == RunConfig{}.model) {
    r.fail(m.model_type_node, "model.parameters.description", "missing: a ktr model needs its description");
  }
  try {
    c.run.model = Model::plan(c.run.model, 1).description;  // it parses, the shapes fit; normalised
  } catch (Error const& e) {
    r.fail(m.model_type_node, "model", e.what());
  }
}

// The learning-rate schedule the lr_scheduler section describes.
void finish_schedule(Reader const& r, Draft& d) {
  auto& c = d.c;
  ScheduleDraft& sd = d.schedule;
  if (sd.schedule == "step") {
    if (sd.step_size <= 0)
      r.fail(sd.schedule_node, "lr_scheduler.parameters.step_size", "missing for a step schedule");
    c.run.optimizer.schedule.kind = Schedule::Kind::step;
    c.run.optimizer.schedule.step_every = std::int64_t(sd.step_size);
    c.run.optimizer.schedule.factor = float(sd.gamma);
  } else if (sd.schedule == "multistep") {
    if (sd.milestones.empty())
      r.fail(sd.schedule_node, "lr_scheduler.parameters.milestones", "missing for a multistep schedule");
    auto& sc = c.run.optimizer.schedule;
    sc.kind = Schedule::Kind::multistep;
    sc.factor = float(sd.gamma);
    sc.milestone_count = int(sd.milestones.size());
    for (std::size_t i = 0; i < sd.milestones.size(); ++i) sc.milestones[i] = sd.milestones[i];
  } else if (sd.schedule == "polynomial" || sd.schedule == "linear") {
    auto& sc = c.run.optimizer.schedule;
    sc.kind = sd.schedule == "linear" ? Schedule::Kind::linear : Schedule::Kind::polynomial;
    sc.total_steps = sd.total_iters;
    sc.power = float(sd.power), sc.start = float(sd.start), sc.end = float(sd.end);
  } else if (sd.schedule == "cosine_annealing") {
    if (sd.t_max <= 0) r.fail(sd.schedule_node, "lr_scheduler.parameters.T_max", "missing for cosine_annealing");
    if (sd.eta_min > c.run.optimizer.lr)
      r.fail(sd.schedule_node, "lr_scheduler.parameters.eta_min", "is larger than the learning rate");
    c.run.optimizer.schedule.kind = Schedule::Kind::cosine;
    c.run.optimizer.schedule.decay_steps = std::int64_t(sd.t_max);
    c.run.optimizer.schedule.alpha = float(sd.eta_min / c.run.optimizer.lr);
  }
}

// The checks that span the general, optimizer and loss sections, and the run they make.
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
  c.run.norm = Normalization::identity();
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
    normalize.get = [](GeneralConfig const& g) { return std::string(normalize_mode_name(g.normalize)); };
    normalize.set = [](GeneralConfig& g, std::string const& v) { g.normalize = parse_normalize_mode(v); };
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
      {"schedule", "lr_scheduler", "{type: cosine_annealing, parameters: {T_max: 100}}"},
      {"batch", "general.batch_size", "64"},
      {"accumulate", "optimizer.general.grad_accumulation_steps", "2"},
      {"seed", "general.seed", "7"},
      {"loss", "loss.type, loss.parameters.delta", "l1"},
      {"reduction", "loss.parameters.reduction", "sum"},
      {"normalize", "general.normalize (none, standard)", "none"},
      {"precision", "general.precision", "bf16"},
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
