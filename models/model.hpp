// A model: a sequence of layers described by one line of text, its parameter arena and its workspace.
//
//   description  "in=28x28x1 flatten dense:512:relu dense:512:relu dense:10"       (the MLP)
//                "in=28x28x1 conv3x3:32:relu avgpool2 flatten dense:10"            (SimpleCNN)
//
// The description is saved with checkpoints and is enough to rebuild the model. allocate() sizes the arena and
// one workspace for the largest batch: every layer's output, two gradient buffers, one more per save:NAME (the
// gradient its joins send back) and the shared scratch. After that, forward and backward allocate nothing, for
// any batch up to the largest.
#pragma once

#include "arena.hpp"
#include "layers.hpp"

#include <memory>
#include <string>
#include <vector>

namespace ktr {

/// What a model description needs, worked out on the host without allocating anything (validation before a run
/// commits memory).
struct ModelPlan {
  std::string description;            ///< normalised description
  Shape input;                        ///< (1, H, W, C)
  std::int64_t output_width = 0;      ///< values per sample of the output: classes, or regression targets
  Shape output;                       ///< (1, classes), (1, T), or a field's (1, H, W, C)
  std::int64_t parameters = 0;        ///< parameter count (without padding)
  std::int64_t arena_floats = 0;      ///< one arena buffer (parameters, or gradients, or one optimiser moment)
  std::int64_t workspace_floats = 0;  ///< activations, gradients and scratch for the largest batch
};

class Model {
 public:
  /// Parses a description; throws ktr::Error naming the bad token. Allocates for batches up to max_batch.
  Model(std::string const& description, std::int64_t max_batch);
  /// The same, allocating (and zeroing) on `space`: nothing waits for the default instance.
  Model(ExecSpace const& space, std::string const& description, std::int64_t max_batch);
  /// Parses and sizes a description for batches up to max_batch without allocating (checked arithmetic: absurd
  /// sizes throw ktr::Error instead of overflowing).
  static ModelPlan plan(std::string const& description, std::int64_t max_batch);

  /// MLP on 28x28x1 images: flatten, Dense+ReLU per hidden size, Dense(classes).
  static std::string mlp(std::vector<std::int64_t> const& hidden = {512, 512}, std::int64_t classes = 10);
  /// SimpleCNN: Conv 3x3x32 SAME + ReLU, AvgPool 2x2, Flatten, Dense(classes).
  static std::string simple_cnn(std::int64_t features = 32, std::int64_t classes = 10);

  std::string const& description() const { return description_; }
  std::int64_t max_batch() const { return max_batch_; }
  /// (B, H, W, C) or (B, D) of an input batch.
  Shape input_shape(std::int64_t batch) const { return input_.with_batch(batch); }
  /// Values per sample of the output, flattened: the class count (classification), the targets per sample
  /// (regression), or H x W x C for a model that ends in a convolution (a field per sample).
  std::int64_t output_width() const { return shapes_.back().inner(); }
  /// (B, width), or (B, H, W, C) of a model that ends in a convolution.
  Shape output_shape(std::int64_t batch) const { return shapes_.back().with_batch(batch); }
  Arena const& arena() const { return arena_; }
  std::size_t num_layers() const { return layers_.size(); }
  Layer const& layer(std::size_t i) const { return *layers_[i]; }
  /// FLOPs of one training step (forward + backward gemm work) at batch B.
  double train_flops(std::int64_t batch) const;

  /// Initialises the parameters on the device (LeCun normal kernels, zero biases).
  void init(ExecSpace const& space, std::uint64_t seed) const { arena_.initialize(space, seed); }

  /// logits (B, classes) = model(x), x (B, H, W, C) with B <= max_batch. Keeps x for backward. A training forward
  /// passes the key its random layers (dropout) draw from; without one they draw nothing (evaluation).
  /// `precision`: the run's arithmetic (Precision{} is fp32), handed to every layer.
  Tensor forward(ExecSpace const& space, Precision const& precision, Tensor const& x,
                 RandomKey const* key = nullptr);
  /// True if some layer draws random numbers in training (dropout).
  bool random() const;
  /// The buffer the loss writes d loss / d logits into, for the batch of the last forward.
  Tensor dlogits() const;
  /// Writes every parameter gradient into the arena's gradient buffer (overwriting; no zero_grad needed).
  /// If dx is non-empty it receives d loss / d x (for tests). `precision`: the forward's.
  void backward(ExecSpace const& space, Precision const& precision, Tensor const& dx = Tensor());

 private:
  Model(std::string const& description, std::int64_t max_batch, bool allocate, ExecSpace const& space);
  Shape activation(std::size_t i, std::int64_t batch) const { return shapes_[i].with_batch(batch); }
  Tensor workspace(std::int64_t offset, Shape const& shape) const;
  void backward_join(ExecSpace const& space, std::size_t i, Tensor const& dy, Tensor const& din);

  std::string description_;
  Shape input_;  // (1, H, W, C) or (1, D)
  std::int64_t max_batch_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<Shape> shapes_;  // shapes_[i]: input of layer i at batch 1; shapes_.back(): the logits
  Arena arena_;
  DeviceView<float*> workspace_;
  std::int64_t workspace_floats_ = 0;
  std::vector<bool> absorbs_next_;         // layer i also computes layer i + 1 (which is then skipped)
  std::vector<int> sources_;               // a join's save layer (Description::sources)
  std::vector<std::int64_t> skip_offset_;  // a save layer's gradient buffer: what its joins send back; else -1
  std::vector<bool> join_adds_;            // a join whose tensor a later join also reads: it adds to the buffer
  std::vector<std::int64_t> act_offset_;   // output of layer i at act_offset_[i + 1]
  std::int64_t grad_offset_[2] = {0, 0};
  std::vector<Tensor> acts_;  // acts_[i]: input of layer i in the last forward (acts_[0] = x); views only
  std::int64_t batch_ = 0;
};

}  // namespace ktr
