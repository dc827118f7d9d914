#include "work_queue.hpp"

namespace autopager {
namespace {
constexpr int kSpinRounds = 4000;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}
}  // namespace

void WorkQueue::publish(std::uint64_t count) {
  if (count == 0) return;
  pending_.fetch_add(count, std::memory_order_release);
  if (sleepers_ == 0) return;
  if (count == 1) ready_.notify_one();
  else ready_.notify_all();
}

bool WorkQueue::pop(FaultWork* fault, PageRef* page, bool* is_fault) {
  for (int i = 0; i < kSpinRounds && pending_.load(std::memory_order_acquire) == 0; ++i) cpu_relax();
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopped_ && faults_.empty() && speculative_.empty()) {
    ++sleepers_;
    ready_.wait(lock);
    --sleepers_;
  }
  if (stopped_) return false;
  pending_.fetch_sub(1, std::memory_order_relaxed);
  if (!faults_.empty()) {
    *fault = faults_.front();
    faults_.pop_front();
    *is_fault = true;
  } else {
    *page = std::move(speculative_.front());
    speculative_.pop_front();
    *is_fault = false;
  }
  return true;
}

void WorkQueue::stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  stopped_ = true;
  ready_.notify_all();
}

}  // namespace autopager
