// The arithmetic of a run's matmuls and convolutions (fp32, tf32, bf16): which this build and machine can run, and
// the precision in force on a host thread.
#pragma once

#include "../core/bf16.hpp"
#include "../core/types.hpp"

#include <cstdint>
#include <string>
#include <type_traits>

namespace ktr {

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

template <class F>
void with_bf16_inputs(F const& f) {
  if (matmul_precision() == MatmulPrecision::bf16)
    f(std::true_type{});
  else
    f(std::false_type{});
}

}  // namespace ktr
