// Plain host double-precision references for the layers and the loss, and central finite differences over them.
// Device results are checked against these; device gradients against finite differences of these.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace ktr::test {

using Vec = std::vector<double>;

inline std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

inline Vec to_double(std::vector<float> const& v) { return Vec(v.begin(), v.end()); }

/// y (B, out) = act(x (B, in) W (in, out) + b)
inline Vec dense_ref(Vec const& x, Vec const& w, Vec const& b, int batch, int in, int out, bool relu) {
  Vec y(std::size_t(batch) * out);
  for (int i = 0; i < batch; ++i)
    for (int j = 0; j < out; ++j) {
      double s = b[j];
      for (int k = 0; k < in; ++k) s += x[std::size_t(i) * in + k] * w[std::size_t(k) * out + j];
      y[std::size_t(i) * out + j] = relu ? std::max(0.0, s) : s;
    }
  return y;
}

/// 2x2 stride-2 VALID average (or, with `max`, maximum) pooling, NHWC
inline Vec pool_ref(Vec const& x, int B, int H, int W, int C, bool max = false) {
  int const Ho = H / 2, Wo = W / 2;
  Vec y(std::size_t(B) * Ho * Wo * C);
  for (int n = 0; n < B; ++n)
    for (int i = 0; i < Ho; ++i)
      for (int j = 0; j < Wo; ++j)
        for (int c = 0; c < C; ++c) {
          auto at = [&](int h, int w) { return x[((std::size_t(n) * H + h) * W + w) * C + c]; };
          double const a = at(2 * i, 2 * j), b = at(2 * i, 2 * j + 1), d = at(2 * i + 1, 2 * j),
                       e = at(2 * i + 1, 2 * j + 1);
          y[((std::size_t(n) * Ho + i) * Wo + j) * C + c] =
              max ? std::max(std::max(a, b), std::max(d, e)) : 0.25 * (a + b + d + e);
        }
  return y;
}

/// An activation in double precision, by its name (as flax.linen defines it).
inline double act_ref(std::string const& name, double z) {
  if (name == "identity") return z;
  if (name == "relu") return std::max(0.0, z);
  if (name == "tanh") return std::tanh(z);
  if (name == "sigmoid") return 1.0 / (1.0 + std::exp(-z));
  if (name == "silu") return z / (1.0 + std::exp(-z));
  if (name == "gelu") return 0.5 * z * (1.0 + std::erf(z / std::sqrt(2.0)));
  if (name == "gelu_tanh")
    return 0.5 * z * (1.0 + std::tanh(std::sqrt(2.0 / 3.141592653589793) * (z + 0.044715 * z * z * z)));
  if (name == "leaky_relu") return z >= 0 ? z : 0.01 * z;
  if (name == "elu") return z > 0 ? z : std::expm1(z);
  if (name == "softplus") return std::log1p(std::exp(-std::abs(z))) + std::max(z, 0.0);
  if (name == "sine") return std::sin(z);
  throw std::invalid_argument("act_ref: " + name);
}

inline Vec act_ref(std::string const& name, Vec v) {
  for (double& e : v) e = act_ref(name, e);
  return v;
}

