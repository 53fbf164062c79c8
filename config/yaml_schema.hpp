// The configuration's sections as they are read: what each section leaves for the checks that need several.
// ktr's keys (the `general` section, the run) are read in yaml_config.cpp; TorchFort's and PyTorch's names (model,
// loss, optimizer, lr_scheduler) are translated in torchfort_schema.cpp. Internal to config/.
#pragma once

#include "yaml_reader.hpp"

namespace ktr::config_impl {

// What the sections read, and what they leave for the checks that need several sections.
struct ModelDraft {
  bool has_model = false;
  std::vector<std::int64_t> sizes;  // an MLP's sizes and activations
  std::string hidden = ":relu", output;
  double dropout = 0;
  YAML::Node sizes_node, description_node, per_point_node;
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

// TorchFort's sections (torchfort_schema.cpp).
void read_model(Reader const& r, YAML::Node const& n, std::string const& k, Draft& d);
void read_loss(Reader const& r, YAML::Node const& n, std::string const& k, Draft& d);
void read_optimizer(Reader const& r, YAML::Node const& n, std::string const& k, Draft& d);
void read_lr_scheduler(Reader const& r, YAML::Node const& n, std::string const& k, Draft& d);
void finish_model(Reader const& r, YAML::Node const& root, Draft& d);
void finish_schedule(Reader const& r, Draft& d);

}  // namespace ktr::config_impl
