/* A C simulation that trains its surrogate in situ through ktr's C API.
 *
 * The simulation: u_t = D u_xx + r u (1 - u) (Fisher-KPP) on a periodic 1-D grid, explicit Euler. Every time step
 * hands ktr the samples (u[i-1], u[i], u[i+1]) -> u_new[i], as the caller's own arrays:
 *   mode "train": one optimiser step per time step on that batch (ktr_train);
 *   mode "push":  the samples go to ktr's replay buffer on the device (ktr_push), and every 8 time steps the
 *                 surrogate takes 16 steps drawn from it (ktr_train_steps), with one read-back.
 * Afterwards the surrogate predicts a fresh simulation's steps (ktr_inference): its RMS error is compared with
 * predicting the mean; the program fails unless it is at least 5x better.
 * "save DIR" / "resume DIR": the run saves a checkpoint halfway (ktr_save_checkpoint) or starts from one
 * (ktr_load_checkpoint) and prints its final figures, so two processes can be compared bit for bit.
 *
 *   heat_surrogate heat.yaml train|push [save DIR | resume DIR] */
#include <ktr/ktr_c.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 128       /* grid points */
#define STEPS 96    /* time steps per campaign */
#define CAMPAIGNS 8 /* simulations from different initial conditions */

static int check(ktr_result_t r, const char* what) {
  if (r != KTR_RESULT_SUCCESS) {
    fprintf(stderr, "heat_surrogate: %s failed (%d): %s\n", what, (int)r, ktr_last_error());
    exit(1);
  }
  return 0;
}

/* A deterministic initial condition for campaign c: a few smooth bumps in [0, 1]. */
static void initial(int c, float* u) {
  unsigned s = 12345u + 977u * (unsigned)c;
  float a[3], k[3], p[3];
  for (int j = 0; j < 3; ++j) {
    s = s * 1103515245u + 12345u;
    a[j] = 0.15f + 0.1f * (float)((s >> 16) % 100) / 100.0f;
    s = s * 1103515245u + 12345u;
    k[j] = (float)(1 + (s >> 16) % 4);
    s = s * 1103515245u + 12345u;
    p[j] = 6.2831853f * (float)((s >> 16) % 100) / 100.0f;
  }
  for (int i = 0; i < N; ++i) {
    float v = 0.3f;
    for (int j = 0; j < 3; ++j) v += a[j] * sinf(k[j] * 6.2831853f * (float)i / N + p[j]);
    u[i] = v < 0 ? 0 : v;
  }
}

/* One time step: x (N, 3) samples and y (N, 1) targets, u advanced in place. */
static void step(float* u, float* x, float* y) {
  const float d = 0.2f, r = 0.5f;
  float next[N];
  for (int i = 0; i < N; ++i) {
    float l = u[(i + N - 1) % N], c = u[i], rt = u[(i + 1) % N];
    next[i] = c + d * (l - 2 * c + rt) + r * c * (1 - c) * 0.1f;
    x[3 * i] = l, x[3 * i + 1] = c, x[3 * i + 2] = rt;
    y[i] = next[i];
  }
  memcpy(u, next, sizeof next);
}

int main(int argc, char** argv) {
  const char* config = argc > 1 ? argv[1] : "heat.yaml";
  const char* mode = argc > 2 ? argv[2] : "train";
  const char* action = argc > 4 ? argv[3] : "";
  const char* dir = argc > 4 ? argv[4] : "";
  int push = strcmp(mode, "push") == 0;
  if (!push && strcmp(mode, "train") != 0) {
    fprintf(stderr, "usage: heat_surrogate CONFIG train|push [save DIR | resume DIR]\n");
    return 2;
  }
  /* The build's device: the CPU for a host-only ktr, the GPU Kokkos runs on for a GPU build. */
  check(ktr_create_model("heat", config, KTR_DEVICE_DEFAULT), "ktr_create_model");

  float u[N], x[3 * N], y[N], loss = 0;
  int64_t xs[2] = {N, 3}, ys[2] = {N, 1};
  int first = 0;
  if (strcmp(action, "resume") == 0) {
    int64_t step_train = 0, step_inference = 0;
    check(ktr_load_checkpoint("heat", dir, &step_train, &step_inference), "ktr_load_checkpoint");
    printf("resumed at step %lld\n", (long long)step_train);
    first = CAMPAIGNS / 2;
  }
  for (int c = first; c < CAMPAIGNS; ++c) {
    if (c == CAMPAIGNS / 2 && strcmp(action, "save") == 0) check(ktr_save_checkpoint("heat", dir), "save");
    initial(c, u);
    for (int t = 0; t < STEPS; ++t) {
      step(u, x, y);
      if (push) {
        check(ktr_push("heat", x, 2, xs, KTR_FLOAT, y, 2, ys, KTR_FLOAT, NULL), "ktr_push");
        if (t % 8 == 7) check(ktr_train_steps("heat", 16, t == STEPS - 1 ? &loss : NULL, NULL), "ktr_train_steps");
      } else {
        check(ktr_train("heat", x, 2, xs, KTR_FLOAT, y, 2, ys, KTR_FLOAT, t == STEPS - 1 ? &loss : NULL, NULL),
              "ktr_train");
      }
    }
    printf("campaign %d: loss %.9g\n", c, loss);
  }

  /* Held out: a campaign the surrogate never saw. */
  double se = 0, sm = 0, mean = 0, checksum = 0;
  float pred[N];
  initial(CAMPAIGNS + 7, u);
  for (int t = 0; t < STEPS; ++t) {
    step(u, x, y);
    check(ktr_inference("heat", x, 2, xs, KTR_FLOAT, pred, 2, ys, KTR_FLOAT, NULL), "ktr_inference");
    double m = 0;
    for (int i = 0; i < N; ++i) m += y[i] / N;
    for (int i = 0; i < N; ++i) {
      se += (pred[i] - y[i]) * (pred[i] - y[i]);
      sm += (m - y[i]) * (m - y[i]);
      checksum += pred[i];
    }
    mean += m;
  }
  double rms = sqrt(se / (N * STEPS)), rms_mean = sqrt(sm / (N * STEPS));
  printf("held out: surrogate RMS %.6f, predicting the mean %.6f (%.1fx better)\n", rms, rms_mean, rms_mean / rms);
  printf("final: loss %.9g checksum %.9g\n", loss, checksum);
  check(ktr_finalize(), "ktr_finalize");
  return rms * 5 <= rms_mean ? 0 : 1;
}
