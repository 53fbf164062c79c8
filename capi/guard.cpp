// The C API's boundary: see guard.hpp.
#include "guard.hpp"

#include "../backends/device_info.hpp"
#include "../backends/kokkos_compat.hpp"
#include "../config/yaml_config.hpp"
#include "../train/runtime.hpp"
#include "worker.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>

namespace ktr::capi {

namespace {

// The calling thread's last failure: a fixed buffer, so that nothing is destroyed with the thread (an atexit
// hook that ran after the C runtime freed a thread_local std::string wrote into freed memory).
constexpr std::size_t kErrorBytes = 4096;
thread_local char t_error[kErrorBytes] = "";
std::unique_ptr<Runtime> g_runtime;  // set when ktr initialised Kokkos (on g_worker)
Worker* g_worker = nullptr;          // runs every call once ktr initialised Kokkos; never destroyed at exit
bool g_exit_hook = false;
bool g_finalized = false;  // ktr finalised the Kokkos it started: Kokkos cannot start again in this process

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

}  // namespace

std::recursive_mutex& api_mutex() {
  static auto* const m = new std::recursive_mutex;  // never destroyed: calls at exit (ktr_finalize) still lock it
  return *m;
}

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

char const* last_error() { return t_error; }

bool on_worker() { return g_worker != nullptr && g_worker->on_worker(); }

// thread, which must be one that can run Kokkos work (Kokkos 3.4's OpenMP backend: the one that initialised it).
ktr_result_t guarded(std::function<void()> const& f) {
  std::lock_guard<std::recursive_mutex> lock(api_mutex());
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

ktr_result_t finalize_runtime(std::function<void()> const& before) {
  std::lock_guard<std::recursive_mutex> lock(api_mutex());
  ktr_result_t const result = guarded([&] {
    before();
    if (g_runtime) g_finalized = true;
    g_runtime.reset();  // finalises Kokkos if ktr initialised it (on its worker, where it started it)
  });
  if (g_worker != nullptr && !g_runtime) {
    delete g_worker;  // joins the thread
    g_worker = nullptr;
  }
  return result;
}

}  // namespace ktr::capi
