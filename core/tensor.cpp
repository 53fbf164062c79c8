// Tensor and Shape: storage, views, and blocking host transfers for I/O and tests.
#include "tensor.hpp"

#include "checked.hpp"
#include "error.hpp"

namespace ktr {

Shape::Shape(std::initializer_list<std::int64_t> extents) {
  KTR_REQUIRE(extents.size() >= 1 && extents.size() <= 4, "ktr::Shape", "rank must be 1 to 4");
  for (auto e : extents) {
    KTR_REQUIRE(e >= 0, "ktr::Shape", "negative extent");
    dims[static_cast<std::size_t>(rank++)] = e;
  }
}

std::int64_t Shape::size() const {
  std::int64_t n = 1;
  for (int i = 0; i < rank; ++i) n = checked_mul(n, dims[static_cast<std::size_t>(i)], "ktr::Shape");
  return rank == 0 ? 0 : n;
}

std::int64_t Shape::inner() const { return rank <= 1 ? 1 : size() / dims[0]; }

Shape Shape::with_batch(std::int64_t batch) const {
  Shape s = *this;
  s.dims[0] = batch;
  return s;
}

bool Shape::operator==(Shape const& o) const {
  if (rank != o.rank) return false;
  for (int i = 0; i < rank; ++i)
    if (dims[static_cast<std::size_t>(i)] != o.dims[static_cast<std::size_t>(i)]) return false;
  return true;
}

std::string Shape::str() const {
  std::string s = "(";
  for (int i = 0; i < rank; ++i) s += (i ? ", " : "") + std::to_string(dims[static_cast<std::size_t>(i)]);
  return s + ")";
}

Tensor::Tensor(std::string const& label, Shape shape)
    : view_(label, static_cast<std::size_t>(shape.size())), shape_(shape) {}

Tensor::Tensor(ExecSpace const& space, std::string const& label, Shape shape)
    : view_(Kokkos::view_alloc(space, label), static_cast<std::size_t>(shape.size())), shape_(shape) {}

Tensor::Tensor(DeviceView<float*> storage, Shape shape) : view_(std::move(storage)), shape_(shape) {
  KTR_REQUIRE(static_cast<std::int64_t>(view_.extent(0)) >= shape_.size(), "ktr::Tensor",
              "storage '" + view_.label() + "' holds " + std::to_string(view_.extent(0)) + " floats, shape " +
                  shape_.str() + " needs " + std::to_string(shape_.size()));
}

Matrix Tensor::matrix() const {
  return Matrix(view_.data(), static_cast<std::size_t>(shape_[0]), static_cast<std::size_t>(shape_.inner()));
}

Tensor Tensor::reshaped(Shape shape) const { return Tensor(view_, shape); }

std::vector<float> to_host(Tensor const& t) {
  std::vector<float> out(static_cast<std::size_t>(t.size()));
  HostView<float*> host(out.data(), out.size());
  Kokkos::deep_copy(host, Kokkos::subview(t.view(), std::make_pair<std::size_t, std::size_t>(0, out.size())));
  return out;
}

void from_host(Tensor const& t, std::vector<float> const& values) {
  KTR_REQUIRE(static_cast<std::int64_t>(values.size()) == t.size(), "ktr::from_host",
              "got " + std::to_string(values.size()) + " values for a tensor of shape " + t.shape().str());
  HostView<const float*> host(values.data(), values.size());
  Kokkos::deep_copy(Kokkos::subview(t.view(), std::make_pair<std::size_t, std::size_t>(0, values.size())), host);
}

}  // namespace ktr
