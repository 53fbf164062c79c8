// Layers: each knows its parameter shapes, its output shape, its forward (which saves nothing beyond its output:
// the model keeps every layer's input and output) and its backward. Parameters and gradients are windows into the
// model's arena, handed over by bind(); scratch (im2col) is a window into the model's workspace.
//
// Shapes include the batch: images (B, H, W, C) NHWC, features (B, N). Every call takes the execution space
// instance it runs on and launches labelled kernels ("ktr::<layer>::<op>") or gemms on it; nothing allocates.
#pragma once

#include "../backends/precision.hpp"
#include "../core/tensor.hpp"
#include "activation.hpp"
#include "arena.hpp"

#include <memory>
#include <string>
#include <vector>

namespace ktr {

/// What makes a training forward's random draws (dropout) reproducible: the run's seed, the optimiser step (read
/// on the device, so K steps of one dispatch each draw anew) and the row, in the whole update, of the
/// micro-batch's first sample (so accumulation and more ranks draw what one rank would). Outside training there is
/// no key and nothing is drawn.
struct RandomKey {
  std::uint64_t seed = 0;
  std::int64_t const* step = nullptr;  ///< device memory
  std::int64_t row = 0;
};

class Layer {
 public:
  virtual ~Layer() = default;
  /// The layer's normalised token in a model description, e.g. "dense:512:relu".
  virtual std::string describe() const = 0;
  /// The Flax module its parameters belong to ("Dense", "Conv", "LayerNorm"; the model numbers them per module in
  /// order of appearance: Dense_0, Dense_1, ...), or null for a layer without parameters.
  virtual char const* module() const { return nullptr; }
  /// The output shape for inputs of shape `in`; throws ktr::Error naming the layer if it cannot take them. The
  /// extents of `in` multiply without overflow (the description parser checks every shape it passes on).
  virtual Shape output_shape(Shape const& in) const = 0;
  virtual std::vector<ParamSpec> param_specs(Shape const& /*in*/) const { return {}; }
  /// Receives the windows of its parameters and gradients (in param_specs order).
  virtual void bind(std::vector<Tensor> const& /*params*/, std::vector<Tensor> const& /*grads*/) {}
  /// Floats of scratch the layer needs for a batch of shape `in`.
  virtual std::int64_t scratch_size(Shape const& /*in*/) const { return 0; }
  virtual void set_scratch(DeviceView<float*> const& /*scratch*/) {}
  /// True if the output is the input seen with another shape (no kernel, no memory).
  virtual bool is_view() const { return false; }
  /// Asks the layer to absorb `next` (which follows it, on inputs of shape `in`): if it agrees, its forward
  /// writes next's output and its backward takes the gradient of next's output; the model then skips `next`.
  /// Must be asked before scratch_size(). (Conv2D absorbs the AvgPool2 after it when it runs direct.)
  virtual bool fuse_next(Layer const& /*next*/, Shape const& /*in*/) { return false; }
  /// Multiply-add FLOPs (2 per MAC) of the forward pass for a batch of shape `in` (gemm work only).
  virtual double forward_flops(Shape const& /*in*/) const { return 0; }
  /// True for layers that draw random numbers in training (dropout).
  virtual bool random() const { return false; }
  /// The key of the coming forward (and of the backward after it), null outside training; `index` is the
  /// layer's position in the model. Asked of random() layers only.
  virtual void set_random_key(RandomKey const* /*key*/, int /*index*/) {}

  /// y = f(x). `precision`: the run's arithmetic, which the layer hands to gemm and to its own product kernels
  /// (layers without products ignore it).
  virtual void forward(ExecSpace const& space, Precision const& precision, Tensor const& x, Tensor const& y) = 0;
  /// Writes the parameter gradients and, if dx is non-empty, dx; dy may be overwritten.
  virtual void backward(ExecSpace const& space, Precision const& precision, Tensor const& x, Tensor const& y,
                        Tensor const& dy, Tensor const& dx) = 0;
};

/// A layer with a kernel, a bias and a fused activation (Dense, Conv2D): holds the windows of its parameters and
/// gradients.
class KernelBiasLayer : public Layer {
 public:
  KernelBiasLayer(std::int64_t features, Activation act) : features_(features), act_(act) {}
  void bind(std::vector<Tensor> const& params, std::vector<Tensor> const& grads) override;
  Activation activation() const { return act_; }

