// The C API's entry points on described arrays, shared by the C functions (ktr_c.cpp builds row-major Arrays) and
// the Fortran binding (fortran.cpp builds them from C descriptors). Each returns a ktr_result_t and sets the
// calling thread's ktr_last_error().
#pragma once

#include "arrays.hpp"

#include <cstdint>
#include <string>

namespace ktr::capi {

/// `own_thread`: where ktr starts Kokkos, it may do so on a worker thread of its own that then runs every call
/// (false for a distributed model whose MPI allows calls from the main thread only: Kokkos then starts on the
/// calling thread, and calls from other threads are refused by name).
/// How a model is created: by ktr's own door, or TorchFort's (torchfort.cpp), which needs the configuration's
/// loss and optimizer sections (its first train fails without them) and may ask for tf32 matmuls.
struct CreateOptions {
  bool own_thread = true;
  bool torchfort = false;
  bool tf32 = false;  ///< where the build can (CUDA); ignored elsewhere, as PyTorch ignores it on a CPU
};
ktr_result_t create_model(char const* name, char const* config_file, int device, Communicator const& comm,
                          CreateOptions const& options = {});
/// TorchFort's creation calls: one rank, or the ranks of a Fortran communicator (MPI builds).
ktr_result_t create_model_as_torchfort(char const* name, char const* config_file, int device, bool tf32);
ktr_result_t create_distributed_model_as_torchfort(char const* name, char const* config_file, int comm_f,
                                                   int device, bool tf32);
/// The seed of every model created from here on (TorchFort's torchfort_set_manual_seed), over the file's.
ktr_result_t set_next_seed(int seed);
/// Models created from here on take their file's seed again (tests).
void reset_next_seed();
/// The execution space instances model `name` has made for its callers' streams (one per stream, kept for the
/// model's life), or -1 if there is no such model (tests).
std::int64_t stream_instances(char const* name);
/// Sets the calling thread's ktr_last_error() (a binding's own refusal).
void set_last_error(std::string const& message);
/// TorchFort's layer (torchfort.cpp): `r`, printed to stderr as TorchFort prints a failure ("TORCHFORT::ERROR:
/// call: ktr_last_error()") unless KTR_QUIET=1; and a refusal of the layer's own, set as the last error first.
ktr_result_t torchfort_reported(char const* call, ktr_result_t r);
/// KTR_QUIET=1: the TorchFort layer prints nothing (ktr_* never prints).
bool torchfort_quiet();
ktr_result_t torchfort_refused(char const* call, ktr_result_t r, std::string const& message);
/// TorchFort's torchfort_wandb_log_*: "model: NAME, step: STEP, METRIC: VALUE" appended to the model's metric log
/// ($TORCHFORT_LOGDIR/torchfort.log, where general.enable_wandb_hook is on; rank 0 writes), else nothing.
ktr_result_t log_metric(char const* name, char const* metric, std::int64_t step, std::string const& value);
ktr_result_t train(char const* name, Array const& x, Array const& y, float* loss_val, void* stream);
ktr_result_t inference(char const* name, Array const& x, Array const& out, void* stream);
ktr_result_t push(char const* name, Array const& x, Array const& y, void* stream);
ktr_result_t train_steps(char const* name, int k, float* loss_val, void* stream);

}  // namespace ktr::capi
