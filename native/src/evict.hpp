// The evictors: when residency reaches the high water mark they evict, in the policy's order, until
// it falls to the low water mark, writing dirty pages back first.
#pragma once

#include <atomic>
#include <thread>
#include <vector>

#include "buffer.hpp"
#include "page_memory.hpp"
#include "paging.hpp"

namespace autopager {

class EvictorPool {
 public:
  // Evicts in batches of units of the buffer (`memory`), sized for pages of `page_size`. Throws
  // std::system_error, with no thread left running, when a thread cannot be started.
  EvictorPool(unsigned evictors, const PageMemory& memory, std::size_t page_size, Buffer& buffer, Paging& paging);
  ~EvictorPool();
  EvictorPool(const EvictorPool&) = delete;
  EvictorPool& operator=(const EvictorPool&) = delete;

 private:
  void run();
  void stop();
  const std::uint64_t batch_;  // units
  Buffer& buffer_;
  Paging& paging_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace autopager
