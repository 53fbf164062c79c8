// The C API (ktr_c.h), by job: guard.cpp (the boundary: one lock, errors, Kokkos started and finalised),
// registry.cpp (named models, created and destroyed), calls.cpp (steps, predictions, pushes on the caller's
// arrays), files.cpp (weights and run directories), distributed.cpp (MPI), torchfort_log.cpp (TorchFort's output
// formats). What is left here: the library's identity and the bindings' own refusals.
#include <ktr/ktr_config.hpp>
#include "api.hpp"
#include "guard.hpp"

using namespace ktr;
using namespace ktr::capi;

extern "C" {

char const* ktr_last_error(void) { return last_error(); }

char const* ktr_version(void) { return KTR_VERSION; }

ktr_result_t ktr_binding_error(char const* message) {
  return guarded([&] { throw Error(message ? message : "the language binding failed"); });
}

}  // extern "C"
