// The replay buffer's checks and kernels: see replay_buffer.hpp.
#include "replay_buffer.hpp"

#include "../core/checked.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <tuple>

namespace ktr {

namespace {

using Range = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
template <class T>
using HostRows = Kokkos::View<T**, Kokkos::LayoutRight, HostSpace, Kokkos::MemoryUnmanaged>;

}  // namespace

ReplayBuffer::ReplayBuffer(ExecSpace const& space, std::int64_t capacity, Shape const& input, Task task,
                           std::int64_t width)
    : capacity_(capacity), width_(width), input_(input), task_(task) {
  KTR_REQUIRE(capacity > 0, "replay buffer", "a capacity of " + std::to_string(capacity) + " samples");
  KTR_REQUIRE((input.rank == 2 || input.rank == 4) && input[0] == 1 && input.size() > 0 && width > 0,
              "replay buffer", "samples " + input.str() + " with " + std::to_string(width) + " targets");
  std::int64_t const bytes =
      checked_mul(checked_mul(capacity, input.size() + width, "replay buffer"), 4, "replay buffer");
  KTR_REQUIRE(bytes <= (std::int64_t(1) << 40), "replay buffer",
              std::to_string(capacity) + " samples of " + input.str() + " need " + std::to_string(bytes) +
                  " bytes: too large");
  x_ = decltype(x_)(Kokkos::view_alloc(space, "ktr::replay::x"), std::size_t(capacity), std::size_t(input.size()));
  if (task == Task::classification)
    labels_ = decltype(labels_)(Kokkos::view_alloc(space, "ktr::replay::labels"), std::size_t(capacity));
  else
    values_ = decltype(values_)(Kokkos::view_alloc(space, "ktr::replay::values"), std::size_t(capacity),
                                std::size_t(width));
}

void ReplayBuffer::push(ExecSpace const& space, DeviceDataset const& batch) {
  char const* const what = "replay buffer push";
  KTR_REQUIRE(batch.feature_kind == DeviceDataset::Features::float32, what, "the features must be floats");
  KTR_REQUIRE(batch.batch_shape(1) == input_, what,
              "samples " + batch.batch_shape(1).str() + ", the buffer holds " + input_.str());
  KTR_REQUIRE(batch.has_targets() && batch.task() == task_, what,
              std::string(task_ == Task::classification ? "the buffer holds class labels, the batch has none"
                                                        : "the buffer holds float targets, the batch has none"));
  if (task_ == Task::classification)
    KTR_REQUIRE(batch.num_classes <= width_, what,
                "a label " + std::to_string(batch.num_classes - 1) + " outside the model's " +
                    std::to_string(width_) + " classes");
  else
    KTR_REQUIRE(batch.target_width() == width_, what,
                std::to_string(batch.target_width()) + " targets per sample, the model has " +
                    std::to_string(width_) + " outputs");
  std::int64_t const bad = non_finite_values(space, batch);
  KTR_REQUIRE(bad == 0, what, std::to_string(bad) + " features or targets are not finite (NaN or infinite)");
  // Rows head .. head + kept (mod capacity); a batch larger than the buffer keeps its last `capacity` samples.
  std::int64_t const n = batch.count, kept = std::min(n, capacity_), skip = n - kept, head = head_;
  std::int64_t const capacity = capacity_, sample = sample_size(), w = batch.width, c = batch.channels;
  auto const bx = x_;
  auto const fx = batch.features;
  Kokkos::parallel_for(
      "ktr::replay::push_features", Range(space, 0, kept * sample), KOKKOS_LAMBDA(std::int64_t i) {
        std::int64_t const s = skip + i / sample, f = i % sample;
        bx((head + s - skip) % capacity, f) = fx(s, f / (w * c), f / c % w, f % c);
      });
  if (task_ == Task::classification) {
    auto const bl = labels_;
    auto const l = batch.labels;
    Kokkos::parallel_for(
        "ktr::replay::push_labels", Range(space, 0, kept),
        KOKKOS_LAMBDA(std::int64_t i) { bl((head + i) % capacity) = l(skip + i); });
  } else {
    auto const bv = values_;
    auto const v = batch.values;
    std::int64_t const t = width_;
    Kokkos::parallel_for(
        "ktr::replay::push_values", Range(space, 0, kept * t),
        KOKKOS_LAMBDA(std::int64_t i) { bv((head + i / t) % capacity, i % t) = v(skip + i / t, i % t); });
  }
  space.fence();  // the caller may reuse its arrays when push returns
  head_ = (head_ + kept) % capacity_;
  filled_ = std::min(capacity_, filled_ + kept);
}

DeviceDataset ReplayBuffer::data() const {
  KTR_REQUIRE(filled_ > 0, "replay buffer", "is empty");
  DeviceDataset d;
  d.count = filled_;
  d.vector = input_.rank == 2;
  if (d.vector) {
    d.channels = input_[1];
  } else {
    d.height = input_[1], d.width = input_[2], d.channels = input_[3];
  }
  std::int64_t const ext[4] = {filled_, d.height, d.width, d.channels};
  std::int64_t const str[4] = {sample_size(), d.width * d.channels, d.channels, 1};
  d.features = DeviceDataset::strided<float>(x_.data(), ext, str);
  d.feature_kind = DeviceDataset::Features::float32;
  if (task_ == Task::classification) {
    d.labels = DeviceDataset::Labels(labels_.data(), Kokkos::LayoutStride(std::size_t(filled_), 1));
    d.target_kind = DeviceDataset::Targets::labels;
    d.num_classes = int(width_);
  } else {
    d.values = DeviceDataset::Values(
        values_.data(), Kokkos::LayoutStride(std::size_t(filled_), std::size_t(width_), std::size_t(width_), 1));
    d.target_kind = DeviceDataset::Targets::values;
  }
  d.keep =
      std::make_shared<std::tuple<decltype(x_), decltype(labels_), decltype(values_)> const>(x_, labels_, values_);
  return d;
}

ReplayBuffer::Rows ReplayBuffer::download(ExecSpace const& space) const {
  Rows r;
  r.head = head_, r.filled = filled_;
  r.features.resize(x_.size());
  Kokkos::deep_copy(space, HostRows<float>(r.features.data(), x_.extent(0), x_.extent(1)), x_);
  if (task_ == Task::classification) {
    r.labels.resize(labels_.size());
    Kokkos::deep_copy(
        space, Kokkos::View<std::int32_t*, HostSpace, Kokkos::MemoryUnmanaged>(r.labels.data(), r.labels.size()),
        labels_);
  } else {
    r.values.resize(values_.size());
    Kokkos::deep_copy(space, HostRows<float>(r.values.data(), values_.extent(0), values_.extent(1)), values_);
  }
  space.fence();
  return r;
}

void ReplayBuffer::restore(ExecSpace const& space, Rows const& r, std::string const& what) {
  bool const labels = task_ == Task::classification;
  KTR_REQUIRE(r.head >= 0 && r.head < capacity_ && r.filled >= 0 && r.filled <= capacity_ &&
                  (r.filled == capacity_ || r.head == r.filled),
              what, "holds inconsistent replay-buffer counters");
  KTR_REQUIRE(std::int64_t(r.features.size()) == capacity_ * sample_size() &&
                  std::int64_t(labels ? r.labels.size() : r.values.size()) == capacity_ * (labels ? 1 : width_) &&
                  (labels ? r.values.empty() : r.labels.empty()),
              what, "holds a replay buffer of another size than the model's");
  for (float v : r.features) KTR_REQUIRE(std::isfinite(v), what, "holds a replay-buffer value that is not finite");
  for (float v : r.values) KTR_REQUIRE(std::isfinite(v), what, "holds a replay-buffer value that is not finite");
  for (std::int64_t i = 0; i < r.filled && labels; ++i)
    KTR_REQUIRE(r.labels[std::size_t(i)] >= 0 && r.labels[std::size_t(i)] < width_, what,
                "holds a label outside the model's classes");
  Kokkos::deep_copy(space, x_, HostRows<float const>(r.features.data(), x_.extent(0), x_.extent(1)));
  if (labels)
    Kokkos::deep_copy(
        space, labels_,
        Kokkos::View<std::int32_t const*, HostSpace, Kokkos::MemoryUnmanaged>(r.labels.data(), r.labels.size()));
  else
    Kokkos::deep_copy(space, values_,
                      HostRows<float const>(r.values.data(), values_.extent(0), values_.extent(1)));
  space.fence();
  head_ = r.head, filled_ = r.filled;
}

}  // namespace ktr
