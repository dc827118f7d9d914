#include "evict.hpp"

#include <algorithm>
#include <chrono>

#include "pager_threads.hpp"

namespace autopager {
namespace {
// Evicted together, at least 32 pages of the page size and 4 MiB: their memory goes in one call with one TLB
// flush, and small pages are not evicted a few at a time.
constexpr std::uint64_t kBatchPages = 32;
constexpr std::uint64_t kBatchBytes = 4u << 20;
constexpr auto kWhileFillsEnd = std::chrono::microseconds(200);
constexpr auto kWhileWriteBacksFail = std::chrono::milliseconds(20);
}  // namespace

EvictorPool::EvictorPool(unsigned evictors, const PageMemory& memory, std::size_t page_size, Buffer& buffer,
                         Paging& paging)
    : batch_(std::max<std::uint64_t>(kBatchPages * memory.units_of(page_size), kBatchBytes / memory.unit)),
      buffer_(buffer),
      paging_(paging) {
  try {
    for (unsigned i = 0; i < evictors; ++i)
      threads_.push_back(start_pager_thread("ap-evictor", [this] { run(); }));
  } catch (...) {
    stop();
    throw;
  }
}

EvictorPool::~EvictorPool() { stop(); }

void EvictorPool::stop() {
  stop_.store(true);
  buffer_.wake_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void EvictorPool::run() {
  while (buffer_.wait_for_pressure(stop_)) {
    while (!stop_.load()) {
      std::uint64_t share = buffer_.claim_evictions(batch_);
      if (share == 0) break;
      const std::uint64_t evicted = paging_.evict(share);
      buffer_.end_evictions(share);
      if (evicted < share) {
        // Every other slot is held by a fill in flight: try again shortly. Pages that cannot be
        // written back stay so for a while (a full disk): try them far less often.
        std::this_thread::sleep_for(paging_.write_backs_failing() ? kWhileWriteBacksFail : kWhileFillsEnd);
        break;
      }
    }
  }
}

}  // namespace autopager
