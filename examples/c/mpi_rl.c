/* Reinforcement learning over MPI ranks from C: every rank creates the same distributed TD3 system with its own
 * number of environments (rank r runs r + 2), pushes its environments' transitions into its own buffer and trains
 * 16 updates per call; each update averages the ranks' gradients, so the ranks' networks stay equal to the last
 * bit. The states differ between ranks and are normalised by the ranks' merged statistics, the same on every
 * rank. The reward is TorchFort's constant one (1 at every step, each step terminal): the critic must learn Q = 1.
 * The program checks that the ranks' values agree bit for bit, that each rank reads back the same loss (the ranks'
 * mean), and that |Q - 1| < 0.05. Then it saves the system (collective: rank 0 writes every rank's buffer and
 * draws into one checkpoint generation), trains on, loads the save into a second system and trains it on the same
 * way: on every rank the two must predict and evaluate the same values to the last bit.
 *   mpirun -np 2 mpi_rl CONFIG [CHECKPOINT_DIR]   (mpi_rl.yaml: TorchFort's td3.yaml at a smaller buffer;
 *                                                  the directory defaults to mpi_rl_checkpoint) */
#include <mpi.h>

#include <ktr/ktr_c.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* `iterations` of exploring, pushing and 16 updates on every rank. */
static void train_on(const char* name, int iterations, int n, const float* s, const float* r, const float* d) {
  float a[MAX_ENVS];
  for (int it = 0; it < iterations; ++it) {
    check(ktr_rl_predict(name, n, s, a, 1, KTR_FLOAT, NULL), "predict");
    check(ktr_rl_push(name, n, s, a, r, s, d, KTR_FLOAT, NULL), "push");
    int ready = 0;
    check(ktr_rl_ready(name, &ready), "ready");
    /* every rank trains in the same iterations: the updates are collective */
    int all = 0;
    MPI_Allreduce(&ready, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all) check(ktr_rl_train(name, 16, NULL, NULL, NULL), "train");
  }
}

/* The greedy actions and their values at MAX_ENVS fixed states. */
static void probe(const char* name, float* act, float* q) {
  float state[MAX_ENVS];
  for (int e = 0; e < MAX_ENVS; ++e) state[e] = 0.25f * (float)e;
  check(ktr_rl_predict(name, MAX_ENVS, state, act, 0, KTR_FLOAT, NULL), "predict");
  check(ktr_rl_evaluate(name, MAX_ENVS, state, act, q, KTR_FLOAT, NULL), "evaluate");
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 2) {
    if (rank == 0) fprintf(stderr, "usage: mpi_rl CONFIG [CHECKPOINT_DIR]\n");
    MPI_Finalize();
    return 2;
  }
  const char* dir = argc > 2 ? argv[2] : "mpi_rl_checkpoint";
  int const n = rank + 2 > MAX_ENVS ? MAX_ENVS : rank + 2;
  check(ktr_rl_create_distributed_system("agent", argv[1], MPI_COMM_WORLD, n, KTR_DEVICE_DEFAULT), "create");
  float s[MAX_ENVS], r[MAX_ENVS], d[MAX_ENVS];
  for (int e = 0; e < n; ++e) s[e] = (float)rank + 0.5f * (float)e, r[e] = 1, d[e] = 1;
  float p_loss = 0, q_loss = 0, q[MAX_ENVS], act[MAX_ENVS];
  train_on("agent", 1500, n, s, r, d);
  check(ktr_rl_train("agent", 16, &p_loss, &q_loss, NULL), "train");
  probe("agent", act, q);
  int const same = agree(q, MAX_ENVS) && agree(act, MAX_ENVS) && agree(&q_loss, 1) && agree(&p_loss, 1);
  double err = 0;
  for (int e = 0; e < MAX_ENVS; ++e) err += fabs(q[e] - 1) / MAX_ENVS;

  /* The save, 50 more iterations; the save loaded into a second system, the same 50 iterations. */
  float q_on[MAX_ENVS], act_on[MAX_ENVS], q_re[MAX_ENVS], act_re[MAX_ENVS];
  check(ktr_rl_save_checkpoint("agent", dir), "save");
  train_on("agent", 50, n, s, r, d);
  probe("agent", act_on, q_on);
  check(ktr_rl_create_distributed_system("resumed", argv[1], MPI_COMM_WORLD, n, KTR_DEVICE_DEFAULT), "create");
  check(ktr_rl_load_checkpoint("resumed", dir), "load");
  train_on("resumed", 50, n, s, r, d);
  probe("resumed", act_re, q_re);
  int resumed = memcmp(q_on, q_re, sizeof q_on) == 0 && memcmp(act_on, act_re, sizeof act_on) == 0,
      all_resumed = 0;
  MPI_Allreduce(&resumed, &all_resumed, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);

  int ok = same && err < 0.05 && all_resumed;
  if (rank == 0)
    printf("%d ranks: mean |Q - 1| %.2e, critic loss %.3e; %s; %s\n", size, err, q_loss,
           same ? "the ranks' systems agree" : "the ranks' systems DIFFER",
           all_resumed ? "the system loaded from its checkpoint trains on to the same bits"
                       : "the system loaded from its checkpoint DIFFERS");
  check(ktr_rl_destroy_system("resumed"), "destroy");
  check(ktr_rl_destroy_system("agent"), "destroy");
  ktr_finalize();
  MPI_Finalize();
  return ok ? 0 : 1;
}
