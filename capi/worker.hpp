// The thread every C and Fortran call runs on when ktr started Kokkos itself. Kokkos 3.4's OpenMP backend runs
// work only from the thread that initialised it, while a simulation may call ktr from any of its threads (a task
// runtime's workers, a thread that outlives the one that created the model): so ktr initialises Kokkos on a thread
// of its own and hands it every call, one at a time, waiting for each. Its OpenMP team shares the cores with the
// application's threads, as any OpenMP library's does (OMP_NUM_THREADS sizes it). No Kokkos here.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace ktr::capi {

class Worker {
 public:
  Worker();
  /// Stops the thread after the call it is running (if any).
  ~Worker();
  Worker(Worker const&) = delete;
  Worker& operator=(Worker const&) = delete;

  /// Runs `task` on the worker thread and returns when it has returned (it must not throw).
  void run(std::function<void()> const& task);
  /// True on the worker thread itself.
  bool on_worker() const { return std::this_thread::get_id() == thread_.get_id(); }

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::function<void()> const* task_ = nullptr;  // the call to run, null when idle
  bool finished_ = false;                        // task_ has returned
  bool stop_ = false;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace ktr::capi
