// The dataset on the device, and the kernels that turn it into batches without leaving the device.
//
//   IDX files --(host, once: decode + validate)--> DeviceDataset (uint8 images, int32 labels)
//   (seed, epoch) --> Permutation (evaluated inside the gather, never materialised)
//   gather(step) --> float batch (B, H, W, C) normalised, int32 labels (B)
//
// The step a gather reads lives in device memory, so a captured multi-step program replays correctly.
// An epoch has floor(N / B) steps: the last partial batch is dropped (every sample still appears in some epochs,
// because each epoch's permutation is different).
#pragma once

#include "../core/tensor.hpp"
#include "../core/types.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace ktr {

/// images (N, H, W, C) uint8 and labels (N) int32, in device memory.
struct DeviceDataset {
  DeviceView<std::uint8_t*> images;
  DeviceView<std::int32_t*> labels;
  std::int64_t count = 0, height = 0, width = 0, channels = 1;
  int num_classes = 10;

  std::int64_t sample_size() const { return height * width * channels; }
  /// Bytes of device memory the dataset occupies.
  std::int64_t device_bytes() const { return count * sample_size() + count * 4; }
  /// (B, H, W, C) for a batch of B samples.
  Shape batch_shape(std::int64_t batch) const { return Shape{batch, height, width, channels}; }
};

/// Copies host pixels and labels to the device in one transfer each (labels checked against num_classes).
DeviceDataset make_device_dataset(std::vector<std::uint8_t> const& pixels, std::vector<std::uint8_t> const& labels,
                                  std::int64_t count, std::int64_t height, std::int64_t width,
                                  std::int64_t channels, int num_classes, std::string const& name);

/// Reads `<dir>/<split>-images-idx3-ubyte[.gz]` and labels (split "train" or "t10k") onto the device.
DeviceDataset load_idx_dataset(std::string const& dir, std::string const& split, int num_classes = 10);

/// out = pixel * scale + shift: [0, 1] by default; standardised with `standardized(mean, std)`.
struct Normalization {
  float scale = 1.0f / 255.0f;
  float shift = 0.0f;
  /// (pixel / 255 - mean) / std
  static Normalization standardized(float mean, float std);
};

/// Mean and standard deviation of the pixels scaled to [0, 1], reduced on the device (one read-back; at load).
struct PixelStatistics {
  double mean = 0, std = 0;
};
PixelStatistics pixel_statistics(ExecSpace const& space, DeviceDataset const& data);

/// Where a gather takes its samples: the step counter in device memory, plus a fixed offset.
struct BatchCursor {
  Kokkos::View<std::int64_t, MemSpace> step;  ///< global step, advanced on the device by the optimiser
  std::int64_t offset = 0;                    ///< added to *step (for the k-th batch of a K-step program)
  std::uint64_t seed = 0;
  std::int64_t batch = 0;
};

/// Steps per epoch: floor(count / batch).
std::int64_t steps_per_epoch(DeviceDataset const& data, std::int64_t batch);

/// Gathers the batch of global step `*cursor.step + cursor.offset`: sample b is
/// permutation(seed, epoch)(pos * B + b) with epoch = step / steps_per_epoch, pos = step % steps_per_epoch.
/// x: (B, H, W, C) floats, y: (B) labels. One kernel, no host synchronisation.
void gather_batch(ExecSpace const& space, DeviceDataset const& data, BatchCursor const& cursor,
                  Normalization const& norm, Tensor const& x, DeviceView<std::int32_t*> const& y);

/// Gathers the contiguous, unshuffled samples [first, first + B) with B = x.shape()[0] (evaluation; the caller
/// shrinks the last batch).
void gather_range(ExecSpace const& space, DeviceDataset const& data, std::int64_t first, Normalization const& norm,
                  Tensor const& x, DeviceView<std::int32_t*> const& y);

/// Writes permutation(seed, epoch) of [0, n) into `out` (for tests and inspection; the gather never needs it).
void permutation(ExecSpace const& space, std::uint64_t seed, std::uint64_t epoch,
                 DeviceView<std::int64_t*> const& out);

}  // namespace ktr
