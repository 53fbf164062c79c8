// The ktr command line entry point. An MPI build initialises MPI here, for the CLI's own runs (the library only
// uses the communicator it is handed), and turns a failure on any rank into the end of the whole job.
#include "apps/cli.hpp"

#include <ktr/train/runtime.hpp>

#if defined(KTR_ENABLE_MPI)
#include <mpi.h>

#include <cstdio>
#endif

int main(int argc, char* argv[]) {
  ktr::adopt_host_wait_policy(argv);  // may execute ktr again with GOMP_SPINCOUNT set, before anything else
#if defined(KTR_ENABLE_MPI)
  MPI_Init(&argc, &argv);
  int const rc = ktr::cli::run(argc, argv);  // prints its error, on whichever rank it happened
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  // 0 (done) and 130 (interrupted) are reached by every rank together; anything else may be one rank's failure,
  // with the others waiting in a collective: end them all rather than hang.
  if (ranks > 1 && rc != 0 && rc != 130) {
    std::fflush(stdout), std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, rc);
  }
  MPI_Finalize();
  return rc;
#else
  return ktr::cli::run(argc, argv);
#endif
}
