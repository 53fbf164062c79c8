// The dense matrix product every layer goes through, on the caller's execution space instance.
//
// CUDA: cuBLAS on the instance's stream (Kokkos Kernels 3.4's gemm would run on the legacy default stream,
// which serialises with the caller and cannot be stream-captured), through one cuBLAS handle per stream, each
// with a workspace ktr owns (cublasSetWorkspace, as NVIDIA documents for graph capture), created on first use
// and released with the stream (release_gemm_resources) or at Kokkos::finalize. Two host threads driving ktr on
// two streams therefore never share a handle.
// HIP with Kokkos Kernels 4.x: KokkosBlas::gemm's execution-space overload, so the product runs on the
// instance's stream (its rocBLAS TPL re-points one process-wide handle at that stream on every call: do not
// drive ktr from two host threads on HIP). HIP with Kokkos Kernels 3.4.01 and the host backends:
// KokkosBlas::gemm, which reaches the host BLAS (OpenBLAS) where Kokkos Kernels was built with it.
//
// One file per library, as kokkos-fft splits its TPLs: gemm.cpp (this entry point, its counters and the one
// switch), gemm_cublas.cpp, gemm_onednn.cpp (bf16 on hosts), gemm_kokkos.cpp (Kokkos Kernels and the portable
// reductions), host_blas.cpp (OpenBLAS's kernel choice and threads), precision.cpp (which arithmetic a build and
// CPU can run).
#pragma once

#include "../core/types.hpp"
#include "precision.hpp"

#include <cstdint>
#include <string>

namespace ktr {

/// C = alpha * op(A) * op(B) + beta * C on row-major matrices; op(X) is X or X^T as `trans_*` says.
/// Shapes: op(A) (M, K), op(B) (K, N), C (M, N).
/// The arithmetic is `precision.matmul`: under bf16 the operands are rounded to bfloat16 (nearest even; those that
/// `precision.params16` holds are read from it) and the products accumulated in fp32 (hosts: oneDNN; CUDA: cuBLAS
/// tensor cores); `Precision{}` is fp32. Throws ktr::Error for a precision this build or machine cannot run.
void gemm(ExecSpace const& space, Precision const& precision, bool trans_a, bool trans_b, float alpha,
          ConstMatrix const& a, ConstMatrix const& b, float beta, Matrix const& c);

/// sums[j] = sum over i of x(i, j), in fp32 whatever the precision in force: the bias and layernorm gradients. A
/// reduction, not a matmul: never counted as a gemm call, deterministic (a replayed program sums bit for bit as
/// the plain loop). `ones`: x.extent(0) ones on the device, which CUDA's path reads (cuBLAS gemv on the instance's
/// stream); the other backends run a Kokkos team reduction per column and ignore it (nullptr is fine there).
void column_sums(ExecSpace const& space, ConstMatrix const& x, float const* ones, float* sums);

/// What gemm calls in this build at precision `p`, e.g. "cuBLAS (per-stream handle, FP32)" or "KokkosBlas ->
/// OpenBLAS ...".
std::string gemm_backend(MatmulPrecision p = MatmulPrecision::fp32);

/// True where each stream has a BLAS handle of its own, so that two host threads may run gemm on two streams at
/// once (CUDA). False elsewhere: HIP's rocBLAS TPL shares one handle, the host backends one thread pool.
bool gemm_handles_per_stream();

/// How many gemm calls this process has made (for launch accounting in benchmarks), and how many of them ran in
/// precision `p` (a captured program's replays make no calls: its capture counts).
std::int64_t gemm_calls();
std::int64_t gemm_calls(MatmulPrecision p);

/// How many bf16 gemm operands this process has rounded into gemm's own buffers (those a Precision's params16
/// held were read from it instead): for tests and benchmarks that count the rounding a step does.
std::int64_t gemm_bf16_roundings();

/// Identifies the BLAS resources gemm keeps for `space`'s stream (CUDA: its cuBLAS handle and workspace, created
/// here if they do not exist yet): a number never given to other resources, so a program captured with them is
/// never replayed with others (a stream released and created again at the same address). 0 elsewhere.
std::uint64_t gemm_resources_generation(ExecSpace const& space);

/// Releases what gemm keeps for `space`'s stream (its cuBLAS handle and workspace); a later gemm on that
/// stream creates them again. Waits for the stream. No-op elsewhere.
void release_gemm_resources(ExecSpace const& space);

}  // namespace ktr