/// NHWC KxK conv with stride S, padding "same" (XLA: ceil(H / S) outputs, the smaller half of the padding first),
/// "valid" or "circular" (Flax: wrapped by (K - 1) / 2 before, K / 2 after), kernel HWIO (K, K, C, F), then the
/// activation `act`. Writes the output extents to Ho, Wo.
inline Vec conv_ref(Vec const& x, Vec const& w, Vec const& b, int B, int H, int W, int C, int F, int K, int S,
                    std::string const& padding, std::string const& act, int* Ho_out = nullptr,
                    int* Wo_out = nullptr) {
  bool const circular = padding == "circular";
  auto axis = [&](int n, int& out, int& pad) {
    if (padding == "valid") {
      out = (n - K) / S + 1, pad = 0;
    } else if (circular) {  // jnp.pad(mode="wrap") by ((K - 1) / 2, K / 2), then VALID
      out = (n - 1) / S + 1, pad = (K - 1) / 2;
    } else {
      out = (n + S - 1) / S;
      pad = std::max((out - 1) * S + K - n, 0) / 2;
    }
  };
  auto wrap = [&](int p, int n) { return circular ? ((p % n) + n) % n : p; };
  int Ho, Wo, ph, pw;
  axis(H, Ho, ph);
  axis(W, Wo, pw);
  if (Ho_out) *Ho_out = Ho;
  if (Wo_out) *Wo_out = Wo;
  Vec y(std::size_t(B) * Ho * Wo * F);
  for (int n = 0; n < B; ++n)
    for (int i = 0; i < Ho; ++i)
      for (int j = 0; j < Wo; ++j)
        for (int f = 0; f < F; ++f) {
          double s = b[f];
          for (int kh = 0; kh < K; ++kh)
            for (int kw = 0; kw < K; ++kw) {
              int const hh = wrap(i * S + kh - ph, H), ww = wrap(j * S + kw - pw, W);
              if (hh < 0 || hh >= H || ww < 0 || ww >= W) continue;
              for (int c = 0; c < C; ++c)
                s += x[((std::size_t(n) * H + hh) * W + ww) * C + c] *
                     w[((std::size_t(kh) * K + kw) * C + c) * F + f];
            }
          y[((std::size_t(n) * Ho + i) * Wo + j) * F + f] = act_ref(act, s);
        }
  return y;
}

/// 2x2 stride-2 VALID max pooling, NHWC
inline Vec maxpool_ref(Vec const& x, int B, int H, int W, int C) { return pool_ref(x, B, H, W, C, true); }

/// NHWC 3x3 SAME conv, kernel HWIO (3, 3, C, F), then ReLU or nothing
inline Vec conv_ref(Vec const& x, Vec const& w, Vec const& b, int B, int H, int W, int C, int F, bool relu) {
  return conv_ref(x, w, b, B, H, W, C, F, 3, 1, "same", relu ? "relu" : "identity");
}

/// Layer normalisation of rows of length C: (x - mean) / sqrt(var + eps) * scale + bias
inline Vec layernorm_ref(Vec const& x, Vec const& scale, Vec const& bias, int C, double eps = 1e-6) {
  Vec y(x.size());
  for (std::size_t r = 0; r < x.size() / C; ++r) {
    double mean = 0, var = 0;
    for (int j = 0; j < C; ++j) mean += x[r * C + j];
    mean /= C;
    for (int j = 0; j < C; ++j) var += (x[r * C + j] - mean) * (x[r * C + j] - mean);
    var /= C;
    for (int j = 0; j < C; ++j) y[r * C + j] = (x[r * C + j] - mean) / std::sqrt(var + eps) * scale[j] + bias[j];
  }
  return y;
}

/// mean over rows of logsumexp(z) - z[y]
inline double xent_ref(Vec const& z, std::vector<int> const& labels, int B, int C) {
  double total = 0;
  for (int i = 0; i < B; ++i) {
    double m = z[std::size_t(i) * C];
    for (int c = 1; c < C; ++c) m = std::max(m, z[std::size_t(i) * C + c]);
    double s = 0;
    for (int c = 0; c < C; ++c) s += std::exp(z[std::size_t(i) * C + c] - m);
    total += m + std::log(s) - z[std::size_t(i) * C + labels[i]];
  }
  return total / B;
}

/// d f / d v[i] by central differences, in double.
inline Vec finite_difference(std::function<double(Vec const&)> const& f, Vec v, double h = 1e-6) {
  Vec g(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    double const keep = v[i];
    v[i] = keep + h;
    double const up = f(v);
    v[i] = keep - h;
    double const down = f(v);
    v[i] = keep;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

inline double dot(Vec const& a, Vec const& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace ktr::test
