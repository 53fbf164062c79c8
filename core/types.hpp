// The spaces ktr runs in and the view types it passes around.
//
// A ktr build targets one device: Kokkos's default execution space (Cuda, HIP, OpenMP or Serial, whichever the
// Kokkos build enables) and its memory space. Every kernel takes an instance of that space, so an application
// can hand ktr its own stream; host mirrors serve I/O and tests.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace ktr {

using ExecSpace = Kokkos::DefaultExecutionSpace;
using MemSpace = ExecSpace::memory_space;
using HostSpace = Kokkos::HostSpace;

template <class T>
using DeviceView = Kokkos::View<T, MemSpace>;
template <class T>
using HostView = Kokkos::View<T, HostSpace>;

/// A row-major matrix view into someone else's memory (an arena, a workspace).
using Matrix = Kokkos::View<float**, Kokkos::LayoutRight, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using ConstMatrix =
    Kokkos::View<const float**, Kokkos::LayoutRight, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

/// A device scalar (a reduction target that stays on the device).
using DeviceScalar = Kokkos::View<float, MemSpace>;
/// A double-precision device scalar for reductions that must not lose bits.
using DeviceAccumulator = Kokkos::View<double, MemSpace>;

/// Row-major iteration over N extents (last index fastest, as the data is laid out) on every backend: kernels
/// index with (i, j, ...) instead of dividing a flat index (64-bit division per element is slow on CPUs).
template <unsigned N>
using MDRange = Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<N, Kokkos::Iterate::Right, Kokkos::Iterate::Right>,
                                      Kokkos::IndexType<std::int64_t>>;

/// True when the device is the host: element-wise kernels then give each thread a contiguous chunk.
constexpr bool device_is_host = std::is_same<MemSpace, Kokkos::HostSpace>::value;

/// Runs f(0) in host builds; in GPU builds does nothing and instantiates nothing of f (a generic lambda, whose
/// kernels are then never compiled for the device): for code paths only host builds take.
template <class F>
void host_builds_only(F const& f) {
  if constexpr (device_is_host) f(0);
}

static_assert(Kokkos::SpaceAccessibility<ExecSpace, MemSpace>::accessible,
              "ktr: the execution space must reach its memory space");

}  // namespace ktr