 protected:
  /// ":ACT" for a fused activation other than identity, else "".
  std::string activation_suffix() const;
  std::int64_t features_;
  Activation act_;
  Tensor w_, b_, dw_, db_;
};

/// y = act(x W + b): x (B, in) (or any (B, ...) flattened), W (in, out), b (out). Token "dense:N[:ACT]".
class Dense : public KernelBiasLayer {
 public:
  Dense(std::int64_t features, Activation act = Activation::identity) : KernelBiasLayer(features, act) {}
  std::string describe() const override { return "dense:" + std::to_string(features_) + activation_suffix(); }
  char const* module() const override { return "Dense"; }
  Shape output_shape(Shape const& in) const override;
  std::vector<ParamSpec> param_specs(Shape const& in) const override;
  double forward_flops(Shape const& in) const override { return 2.0 * in.size() * features_; }
  /// The transposed kernel, where the narrow kernels run (models/dense_narrow.hpp); on GPUs the bias
  /// gradient's ones vector (act_bias_backward_scratch, bias_act.hpp); z = x W + b where the activation's
  /// derivative needs it.
  std::int64_t scratch_size(Shape const& in) const override;
  void set_scratch(DeviceView<float*> const& scratch) override { scratch_ = scratch; }
  void forward(ExecSpace const& space, Precision const& precision, Tensor const& x, Tensor const& y) override;
  void backward(ExecSpace const& space, Precision const& precision, Tensor const& x, Tensor const& y,
                Tensor const& dy, Tensor const& dx) override;

 private:
  std::int64_t kernel_scratch(Shape const& in) const;  // the transposed kernel or the ones vector
  float* saved_input(Shape const& in) const;           // where z is kept, or null
  DeviceView<float*> scratch_;
};

/// How a Conv2D computes: `direct` (one pass over the input, vectorised over output channels, for few input
/// channels: models/conv_direct.hpp; 3x3, stride 1, SAME only; host builds only), `im2col` (im2col + gemm + an
/// activation pass, every form) or `library` (the convolution library's primitives, backends/conv.hpp: oneDNN on
/// hosts built with it; SAME and VALID, fp32; then the bias and activation pass); `automatic` picks direct on
/// hosts where it applies and the input has at most `direct_max_channels` channels, else the library where it runs
/// the convolution, else im2col (GPUs: im2col + the vendor BLAS; the direct kernels are written for a CPU core's
/// vector registers: on a GPU each thread would carry kilobytes of local arrays).
enum class ConvAlgorithm { automatic, direct, im2col, library };

/// How a convolution treats its edges: SAME zero padding (as XLA: the output has ceil(H / S) rows, the padding's
/// smaller half goes first), VALID (no padding), or CIRCULAR (Flax's padding="CIRCULAR": the input wraps around,
/// (K - 1) / 2 rows before and K / 2 after on each axis, then a VALID window; ceil(H / S) rows, as SAME).
enum class Padding { same, valid, circular };

/// A convolution's geometry: a K x K window (K = 1, 3, 5, 7), stride 1 or 2, and its padding.
struct ConvForm {
  int kernel = 3;
  int stride = 1;
  Padding padding = Padding::same;
};

/// KxK convolution, NHWC, kernel (K, K, Cin, Cout) (HWIO, as Flax), bias (Cout), fused activation. Token
/// "convKxK:N[:ACT][:s2][:valid|:circular]". im2col: forward and the kernel gradient go through im2col + gemm, the
/// input gradient is a gemm + col2im, and the forward's im2col columns stay in the layer's scratch for the
/// backward. direct: one kernel each way (plus a deterministic reduction of the kernel gradient), optionally with
/// the following AvgPool2 fused in.
class Conv2D : public KernelBiasLayer {
 public:
  static constexpr std::int64_t direct_max_channels = 8;
  Conv2D(std::int64_t features, Activation act = Activation::identity,
         ConvAlgorithm algorithm = ConvAlgorithm::automatic, ConvForm form = ConvForm())
      : KernelBiasLayer(features, act), algorithm_(algorithm), form_(form) {}
  std::string describe() const override;
  char const* module() const override { return "Conv"; }
  ConvForm form() const { return form_; }
  Shape output_shape(Shape const& in) const override;
  std::vector<ParamSpec> param_specs(Shape const& in) const override;
  std::int64_t scratch_size(Shape const& in) const override;
  double forward_flops(Shape const& in) const override;
  bool fuse_next(Layer const& next, Shape const& in) override;
  void set_scratch(DeviceView<float*> const& scratch) override { scratch_ = scratch; }
  /// True if inputs of shape `in` take the direct kernels.
  bool direct(Shape const& in) const;
  /// True if inputs of shape `in` in `precision` take the convolution library (throws, naming why, where the
  /// algorithm asks for the library and it cannot run the convolution).
  bool library(Shape const& in, Precision const& precision) const;
  /// 2 if the following AvgPool2 is fused in (the forward writes the pooled output), else 1.
  int pool() const { return pool_; }
  void forward(ExecSpace const& space, Precision const& precision, Tensor const& x, Tensor const& y) override;
  void backward(ExecSpace const& space, Precision const& precision, Tensor const& x, Tensor const& y,
                Tensor const& dy, Tensor const& dx) override;

 private:
  std::int64_t direct_w16_offset(Shape const& in) const;  // the direct kernels' bf16 weights in scratch

