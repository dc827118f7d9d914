// The queue between the fault reader and the fillers: demand faults first, then speculative fills
// (read-ahead, prefetch). Any idle filler takes the next item, so a hot region gets more fillers.
// An idle filler spins briefly before sleeping: a fault that arrives meanwhile costs no wake-up.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>

#include "region.hpp"

namespace autopager {

struct FaultWork {
  std::uintptr_t address;
  std::uint64_t flags;  // UFFD_PAGEFAULT_FLAG_*
  std::chrono::steady_clock::time_point read_at;
};

class WorkQueue {
 public:
  template <typename It>
  void push_faults(It first, It last) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::uint64_t count = 0;
    for (; first != last; ++first, ++count) faults_.push_back(*first);
    publish(count);
  }
  void push_speculative(PageRef page) {
    std::lock_guard<std::mutex> lock(mutex_);
    speculative_.push_back(std::move(page));
    publish(1);
  }
  // Waits for work; false when stopped. Exactly one of `fault` / `page` is filled in.
  bool pop(FaultWork* fault, PageRef* page, bool* is_fault);
  void stop();

 private:
  void publish(std::uint64_t count);
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<FaultWork> faults_;
  std::deque<PageRef> speculative_;
  std::atomic<std::uint64_t> pending_{0};
  unsigned sleepers_ = 0;
  bool stopped_ = false;
};

}  // namespace autopager
