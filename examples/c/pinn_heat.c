/* A physics-informed network trained through ktr's C API: the split step (ktr_jet_forward, ktr_jet_backward,
 * ktr_apply_gradients) with the residual written here, in C.
 *
 * The problem (DeepXDE's heat example): u_t = 0.4 u_xx on x in [0, 1], t in [0, 1], u(x, 0) = sin(pi x),
 * u(0, t) = u(1, t) = 0; exact u = exp(-0.4 pi^2 t) sin(pi x). Each step takes three point sets, each forward then
 * backward with the gradient of its own mean squared term, then one Adam update:
 *   interior  spec "d1 d0,0" (u_t, u_xx): r = u_t - 0.4 u_xx, seeds 2 r / n on u_t and -0.8 r / n on u_xx
 *   boundary  spec "" (u only): seed 2 u / n
 *   initial   spec "" : seed 2 (u - sin(pi x)) / n
 * Afterwards ktr_inference on a 101 x 101 grid gives the relative L2 error against the exact solution; the program
 * fails if it exceeds the bound on its command line.
 *
 * With a second configuration (optimizer: lbfgs) and a step count, Adam's weights then go to an L-BFGS model
 * through a weights file and train on, full batch (every point set every step, as L-BFGS's line search needs).
 *
 *   pinn_heat pinn_heat.yaml STEPS MAX_RELATIVE_L2 [pinn_heat_lbfgs.yaml LBFGS_STEPS] */
#include <ktr/ktr_c.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define NI 1024 /* interior points */
#define NB 128  /* boundary points (both ends) */
#define N0 128  /* initial points */
#define G 101   /* test grid per axis */

static const double pi = 3.14159265358979323846;

static void check(ktr_result_t r, const char* what) {
  if (r != KTR_RESULT_SUCCESS) {
    fprintf(stderr, "pinn_heat: %s failed (%d): %s\n", what, (int)r, ktr_last_error());
    exit(1);
  }
}

/* A low-discrepancy point of [0, 1)^2: the additive recurrence of the plastic number. */
static void point(int i, float* x, float* t) {
  *x = (float)fmod(0.5 + 0.7548776662466927 * (i + 1), 1.0);
  *t = (float)fmod(0.5 + 0.5698402909980532 * (i + 1), 1.0);
}

static float xi[NI][2], ui[NI], di[NI][2], si[NI][2];
static float xb[NB][2], ub[NB], sb[NB], x0[N0][2], u0[N0], s0[N0];
static int64_t const is[2] = {NI, 2}, ius[2] = {NI, 1}, ids[3] = {NI, 1, 2};
static int64_t const bs[2] = {NB, 2}, bus[2] = {NB, 1}, zs[2] = {N0, 2}, zus[2] = {N0, 1};

/* One update of model `name`: each point set forward, its residual and seeds here, back; returns the loss. */
static float step(const char* name) {
  double loss = 0.0;
  check(ktr_jet_forward(name, "d1 d0,0", xi, 2, is, KTR_FLOAT, ui, 2, ius, KTR_FLOAT, di, 3, ids, KTR_FLOAT, NULL),
        "ktr_jet_forward (interior)");
  for (int i = 0; i < NI; ++i) {
    float const r = di[i][0] - 0.4f * di[i][1];
    loss += (double)r * r / NI;
    si[i][0] = 2.0f * r / NI, si[i][1] = -0.8f * r / NI;
  }
  check(ktr_jet_backward(name, NULL, 0, NULL, KTR_FLOAT, si, 3, ids, KTR_FLOAT, NULL), "ktr_jet_backward");
  check(ktr_jet_forward(name, "", xb, 2, bs, KTR_FLOAT, ub, 2, bus, KTR_FLOAT, NULL, 0, NULL, KTR_FLOAT, NULL),
        "ktr_jet_forward (boundary)");
  for (int i = 0; i < NB; ++i) loss += (double)ub[i] * ub[i] / NB, sb[i] = 2.0f * ub[i] / NB;
  check(ktr_jet_backward(name, sb, 2, bus, KTR_FLOAT, NULL, 0, NULL, KTR_FLOAT, NULL), "ktr_jet_backward");
  check(ktr_jet_forward(name, "", x0, 2, zs, KTR_FLOAT, u0, 2, zus, KTR_FLOAT, NULL, 0, NULL, KTR_FLOAT, NULL),
        "ktr_jet_forward (initial)");
  for (int i = 0; i < N0; ++i) {
    float const e = u0[i] - (float)sin(pi * x0[i][0]);
    loss += (double)e * e / N0, s0[i] = 2.0f * e / N0;
  }
  check(ktr_jet_backward(name, s0, 2, zus, KTR_FLOAT, NULL, 0, NULL, KTR_FLOAT, NULL), "ktr_jet_backward");
  check(ktr_apply_gradients(name, (float)loss, NULL), "ktr_apply_gradients");
  return (float)loss;
}

