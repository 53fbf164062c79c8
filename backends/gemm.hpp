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
#pragma once

#include "../core/bf16.hpp"
#include "../core/types.hpp"

#include <cstdint>
#include <string>
#include <type_traits>

namespace ktr {

/// C = alpha * op(A) * op(B) + beta * C on row-major matrices; op(X) is X or X^T as `trans_*` says.
/// Shapes: op(A) (M, K), op(B) (K, N), C (M, N).
/// The arithmetic is the calling thread's matmul_precision(): under bf16 the operands are rounded to bfloat16
/// (nearest even) and the products accumulated in fp32 (hosts: oneDNN; CUDA: cuBLAS tensor cores).
void gemm(ExecSpace const& space, bool trans_a, bool trans_b, float alpha, ConstMatrix const& a,
          ConstMatrix const& b, float beta, Matrix const& c);

/// gemm in fp32 whatever the precision in force (counted as an fp32 gemm call).
void gemm_fp32(ExecSpace const& space, bool trans_a, bool trans_b, float alpha, ConstMatrix const& a,
               ConstMatrix const& b, float beta, Matrix const& c);

/// sums[j] = sum over i of x(i, j), in fp32 whatever the precision in force: the bias and layernorm gradients. A
/// reduction, not a matmul: never counted as a gemm call, deterministic (a replayed program sums bit for bit as
/// the plain loop). `ones`: x.extent(0) ones on the device, which CUDA's path reads (cuBLAS gemv on the instance's
/// stream); the other backends run a Kokkos team reduction per column and ignore it (nullptr is fine there).
void column_sums(ExecSpace const& space, ConstMatrix const& x, float const* ones, float* sums);

/// What gemm calls in this build, e.g. "cuBLAS (per-stream handle, FP32)" or "KokkosBlas -> OpenBLAS ...".
std::string gemm_backend();

/// True where each stream has a BLAS handle of its own, so that two host threads may run gemm on two streams at
/// once (CUDA). False elsewhere: HIP's rocBLAS TPL shares one handle, the host backends one thread pool.
bool gemm_handles_per_stream();

/// Gives the host BLAS (if it is OpenBLAS) `threads` threads, so that it matches Kokkos's host concurrency.
void set_host_blas_threads(int threads);
/// Debian's OpenBLAS 0.3.21 (DYNAMIC_ARCH) picks its kernels by CPU model, and takes a model newer than it knows
/// (Intel's Emerald Rapids, family 6 model 207) for a Prescott: SSE3 kernels, 4x slower at ktr's MLP than its
/// SkylakeX ones. Where it did so on a CPU with AVX2 + FMA, this selects the kernels OPENBLAS_CORETYPE would
/// (SkylakeX with AVX-512 F/BW/DQ/VL, else Haswell), unless OPENBLAS_CORETYPE is set: that choice is kept, and
/// host_blas() says so where it holds an AVX-512 CPU to AVX2 kernels. Call before any host BLAS
/// call, from one thread (ktr's Runtime does, when it starts Kokkos); returns what it did ("" if nothing).
std::string select_host_blas_kernels();

/// The host BLAS linked into this process, e.g. "OpenBLAS 0.3.21 ... (openblas_get_config)", or "none found".
std::string host_blas();

/// The arithmetic of gemm's multiplications. FP32 is the default and what every reference test checks; TF32
/// (10-bit mantissa products, FP32 accumulation on NVIDIA tensor cores) is opt-in, for comparisons with
/// frameworks that use it by default. BF16 is mixed precision as Flax's `dtype=bfloat16, param_dtype=float32`:
/// the inputs of every matmul and convolution rounded to bfloat16, products accumulated in fp32; parameters,
/// gradients, optimiser state, losses and reductions stay fp32 (the layers' own kernels round their inputs too).
enum class MatmulPrecision { fp32, tf32, bf16 };
constexpr int matmul_precision_count = 3;

/// Parses "fp32", "tf32" or "bf16"; throws ktr::Error naming `flag` otherwise, and for a precision this build or
/// machine cannot run (the reason named: matmul_unavailable).
MatmulPrecision parse_matmul_precision(std::string const& text, std::string const& flag = "precision");
/// "fp32", "tf32" or "bf16".
char const* matmul_precision_name(MatmulPrecision p);
/// True where gemm can use TF32 (CUDA builds).
bool matmul_tf32_available();
/// True where gemm can run bf16: CUDA builds (tensor cores, compute capability 8.0 and newer), host builds with
/// oneDNN on a CPU with AVX512-BF16 or AMX-BF16.
bool matmul_bf16_available();
/// Why `p` cannot run here (e.g. "bf16 needs a CPU with AVX512-BF16 or AMX-BF16 instructions; this one has
/// neither (AVX2 only: emulated bf16 would be slower than fp32)"), or "" where it can.
std::string matmul_unavailable(MatmulPrecision p);
/// What bf16 runs on here, e.g. "oneDNN 2.6.3, avx512_core_bf16 (AVX512-BF16, no AMX)", or why it cannot run.
std::string matmul_bf16_backend();
/// Runs f(std::true_type{}) where the calling thread's precision is bf16, else f(std::false_type{}): for the
/// layers' own product kernels (narrow dense, direct convolutions), which round their inputs to bf16 when it is.
template <class F>
void with_bf16_inputs(F const& f);

/// Sets the process default: the precision of gemm calls made outside any ScopedMatmulPrecision (a run's own
/// precision, RunConfig::precision, takes precedence inside its dispatches, evaluations and predictions). Throws
/// ktr::Error for tf32 where matmul_tf32_available() is false. A captured program keeps the precision it was
/// captured with.
void set_matmul_precision(MatmulPrecision p);
/// The precision of a gemm called now on this host thread: the innermost ScopedMatmulPrecision's, else the
/// process default.
MatmulPrecision matmul_precision();

/// How many gemm calls this process has made (for launch accounting in benchmarks), and how many of them ran in
/// precision `p` (the precision in force on the calling thread when the call was made; a captured program's
/// replays make no calls: its capture counts).
std::int64_t gemm_calls();
std::int64_t gemm_calls(MatmulPrecision p);

/// The precision of the gemm calls this host thread makes while the object lives (a run's, set by dispatch and
/// by the Trainer around evaluation and prediction): two runs of one process may use different precisions.
class ScopedMatmulPrecision {
 public:
  explicit ScopedMatmulPrecision(MatmulPrecision p);
  ~ScopedMatmulPrecision();
  ScopedMatmulPrecision(ScopedMatmulPrecision const&) = delete;
  ScopedMatmulPrecision& operator=(ScopedMatmulPrecision const&) = delete;

