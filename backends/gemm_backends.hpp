// What gemm.cpp's switch dispatches to: one set of functions per library, each in its own file. Shapes are
// checked, calls counted and bf16 copies looked up by gemm.cpp before any of these runs.
#pragma once

#include "../core/types.hpp"
#include "precision.hpp"

#include <cstdint>
#include <string>

namespace ktr::impl {

#if defined(KOKKOS_ENABLE_CUDA)
// gemm_cublas.cpp

/// C = alpha op(A) op(B) + beta C by cuBLAS on `space`'s stream in `precision` (bf16: a16 / b16 are the operands'
/// bits where a copy holds them, else null, and the operand is rounded into the stream's own buffer).
void gemm_cublas(ExecSpace const& space, MatmulPrecision precision, bool trans_a, bool trans_b, float alpha,
                 ConstMatrix const& a, std::uint16_t const* a16, ConstMatrix const& b, std::uint16_t const* b16,
                 float beta, Matrix const& c);
/// column_sums as a cuBLAS gemv with the ones vector.
void column_sums_cublas(ExecSpace const& space, ConstMatrix const& x, float const* ones, float* sums);
/// gemm_resources_generation and release_gemm_resources on CUDA.
std::uint64_t cublas_generation(ExecSpace const& space);
void cublas_release(ExecSpace const& space);
#else
// gemm_kokkos.cpp

/// C = alpha op(A) op(B) + beta C in fp32 by KokkosBlas::gemm (the host BLAS where Kokkos Kernels has it).
void gemm_kokkos(ExecSpace const& space, bool trans_a, bool trans_b, float alpha, ConstMatrix const& a,
                 ConstMatrix const& b, float beta, Matrix const& c);
/// column_sums as a Kokkos team reduction per column.
void column_sums_kokkos(ExecSpace const& space, ConstMatrix const& x, float* sums);
/// What gemm_kokkos reaches, e.g. "KokkosBlas::gemm -> host BLAS (OpenBLAS ...)".
std::string gemm_kokkos_name();
#endif

}  // namespace ktr::impl
