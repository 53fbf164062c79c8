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
#include "../backends/kokkos_compat.hpp"
#include "../backends/region.hpp"
#include "../config/yaml_config.hpp"
#include "../core/file.hpp"
#include "../train/interop.hpp"
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
#include <map>
#include <mutex>
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
  // The replay buffer: capacity general.buffer_size, rows written at head (mod capacity).
  Kokkos::View<float**, Kokkos::LayoutRight, MemSpace> buffer_x, buffer_values;
  Kokkos::View<std::int32_t*, MemSpace> buffer_labels;
  std::int64_t head = 0, filled = 0;
  Task buffer_task = Task::classification;
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
    set_error("this thread cannot run Kokkos work: the application initialised Kokkos (" +
              std::string(ExecSpace::name()) +
              ") on another thread, and Kokkos 3.4's OpenMP backend runs only there; call ktr from that thread");
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
void ensure_runtime(int device) {
  int const gpus = gpu_count();
  bool const gpu_build = !device_is_host;
  if (!gpu_build) {
    if (device != KTR_DEVICE_CPU && device != 0)
      throw NotSupported("device " + std::to_string(device) + ": this build runs on the host (" +
                         ExecSpace::name() + "): use KTR_DEVICE_CPU (-1) or 0");
  } else {
    if (device == KTR_DEVICE_CPU)
      throw NotSupported(std::string("device KTR_DEVICE_CPU: this build runs on the GPU (") + ExecSpace::name() +
                         "); a host-only build of ktr runs on the CPU");
    KTR_REQUIRE(device >= 0 && device < gpus, "device",
                std::to_string(device) + " is not a GPU index here (" + std::to_string(gpus) + " GPUs)");
  }
  if (!Kokkos::is_initialized()) {
    if (g_finalized)
      throw Error(
          "ktr_finalize() has finalised Kokkos, which cannot start again in this process: create every "
          "model before ktr_finalize()");
    start_runtime(gpu_build ? device : -1);
    if (!g_exit_hook) std::atexit(finalize_at_exit), g_exit_hook = true;
  } else if (gpu_build && device != kokkos_gpu()) {
    throw NotSupported("device " + std::to_string(device) + ": Kokkos runs on GPU " +
                       std::to_string(kokkos_gpu()) + " in this process");
  }
}

TrainerOptions options_of(FileConfig const& c) {
  TrainerOptions o;
  o.steps_per_dispatch = c.general.steps_per_dispatch;
  o.evaluate = false;
  return o;
}

// The model's Trainer, created by its first batch: the task from the targets, the transform fitted on them.
Trainer& trainer_for(ExecSpace const& space, Entry& e, Array const& x, Array const& y) {
  if (e.trainer) return *e.trainer;
  RunConfig run = e.cfg.run;
  ModelPlan const plan = Model::plan(run.model, 1);
  DeviceDataset const first = batch_of(space, x, y, plan);
  bool const labels = first.task() == Task::classification;
  bool const regression_loss = e.cfg.loss != "default" && e.cfg.loss != "cross_entropy";
  if (regression_loss && labels)
    throw Error(e.cfg.path + ": loss " + e.cfg.loss + " needs float targets, the labels are integers");
  if (e.cfg.loss == "cross_entropy" && !labels)
    throw Error(e.cfg.path + ": loss cross_entropy needs integer class labels, the targets are floats");
  // Each rank's batch: general.batch_size, or without it the first batch's size; an update takes every rank's.
  std::int64_t const per_rank = e.cfg.general.batch_size > 0 ? e.cfg.general.batch_size : first.count;
  run.batch = per_rank * e.comm.size();
  e.trainer = std::make_unique<Trainer>(space, run, first, DeviceDataset{}, options_of(e.cfg), e.comm);
  return *e.trainer;
}

void report(Entry const& e, char const* name, float loss) {
  int const every = e.cfg.general.report_frequency;
  if (every > 0 && e.trainer && e.trainer->step() % every == 0)
    std::printf("ktr: model %s step %lld loss %.6g\n", name, (long long)e.trainer->step(), double(loss));
}

