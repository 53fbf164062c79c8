// The C API (ktr_c.h): named models, each a Trainer created by its first batch (the task comes from the labels'
// datatype, a `standard` input transform is fitted on that batch), plus a replay buffer on the device. Every entry
// point runs under one lock and catches everything at the boundary.
#if defined(KTR_ENABLE_MPI)
#include <mpi.h>  // first: ktr_c.h then declares ktr_create_distributed_model(..., MPI_Comm, ...)
#endif

#include "ktr_array.h"
#include "ktr_c.h"

#include <ktr/ktr_config.hpp>
#include "../backends/device_info.hpp"
#include "../backends/gemm.hpp"
#include "../backends/kokkos_compat.hpp"
#include "../backends/region.hpp"
#include "../backends/stream_instances.hpp"
#include "../config/yaml_config.hpp"
#include "../core/file.hpp"
#include "../core/parse.hpp"
#include "../train/first_batch.hpp"
#include "../train/interop.hpp"
#include "../train/replay_buffer.hpp"
#include "../train/run_directory.hpp"
#include "../train/run_settings.hpp"
#include "../train/runtime.hpp"
#include "../train/safetensors.hpp"
#include "api.hpp"
#include "arrays.hpp"
#include "worker.hpp"

#include <sys/stat.h>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