 private:
  int previous_;
};

/// A bf16 copy that the caller keeps of an fp32 buffer (a run keeps one of its parameter arena, which the
/// optimiser's update kernel rewrites in the pass that updates the parameters): while the object lives, a bf16
/// gemm on this host thread whose operand lies wholly within [fp32, fp32 + n) reads its bits at the same offset
/// in `bits` instead of rounding the operand into a buffer of its own. The caller keeps bits[i] ==
/// bf16_bits(fp32[i]) for every gemm made meanwhile, so the products are the same either way. Scopes nest; the
/// innermost covers its range, the outer ones theirs.
class ScopedBf16Copy {
 public:
  ScopedBf16Copy(float const* fp32, std::uint16_t const* bits, std::int64_t n);
  ~ScopedBf16Copy();
  ScopedBf16Copy(ScopedBf16Copy const&) = delete;
  ScopedBf16Copy& operator=(ScopedBf16Copy const&) = delete;

 private:
  ScopedBf16Copy const* outer_;
  float const* fp32_;
  std::uint16_t const* bits_;
  std::int64_t n_;
  friend std::uint16_t const* bf16_copy_of(float const* data, std::int64_t n);
};

/// The bits of [data, data + n) in the innermost ScopedBf16Copy on this thread that holds all of it, else nullptr.
std::uint16_t const* bf16_copy_of(float const* data, std::int64_t n);

/// How many bf16 gemm operands this process has rounded into gemm's own buffers (those a ScopedBf16Copy held were
/// read from it instead): for tests and benchmarks that count the rounding a step does.
std::int64_t gemm_bf16_roundings();

/// Identifies the BLAS resources gemm keeps for `space`'s stream (CUDA: its cuBLAS handle and workspace, created
/// here if they do not exist yet): a number never given to other resources, so a program captured with them is
/// never replayed with others (a stream released and created again at the same address). 0 elsewhere.
std::uint64_t gemm_resources_generation(ExecSpace const& space);

/// Releases what gemm keeps for `space`'s stream (its cuBLAS handle and workspace); a later gemm on that
/// stream creates them again. Waits for the stream. No-op elsewhere.
void release_gemm_resources(ExecSpace const& space);

template <class F>
void with_bf16_inputs(F const& f) {
  if (matmul_precision() == MatmulPrecision::bf16)
    f(std::true_type{});
  else
    f(std::false_type{});
}

}  // namespace ktr
