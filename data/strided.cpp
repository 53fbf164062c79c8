// Packing and scattering a caller's strided arrays: see strided.hpp.
#include "strided.hpp"

#include "../backends/device_info.hpp"
#include "../core/error.hpp"

#include <vector>

namespace ktr {

namespace {

// The element at flat row-major position e of `a` (extents in order, strides in elements).
template <class T>
KOKKOS_INLINE_FUNCTION T& element(StridedArray const& a, T* p, std::int64_t e) {
  std::int64_t offset = 0;
  for (int d = a.rank - 1; d >= 0; --d) {
    offset += (e % a.extent[d]) * a.stride[d];
    e /= a.extent[d];
  }
  return p[offset];
}

template <class Out, class T>
Kokkos::View<Out*, MemSpace> pack_as(ExecSpace const& space, StridedArray const& a,
                                     Kokkos::View<Out*, MemSpace>* buffer) {
  std::int64_t const total = a.elements();
  Kokkos::View<Out*, MemSpace> out;
  if (buffer == nullptr) {
    out = Kokkos::View<Out*, MemSpace>(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "ktr::data::pack"),
                                       std::size_t(total));
  } else {
    if (std::int64_t(buffer->extent(0)) < total)
      *buffer = Kokkos::View<Out*, MemSpace>(
          Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "ktr::data::pack"), std::size_t(total));
    out = Kokkos::subview(*buffer, std::make_pair(std::size_t(0), std::size_t(total)));
  }
  T const* const src = static_cast<T const*>(a.data);
  if (device_can_read(a.data)) {
    Out* const dst = out.data();
    StridedArray const shape = a;
    Kokkos::parallel_for(
        "ktr::data::pack", Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, total),
        KOKKOS_LAMBDA(std::int64_t e) { dst[e] = static_cast<Out>(element(shape, src, e)); });
  } else {  // host memory on a GPU build: packed on the host, one copy
    std::vector<Out> host(static_cast<std::size_t>(total));
    for (std::int64_t e = 0; e < total; ++e) host[std::size_t(e)] = static_cast<Out>(element(a, src, e));
    Kokkos::deep_copy(space, out, HostView<Out const*>(host.data(), host.size()));
    space.fence();  // `host` goes at the end of this scope
  }
  return out;
}

template <class Out>
Kokkos::View<Out*, MemSpace> pack_into(ExecSpace const& space, StridedArray const& a,
                                       Kokkos::View<Out*, MemSpace>* buffer) {
  switch (a.type) {
    case ElementType::float32:
      return pack_as<Out, float>(space, a, buffer);
    case ElementType::float64:
      return pack_as<Out, double>(space, a, buffer);
    case ElementType::int32:
      return pack_as<Out, std::int32_t>(space, a, buffer);
    case ElementType::int64:
      return pack_as<Out, std::int64_t>(space, a, buffer);
  }
  throw UsageError("ktr::pack_strided: unknown element type");
}

}  // namespace

std::int64_t StridedArray::elements() const {
  std::int64_t n = rank > 0 ? 1 : 0;
  for (int d = 0; d < rank; ++d) n *= extent[d];
  return n;
}

template <class Out>
Kokkos::View<Out*, MemSpace> pack_strided(ExecSpace const& space, StridedArray const& a) {
  return pack_into<Out>(space, a, nullptr);
}

template <class Out>
Kokkos::View<Out*, MemSpace> pack_strided(ExecSpace const& space, StridedArray const& a,
                                          Kokkos::View<Out*, MemSpace>& buffer) {
  return pack_into<Out>(space, a, &buffer);
}
template Kokkos::View<float*, MemSpace> pack_strided<float>(ExecSpace const&, StridedArray const&);
template Kokkos::View<float*, MemSpace> pack_strided<float>(ExecSpace const&, StridedArray const&,
                                                            Kokkos::View<float*, MemSpace>&);
template Kokkos::View<std::int32_t*, MemSpace> pack_strided<std::int32_t>(ExecSpace const&, StridedArray const&);

std::int64_t count_outside_int32(ExecSpace const& space, std::int64_t const* data, std::int64_t n,
                                 std::int64_t stride) {
  std::int64_t outside = 0;
  if (device_can_read(data)) {
    Kokkos::parallel_reduce(
        "ktr::data::check_int32", Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, n),
        KOKKOS_LAMBDA(std::int64_t i, std::int64_t & count) {
          std::int64_t const v = data[i * stride];
          if (v < 0 || v > 2147483647) ++count;
        },
        outside);
  } else {
    for (std::int64_t i = 0; i < n; ++i)
      if (data[i * stride] < 0 || data[i * stride] > 2147483647) ++outside;
  }
  return outside;
}

void scatter_strided(ExecSpace const& space, float const* values, StridedArray const& out) {
  KTR_REQUIRE(out.type == ElementType::float32 || out.type == ElementType::float64, "ktr::scatter_strided",
              "writes float32 or float64 arrays");
  std::int64_t const total = out.elements();
  StridedArray const a = out;
  if (device_can_read(out.data)) {
    bool const is_float = out.type == ElementType::float32;
    void* const dst = out.data;
    Kokkos::parallel_for(
        "ktr::data::scatter", Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, total),
        KOKKOS_LAMBDA(std::int64_t e) {
          if (is_float)
            element(a, static_cast<float*>(dst), e) = values[e];
          else
            element(a, static_cast<double*>(dst), e) = double(values[e]);
        });
    space.fence();
    return;
  }
  std::vector<float> host(static_cast<std::size_t>(total));
  Kokkos::deep_copy(
      space, HostView<float*>(host.data(), host.size()),
      Kokkos::View<float const*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(values, host.size()));
  space.fence();
  for (std::int64_t e = 0; e < total; ++e) {
    if (out.type == ElementType::float32)
      element(a, static_cast<float*>(out.data), e) = host[std::size_t(e)];
    else
      element(a, static_cast<double*>(out.data), e) = double(host[std::size_t(e)]);
  }
}

}  // namespace ktr
