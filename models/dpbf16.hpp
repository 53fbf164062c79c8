// bf16 dot products on x86-64 hosts (AVX512-BF16's vdpbf16ps: each fp32 lane adds the products of a pair of bf16
// from each operand), for ktr's own product kernels under bf16 precision: the direct convolution
// (conv_direct_dpbf16.hpp) and the narrow dense head (dense_narrow.cpp). The Kokkos build need not target the
// instructions: the kernels carry per-function target attributes (KTR_DPBF16) and run only where
// dpbf16_available() says the CPU has them; elsewhere the portable kernels (fp32 products of rounded inputs) run.
//
// Every product of two bf16 is exact in fp32, as on the portable path; the sums run in another order and
// vdpbf16ps treats subnormal inputs and results as zero, so results agree with it to fp32 rounding, not bit for
// bit.
#pragma once

#include "../core/types.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(KOKKOS_ENABLE_CUDA) && \
    !defined(KOKKOS_ENABLE_HIP)
#define KTR_DPBF16_KERNELS 1
#include <immintrin.h>
#define KTR_DPBF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#endif

namespace ktr::impl {

/// True where the dot-product kernels may run: a host build on x86-64, a CPU with AVX512-BF16, and not switched
/// off by dpbf16_allow.
bool dpbf16_available();

/// Tests only: false makes dpbf16_available() answer false (the portable bf16 kernels run instead); process-wide.
void dpbf16_allow(bool allowed);

#if defined(KTR_DPBF16_KERNELS)

// The zero-masked forms with every lane on: GCC 12 warns that the plain forms' undefined pass-through may be
// used uninitialised when they are inlined into a function of another target.
constexpr __mmask16 dpbf16_all = 0xffffu;

/// acc + a.lo b.lo + a.hi b.hi in every lane.
KTR_DPBF16 inline __m512 dot2(__m512 acc, __m512i a, __m512i b) {
  return _mm512_dpbf16_ps(acc, (__m512bh)a, (__m512bh)b);
}

/// Lane j: (bf16(lo[j]), bf16(hi[j])), rounded to nearest even.
KTR_DPBF16 inline __m512i interleave_bf16(__m512 lo, __m512 hi) {
  // cvtne2ps puts lo's words first and hi's 16 words later; the permutation pairs word j with word j + 16.
  alignas(64) static constexpr std::uint16_t order[32] = {0,  16, 1,  17, 2,  18, 3,  19, 4,  20, 5,
                                                          21, 6,  22, 7,  23, 8,  24, 9,  25, 10, 26,
                                                          11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  return _mm512_permutexvar_epi16(_mm512_load_si512(order), (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
}

/// Two bf16 at p, broadcast to every lane.
KTR_DPBF16 inline __m512i broadcast_pair(void const* p) {
  std::int32_t v;
  __builtin_memcpy(&v, p, sizeof v);
  return _mm512_set1_epi32(v);
}

#endif

}  // namespace ktr::impl
