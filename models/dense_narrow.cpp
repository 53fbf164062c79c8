// Dense layers with few outputs, without BLAS: see dense_narrow.hpp.
#include "dense_narrow.hpp"

#include "../backends/gemm.hpp"
#include "dense_narrow_dpbf16.hpp"
#include "pack.hpp"

#include <algorithm>

#include <type_traits>

namespace ktr::impl {

namespace {

constexpr int V = host_pack_width;
using Range = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;

// Rows in groups of G; within a group the input runs in chunks of KC columns, each chunk of wt (NB x KC floats)
// staying in L1 while the group's rows stream past it (per row, wt would stream from L2 at every row).
// R: bf16 inputs (the run's precision): x rounded as it is loaded, wt rounded by the transpose.
template <int NB, class A, bool R>
void forward_impl(ExecSpace const& space, std::int64_t B, std::int64_t K, std::int64_t N, float const* x,
                  float const* wt, float const* b, float* z, float* y) {
  constexpr int G = 4;
  constexpr std::int64_t KC = 256;
  Kokkos::parallel_for(
      "ktr::dense::narrow_forward", Range(space, 0, (B + G - 1) / G), KOKKOS_LAMBDA(std::int64_t group) {
        std::int64_t const r0 = group * G;
        int const rows = B - r0 < G ? int(B - r0) : G;
        std::int64_t const kv = K / V * V;  // columns in whole packs
        if (kv == 0) {  // fewer inputs than a pack (an RL network's state): no packs to clear and sum
          for (int i = 0; i < rows; ++i) {
            std::int64_t const r = r0 + i;
            for (int n = 0; n < N; ++n) {
              float tail = 0.0f;
              for (std::int64_t k = 0; k < K; ++k) tail += bf16_if<R>(x[r * K + k]) * wt[n * K + k];
              float const v = b[n] + tail;
              if (A::needs_input) z[r * N + n] = v;
              y[r * N + n] = A::forward(v);
            }
          }
          return;
        }
        Pack<V> part[G][NB];
        for (int i = 0; i < G; ++i)
          for (int n = 0; n < NB; ++n) part[i][n] = Pack<V>::zero();
        for (std::int64_t k0 = 0; k0 < kv; k0 += KC) {
          std::int64_t const k1 = k0 + KC < kv ? k0 + KC : kv;
          for (int i = 0; i < rows; ++i) {
            float const* xr = x + (r0 + i) * K;
            Pack<V> acc[NB];
            for (int n = 0; n < NB; ++n) acc[n] = part[i][n];
            for (std::int64_t k = k0; k < k1; k += V) {
              Pack<V> const xv = bf16_if<R>(Pack<V>::load(xr + k));
              for (int n = 0; n < NB; ++n) acc[n].fma(xv, Pack<V>::load(wt + n * K + k));
            }
            for (int n = 0; n < NB; ++n) part[i][n] = acc[n];
          }
        }
        for (int i = 0; i < rows; ++i) {
          std::int64_t const r = r0 + i;
          float tail[NB];
          for (int n = 0; n < NB; ++n) tail[n] = 0.0f;
          for (std::int64_t k = kv; k < K; ++k)
            for (int n = 0; n < NB; ++n) tail[n] += bf16_if<R>(x[r * K + k]) * wt[n * K + k];
          for (int n = 0; n < NB; ++n)
            if (n < N) {
              float const v = b[n] + (part[i][n].sum() + tail[n]);
              if (A::needs_input) z[r * N + n] = v;
              y[r * N + n] = A::forward(v);
            }
        }
      });
}

// U packs of k per iteration (two where the vector registers hold 2 NB accumulators: AVX-512); the rows run in
// blocks of RB whose dy is first copied into a zero-padded (RB, NB) tile, so the inner loop has no bounds tests.
template <int NB, bool R>
void kernel_grad_impl(ExecSpace const& space, std::int64_t B, std::int64_t K, std::int64_t N, float const* x,
                      float const* dy, float* dw) {
  constexpr int U = V == 16 ? 2 : 1;
  constexpr int RB = 32;
  Kokkos::parallel_for(
      "ktr::dense::narrow_kernel_grad", Range(space, 0, (K + U * V - 1) / (U * V)), KOKKOS_LAMBDA(std::int64_t p) {
        std::int64_t const k0 = p * U * V;
        int const m = K - k0 < U * V ? int(K - k0) : U * V;  // columns of this iteration
        Pack<V> acc[U][NB];
        for (int u = 0; u < U; ++u)
          for (int n = 0; n < NB; ++n) acc[u][n] = Pack<V>::zero();
        float g[RB][NB];
        for (std::int64_t r0 = 0; r0 < B; r0 += RB) {
          int const rows = B - r0 < RB ? int(B - r0) : RB;
          for (int i = 0; i < rows; ++i)
            for (int n = 0; n < NB; ++n) g[i][n] = n < N ? bf16_if<R>(dy[(r0 + i) * N + n]) : 0.0f;
          for (int i = 0; i < rows; ++i) {
            float const* xr = x + (r0 + i) * K + k0;
            Pack<V> xv[U];
            if (m == U * V) {
              for (int u = 0; u < U; ++u) xv[u] = bf16_if<R>(Pack<V>::load(xr + u * V));
            } else {
              float part[U * V];
              for (int j = 0; j < U * V; ++j) part[j] = j < m ? xr[j] : 0.0f;
              for (int u = 0; u < U; ++u) xv[u] = bf16_if<R>(Pack<V>::load(part + u * V));
            }
            for (int n = 0; n < NB; ++n)
              for (int u = 0; u < U; ++u) acc[u][n].fma(g[i][n], xv[u]);
          }
        }
        float out[U * V];
        for (int n = 0; n < NB; ++n) {
          if (n >= N) break;
          for (int u = 0; u < U; ++u) acc[u][n].store(out + u * V);
          for (int j = 0; j < m; ++j) dw[(k0 + j) * N + n] = out[j];
        }
      });
}

template <int NB, bool R>
void input_grad_impl(ExecSpace const& space, std::int64_t B, std::int64_t K, std::int64_t N, float const* dy,
                     float const* wt, float* dx) {
  constexpr int T = 4;  // packs of k per iteration: independent accumulators
  std::int64_t const tiles = (K + T * V - 1) / (T * V);
  Kokkos::parallel_for(
      // Rows fastest: consecutive iterations of a thread reuse the tile of wt (NB x T packs) from L1.
      "ktr::dense::narrow_input_grad", MDRange<2>(space, {0, 0}, {tiles, B}),
      KOKKOS_LAMBDA(std::int64_t t, std::int64_t r) {
        std::int64_t const k0 = t * T * V;
        float g[NB];
        for (int n = 0; n < NB; ++n) g[n] = n < N ? bf16_if<R>(dy[r * N + n]) : 0.0f;
        if (k0 + T * V <= K) {
          Pack<V> acc[T];
          for (int u = 0; u < T; ++u) acc[u] = Pack<V>::zero();
          for (int n = 0; n < NB; ++n)
            for (int u = 0; u < T; ++u) acc[u].fma(g[n], Pack<V>::load(wt + n * K + k0 + u * V));
          for (int u = 0; u < T; ++u) acc[u].store(dx + r * K + k0 + u * V);
        } else {
          for (std::int64_t k = k0; k < K; ++k) {
            float s = 0.0f;
            for (int n = 0; n < NB; ++n) s += g[n] * wt[n * K + k];
            dx[r * K + k] = s;
          }
        }
      });
}

}  // namespace

bool dense_narrow(std::int64_t features) { return device_is_host && features <= dense_narrow_max_features; }

// The fp32 transposed kernel, or under bf16 the dot-product kernels' layouts (whichever precision a run takes).
std::int64_t dense_narrow_scratch(std::int64_t in_features, std::int64_t features) {
  return std::max(dense_narrow_rows(features) * in_features, dense_dpbf16_scratch(in_features, features));
}

namespace {
// Under bf16 on a CPU with AVX512-BF16 the products run as dot products (dense_narrow_dpbf16.hpp).
bool dot_products(Operand operand) { return operand == Operand::bf16 && dense_dpbf16_takes(); }
}  // namespace

void dense_narrow_transpose(ExecSpace const& space, Operand operand, std::int64_t K, std::int64_t N,
                            float const* w, float* wt) {
  if (dot_products(operand)) return dense_dpbf16_transpose(space, K, N, w, wt);
  constexpr std::int64_t chunk = 64;  // rows of w per iteration, read contiguously
  std::int64_t const NB = dense_narrow_rows(N);
  bool const r16 = operand == Operand::bf16;  // the copy the kernels read is rounded
  Kokkos::parallel_for(
      "ktr::dense::narrow_transpose", Range(space, 0, (K + chunk - 1) / chunk), KOKKOS_LAMBDA(std::int64_t c) {
        std::int64_t const k1 = (c + 1) * chunk < K ? (c + 1) * chunk : K;
        for (std::int64_t n = 0; n < NB; ++n) {
          float* KOKKOS_RESTRICT const row = wt + n * K;
          if (n < N && r16)
            for (std::int64_t k = c * chunk; k < k1; ++k) row[k] = round_to_bf16(w[k * N + n]);
          else if (n < N)
            for (std::int64_t k = c * chunk; k < k1; ++k) row[k] = w[k * N + n];
          else
            for (std::int64_t k = c * chunk; k < k1; ++k) row[k] = 0.0f;
        }
      });
}

// The kernels are instantiated for host builds only (GPU builds never take them: dense_narrow() is false there).
void dense_narrow_forward(ExecSpace const& space, Operand operand, std::int64_t B, std::int64_t K, std::int64_t N,
                          float const* x, float const* wt, float const* b, Activation act, float* z, float* y) {
  if (dot_products(operand)) return dense_dpbf16_forward(space, B, K, N, x, wt, b, act, z, y);
  host_builds_only([&](auto) {
    with_activation(act, [&](auto a) {
      with_operand(operand, [&](auto r) {
        with_narrow_rows(N, [&](auto nb) {
          forward_impl<decltype(nb)::value, decltype(a), decltype(r)::value == Operand::bf16>(space, B, K, N, x,
                                                                                              wt, b, z, y);
        });
      });
    });
  });
}

void dense_narrow_kernel_grad(ExecSpace const& space, Operand operand, std::int64_t B, std::int64_t K,
                              std::int64_t N, float const* x, float const* dy, float* dw) {
  if (dot_products(operand)) return dense_dpbf16_kernel_grad(space, B, K, N, x, dy, dw);
  host_builds_only([&](auto) {
    with_operand(operand, [&](auto r) {
      with_narrow_rows(N, [&](auto nb) {
        kernel_grad_impl<decltype(nb)::value, decltype(r)::value == Operand::bf16>(space, B, K, N, x, dy, dw);
      });
    });
  });
}

void dense_narrow_input_grad(ExecSpace const& space, Operand operand, std::int64_t B, std::int64_t K,
                             std::int64_t N, float const* dy, float const* wt, float* dx) {
  if (dot_products(operand)) return dense_dpbf16_input_grad(space, B, K, N, dy, wt, dx);
  host_builds_only([&](auto) {
    with_operand(operand, [&](auto r) {
      with_narrow_rows(N, [&](auto nb) {
        input_grad_impl<decltype(nb)::value, decltype(r)::value == Operand::bf16>(space, B, K, N, dy, wt, dx);
      });
    });
  });
}

}  // namespace ktr::impl
