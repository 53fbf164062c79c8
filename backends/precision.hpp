// The arithmetic of a run's matmuls and convolutions (fp32, tf32, bf16): which this build and machine can run, and
// the context a run hands to its model's forward and backward.
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
/// A bf16 copy that a run keeps of an fp32 buffer (its parameter arena, which the optimiser's update kernel
/// rewrites in the pass that updates the parameters): a bf16 gemm whose operand lies wholly within [fp32, fp32 +
/// n) reads its bits at the same offset in `bits` instead of rounding the operand into a buffer of its own. The
/// run keeps bits[i] == bf16_bits(fp32[i]) for every gemm it makes, so the products are the same either way.
struct Bf16Copy {
  float const* fp32 = nullptr;
  std::uint16_t const* bits = nullptr;
  std::int64_t n = 0;
  /// The bits of [data, data + count) where this copy holds all of it, else nullptr.
  std::uint16_t const* of(float const* data, std::int64_t count) const;
};

/// The arithmetic of a run, an explicit value: the run (its dispatch, the Trainer's evaluations and predictions)
/// hands it to the model's forward and backward, which hand it to gemm and to the layers' own kernels; no
/// thread-local or process-wide state decides a product's precision, so two runs of one process (or one thread)
/// may use different precisions, and a captured program keeps the one it was captured with. Storage (parameters,
/// gradients, optimiser state, activations) is fp32 in every precision. `Precision{}` is fp32 with no bf16 copy.
struct Precision {
  MatmulPrecision matmul = MatmulPrecision::fp32;
  Bf16Copy params16;  ///< the run's bf16 copy of its parameters (bf16 runs that keep one), else empty
};

/// The operand type of the layers' own product kernels (narrow dense, direct convolutions): the type their inputs
/// are rounded to before the products, fp32 accumulation either way.
enum class Operand { fp32, bf16 };
/// `p`'s operand type: bf16 under bf16 matmuls, fp32 under fp32 and tf32 (the own kernels have no tf32 form).
constexpr Operand operand_of(Precision const& p) {
  return p.matmul == MatmulPrecision::bf16 ? Operand::bf16 : Operand::fp32;
}
/// Runs f(std::integral_constant<Operand, op>{}): the kernels are instantiated per operand type.
template <class F>
void with_operand(Operand op, F const& f) {
  if (op == Operand::bf16)
    f(std::integral_constant<Operand, Operand::bf16>{});
  else
    f(std::integral_constant<Operand, Operand::fp32>{});
}

}  // namespace ktr
