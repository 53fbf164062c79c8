// The jets' kernels (models/jet.hpp): an activation's map of every channel and its reverse, and the three kinds of
// matrix product a dense layer needs (z = W^T a, ga = W gz, dW += a gz^T). Internal.
//
// A layer's jet is feature-major: (width, C, N), so that for each feature and channel the N points are contiguous.
// Every kernel then runs along the points: the activations vectorise over points whatever the width, and a
// product is a small matrix (the layer's kernel) times a long one (C N columns) or a reduction over the long one.
// Each kernel has a portable form (one element per iteration; the vendor gemm for float products, a plain loop for
// double) and a host form. On a host the activations run lanes of points (the activation's derivatives into lane
// arrays, then each channel as a vector loop), and products whose small dimensions are at most kMaxWide (a
// product) or kMaxSmall (a reduction) run as register-blocked loops along the points (BLAS's tiles and packing
// cost more than the arithmetic at a PINN's widths). A reduction over points sums fixed chunks, then the chunks in
// order: no result depends on the thread count.
#pragma once

#include "../backends/gemm.hpp"
#include "jet_activation.hpp"

#include <type_traits>

namespace ktr::jet {

using Range = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;

constexpr bool kHost = Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible;
// The host kernels' largest small dimensions (else gemm): measured on a Zen 4, a wide product by a 64 x 64 kernel
// runs as fast through BLAS (one of at most kMaxWide, as a first or last layer's, runs by hand), a reduction at
// 128 is 7% faster by hand.
constexpr std::int64_t kMaxWide = 32;
constexpr std::int64_t kMaxSmall = 128;
constexpr std::int64_t kChunks = 16;  // point chunks of a reduction's partial sums
/// Entries of scratch the host products need: kChunks partial tiles of the largest small product (a reduction), or
/// the small operand's coefficients in blocks of 4 rows (a wide product).
constexpr std::int64_t kScratch = kChunks * kMaxSmall * kMaxSmall;
constexpr std::int64_t kLanes = 64;  // a host activation's lanes of points per iteration

/// The channel tables a kernel reads: first channels 1..F, second channels with their two first channels,
/// Laplacian channels with theirs (CSR).
struct Tables {
  int F, S, L;
  Kokkos::View<int*, MemSpace> pairs, lap_start, lap_channels;
};

/// a = f(z) on every channel: the value, a_i = f' z_i, a_ij = f'' z_i z_j + f' z_ij, lap a = f'' sum z_k^2 + f'
/// lap z. z's value channel gets the bias first (z is kept with it). z and a are (w, C, N).
template <class T, class Act>
void activation_forward(ExecSpace const& space, Tables const& t, std::int64_t N, std::int64_t w, int C,
                        T const* bias, T* z, T* a) {
  int const F = t.F, S = t.S, L = t.L;
  auto pairs = t.pairs, lap_start = t.lap_start, lap_channels = t.lap_channels;
  if constexpr (kHost) {
    int const* pr = pairs.data();
    int const* ls = lap_start.data();
    int const* lc = lap_channels.data();
    std::int64_t const chunks = (N + kLanes - 1) / kLanes;
    Kokkos::parallel_for("ktr::jet::activation_forward", Range(space, 0, w * chunks), [=](std::int64_t item) {
      std::int64_t const o = item / chunks, n0 = item % chunks * kLanes, e0 = o * C * N + n0;
      std::int64_t const nl = N - n0 < kLanes ? N - n0 : kLanes;
      T f1[kLanes], f2[kLanes];
      T* const z0 = z + e0;
      T* const a0 = a + e0;
      T const b = bias[o];
      for (std::int64_t j = 0; j < nl; ++j) {
        JetDerivs<T> d;
        T const v = z0[j] + b;
        Act::eval(v, d);
        z0[j] = v, a0[j] = d.f, f1[j] = d.f1, f2[j] = d.f2;
      }
      for (int i = 1; i <= F; ++i)
        for (std::int64_t j = 0; j < nl; ++j) a0[i * N + j] = f1[j] * z0[i * N + j];
      for (int s = 0; s < S; ++s) {
        std::int64_t const c = (1 + F + s) * N, p = pr[2 * s] * N, q = pr[2 * s + 1] * N;
        for (std::int64_t j = 0; j < nl; ++j) a0[c + j] = f2[j] * z0[p + j] * z0[q + j] + f1[j] * z0[c + j];
      }
      for (int l = 0; l < L; ++l) {
        std::int64_t const c = (1 + F + S + l) * N;
        T sum[kLanes] = {};
        for (int k = ls[l]; k < ls[l + 1]; ++k)
          for (std::int64_t j = 0; j < nl; ++j) sum[j] += z0[lc[k] * N + j] * z0[lc[k] * N + j];
        for (std::int64_t j = 0; j < nl; ++j) a0[c + j] = f2[j] * sum[j] + f1[j] * z0[c + j];
      }
    });
    return;
  }
  Kokkos::parallel_for(
      "ktr::jet::activation_forward", Range(space, 0, w * N), KOKKOS_LAMBDA(std::int64_t item) {
        std::int64_t const o = item / N, e = o * C * N + item % N;
        T const z0 = z[e] + bias[o];
        z[e] = z0;
        JetDerivs<T> d;
        Act::eval(z0, d);
        a[e] = d.f;
        for (int i = 1; i <= F; ++i) a[e + i * N] = d.f1 * z[e + i * N];
        for (int s = 0; s < S; ++s) {
          int const c = 1 + F + s;
          a[e + c * N] = d.f2 * z[e + pairs(2 * s) * N] * z[e + pairs(2 * s + 1) * N] + d.f1 * z[e + c * N];
        }
        for (int l = 0; l < L; ++l) {
          int const c = 1 + F + S + l;
          T sum = 0;
          for (int k = lap_start(l); k < lap_start(l + 1); ++k) {
            T const zk = z[e + lap_channels(k) * N];
            sum += zk * zk;
          }
          a[e + c * N] = d.f2 * sum + d.f1 * z[e + c * N];
        }
      });
}

/// The reverse of activation_forward: gz from ga and z (with the bias), all (w, C, N).
template <class T, class Act>
void activation_backward(ExecSpace const& space, Tables const& t, std::int64_t N, std::int64_t w, int C,
                         T const* z, T const* ga, T* gz) {
  int const F = t.F, S = t.S, L = t.L;
  auto pairs = t.pairs, lap_start = t.lap_start, lap_channels = t.lap_channels;
  if constexpr (kHost) {
    int const* pr = pairs.data();
    int const* ls = lap_start.data();
    int const* lc = lap_channels.data();
    std::int64_t const chunks = (N + kLanes - 1) / kLanes;
    Kokkos::parallel_for("ktr::jet::activation_backward", Range(space, 0, w * chunks), [=](std::int64_t item) {
      std::int64_t const o = item / chunks, n0 = item % chunks * kLanes, e0 = o * C * N + n0;
      std::int64_t const nl = N - n0 < kLanes ? N - n0 : kLanes;
      T f1[kLanes], f2[kLanes], f3[kLanes], g0[kLanes];
      T const* const z0 = z + e0;
      T const* const ga0 = ga + e0;
      T* const gz0 = gz + e0;
      for (std::int64_t j = 0; j < nl; ++j) {
        JetDerivs<T> d;
        Act::eval(z0[j], d);
        f1[j] = d.f1, f2[j] = d.f2, f3[j] = d.f3, g0[j] = ga0[j] * d.f1;
      }
      for (int i = 1; i <= F; ++i)
        for (std::int64_t j = 0; j < nl; ++j) {
          T const g = ga0[i * N + j];
          g0[j] += g * f2[j] * z0[i * N + j];
          gz0[i * N + j] = g * f1[j];
        }
      for (int s = 0; s < S; ++s) {
        std::int64_t const c = (1 + F + s) * N, p = pr[2 * s] * N, q = pr[2 * s + 1] * N;
        for (std::int64_t j = 0; j < nl; ++j) {
          T const g = ga0[c + j], zp = z0[p + j], zq = z0[q + j];
          g0[j] += g * (f3[j] * zp * zq + f2[j] * z0[c + j]);
          gz0[p + j] += g * f2[j] * zq;
          gz0[q + j] += g * f2[j] * zp;
          gz0[c + j] = g * f1[j];
        }
      }
      for (int l = 0; l < L; ++l) {
        std::int64_t const c = (1 + F + S + l) * N;
        T sum[kLanes] = {};
        for (int k = ls[l]; k < ls[l + 1]; ++k)
          for (std::int64_t j = 0; j < nl; ++j) {
            std::int64_t const ck = lc[k] * N + j;
            sum[j] += z0[ck] * z0[ck];
            gz0[ck] += T(2) * ga0[c + j] * f2[j] * z0[ck];
          }
        for (std::int64_t j = 0; j < nl; ++j) {
          g0[j] += ga0[c + j] * (f3[j] * sum[j] + f2[j] * z0[c + j]);
          gz0[c + j] = ga0[c + j] * f1[j];
        }
      }
      for (std::int64_t j = 0; j < nl; ++j) gz0[j] = g0[j];
    });
    return;
  }
  Kokkos::parallel_for(
      "ktr::jet::activation_backward", Range(space, 0, w * N), KOKKOS_LAMBDA(std::int64_t item) {
        std::int64_t const e = item / N * C * N + item % N;
        JetDerivs<T> d;
        Act::eval(z[e], d);
        T g0 = ga[e] * d.f1;
        for (int i = 1; i <= F; ++i) {
          T const g = ga[e + i * N];
          g0 += g * d.f2 * z[e + i * N];
          gz[e + i * N] = g * d.f1;
        }
        for (int s = 0; s < S; ++s) {
          int const c = 1 + F + s, p = pairs(2 * s), q = pairs(2 * s + 1);
          T const g = ga[e + c * N], zp = z[e + p * N], zq = z[e + q * N];
          g0 += g * (d.f3 * zp * zq + d.f2 * z[e + c * N]);
          gz[e + p * N] += g * d.f2 * zq;
          gz[e + q * N] += g * d.f2 * zp;
          gz[e + c * N] = g * d.f1;
        }
        for (int l = 0; l < L; ++l) {
          int const c = 1 + F + S + l;
          T const g = ga[e + c * N];
          T sum = 0;
          for (int k = lap_start(l); k < lap_start(l + 1); ++k) {
            std::int64_t const ck = e + lap_channels(k) * N;
            sum += z[ck] * z[ck];
            gz[ck] += T(2) * g * d.f2 * z[ck];
          }
          g0 += g * (d.f3 * sum + d.f2 * z[e + c * N]);
          gz[e + c * N] = g * d.f1;
        }
        gz[e] = g0;
      });
}

/// 4 rows of c (row stride L) from a panel of 4 kV columns of b (K rows, stride L) and the rows' coefficients v
/// (K x 4, row-major): 16 accumulators of one register each (acc[4 r + q]: row r, the panel's q-th vector), each
/// step one row of the panel times 4 broadcasts.
template <class T, int kV>
inline void panel_rows(T const* KOKKOS_RESTRICT v, T const* KOKKOS_RESTRICT b, T* KOKKOS_RESTRICT c,
                       std::int64_t K, std::int64_t L, std::int64_t rows) {
  T acc[16][kV] = {};
  for (std::int64_t k = 0; k < K; ++k) {
    T const* KOKKOS_RESTRICT const bk = b + k * L;
    T const v0 = v[4 * k], v1 = v[4 * k + 1], v2 = v[4 * k + 2], v3 = v[4 * k + 3];
    for (int j = 0; j < kV; ++j) {
      T const y0 = bk[j], y1 = bk[kV + j], y2 = bk[2 * kV + j], y3 = bk[3 * kV + j];
      acc[0][j] += v0 * y0, acc[1][j] += v0 * y1, acc[2][j] += v0 * y2, acc[3][j] += v0 * y3;
      acc[4][j] += v1 * y0, acc[5][j] += v1 * y1, acc[6][j] += v1 * y2, acc[7][j] += v1 * y3;
      acc[8][j] += v2 * y0, acc[9][j] += v2 * y1, acc[10][j] += v2 * y2, acc[11][j] += v2 * y3;
      acc[12][j] += v3 * y0, acc[13][j] += v3 * y1, acc[14][j] += v3 * y2, acc[15][j] += v3 * y3;
    }
  }
  for (std::int64_t r = 0; r < rows; ++r)
    for (int q = 0; q < 4; ++q)
      for (int j = 0; j < kV; ++j) c[r * L + q * kV + j] = acc[4 * r + q][j];
}

/// c (M, L) = op(a) (M, K) b (K, L), L long (a layer's C N columns): one item per panel of kB columns of b (K x
/// kB, kept in L1) for every row of c, 4 rows at a time (panel_rows). op(a): a (M, K), or (`ta`) a (K, M)
/// transposed; its coefficients are first laid out 4 rows by 4 rows in `coef` (K x 4 per block of rows, zero
/// beyond M).
template <class T>
void wide_product(ExecSpace const& space, bool ta, T const* a, T const* b, T* c, std::int64_t M, std::int64_t L,
                  std::int64_t K, T* coef) {
  constexpr int kV = 32 / sizeof(T), kB = 4 * kV;  // 4 rows x 4 256-bit registers of accumulators
  std::int64_t const row_blocks = (M + 3) / 4, blocks = (L + kB - 1) / kB;
  Kokkos::parallel_for("ktr::jet::wide_coefficients", Range(space, 0, row_blocks * K * 4), [=](std::int64_t e) {
    std::int64_t const r = e / (4 * K) * 4 + e % 4, k = e / 4 % K;
    coef[e] = r < M ? (ta ? a[k * M + r] : a[r * K + k]) : T(0);
  });
  Kokkos::parallel_for("ktr::jet::wide_product", Range(space, 0, blocks), [=](std::int64_t item) {
    std::int64_t const j0 = item * kB, n = L - j0 < kB ? L - j0 : kB;
    for (std::int64_t r0 = 0; r0 < M; r0 += 4) {
      T const* const v = coef + r0 * K;
      std::int64_t const rows = M - r0 < 4 ? M - r0 : 4;
      if (n == kB) {
        panel_rows<T, kV>(v, b + j0, c + r0 * L + j0, K, L, rows);
      } else {
        T acc[4][kB] = {};
        for (std::int64_t k = 0; k < K; ++k)
          for (std::int64_t r = 0; r < 4; ++r)
            for (std::int64_t j = 0; j < n; ++j) acc[r][j] += v[4 * k + r] * b[k * L + j0 + j];
        for (std::int64_t r = 0; r < rows; ++r)
          for (std::int64_t j = 0; j < n; ++j) c[(r0 + r) * L + j0 + j] = acc[r][j];
      }
    }
  });
}

/// c (M, Nn) += a (M, K) b (Nn, K)^T, K long (a layer's C N points): kChunks fixed chunks of K, each item 4 x 4
/// entries of one chunk with vector accumulators, its partial tile into `part`; then the chunks summed in order.
template <class T>
void long_reduce(ExecSpace const& space, T const* a, T const* b, T* c, std::int64_t M, std::int64_t Nn,
                 std::int64_t K, T* part) {
  constexpr std::int64_t kV = 32 / sizeof(T);  // one 256-bit register of lanes: 16 accumulators and 8 operands
  std::int64_t const chunk = ((K + kChunks - 1) / kChunks + kV - 1) / kV * kV;
  std::int64_t const rb = (M + 3) / 4, qb = (Nn + 3) / 4, tile = M * Nn;
  Kokkos::parallel_for("ktr::jet::long_reduce", Range(space, 0, kChunks * rb * qb), [=](std::int64_t item) {
    std::int64_t const p = item / (rb * qb), r0 = item / qb % rb * 4, q0 = item % qb * 4;
    std::int64_t const k0 = p * chunk < K ? p * chunk : K, k1 = k0 + chunk < K ? k0 + chunk : K;
    // a tail block repeats the last row or column; its sums are dropped
    auto row = [&](T const* base, std::int64_t i, std::int64_t n) { return base + (i < n ? i : n - 1) * K; };
    T const* KOKKOS_RESTRICT const a0 = row(a, r0, M);
    T const* KOKKOS_RESTRICT const a1 = row(a, r0 + 1, M);
    T const* KOKKOS_RESTRICT const a2 = row(a, r0 + 2, M);
    T const* KOKKOS_RESTRICT const a3 = row(a, r0 + 3, M);
    T const* KOKKOS_RESTRICT const b0 = row(b, q0, Nn);
    T const* KOKKOS_RESTRICT const b1 = row(b, q0 + 1, Nn);
    T const* KOKKOS_RESTRICT const b2 = row(b, q0 + 2, Nn);
    T const* KOKKOS_RESTRICT const b3 = row(b, q0 + 3, Nn);
    T acc[16][kV] = {};  // acc[4 r + q]: one vector of lanes each, along the points
    std::int64_t k = k0;
    for (; k + kV <= k1; k += kV)
      for (std::int64_t v = 0; v < kV; ++v) {
        T const x0 = a0[k + v], x1 = a1[k + v], x2 = a2[k + v], x3 = a3[k + v];
        T const y0 = b0[k + v], y1 = b1[k + v], y2 = b2[k + v], y3 = b3[k + v];
        acc[0][v] += x0 * y0, acc[1][v] += x0 * y1, acc[2][v] += x0 * y2, acc[3][v] += x0 * y3;
        acc[4][v] += x1 * y0, acc[5][v] += x1 * y1, acc[6][v] += x1 * y2, acc[7][v] += x1 * y3;
        acc[8][v] += x2 * y0, acc[9][v] += x2 * y1, acc[10][v] += x2 * y2, acc[11][v] += x2 * y3;
        acc[12][v] += x3 * y0, acc[13][v] += x3 * y1, acc[14][v] += x3 * y2, acc[15][v] += x3 * y3;
      }
    T const* KOKKOS_RESTRICT const as[4] = {a0, a1, a2, a3};
    T const* KOKKOS_RESTRICT const bs[4] = {b0, b1, b2, b3};
    for (; k < k1; ++k)
      for (int r = 0; r < 4; ++r)
        for (int q = 0; q < 4; ++q) acc[4 * r + q][0] += as[r][k] * bs[q][k];
    T* const out = part + p * tile;
    for (int r = 0; r < 4 && r0 + r < M; ++r)
      for (int q = 0; q < 4 && q0 + q < Nn; ++q) {
        T s = 0;
        for (std::int64_t v = 0; v < kV; ++v) s += acc[4 * r + q][v];
        out[(r0 + r) * Nn + q0 + q] = s;
      }
  });
  Kokkos::parallel_for("ktr::jet::long_reduce_sum", Range(space, 0, tile), [=](std::int64_t e) {
    T s = c[e];
    for (std::int64_t p = 0; p < kChunks; ++p) s += part[p * tile + e];
    c[e] = s;
  });
}

/// C = op(A) op(B) + beta C, row-major; op(A) (M, K), op(B) (K, N). The jet's three kinds: TN (z = W^T a, beta
/// 0), NN (ga = W gz, beta 0) and NT (dW += a gz^T, beta 1). `scratch`: kScratch entries of T on host builds.
template <class T>
void product(ExecSpace const& space, bool ta, bool tb, T const* a, T const* b, T beta, T* c, std::int64_t M,
             std::int64_t N, std::int64_t K, T* scratch) {
  if (M == 0 || N == 0) return;
  if constexpr (kHost) {
    if (!tb && beta == T(0) && (M <= kMaxWide || K <= kMaxWide) && M <= kMaxSmall && K <= kMaxSmall) {
      wide_product(space, ta, a, b, c, M, N, K, scratch);
      return;
    }
    if (!ta && tb && beta == T(1) && M <= kMaxSmall && N <= kMaxSmall) {
      long_reduce(space, a, b, c, M, N, K, scratch);
      return;
    }
  }
  if constexpr (std::is_same_v<T, float>) {
    ConstMatrix const A(a, std::size_t(ta ? K : M), std::size_t(ta ? M : K));
    ConstMatrix const B(b, std::size_t(tb ? N : K), std::size_t(tb ? K : N));
    gemm(space, Precision{}, ta, tb, 1.0f, A, B, beta, Matrix(c, std::size_t(M), std::size_t(N)));
  } else {
    // A plain product (GPU builds, and host products beyond the row kernels' widths): fp64 jets are references.
    Kokkos::parallel_for(
        "ktr::jet::product_fp64", MDRange<2>(space, {0, 0}, {M, N}),
        KOKKOS_LAMBDA(std::int64_t i, std::int64_t j) {
          T s = 0;
          for (std::int64_t k = 0; k < K; ++k)
            s += (ta ? a[k * M + i] : a[i * K + k]) * (tb ? b[j * K + k] : b[k * N + j]);
          c[i * N + j] = beta == T(0) ? s : s + beta * c[i * N + j];
        });
  }
}

}  // namespace ktr::jet
