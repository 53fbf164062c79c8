// The dataset on the device, and the kernels that turn it into batches without leaving the device.
//
//   IDX files, .npy arrays --(host, once: decode + validate + one copy)--> DeviceDataset
//   an application's own Kokkos views -------------(no copy: read in place)--> DeviceDataset
//   (seed, epoch) --> Permutation (evaluated inside the gather, never materialised)
//   gather(step) --> float batch (B, ...) normalised; targets: int32 labels (B) or float values (B, T)
//
// A DeviceDataset is views plus a description. Features are uint8 pixels or floats, (N, H, W, C) images or
// (N, D) vectors; targets are class labels (N) or regression values (N, T). Every view is read through its
// strides, so LayoutRight (the CPU default), LayoutLeft (the CUDA/HIP default) and strided subviews all work
// unchanged, and one gather serves every kind of data.
//
// The step a gather reads lives in device memory, so a captured multi-step program replays correctly.
// An epoch has floor(N / B) steps: the last partial batch is dropped (every sample still appears in some epochs,
// because each epoch's permutation is different).
#pragma once

#include "../core/error.hpp"
#include "../core/tensor.hpp"
#include "../core/types.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace ktr {

/// What a model learns from the targets: classes (softmax cross-entropy) or values (mean squared error).
enum class Task { classification, regression };

/// Features (N, ...) and targets in device memory, seen through strides. Copies are shallow (like views). Which
/// features and which targets it holds is said by feature_kind and target_kind (the other views are empty).
struct DeviceDataset {
  enum class Features { uint8, float32 };       ///< `pixels` (uint8) or `features` (float)
  enum class Targets { labels, values, none };  ///< `labels`, `values`, or none (features alone: prediction)

  template <class T>
  using Strided4 =
      Kokkos::View<const T****, Kokkos::LayoutStride, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  /// (N, H, W, C) samples at `data` with the given extents and strides (in elements), read in place.
  template <class T>
  static Strided4<T> strided(T const* data, std::int64_t const (&extent)[4], std::int64_t const (&stride)[4]) {
    Kokkos::LayoutStride const layout{std::size_t(extent[0]), std::size_t(stride[0]), std::size_t(extent[1]),
                                      std::size_t(stride[1]), std::size_t(extent[2]), std::size_t(stride[2]),
                                      std::size_t(extent[3]), std::size_t(stride[3])};
    return Strided4<T>(data, layout);
  }
  using Labels =
      Kokkos::View<const std::int32_t*, Kokkos::LayoutStride, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using Values =
      Kokkos::View<const float**, Kokkos::LayoutStride, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

  Strided4<std::uint8_t> pixels;  ///< uint8 features (N, H, W, C), or empty
  Strided4<float> features;       ///< float features (N, H, W, C) (vectors: (N, 1, 1, D)), or empty
  Labels labels;                  ///< class labels (N) for classification, or empty
  Values values;                  ///< regression targets (N, T), or empty
  Features feature_kind = Features::uint8;
  Targets target_kind = Targets::labels;
  std::int64_t count = 0, height = 1, width = 1, channels = 1;
  bool vector = false;     ///< samples are vectors (D = channels): batches are (B, D), models start with in=D
  int num_classes = 0;     ///< classification: labels lie in [0, num_classes)
  std::int64_t bytes = 0;  ///< device memory this dataset owns (0 for an application's views)
  std::shared_ptr<void const> keep;  ///< keeps the underlying views alive (they are read unmanaged)

  Task task() const { return target_kind == Targets::values ? Task::regression : Task::classification; }
  bool has_targets() const { return target_kind != Targets::none; }
  /// Targets per sample: the class count for classification, T for regression.
  std::int64_t target_width() const {
    return task() == Task::regression ? std::int64_t(values.extent(1)) : num_classes;
  }
  std::int64_t sample_size() const { return height * width * channels; }
  /// Bytes of device memory the dataset itself occupies (0 when it reads an application's views in place).
  std::int64_t device_bytes() const { return bytes; }
  /// (B, H, W, C) for images, (B, D) for vectors.
  Shape batch_shape(std::int64_t batch) const {
    return vector ? Shape{batch, channels} : Shape{batch, height, width, channels};
  }
};

