// Which resident page to evict next. The buffer tells the policy about every page it fills; evictors
// ask it for victims. Implementations must be thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "region.hpp"

namespace autopager {

class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;
  virtual void on_fill(PageRef page) = 0;
  // Queues a page in fill order, never among the retained: a victim that could not be evicted now (its
  // write-back failed) and a poisoned page, whose marker must go at the next eviction.
  virtual void queue_for_eviction(PageRef page) = 0;
  // The next page to evict, or nothing when no page is resident. A victim may be stale (evicted or
  // unmapped since): the caller checks its state.
  virtual std::optional<PageRef> next_victim() = 0;
  virtual void forget_region(const Region& region) = 0;
};

// First in, first out, in the order pages were filled, except that the first `retained_pages` pages filled
// are evicted only when no other page is left to evict (then oldest first, and the next pages filled take
// their places). A loop over more data than the buffer, such as a BFS level's sweep over its graph, loses
// every page under plain FIFO before it comes round again; a retained part hits on every round.
std::unique_ptr<EvictionPolicy> make_fifo_policy(std::uint64_t retained_pages = 0);

}  // namespace autopager