namespace ktr::capi {

namespace {

// The calling thread's last failure: a fixed buffer, so that nothing is destroyed with the thread (an atexit
// hook that ran after the C runtime freed a thread_local std::string wrote into freed memory).
constexpr std::size_t kErrorBytes = 4096;
thread_local char t_error[kErrorBytes] = "";
std::recursive_mutex g_mutex;
std::unique_ptr<Runtime> g_runtime;  // set when ktr initialised Kokkos (on g_worker)
Worker* g_worker = nullptr;          // runs every call once ktr initialised Kokkos; never destroyed at exit
bool g_exit_hook = false;
bool g_finalize_hook = false;
bool g_finalized = false;  // ktr finalised the Kokkos it started: Kokkos cannot start again in this process
std::optional<std::uint64_t> g_next_seed;  // torchfort_set_manual_seed: every later model's seed

// Sets the calling thread's message; control characters (from a file's bytes) are written as \xNN.
void set_error(std::string const& message) {
  std::size_t out = 0;
  for (unsigned char c : message) {
    char escaped[8];
    bool const control = c < 0x20 || c == 0x7f;
    if (control) std::snprintf(escaped, sizeof escaped, "\\x%02x", unsigned(c));
    std::size_t const n = control ? std::strlen(escaped) : 1;
    if (out + n + 1 > kErrorBytes) break;
    if (control)
      std::memcpy(t_error + out, escaped, n);
    else
      t_error[out] = char(c);
    out += n;
  }
  t_error[out] = '\0';
}

struct Entry {
  FileConfig cfg;
  Communicator comm;        // one rank, or the ranks of a distributed model
  std::string config_text;  // kept in checkpoints
  std::unique_ptr<Trainer> trainer;
  std::int64_t inference_calls = 0;
  std::unique_ptr<ReplayBuffer> buffer;  // general.buffer_size samples, made by the first push
  bool torchfort = false;                // created by TorchFort's door: its configuration's rules
  std::string metric_log;          // TorchFort's $TORCHFORT_LOGDIR/torchfort.log (enable_wandb_hook), or none
  StreamInstances instances;       // one per caller stream, for the model's life (captured programs refer to them)
  bool metric_log_warned = false;  // a metric line that could not be written has been reported once
};
std::map<std::string, std::unique_ptr<Entry>> g_models;

class NotSupported : public Error {
 public:
  using Error::Error;
};

std::string name_of(char const* name) {
  KTR_REQUIRE(name != nullptr && name[0] != '\0', "name", "is null or empty");
  return name;
}

Entry& entry(char const* name) {
  std::string const n = name_of(name);
  auto it = g_models.find(n);
  KTR_REQUIRE(it != g_models.end(), "model '" + n + "'", "does not exist (ktr_create_model first)");
  return *it->second;
}

// Runs f, turning every exception into a result and the calling thread's message.
template <class F>
ktr_result_t run_guarded(F&& f) {
  try {
    f();
    return KTR_RESULT_SUCCESS;
  } catch (ConfigError const& e) {
    set_error(e.what());
    return e.not_supported() ? KTR_RESULT_NOT_SUPPORTED : KTR_RESULT_INVALID_USAGE;
  } catch (NotSupported const& e) {
    set_error(e.what());
    return KTR_RESULT_NOT_SUPPORTED;
  } catch (Error const& e) {  // ktr's own checks: arguments, shapes, files, configuration, divergence
    set_error(e.what());
    return KTR_RESULT_INVALID_USAGE;
  } catch (std::bad_alloc const&) {
    set_error("out of memory");
    return KTR_RESULT_DEVICE_ERROR;
  } catch (std::exception const& e) {  // Kokkos and the device runtime report their failures this way
    set_error(e.what());
    return KTR_RESULT_DEVICE_ERROR;
  } catch (...) {
    set_error("an unknown exception");
    return KTR_RESULT_INTERNAL_ERROR;
  }
}

// Every entry point: one call at a time, on ktr's worker thread where ktr started Kokkos, else on the caller's
// thread, which must be one that can run Kokkos work (Kokkos 3.4's OpenMP backend: the one that initialised it).
template <class F>
ktr_result_t guarded(F&& f) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  t_error[0] = '\0';
  if (g_worker != nullptr && !g_worker->on_worker()) {
    ktr_result_t result = KTR_RESULT_SUCCESS;
    std::string message;
    g_worker->run([&] {  // the caller holds g_mutex for it
      t_error[0] = '\0';
      result = run_guarded(f);
      message = t_error;
    });
    set_error(message);
    return result;
  }
  if (g_worker == nullptr && Kokkos::is_initialized() && !compat::usable_on_this_thread()) {
    set_error(
        "this thread cannot run Kokkos work: Kokkos (" + std::string(ExecSpace::name()) +
        ") was initialised on another thread (by the application, or by ktr for a distributed model whose MPI "
        "allows the main thread alone), and Kokkos 3.4's OpenMP backend runs only there; call ktr from that "
        "thread");
    return KTR_RESULT_INVALID_USAGE;
  }
  return run_guarded(f);
}

void finalize_at_exit() { (void)ktr_finalize(); }

// Kokkos initialised by ktr, on a worker thread of its own that then runs every call (see worker.hpp).
void start_runtime(int device) {
  auto worker = std::make_unique<Worker>();
  std::exception_ptr failed;
  worker->run([&] {
    try {
      g_runtime = std::make_unique<Runtime>(-1, device);
    } catch (...) {
      failed = std::current_exception();
    }
  });
  if (failed) std::rethrow_exception(failed);  // the worker goes: the application may start Kokkos itself later
  g_worker = worker.release();
}

// Kokkos for `device`, initialised here unless the application did; the device is checked first.
void ensure_runtime(int device, bool own_thread) {
  int const gpus = gpu_count();
  bool const gpu_build = !device_is_host;
  KTR_REQUIRE(
      device >= KTR_DEVICE_DEFAULT, "device",
      std::to_string(device) + " is neither a device index, KTR_DEVICE_CPU (-1) nor KTR_DEVICE_DEFAULT (-2)");
  if (!gpu_build) {
    if (device > 0)
      throw NotSupported("device " + std::to_string(device) + ": this build runs on the host (" +
                         ExecSpace::name() + "): use KTR_DEVICE_DEFAULT (-2), KTR_DEVICE_CPU (-1) or 0");
    device = -1;
  } else {
    if (device == KTR_DEVICE_CPU)
      throw NotSupported(
          std::string("device KTR_DEVICE_CPU: this build runs on the GPU (") + ExecSpace::name() +
          "); a host-only build of ktr runs on the CPU (KTR_DEVICE_DEFAULT is this build's device)");
    if (device == KTR_DEVICE_DEFAULT) device = Kokkos::is_initialized() ? kokkos_gpu() : 0;
    if (device >= gpus)
      throw NotSupported("device " + std::to_string(device) + ": not a GPU index here (" + std::to_string(gpus) +
                         " GPUs)");
  }
  if (!Kokkos::is_initialized()) {
    if (g_finalized)
      throw Error(
          "ktr_finalize() has finalised Kokkos, which cannot start again in this process: create every "
          "model before ktr_finalize()");
    if (own_thread)
      start_runtime(gpu_build ? device : -1);
    else
      g_runtime = std::make_unique<Runtime>(-1, gpu_build ? device : -1);
    if (!g_exit_hook) std::atexit(finalize_at_exit), g_exit_hook = true;
  } else if (gpu_build && device != kokkos_gpu()) {
    throw NotSupported("device " + std::to_string(device) + ": Kokkos runs on GPU " +
                       std::to_string(kokkos_gpu()) + " in this process");
  }
}

TrainerOptions options_of(FileConfig const& c, bool torchfort = false) {
  TrainerOptions o;
  o.steps_per_dispatch = c.general.steps_per_dispatch;
  o.evaluate = false;
  o.capture = c.general.enable_graphs;
  o.layout = DataLayout::sharded;       // each rank's batches, or its replay buffer, are its own
  o.sum_accumulated_calls = torchfort;  // TorchFort sums grad_accumulation_steps calls; ktr averages them
  return o;
}

// The model's Trainer, created by its first batch (train/first_batch.hpp: every check before anything is made).
// `stepped`: ktr_train's first step runs on this batch; ktr_push's replay buffer keeps it.
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

// The run of a model that loads weights before it has seen a batch: the file's task, no fitted transform (the
// file's replaces it), the batch of general.batch_size or one sample per rank (a larger call grows it).
RunConfig untrained_config(Entry const& e, bool regression) {
  RunConfig run = e.cfg.run;
  run.task = regression ? Task::regression : Task::classification;
  std::string const mismatch = e.cfg.loss.mismatch(!regression);
  if (!mismatch.empty()) throw Error(e.cfg.path + ": " + mismatch);
  if (e.cfg.general.batch_size == 0) run.batch = std::int64_t(e.comm.size()) * run.accumulate;
  run.norm = Normalization::identity(), run.normalize = NormalizeMode::none;
  return run;
}

// Training calls so far, as TorchFort counts them (its step_train): every call of an accumulated update.
std::int64_t train_calls(Entry const& e) {
  return e.trainer ? e.trainer->step() * e.trainer->config().accumulate + e.trainer->pending_calls() : 0;
}

// One line appended to the model's metric log (rank 0), in TorchFort's format.
void log_line(Entry const& e, std::string const& line) {
  if (!e.metric_log.empty() && e.comm.rank() == 0) append_line(e.metric_log, "TORCHFORT::WANDB: " + line);
}

// general.report_frequency's line on stdout: TorchFort's, counting calls, from its door; ktr's, counting updates,
// from ktr's. With a metric log, the loss and the learning rate go there too.
void report(Entry& e, char const* name, float loss) {
  int const every = e.cfg.general.report_frequency;
  if (every <= 0 || !e.trainer || e.comm.rank() != 0) return;
  Trainer const& t = *e.trainer;
  std::int64_t const step = e.torchfort ? train_calls(e) : t.step();
  if (step % every != 0) return;
  double const lr = double(t.config().optimizer.lr) * t.config().optimizer.schedule.scale(t.step());
  std::ostringstream l, r;
  l << loss, r << lr;
  if (e.torchfort)
    std::printf("TORCHFORT::INFO: model: %s, step_train: %lld, loss: %s, lr: %s\n", name, (long long)step,
                l.str().c_str(), r.str().c_str());
  else
    std::printf("ktr: model %s step %lld loss %.6g\n", name, (long long)step, double(loss));
  std::string const head = "model: " + std::string(name) + ", step: " + std::to_string(step) + ", ";
  // The step is applied already: a metric line that cannot be written is a warning (once per model), not a
  // failure of the call, which a caller would retry, applying the step twice.
  try {
    log_line(e, head + "train_loss: " + l.str());
    log_line(e, head + "train_lr: " + r.str());
  } catch (Error const& failed) {
    if (!e.metric_log_warned && !torchfort_quiet())
      std::fprintf(stderr,
                   "TORCHFORT::WARN: model %s: %s; the step was taken, and further metric lines that fail "
                   "are not reported\n",
                   name, escaped(failed.what()).c_str());
    e.metric_log_warned = true;
  }
}

// TorchFort's enable_wandb_hook: metric lines to $TORCHFORT_LOGDIR/torchfort.log, beside a copy of the model's
// configuration (config_NAME.yaml, with its `identifier`) for TorchFort's wandb_helper.py; without the variable,
// one notice on stderr from TorchFort's door.
void open_metric_log(Entry& e, std::string const& name, bool notice) {
  char const* dir = std::getenv("TORCHFORT_LOGDIR");
  if (dir == nullptr || dir[0] == '\0') {
    if (notice && !torchfort_quiet())
      std::fprintf(stderr,
                   "TORCHFORT::WARN: %s: general.enable_wandb_hook is true but TORCHFORT_LOGDIR is not set: no "
                   "metrics are logged (set it to a writable folder to log them)\n",
                   e.cfg.path.c_str());
    return;
  }
  std::string const folder = dir;
  if (e.comm.rank() == 0) {
    std::error_code ec;
    std::filesystem::create_directories(folder, ec);
    KTR_REQUIRE(!ec, "TORCHFORT_LOGDIR " + folder, "cannot be made a folder (" + ec.message() + ")");
    std::string file_name;
    for (char c : name) file_name += c == ' ' || c == '/' ? '_' : c;
    write_atomically(folder + "/config_" + file_name + ".yaml", config_with_identifier(e.config_text, name));
  }
  e.metric_log = folder + "/torchfort.log";
}

}  // namespace