/* `steps` updates, the loss printed four times. */
static void train(const char* name, int steps) {
  for (int i = 1; i <= steps; ++i) {
    float const loss = step(name);
    if (i % (steps / 4 > 0 ? steps / 4 : 1) == 0 || i == steps) printf("%s: step %d loss %.3e\n", name, i, loss);
  }
}

/* The relative L2 error of model `name` against the exact solution on a G x G grid. */
static double error(const char* name) {
  static float xg[G * G][2], ug[G * G];
  for (int i = 0; i < G * G; ++i) xg[i][0] = (float)(i % G) / (G - 1), xg[i][1] = (float)(i / G) / (G - 1);
  int64_t const gs[2] = {G * G, 2}, gus[2] = {G * G, 1};
  check(ktr_inference(name, xg, 2, gs, KTR_FLOAT, ug, 2, gus, KTR_FLOAT, NULL), "ktr_inference");
  double num = 0, den = 0;
  for (int i = 0; i < G * G; ++i) {
    double const exact = exp(-0.4 * pi * pi * xg[i][1]) * sin(pi * xg[i][0]);
    num += (ug[i] - exact) * (ug[i] - exact), den += exact * exact;
  }
  return sqrt(num / den);
}

int main(int argc, char** argv) {
  if (argc != 4 && argc != 6) {
    fprintf(stderr, "usage: pinn_heat CONFIG.yaml STEPS MAX_RELATIVE_L2 [LBFGS_CONFIG.yaml LBFGS_STEPS]\n");
    return 2;
  }
  int const steps = atoi(argv[2]);
  double const bound = atof(argv[3]);
  for (int i = 0; i < NI; ++i) point(i, &xi[i][0], &xi[i][1]);
  for (int i = 0; i < NB; ++i) xb[i][0] = (float)(i % 2), xb[i][1] = (float)(i / 2) / (NB / 2 - 1);
  for (int i = 0; i < N0; ++i) x0[i][0] = (float)i / (N0 - 1), x0[i][1] = 0.0f;

  check(ktr_create_model("heat_pinn", argv[1], KTR_DEVICE_DEFAULT), "ktr_create_model");
  train("heat_pinn", steps);
  double rel = error("heat_pinn");
  printf("pinn_heat: %d steps, relative L2 error %.3e\n", steps, rel);
  if (argc == 6) {
    /* Adam's weights into a model whose optimiser is L-BFGS, through a weights file; then full-batch L-BFGS. */
    int const more = atoi(argv[5]);
    check(ktr_save_model("heat_pinn", "pinn_heat_adam.safetensors"), "ktr_save_model");
    check(ktr_create_model("heat_lbfgs", argv[4], KTR_DEVICE_DEFAULT), "ktr_create_model (lbfgs)");
    check(ktr_load_model("heat_lbfgs", "pinn_heat_adam.safetensors"), "ktr_load_model");
    remove("pinn_heat_adam.safetensors");
    train("heat_lbfgs", more);
    rel = error("heat_lbfgs");
    printf("pinn_heat: then %d L-BFGS steps, relative L2 error %.3e\n", more, rel);
    check(ktr_destroy_model("heat_lbfgs"), "ktr_destroy_model");
  }
  printf("pinn_heat: relative L2 error %.3e (bound %.1e)\n", rel, bound);
  check(ktr_destroy_model("heat_pinn"), "ktr_destroy_model");
  return rel <= bound ? 0 : 1;
}
