// The caller's arrays as the C and Fortran bindings hand them over: a pointer, a datatype, extents and strides
// (in elements, batch first), in host memory or in the device's. The bindings build an Array (C: row-major from a
// shape; Fortran: from a C descriptor, dimensions reversed) and the API reads every Array the same way: float data
// the device can read whose sample dimensions collapse into one strided run is read in place; anything else
// (double, 64-bit labels, host memory on a GPU build, a section that does not collapse) is packed once into a
// contiguous float (or int32) device buffer.
#pragma once

#include "ktr_array.h"
#include "ktr_c.h"

#include "../data/strided.hpp"
#include "../train/trainer.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace ktr::capi {

constexpr int kMaxRank = 5;
constexpr std::int64_t kMaxElements = std::int64_t(1) << 40;  ///< per array

struct Array {
  void* data = nullptr;
  ktr_datatype_t dtype = KTR_FLOAT;
  int rank = 0;
  std::int64_t extent[kMaxRank] = {};
  std::int64_t stride[kMaxRank] = {};  ///< elements
  std::int64_t count() const { return rank ? extent[0] : 0; }
  std::int64_t sample_size() const;
  StridedArray strided() const;  ///< for data/'s kernels
};

/// The one builder of every door's arrays, checked: data not null, 1 to kMaxRank dimensions, a known datatype,
/// positive extents whose product stays within kMaxElements; `stride` (elements) as given, or row-major for
/// nullptr. Throws UsageError naming `what`.
Array array_of(void* data, int dtype, std::int64_t rank, std::int64_t const* extent, std::int64_t const* stride,
               char const* what);
/// A C array: `dim` dimensions of `shape`, row-major.
Array c_array(void* data, std::int64_t dim, std::int64_t const* shape, ktr_datatype_t dtype, char const* what);
/// A binding's description (the Fortran module's, TorchFort's tensor lists).
Array described_array(ktr_array_t const* d, char const* what);

/// Features as `model` takes them ((N, D) or (N, H, W, C)), in place or packed; `keep` holds any copy.
DeviceDataset features_of(ExecSpace const& space, Array const& x, Model const& model, char const* what);
/// Features and targets (labels: int32/int64 (N) or (N, 1); values: float/double (N), (N, T) or a field model's
/// (N, H, W, C), checked against its output's layout).
DeviceDataset batch_of(ExecSpace const& space, Array const& x, Array const& y, Model const& model, int classes);
/// The same for a model that does not exist yet (its plan): labels are checked against its output width.
DeviceDataset batch_of(ExecSpace const& space, Array const& x, Array const& y, ModelPlan const& plan);

/// Writes `values` (N, W) (device) into the caller's output array `out` (float or double, any strides, host or
/// device memory); a field's (the model's `output` shape (1, H, W, C)) must lie as (N, H, W, C) (Fortran:
/// (C, W, H, N)).
void store_output(ExecSpace const& space, Kokkos::View<float**, Kokkos::LayoutRight, MemSpace> const& values,
                  Array const& out, Shape const& output);

}  // namespace ktr::capi
