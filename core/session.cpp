// Session construction, checkpoint save and restore.
#include "core/session.hpp"

#include "core/checkpoint.hpp"
#include "core/error.hpp"

#include <cstdio>

namespace ktr {

namespace {

std::string exact(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

double number(Checkpoint const& c, std::string const& key, std::string const& path) {
  try {
    return std::stod(c.get(key));
  } catch (std::exception const&) {
    throw Error(path + ": header field '" + key + "' is missing or not a number");
  }
}

}  // namespace

Session::Session(RunConfig const& config, int max_k)
    : config_(config),
      model_(config.model, config.batch),
      state_(model_, config.optimizer, config.batch, config.seed, config.norm, max_k) {
  ExecSpace const space;
  model_.init(space, config.seed);
  space.fence();  // training may run on another instance (stream), which does not wait for this one
}

void Session::save(std::string const& path) const {
  Checkpoint c;
  auto const& o = config_.optimizer;
  c.header = {{"model", config_.model},
              {"optimizer", OptimizerConfig::kind_name(o.kind)},
              {"lr", exact(o.lr)},
              {"momentum", exact(o.momentum)},
              {"nesterov", o.nesterov ? "1" : "0"},
              {"b1", exact(o.b1)},
              {"b2", exact(o.b2)},
              {"eps", exact(o.eps)},
              {"weight_decay", exact(o.weight_decay)},
              {"clip_norm", exact(o.clip_norm)},
              {"schedule", o.schedule.str()},
              {"batch", std::to_string(config_.batch)},
              {"seed", std::to_string(config_.seed)},
              {"norm_scale", exact(config_.norm.scale)},
              {"norm_shift", exact(config_.norm.shift)},
              {"step", ""}};
  ExecSpace().fence();
  std::int64_t step = 0;
  Kokkos::deep_copy(step, state_.step);
  c.header["step"] = std::to_string(step);
  c.buffers.push_back(download(model_.arena().params()));
  for (auto const& s : state_.optimizer.state()) c.buffers.push_back(download(s));
  write_checkpoint(path, c);
}

std::unique_ptr<Session> Session::restore(std::string const& path, int max_k) {
  Checkpoint const c = read_checkpoint(path);
  RunConfig config;
  try {
    config.model = c.get("model");
    auto& o = config.optimizer;
    o.kind = OptimizerConfig::parse_kind(c.get("optimizer"));
    o.lr = float(number(c, "lr", path));
    o.momentum = float(number(c, "momentum", path));
    o.nesterov = c.get("nesterov") == "1";
    o.b1 = float(number(c, "b1", path));
    o.b2 = float(number(c, "b2", path));
    o.eps = float(number(c, "eps", path));
    o.weight_decay = float(number(c, "weight_decay", path));
    o.clip_norm = float(number(c, "clip_norm", path));
    o.schedule = Schedule::parse(c.get("schedule"));
    config.batch = std::int64_t(number(c, "batch", path));
    config.seed = std::stoull(c.get("seed"));
    config.norm.scale = float(number(c, "norm_scale", path));
    config.norm.shift = float(number(c, "norm_shift", path));
  } catch (Error const& e) {
    throw Error(path + ": " + e.what());
  }
  auto session = std::make_unique<Session>(config, max_k);
  auto& model = session->model_;
  auto state = session->state_.optimizer.state();
  KTR_REQUIRE(c.buffers.size() == 1 + state.size(), path,
              "holds " + std::to_string(c.buffers.size()) + " buffers, the configuration needs " +
                  std::to_string(1 + state.size()));
  upload(model.arena().params(), c.buffers[0], path + ": parameters");
  for (std::size_t i = 0; i < state.size(); ++i) upload(state[i], c.buffers[1 + i], path + ": optimiser state");
  std::int64_t const step = std::int64_t(number(c, "step", path));
  Kokkos::deep_copy(session->state_.step, step);
  session->state_.host_step = step;
  return session;
}

}  // namespace ktr
