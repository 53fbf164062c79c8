// A float tensor: a flat Kokkos view on the device plus a shape of rank up to 4.
//
// A tensor either owns its storage (allocated with a label) or is a window into someone else's (a parameter
// arena, a workspace); copies are shallow, like Kokkos views. Kernels take the flat view or a row-major matrix.
#pragma once

#include "types.hpp"

#include <array>
#include <initializer_list>
#include <string>
#include <vector>

namespace ktr {

/// Up to four extents, outermost first: (B, H, W, C) for images, (B, N) for features.
struct Shape {
  std::array<std::int64_t, 4> dims{1, 1, 1, 1};
  int rank = 0;

  Shape() = default;
  Shape(std::initializer_list<std::int64_t> extents);

  std::int64_t operator[](int i) const { return dims[static_cast<std::size_t>(i)]; }
  std::int64_t size() const;
  /// Extents after the first, multiplied: the row length when the tensor is seen as (dims[0], rest).
  std::int64_t inner() const;
  /// The same shape with the first extent replaced.
  Shape with_batch(std::int64_t batch) const;
  bool operator==(Shape const& o) const;
  bool operator!=(Shape const& o) const { return !(*this == o); }
  std::string str() const;
};

class Tensor {
 public:
  Tensor() = default;
  /// Allocates `shape.size()` zeroed floats in device memory, labelled `label`.
  Tensor(std::string const& label, Shape shape);
  /// The same, allocated (and zeroed) on `space`.
  Tensor(ExecSpace const& space, std::string const& label, Shape shape);
  /// Wraps existing storage (which must hold at least shape.size() floats).
  Tensor(DeviceView<float*> storage, Shape shape);

  Shape const& shape() const { return shape_; }
  std::int64_t size() const { return shape_.size(); }
  float* data() const { return view_.data(); }
  DeviceView<float*> const& view() const { return view_; }
  std::string label() const { return view_.label(); }

  /// The tensor as a (dims[0], inner) row-major matrix.
  Matrix matrix() const;
  /// The same storage seen with another shape of equal or smaller size (no copy).
  Tensor reshaped(Shape shape) const;

 private:
  DeviceView<float*> view_;
  Shape shape_;
};

/// Copies a tensor to the host (blocking; for I/O and tests, never inside the training loop).
std::vector<float> to_host(Tensor const& t);
/// Copies host values into a tensor (blocking); `values.size()` must equal `t.size()`.
void from_host(Tensor const& t, std::vector<float> const& values);

}  // namespace ktr
