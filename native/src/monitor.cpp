#include "monitor.hpp"

#include "pager_threads.hpp"

namespace autopager {

Monitor::Monitor(unsigned interval_seconds, std::function<void()> report)
    : interval_(interval_seconds), report_(std::move(report)) {
  if (interval_seconds == 0) return;
  thread_ = start_pager_thread("ap-monitor", [this] {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, interval_, [this] { return stop_; })) report_();
  });
}

Monitor::~Monitor() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

}  // namespace autopager
