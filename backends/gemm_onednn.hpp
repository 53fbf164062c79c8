// bf16 matmuls on hosts through oneDNN (host builds configured with ktr_ENABLE_ONEDNN): gemm.cpp's bf16 path.
#pragma once

#include "../core/types.hpp"

#include <cstdint>
#include <string>

namespace ktr::impl {

/// C = alpha op(A) op(B) + beta C with op(A) and op(B) rounded to bfloat16 (nearest even) and the products
/// accumulated in fp32, by oneDNN's matmul primitive (AMX where the CPU has it, else AVX512-BF16). Called from the
/// thread that drives Kokkos, outside any parallel region (oneDNN's OpenMP team is then Kokkos's). The primitive
/// of each shape is created on its first call and kept; the bf16 copies and oneDNN's scratchpad live in buffers
/// ktr owns, grown to the largest shape seen, so that later calls allocate nothing. `a16` and `b16`, where not
/// null, are the operands' bits already rounded (a Precision's params16, same layout): those are read, not
/// rounded.
void gemm_bf16_onednn(ExecSpace const& space, bool trans_a, bool trans_b, float alpha, ConstMatrix const& a,
                      std::uint16_t const* a16, ConstMatrix const& b, std::uint16_t const* b16, float beta,
                      Matrix const& c);

/// C = alpha op(A) op(B) + beta C in fp32 through oneDNN's matmul primitive (as gemm_bf16_onednn, without
/// rounding).
void gemm_fp32_onednn(ExecSpace const& space, bool trans_a, bool trans_b, float alpha, ConstMatrix const& a,
                      ConstMatrix const& b, float beta, Matrix const& c);
/// True where fp32 matmuls take oneDNN rather than the host BLAS: the committed per-CPU rule (CPUs with AMX), or
/// KTR_FP32_GEMM=onednn|openblas.
bool onednn_fp32_chosen();
/// The kernel oneDNN picks for a 256 x 512 x 784 fp32 matmul ("brg:avx512_core" and the like).
std::string onednn_fp32_kernel();

/// Why this CPU cannot run bf16 matmuls (it lacks AVX512-BF16 and AMX-BF16; KTR_BF16=off makes any CPU say so),
/// or "".
std::string onednn_bf16_unavailable();

/// "oneDNN 2.6.3, brg:avx512_core_amx (AMX-BF16)" and the like: the version, the kernel oneDNN picks for a
/// 256 x 512 x 784 bf16 matmul, and the CPU's bf16 instructions.
std::string onednn_bf16_backend();

}  // namespace ktr::impl