/// Copies host pixels and labels to the device in one transfer each (labels checked against num_classes).
DeviceDataset make_device_dataset(std::vector<std::uint8_t> const& pixels, std::vector<std::uint8_t> const& labels,
                                  std::int64_t count, std::int64_t height, std::int64_t width,
                                  std::int64_t channels, int num_classes, std::string const& name);

/// Copies host float features (count x shape, row-major) and targets to the device once: `labels` (count) for
/// classification (num_classes <= 0: the largest label + 1) or `values` (count x targets) for regression; the
/// other is empty. `shape` is {D} or {H, W, C}. Throws ktr::Error naming `name` on a mismatch.
DeviceDataset make_device_dataset(std::vector<float> const& features, std::vector<std::int64_t> const& shape,
                                  std::vector<std::int32_t> const& labels, std::vector<float> const& values,
                                  std::int64_t count, int num_classes, std::string const& name);

/// How many of a dataset's float features and float targets are NaN or infinite (uint8 pixels and labels are
/// always finite): one reduction on `space`, read back.
std::int64_t non_finite_values(ExecSpace const& space, DeviceDataset const& data);

/// Reads `<dir>/<split>-images-idx3-ubyte[.gz]` and labels (split "train" or "t10k") onto the device.
DeviceDataset load_idx_dataset(std::string const& dir, std::string const& split, int num_classes = 10);

/// Checks labels against [0, num_classes) on the device, or finds num_classes = largest + 1 (num_classes <= 0);
/// one read-back. Throws ktr::Error naming `name`.
int check_class_labels(ExecSpace const& space, DeviceDataset::Labels const& labels, int num_classes,
                       std::string const& name);

