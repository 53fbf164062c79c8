// The C API's named models: see registry.hpp.
#include "registry.hpp"

#include <ktr/ktr_config.hpp>
#include "../backends/device_info.hpp"
#include "../backends/gemm.hpp"
#include "../backends/kokkos_compat.hpp"
#include "../train/first_batch.hpp"
#include "../train/run_settings.hpp"
#include "../train/session.hpp"
#include "api.hpp"
#include "guard.hpp"

#include <cstdio>
#include <optional>
#include <sstream>

namespace ktr::capi {

namespace {
bool g_finalize_hook = false;
std::optional<std::uint64_t> g_next_seed;  // torchfort_set_manual_seed: every later model's seed
}  // namespace

std::map<std::string, std::unique_ptr<Entry>>& models() {
  // Never destroyed: ktr_finalize, registered with atexit when ktr starts Kokkos (maybe before the first model),
  // empties it at exit, after function-local statics made later are gone.
  static auto* const m = new std::map<std::string, std::unique_ptr<Entry>>;
  return *m;
}

std::string name_of(char const* name) {
  KTR_REQUIRE(name != nullptr && name[0] != '\0', "name", "is null or empty");
  return name;
}

Entry& entry(char const* name) {
  std::string const n = name_of(name);
  auto it = models().find(n);
  KTR_REQUIRE(it != models().end(), "model '" + n + "'", "does not exist (ktr_create_model first)");
  return *it->second;
}

TrainerOptions options_of(FileConfig const& c, bool torchfort) {
  TrainerOptions o;
  o.steps_per_dispatch = c.general.steps_per_dispatch;
  o.evaluate = false;
  o.capture = c.general.enable_graphs;
  o.layout = DataLayout::sharded;       // each rank's batches, or its replay buffer, are its own
  o.sum_accumulated_calls = torchfort;  // TorchFort sums grad_accumulation_steps calls; ktr averages them
  return o;
}

Trainer& trainer_for(ExecSpace const& space, Entry& e, Array const& x, Array const& y, bool stepped) {
  if (e.trainer) return *e.trainer;
  if (e.torchfort)  // TorchFort has no default loss or optimizer: its first train fails without them
    for (auto const& [has, section] :
         {std::pair<bool, char const*>{e.cfg.has_loss, "loss"}, {e.cfg.has_optimizer, "optimizer"}})
      if (!has) throw Error(e.cfg.path + ": has no " + section + " section (TorchFort needs one)");
  DeviceDataset const first = batch_of(space, x, y, Model::plan(e.cfg.run.model, 1));
  std::string const mismatch = e.cfg.loss.mismatch(first.task() == Task::classification);
  if (!mismatch.empty()) throw Error(e.cfg.path + ": " + mismatch);
  // The update's samples over all ranks: general.batch_size (checked at create), or every rank's first batch.
  e.trainer = trainer_from_first_batch(space, e.cfg.run, e.cfg.general.batch_size, first, stepped,
                                       options_of(e.cfg, e.torchfort), e.comm);
  return *e.trainer;
}

RunConfig untrained_config(Entry const& e, bool regression) {
  RunConfig run = e.cfg.run;
  run.task = regression ? Task::regression : Task::classification;
  std::string const mismatch = e.cfg.loss.mismatch(!regression);
  if (!mismatch.empty()) throw Error(e.cfg.path + ": " + mismatch);
  if (e.cfg.general.batch_size == 0) run.batch = std::int64_t(e.comm.size()) * run.accumulate;
  run.input_transform = InputTransform::identity(), run.normalize = InputTransformMode::none;
  return run;
}

std::int64_t train_calls(Entry const& e) {
  return e.trainer ? e.trainer->steps_taken() * e.trainer->config().accumulate + e.trainer->pending_calls() : 0;
}

void report(Entry& e, char const* name, float loss) {
  int const every = e.cfg.general.report_frequency;
  if (every <= 0 || !e.trainer || e.comm.rank() != 0) return;
  Trainer const& t = *e.trainer;
  std::int64_t const step = e.torchfort ? train_calls(e) : t.steps_taken();  // TorchFort counts calls, ktr updates
  if (step % every != 0) return;
  double const lr = double(t.config().optimizer.lr) * t.config().optimizer.schedule.scale(t.steps_taken());
  std::ostringstream l, r;
  l << loss, r << lr;
  if (e.torchfort)
    std::printf("TORCHFORT::INFO: model: %s, step_train: %lld, loss: %s, lr: %s\n", name, (long long)step,
                l.str().c_str(), r.str().c_str());
  else
    std::printf("ktr: model %s step %lld loss %.6g\n", name, (long long)step, double(loss));
  log_step_metrics(e, name, step, l.str(), r.str());
}

ktr_result_t create_model(char const* name, char const* config_file, int device, Communicator const& comm,
                          CreateOptions const& options) {
  std::lock_guard<std::recursive_mutex> lock(api_mutex());
  // First Kokkos (on ktr's worker, unless the application started it), then the model on the thread that runs
  // Kokkos work.
  ktr_result_t const started = guarded([&] { ensure_runtime(device, options.own_thread); });
  if (started != KTR_RESULT_SUCCESS) return started;
  return guarded([&] {
    std::string const n = name_of(name);
    KTR_REQUIRE(config_file != nullptr, "config_file", "is a null pointer");
    KTR_REQUIRE(models().count(n) == 0, "model '" + n + "'", "exists already (ktr_destroy_model it first)");
    auto e = std::make_unique<Entry>();
    e->config_text = read_config_text(config_file);
    e->cfg = parse_config(e->config_text, config_file);
    if (g_next_seed) e->cfg.run.seed = *g_next_seed;
    // TorchFort's set_cuda_allow_tf32 changes the default only: a file's general.precision is what it says.
    if (options.tf32 && !e->cfg.has_precision && matmul_tf32_available())
      e->cfg.run.precision = MatmulPrecision::tf32;
    std::string const unavailable = matmul_unavailable(e->cfg.run.precision);
    KTR_REQUIRE(unavailable.empty(), std::string(config_file) + ": general.precision", unavailable);
    e->torchfort = options.torchfort;
    if (options.torchfort && e->cfg.run.optimizer.schedule.kind == Schedule::Kind::cosine)
      e->cfg.run.optimizer.schedule.periodic = true;  // PyTorch's CosineAnnealingLR: on past T_max, periodically
    check_for_ranks(e->cfg, comm.size());
    RunConfig sized = e->cfg.run;  // the batch general.batch_size gives, or one sample per rank
    if (e->cfg.general.batch_size == 0) sized.batch = comm.size(), sized.accumulate = 1;
    check_fits_in_memory(sized, comm.size(), e->cfg.path + ": model");
    if (!g_finalize_hook) {  // an application that finalises Kokkos itself: the models' views go first
      Kokkos::push_finalize_hook([] {
        // On ktr's worker (ktr_finalize) the calling thread holds g_mutex for it; else the application finalises.
        std::unique_lock<std::recursive_mutex> hook_lock(api_mutex(), std::defer_lock);
        if (!on_worker()) hook_lock.lock();
        models().clear();
        g_finalize_hook = false;
      });
      g_finalize_hook = true;
    }
    if (e->cfg.general.verbose)  // every setting, from the settings tables
      std::printf("ktr: model %s: %s from %s on %s\nktr: %s, loss %s\nktr: %s\n", n.c_str(),
                  e->cfg.run.model.c_str(), config_file, device_description().c_str(),
                  describe_run_settings(e->cfg.run).c_str(), e->cfg.loss.str().c_str(),
                  describe_settings(general_settings(), e->cfg.general).c_str());
    e->comm = comm;
    if (e->cfg.general.enable_wandb_hook) open_metric_log(*e, n, options.torchfort);
    models()[n] = std::move(e);
  });
}

ktr_result_t create_model_as_torchfort(char const* name, char const* config_file, int device, bool tf32) {
  CreateOptions o;
  o.torchfort = true, o.tf32 = tf32;
  return create_model(name, config_file, device, Communicator(), o);
}

std::int64_t stream_instances(char const* name) {
  std::lock_guard<std::recursive_mutex> lock(api_mutex());
  auto const it = models().find(name != nullptr ? name : "");
  return it == models().end() ? -1 : std::int64_t(it->second->instances.made());
}

ktr_result_t set_next_seed(int seed) {
  return guarded([&] {
    KTR_REQUIRE(seed >= 0, "seed", std::to_string(seed) + " is negative");
    g_next_seed = std::uint64_t(seed);
  });
}

void reset_next_seed() {
  std::lock_guard<std::recursive_mutex> lock(api_mutex());
  g_next_seed.reset();
}

void set_last_error(std::string const& message) { set_error(message); }

}  // namespace ktr::capi

using namespace ktr;
using namespace ktr::capi;

extern "C" {

ktr_result_t ktr_create_model(char const* name, char const* config_file, int device) {
  return create_model(name, config_file, device, Communicator());
}

ktr_result_t ktr_destroy_model(char const* name) {
  return guarded([&] {
    std::string const n = name_of(name);
    KTR_REQUIRE(models().count(n) == 1, "model '" + n + "'", "does not exist");
    models().at(n)->instances.fence();
    models().erase(n);
  });
}

ktr_result_t ktr_finalize(void) {
  return finalize_runtime([] {
    if (Kokkos::is_initialized() && compat::usable_on_this_thread()) {
      ExecSpace().fence();
      for (auto const& model : models()) model.second->instances.fence();
    }
    models().clear();
  });
}

}  // extern "C"
