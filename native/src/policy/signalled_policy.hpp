// The part every policy that learns from refaults and first writes shares (hot_fifo.cpp, s3fifo.cpp,
// clock.cpp): its mutex, its UseSignals and its counters, and the hooks, each taking the mutex and handing
// the policy's own step what it needs. A policy says where a page enters (`admit_locked`, told whether its
// fill was a refault: a page queued for eviction enters as one not referred to) and how it picks a victim.
#pragma once

#include <mutex>

#include "policy/eviction_policy.hpp"
#include "policy/use_signals.hpp"

namespace autopager {

class SignalledPolicy : public EvictionPolicy {
 public:
  void on_fill(PageRef page) final {
    std::lock_guard<std::mutex> lock(mutex_);
    const bool refault = use_.filled(key_of(page), counters_);
    admit_locked(std::move(page), refault);
  }
  void on_write(const Region& region, std::uint64_t page) final {
    std::lock_guard<std::mutex> lock(mutex_);
    use_.written(key_of(region, page));
  }
  void queue_for_eviction(PageRef page) final {
    std::lock_guard<std::mutex> lock(mutex_);
    admit_locked(std::move(page), false);
  }
  std::optional<PageRef> next_victim() final {
    std::lock_guard<std::mutex> lock(mutex_);
    return next_victim_locked();
  }
  void forget_region(const Region& region) final {
    std::lock_guard<std::mutex> lock(mutex_);
    forget_region_locked(region);
  }
  PolicyStats stats() const final { return counters_.snapshot(); }

 protected:
  // Refaults within the last `ghost_window` evictions; write bits for a buffer of `pages`.
  SignalledPolicy(std::uint64_t ghost_window, std::uint64_t pages) : use_(ghost_window, pages) {}

  // Under the mutex, as is everything below.
  virtual void admit_locked(PageRef page, bool refaulted) = 0;
  virtual std::optional<PageRef> next_victim_locked() = 0;
  virtual void forget_region_locked(const Region& region) = 0;

  UseSignals use_;
  PolicyCounters counters_;

 private:
  std::mutex mutex_;
};

}  // namespace autopager
