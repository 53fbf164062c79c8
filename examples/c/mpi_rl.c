/* Reinforcement learning over MPI ranks from C: every rank creates the same distributed TD3 system with its own
 * number of environments (rank r runs r + 2), pushes its environments' transitions into its own buffer and trains
 * 16 updates per call; each update averages the ranks' gradients, so the ranks' networks stay equal to the last
 * bit. The states differ between ranks and are normalised by the ranks' merged statistics, the same on every
 * rank. The reward is TorchFort's constant one (1 at every step, each step terminal): the critic must learn Q = 1.
 * The program checks that the ranks' values agree bit for bit, that each rank reads back the same loss (the ranks'
 * mean), and that |Q - 1| < 0.05.
 *   mpirun -np 2 mpi_rl CONFIG     (mpi_rl.yaml: TorchFort's td3.yaml at a smaller buffer) */
#include <mpi.h>

#include <ktr/ktr_c.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_ENVS 8

static void check(ktr_result_t r, const char* what) {
  if (r != KTR_RESULT_SUCCESS) {
    fprintf(stderr, "%s: %s\n", what, ktr_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

/* 1 where every rank holds the same n values, bit for bit. */
static int agree(const float* v, int n) {
  float lo[MAX_ENVS], hi[MAX_ENVS];
  MPI_Allreduce(v, lo, n, MPI_FLOAT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(v, hi, n, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
  int same = 1;
  for (int i = 0; i < n; ++i) same &= lo[i] == hi[i];
  return same;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 2) {
    if (rank == 0) fprintf(stderr, "usage: mpi_rl CONFIG\n");
    MPI_Finalize();
    return 2;
  }
  int const n = rank + 2 > MAX_ENVS ? MAX_ENVS : rank + 2;
  check(ktr_rl_create_distributed_system("agent", argv[1], MPI_COMM_WORLD, n, KTR_DEVICE_DEFAULT), "create");
  float s[MAX_ENVS], a[MAX_ENVS], r[MAX_ENVS], d[MAX_ENVS];
  for (int e = 0; e < n; ++e) s[e] = (float)rank + 0.5f * (float)e, r[e] = 1, d[e] = 1;
  float p_loss = 0, q_loss = 0;
  for (int it = 0; it < 1500; ++it) {
    check(ktr_rl_predict("agent", n, s, a, 1, KTR_FLOAT, NULL), "predict");
    check(ktr_rl_push("agent", n, s, a, r, s, d, KTR_FLOAT, NULL), "push");
    int ready = 0;
    check(ktr_rl_ready("agent", &ready), "ready");
    /* every rank trains in the same iterations: the updates are collective */
    int all = 0;
    MPI_Allreduce(&ready, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all) check(ktr_rl_train("agent", 16, NULL, NULL, NULL), "train");
  }
  check(ktr_rl_train("agent", 16, &p_loss, &q_loss, NULL), "train");
  float q[MAX_ENVS], probe[MAX_ENVS], act[MAX_ENVS];
  for (int e = 0; e < MAX_ENVS; ++e) probe[e] = 0.25f * (float)e;
  check(ktr_rl_predict("agent", MAX_ENVS, probe, act, 0, KTR_FLOAT, NULL), "predict");
  check(ktr_rl_evaluate("agent", MAX_ENVS, probe, act, q, KTR_FLOAT, NULL), "evaluate");
  int const same = agree(q, MAX_ENVS) && agree(act, MAX_ENVS) && agree(&q_loss, 1) && agree(&p_loss, 1);
  double err = 0;
  for (int e = 0; e < MAX_ENVS; ++e) err += fabs(q[e] - 1) / MAX_ENVS;
  int ok = same && err < 0.05;
  if (rank == 0)
    printf("%d ranks: mean |Q - 1| %.2e, critic loss %.3e; %s\n", size, err, q_loss,
           same ? "the ranks' systems agree" : "the ranks' systems DIFFER");
  check(ktr_rl_destroy_system("agent"), "destroy");
  ktr_finalize();
  MPI_Finalize();
  return ok ? 0 : 1;
}
