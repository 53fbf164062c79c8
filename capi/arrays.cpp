// Reading and writing the caller's arrays: see arrays.hpp.
#include "arrays.hpp"

#include "../backends/device_info.hpp"
#include "../data/strided.hpp"

#include <vector>

namespace ktr::capi {

namespace {

char const* dtype_name(ktr_datatype_t t) {
  switch (t) {
    case KTR_FLOAT:
      return "KTR_FLOAT";
    case KTR_DOUBLE:
      return "KTR_DOUBLE";
    case KTR_INT32:
      return "KTR_INT32";
    case KTR_INT64:
      return "KTR_INT64";
  }
  return "an unknown datatype";
}

template <class Out>
Kokkos::View<Out*, MemSpace> pack(ExecSpace const& space, Array const& a) {
  return pack_strided<Out>(space, a.strided());
}

// The stride of one element within a sample if the sample dimensions collapse into one strided run, else 0.
std::int64_t collapsed_stride(Array const& a) {
  for (int d = 1; d + 1 < a.rank; ++d)
    if (a.stride[d] != a.stride[d + 1] * a.extent[d + 1]) return 0;
  return a.rank > 1 ? a.stride[a.rank - 1] : 1;
}

using Strided2 =
    Kokkos::View<float const**, Kokkos::LayoutStride, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using Strided4 =
    Kokkos::View<float const****, Kokkos::LayoutStride, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// A (N, S) float view of x and what keeps its memory alive: in place if possible, else packed.
struct Flat {
  float const* data;
  std::int64_t n, s, row_stride, col_stride;
  std::shared_ptr<void const> keep;
};

Flat flat_features(ExecSpace const& space, Array const& x) {
  std::int64_t const n = x.count(), s = x.sample_size();
  std::int64_t const inner = collapsed_stride(x);
  if (x.dtype == KTR_FLOAT && inner > 0 && device_can_read(x.data))
    return Flat{static_cast<float const*>(x.data), n, s, x.stride[0], inner, nullptr};
  auto packed = pack<float>(space, x);
  return Flat{packed.data(), n, s, s, 1, std::make_shared<Kokkos::View<float*, MemSpace>>(packed)};
}

// The features as a dataset of the given sample shape ({D} or {H, W, C}) with `targets` attached.
template <class Targets>
DeviceDataset as_dataset(ExecSpace const& space, Flat const& f, Shape const& sample, Targets const& y,
                         int classes) {
  DeviceDataset d;
  if (sample.rank == 1) {
    Strided2 const v(f.data, Kokkos::LayoutStride(std::size_t(f.n), std::size_t(f.row_stride), std::size_t(f.s),
                                                  std::size_t(f.col_stride)));
    d = dataset_from_views(space, v, y, classes);
  } else {
    std::int64_t const h = sample[0], w = sample[1], c = sample[2], e = f.col_stride;
    Strided4 const v(f.data, Kokkos::LayoutStride(std::size_t(f.n), std::size_t(f.row_stride), std::size_t(h),
                                                  std::size_t(w * c * e), std::size_t(w), std::size_t(c * e),
                                                  std::size_t(c), std::size_t(e)));
    d = dataset_from_views(space, v, y, classes);
  }
  auto const inner = d.keep;
  d.keep =
      std::make_shared<std::pair<std::shared_ptr<void const>, std::shared_ptr<void const>> const>(inner, f.keep);
  return d;
}

Shape sample_of(Shape const& in) { return in.rank == 2 ? Shape{in[1]} : Shape{in[1], in[2], in[3]}; }

// An image batch (features, a field's targets or its predictions) of the right size in another layout would be
// misread silently: its dimensions must be the model's (N, H, W, C) (C: row-major; Fortran: (C, W, H, N)), up to
// where dimensions of size 1 sit (TorchFort's (n, n, 1, batch) arrays). A flat (N, H x W x C) array is read as it
// is.
void check_layout(Array const& x, Shape const& sample, char const* what) {
  if (sample.rank == 3 && x.rank >= 3) {
    std::vector<std::int64_t> given, wanted;
    for (int d = 1; d < x.rank; ++d)
      if (x.extent[d] != 1) given.push_back(x.extent[d]);
    for (int d = 0; d < 3; ++d)
      if (sample[d] != 1) wanted.push_back(sample[d]);
    std::string dims;
    for (int d = 1; d < x.rank; ++d) dims += (d > 1 ? ", " : "") + std::to_string(x.extent[d]);
    KTR_REQUIRE(
        given == wanted, what,
        "samples are (" + dims + "), the model takes (H, W, C) = " + sample.str() +
            (x.rank == 4 && x.extent[1] == sample[2] && x.extent[2] == sample[0] && x.extent[3] == sample[1]
                 ? ": an NCHW array for a channels-last model (transpose it to NHWC)"
                 : ""));
  }
}

void check_features(Array const& x, Shape const& sample, char const* what) {
  KTR_REQUIRE(x.dtype == KTR_FLOAT || x.dtype == KTR_DOUBLE, what,
              std::string("must be KTR_FLOAT or KTR_DOUBLE, not ") + dtype_name(x.dtype));
  KTR_REQUIRE(x.sample_size() == sample.size(), what,
              "samples of " + std::to_string(x.sample_size()) + " values, the model takes " + sample.str() +
                  (sample.rank > 1 ? " (" + std::to_string(sample.size()) + ")" : std::string()));
  check_layout(x, sample, what);
}

// A field model's float targets, where their size is right, lie as its output does.
void check_target_layout(Array const& y, Shape const& output) {
  if ((y.dtype == KTR_FLOAT || y.dtype == KTR_DOUBLE) && y.sample_size() == output.inner())
    check_layout(y, sample_of(output), "label");
}

// 64-bit class labels fit the int32 the model reads (4294967297 would wrap to 1): one pass, read back.
void check_int32_labels(ExecSpace const& space, Array const& y) {
  std::int64_t const outside =
      count_outside_int32(space, static_cast<std::int64_t const*>(y.data), y.count(), y.stride[0]);
  KTR_REQUIRE(outside == 0, "label", std::to_string(outside) + " class labels lie outside 0 .. 2^31 - 1");
}

template <class Fn>
DeviceDataset with_targets(ExecSpace const& space, Array const& y, std::int64_t n, Fn&& make) {
  KTR_REQUIRE(y.data != nullptr, "label", "is a null pointer");
  KTR_REQUIRE(y.count() == n, "label",
              "holds " + std::to_string(y.count()) + " samples, the input " + std::to_string(n));
  if (y.dtype == KTR_INT32 || y.dtype == KTR_INT64) {
    KTR_REQUIRE(
        y.sample_size() == 1, "label",
        "class labels are one integer per sample ((batch) or (batch, 1)), not " + std::to_string(y.sample_size()));
    if (y.dtype == KTR_INT64) check_int32_labels(space, y);
    Kokkos::View<std::int32_t*, MemSpace> labels;
    if (y.dtype == KTR_INT32 && device_can_read(y.data))
      return make(Kokkos::View<std::int32_t const*, Kokkos::LayoutStride, MemSpace,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                      static_cast<std::int32_t const*>(y.data),
                      Kokkos::LayoutStride(std::size_t(n), std::size_t(y.stride[0]))),
                  nullptr);
    labels = pack<std::int32_t>(space, y);
    return make(labels, std::make_shared<Kokkos::View<std::int32_t*, MemSpace>>(labels));
  }
  std::int64_t const t = y.sample_size(), inner = collapsed_stride(y);
  if (y.dtype == KTR_FLOAT && inner > 0 && device_can_read(y.data))
    return make(
        Strided2(static_cast<float const*>(y.data), Kokkos::LayoutStride(std::size_t(n), std::size_t(y.stride[0]),
                                                                         std::size_t(t), std::size_t(inner))),
        nullptr);
  auto const packed = pack<float>(space, y);
  return make(Strided2(packed.data(), Kokkos::LayoutStride(std::size_t(n), std::size_t(t), std::size_t(t), 1)),
              std::make_shared<Kokkos::View<float*, MemSpace>>(packed));
}

DeviceDataset batch_with_shape(ExecSpace const& space, Array const& x, Array const& y, Shape const& sample,
                               int classes) {
  Flat const f = flat_features(space, x);
  return with_targets(space, y, f.n, [&](auto const& targets, std::shared_ptr<void const> keep) {
    DeviceDataset d = as_dataset(space, f, sample, targets, classes);
    if (keep)
      d.keep = std::make_shared<std::pair<std::shared_ptr<void const>, std::shared_ptr<void const>> const>(d.keep,
                                                                                                           keep);
    return d;
  });
}

}  // namespace

