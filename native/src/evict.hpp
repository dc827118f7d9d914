// The evictors: when residency reaches the high water mark they evict, in the policy's order, until
// it falls to the low water mark, writing dirty pages back first.
#pragma once

#include <atomic>
#include <thread>
#include <vector>

#include "buffer.hpp"
#include "paging.hpp"

namespace autopager {

class EvictorPool {
 public:
  // Throws std::system_error, with no thread left running, when a thread cannot be started.
  EvictorPool(unsigned evictors, Buffer& buffer, Paging& paging);
  ~EvictorPool();
  EvictorPool(const EvictorPool&) = delete;
  EvictorPool& operator=(const EvictorPool&) = delete;

 private:
  void run();
  void stop();
  Buffer& buffer_;
  Paging& paging_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace autopager
