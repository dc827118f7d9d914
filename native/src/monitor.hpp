// UMAP_MONITOR_FREQ: a thread that prints a pager's statistics every `interval` seconds until stopped.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace autopager {

class Monitor {
 public:
  // Starts the thread when `interval_seconds` > 0 (std::system_error when it cannot); `report` prints.
  Monitor(unsigned interval_seconds, std::function<void()> report);
  ~Monitor();
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

 private:
  const std::chrono::seconds interval_;
  const std::function<void()> report_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace autopager
