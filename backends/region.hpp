// A Kokkos Tools profiling region for the lifetime of an object: every entry point an application calls opens
// one named "ktr::<class>::<method>", so a tool's timeline (nsys, rocprof, the Kokkos Tools connectors) shows
// which of ktr's calls its kernels, copies and fences belong to. Nothing is built when no tool listens.
#pragma once

#include <Kokkos_Core.hpp>

#include <string>
#include <utility>

namespace ktr {

class Region {
 public:
  explicit Region(char const* name) : on_(Kokkos::Profiling::profileLibraryLoaded()) {
    if (on_) Kokkos::Profiling::pushRegion(name);
  }
  /// A region named by `name()` (a std::string built from shapes, say), called only when a tool listens.
  template <class Name, class = decltype(std::string(std::declval<Name const&>()()))>
  explicit Region(Name const& name) : on_(Kokkos::Profiling::profileLibraryLoaded()) {
    if (on_) Kokkos::Profiling::pushRegion(name());
  }
  ~Region() {
    if (on_) Kokkos::Profiling::popRegion();
  }
  Region(Region const&) = delete;
  Region& operator=(Region const&) = delete;

 private:
  bool on_;
};

}  // namespace ktr