StridedArray Array::strided() const {
  StridedArray s;
  s.data = data, s.type = ElementType(int(dtype)), s.rank = rank;  // ktr_datatype_t's order
  for (int d = 0; d < rank; ++d) s.extent[d] = extent[d], s.stride[d] = stride[d];
  return s;
}

std::int64_t Array::sample_size() const {
  std::int64_t s = 1;
  for (int d = 1; d < rank; ++d) s *= extent[d];
  return s;
}

static_assert(int(ElementType::float32) == KTR_FLOAT && int(ElementType::float64) == KTR_DOUBLE &&
                  int(ElementType::int32) == KTR_INT32 && int(ElementType::int64) == KTR_INT64,
              "ktr_datatype_t and ElementType list the types in one order");

Array array_of(void* data, int dtype, std::int64_t rank, std::int64_t const* extent, std::int64_t const* stride,
               char const* what) {
  KTR_REQUIRE(data != nullptr, what, "is a null pointer");
  KTR_REQUIRE(extent != nullptr, what, "has a null shape pointer");
  KTR_REQUIRE(rank >= 1 && rank <= kMaxRank, what,
              "has " + std::to_string(rank) + " dimensions; 1 to " + std::to_string(kMaxRank) + " (batch first)");
  KTR_REQUIRE(dtype >= KTR_FLOAT && dtype <= KTR_INT64, what, "has an unknown datatype " + std::to_string(dtype));
  Array a;
  a.data = data, a.dtype = ktr_datatype_t(dtype), a.rank = int(rank);
  std::int64_t elements = 1;
  for (int d = a.rank - 1; d >= 0; --d) {
    KTR_REQUIRE(extent[d] > 0 && extent[d] <= kMaxElements, what,
                "dimension " + std::to_string(d) + " is " + std::to_string(extent[d]) + ", not a positive size");
    KTR_REQUIRE(elements <= kMaxElements / extent[d], what,
                "holds more than 2^40 elements (the product of its dimensions overflows)");
    a.extent[d] = extent[d], a.stride[d] = stride ? stride[d] : elements;  // row-major unless strides are given
    elements *= extent[d];
  }
  return a;
}

