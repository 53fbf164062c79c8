/* Data-parallel training from C: every MPI rank creates the same distributed model and trains it on batches of
 * its own; each update averages all ranks' gradients, so every rank ends with the same model. Then each rank fills
 * its own replay buffer (its shard) and ktr_train_steps draws every rank's share of each update from it. The
 * program checks that the ranks' models agree to the last bit after both, that every rank reads back the same
 * loss (the mean over the ranks), and that the surrogate learnt.
 *   mpirun -np 2 mpi_surrogate CONFIG     (mpi.yaml: general.batch_size 128, i.e. 64 per rank) */
#include <mpi.h>

#include <ktr/ktr_c.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define B 64

static unsigned s; /* each rank's sample stream */

static void samples(float* x, float* y, int n) {
  for (int i = 0; i < n; ++i) {
    for (int f = 0; f < 3; ++f) {
      s = s * 1103515245u + 12345u;
      x[3 * i + f] = (float)((s >> 16) % 2000) / 1000.0f - 1.0f;
    }
    y[i] = sinf(x[3 * i]) + x[3 * i + 1] * x[3 * i + 2] / 2;
  }
}

/* 1 where every rank holds the same n values, bit for bit. */
static int agree(const float* v, int n) {
  float lo[B], hi[B];
  MPI_Allreduce(v, lo, n, MPI_FLOAT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(v, hi, n, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
  int same = 1;
  for (int i = 0; i < n; ++i) same &= lo[i] == hi[i];
  return same;
}

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
  check(ktr_create_distributed_model("dp", argv[1], MPI_COMM_WORLD, KTR_DEVICE_DEFAULT),
        "ktr_create_distributed_model");
  float x[B * 3], y[B], loss = 0, first = 0;
  int64_t xs[2] = {B, 3}, ys[2] = {B, 1};
  s = 7u + 1000u * (unsigned)rank; /* each rank its own samples */
  for (int step = 0; step < 300; ++step) {
    samples(x, y, B);
    check(ktr_train("dp", x, 2, xs, KTR_FLOAT, y, 2, ys, KTR_FLOAT, &loss, NULL), "ktr_train");
    if (step == 0) first = loss;
  }
  float pred[B], probe[B * 3];
  /* The same probe on every rank (rank 0's last batch): the predictions must agree bit for bit. */
  for (int i = 0; i < B * 3; ++i) probe[i] = x[i];
  MPI_Bcast(probe, B * 3, MPI_FLOAT, 0, MPI_COMM_WORLD);
  check(ktr_inference("dp", probe, 2, xs, KTR_FLOAT, pred, 2, ys, KTR_FLOAT, NULL), "ktr_inference");
  int const same = agree(pred, B);
  /* Each rank's replay buffer holds its own 4 x 64 samples: the update takes 64 from each. */
  for (int i = 0; i < 4; ++i) {
    samples(x, y, B);
    check(ktr_push("dp", x, 2, xs, KTR_FLOAT, y, 2, ys, KTR_FLOAT, NULL), "ktr_push");
  }
  float buffered = 0;
  check(ktr_train_steps("dp", 64, &buffered, NULL), "ktr_train_steps");
  int const same_loss = agree(&buffered, 1);
  check(ktr_inference("dp", probe, 2, xs, KTR_FLOAT, pred, 2, ys, KTR_FLOAT, NULL), "ktr_inference");
  int const same_buffered = agree(pred, B);
  if (rank == 0)
    printf(
        "%d ranks: loss %.4g -> %.4g, the ranks' models %s; from per-rank replay buffers: loss %.4g (%s on "
        "every rank), the models %s\n",
        ranks, first, loss, same ? "agree" : "DIFFER", buffered, same_loss ? "the same" : "DIFFERENT",
        same_buffered ? "agree" : "DIFFER");
  check(ktr_finalize(), "ktr_finalize");
  MPI_Finalize();
  return same && same_loss && same_buffered && loss < first / 5 && buffered < first / 5 ? 0 : 1;
}
