// The C API's MPI entry points: data-parallel models over a communicator (an MPI build), or NOT_SUPPORTED.
#if defined(KTR_ENABLE_MPI)
#include <mpi.h>  // first: ktr_c.h then declares ktr_create_distributed_model(..., MPI_Comm, ...)
#endif

#include "../core/types.hpp"
#include "api.hpp"
#include "guard.hpp"
#include "rl_systems.hpp"
#include "torchfort/torchfort_rl.h"

namespace ktr::capi {

namespace {

#if defined(KTR_ENABLE_MPI)
// A model over `comm`, from ktr's door or TorchFort's (`call` names it): MPI must be initialised; where it allows
// the main thread alone (MPI_THREAD_SINGLE or FUNNELED, as MPI_Init gives), ktr's collectives must run on the
// calling thread, so Kokkos starts there rather than on a worker of ktr's own.
// MPI initialised (else the failure), and whether Kokkos may start on a worker thread of ktr's.
ktr_result_t mpi_ready(char const* call, bool& own_thread) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised)
    return guarded([&] { throw Error(std::string(call) + ": MPI is not initialised (MPI_Init first)"); });
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  own_thread = provided >= MPI_THREAD_SERIALIZED;
  return KTR_RESULT_SUCCESS;
}

ktr_result_t create_over(char const* call, char const* name, char const* config_file, MPI_Comm comm, int device,
                         CreateOptions o) {
  ktr_result_t const r = mpi_ready(call, o.own_thread);
  return r != KTR_RESULT_SUCCESS ? r : create_model(name, config_file, device, Communicator(comm), o);
}

// An RL system over `comm` (rl_systems.hpp), from ktr's door or TorchFort's.
ktr_result_t rl_over(char const* call, char const* name, char const* config_file, MPI_Comm comm,
                     std::int64_t n_envs, int device) {
  bool own_thread = true;
  ktr_result_t const r = mpi_ready(call, own_thread);
  return r != KTR_RESULT_SUCCESS
             ? r
             : create_rl_system(name, config_file, device, n_envs, Communicator(comm), own_thread,
                                /*torchfort=*/std::string(call).rfind("torchfort", 0) == 0);
}
#else
ktr_result_t without_mpi(char const* call) {
  return guarded(
      [&] { throw NotSupported(std::string(call) + ": this ktr was built without MPI (-Dktr_ENABLE_MPI=ON)"); });
}
#endif

}  // namespace

ktr_result_t create_distributed_model_as_torchfort(char const* name, char const* config_file, int comm_f,
                                                   int device, bool tf32) {
#if defined(KTR_ENABLE_MPI)
  CreateOptions o;
  o.torchfort = true, o.tf32 = tf32;
  return create_over("torchfort_create_distributed_model", name, config_file, MPI_Comm_f2c(MPI_Fint(comm_f)),
                     device, o);
#else
  (void)name, (void)config_file, (void)comm_f, (void)device, (void)tf32;
  return without_mpi("torchfort_create_distributed_model");
#endif
}

}  // namespace ktr::capi

using namespace ktr::capi;

extern "C" {

#if defined(KTR_ENABLE_MPI)
ktr_result_t ktr_create_distributed_model(char const* name, char const* config_file, MPI_Comm comm, int device) {
  return create_over("ktr_create_distributed_model", name, config_file, comm, device, CreateOptions{});
}

ktr_result_t ktr_rl_create_distributed_system(char const* name, char const* config_file, MPI_Comm comm,
                                              int64_t n_envs, int device) {
  return rl_over("ktr_rl_create_distributed_system", name, config_file, comm, n_envs, device);
}

torchfort_result_t torchfort_rl_off_policy_create_distributed_system(char const* name, char const* config_fname,
                                                                     MPI_Comm comm, int model_device, int) {
  int const device =
      ktr::device_is_host || model_device == TORCHFORT_DEVICE_CPU ? KTR_DEVICE_DEFAULT : model_device;
  char const* call = "torchfort_rl_off_policy_create_distributed_system";
  return torchfort_result_t(torchfort_reported(call, rl_over(call, name, config_fname, comm, 0, device)));
}
#endif

ktr_result_t ktr_create_distributed_model_F(char const* name, char const* config_file, int comm, int device) {
#if defined(KTR_ENABLE_MPI)
  return ktr_create_distributed_model(name, config_file, MPI_Comm_f2c(MPI_Fint(comm)), device);
#else
  (void)name, (void)config_file, (void)comm, (void)device;
  return without_mpi("ktr_create_distributed_model");
#endif
}

ktr_result_t ktr_rl_create_distributed_system_F(char const* name, char const* config_file, int comm,
                                                int64_t n_envs, int device) {
#if defined(KTR_ENABLE_MPI)
  return ktr_rl_create_distributed_system(name, config_file, MPI_Comm_f2c(MPI_Fint(comm)), n_envs, device);
#else
  (void)name, (void)config_file, (void)comm, (void)n_envs, (void)device;
  return without_mpi("ktr_rl_create_distributed_system");
#endif
}

torchfort_result_t torchfort_rl_off_policy_create_distributed_system_F(char const* name, char const* config_fname,
                                                                       int comm, int model_device, int rb_device) {
#if defined(KTR_ENABLE_MPI)
  return torchfort_rl_off_policy_create_distributed_system(name, config_fname, MPI_Comm_f2c(MPI_Fint(comm)),
                                                           model_device, rb_device);
#else
  (void)name, (void)config_fname, (void)comm, (void)model_device, (void)rb_device;
  char const* call = "torchfort_rl_off_policy_create_distributed_system";
  return torchfort_result_t(torchfort_reported(call, without_mpi(call)));
#endif
}

}  // extern "C"
