#include "evict.hpp"

#include <chrono>

namespace autopager {

EvictorPool::EvictorPool(unsigned evictors, Buffer& buffer, Paging& paging) : buffer_(buffer), paging_(paging) {
  for (unsigned i = 0; i < evictors; ++i) threads_.emplace_back([this] { run(); });
}

EvictorPool::~EvictorPool() {
  stop_.store(true);
  buffer_.wake_all();
  for (auto& t : threads_) t.join();
}

void EvictorPool::run() {
  while (buffer_.wait_for_pressure(stop_)) {
    while (!stop_.load() && buffer_.above_low_water()) {
      if (!paging_.evict_one()) {
        // Every slot is held by a fill in flight (or a write-back failed): try again shortly.
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        break;
      }
    }
  }
}

}  // namespace autopager