// The replay buffer as a dataset of its filled rows.
DeviceDataset buffer_data(ExecSpace const& space, Entry const& e) {
  auto const rows = std::make_pair<std::int64_t, std::int64_t>(0, std::int64_t(e.filled));
  auto const x = Kokkos::subview(e.buffer_x, rows, Kokkos::ALL);
  Shape const in = e.trainer->model().input_shape(1);
  int const classes = int(e.trainer->model().output_width());
  auto attach = [&](auto const& features) {
    if (e.buffer_task == Task::classification)
      return dataset_from_views(space, features, Kokkos::subview(e.buffer_labels, rows), classes);
    return dataset_from_views(space, features, Kokkos::subview(e.buffer_values, rows, Kokkos::ALL));
  };
  if (in.rank == 2) return attach(x);
  Kokkos::View<float const****, Kokkos::LayoutRight, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> x4(
      x.data(), std::size_t(e.filled), std::size_t(in[1]), std::size_t(in[2]), std::size_t(in[3]));
  return attach(x4);
}

template <class T>
std::vector<T> download_all(ExecSpace const& space, T const* data, std::size_t n) {
  std::vector<T> host(n);
  Kokkos::deep_copy(space, HostView<T*>(host.data(), n),
                    Kokkos::View<T const*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(data, n));
  space.fence();
  return host;
}

template <class T>
void upload_all(ExecSpace const& space, T* data, std::vector<T> const& host) {
  Kokkos::deep_copy(space, Kokkos::View<T*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(data, host.size()),
                    HostView<T const*>(host.data(), host.size()));
  space.fence();
}

}  // namespace

ktr_result_t create_model(char const* name, char const* config_file, int device, Communicator const& comm) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  // First Kokkos (on ktr's worker, unless the application started it), then the model on the thread that runs
  // Kokkos work.
  ktr_result_t const started = guarded([&] { ensure_runtime(device); });
  if (started != KTR_RESULT_SUCCESS) return started;
  return guarded([&] {
    std::string const n = name_of(name);
    KTR_REQUIRE(config_file != nullptr, "config_file", "is a null pointer");
    KTR_REQUIRE(g_models.count(n) == 0, "model '" + n + "'", "exists already (ktr_destroy_model it first)");
    auto e = std::make_unique<Entry>();
    e->config_text = read_regular_file(config_file);
    e->cfg = parse_config(e->config_text, config_file);
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
    (void)Model::plan(e->cfg.run.model, 1);
    if (e->cfg.general.verbose)
      std::printf("ktr: model %s: %s from %s on %s\n", n.c_str(), e->cfg.run.model.c_str(), config_file,
                  device_description().c_str());
    e->comm = comm;
    g_models[n] = std::move(e);
  });
}

ktr_result_t train(char const* name, Array const& x, Array const& y, float* loss_val, void* stream) {
  return guarded([&] {
    Region const region("ktr::capi::train");
    Entry& e = entry(name);
    ExecSpace const space = instance_of_stream(stream);
    Trainer& t = trainer_for(space, e, x, y);
    DeviceDataset const batch = batch_of(space, x, y, t.model(), int(t.model().output_width()));
    t.enqueue_step(space, batch);
    if (loss_val != nullptr || e.cfg.general.report_frequency > 0) {
      float const loss = t.last_loss(space);
      KTR_REQUIRE(
          std::isfinite(loss), "model '" + std::string(name) + "'",
          "diverged: a step's loss or gradient is not finite, so its update was refused (the model is as it "
          "was after step " +
              std::to_string(t.step()) + ")");
      if (loss_val) *loss_val = loss;
      report(e, name, loss);
    }
  });
}

ktr_result_t inference(char const* name, Array const& x, Array const& out, void* stream) {
  return guarded([&] {
    Region const region("ktr::capi::inference");
    Entry& e = entry(name);
    KTR_REQUIRE(e.trainer != nullptr, "model '" + std::string(name) + "'",
                "has not been trained or loaded yet (ktr_train, ktr_push or ktr_load_checkpoint first)");
    ExecSpace const space = instance_of_stream(stream);
    Trainer& t = *e.trainer;
    DeviceDataset const features = features_of(space, x, t.model(), "input");
    Kokkos::View<float**, Kokkos::LayoutRight, MemSpace> values(
        Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "ktr::capi::output"), std::size_t(features.count),
        std::size_t(t.model().output_width()));
    t.predict(space, features, values);
    store_output(space, values, out);
    ++e.inference_calls;
  });
}