  ConvAlgorithm algorithm_;
  ConvForm form_;
  int pool_ = 1;
  DeviceView<float*> scratch_;
  // The input (and its batch) whose bf16 rounding the last library forward kept in scratch for the backward of
  // the same input; null: none kept.
  float const* bf16_input_of_ = nullptr;
  std::int64_t bf16_input_batch_ = 0;
};

/// 2x2 pooling, stride 2, VALID (odd trailing rows/columns are dropped, as Flax's avg_pool and max_pool): the mean
/// ("avgpool2") or the maximum ("maxpool2"; its gradient goes to the first maximum of each window, row-major).
class Pool2 : public Layer {
 public:
  explicit Pool2(bool max) : max_(max) {}
  std::string describe() const override { return max_ ? "maxpool2" : "avgpool2"; }
  bool max() const { return max_; }
  Shape output_shape(Shape const& in) const override;
  void forward(ExecSpace const& space, Precision const& precision, Tensor const& x, Tensor const& y) override;
  void backward(ExecSpace const& space, Precision const& precision, Tensor const& x, Tensor const& y,
                Tensor const& dy, Tensor const& dx) override;

 private:
  bool max_;
};

/// The average pool a Conv2D may absorb.
class AvgPool2 : public Pool2 {
 public:
  AvgPool2() : Pool2(false) {}
};

/// (B, H, W, C) -> (B, H*W*C): a view, no kernel.
class Flatten : public Layer {
 public:
  std::string describe() const override { return "flatten"; }
  Shape output_shape(Shape const& in) const override { return Shape{in[0], in.inner()}; }
  bool is_view() const override { return true; }
  void forward(ExecSpace const&, Precision const&, Tensor const&, Tensor const&) override {}
  void backward(ExecSpace const&, Precision const&, Tensor const&, Tensor const&, Tensor const&,
                Tensor const&) override {}
};

/// "save:NAME": remembers the tensor it is given for a later add:NAME or concat:NAME (skip connections: U-Nets,
/// residual networks). A view: its output is its input, nothing is copied; the model keeps the tensor alive and
/// adds the gradients of every later use to the gradient that comes down the chain.
class Save : public Layer {
 public:
  explicit Save(std::string name) : name_(std::move(name)) {}
  std::string const& name() const { return name_; }
  std::string describe() const override { return "save:" + name_; }
  Shape output_shape(Shape const& in) const override { return in; }
  bool is_view() const override { return true; }
  void forward(ExecSpace const&, Precision const&, Tensor const&, Tensor const&) override {}
  void backward(ExecSpace const&, Precision const&, Tensor const&, Tensor const&, Tensor const&,
                Tensor const&) override {}

 private:
  std::string name_;
};

/// A layer that joins the tensor remembered by save:NAME to its input: "add:NAME" (a residual: the same shape),
/// "concat:NAME" (the remembered channels after the input's, as jnp.concatenate([x, saved], axis=-1)). The
/// parser hands it the remembered tensor's shape; the model hands it the tensor (join_forward) and the buffer its
/// gradient goes to (join_backward), so the plain forward and backward are never called.
class Join : public Layer {
 public:
  explicit Join(std::string source) : source_(std::move(source)) {}
  /// The NAME of the save:NAME it reads.
  std::string const& source() const { return source_; }
  /// The remembered tensor's shape at batch 1, before output_shape() is asked.
  void set_saved_shape(Shape const& saved) { saved_ = saved; }
  Shape output_shape(Shape const& in) const override;
  /// y = join(x, s).
  virtual void join_forward(ExecSpace const& space, Tensor const& x, Tensor const& s, Tensor const& y) = 0;
  /// From dy: dx (unless empty) and the remembered tensor's gradient ds, added to what ds holds if `accumulate`
  /// (another use of the same tensor wrote it first), else written.
  virtual void join_backward(ExecSpace const& space, Tensor const& dy, Tensor const& dx, Tensor const& ds,
                             bool accumulate) = 0;
  void forward(ExecSpace const& space, Precision const& precision, Tensor const& x, Tensor const& y) override;
  void backward(ExecSpace const& space, Precision const& precision, Tensor const& x, Tensor const& y,
                Tensor const& dy, Tensor const& dx) override;

 protected:
  /// The output shape for inputs `in` and a remembered tensor of shape `saved` (both at the same batch); throws
  /// ktr::Error naming the token where they do not fit together.
  virtual Shape joined_shape(Shape const& in, Shape const& saved) const = 0;
  std::string source_;
  Shape saved_;
};

/// Builds a layer from its description token ("dense:10", "conv5x5:16:gelu", "layernorm", ...: the kinds of
/// models/registry.hpp); throws ktr::Error naming the token otherwise.
std::unique_ptr<Layer> make_layer(std::string const& token);

/// What a layer needs to run outside a Model (tests, micro-benchmarks): its own parameter arena (bound to it),
/// and scratch, for inputs of shape `in`.
struct StandaloneLayer {
  StandaloneLayer(Layer& layer, Shape const& in);
  Arena arena;
  DeviceView<float*> scratch;
};

}  // namespace ktr
