// The narrow dense kernels' AVX512-BF16 form: see dense_narrow_dpbf16.hpp.
#include "dense_narrow_dpbf16.hpp"

#include "../core/bf16.hpp"
#include "../core/error.hpp"
#include "dense_narrow.hpp"
#include "dpbf16.hpp"

#include <type_traits>

namespace ktr::impl {

namespace {

using Range = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;

// K rounded up to 32 (one vector of bf16 pairs).
KOKKOS_INLINE_FUNCTION std::int64_t padded_k(std::int64_t k) { return (k + 31) / 32 * 32; }

}  // namespace

bool dense_dpbf16_takes() { return dpbf16_available(); }

std::int64_t dense_dpbf16_scratch(std::int64_t K, std::int64_t N) {
  return dense_narrow_rows(N) * padded_k(K) / 2 + dense_narrow_rows(N) / 2 * K;
}

#if defined(KTR_DPBF16_KERNELS)

namespace {

// The layouts in scratch: wt16 (NB, K32) halves, then wtp (NB / 2, K) words.
std::uint16_t const* wt16_of(float const* scratch) { return reinterpret_cast<std::uint16_t const*>(scratch); }
std::uint32_t const* wtp_of(float const* scratch, std::int64_t K, std::int64_t N) {
  return reinterpret_cast<std::uint32_t const*>(scratch + dense_narrow_rows(N) * padded_k(K) / 2);
}

// Lanes [0, n) on (n < 16), all otherwise.
inline __mmask16 first_lanes(std::int64_t n) { return n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1u); }

// 32 floats from p rounded to bf16, in order (p[0] in the lowest word); past `valid` zeros.
KTR_DPBF16 inline __m512i load_bf16(float const* p, std::int64_t valid) {
  if (valid >= 32) return (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(p + 16), _mm512_loadu_ps(p));
  __m512 const lo = _mm512_maskz_loadu_ps(first_lanes(valid), p);
  __m512 const hi = valid > 16 ? _mm512_maskz_loadu_ps(first_lanes(valid - 16), p + 16) : _mm512_setzero_ps();
  return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
}

// The sum of the lanes, pairwise (Pack::sum's order; _mm512_reduce_add_ps draws GCC 12's warning above).
KTR_DPBF16 inline float sum_lanes(__m512 v) {
  alignas(64) float t[16];
  _mm512_store_ps(t, v);
  for (int h = 8; h > 0; h /= 2)
    for (int i = 0; i < h; ++i) t[i] += t[i + h];
  return t[0];
}

// Rows in groups of G; within a group the input runs in chunks of KC columns, each chunk of wt16 (NB x KC halves)
// staying in L1 while the group's rows stream past it (as dense_narrow.cpp's fp32 kernel).
template <int NB, class A>
KTR_DPBF16 __attribute__((noinline)) void forward_group(std::int64_t B, std::int64_t K, std::int64_t N,
                                                        float const* x, std::uint16_t const* wt16, float const* b,
                                                        float* z, float* y, std::int64_t group) {
  constexpr int G = 4;
  constexpr std::int64_t KC = 512;
  std::int64_t const K32 = padded_k(K), r0 = group * G;
  int const rows = B - r0 < G ? int(B - r0) : G;
  __m512 part[G][NB];
  for (int i = 0; i < G; ++i)
    for (int n = 0; n < NB; ++n) part[i][n] = _mm512_setzero_ps();
  for (std::int64_t k0 = 0; k0 < K32; k0 += KC) {
    std::int64_t const k1 = k0 + KC < K32 ? k0 + KC : K32;
    for (int i = 0; i < rows; ++i) {
      float const* xr = x + (r0 + i) * K;
      __m512 acc[NB];
      for (int n = 0; n < NB; ++n) acc[n] = part[i][n];
      for (std::int64_t k = k0; k < k1; k += 32) {
        __m512i const xb = load_bf16(xr + k, K - k);
        for (int n = 0; n < NB; ++n) acc[n] = dot2(acc[n], xb, _mm512_loadu_si512(wt16 + n * K32 + k));
      }
      for (int n = 0; n < NB; ++n) part[i][n] = acc[n];
    }
  }
  for (int i = 0; i < rows; ++i)
    for (int n = 0; n < N; ++n) {
      std::int64_t const r = r0 + i;
      float const v = b[n] + sum_lanes(part[i][n]);
      if (A::needs_input) z[r * N + n] = v;
      y[r * N + n] = A::forward(v);
    }
}

// Two vectors of 16 columns of dw per call; the rows in pairs (the last one alone beside zeros), in blocks of RP
// pairs whose (dy[r, n], dy[r + 1, n]) words are laid out first, so the dot products broadcast them from L1.
template <int NB>
KTR_DPBF16 __attribute__((noinline)) void kernel_grad_columns(std::int64_t B, std::int64_t K, std::int64_t N,
                                                              float const* x, float const* dy, float* dw,
                                                              std::int64_t p) {
  constexpr int U = 2, RP = 32;
  std::int64_t const k0 = p * U * 16;
  int const m = K - k0 < U * 16 ? int(K - k0) : U * 16;  // columns of this call
  __mmask16 const lanes[U] = {first_lanes(m), first_lanes(m > 16 ? m - 16 : 0)};
  __mmask16 const outputs = first_lanes(N);
  __m512 acc[U][NB];
  for (int u = 0; u < U; ++u)
    for (int n = 0; n < NB; ++n) acc[u][n] = _mm512_setzero_ps();
  alignas(64) std::uint32_t g[RP][16];
  for (std::int64_t r0 = 0; r0 < B; r0 += 2 * RP) {
    int const pairs = B - r0 < 2 * RP ? int((B - r0 + 1) / 2) : RP;
    for (int i = 0; i < pairs; ++i) {
      std::int64_t const r = r0 + 2 * i;
      __m512 const g1 = r + 1 < B ? _mm512_maskz_loadu_ps(outputs, dy + (r + 1) * N) : _mm512_setzero_ps();
      _mm512_store_si512(g[i], interleave_bf16(_mm512_maskz_loadu_ps(outputs, dy + r * N), g1));
    }
    for (int i = 0; i < pairs; ++i) {
      std::int64_t const r = r0 + 2 * i;
      __m512i xp[U];
      for (int u = 0; u < U; ++u) {
        float const* x0 = x + r * K + k0 + 16 * u;
        __m512 const x1 = r + 1 < B ? _mm512_maskz_loadu_ps(lanes[u], x0 + K) : _mm512_setzero_ps();
        xp[u] = interleave_bf16(_mm512_maskz_loadu_ps(lanes[u], x0), x1);
      }
      for (int n = 0; n < NB; ++n) {
        __m512i const gn = _mm512_set1_epi32(std::int32_t(g[i][n]));
        for (int u = 0; u < U; ++u) acc[u][n] = dot2(acc[u][n], xp[u], gn);
      }
    }
  }
  alignas(64) float out[U * 16];
  for (int n = 0; n < N; ++n) {
    for (int u = 0; u < U; ++u) _mm512_store_ps(out + 16 * u, acc[u][n]);
    for (int j = 0; j < m; ++j) dw[(k0 + j) * N + n] = out[j];
  }
}

// T vectors of 16 columns of dx, every row: the tile of wtp (NB / 2 x 16 T words) stays in L1.
template <int NB>
KTR_DPBF16 __attribute__((noinline)) void input_grad_tile(std::int64_t B, std::int64_t K, std::int64_t N,
                                                          float const* dy, std::uint32_t const* wtp, float* dx,
                                                          std::int64_t t) {
  constexpr int T = 4;
  std::int64_t const k0 = t * T * 16;
  int const vectors = K - k0 >= T * 16 ? T : int((K - k0 + 15) / 16);
  __mmask16 lanes[T];
  for (int u = 0; u < T; ++u) lanes[u] = u < vectors ? first_lanes(K - k0 - 16 * u) : __mmask16(0);
  for (std::int64_t r = 0; r < B; ++r) {
    // (dy[r, 2m], dy[r, 2m + 1]) is word m of the row rounded to bf16
    __m512i const d16 =
        _mm512_castsi256_si512((__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(first_lanes(N), dy + r * N)));
    __m512 acc[T];
    for (int u = 0; u < T; ++u) acc[u] = _mm512_setzero_ps();
    for (int m = 0; m < NB / 2; ++m) {
      __m512i const dm = _mm512_maskz_permutexvar_epi32(dpbf16_all, _mm512_set1_epi32(m), d16);
      for (int u = 0; u < T; ++u)
        acc[u] = dot2(acc[u], dm, _mm512_maskz_loadu_epi32(lanes[u], wtp + m * K + k0 + 16 * u));
    }
    for (int u = 0; u < T; ++u) _mm512_mask_storeu_ps(dx + r * K + k0 + 16 * u, lanes[u], acc[u]);
  }
}

// Column n of w at rows k .. k + 15 (those in `valid`; zeros past N). A function, not a lambda: a lambda does not
// take its enclosing function's target attribute.
KTR_DPBF16 inline __m512 gather_column(float const* w, std::int64_t N, std::int64_t k, std::int64_t n,
                                       __mmask16 valid, __m512i rows) {
  return n < N ? _mm512_mask_i32gather_ps(_mm512_setzero_ps(), valid, rows, w + k * N + n, 4)
               : _mm512_setzero_ps();
}

// The two layouts of 64 rows of w (from k0): a gather of 16 rows per output column, rounded to bf16.
KTR_DPBF16 __attribute__((noinline)) void transpose_chunk(std::int64_t K, std::int64_t N, float const* w,
                                                          std::uint16_t* wt16, std::uint32_t* wtp,
                                                          std::int64_t c) {
  std::int64_t const NB = dense_narrow_rows(N), K32 = padded_k(K);
  __m512i const rows = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                          _mm512_set1_epi32(std::int32_t(N)));
  for (std::int64_t k = c * 64; k < c * 64 + 64 && k < K32; k += 16) {
    __mmask16 const valid = k < K ? first_lanes(K - k) : __mmask16(0);
    for (std::int64_t m = 0; 2 * m < NB; ++m) {
      __m512 const lo = gather_column(w, N, k, 2 * m, valid, rows),
                   hi = gather_column(w, N, k, 2 * m + 1, valid, rows);
      __m512i const both = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);  // words 0-15: column 2m, 16-31: 2m + 1
      // Words 16-31 land on row 2m + 1 through a masked store 16 words early (the masked-off words untouched).
      _mm512_mask_storeu_epi16(wt16 + 2 * m * K32 + k, 0x0000ffffu, both);
      _mm512_mask_storeu_epi16(wt16 + (2 * m + 1) * K32 + k - 16, 0xffff0000u, both);
      if (k < K) _mm512_mask_storeu_epi32(wtp + m * K + k, valid, interleave_bf16(lo, hi));
    }
  }
}

}  // namespace