ktr_result_t push(char const* name, Array const& x, Array const& y, void* stream) {
  return guarded([&] {
    Region const region("ktr::capi::push");
    Entry& e = entry(name);
    std::int64_t const capacity = e.cfg.general.buffer_size;
    if (capacity == 0)
      throw Error(e.cfg.path +
                  ": general.buffer_size is not set: the model has no "
                  "replay buffer to push to");
    ExecSpace const space = instance_of_stream(stream);
    Trainer& t = trainer_for(space, e, x, y);
    DeviceDataset const batch = batch_of(space, x, y, t.model(), int(t.model().output_width()));
    std::int64_t const n = batch.count, sample = batch.sample_size();
    std::int64_t const width = t.model().output_width();
    if (e.buffer_x.extent(0) == 0) {
      e.buffer_task = batch.task();
      e.buffer_x = decltype(e.buffer_x)(Kokkos::view_alloc(space, "ktr::capi::buffer_x"), std::size_t(capacity),
                                        std::size_t(sample));
      if (e.buffer_task == Task::classification)
        e.buffer_labels = decltype(e.buffer_labels)(Kokkos::view_alloc(space, "ktr::capi::buffer_labels"),
                                                    std::size_t(capacity));
      else
        e.buffer_values = decltype(e.buffer_values)(Kokkos::view_alloc(space, "ktr::capi::buffer_values"),
                                                    std::size_t(capacity), std::size_t(width));
    }
    KTR_REQUIRE(batch.task() == e.buffer_task, "label", "the buffer holds the other kind of targets");
    // Rows head .. head + n (mod capacity); a batch larger than the buffer keeps its last `capacity` samples.
    std::int64_t const skip = n > capacity ? n - capacity : 0, head = e.head;
    auto bx = e.buffer_x;
    auto const fx = batch.features;
    std::int64_t const w = batch.width, c = batch.channels;
    Kokkos::parallel_for(
        "ktr::capi::push_features",
        Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, (n - skip) * sample),
        KOKKOS_LAMBDA(std::int64_t i) {
          std::int64_t const s = skip + i / sample, f = i % sample;
          bx((head + s - skip) % capacity, f) = fx(s, f / (w * c), f / c % w, f % c);
        });
    if (e.buffer_task == Task::classification) {
      auto bl = e.buffer_labels;
      auto const l = batch.labels;
      Kokkos::parallel_for(
          "ktr::capi::push_labels",
          Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, n - skip),
          KOKKOS_LAMBDA(std::int64_t i) { bl((head + i) % capacity) = l(skip + i); });
    } else {
      auto bv = e.buffer_values;
      auto const v = batch.values;
      Kokkos::parallel_for(
          "ktr::capi::push_values",
          Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, (n - skip) * width),
          KOKKOS_LAMBDA(std::int64_t i) {
            bv((head + i / width) % capacity, i % width) = v(skip + i / width, i % width);
          });
    }
    e.head = (e.head + n - skip) % capacity;
    e.filled = std::min(capacity, e.filled + n - skip);
    space.fence();  // the caller may reuse its arrays when the call returns
  });
}

