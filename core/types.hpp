// The spaces ktr runs in and the view types it passes around.
//
// A ktr build targets one device: Kokkos's default execution space (Cuda, HIP, OpenMP or Serial, whichever the
// Kokkos build enables) and its memory space. Every kernel takes an instance of that space, so an application
// can hand ktr its own stream; host mirrors serve I/O and tests.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

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

static_assert(Kokkos::SpaceAccessibility<ExecSpace, MemSpace>::accessible,
              "ktr: the execution space must reach its memory space");

}  // namespace ktr
