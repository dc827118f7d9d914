// Which resident page to evict next. The buffer tells the policy about every page it fills and every first
// write to a clean page; evictors ask it for victims. Implementations must be thread-safe; their mutex is a
// leaf taken under a page's stripe lock (docs/DESIGN.md, "Lock order").
//
// A userfaultfd pager sees faults, never accesses to an installed page. The signals a policy has are
// therefore: a fill (a fault, or read-ahead), a fill of a page evicted a short while ago (a refault: it went
// too early), and a write-protect fault (the first write to a clean page). docs/DESIGN.md, "Eviction
// policies", says which policy uses which.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

#include "autopager/config.hpp"
#include "region.hpp"

namespace autopager {

// How often each of a policy's queues served, over the pager's life (the pager's statistics).
struct PolicyStats {
  std::uint64_t refaults = 0;        // fills of pages the policy remembered as evicted lately
  std::uint64_t promotions = 0;      // pages moved into the protected queue (hot FIFO, S3-FIFO's main)
  std::uint64_t second_chances = 0;  // pages kept at the hand because they were referenced since
  std::uint64_t demotions = 0;       // protected pages evicted because that queue was over its share
};

// The live counters behind PolicyStats, bumped under the policy's mutex and read without it (the monitor
// prints them under its own lock).
struct PolicyCounters {
  std::atomic<std::uint64_t> refaults{0};
  std::atomic<std::uint64_t> promotions{0};
  std::atomic<std::uint64_t> second_chances{0};
  std::atomic<std::uint64_t> demotions{0};

  static void add(std::atomic<std::uint64_t>& counter) { counter.fetch_add(1, std::memory_order_relaxed); }
  PolicyStats snapshot() const {
    return PolicyStats{refaults.load(std::memory_order_relaxed), promotions.load(std::memory_order_relaxed),
                       second_chances.load(std::memory_order_relaxed), demotions.load(std::memory_order_relaxed)};
  }
};

class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;
  virtual void on_fill(PageRef page) = 0;
  // A write-protect fault made the page dirty: it is in use.
  virtual void on_write(const Region& region, std::uint64_t page) {
    (void)region;
    (void)page;
  }
  // Queues a page to be evicted in its turn, as a page just filled that nobody refers to, and never among
  // the retained: a victim that could not be evicted now (its write-back failed) and a poisoned page, whose
  // marker must go at a later eviction.
  virtual void queue_for_eviction(PageRef page) = 0;
  // The next page to evict, or nothing when no page is resident. A victim may be stale (evicted or
  // unmapped since): the caller checks its state.
  virtual std::optional<PageRef> next_victim() = 0;
  virtual void forget_region(const Region& region) = 0;
  virtual PolicyStats stats() const { return {}; }
  // How much of the buffer (units, as its capacity is counted) the pages it evicts last take when the pager keeps
  // them in memory as victims, for a fault on one to take back without a read (victim_buffer.hpp); 0: none, an
  // evicted page is dropped at once.
  virtual std::uint64_t victim_units() const { return 0; }
};

// First in, first out, in the order pages were filled.
std::unique_ptr<EvictionPolicy> make_fifo_policy();
// DI-MMAP's buffer (policy/hot_fifo.cpp): a page leaving the fill-order FIFO that faulted again after a recent
// eviction, or was written, goes to a hot-page FIFO of up to 3/4 of `capacity_units` instead of out.
std::unique_ptr<EvictionPolicy> make_hot_fifo_policy(std::uint64_t capacity_units);
// S3-FIFO (policy/s3fifo.cpp): new pages enter a small FIFO of 1/10 of `capacity_units`; those written
// meanwhile move on to the main FIFO, the others leave and are remembered in a ghost queue; a refault of a
// remembered page enters the main FIFO, where pages written since they entered get another round.
std::unique_ptr<EvictionPolicy> make_s3fifo_policy(std::uint64_t capacity_units);
// CLOCK (policy/clock.cpp): one ring of pages; the hand passes over a referenced page, clearing its bit, and
// evicts the first unreferenced one. A page is referenced by a first write, or by being a refault.
std::unique_ptr<EvictionPolicy> make_clock_policy(std::uint64_t capacity_units);

// `policy` for all pages but the first filled, up to `retained_units` of the buffer, which are evicted only when
// `policy` offers none (then oldest first, and the next pages filled take their places). A loop over more data
// than the buffer, such as a BFS level's sweep over its graph, loses every page under FIFO before it comes round
// again; a retained part hits on every round (policy/retain.cpp).
std::unique_ptr<EvictionPolicy> make_retaining_policy(std::unique_ptr<EvictionPolicy> policy,
                                                      std::uint64_t retained_units);

// The policy `eviction` names over a buffer of `capacity_units` (units, as Buffer counts: pages of several sizes
// take several), the first pages filled retained up to `retained_units`.
std::unique_ptr<EvictionPolicy> make_eviction_policy(Eviction eviction, std::uint64_t capacity_units,
                                                     std::uint64_t retained_units);

// A page as policies remember it after it has gone: region ids are never reused within a pager.
struct PageKey {
  std::uint64_t region;
  std::uint64_t page;
  bool operator==(const PageKey& other) const { return region == other.region && page == other.page; }
};
inline PageKey key_of(const Region& region, std::uint64_t page) { return PageKey{region.id, page}; }
inline PageKey key_of(const PageRef& page) { return key_of(*page.region, page.page); }
struct PageKeyHash {
  std::size_t operator()(const PageKey& key) const {
    std::uint64_t h = (key.region * 0x9E3779B97F4A7C15ull) ^ (key.page + 0x632BE59BD9B4E019ull);
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
};

}  // namespace autopager