/// An application's views as a dataset, read in place (no copy, no allocation as large as the data):
///   features: float or uint8, (N, D) or (N, H, W, C), any layout or a strided subview, in device memory;
///   targets:  int32 class labels (N), or float regression targets (N) or (N, T).
/// For labels, num_classes <= 0 takes the largest label + 1 (one reduction on `space`). The views are shared
/// handles: the dataset keeps them alive and never writes to them.
template <class FeatureView, class TargetView>
DeviceDataset dataset_from_views(ExecSpace const& space, FeatureView const& x, TargetView const& y,
                                 int num_classes = 0) {
  using F = std::remove_const_t<typename FeatureView::value_type>;
  using Y = std::remove_const_t<typename TargetView::value_type>;
  static_assert(std::is_same<F, float>::value || std::is_same<F, std::uint8_t>::value,
                "ktr: features must be float or uint8");
  static_assert(FeatureView::rank == 2 || FeatureView::rank == 4, "ktr: features must be (N, D) or (N, H, W, C)");
  static_assert(std::is_same<Y, std::int32_t>::value || std::is_same<Y, float>::value,
                "ktr: targets must be int32 labels or float values");
  static_assert(
      TargetView::rank == 1 || (std::is_same<Y, float>::value && (TargetView::rank == 2 || TargetView::rank == 4)),
      "ktr: targets must be (N) labels or values, (N, T) values, or a field's (N, H, W, C) values");
  static_assert(Kokkos::SpaceAccessibility<ExecSpace, typename FeatureView::memory_space>::accessible &&
                    Kokkos::SpaceAccessibility<ExecSpace, typename TargetView::memory_space>::accessible,
                "ktr: the views must be in memory the device can read");
  DeviceDataset d;
  d.count = std::int64_t(x.extent(0));
  KTR_REQUIRE(d.count > 0 && std::int64_t(y.extent(0)) == d.count, "ktr::dataset_from_views",
              "features have " + std::to_string(d.count) + " samples, targets " + std::to_string(y.extent(0)));
  std::int64_t ext[4], str[4];
  if constexpr (FeatureView::rank == 2) {
    d.vector = true;
    d.channels = std::int64_t(x.extent(1));
    ext[0] = d.count, ext[1] = 1, ext[2] = 1, ext[3] = d.channels;
    str[0] = std::int64_t(x.stride(0)), str[1] = 0, str[2] = 0, str[3] = std::int64_t(x.stride(1));
  } else {
    d.height = std::int64_t(x.extent(1)), d.width = std::int64_t(x.extent(2)),
    d.channels = std::int64_t(x.extent(3));
    for (int r = 0; r < 4; ++r) ext[r] = std::int64_t(x.extent(r)), str[r] = std::int64_t(x.stride(r));
  }
  KTR_REQUIRE(d.sample_size() > 0, "ktr::dataset_from_views", "empty samples");
  if constexpr (std::is_same<F, float>::value)
    d.features = DeviceDataset::strided<float>(x.data(), ext, str),
    d.feature_kind = DeviceDataset::Features::float32;
  else
    d.pixels = DeviceDataset::strided<std::uint8_t>(x.data(), ext, str),
    d.feature_kind = DeviceDataset::Features::uint8;
  d.target_kind =
      std::is_same<Y, std::int32_t>::value ? DeviceDataset::Targets::labels : DeviceDataset::Targets::values;
  if constexpr (std::is_same<Y, std::int32_t>::value) {
    d.labels =
        DeviceDataset::Labels(y.data(), Kokkos::LayoutStride(std::size_t(d.count), std::size_t(y.stride(0))));
    d.num_classes = check_class_labels(space, d.labels, num_classes, "ktr::dataset_from_views");
  } else if constexpr (TargetView::rank == 1) {
    d.values = DeviceDataset::Values(y.data(),
                                     Kokkos::LayoutStride(std::size_t(d.count), std::size_t(y.stride(0)), 1, 1));
  } else if constexpr (TargetView::rank == 2) {
    d.values =
        DeviceDataset::Values(y.data(), Kokkos::LayoutStride(std::size_t(d.count), std::size_t(y.stride(0)),
                                                             std::size_t(y.extent(1)), std::size_t(y.stride(1))));
  } else {  // a field per sample, read as (N, H*W*C): its (H, W, C) must be one row-major block
    std::size_t const c = y.extent(3), wc = y.extent(2) * c;
    KTR_REQUIRE(y.stride(3) == 1 && y.stride(2) == c && y.stride(1) == wc, "ktr::dataset_from_views",
                "a field of targets (N, H, W, C) must hold each sample's (H, W, C) row-major (LayoutRight, or "
                "LayoutStride with those strides); its strides are (" +
                    std::to_string(y.stride(0)) + ", " + std::to_string(y.stride(1)) + ", " +
                    std::to_string(y.stride(2)) + ", " + std::to_string(y.stride(3)) + ")");
    d.values = DeviceDataset::Values(
        y.data(), Kokkos::LayoutStride(std::size_t(d.count), std::size_t(y.stride(0)), y.extent(1) * wc, 1));
  }
  d.keep = std::make_shared<std::pair<FeatureView, TargetView> const>(x, y);
  return d;
}

/// An application's features alone as a dataset (for prediction), read in place: float or uint8, (N, D) or
/// (N, H, W, C), any layout, in device memory. It has no targets (task() says classification; nothing reads them).
template <class FeatureView>
DeviceDataset dataset_from_features(FeatureView const& x) {
  // A null (N) value view stands for the absent targets: nothing reads it, and its data() is null.
  Kokkos::View<float*, Kokkos::LayoutStride, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> none(
      static_cast<float*>(nullptr), Kokkos::LayoutStride(std::size_t(x.extent(0)), 0));
  DeviceDataset d = dataset_from_views(ExecSpace(), x, none);
  d.values = DeviceDataset::Values();
  d.target_kind = DeviceDataset::Targets::none;
  return d;
}

/// The input transform applied while gathering: x = v * scale + shift, with one (scale, shift) for every feature
/// (uint8 pixels: [0, 1] by default) or, where feature_scale is set, one per feature (float features).
struct InputTransform {
  float scale = 1.0f / 255.0f;
  float shift = 0.0f;
  DeviceView<float*> feature_scale, feature_shift;  ///< (sample size) each, or empty

  bool per_feature() const { return feature_scale.extent(0) > 0; }
  /// (pixel / 255 - mean) / std
  static InputTransform standardized(float mean, float std);
  /// No transform: x = v.
  static InputTransform identity() {
    InputTransform n;
    n.scale = 1.0f;
    return n;
  }
};