ktr_result_t train_steps(char const* name, int k, float* loss_val, void* stream) {
  return guarded([&] {
    Region const region("ktr::capi::train_steps");
    Entry& e = entry(name);
    KTR_REQUIRE(k > 0, "k", std::to_string(k) + " is not a positive number of steps");
    KTR_REQUIRE(e.trainer != nullptr && e.filled > 0, "model '" + std::string(name) + "'",
                "has an empty replay buffer (ktr_push first)");
    KTR_REQUIRE(e.filled >= e.cfg.general.batch_size, "model '" + std::string(name) + "'",
                "the replay buffer holds " + std::to_string(e.filled) +
                    " samples, fewer than general.batch_size (" + std::to_string(e.cfg.general.batch_size) + ")");
    ExecSpace const space = instance_of_stream(stream);
    Trainer& t = *e.trainer;
    DeviceDataset const data = buffer_data(space, e);
    TrainState& state = t.session().state();
    int const max_k = e.cfg.general.steps_per_dispatch;
    int last = 0;
    for (int done = 0; done < k; done += last) {
      last = std::min(max_k, k - done);
      if (e.cfg.general.enable_graphs) {
        dispatch(space, state, t.model(), data, last);
      } else {
        train_steps(space, state, t.model(), data, last);
        state.count_steps(last);
      }
    }
    if (loss_val != nullptr || e.cfg.general.report_frequency > 0) {
      // The one read-back: the last dispatch's losses (one per step and micro-batch), averaged here.
      std::size_t const slots = std::size_t(last) * std::size_t(state.parallel.accumulate);
      std::vector<float> const losses = download_all(space, state.loss.data(), slots);
      double sum = 0;
      for (float l : losses) sum += l;
      float const loss = float(sum / double(slots));
      KTR_REQUIRE(std::isfinite(loss), "model '" + std::string(name) + "'",
                  "diverged: a loss up to step " + std::to_string(t.step()) + " is not finite");
      if (loss_val) *loss_val = loss;
      report(e, name, loss);
    }
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
  return create_model(name, config_file, device, Communicator(comm));
}

ktr_result_t ktr_create_distributed_model_F(char const* name, char const* config_file, int comm, int device) {
  return ktr_create_distributed_model(name, config_file, MPI_Comm_f2c(MPI_Fint(comm)), device);
}
#else
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
// A binding's description as an Array, checked like a C array's.
ktr_result_t described(ktr_array_t const* d, char const* what, Array& a) {
  return guarded([&] {
    KTR_REQUIRE(d != nullptr && d->data != nullptr, what, "is a null pointer");
    KTR_REQUIRE(d->rank >= 1 && d->rank <= kMaxRank, what,
                "has " + std::to_string(d->rank) + " dimensions; 1 to " + std::to_string(kMaxRank));
    KTR_REQUIRE(d->dtype >= KTR_FLOAT && d->dtype <= KTR_INT64, what,
                "has an unknown datatype " + std::to_string(d->dtype));
    a.data = d->data, a.dtype = ktr_datatype_t(d->dtype), a.rank = d->rank;
    for (int i = 0; i < d->rank; ++i) {
      KTR_REQUIRE(d->extent[i] > 0, what, "dimension " + std::to_string(i) + " is empty");
      a.extent[i] = d->extent[i], a.stride[i] = d->stride[i];
    }
  });
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
    ExecSpace const space;
    Trainer& t = *e.trainer;
    std::vector<float> const params = download(space, t.model().arena().params());
    write_safetensors(file, export_weights(t.model(), params, t.config()));
  });
}

ktr_result_t ktr_load_model(char const* name, char const* file) {
  return guarded([&] {
    Entry& e = entry(name);
    KTR_REQUIRE(file != nullptr, "file", "is a null pointer");
    KTR_REQUIRE(e.trainer != nullptr, "model '" + std::string(name) + "'",
                "has not seen a batch yet, so its task is unknown: ktr_train or ktr_push once first, or "
                "ktr_load_checkpoint");
    ExecSpace const space;
    Trainer& t = *e.trainer;
    ImportedWeights const w = import_weights(t.model(), read_safetensors(file), file);
    Kokkos::deep_copy(space, t.model().arena().params(), HostView<float const*>(w.params.data(), w.params.size()));
    space.fence();
  });
}

ktr_result_t ktr_save_checkpoint(char const* name, char const* directory) {
  return guarded([&] {
    Entry& e = entry(name);
    KTR_REQUIRE(directory != nullptr, "directory", "is a null pointer");
    KTR_REQUIRE(e.trainer != nullptr, "model '" + std::string(name) + "'", "has nothing to save yet");
    std::string const dir = directory;
    if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
      throw Error(dir + ": cannot create the checkpoint directory");
    ExecSpace const space;
    e.trainer->save(space, dir + "/model.ckpt");
    write_atomically(dir + "/config.yaml", e.config_text);
    // The replay buffer and the counters: a small text header, then the raw rows.
    std::ostringstream s;
    s << "ktr-capi-buffer 1\n"
      << e.cfg.general.buffer_size << " " << e.buffer_x.extent(1) << " " << e.head << " " << e.filled << " "
      << int(e.buffer_task) << " " << e.inference_calls << " " << (e.buffer_x.extent(0) ? 1 : 0) << "\n";
    std::string bytes = s.str();
    if (e.buffer_x.extent(0)) {
      auto append = [&](void const* p, std::size_t n) { bytes.append(static_cast<char const*>(p), n); };
      auto const xs = download_all(space, e.buffer_x.data(), e.buffer_x.size());
      append(xs.data(), xs.size() * sizeof(float));
      if (e.buffer_task == Task::classification) {
        auto const ls = download_all(space, e.buffer_labels.data(), e.buffer_labels.size());
        append(ls.data(), ls.size() * sizeof(std::int32_t));
      } else {
        auto const vs = download_all(space, e.buffer_values.data(), e.buffer_values.size());
        append(vs.data(), vs.size() * sizeof(float));
      }
    }
    write_atomically(dir + "/state.bin", bytes);
  });
}