ktr_result_t create_model(char const* name, char const* config_file, int device, Communicator const& comm,
                          CreateOptions const& options) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  // First Kokkos (on ktr's worker, unless the application started it), then the model on the thread that runs
  // Kokkos work.
  ktr_result_t const started = guarded([&] { ensure_runtime(device, options.own_thread); });
  if (started != KTR_RESULT_SUCCESS) return started;
  return guarded([&] {
    std::string const n = name_of(name);
    KTR_REQUIRE(config_file != nullptr, "config_file", "is a null pointer");
    KTR_REQUIRE(g_models.count(n) == 0, "model '" + n + "'", "exists already (ktr_destroy_model it first)");
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
        std::unique_lock<std::recursive_mutex> hook_lock(g_mutex, std::defer_lock);
        if (g_worker == nullptr || !g_worker->on_worker()) hook_lock.lock();
        g_models.clear();
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
    g_models[n] = std::move(e);
  });
}

ktr_result_t train(char const* name, Array const& x, Array const& y, float* loss_val, void* stream) {
  return guarded([&] {
    Region const region("ktr::capi::train");
    Entry& e = entry(name);
    ExecSpace const space = e.instances.of(stream);
    Trainer* t = &trainer_for(space, e, x, y, true);
    DeviceDataset const batch = batch_of(space, x, y, t->model(), int(t->model().output_width()));
    if (batch.count > t->model().max_batch() && e.cfg.general.batch_size == 0 && t->pending_calls() == 0) {
      // TorchFort takes any batch: without general.batch_size the run grows to the larger one, exactly as it was.
      e.trainer = t->with_batch(space, batch.count * e.comm.size() * e.cfg.run.accumulate);
      t = e.trainer.get();
    }
    t->enqueue_step(space, batch);
    if (loss_val != nullptr || e.cfg.general.report_frequency > 0) {
      float const loss = t->last_loss(space);
      KTR_REQUIRE(std::isfinite(loss), "model '" + std::string(name) + "'",
                  "diverged: this step, or one taken since the last loss was read back, had a non-finite loss or "
                  "gradient, and its update was refused (the model is unchanged by it; " +
                      std::to_string(t->step()) + " steps taken)");
      if (loss_val) *loss_val = loss;
      report(e, name, loss);
    }
  });
}

