// Weights to and from the JAX/PyTorch world: a model's parameters as safetensors named by Flax's parameter-tree
// paths ("Dense_0.kernel" (in, out), "Conv_0.kernel" (3, 3, Cin, Cout) HWIO, "*.bias"), so that
// flax.traverse_util.unflatten_dict(tensors, sep=".") rebuilds the tree of the same architecture. Flax and ktr
// also flatten NHWC images in the same (H, W, C) order, so the first Dense kernel needs no permutation.
//
// The file's metadata records ktr.model (the description), ktr.normalize_scale / ktr.normalize_shift (the input
// transform: pixel * scale + shift), ktr.task and ktr.version; a per-feature transform goes in as the tensors
// ktr.input_scale and ktr.input_shift, shaped like one sample.
#pragma once

#include "safetensors.hpp"
#include "session.hpp"

#include <string>

namespace ktr {

/// The safetensors form of a model's parameters (`params`: the host copy of its arena) and its input transform.
/// Refuses (ktr::DivergenceError) parameters or a transform that are not finite: nothing non-finite is exported,
/// by the CLI, the C API or a caller.
SafeTensors export_weights(Model const& model, std::vector<float> const& params, RunConfig const& config);

/// Fills `params` (the host copy of `model`'s arena, padding zero) from Flax-named tensors, refusing a missing or
/// unexpected name, a shape or a dtype that does not match, with the tensor and the reason (ktr::Error naming
/// `path`). Returns the input transform recorded in the file (per feature on the device, or scalar), if any.
struct ImportedWeights {
  std::vector<float> params;
  bool has_transform = false;  ///< the file records an input transform
  InputTransform input_transform;
  std::string task;   ///< from the metadata (classification or regression), or ""
  std::string model;  ///< the model description the file records (ktr.model), or ""
};
ImportedWeights import_weights(Model const& model, SafeTensors const& st, std::string const& path);

}  // namespace ktr