/// Mean and standard deviation of the pixels scaled to [0, 1], reduced on the device (one read-back; at load).
struct PixelStatistics {
  double mean = 0, std = 0;
};
PixelStatistics pixel_statistics(ExecSpace const& space, DeviceDataset const& data);

/// How a run's input transform is chosen: `standard` standardises uint8 pixels by their mean and std, and float
/// features per feature (mean and std of each over the training samples, computed on the device; a constant
/// feature keeps std 1); `unit` scales pixels to [0, 1] (floats unchanged); `none` changes nothing; `recorded`:
/// the transform came with the model (a checkpoint of version 1, an imported file) and is not refitted.
enum class InputTransformMode { standard, unit, none, recorded };
/// The names of ktr 0.1 (the transform was "normalization"; the setting that chooses it keeps its name,
/// `normalize`, as --normalize and general.normalize spell it).
using Normalization = InputTransform;
using NormalizeMode = InputTransformMode;
/// "standard", "unit", "none", "recorded" (as checkpoints record it).
char const* input_transform_mode_name(InputTransformMode mode);
/// The mode a name stands for; throws ktr::UsageError naming the value and the accepted names.
InputTransformMode parse_input_transform_mode(std::string const& name);

/// The transform a run uses, fitted on its training data as `mode` says (`recorded` cannot be fitted).
InputTransform fit_input_transform(ExecSpace const& space, DeviceDataset const& data, InputTransformMode mode);

/// Where a gather takes its samples: the step counter in device memory, plus a fixed offset. A step's global batch
/// is `stride` rows of the epoch's permuted order; this gather takes `batch` of them from row `row` on (data
/// parallelism and gradient accumulation: rank r's micro-batch j of B = R N b rows is row (j R + r) b).
struct BatchCursor {
  Kokkos::View<std::int64_t, MemSpace> step;  ///< global step, advanced on the device by the optimiser
  std::int64_t offset = 0;                    ///< added to *step (for the k-th batch of a K-step program)
  std::uint64_t seed = 0;
  std::int64_t batch = 0;   ///< rows this gather writes
  std::int64_t stride = 0;  ///< rows of a global batch (0: batch); an epoch is floor(N / stride) steps
  std::int64_t row = 0;     ///< first row of this gather within the global batch
};

/// A batch on the device: inputs (B, ...) and the targets of the dataset's task.
struct Batch {
  Tensor x;                          ///< (B, H, W, C) or (B, D)
  DeviceView<std::int32_t*> labels;  ///< (B) for classification
  Tensor values;                     ///< (B, T) for regression
};

/// Steps per epoch: floor(count / batch).
std::int64_t steps_per_epoch(DeviceDataset const& data, std::int64_t batch);

/// Gathers the batch of global step `*cursor.step + cursor.offset`: sample b is
/// permutation(seed, epoch)(pos * S + row + b) with S = cursor.stride (or B), epoch = step / steps_per_epoch(S),
/// pos = step % steps_per_epoch(S).
/// One kernel, no host synchronisation. Targets go where `out` has room for them.
void gather_batch(ExecSpace const& space, DeviceDataset const& data, BatchCursor const& cursor,
                  InputTransform const& transform, Batch const& out);
/// The same for classification data into x (B, H, W, C) and y (B).
void gather_batch(ExecSpace const& space, DeviceDataset const& data, BatchCursor const& cursor,
                  InputTransform const& transform, Tensor const& x, DeviceView<std::int32_t*> const& y);

/// Gathers the contiguous, unshuffled samples [first, first + B) with B = out.x.shape()[0] (evaluation and
/// inference; the caller shrinks the last batch). Targets go where `out` has room for them.
void gather_range(ExecSpace const& space, DeviceDataset const& data, std::int64_t first,
                  InputTransform const& transform, Batch const& out);
void gather_range(ExecSpace const& space, DeviceDataset const& data, std::int64_t first,
                  InputTransform const& transform, Tensor const& x, DeviceView<std::int32_t*> const& y);

/// Writes permutation(seed, epoch) of [0, n) into `out` (for tests and inspection; the gather never needs it).
void permutation(ExecSpace const& space, std::uint64_t seed, std::uint64_t epoch,
                 DeviceView<std::int64_t*> const& out);

}  // namespace ktr
