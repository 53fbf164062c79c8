// A caller's strided arrays (up to 5 dimensions, strides in elements, in host memory or the device's) packed into
// contiguous device buffers, and contiguous device values scattered back into them: the kernels the C and Fortran
// doors read and write their callers' arrays with (capi/arrays.cpp decides what to read in place).
#pragma once

#include "../core/types.hpp"

#include <cstdint>

namespace ktr {

enum class ElementType { float32 = 0, float64 = 1, int32 = 2, int64 = 3 };

struct StridedArray {
  static constexpr int max_rank = 5;
  void* data = nullptr;
  ElementType type = ElementType::float32;
  int rank = 0;
  std::int64_t extent[max_rank] = {};
  std::int64_t stride[max_rank] = {};  ///< elements
  std::int64_t elements() const;
};

/// `a` row-major as a new contiguous device buffer of Out (float or std::int32_t), converted from its type; host
/// memory on a GPU build is packed on the host and copied once.
template <class Out>
Kokkos::View<Out*, MemSpace> pack_strided(ExecSpace const& space, StridedArray const& a);
/// The same into `buffer`, grown (never shrunk) when it is too small: a caller that packs on every call allocates
/// only when its arrays grow. Returns the first a.elements() entries of `buffer`.
template <class Out>
Kokkos::View<Out*, MemSpace> pack_strided(ExecSpace const& space, StridedArray const& a,
                                          Kokkos::View<Out*, MemSpace>& buffer);

/// How many of the `n` int64 values at `data` (every `stride`-th, host or device memory) lie outside int32's
/// range.
std::int64_t count_outside_int32(ExecSpace const& space, std::int64_t const* data, std::int64_t n,
                                 std::int64_t stride);

/// Writes the out.elements() contiguous device floats `values` into `out` (float32 or float64, any strides, host
/// or device memory), in row-major order; returns once they are there.
void scatter_strided(ExecSpace const& space, float const* values, StridedArray const& out);

}  // namespace ktr
