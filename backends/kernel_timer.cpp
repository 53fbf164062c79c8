#include "kernel_timer.hpp"

#include "../core/error.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <map>

namespace ktr {

namespace {

using Clock = std::chrono::steady_clock;

struct State {
  bool active = false;
  int depth = 0;  // open kernels and regions
  std::string open_label;
  Clock::time_point open_at;
  std::map<std::string, KernelTimer::Entry> entries;
};

State& state() {
  static State s;
  return s;
}

void open(char const* label) {
  State& s = state();
  if (s.depth++ > 0) return;
  Kokkos::fence();  // what was queued before is not this event's time
  s.open_label = label;
  s.open_at = Clock::now();
}

void close() {
  State& s = state();
  if (s.depth == 0 || --s.depth > 0) return;
  Kokkos::fence();
  KernelTimer::Entry& e = s.entries[s.open_label];
  e.label = s.open_label;
  e.calls += 1;
  e.seconds += std::chrono::duration<double>(Clock::now() - s.open_at).count();
}

void on_begin_kernel(char const* name, std::uint32_t, std::uint64_t*) { open(name); }
void on_end_kernel(std::uint64_t) { close(); }
void on_push(char const* name) { open(name); }
void on_pop() { close(); }

void install(bool on) {
  namespace T = Kokkos::Tools::Experimental;
  T::set_begin_parallel_for_callback(on ? &on_begin_kernel : nullptr);
  T::set_begin_parallel_reduce_callback(on ? &on_begin_kernel : nullptr);
  T::set_begin_parallel_scan_callback(on ? &on_begin_kernel : nullptr);
  T::set_end_parallel_for_callback(on ? &on_end_kernel : nullptr);
  T::set_end_parallel_reduce_callback(on ? &on_end_kernel : nullptr);
  T::set_end_parallel_scan_callback(on ? &on_end_kernel : nullptr);
  T::set_push_region_callback(on ? &on_push : nullptr);
  T::set_pop_region_callback(on ? &on_pop : nullptr);
}

}  // namespace

KernelTimer::KernelTimer() {
  KTR_REQUIRE(!state().active, "ktr::KernelTimer", "only one may be alive at a time");
  state() = State{};
  state().active = true;
  install(true);
}

KernelTimer::~KernelTimer() {
  install(false);
  state().active = false;
}

std::vector<KernelTimer::Entry> KernelTimer::entries() const {
  std::vector<Entry> v;
  for (auto const& kv : state().entries) v.push_back(kv.second);
  std::stable_sort(v.begin(), v.end(), [](Entry const& a, Entry const& b) { return a.seconds > b.seconds; });
  return v;
}

double KernelTimer::total_seconds() const {
  double t = 0;
  for (auto const& kv : state().entries) t += kv.second.seconds;
  return t;
}

void KernelTimer::clear() { state().entries.clear(); }

}  // namespace ktr
