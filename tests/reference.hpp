// Plain host double-precision references for the layers and the loss, and central finite differences over them.
// Device results are checked against these; device gradients against finite differences of these.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
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

/// NHWC 3x3 SAME conv, kernel HWIO (3, 3, C, F)
inline Vec conv_ref(Vec const& x, Vec const& w, Vec const& b, int B, int H, int W, int C, int F, bool relu) {
  Vec y(std::size_t(B) * H * W * F);
  for (int n = 0; n < B; ++n)
    for (int h = 0; h < H; ++h)
      for (int v = 0; v < W; ++v)
        for (int f = 0; f < F; ++f) {
          double s = b[f];
          for (int kh = 0; kh < 3; ++kh)
            for (int kw = 0; kw < 3; ++kw) {
              int const hh = h + kh - 1, ww = v + kw - 1;
              if (hh < 0 || hh >= H || ww < 0 || ww >= W) continue;
              for (int c = 0; c < C; ++c)
                s += x[((std::size_t(n) * H + hh) * W + ww) * C + c] *
                     w[((std::size_t(kh) * 3 + kw) * C + c) * F + f];
            }
          y[((std::size_t(n) * H + h) * W + v) * F + f] = relu ? std::max(0.0, s) : s;
        }
  return y;
}

/// 2x2 stride-2 VALID average pooling, NHWC
inline Vec pool_ref(Vec const& x, int B, int H, int W, int C) {
  int const Ho = H / 2, Wo = W / 2;
  Vec y(std::size_t(B) * Ho * Wo * C);
  for (int n = 0; n < B; ++n)
    for (int i = 0; i < Ho; ++i)
      for (int j = 0; j < Wo; ++j)
        for (int c = 0; c < C; ++c) {
          auto at = [&](int h, int w) { return x[((std::size_t(n) * H + h) * W + w) * C + c]; };
          y[((std::size_t(n) * Ho + i) * Wo + j) * C + c] =
              0.25 * (at(2 * i, 2 * j) + at(2 * i, 2 * j + 1) + at(2 * i + 1, 2 * j) + at(2 * i + 1, 2 * j + 1));
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
