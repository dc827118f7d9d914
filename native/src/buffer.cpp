#include "buffer.hpp"

#include <algorithm>
#include <chrono>

namespace autopager {
namespace {
constexpr std::size_t kStripes = 4096;
// How long a fault waits for the evictors before evicting a page itself.
constexpr auto kEvictorGrace = std::chrono::milliseconds(2);
}  // namespace

// The marks are rounded so that even a buffer of a few pages keeps at least one page resident.
Buffer::Buffer(std::uint64_t capacity, unsigned high_water_pct, unsigned low_water_pct,
               std::unique_ptr<EvictionPolicy> policy, std::uint64_t fit_capacity)
    : capacity_(capacity),
      fit_capacity_(std::max(capacity, fit_capacity)),
      limit_(capacity),
      high_water_(std::max<std::uint64_t>(1, (capacity * high_water_pct + 99) / 100)),
      low_water_(std::min(capacity * low_water_pct / 100, high_water_ - 1)),
      policy_(std::move(policy)),
      stripes_(kStripes) {
  set_marks(0);
}

void Buffer::set_marks(std::uint64_t mapped) {
  std::uint64_t high = capacity_ + 1, low = capacity_;
  const bool whole = mapped > capacity_ && mapped <= fit_capacity_;  // the pages may take the slots' share
  if (whole) {
    high = fit_capacity_ + 1;
    low = fit_capacity_;
  } else if (mapped > capacity_) {
    const std::uint64_t excess = mapped - capacity_, free_at_low = capacity_ - low_water_;
    high = high_water_;
    low = low_water_;
    if (excess < free_at_low) {
      high = capacity_ - (capacity_ - high_water_) * excess / free_at_low;
      low = std::min(capacity_ - excess, high - 1);
    }
  }
  high_mark_.store(high, std::memory_order_release);
  low_mark_.store(low, std::memory_order_release);
  regions_fit_.store(mapped < high, std::memory_order_relaxed);
  limit_.store(whole ? fit_capacity_ : capacity_, std::memory_order_release);
}

bool Buffer::claim_slot_flush() {
  if (slots_transient()) return !slots_flushed_.exchange(true, std::memory_order_acq_rel);
  // A slot may keep its memory again: the next time the pages take the share, the idle slots are flushed anew.
  // Released after the slot's own lock, so that the flush that reads it finds what that use left.
  if (slots_flushed_.load(std::memory_order_relaxed)) slots_flushed_.store(false, std::memory_order_release);
  return false;
}

void Buffer::map_units(std::uint64_t units) {
  {
    std::lock_guard<std::mutex> lock(mapping_mutex_);
    mapped_ += units;
    set_marks(mapped_);
  }
  if (resident() >= high_mark()) notify_evictors();
}

void Buffer::unmap_units(std::uint64_t units) {
  std::lock_guard<std::mutex> lock(mapping_mutex_);
  mapped_ -= units;
  set_marks(mapped_);
}

bool Buffer::try_reserve(std::uint64_t units) {
  std::uint64_t r = resident_.load(std::memory_order_relaxed);
  while (r + units <= limit()) {
    if (resident_.compare_exchange_weak(r, r + units, std::memory_order_acq_rel)) {
      std::uint64_t peak = peak_.load(std::memory_order_relaxed);
      while (r + units > peak && !peak_.compare_exchange_weak(peak, r + units, std::memory_order_relaxed)) {
      }
      if (r + units >= high_mark()) notify_evictors();
      return true;
    }
  }
  notify_evictors();
  return false;
}

bool Buffer::reserve(std::uint64_t units, const std::function<bool()>& make_room) {
  while (!try_reserve(units)) {
    {
      std::unique_lock<std::mutex> lock(pressure_mutex_);
      slot_freed_.wait_for(lock, kEvictorGrace, [&] { return resident() + units <= limit(); });
    }
    if (resident() + units > limit() && !make_room()) return false;
  }
  return true;
}

std::uint64_t Buffer::claim_evictions(std::uint64_t most) {
  std::uint64_t evicting = evicting_.load(std::memory_order_acquire);
  for (;;) {
    const std::uint64_t low = low_mark();
    std::uint64_t target = resident() > low ? resident() - low : 0;
    std::uint64_t share = target > evicting ? std::min(most, target - evicting) : 0;
    if (share == 0) return 0;
    if (evicting_.compare_exchange_weak(evicting, evicting + share, std::memory_order_acq_rel)) return share;
  }
}

void Buffer::release(std::uint64_t units) {
  if (units == 0) return;
  resident_.fetch_sub(units, std::memory_order_acq_rel);
  std::lock_guard<std::mutex> lock(pressure_mutex_);
  slot_freed_.notify_all();
}

void Buffer::notify_evictors() {
  std::lock_guard<std::mutex> lock(pressure_mutex_);
  pressure_.notify_all();
}

bool Buffer::wait_for_pressure(const std::atomic<bool>& stop) {
  std::unique_lock<std::mutex> lock(pressure_mutex_);
  pressure_.wait(lock, [&] { return stop.load() || resident() >= high_mark(); });
  return !stop.load();
}

void Buffer::wake_all() {
  std::lock_guard<std::mutex> lock(pressure_mutex_);
  pressure_.notify_all();
  slot_freed_.notify_all();
}

std::vector<std::unique_lock<std::mutex>> Buffer::lock_run(const Region& region, std::uint64_t first,
                                                          std::uint64_t count) {
  std::vector<std::mutex*> stripes;
  for (std::uint64_t page = first; page < first + count; ++page) stripes.push_back(&lock_for(region, page));
  std::sort(stripes.begin(), stripes.end(), std::less<std::mutex*>());
  stripes.erase(std::unique(stripes.begin(), stripes.end()), stripes.end());
  std::vector<std::unique_lock<std::mutex>> locks;
  for (std::mutex* stripe : stripes) locks.emplace_back(*stripe);
  return locks;
}

}  // namespace autopager