ktr_result_t inference(char const* name, Array const& x, Array const& out, void* stream) {
  return guarded([&] {
    Region const region("ktr::capi::inference");
    Entry& e = entry(name);
    if (!e.trainer && e.torchfort)  // TorchFort infers with the model's initial weights
      e.trainer = Trainer::untrained(ExecSpace(), untrained_config(e, e.cfg.loss.mismatch(false).empty()),
                                     options_of(e.cfg, e.torchfort), e.comm);
    KTR_REQUIRE(e.trainer != nullptr, "model '" + std::string(name) + "'",
                "has not been trained or loaded yet (ktr_train, ktr_push or ktr_load_checkpoint first)");
    ExecSpace const space = e.instances.of(stream);
    Trainer& t = *e.trainer;
    DeviceDataset const features = features_of(space, x, t.model(), "input");
    Kokkos::View<float**, Kokkos::LayoutRight, MemSpace> values(
        Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "ktr::capi::output"), std::size_t(features.count),
        std::size_t(t.model().output_width()));
    t.predict(space, features, values);
    store_output(space, values, out, t.model().output_shape(1));
    ++e.inference_calls;
  });
}

ktr_result_t push(char const* name, Array const& x, Array const& y, void* stream) {
  return guarded([&] {
    Region const region("ktr::capi::push");
    Entry& e = entry(name);
    std::int64_t const capacity = e.cfg.general.buffer_size;
    if (capacity == 0)
      throw Error(e.cfg.path + ": general.buffer_size is not set: the model has no replay buffer to push to");
    ExecSpace const space = e.instances.of(stream);
    Trainer& t = trainer_for(space, e, x, y, false);
    DeviceDataset const batch = batch_of(space, x, y, t.model(), int(t.model().output_width()));
    if (!e.buffer)  // made whole before it is kept: a failed allocation leaves no half-made buffer
      e.buffer = std::make_unique<ReplayBuffer>(space, capacity, t.model().input_shape(1), t.config().task,
                                                t.model().output_width());
    e.buffer->push(space, batch);
  });
}

