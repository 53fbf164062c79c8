// The C API's boundary: every entry point runs under one lock, on ktr's worker thread where ktr started Kokkos,
// and turns every exception into a result and the calling thread's message (ktr_last_error). Kokkos is started
// here when the application has not started it, and finalised by ktr_finalize or at exit.
#pragma once

#include "ktr_c.h"

#include "../core/error.hpp"

#include <functional>
#include <mutex>
#include <string>

namespace ktr::capi {

/// A request this build cannot serve (KTR_RESULT_NOT_SUPPORTED).
class NotSupported : public Error {
 public:
  using Error::Error;
};

/// The lock every call holds (recursive: a call may make another).
std::recursive_mutex& api_mutex();
/// Sets the calling thread's message; control characters (from a file's bytes) are written as \xNN.
void set_error(std::string const& message);
/// The calling thread's last failure message ("" if none).
char const* last_error();

/// Runs `f` as a call: under the lock, on the thread that runs Kokkos work; every exception becomes a result.
ktr_result_t guarded(std::function<void()> const& f);

/// Kokkos for `device` (KTR_DEVICE_DEFAULT, KTR_DEVICE_CPU or an index), checked first, initialised here unless
/// the application did (on a worker thread of ktr's own where `own_thread`).
void ensure_runtime(int device, bool own_thread);
/// True on ktr's worker thread (the calls' thread where ktr started Kokkos).
bool on_worker();
/// ktr_finalize: `before` (the models go) runs as a call, then Kokkos is finalised if ktr started it and its
/// worker joined.
ktr_result_t finalize_runtime(std::function<void()> const& before);

}  // namespace ktr::capi
