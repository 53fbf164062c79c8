// Counts Kokkos Tools events (deep copies, allocations, kernel launches, profiling regions) while alive, through
// the callback setters Kokkos 3.4 and 4.x share, and keeps the kernels' and regions' names. Used to prove that a
// code region copies and allocates nothing, and that every kernel and region is labelled. The callbacks
// take a lock: Kokkos's OpenMP backend allocates each thread's scratch from that thread (resize_thread_data).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace ktr {

class ToolsCounter {
 public:
  ToolsCounter() {
    state() = State{};
    namespace T = Kokkos::Tools::Experimental;
    T::set_begin_deep_copy_callback(&on_deep_copy);
    T::set_allocate_data_callback(&on_allocate);
    T::set_begin_parallel_for_callback(&on_kernel);
    T::set_begin_parallel_reduce_callback(&on_kernel);
    T::set_begin_parallel_scan_callback(&on_kernel);
    T::set_push_region_callback(&on_region);
  }
  ~ToolsCounter() {
    namespace T = Kokkos::Tools::Experimental;
    T::set_begin_deep_copy_callback(nullptr);
    T::set_allocate_data_callback(nullptr);
    T::set_begin_parallel_for_callback(nullptr);
    T::set_begin_parallel_reduce_callback(nullptr);
    T::set_begin_parallel_scan_callback(nullptr);
    T::set_push_region_callback(nullptr);
  }
  ToolsCounter(ToolsCounter const&) = delete;
  ToolsCounter& operator=(ToolsCounter const&) = delete;

  std::int64_t deep_copies() const { return state().deep_copies; }
  std::int64_t allocations() const { return state().allocations; }
  /// Bytes of all allocations seen.
  std::int64_t allocated_bytes() const { return state().allocated_bytes; }
  std::int64_t kernels() const { return state().kernels; }
  /// Labels of the deep copies and allocations seen (for failure messages).
  std::vector<std::string> const& events() const { return state().events; }
  /// The names of the kernels launched and of the profiling regions opened, each once.
  std::set<std::string> const& kernel_names() const { return state().kernel_names; }
  std::set<std::string> const& region_names() const { return state().region_names; }

 private:
  struct State {
    std::int64_t deep_copies = 0, allocations = 0, kernels = 0, allocated_bytes = 0;
    std::vector<std::string> events;
    std::set<std::string> kernel_names, region_names;
  };
  static State& state() {
    static State s;
    return s;
  }
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static void on_deep_copy(Kokkos::Tools::SpaceHandle, char const* dst, void const*, Kokkos::Tools::SpaceHandle,
                           char const* src, void const*, std::uint64_t bytes) {
    std::lock_guard<std::mutex> const lock(mutex());
    ++state().deep_copies;
    state().events.push_back(std::string("deep_copy ") + src + " -> " + dst + " (" + std::to_string(bytes) +
                             " B)");
  }
  static void on_allocate(Kokkos::Tools::SpaceHandle, char const* label, void const*, std::uint64_t bytes) {
    std::lock_guard<std::mutex> const lock(mutex());
    ++state().allocations;
    state().allocated_bytes += std::int64_t(bytes);
    state().events.push_back(std::string("allocate ") + label + " (" + std::to_string(bytes) + " B)");
  }
  static void on_kernel(char const* name, std::uint32_t, std::uint64_t*) {
    std::lock_guard<std::mutex> const lock(mutex());
    ++state().kernels;
    state().kernel_names.insert(name);
  }
  static void on_region(char const* name) {
    std::lock_guard<std::mutex> const lock(mutex());
    state().region_names.insert(name);
  }
};

}  // namespace ktr