ktr_result_t ktr_load_checkpoint(char const* name, char const* directory, std::int64_t* step_train,
                                 std::int64_t* step_inference) {
  return guarded([&] {
    Entry& e = entry(name);
    KTR_REQUIRE(directory != nullptr, "directory", "is a null pointer");
    std::string const dir = directory;
    std::string const bytes = read_regular_file(dir + "/state.bin");
    std::istringstream in(bytes);
    std::string magic;
    int version = 0, task = 0, has_buffer = 0;
    std::int64_t capacity = 0, sample = 0, head = 0, filled = 0, calls = 0;
    in >> magic >> version >> capacity >> sample >> head >> filled >> task >> calls >> has_buffer;
    KTR_REQUIRE(in && magic == "ktr-capi-buffer" && version == 1, dir + "/state.bin", "is not a ktr checkpoint");
    KTR_REQUIRE(capacity == e.cfg.general.buffer_size, dir + "/state.bin",
                "holds a buffer of " + std::to_string(capacity) + " samples, the model's configuration says " +
                    std::to_string(e.cfg.general.buffer_size));
    KTR_REQUIRE(head >= 0 && filled >= 0 && filled <= capacity && (capacity == 0 || head < capacity) &&
                    sample >= 0 && sample <= (std::int64_t(1) << 30) && calls >= 0 && (task == 0 || task == 1),
                dir + "/state.bin", "holds inconsistent counters");
    in.get();  // the newline before the rows
    std::size_t const offset = std::size_t(in.tellg());
    ExecSpace const space;
    auto t =
        Trainer::resume(space, dir + "/model.ckpt", DeviceDataset{}, DeviceDataset{}, options_of(e.cfg), e.comm);
    Entry fresh;
    if (has_buffer) {
      std::int64_t const width = t->model().output_width();
      std::size_t const xs = std::size_t(capacity * sample) * sizeof(float);
      std::size_t const ys = task == int(Task::classification) ? std::size_t(capacity) * sizeof(std::int32_t)
                                                               : std::size_t(capacity * width) * sizeof(float);
      KTR_REQUIRE(bytes.size() == offset + xs + ys, dir + "/state.bin", "is truncated or too long");
      fresh.buffer_task = Task(task);
      fresh.buffer_x = decltype(fresh.buffer_x)(Kokkos::view_alloc(space, "ktr::capi::buffer_x"),
                                                std::size_t(capacity), std::size_t(sample));
      std::vector<float> x(std::size_t(capacity * sample));
      std::memcpy(x.data(), bytes.data() + offset, xs);
      upload_all(space, fresh.buffer_x.data(), x);
      if (fresh.buffer_task == Task::classification) {
        fresh.buffer_labels = decltype(fresh.buffer_labels)(Kokkos::view_alloc(space, "ktr::capi::buffer_labels"),
                                                            std::size_t(capacity));
        std::vector<std::int32_t> l(static_cast<std::size_t>(capacity));
        std::memcpy(l.data(), bytes.data() + offset + xs, ys);
        upload_all(space, fresh.buffer_labels.data(), l);
      } else {
        fresh.buffer_values = decltype(fresh.buffer_values)(Kokkos::view_alloc(space, "ktr::capi::buffer_values"),
                                                            std::size_t(capacity), std::size_t(width));
        std::vector<float> v(std::size_t(capacity * width));
        std::memcpy(v.data(), bytes.data() + offset + xs, ys);
        upload_all(space, fresh.buffer_values.data(), v);
      }
    }
    e.trainer = std::move(t);
    e.buffer_x = fresh.buffer_x, e.buffer_labels = fresh.buffer_labels, e.buffer_values = fresh.buffer_values;
    e.buffer_task = fresh.buffer_task, e.head = head, e.filled = filled, e.inference_calls = calls;
    if (step_train) *step_train = e.trainer->step();
    if (step_inference) *step_inference = calls;
  });
}

ktr_result_t ktr_destroy_model(char const* name) {
  return guarded([&] {
    std::string const n = name_of(name);
    KTR_REQUIRE(g_models.count(n) == 1, "model '" + n + "'", "does not exist");
    ExecSpace().fence();
    g_models.erase(n);
  });
}

ktr_result_t ktr_finalize(void) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  ktr_result_t const result = guarded([&] {
    if (Kokkos::is_initialized() && compat::usable_on_this_thread()) ExecSpace().fence();
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