void dense_dpbf16_transpose(ExecSpace const& space, std::int64_t K, std::int64_t N, float const* w,
                            float* scratch) {
  std::uint16_t* const wt16 = reinterpret_cast<std::uint16_t*>(scratch);
  std::uint32_t* const wtp = reinterpret_cast<std::uint32_t*>(scratch + dense_narrow_rows(N) * padded_k(K) / 2);
  Kokkos::parallel_for(
      "ktr::dense::dpbf16_transpose", Range(space, 0, (padded_k(K) + 63) / 64),
      KOKKOS_LAMBDA(std::int64_t c) { transpose_chunk(K, N, w, wt16, wtp, c); });
}

void dense_dpbf16_forward(ExecSpace const& space, std::int64_t B, std::int64_t K, std::int64_t N, float const* x,
                          float const* scratch, float const* b, Activation act, float* z, float* y) {
  std::uint16_t const* wt16 = wt16_of(scratch);
  with_activation(act, [&](auto a) {
    with_narrow_rows(N, [&](auto nb) {
      Kokkos::parallel_for(
          "ktr::dense::dpbf16_forward", Range(space, 0, (B + 3) / 4), KOKKOS_LAMBDA(std::int64_t group) {
            forward_group<decltype(nb)::value, decltype(a)>(B, K, N, x, wt16, b, z, y, group);
          });
    });
  });
}