ktr_result_t train_steps(char const* name, int k, float* loss_val, void* stream) {
  return guarded([&] {
    Region const region("ktr::capi::train_steps");
    Entry& e = entry(name);
    KTR_REQUIRE(k > 0, "k", std::to_string(k) + " is not a positive number of steps");
    KTR_REQUIRE(e.trainer != nullptr && e.buffer != nullptr && e.buffer->filled() > 0,
                "model '" + std::string(name) + "'", "has an empty replay buffer (ktr_push first)");
    Trainer& t = *e.trainer;
    std::int64_t const share = t.samples_per_update_here();  // this rank's part of general.batch_size
    KTR_REQUIRE(e.buffer->filled() >= share, "model '" + std::string(name) + "'",
                "the replay buffer holds " + std::to_string(e.buffer->filled()) + " samples, fewer than " +
                    (e.comm.size() > 1 ? "this rank's share of a batch (" : "a batch (") + std::to_string(share) +
                    ")");
    ExecSpace const space = e.instances.of(stream);
    t.set_data(e.buffer->data());
    // The Trainer's dispatches of K and, if asked for, its one read-back (divergence, the mean over the ranks:
    // every rank alike).
    t.enqueue_advance(space, k);
    if (loss_val != nullptr || e.cfg.general.report_frequency > 0) {
      float const loss = float(t.last_advance_loss(space));
      if (loss_val) *loss_val = loss;
      report(e, name, loss);
    }
  });
}

ktr_result_t create_model_as_torchfort(char const* name, char const* config_file, int device, bool tf32) {
  CreateOptions o;
  o.torchfort = true, o.tf32 = tf32;
  return create_model(name, config_file, device, Communicator(), o);
}

std::int64_t stream_instances(char const* name) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  auto const it = g_models.find(name != nullptr ? name : "");
  return it == g_models.end() ? -1 : std::int64_t(it->second->instances.made());
}

ktr_result_t set_next_seed(int seed) {
  return guarded([&] {
    KTR_REQUIRE(seed >= 0, "seed", std::to_string(seed) + " is negative");
    g_next_seed = std::uint64_t(seed);
  });
}

void reset_next_seed() {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  g_next_seed.reset();
}

void set_last_error(std::string const& message) { set_error(message); }

ktr_result_t log_metric(char const* name, char const* metric, std::int64_t step, std::string const& value) {
  return guarded([&] {
    Entry const& e = entry(name);
    KTR_REQUIRE(metric != nullptr && metric[0] != '\0', "metric_name", "is null or empty");
    log_line(e, "model: " + std::string(name) + ", step: " + std::to_string(step) + ", " + metric + ": " + value);
  });
}

}  // namespace ktr::capi

