/* Data-parallel training from C: every MPI rank creates the same distributed model and trains it on batches of
 * its own; each update averages all ranks' gradients, so every rank ends with the same model. The program checks
 * that (the ranks' predictions agree to the last bit) and that the surrogate learnt.
 *   mpirun -np 2 mpi_surrogate CONFIG */
#include <mpi.h>

#include <ktr/ktr_c.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define B 64

static void check(ktr_result_t r, const char* what) {
  if (r != KTR_RESULT_SUCCESS) {
    fprintf(stderr, "mpi_surrogate: %s failed (%d): %s\n", what, (int)r, ktr_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  ktr_result_t r = ktr_create_distributed_model("dp", argv[1], MPI_COMM_WORLD, KTR_DEVICE_CPU);
  if (r == KTR_RESULT_NOT_SUPPORTED) r = ktr_create_distributed_model("dp", argv[1], MPI_COMM_WORLD, 0);
  check(r, "ktr_create_distributed_model");
  float x[B * 3], y[B], loss = 0, first = 0;
  int64_t xs[2] = {B, 3}, ys[2] = {B, 1};
  unsigned s = 7u + 1000u * (unsigned)rank; /* each rank its own samples */
  for (int step = 0; step < 300; ++step) {
    for (int i = 0; i < B; ++i) {
      for (int f = 0; f < 3; ++f) {
        s = s * 1103515245u + 12345u;
        x[3 * i + f] = (float)((s >> 16) % 2000) / 1000.0f - 1.0f;
      }
      y[i] = sinf(x[3 * i]) + x[3 * i + 1] * x[3 * i + 2] / 2;
    }
    check(ktr_train("dp", x, 2, xs, KTR_FLOAT, y, 2, ys, KTR_FLOAT, &loss, NULL), "ktr_train");
    if (step == 0) first = loss;
  }
  float pred[B];
  check(ktr_inference("dp", x, 2, xs, KTR_FLOAT, pred, 2, ys, KTR_FLOAT, NULL), "ktr_inference");
  /* The same probe on every rank (rank 0's last batch): the predictions must agree bit for bit. */
  MPI_Bcast(x, B * 3, MPI_FLOAT, 0, MPI_COMM_WORLD);
  check(ktr_inference("dp", x, 2, xs, KTR_FLOAT, pred, 2, ys, KTR_FLOAT, NULL), "ktr_inference");
  float lo[B], hi[B];
  MPI_Allreduce(pred, lo, B, MPI_FLOAT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(pred, hi, B, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
  int same = 1;
  for (int i = 0; i < B; ++i) same &= lo[i] == hi[i];
  if (rank == 0)
    printf("%d ranks: loss %.4g -> %.4g, the ranks' models %s\n", ranks, first, loss, same ? "agree" : "DIFFER");
  check(ktr_finalize(), "ktr_finalize");
  MPI_Finalize();
  return same && loss < first / 5 ? 0 : 1;
}
