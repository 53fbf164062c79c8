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
 *   pinn_heat pinn_heat.yaml STEPS MAX_RELATIVE_L2 */
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

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: pinn_heat CONFIG.yaml STEPS MAX_RELATIVE_L2\n");
    return 2;
  }
  int const steps = atoi(argv[2]);
  double const bound = atof(argv[3]);
  static float xi[NI][2], ui[NI], di[NI][2], si[NI][2];
  static float xb[NB][2], ub[NB], sb[NB], x0[N0][2], u0[N0], s0[N0];
  for (int i = 0; i < NI; ++i) point(i, &xi[i][0], &xi[i][1]);
  for (int i = 0; i < NB; ++i) xb[i][0] = (float)(i % 2), xb[i][1] = (float)(i / 2) / (NB / 2 - 1);
  for (int i = 0; i < N0; ++i) x0[i][0] = (float)i / (N0 - 1), x0[i][1] = 0.0f;
  int64_t const is[2] = {NI, 2}, ius[2] = {NI, 1}, ids[3] = {NI, 1, 2};
  int64_t const bs[2] = {NB, 2}, bus[2] = {NB, 1}, zs[2] = {N0, 2}, zus[2] = {N0, 1};

  check(ktr_create_model("heat_pinn", argv[1], KTR_DEVICE_DEFAULT), "ktr_create_model");
  for (int step = 1; step <= steps; ++step) {
    float loss = 0.0f;
    check(ktr_jet_forward("heat_pinn", "d1 d0,0", xi, 2, is, KTR_FLOAT, ui, 2, ius, KTR_FLOAT, di, 3, ids,
                          KTR_FLOAT, NULL),
          "ktr_jet_forward (interior)");
    for (int i = 0; i < NI; ++i) {
      float const r = di[i][0] - 0.4f * di[i][1];
      loss += r * r / NI;
      si[i][0] = 2.0f * r / NI, si[i][1] = -0.8f * r / NI;
    }
    check(ktr_jet_backward("heat_pinn", NULL, 0, NULL, KTR_FLOAT, si, 3, ids, KTR_FLOAT, NULL),
          "ktr_jet_backward");
    check(ktr_jet_forward("heat_pinn", "", xb, 2, bs, KTR_FLOAT, ub, 2, bus, KTR_FLOAT, NULL, 0, NULL, KTR_FLOAT,
                          NULL),
          "ktr_jet_forward (boundary)");
    for (int i = 0; i < NB; ++i) loss += ub[i] * ub[i] / NB, sb[i] = 2.0f * ub[i] / NB;
    check(ktr_jet_backward("heat_pinn", sb, 2, bus, KTR_FLOAT, NULL, 0, NULL, KTR_FLOAT, NULL),
          "ktr_jet_backward");
    check(ktr_jet_forward("heat_pinn", "", x0, 2, zs, KTR_FLOAT, u0, 2, zus, KTR_FLOAT, NULL, 0, NULL, KTR_FLOAT,
                          NULL),
          "ktr_jet_forward (initial)");
    for (int i = 0; i < N0; ++i) {
      float const e = u0[i] - (float)sin(pi * x0[i][0]);
      loss += e * e / N0, s0[i] = 2.0f * e / N0;
    }
    check(ktr_jet_backward("heat_pinn", s0, 2, zus, KTR_FLOAT, NULL, 0, NULL, KTR_FLOAT, NULL),
          "ktr_jet_backward");
    check(ktr_apply_gradients("heat_pinn", loss, NULL), "ktr_apply_gradients");
    if (step % (steps / 4 > 0 ? steps / 4 : 1) == 0) printf("step %d loss %.3e\n", step, loss);
  }
  static float xg[G * G][2], ug[G * G];
  for (int i = 0; i < G * G; ++i) xg[i][0] = (float)(i % G) / (G - 1), xg[i][1] = (float)(i / G) / (G - 1);
  int64_t const gs[2] = {G * G, 2}, gus[2] = {G * G, 1};
  check(ktr_inference("heat_pinn", xg, 2, gs, KTR_FLOAT, ug, 2, gus, KTR_FLOAT, NULL), "ktr_inference");
  double num = 0, den = 0;
  for (int i = 0; i < G * G; ++i) {
    double const exact = exp(-0.4 * pi * pi * xg[i][1]) * sin(pi * xg[i][0]);
    num += (ug[i] - exact) * (ug[i] - exact), den += exact * exact;
  }
  double const rel = sqrt(num / den);
  printf("pinn_heat: %d steps, relative L2 error %.3e (bound %.1e)\n", steps, rel, bound);
  check(ktr_destroy_model("heat_pinn"), "ktr_destroy_model");
  return rel <= bound ? 0 : 1;
}
