/* The C API from several threads, where ktr starts Kokkos itself (on its own worker thread): 8 threads x 20
 * ktr_train on one model all succeed; a model created on another thread trains from this one; then a failed call,
 * and the process exits without ktr_finalize (the atexit hook must not touch freed memory: run under ASan in CI).
 *   threads_and_exit CONFIG.yaml */
#include <ktr/ktr_c.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

enum { kThreads = 8, kCalls = 20, kBatch = 32 };
static const char* g_config;
static int g_failures;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static void fill(float* x, float* y, int seed) {
  for (int i = 0; i < kBatch; ++i) {
    for (int j = 0; j < 3; ++j) x[i * 3 + j] = (float)((i * 7 + j * 13 + seed * 31) % 17) / 8.0f - 1.0f;
    y[i] = x[i * 3] - 0.5f * x[i * 3 + 1] + x[i * 3 + 2] * x[i * 3 + 2];
  }
}

static void* trainer(void* arg) {
  int const id = *(int const*)arg;
  float x[kBatch * 3], y[kBatch], loss = 0.0f;
  int64_t const xs[2] = {kBatch, 3}, ys[2] = {kBatch, 1};
  for (int c = 0; c < kCalls; ++c) {
    fill(x, y, id * kCalls + c);
    ktr_result_t const r = ktr_train("shared", x, 2, xs, KTR_FLOAT, y, 2, ys, KTR_FLOAT, &loss, NULL);
    if (r != KTR_RESULT_SUCCESS) {
      pthread_mutex_lock(&g_lock);
      if (g_failures++ == 0)
        fprintf(stderr, "thread %d call %d: status %d: %s\n", id, c, (int)r, ktr_last_error());
      pthread_mutex_unlock(&g_lock);
    }
  }
  return NULL;
}

static void* creator(void* arg) {
  *(ktr_result_t*)arg = ktr_create_model("made_elsewhere", g_config, KTR_DEVICE_CPU);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  g_config = argv[1];
  if (ktr_create_model("shared", g_config, KTR_DEVICE_CPU) != KTR_RESULT_SUCCESS) {
    fprintf(stderr, "create: %s\n", ktr_last_error());
    return 1;
  }
  pthread_t threads[kThreads];
  int ids[kThreads];
  for (int t = 0; t < kThreads; ++t) ids[t] = t, pthread_create(&threads[t], NULL, trainer, &ids[t]);
  for (int t = 0; t < kThreads; ++t) pthread_join(threads[t], NULL);
  printf("%d threads x %d ktr_train: %d failures\n", kThreads, kCalls, g_failures);

  ktr_result_t created = KTR_RESULT_INTERNAL_ERROR;
  pthread_t other;
  pthread_create(&other, NULL, creator, &created);
  pthread_join(other, NULL);
  float x[kBatch * 3], y[kBatch], loss = 0.0f;
  int64_t const xs[2] = {kBatch, 3}, ys[2] = {kBatch, 1};
  fill(x, y, 1);
  ktr_result_t const trained = created == KTR_RESULT_SUCCESS ? ktr_train("made_elsewhere", x, 2, xs, KTR_FLOAT, y,
                                                                         2, ys, KTR_FLOAT, &loss, NULL)
                                                             : created;
  printf("a model created on another thread, trained here: status %d %s\n", (int)trained,
         trained == KTR_RESULT_SUCCESS ? "" : ktr_last_error());

  /* A failed call, then exit without ktr_finalize(): ktr's atexit hook finalises. */
  ktr_result_t const refused = ktr_train("no such model", x, 2, xs, KTR_FLOAT, y, 2, ys, KTR_FLOAT, &loss, NULL);
  printf("a call on a missing model: status %d (%s)\n", (int)refused,
         strstr(ktr_last_error(), "does not exist") ? "named" : ktr_last_error());
  int const ok = g_failures == 0 && trained == KTR_RESULT_SUCCESS && refused == KTR_RESULT_INVALID_USAGE;
  printf("%s\n", ok ? "threads and exit: ok" : "threads and exit: FAILED");
  return ok ? 0 : 1;
}