Array c_array(void* data, std::int64_t dim, std::int64_t const* shape, ktr_datatype_t dtype, char const* what) {
  return array_of(data, int(dtype), dim, shape, nullptr, what);
}

Array described_array(ktr_array_t const* d, char const* what) {
  KTR_REQUIRE(d != nullptr, what, "is a null pointer");
  return array_of(d->data, d->dtype, d->rank, d->extent, d->stride, what);
}

DeviceDataset features_of(ExecSpace const& space, Array const& x, Model const& model, char const* what) {
  Shape const sample = sample_of(model.input_shape(1));
  check_features(x, sample, what);
  KTR_REQUIRE(x.rank >= 2 || sample.size() == 1, what, "needs a batch dimension and sample dimensions");
  Flat const f = flat_features(space, x);
  Kokkos::View<float*, Kokkos::LayoutStride, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> none(
      static_cast<float*>(nullptr), Kokkos::LayoutStride(std::size_t(f.n), 0));
  DeviceDataset d = as_dataset(space, f, sample, none, 0);
  d.values = DeviceDataset::Values();
  d.target_kind = DeviceDataset::Targets::none;
  return d;
}

DeviceDataset batch_of(ExecSpace const& space, Array const& x, Array const& y, Model const& model, int classes) {
  Shape const sample = sample_of(model.input_shape(1));
  check_features(x, sample, "input");
  check_target_layout(y, model.output_shape(1));
  return batch_with_shape(space, x, y, sample, classes);
}

DeviceDataset batch_of(ExecSpace const& space, Array const& x, Array const& y, ModelPlan const& plan) {
  Shape const sample = sample_of(plan.input);
  check_features(x, sample, "input");
  check_target_layout(y, plan.output);
  return batch_with_shape(space, x, y, sample, int(plan.output_width));
}

void store_output(ExecSpace const& space, Kokkos::View<float**, Kokkos::LayoutRight, MemSpace> const& values,
                  Array const& out, Shape const& output) {
  std::int64_t const n = std::int64_t(values.extent(0)), w = std::int64_t(values.extent(1));
  KTR_REQUIRE(out.dtype == KTR_FLOAT || out.dtype == KTR_DOUBLE, "output",
              std::string("must be KTR_FLOAT or KTR_DOUBLE, not ") + dtype_name(out.dtype));
  KTR_REQUIRE(out.count() == n && out.sample_size() == w, "output",
              "must hold (" + std::to_string(n) + ", " + std::to_string(w) + ") values, not " +
                  std::to_string(out.count()) + " x " + std::to_string(out.sample_size()));
  check_layout(out, sample_of(output), "output");
  scatter_strided(space, values.data(), out.strided());
}

}  // namespace ktr::capi