using namespace ktr;
using namespace ktr::capi;

extern "C" {

char const* ktr_last_error(void) { return t_error; }

char const* ktr_version(void) { return KTR_VERSION; }

ktr_result_t ktr_create_model(char const* name, char const* config_file, int device) {
  return create_model(name, config_file, device, Communicator());
}

#if defined(KTR_ENABLE_MPI)
ktr_result_t ktr_create_distributed_model(char const* name, char const* config_file, MPI_Comm comm, int device) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised)
    return guarded([] { throw Error("ktr_create_distributed_model: MPI is not initialised (MPI_Init first)"); });
  // MPI initialised for the main thread alone (MPI_THREAD_SINGLE or FUNNELED, as MPI_Init gives): ktr's
  // collectives must run on the calling thread, so Kokkos starts there rather than on a worker of ktr's own.
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  CreateOptions o;
  o.own_thread = provided >= MPI_THREAD_SERIALIZED;
  return create_model(name, config_file, device, Communicator(comm), o);
}

ktr_result_t ktr_create_distributed_model_F(char const* name, char const* config_file, int comm, int device) {
  return ktr_create_distributed_model(name, config_file, MPI_Comm_f2c(MPI_Fint(comm)), device);
}

}  // extern "C"

namespace ktr::capi {
ktr_result_t create_distributed_model_as_torchfort(char const* name, char const* config_file, int comm_f,
                                                   int device, bool tf32) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised)
    return guarded(
        [] { throw Error("torchfort_create_distributed_model: MPI is not initialised (MPI_Init first)"); });
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  CreateOptions o;
  o.own_thread = provided >= MPI_THREAD_SERIALIZED, o.torchfort = true, o.tf32 = tf32;
  return create_model(name, config_file, device, Communicator(MPI_Comm_f2c(MPI_Fint(comm_f))), o);
}
}  // namespace ktr::capi

extern "C" {
#else
}  // extern "C"

namespace ktr::capi {
ktr_result_t create_distributed_model_as_torchfort(char const*, char const*, int, int, bool) {
  return guarded([] {
    throw NotSupported("torchfort_create_distributed_model: this ktr was built without MPI (-Dktr_ENABLE_MPI=ON)");
  });
}
}  // namespace ktr::capi

