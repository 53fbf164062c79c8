// The C API's MPI entry points: data-parallel models over a communicator (an MPI build), or NOT_SUPPORTED.
#if defined(KTR_ENABLE_MPI)
#include <mpi.h>  // first: ktr_c.h then declares ktr_create_distributed_model(..., MPI_Comm, ...)
#endif

#include "api.hpp"
#include "guard.hpp"

namespace ktr::capi {

namespace {

#if defined(KTR_ENABLE_MPI)
// A model over `comm`, from ktr's door or TorchFort's (`call` names it): MPI must be initialised; where it allows
// the main thread alone (MPI_THREAD_SINGLE or FUNNELED, as MPI_Init gives), ktr's collectives must run on the
// calling thread, so Kokkos starts there rather than on a worker of ktr's own.
ktr_result_t create_over(char const* call, char const* name, char const* config_file, MPI_Comm comm, int device,
                         CreateOptions o) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised)
    return guarded([&] { throw Error(std::string(call) + ": MPI is not initialised (MPI_Init first)"); });
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  o.own_thread = provided >= MPI_THREAD_SERIALIZED;
  return create_model(name, config_file, device, Communicator(comm), o);
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
#endif

ktr_result_t ktr_create_distributed_model_F(char const* name, char const* config_file, int comm, int device) {
#if defined(KTR_ENABLE_MPI)
  return ktr_create_distributed_model(name, config_file, MPI_Comm_f2c(MPI_Fint(comm)), device);
#else
  (void)name, (void)config_file, (void)comm, (void)device;
  return without_mpi("ktr_create_distributed_model");
#endif
}

}  // extern "C"
