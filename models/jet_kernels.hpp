// The jets' kernels (models/jet.hpp): an activation's map of every channel and its reverse, and the three kinds of
// matrix product a dense layer needs (z = a W, ga = gz W^T, dW += a^T gz). Internal.
//
// Each has a portable form (one element per iteration; the vendor gemm for float products, a plain loop for
// double) and a host form. On a host the activations run a row's lanes at a time (the activation's derivatives
// into lane arrays, then each channel as a vector loop), and products with at most 32 columns (a PINN's widths: a
// BLAS gemm with 20 to 32 columns runs at a fraction of its rate, its tiles wider than the problem and its packing
// as dear as its arithmetic; at 64 the row loops' accumulators no longer fit the registers and BLAS is faster) run
// as register-blocked row loops over a zero-padded copy of the small operand. A
// reduction over rows sums fixed row chunks, then the chunks in order: no result depends on the thread count.
#pragma once

#include "../backends/gemm.hpp"
#include "jet_activation.hpp"

#include <type_traits>

namespace ktr::jet {

using Range = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;

constexpr bool kHost = Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible;
constexpr std::int64_t kMaxColumns = 32;  // the host products' widest padded operand
constexpr std::int64_t kChunks = 32;      // row chunks of a reduction's partial sums
/// Entries of scratch the host products need: kChunks partial tiles and one padded operand.
constexpr std::int64_t kScratch = (kChunks + 1) * kMaxColumns * kMaxColumns;
constexpr std::int64_t kLanes = 64;  // a host activation's lanes per iteration

/// The channel tables a kernel reads: first channels 1..F, second channels with their two first channels,
/// Laplacian channels with theirs (CSR).
struct Tables {
  int F, S, L;
  Kokkos::View<int*, MemSpace> pairs, lap_start, lap_channels;
};

/// a = f(z) on every channel: the value, a_i = f' z_i, a_ij = f'' z_i z_j + f' z_ij, lap a = f'' sum z_k^2 + f'
/// lap z. z's value channel gets the bias first (z is kept with it). z and a are (C, N, w).
template <class T, class Act>
void activation_forward(ExecSpace const& space, Tables const& t, std::int64_t N, std::int64_t w, T const* bias,
                        T* z, T* a) {
  std::int64_t const P = N * w;
  int const F = t.F, S = t.S, L = t.L;
  auto pairs = t.pairs, lap_start = t.lap_start, lap_channels = t.lap_channels;
  if constexpr (kHost) {
    int const* pr = pairs.data();
    int const* ls = lap_start.data();
    int const* lc = lap_channels.data();
    std::int64_t const chunks = (w + kLanes - 1) / kLanes;
    Kokkos::parallel_for("ktr::jet::activation_forward", Range(space, 0, N * chunks), [=](std::int64_t item) {
      std::int64_t const o0 = item % chunks * kLanes, e0 = item / chunks * w + o0;
      std::int64_t const nl = w - o0 < kLanes ? w - o0 : kLanes;
      T f1[kLanes], f2[kLanes];
      T* const z0 = z + e0;
      T* const a0 = a + e0;
      for (std::int64_t j = 0; j < nl; ++j) {
        JetDerivs<T> d;
        T const v = z0[j] + bias[o0 + j];
        Act::eval(v, d);
        z0[j] = v, a0[j] = d.f, f1[j] = d.f1, f2[j] = d.f2;
      }
      for (int i = 1; i <= F; ++i)
        for (std::int64_t j = 0; j < nl; ++j) a0[i * P + j] = f1[j] * z0[i * P + j];
      for (int s = 0; s < S; ++s) {
        std::int64_t const c = (1 + F + s) * P, p = pr[2 * s] * P, q = pr[2 * s + 1] * P;
        for (std::int64_t j = 0; j < nl; ++j) a0[c + j] = f2[j] * z0[p + j] * z0[q + j] + f1[j] * z0[c + j];
      }
      for (int l = 0; l < L; ++l) {
        std::int64_t const c = (1 + F + S + l) * P;
        T sum[kLanes] = {};
        for (int k = ls[l]; k < ls[l + 1]; ++k)
          for (std::int64_t j = 0; j < nl; ++j) sum[j] += z0[lc[k] * P + j] * z0[lc[k] * P + j];
        for (std::int64_t j = 0; j < nl; ++j) a0[c + j] = f2[j] * sum[j] + f1[j] * z0[c + j];
      }
    });
    return;
  }
  Kokkos::parallel_for(
      "ktr::jet::activation_forward", Range(space, 0, P), KOKKOS_LAMBDA(std::int64_t e) {
        T const z0 = z[e] + bias[e % w];
        z[e] = z0;
        JetDerivs<T> d;
        Act::eval(z0, d);
        a[e] = d.f;
        for (int i = 1; i <= F; ++i) a[i * P + e] = d.f1 * z[i * P + e];
        for (int s = 0; s < S; ++s) {
          int const c = 1 + F + s;
          a[c * P + e] = d.f2 * z[pairs(2 * s) * P + e] * z[pairs(2 * s + 1) * P + e] + d.f1 * z[c * P + e];
        }
        for (int l = 0; l < L; ++l) {
          int const c = 1 + F + S + l;
          T sum = 0;
          for (int k = lap_start(l); k < lap_start(l + 1); ++k) {
            T const zk = z[lap_channels(k) * P + e];
            sum += zk * zk;
          }
          a[c * P + e] = d.f2 * sum + d.f1 * z[c * P + e];
        }
      });
}

/// The reverse of activation_forward: gz from ga and z (with the bias), all (C, N, w).
template <class T, class Act>
void activation_backward(ExecSpace const& space, Tables const& t, std::int64_t N, std::int64_t w, T const* z,
                         T const* ga, T* gz) {
  std::int64_t const P = N * w;
  int const F = t.F, S = t.S, L = t.L;
  auto pairs = t.pairs, lap_start = t.lap_start, lap_channels = t.lap_channels;
  if constexpr (kHost) {
    int const* pr = pairs.data();
    int const* ls = lap_start.data();
    int const* lc = lap_channels.data();
    std::int64_t const chunks = (w + kLanes - 1) / kLanes;
    Kokkos::parallel_for("ktr::jet::activation_backward", Range(space, 0, N * chunks), [=](std::int64_t item) {
      std::int64_t const o0 = item % chunks * kLanes, e0 = item / chunks * w + o0;
      std::int64_t const nl = w - o0 < kLanes ? w - o0 : kLanes;
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
          T const g = ga0[i * P + j];
          g0[j] += g * f2[j] * z0[i * P + j];
          gz0[i * P + j] = g * f1[j];
        }
      for (int s = 0; s < S; ++s) {
        std::int64_t const c = (1 + F + s) * P, p = pr[2 * s] * P, q = pr[2 * s + 1] * P;
        for (std::int64_t j = 0; j < nl; ++j) {
          T const g = ga0[c + j], zp = z0[p + j], zq = z0[q + j];
          g0[j] += g * (f3[j] * zp * zq + f2[j] * z0[c + j]);
          gz0[p + j] += g * f2[j] * zq;
          gz0[q + j] += g * f2[j] * zp;
          gz0[c + j] = g * f1[j];
        }
      }
      for (int l = 0; l < L; ++l) {
        std::int64_t const c = (1 + F + S + l) * P;
        T sum[kLanes] = {};
        for (int k = ls[l]; k < ls[l + 1]; ++k)
          for (std::int64_t j = 0; j < nl; ++j) {
            std::int64_t const ck = lc[k] * P + j;
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
      "ktr::jet::activation_backward", Range(space, 0, P), KOKKOS_LAMBDA(std::int64_t e) {
        JetDerivs<T> d;
        Act::eval(z[e], d);
        T g0 = ga[e] * d.f1;
        for (int i = 1; i <= F; ++i) {
          T const g = ga[i * P + e];
          g0 += g * d.f2 * z[i * P + e];
          gz[i * P + e] = g * d.f1;
        }
        for (int s = 0; s < S; ++s) {
          int const c = 1 + F + s, p = pairs(2 * s), q = pairs(2 * s + 1);
          T const g = ga[c * P + e], zp = z[p * P + e], zq = z[q * P + e];
          g0 += g * (d.f3 * zp * zq + d.f2 * z[c * P + e]);
          gz[p * P + e] += g * d.f2 * zq;
          gz[q * P + e] += g * d.f2 * zp;
          gz[c * P + e] = g * d.f1;
        }
        for (int l = 0; l < L; ++l) {
          int const c = 1 + F + S + l;
          T const g = ga[c * P + e];
          T sum = 0;
          for (int k = lap_start(l); k < lap_start(l + 1); ++k) {
            std::int64_t const ck = lap_channels(k) * P + e;
            sum += z[ck] * z[ck];
            gz[ck] += T(2) * g * d.f2 * z[ck];
          }
          g0 += g * (d.f3 * sum + d.f2 * z[c * P + e]);
          gz[c * P + e] = g * d.f1;
        }
        gz[e] = g0;
      });
}

/// Runs f(std::integral_constant<int, NB>) with NB = n rounded up to 16 (n <= kMaxColumns).
template <class F>
void with_padded_columns(std::int64_t n, F const& f) {
  static_assert(kMaxColumns == 32, "one NB per multiple of 16 up to kMaxColumns");
  if (n <= 16)
    f(std::integral_constant<int, 16>{});
  else
    f(std::integral_constant<int, 32>{});
}

/// bp (k, NB) = b (k, n) (or, `transposed`, b (n, k) transposed), columns n..NB zero.
template <int NB, class T>
void pad_operand(ExecSpace const& space, T const* b, bool transposed, std::int64_t k, std::int64_t n, T* bp) {
  Kokkos::parallel_for("ktr::jet::pad_operand", Range(space, 0, k * NB), [=](std::int64_t e) {
    std::int64_t const i = e / NB, j = e % NB;
    bp[e] = j < n ? (transposed ? b[j * k + i] : b[i * n + j]) : T(0);
  });
}

/// c (M, n) = a (M, k) bp (k, NB padded), 4 rows of c in registers at a time.
template <int NB, class T>
void rows_product(ExecSpace const& space, T const* a, T const* bp, T* c, std::int64_t M, std::int64_t n,
                  std::int64_t k) {
  Kokkos::parallel_for("ktr::jet::rows_product", Range(space, 0, (M + 3) / 4), [=](std::int64_t g) {
    std::int64_t const r0 = 4 * g;
    T acc[4][NB] = {};
    if (r0 + 4 <= M) {
      T const *a0 = a + r0 * k, *a1 = a0 + k, *a2 = a1 + k, *a3 = a2 + k;
      for (std::int64_t i = 0; i < k; ++i) {
        T const* bi = bp + i * NB;
        T const v0 = a0[i], v1 = a1[i], v2 = a2[i], v3 = a3[i];
        for (int j = 0; j < NB; ++j) {
          acc[0][j] += v0 * bi[j], acc[1][j] += v1 * bi[j];
          acc[2][j] += v2 * bi[j], acc[3][j] += v3 * bi[j];
        }
      }
      for (int r = 0; r < 4; ++r)
        for (std::int64_t j = 0; j < n; ++j) c[(r0 + r) * n + j] = acc[r][j];
    } else {
      for (std::int64_t r = r0; r < M; ++r) {
        for (std::int64_t i = 0; i < k; ++i)
          for (int j = 0; j < NB; ++j) acc[0][j] += a[r * k + i] * bp[i * NB + j];
        for (std::int64_t j = 0; j < n; ++j) c[r * n + j] = acc[0][j], acc[0][j] = T(0);
      }
    }
  });
}

/// c (k, n) += a^T g, a (M, k), g (M, n): kChunks partial tiles (k, NB), each 4 of its rows in registers over the
/// chunk's rows, then the tiles summed in chunk order.
template <int NB, class T>
void rows_reduce(ExecSpace const& space, T const* a, T const* g, T* c, std::int64_t M, std::int64_t k,
                 std::int64_t n, T* part) {
  std::int64_t const chunk = (M + kChunks - 1) / kChunks, tile = k * NB, blocks = (k + 3) / 4;
  Kokkos::parallel_for("ktr::jet::rows_reduce", Range(space, 0, kChunks * blocks), [=](std::int64_t item) {
    std::int64_t const p = item / blocks, i0 = item % blocks * 4;
    std::int64_t const r1 = (p + 1) * chunk < M ? (p + 1) * chunk : M;
    T acc[4][NB] = {};
    for (std::int64_t r = p * chunk; r < r1; ++r) {
      T const* gr = g + r * n;
      T gl[NB];
      for (int j = 0; j < NB; ++j) gl[j] = j < n ? gr[j] : T(0);
      T const* ar = a + r * k + i0;
      T const v0 = ar[0], v1 = i0 + 1 < k ? ar[1] : T(0), v2 = i0 + 2 < k ? ar[2] : T(0),
              v3 = i0 + 3 < k ? ar[3] : T(0);
      for (int j = 0; j < NB; ++j) {
        acc[0][j] += v0 * gl[j], acc[1][j] += v1 * gl[j];
        acc[2][j] += v2 * gl[j], acc[3][j] += v3 * gl[j];
      }
    }
    T* const out = part + p * tile;
    for (std::int64_t q = 0; q < 4 && i0 + q < k; ++q)
      for (int j = 0; j < NB; ++j) out[(i0 + q) * NB + j] = acc[q][j];
  });
  Kokkos::parallel_for("ktr::jet::rows_reduce_sum", Range(space, 0, k * n), [=](std::int64_t e) {
    std::int64_t const i = e / n, j = e % n;
    T s = c[e];
    for (std::int64_t p = 0; p < kChunks; ++p) s += part[p * tile + i * NB + j];
    c[e] = s;
  });
}

/// C = op(A) op(B) + beta C, row-major; op(A) (M, K), op(B) (K, N). The jet's three kinds: NN (z = a W, beta 0),
/// NT (ga = gz W^T, beta 0) and TN (dW += a^T gz, beta 1). `scratch`: kScratch entries of T on host builds.
template <class T>
void product(ExecSpace const& space, bool ta, bool tb, T const* a, T const* b, T beta, T* c, std::int64_t M,
             std::int64_t N, std::int64_t K, T* scratch) {
  if (M == 0 || N == 0) return;
  if constexpr (kHost) {
    T* const padded = scratch + kChunks * kMaxColumns * kMaxColumns;
    if (!ta && beta == T(0) && N <= kMaxColumns && K <= kMaxColumns) {
      with_padded_columns(N, [&](auto nb) {
        pad_operand<nb()>(space, b, tb, K, N, padded);
        rows_product<nb()>(space, a, static_cast<T const*>(padded), c, M, N, K);
      });
      return;
    }
    if (ta && !tb && beta == T(1) && N <= kMaxColumns && M <= kMaxColumns) {
      with_padded_columns(N, [&](auto nb) { rows_reduce<nb()>(space, a, b, c, K, M, N, scratch); });
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