extern "C" {

ktr_result_t ktr_create_distributed_model_F(char const*, char const*, int, int) {
  return guarded([] {
    throw NotSupported("ktr_create_distributed_model: this ktr was built without MPI (-Dktr_ENABLE_MPI=ON)");
  });
}
#endif

ktr_result_t ktr_train(char const* name, void* input, std::int64_t input_dim, std::int64_t const* input_shape,
                       ktr_datatype_t input_dtype, void* label, std::int64_t label_dim,
                       std::int64_t const* label_shape, ktr_datatype_t label_dtype, float* loss_val,
                       void* stream) {
  Array x, y;
  ktr_result_t const r = guarded([&] {
    x = c_array(input, input_dim, input_shape, input_dtype, "input");
    y = c_array(label, label_dim, label_shape, label_dtype, "label");
  });
  return r != KTR_RESULT_SUCCESS ? r : train(name, x, y, loss_val, stream);
}

ktr_result_t ktr_inference(char const* name, void* input, std::int64_t input_dim, std::int64_t const* input_shape,
                           ktr_datatype_t input_dtype, void* output, std::int64_t output_dim,
                           std::int64_t const* output_shape, ktr_datatype_t output_dtype, void* stream) {
  Array x, out;
  ktr_result_t const r = guarded([&] {
    x = c_array(input, input_dim, input_shape, input_dtype, "input");
    out = c_array(output, output_dim, output_shape, output_dtype, "output");
  });
  return r != KTR_RESULT_SUCCESS ? r : inference(name, x, out, stream);
}

ktr_result_t ktr_push(char const* name, void* input, std::int64_t input_dim, std::int64_t const* input_shape,
                      ktr_datatype_t input_dtype, void* label, std::int64_t label_dim,
                      std::int64_t const* label_shape, ktr_datatype_t label_dtype, void* stream) {
  Array x, y;
  ktr_result_t const r = guarded([&] {
    x = c_array(input, input_dim, input_shape, input_dtype, "input");
    y = c_array(label, label_dim, label_shape, label_dtype, "label");
  });
  return r != KTR_RESULT_SUCCESS ? r : push(name, x, y, stream);
}

namespace {
// A binding's description as an Array (arrays.hpp's one builder).
ktr_result_t described(ktr_array_t const* d, char const* what, Array& a) {
  return guarded([&] { a = described_array(d, what); });
}
}  // namespace

ktr_result_t ktr_train_array(char const* name, ktr_array_t const* input, ktr_array_t const* label, float* loss_val,
                             void* stream) {
  Array x, y;
  ktr_result_t r = described(input, "input", x);
  if (r == KTR_RESULT_SUCCESS) r = described(label, "label", y);
  return r != KTR_RESULT_SUCCESS ? r : train(name, x, y, loss_val, stream);
}

ktr_result_t ktr_inference_array(char const* name, ktr_array_t const* input, ktr_array_t const* output,
                                 void* stream) {
  Array x, out;
  ktr_result_t r = described(input, "input", x);
  if (r == KTR_RESULT_SUCCESS) r = described(output, "output", out);
  return r != KTR_RESULT_SUCCESS ? r : inference(name, x, out, stream);
}

ktr_result_t ktr_push_array(char const* name, ktr_array_t const* input, ktr_array_t const* label, void* stream) {
  Array x, y;
  ktr_result_t r = described(input, "input", x);
  if (r == KTR_RESULT_SUCCESS) r = described(label, "label", y);
  return r != KTR_RESULT_SUCCESS ? r : push(name, x, y, stream);
}

ktr_result_t ktr_binding_error(char const* message) {
  return guarded([&] { throw Error(message ? message : "the language binding failed"); });
}

ktr_result_t ktr_train_steps(char const* name, int k, float* loss_val, void* stream) {
  return train_steps(name, k, loss_val, stream);
}

ktr_result_t ktr_save_model(char const* name, char const* file) {
  return guarded([&] {
    Entry& e = entry(name);
    KTR_REQUIRE(file != nullptr, "file", "is a null pointer");
    KTR_REQUIRE(e.trainer != nullptr, "model '" + std::string(name) + "'", "has no weights yet (train it first)");
    e.instances.fence();  // steps enqueued on the caller's streams finish before the weights are read
    ExecSpace const space;
    Trainer& t = *e.trainer;
    // export_weights refuses non-finite weights: the file is then left as it was.
    write_safetensors(file, export_weights(t.model(), download(space, t.model().arena().params()), t.config()));
  });
}

ktr_result_t ktr_load_model(char const* name, char const* file) {
  return guarded([&] {
    Entry& e = entry(name);
    KTR_REQUIRE(file != nullptr, "file", "is a null pointer");
    SafeTensors const st = read_safetensors(file);
    e.instances.fence();  // no step on a caller's stream is running while the weights are replaced
    auto const recorded = st.metadata.find("ktr.task");  // the task first: a classifier's shapes differ anyway
    std::unique_ptr<Trainer> fresh;
    if (!e.trainer) {  // weights before any training (create, load, infer): the task from the file
      KTR_REQUIRE(recorded != st.metadata.end(), file,
                  "records no task (ktr.task), and '" + std::string(name) + "' has seen no batch to tell");
      fresh = Trainer::untrained(ExecSpace(), untrained_config(e, recorded->second == "regression"),
                                 options_of(e.cfg, e.torchfort), e.comm);
    }
    Trainer& t = fresh ? *fresh : *e.trainer;
    char const* const task = t.config().task == Task::regression ? "regression" : "classification";
    KTR_REQUIRE(recorded == st.metadata.end() || recorded->second == task, file,
                "holds a " + escaped(recorded->second) + " model, '" + std::string(name) + "' is a " + task);
    ImportedWeights const w = import_weights(t.model(), st, file);
    t.set_weights(ExecSpace(), w.params, w.has_transform ? &w.norm : nullptr, file);
    if (fresh) e.trainer = std::move(fresh);  // kept once the weights are in
  });
}

ktr_result_t ktr_save_checkpoint(char const* name, char const* directory) {
  return guarded([&] {
    Entry& e = entry(name);
    KTR_REQUIRE(directory != nullptr, "directory", "is a null pointer");
    KTR_REQUIRE(e.trainer != nullptr, "model '" + std::string(name) + "'", "has nothing to save yet");
    RunDirectoryState state;
    state.config_text = e.config_text;
    state.inference_calls = e.inference_calls;
    e.instances.fence();  // steps enqueued on the caller's streams finish before the run is read
    save_run_directory(ExecSpace(), directory, *e.trainer, e.buffer.get(), state);
  });
}

ktr_result_t ktr_load_checkpoint(char const* name, char const* directory, std::int64_t* step_train,
                                 std::int64_t* step_inference) {
  return guarded([&] {
    Entry& e = entry(name);
    KTR_REQUIRE(directory != nullptr, "directory", "is a null pointer");
    RunDirectory const saved = read_run_directory(directory);
    std::string const& path = saved.checkpoint_path;
    RunConfig config = run_config(saved.checkpoint, path);
    config.precision = e.cfg.run.precision;  // the model's (its file's, checked at creation), not the saved run's
    ModelPlan const plan = Model::plan(config.model, 1);
    KTR_REQUIRE(plan.description == Model::plan(e.cfg.run.model, 1).description, path,
                "holds the model '" + config.model + "', the configuration of '" + std::string(name) + "' says '" +
                    e.cfg.run.model + "'");
    RunDirectoryState const& st = saved.state;
    if (st.has_buffer)
      KTR_REQUIRE(st.buffer_capacity == e.cfg.general.buffer_size && st.buffer_task == config.task &&
                      st.buffer_sample == plan.input.size() && st.buffer_width == plan.output_width,
                  saved.state_path,
                  "holds a replay buffer of " + std::to_string(st.buffer_capacity) + " samples of " +
                      std::to_string(st.buffer_sample) + " values and " + std::to_string(st.buffer_width) +
                      " targets; the model needs " + std::to_string(e.cfg.general.buffer_size) + " of " +
                      std::to_string(plan.input.size()) + " and " + std::to_string(plan.output_width));
    e.instances.fence();  // no step on a caller's stream is running while the run is replaced
    ExecSpace const space;
    auto t = Trainer::resume(space, saved.checkpoint, path, config, DeviceDataset{}, DeviceDataset{},
                             options_of(e.cfg, e.torchfort), e.comm);
    std::unique_ptr<ReplayBuffer> buffer;
    if (st.has_buffer) {
      buffer = std::make_unique<ReplayBuffer>(space, st.buffer_capacity, t->model().input_shape(1), config.task,
                                              t->model().output_width());
      buffer->restore(space, st.buffer, saved.state_path);
    }
    e.trainer = std::move(t);  // nothing changes before everything has been read and checked
    e.buffer = std::move(buffer);
    e.inference_calls = st.inference_calls;
    if (step_train) *step_train = e.torchfort ? train_calls(e) : e.trainer->step();  // TorchFort counts calls
    if (step_inference) *step_inference = st.inference_calls;
  });
}

ktr_result_t ktr_destroy_model(char const* name) {
  return guarded([&] {
    std::string const n = name_of(name);
    KTR_REQUIRE(g_models.count(n) == 1, "model '" + n + "'", "does not exist");
    g_models.at(n)->instances.fence();
    g_models.erase(n);
  });
}

ktr_result_t ktr_finalize(void) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  ktr_result_t const result = guarded([&] {
    if (Kokkos::is_initialized() && compat::usable_on_this_thread()) {
      ExecSpace().fence();
      for (auto const& model : g_models) model.second->instances.fence();
    }
    g_models.clear();
    if (g_runtime) g_finalized = true;
    g_runtime.reset();  // finalises Kokkos if ktr initialised it (on its worker, where it started it)
  });
  if (g_worker != nullptr && !g_runtime) {
    delete g_worker;  // joins the thread
    g_worker = nullptr;
  }
  return result;
}

}  // extern "C"
