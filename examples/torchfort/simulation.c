/* A TorchFort program, written against TorchFort's C interface (<torchfort.h>) and nothing of ktr's, built and run
 * on ktr: a periodic 1-D reaction-diffusion simulation trains an MLP surrogate of its time step in situ, in
 * TorchFort's calling pattern (one datatype for every array, `void* loss_val`, size_t dims, the _F forms with
 * Fortran's shapes, tensor lists), then checkpoints, reloads into a second model, and predicts held-out steps.
 * Fails unless the surrogate's RMS error is at least 5x below predicting the mean, the reloaded model predicts
 * the same, and the calls that must fail do (each printing TorchFort's message to stderr).
 *   simulation config.yaml CHECKPOINT_DIR */
#include <torchfort.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define N 128
#define STEPS 96
#define CAMPAIGNS 8

static void check(torchfort_result_t r, const char* what) {
  if (r != TORCHFORT_RESULT_SUCCESS) {
    fprintf(stderr, "simulation: %s returned %d\n", what, (int)r);
    exit(1);
  }
}

static void initial(int c, float* u) {
  unsigned s = 12345u + 977u * (unsigned)c;
  for (int i = 0; i < N; ++i) u[i] = 0.3f;
  for (int j = 0; j < 3; ++j) {
    s = s * 1103515245u + 12345u;
    float a = 0.15f + 0.1f * (float)((s >> 16) % 100) / 100.0f;
    s = s * 1103515245u + 12345u;
    float k = (float)(1 + (s >> 16) % 4);
    s = s * 1103515245u + 12345u;
    float p = 6.2831853f * (float)((s >> 16) % 100) / 100.0f;
    for (int i = 0; i < N; ++i) u[i] += a * sinf(k * 6.2831853f * (float)i / N + p);
  }
  for (int i = 0; i < N; ++i) u[i] = u[i] < 0 ? 0 : u[i];
}

/* One time step: x (N, 3) row-major samples, y (N, 1) targets; u advanced in place. */
static void step(float* u, float* x, float* y) {
  float next[N];
  for (int i = 0; i < N; ++i) {
    float l = u[(i + N - 1) % N], c = u[i], r = u[(i + 1) % N];
    next[i] = c + 0.2f * (l - 2 * c + r) + 0.05f * c * (1 - c);
    x[3 * i] = l, x[3 * i + 1] = c, x[3 * i + 2] = r;
    y[i] = next[i];
  }
  for (int i = 0; i < N; ++i) u[i] = next[i];
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: simulation config.yaml CHECKPOINT_DIR\n");
    return 2;
  }
  check(torchfort_set_cudnn_benchmark(true), "torchfort_set_cudnn_benchmark");
  check(torchfort_set_manual_seed(7), "torchfort_set_manual_seed");
  check(torchfort_create_model("surrogate", argv[1], TORCHFORT_DEVICE_CPU), "torchfort_create_model");
  float u[N], x[N * 3], y[N], loss = 0;
  int64_t xs[2] = {N, 3}, ys[2] = {N, 1}, xs_f[2] = {3, N}, ys_f[2] = {1, N};
  int64_t trained = 0;
  for (int c = 0; c < CAMPAIGNS - 1; ++c) {
    initial(c, u);
    for (int t = 0; t < STEPS; ++t, ++trained) {
      step(u, x, y);
      if (t % 3 == 2) /* the same memory through Fortran's shapes (column-major (3, N)) */
        check(torchfort_train_F("surrogate", x, 2, xs_f, y, 2, ys_f, &loss, TORCHFORT_FLOAT, 0),
              "torchfort_train_F");
      else
        check(torchfort_train("surrogate", x, 2, xs, y, 2, ys, &loss, TORCHFORT_FLOAT, 0), "torchfort_train");
      check(torchfort_wandb_log_float("surrogate", "loss", trained, loss), "torchfort_wandb_log_float");
    }
  }
  /* A step through tensor lists (one input, one label: what ktr's models take). */
  torchfort_tensor_list_t in, lab;
  check(torchfort_tensor_list_create(&in), "torchfort_tensor_list_create");
  check(torchfort_tensor_list_create(&lab), "torchfort_tensor_list_create");
  check(torchfort_tensor_list_add_tensor(in, x, 2, xs, TORCHFORT_FLOAT), "torchfort_tensor_list_add_tensor");
  check(torchfort_tensor_list_add_tensor(lab, y, 2, ys, TORCHFORT_FLOAT), "torchfort_tensor_list_add_tensor");
  check(torchfort_train_multiarg("surrogate", in, lab, &loss, NULL, 0), "torchfort_train_multiarg");
  ++trained;
  check(torchfort_save_checkpoint("surrogate", argv[2]), "torchfort_save_checkpoint");
  check(torchfort_create_model("reloaded", argv[1], TORCHFORT_DEVICE_CPU), "torchfort_create_model");
  int64_t step_train = -1, step_inference = -1;
  check(torchfort_load_checkpoint("reloaded", argv[2], &step_train, &step_inference), "torchfort_load_checkpoint");
  /* Held-out campaign: the surrogate's RMS error against predicting the mean. */
  double se = 0, sm = 0, diff = 0;
  float pred[N], pred2[N];
  initial(CAMPAIGNS - 1, u);
  for (int t = 0; t < STEPS; ++t) {
    step(u, x, y);
    check(torchfort_inference("surrogate", x, 2, xs, pred, 2, ys, TORCHFORT_FLOAT, 0), "torchfort_inference");
    check(torchfort_inference("reloaded", x, 2, xs, pred2, 2, ys, TORCHFORT_FLOAT, 0), "torchfort_inference");
    double mean = 0;
    for (int i = 0; i < N; ++i) mean += y[i] / N;
    for (int i = 0; i < N; ++i) {
      se += (pred[i] - y[i]) * (pred[i] - y[i]);
      sm += (mean - y[i]) * (mean - y[i]);
      diff = fmax(diff, fabs(pred[i] - pred2[i]));
    }
  }
  double const rmse = sqrt(se / (N * STEPS)), rms_mean = sqrt(sm / (N * STEPS));
  /* What must fail, with TorchFort's message on stderr: an integer datatype for torchfort_train's arrays, two
   * inputs in a tensor list, a model that does not exist. */
  int refused = torchfort_train("surrogate", x, 2, xs, y, 2, ys, &loss, TORCHFORT_INT32, 0) ==
                TORCHFORT_RESULT_NOT_SUPPORTED;
  check(torchfort_tensor_list_add_tensor(in, x, 2, xs, TORCHFORT_FLOAT), "torchfort_tensor_list_add_tensor");
  refused += torchfort_train_multiarg("surrogate", in, lab, &loss, NULL, 0) == TORCHFORT_RESULT_NOT_SUPPORTED;
  refused +=
      torchfort_inference("nobody", x, 2, xs, pred, 2, ys, TORCHFORT_FLOAT, 0) == TORCHFORT_RESULT_INVALID_USAGE;
  check(torchfort_tensor_list_destroy(in), "torchfort_tensor_list_destroy");
  check(torchfort_tensor_list_destroy(lab), "torchfort_tensor_list_destroy");
  printf(
      "torchfort: %lld steps (checkpoint at step %lld), held-out RMS error %.4g vs %.4g for the mean (%.1fx); "
      "reloaded model within %.2g; %d of 3 bad calls refused\n",
      (long long)trained, (long long)step_train, rmse, rms_mean, rms_mean / rmse, diff, refused);
  return rmse * 5 < rms_mean && diff == 0 && step_train == trained && refused == 3 ? 0 : 1;
}
