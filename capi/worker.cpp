// The C API's call thread: see worker.hpp.
#include "worker.hpp"

namespace ktr::capi {

Worker::Worker() : thread_([this] { loop(); }) {}

Worker::~Worker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void Worker::run(std::function<void()> const& task) {
  if (on_worker()) {  // a call made from inside a call (a Kokkos finalize hook): run it in place
    task();
    return;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  task_ = &task;
  finished_ = false;
  wake_.notify_one();
  done_.wait(lock, [this] { return finished_; });
  task_ = nullptr;
}

void Worker::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || (task_ != nullptr && !finished_); });
    if (task_ == nullptr || finished_) return;  // stop_ with nothing to run
    std::function<void()> const* task = task_;
    lock.unlock();
    (*task)();
    lock.lock();
    finished_ = true;
    done_.notify_one();
  }
}

}  // namespace ktr::capi
