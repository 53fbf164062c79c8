// The C API's entry points on described arrays, shared by the C functions (ktr_c.cpp builds row-major Arrays) and
// the Fortran binding (fortran.cpp builds them from C descriptors). Each returns a ktr_result_t and sets the
// calling thread's ktr_last_error().
#pragma once

#include "arrays.hpp"

namespace ktr::capi {

/// `own_thread`: where ktr starts Kokkos, it may do so on a worker thread of its own that then runs every call
/// (false for a distributed model whose MPI allows calls from the main thread only: Kokkos then starts on the
/// calling thread, and calls from other threads are refused by name).
ktr_result_t create_model(char const* name, char const* config_file, int device, Communicator const& comm,
                          bool own_thread = true);
ktr_result_t train(char const* name, Array const& x, Array const& y, float* loss_val, void* stream);
ktr_result_t inference(char const* name, Array const& x, Array const& out, void* stream);
ktr_result_t push(char const* name, Array const& x, Array const& y, void* stream);
ktr_result_t train_steps(char const* name, int k, float* loss_val, void* stream);

}  // namespace ktr::capi
