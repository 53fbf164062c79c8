// A replay buffer on the device: the last `capacity` samples pushed, as a dataset a Trainer trains on
// (Trainer::set_data(buffer.data()), then Trainer::advance). In-situ training pushes a simulation's samples as
// they are produced and trains on a random draw of what the buffer holds.
//
// Every push is checked as a training batch is, before it changes anything: the samples' shape, the targets' kind
// and width, class labels within the model's classes, and every feature and target finite (one reduction read
// back; a push waits for the device anyway, so that the caller may reuse its arrays). A refused push leaves the
// buffer as it was. Storage is allocated once, when the buffer is made. Rows are written at `head` modulo the
// capacity: the oldest samples are overwritten; a batch larger than the buffer keeps its last `capacity` samples.
#pragma once

#include "../data/dataset.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace ktr {

class ReplayBuffer {
 public:
  /// A buffer of `capacity` samples of shape `input` ((1, D) or (1, H, W, C), as Model::input_shape(1) gives
  /// it) with targets for `task`: class labels in [0, width) or `width` values per sample.
  ReplayBuffer(ExecSpace const& space, std::int64_t capacity, Shape const& input, Task task, std::int64_t width);

  /// Appends `batch` (float features; labels or values as the buffer holds). Throws ktr::Error naming what does
  /// not match or is not finite; the buffer is then unchanged.
  void push(ExecSpace const& space, DeviceDataset const& batch);

  /// The filled rows as a dataset (views of the buffer's storage: valid while the buffer lives and until the
  /// next push changes its rows).
  DeviceDataset data() const;

  std::int64_t capacity() const { return capacity_; }
  std::int64_t filled() const { return filled_; }
  std::int64_t head() const { return head_; }
  Task task() const { return task_; }
  Shape const& input() const { return input_; }
  std::int64_t width() const { return width_; }
  std::int64_t sample_size() const { return input_.size(); }

  /// The whole storage on the host (features capacity x sample, then labels or values) and the counters, for a
  /// checkpoint; restore() takes the same back, every size and counter checked first.
  struct Rows {
    std::vector<float> features, values;
    std::vector<std::int32_t> labels;
    std::int64_t head = 0, filled = 0;
  };
  Rows download(ExecSpace const& space) const;
  void restore(ExecSpace const& space, Rows const& rows, std::string const& what);

 private:
  std::int64_t capacity_, width_;
  Shape input_;
  Task task_;
  Kokkos::View<float**, Kokkos::LayoutRight, MemSpace> x_;       // (capacity, sample)
  Kokkos::View<std::int32_t*, MemSpace> labels_;                 // (capacity) or empty
  Kokkos::View<float**, Kokkos::LayoutRight, MemSpace> values_;  // (capacity, width) or empty
  std::int64_t head_ = 0, filled_ = 0;
};

}  // namespace ktr
