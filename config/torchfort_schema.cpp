// TorchFort's schema translated into a ktr run: the model types (MLP and ktr's own description), the losses,
// PyTorch's optimisers and learning-rate schedulers by their PyTorch names and parameters.
#include "../models/activation.hpp"
#include "yaml_schema.hpp"

#include <cmath>
#include <limits>

namespace ktr::config_impl {

namespace {

// The activation a layer token takes, as ":NAME" ("" for identity; "none" and "linear" name it too): every
// activation of the layer registry (models/activation.hpp).
std::string activation_suffix(Reader const& r, YAML::Node const& n, std::string const& key) {
  std::string const a = lower(r.text(n, key));
  if (a == "identity" || a == "none" || a == "linear") return "";
  if (auto act = parse_activation(a)) return ":" + std::string(activation_name(*act));
  r.fail(n, key, "'" + escaped(a) + "' is not an activation (" + activation_names() + ")");
}

}  // namespace

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
                        d.c.per_point = !r.boolean(v, key);
                        m.per_point_node = v;
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
                                 {"derivatives", r.setting(c.run, "derivatives")},
                                 {"derivative_weight", r.setting(c.run, "derivative_weight")},
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
                     {"history_size", r.setting(c.run, "history")},  // lbfgs, as PyTorch's LBFGS names them
                     {"max_linesearch_steps", r.setting(c.run, "linesearch")},
                     {"tolerance_grad", r.setting(c.run, "tolerance_grad")},
                     {"tolerance_change", r.setting(c.run, "tolerance_change")},
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
    ModelPlan const plan = Model::plan(c.run.model, 1);  // it parses, the shapes fit; normalised
    c.run.model = plan.description;
    if (c.per_point && plan.input.size() != plan.input[plan.input.rank - 1])
      r.fail(
          m.per_point_node, "model.parameters.flatten_non_batch_dims",
          "false needs a model of flat input (applied to the last dimension); this one takes " + plan.input.str());
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
}  // namespace ktr::config_impl
