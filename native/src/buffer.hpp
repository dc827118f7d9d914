// The buffer shared by all regions of a pager: at most `capacity` units resident (PageMemory::unit; a page takes
// its region's `units`). A page's units are reserved before it is filled and released when it is evicted.
// Crossing the high water mark wakes the evictors, who drain to the low water mark. The marks are set for regions
// far larger than the buffer; where the mapped regions are not, they move up towards the capacity (set_marks()).
// Where the regions fit the buffer whole but not beside the fillers' read slots and the write-back slots, the slots
// give their memory back after each use instead and the pages may take the whole buffer (`fit_capacity`):
// docs/DESIGN.md, "Pager: the memory bound".
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "policy/eviction_policy.hpp"
#include "region.hpp"

namespace autopager {

class Buffer {
 public:
  // `fit_capacity` (at least `capacity`): the whole buffer, which pages may take where the regions fit in it.
  Buffer(std::uint64_t capacity, unsigned high_water_pct, unsigned low_water_pct,
         std::unique_ptr<EvictionPolicy> policy, std::uint64_t fit_capacity = 0);

  // Takes `units` when they are free, without waiting.
  bool try_reserve(std::uint64_t units);
  // Takes `units`, waiting for the evictors; when they lag, calls `make_room` itself, which returns
  // false to give up (then so does reserve).
  bool reserve(std::uint64_t units, const std::function<bool()>& make_room);
  // Gives back `units` (an eviction batch's at once: one wake-up, not one a page).
  void release(std::uint64_t units);
  // Whether `units` more pages of a region of `region_units` can be read around a fault without evicting anything
  // for them: every mapped region fits below the high water mark (then nothing is ever evicted, and a block reads
  // only its absent pages however full the buffer is), or this region does and they fit below it too, or it is at
  // most twice as large, the buffer is still filling (it has never reached the mark) and they fit below it beside
  // every page read so far.
  bool has_room(std::uint64_t region_units, std::uint64_t units) const {
    if (regions_fit_.load(std::memory_order_relaxed)) return true;
    const std::uint64_t high = high_mark();
    if (region_units < high) return resident() + units < high;
    return region_units < 2 * high && peak_resident() + units < high;
  }
  // The regions' pages come and go: `units` of pages mapped, or unmapped. The marks move with them.
  void map_units(std::uint64_t units);
  void unmap_units(std::uint64_t units);

  // After each use of a read slot or a write-back slot, under the slots' own lock: whether the slot gives its memory
  // back. True while more is resident than capacity(): the pages take part of the slots' share (the regions fit the
  // whole buffer, or regions mapped past it have taken the share back and the pages are not yet below it).
  bool slots_transient() const { return resident() > capacity_; }
  // After such a use, outside the slots' locks: true for one caller each time slots_transient() starts to hold,
  // which then makes every idle slot give its memory back (one kept before, or held by a thread not using it since).
  bool claim_slot_flush();

  // For evictors: blocks until residency reaches the high water mark (true) or `stop` is set (false).
  bool wait_for_pressure(const std::atomic<bool>& stop);
  // An evictor's share of the units to evict down to the low water mark, at most `most`: evictors
  // claim disjoint shares, so that together they stop at the mark. Give the share back when done.
  std::uint64_t claim_evictions(std::uint64_t most);
  void end_evictions(std::uint64_t claimed) { evicting_.fetch_sub(claimed, std::memory_order_acq_rel); }
  void wake_all();  // for shutdown

  std::uint64_t resident() const { return resident_.load(std::memory_order_acquire); }  // in units
  std::uint64_t peak_resident() const { return peak_.load(std::memory_order_relaxed); }  // the most at once, so far
  std::uint64_t capacity() const { return capacity_; }  // without the slots' share
  std::uint64_t limit() const { return limit_.load(std::memory_order_acquire); }  // what reservations may take now
  std::uint64_t low_water() const { return low_water_; }  // as configured, whatever set_marks() makes of it
  EvictionPolicy& policy() { return *policy_; }
  const EvictionPolicy& policy() const { return *policy_; }
  // Serializes every change of one page's state (fill, write-back, eviction). Consecutive pages share a
  // stripe up to 256 KiB, so that a run of small pages (an 8 MiB write-back, a read-ahead run) takes a few
  // stripes, not one a page: at most 32, within the 64 locks a thread ThreadSanitizer follows.
  std::mutex& lock_for(const Region& region, std::uint64_t page) {
    constexpr std::uint64_t kStripeBytes = 256u << 10;
    const std::uint64_t group = page / std::max<std::uint64_t>(1, kStripeBytes / region.page_size);
    return stripes_[(region.id * 0x9E3779B97F4A7C15ull + group) % stripes_.size()].m;
  }
  // The stripes of pages [first, first + count) of a region, each locked once, in address order: the
  // one way two stripes are ever held together (write-back of consecutive pages with one write).
  std::vector<std::unique_lock<std::mutex>> lock_run(const Region& region, std::uint64_t first, std::uint64_t count);

 private:
  // Sets the marks eviction works between for `mapped` units of regions. Out of core, the configured ones. Where the
  // regions exceed the buffer by less than the low water mark leaves free, draining to it would keep more free than
  // is ever missing, and a program reading them at random would miss that much more often: both marks then leave
  // free space in proportion to the excess (the low one as much as the excess). Where the regions fit, nothing need
  // go, and where they fit only in the whole buffer, the pages may take the slots' share too (limit()).
  // Called with mapping_mutex_ held, or by the constructor.
  void set_marks(std::uint64_t mapped);
  std::uint64_t high_mark() const { return high_mark_.load(std::memory_order_acquire); }
  std::uint64_t low_mark() const { return low_mark_.load(std::memory_order_acquire); }
  struct alignas(64) Stripe {
    std::mutex m;
  };
  void notify_evictors();

  const std::uint64_t capacity_;
  const std::uint64_t fit_capacity_;
  std::atomic<std::uint64_t> limit_;
  std::atomic<bool> slots_flushed_{false};  // since slots_transient() last started to hold
  const std::uint64_t high_water_;
  const std::uint64_t low_water_;
  std::unique_ptr<EvictionPolicy> policy_;
  std::atomic<std::uint64_t> resident_{0};
  std::atomic<std::uint64_t> peak_{0};
  std::atomic<std::uint64_t> evicting_{0};  // claimed by evictors, not yet evicted
  std::mutex mapping_mutex_;
  std::uint64_t mapped_ = 0;                // the mapped regions' units, guarded by mapping_mutex_
  // Each read on its own (every user needs one of them), so a change may be seen one before the other.
  std::atomic<std::uint64_t> high_mark_;
  std::atomic<std::uint64_t> low_mark_;
  std::atomic<bool> regions_fit_{false};  // the mapped regions' units are below the high mark
  std::vector<Stripe> stripes_;

  std::mutex pressure_mutex_;
  std::condition_variable pressure_;   // evictors wait here
  std::condition_variable slot_freed_; // faults waiting for a slot wait here
};

}  // namespace autopager
