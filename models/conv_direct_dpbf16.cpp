// The direct convolution's AVX512-BF16 kernels: see conv_direct_dpbf16.hpp.
//
// Per pooled output (2x2 pixels q) and 32 output channels, the forward issues 48 vdpbf16ps (6 pairs x 4 pixels x
// 2 vectors) where the fp32 kernel issues 72 multiply-adds, its pairs broadcast from the padded bf16 copy of the
// input; the backward takes ReLU's derivative from the forward's masks (the fp32 kernel recomputes z: 72 more) and
// accumulates the kernel gradient with 36 against 72.
#include "conv_direct_dpbf16.hpp"

#include "../core/bf16.hpp"
#include "../core/error.hpp"
#include "dpbf16.hpp"

#include <type_traits>

namespace ktr::impl {

namespace {

// Row stride of the padded bf16 image: a zero column each side and one more, so that the pair read at the last
// column stays inside the row.
KOKKOS_INLINE_FUNCTION std::int64_t padded_width(ConvDims const& d) { return d.width + 3; }

// 32-bit words of the padded image, and of the ReLU masks (16 bits per pixel and vector of 16 output channels).
std::int64_t image_words(ConvDims const& d) { return (d.batch * (d.height + 2) * padded_width(d) + 1) / 2; }
std::int64_t mask_words(ConvDims const& d) {
  return d.batch * d.out_height() * d.out_width() * (d.features / 16) * 4 / 2;
}

using Range = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;

}  // namespace

bool conv_dpbf16_takes(ConvDims const& d, Activation act) {
  return dpbf16_available() && d.channels == 1 && d.pool == 2 && d.features % 16 == 0 &&
         (act == Activation::relu || act == Activation::identity);
}

std::int64_t conv_dpbf16_scratch_size(ConvDims const& d) {
  return 6 * d.features + image_words(d) + mask_words(d);
}

namespace {

void pack_weights(ExecSpace const& space, ConvDims const& d, float const* w, std::uint32_t* ops) {
  std::int64_t const F = d.features;
  Kokkos::parallel_for(
      "ktr::conv2d::dpbf16_weights", Range(space, 0, 6 * F), KOKKOS_LAMBDA(std::int64_t e) {
        // half 0: taps (kh, 0) and (kh, 1); half 1: tap (kh, 2) and a zero
        std::int64_t const kh = e / (2 * F), half = e / F % 2, f = e % F;
        std::uint32_t const lo = bf16_bits(w[(3 * kh + 2 * half) * F + f]);
        std::uint32_t const hi = half == 0 ? bf16_bits(w[(3 * kh + 1) * F + f]) : 0u;
        ops[e] = lo | hi << 16;
      });
}

// The input rounded to bf16 with a border of zeros: (B, H + 2, padded_width) after the weights' 6 F words.
void pad_image(ExecSpace const& space, ConvDims const& d, float const* x, std::uint16_t* image) {
  std::int64_t const H = d.height, W = d.width, S = padded_width(d);
  Kokkos::parallel_for(
      "ktr::conv2d::dpbf16_image", Range(space, 0, d.batch * (H + 2)), KOKKOS_LAMBDA(std::int64_t r) {
        std::int64_t const n = r / (H + 2), h = r % (H + 2) - 1;
        std::uint16_t* KOKKOS_RESTRICT const out = image + r * S;
        out[0] = out[W + 1] = out[W + 2] = 0;
        if (h < 0 || h >= H) {
          for (std::int64_t c = 1; c <= W; ++c) out[c] = 0;
          return;
        }
        float const* KOKKOS_RESTRICT const in = x + (n * H + h) * W;
        for (std::int64_t c = 0; c < W; ++c) out[c + 1] = bf16_bits(in[c]);
      });
}

template <class T>
auto image_of(ConvDims const& d, T* ops) {
  using U = std::conditional_t<std::is_const<T>::value, std::uint16_t const, std::uint16_t>;
  return reinterpret_cast<U*>(ops + 6 * d.features);
}

// Where the forward leaves which pixels' z were positive (ReLU's derivative) for the backward: 4 masks (the
// block's pixels) per pooled output and vector of 16 channels.
template <class T>
auto masks_of(ConvDims const& d, T* ops) {
  using U = std::conditional_t<std::is_const<T>::value, std::uint16_t const, std::uint16_t>;
  return reinterpret_cast<U*>(ops + 6 * d.features + image_words(d));
}

}  // namespace

void conv_dpbf16_prepare(ExecSpace const& space, ConvDims const& d, float const* x, float const* w,
                         std::uint32_t* ops) {
  pack_weights(space, d, w, ops);
  pad_image(space, d, x, image_of(d, ops));
}

#if defined(KTR_DPBF16_KERNELS)

namespace {

constexpr __mmask16 all = dpbf16_all;

// z[q][u] = bias + the 3x3 window of pixel q (row-major in the 2x2 block whose top-left pixel is at `at` in the
// padded image: row stride S) times the weights' pairs: 6 x 4 x NV dot products, the pairs broadcast from memory.
template <int NV>
KTR_DPBF16 inline void convolve(std::uint16_t const* at, std::int64_t S, std::uint32_t const* wp, std::int64_t F,
                                std::int64_t f0, __m512 const* bias, __m512 (*z)[NV]) {
  for (int q = 0; q < 4; ++q)
    for (int u = 0; u < NV; ++u) z[q][u] = bias[u];
  for (int kh = 0; kh < 3; ++kh)
    for (int half = 0; half < 2; ++half) {
      __m512i wv[NV];
      for (int u = 0; u < NV; ++u) wv[u] = _mm512_loadu_si512(wp + (2 * kh + half) * F + f0 + 16 * u);
      for (int q = 0; q < 4; ++q) {
        __m512i const xb = broadcast_pair(at + (q / 2 + kh) * S + q % 2 + 2 * half);
        for (int u = 0; u < NV; ++u) z[q][u] = dot2(z[q][u], xb, wv[u]);
      }
    }
}

template <int NV, bool Relu>
KTR_DPBF16 __attribute__((noinline)) void forward_row(ConvDims d, std::uint16_t const* image,
                                                      std::uint32_t const* wp, float const* b, std::int64_t row,
                                                      float* y, std::uint16_t* masks) {
  std::int64_t const Ho = d.out_height(), Wo = d.out_width(), F = d.features, S = padded_width(d);
  std::int64_t const n = row / Ho, i = row % Ho;
  std::uint16_t const* top = image + (n * (d.height + 2) + 2 * i) * S;
  for (std::int64_t f0 = 0; f0 < F; f0 += 16 * NV) {
    __m512 bias[NV];
    for (int u = 0; u < NV; ++u) bias[u] = _mm512_loadu_ps(b + f0 + 16 * u);
    for (std::int64_t j = 0; j < Wo; ++j) {
      __m512 z[4][NV];
      convolve<NV>(top + 2 * j, S, wp, F, f0, bias, z);
      float* out = y + (row * Wo + j) * F + f0;
      std::uint16_t* positive = masks + ((row * Wo + j) * (F / 16) + f0 / 16) * 4;
      for (int u = 0; u < NV; ++u) {
        __m512 s = _mm512_setzero_ps();
        for (int q = 0; q < 4; ++q) {
          if (Relu) {
            __mmask16 const p = _mm512_cmp_ps_mask(z[q][u], _mm512_setzero_ps(), _CMP_GT_OQ);
            positive[4 * u + q] = p;
            s = _mm512_add_ps(s, _mm512_maskz_mov_ps(p, z[q][u]));
          } else {
            s = _mm512_add_ps(s, z[q][u]);
          }
        }
        _mm512_storeu_ps(out + 16 * u, _mm512_mul_ps(_mm512_set1_ps(0.25f), s));
      }
    }
  }
}

template <int NV, bool Relu>
KTR_DPBF16 __attribute__((noinline)) void backward_chunk(ConvDims d, std::uint16_t const* image,
                                                         std::uint16_t const* masks, float const* dy,
                                                         std::int64_t chunk, float* partials, float* dz) {
  std::int64_t const H = d.height, W = d.width, F = d.features, Ho = d.out_height(), Wo = d.out_width();
  std::int64_t const S = padded_width(d);
  std::int64_t const rows = conv_direct_rows_per_chunk(d), per_image = (Ho + rows - 1) / rows;
  std::int64_t const n = chunk / per_image, i0 = chunk % per_image * rows, i1 = i0 + rows < Ho ? i0 + rows : Ho;
  float* part = partials + chunk * d.partial_size();
  __m512i const ones = _mm512_set1_epi32(0x3f803f80);  // (1, 1) in bf16: the bias gradient as a dot product
  for (std::int64_t f0 = 0; f0 < F; f0 += 16 * NV) {
    __m512 gw[9][NV], gb[NV];
    for (int u = 0; u < NV; ++u) {
      gb[u] = _mm512_setzero_ps();
      for (int t = 0; t < 9; ++t) gw[t][u] = _mm512_setzero_ps();
    }
    for (std::int64_t i = i0; i < i1; ++i)
      for (std::int64_t j = 0; j < Wo; ++j) {
        std::uint16_t const* at = image + (n * (H + 2) + 2 * i) * S + 2 * j;
        std::uint16_t const* positive = masks + (((n * Ho + i) * Wo + j) * (F / 16) + f0 / 16) * 4;
        float const* up = dy + ((n * Ho + i) * Wo + j) * F + f0;
        __m512i pair[2][NV];  // row a of the block: d loss / d z of pixels 2a and 2a + 1, lanes interleaved
#pragma GCC unroll 4
        for (int u = 0; u < NV; ++u) {
          __m512 const g = _mm512_mul_ps(_mm512_set1_ps(0.25f), _mm512_loadu_ps(up + 16 * u));
#pragma GCC unroll 2
          for (int a = 0; a < 2; ++a) {
            __m512 gq[2];
#pragma GCC unroll 2
            for (int s = 0; s < 2; ++s) gq[s] = Relu ? _mm512_maskz_mov_ps(positive[4 * u + 2 * a + s], g) : g;
            pair[a][u] = interleave_bf16(gq[0], gq[1]);
            gb[u] = dot2(gb[u], pair[a][u], ones);
            if (dz != nullptr) {
              float* out = dz + ((n * H + 2 * i + a) * W + 2 * j) * F + f0 + 16 * u;
              _mm512_storeu_ps(out, _mm512_castsi512_ps(_mm512_maskz_slli_epi32(all, pair[a][u], 16)));
              _mm512_storeu_ps(out + F,
                               _mm512_castsi512_ps(_mm512_and_si512(pair[a][u], _mm512_set1_epi32(-65536))));
            }
          }
        }
#pragma GCC unroll 3
        for (int kh = 0; kh < 3; ++kh)
#pragma GCC unroll 3
          for (int kw = 0; kw < 3; ++kw)
#pragma GCC unroll 2
            for (int a = 0; a < 2; ++a) {
              __m512i const xb = broadcast_pair(at + (a + kh) * S + kw);
#pragma GCC unroll 4
              for (int u = 0; u < NV; ++u) gw[kh * 3 + kw][u] = dot2(gw[kh * 3 + kw][u], pair[a][u], xb);
            }
      }
    for (int u = 0; u < NV; ++u) {
      for (int t = 0; t < 9; ++t) _mm512_storeu_ps(part + t * F + f0 + 16 * u, gw[t][u]);
      _mm512_storeu_ps(part + 9 * F + f0 + 16 * u, gb[u]);
    }
  }
}

// Runs f(std::integral_constant<int, NV>, std::bool_constant<Relu>): two vectors of output channels at a time
// where F allows, else one.
template <class Body>
void dispatch(ConvDims const& d, Activation act, Body const& body) {
  auto with_nv = [&](auto relu) {
    if (d.features % 32 == 0)
      body(std::integral_constant<int, 2>{}, relu);
    else
      body(std::integral_constant<int, 1>{}, relu);
  };
  if (act == Activation::relu)
    with_nv(std::true_type{});
  else
    with_nv(std::false_type{});
}

}  // namespace

void conv_dpbf16_forward(ExecSpace const& space, ConvDims const& d, std::uint32_t* ops, float const* b,
                         Activation act, float* y) {
  std::uint16_t const* image = image_of(d, ops);
  std::uint16_t* masks = masks_of(d, ops);
  dispatch(d, act, [&](auto nv, auto relu) {
    Kokkos::parallel_for(
        "ktr::conv2d::dpbf16_forward", Range(space, 0, d.batch * d.out_height()), KOKKOS_LAMBDA(std::int64_t row) {
          forward_row<decltype(nv)::value, decltype(relu)::value>(d, image, ops, b, row, y, masks);
        });
  });
}

void conv_dpbf16_backward(ExecSpace const& space, ConvDims const& d, std::uint32_t const* ops, Activation act,
                          float const* dy, float* partials, float* dz) {
  std::uint16_t const* image = image_of(d, ops);
  std::uint16_t const* masks = masks_of(d, ops);
  dispatch(d, act, [&](auto nv, auto relu) {
    Kokkos::parallel_for(
        "ktr::conv2d::dpbf16_backward", Range(space, 0, conv_direct_chunks(d)), KOKKOS_LAMBDA(std::int64_t chunk) {
          backward_chunk<decltype(nv)::value, decltype(relu)::value>(d, image, masks, dy, chunk, partials, dz);
        });
  });
}

#else  // no AVX512-BF16 kernels in this build: conv_dpbf16_takes is false, so these are never called

void conv_dpbf16_forward(ExecSpace const&, ConvDims const&, std::uint32_t*, float const*, Activation, float*) {
  KTR_REQUIRE(false, "ktr::conv2d::dpbf16", "this build has no AVX512-BF16 kernels");
}

void conv_dpbf16_backward(ExecSpace const&, ConvDims const&, std::uint32_t const*, Activation, float const*,
                          float*, float*) {
  KTR_REQUIRE(false, "ktr::conv2d::dpbf16", "this build has no AVX512-BF16 kernels");
}

#endif

}  // namespace ktr::impl
