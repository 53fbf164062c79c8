/* A constitutive surrogate and its consistent tangent through ktr's C API.
 *
 * The material: plane strain in Voigt notation, strain e = (e_xx, e_yy, g_xy) -> stress s = C e + k (e . e) e, the
 * gradient of the energy W = e C e / 2 + k (e . e)^2 / 4, so its tangent ds/de = C + k ((e . e) I + 2 e e^T) is
 * symmetric. A finite-element code needs s and ds/de at every quadrature point; the surrogate gives s by
 * ktr_inference and ds/de by ktr_derivatives (spec "d0 d1 d2": derivs[n][i][j] = ds_i / de_j), exact for the
 * network, through its input transform.
 *
 * Two ways to train it, the same steps and batches:
 *   values   ktr_train on (e, s): mean squared error of the stress only;
 *   sobolev  the split step (ktr_jet_forward, ktr_jet_backward, ktr_apply_gradients) on the stress and the
 *            tangent: mean squared error of s plus that of ds/de, so the tangent is trained, not just implied.
 * Afterwards both errors on held-out strains, relative (Frobenius over all points); the program fails if the
 * tangent's exceeds the bound on its command line.
 *
 *   tangent tangent.yaml values|sobolev STEPS MAX_TANGENT_ERROR */
#include <ktr/ktr_c.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 4096 /* training strains */
#define B 256  /* batch */
#define M 1024 /* held-out strains */

static const double C[3][3] = {{2.0, 1.0, 0.0}, {1.0, 2.0, 0.0}, {0.0, 0.0, 0.5}};
static const double K = 4.0;

static void check(ktr_result_t r, const char* what) {
  if (r != KTR_RESULT_SUCCESS) {
    fprintf(stderr, "tangent: %s failed (%d): %s\n", what, (int)r, ktr_last_error());
    exit(1);
  }
}

/* The i-th point of a low-discrepancy sequence in [-0.5, 0.5)^3 (the additive recurrence of the root of
 * x^4 = x + 1), from `offset` on. */
static void strain(int i, double offset, float e[3]) {
  static const double a[3] = {0.8191725133961645, 0.6710436067037893, 0.5497004779019703};
  for (int j = 0; j < 3; ++j) e[j] = (float)(fmod(offset + a[j] * (i + 1), 1.0) - 0.5);
}

/* The material's stress and tangent at strain e. */
static void material(const float e[3], float s[3], float t[3][3]) {
  double ee = 0;
  for (int j = 0; j < 3; ++j) ee += (double)e[j] * e[j];
  for (int i = 0; i < 3; ++i) {
    double v = K * ee * e[i];
    for (int j = 0; j < 3; ++j) {
      v += C[i][j] * e[j];
      t[i][j] = (float)(C[i][j] + K * ((i == j ? ee : 0.0) + 2.0 * e[i] * e[j]));
    }
    s[i] = (float)v;
  }
}

int main(int argc, char** argv) {
  if (argc != 5 || (strcmp(argv[2], "values") != 0 && strcmp(argv[2], "sobolev") != 0)) {
    fprintf(stderr, "usage: tangent CONFIG.yaml values|sobolev STEPS MAX_TANGENT_ERROR\n");
    return 2;
  }
  int const sobolev = strcmp(argv[2], "sobolev") == 0, steps = atoi(argv[3]);
  double const bound = atof(argv[4]);
  static float e[N][3], s[N][3], t[N][3][3];
  for (int n = 0; n < N; ++n) strain(n, 0.5, e[n]), material(e[n], s[n], t[n]);

  check(ktr_create_model("tangent", argv[1], KTR_DEVICE_DEFAULT), "ktr_create_model");
  int64_t const xs[2] = {B, 3}, ys[2] = {B, 3}, ds[3] = {B, 3, 3};
  static float u[B][3], d[B][3][3], us[B][3], dsd[B][3][3];
  for (int step = 0; step < steps; ++step) {
    int const at = (step * B) % N;
    float loss = 0;
    if (!sobolev) {
      check(ktr_train("tangent", e[at], 2, xs, KTR_FLOAT, s[at], 2, ys, KTR_FLOAT, &loss, NULL), "ktr_train");
    } else {
      check(ktr_jet_forward("tangent", "d0 d1 d2", e[at], 2, xs, KTR_FLOAT, u, 2, ys, KTR_FLOAT, d, 3, ds,
                            KTR_FLOAT, NULL),
            "ktr_jet_forward");
      double sum = 0;
      for (int n = 0; n < B; ++n)
        for (int i = 0; i < 3; ++i) {
          float const r = u[n][i] - s[at + n][i];
          sum += (double)r * r / (B * 3);
          us[n][i] = 2.0f * r / (B * 3);
          for (int j = 0; j < 3; ++j) {
            float const q = d[n][i][j] - t[at + n][i][j];
            sum += (double)q * q / (B * 9);
            dsd[n][i][j] = 2.0f * q / (B * 9);
          }
        }
      loss = (float)sum;
      check(ktr_jet_backward("tangent", us, 2, ys, KTR_FLOAT, dsd, 3, ds, KTR_FLOAT, NULL), "ktr_jet_backward");
      check(ktr_apply_gradients("tangent", loss, NULL), "ktr_apply_gradients");
    }
    if ((step + 1) % (steps / 4 > 0 ? steps / 4 : 1) == 0)
      printf("%s: step %d loss %.3e\n", argv[2], step + 1, loss);
  }

  /* Held-out strains: the stress from ktr_inference, the stress and tangent from ktr_derivatives. */
  static float he[M][3], hs[M][3], ht[M][3][3], ps[M][3], js[M][3], pt[M][3][3];
  for (int n = 0; n < M; ++n) strain(n, 0.25, he[n]), material(he[n], hs[n], ht[n]);
  int64_t const hx[2] = {M, 3}, hy[2] = {M, 3}, hd[3] = {M, 3, 3};
  check(ktr_inference("tangent", he, 2, hx, KTR_FLOAT, ps, 2, hy, KTR_FLOAT, NULL), "ktr_inference");
  check(ktr_derivatives("tangent", "d0 d1 d2", he, 2, hx, KTR_FLOAT, js, 2, hy, KTR_FLOAT, pt, 3, hd, KTR_FLOAT,
                        NULL),
        "ktr_derivatives");
  double se = 0, sn = 0, te = 0, tn = 0, same = 0, asym = 0;
  for (int n = 0; n < M; ++n)
    for (int i = 0; i < 3; ++i) {
      se += pow(ps[n][i] - hs[n][i], 2), sn += pow(hs[n][i], 2);
      same = fmax(same, fabs(ps[n][i] - js[n][i]));
      for (int j = 0; j < 3; ++j) {
        te += pow(pt[n][i][j] - ht[n][i][j], 2), tn += pow(ht[n][i][j], 2);
        asym = fmax(asym, fabs(pt[n][i][j] - pt[n][j][i]));
      }
    }
  double const stress_error = sqrt(se / sn), tangent_error = sqrt(te / tn);
  printf(
      "tangent (%s, %d steps): relative error of the stress %.3e, of the tangent %.3e (bound %.1e); "
      "largest asymmetry of the tangent %.2e; inference and derivatives' u differ by at most %.1e\n",
      argv[2], steps, stress_error, tangent_error, bound, asym, same);
  check(ktr_destroy_model("tangent"), "ktr_destroy_model");
  return tangent_error <= bound && same <= 1e-5 ? 0 : 1;
}