void dense_dpbf16_kernel_grad(ExecSpace const& space, std::int64_t B, std::int64_t K, std::int64_t N,
                              float const* x, float const* dy, float* dw) {
  with_narrow_rows(N, [&](auto nb) {
    Kokkos::parallel_for(
        "ktr::dense::dpbf16_kernel_grad", Range(space, 0, (K + 31) / 32),
        KOKKOS_LAMBDA(std::int64_t p) { kernel_grad_columns<decltype(nb)::value>(B, K, N, x, dy, dw, p); });
  });
}

void dense_dpbf16_input_grad(ExecSpace const& space, std::int64_t B, std::int64_t K, std::int64_t N,
                             float const* dy, float const* scratch, float* dx) {
  std::uint32_t const* wtp = wtp_of(scratch, K, N);
  with_narrow_rows(N, [&](auto nb) {
    Kokkos::parallel_for(
        "ktr::dense::dpbf16_input_grad", Range(space, 0, (K + 63) / 64),
        KOKKOS_LAMBDA(std::int64_t t) { input_grad_tile<decltype(nb)::value>(B, K, N, dy, wtp, dx, t); });
  });
}

#else  // no AVX512-BF16 kernels in this build: dense_dpbf16_takes is false, so these are never called

void dense_dpbf16_transpose(ExecSpace const&, std::int64_t, std::int64_t, float const*, float*) {
  KTR_REQUIRE(false, "ktr::dense::dpbf16", "this build has no AVX512-BF16 kernels");
}

void dense_dpbf16_forward(ExecSpace const&, std::int64_t, std::int64_t, std::int64_t, float const*, float const*,
                          float const*, Activation, float*, float*) {
  KTR_REQUIRE(false, "ktr::dense::dpbf16", "this build has no AVX512-BF16 kernels");
}

void dense_dpbf16_kernel_grad(ExecSpace const&, std::int64_t, std::int64_t, std::int64_t, float const*,
                              float const*, float*) {
  KTR_REQUIRE(false, "ktr::dense::dpbf16", "this build has no AVX512-BF16 kernels");
}

void dense_dpbf16_input_grad(ExecSpace const&, std::int64_t, std::int64_t, std::int64_t, float const*,
                             float const*, float*) {
  KTR_REQUIRE(false, "ktr::dense::dpbf16", "this build has no AVX512-BF16 kernels");
}

#endif

}  // namespace ktr::impl
