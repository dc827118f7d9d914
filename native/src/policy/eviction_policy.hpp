// Which resident page to evict next. The buffer tells the policy about every page it fills; evictors
// ask it for victims. Implementations must be thread-safe.
#pragma once

#include <memory>
#include <optional>

#include "region.hpp"

namespace autopager {

class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;
  virtual void on_fill(PageRef page) = 0;
  // A victim that could not be evicted now (e.g. its write-back failed) goes back in.
  virtual void on_kept(PageRef page) = 0;
  // The next page to evict, or nothing when no page is resident. A victim may be stale (evicted or
  // unmapped since): the caller checks its state.
  virtual std::optional<PageRef> next_victim() = 0;
  virtual void forget_region(const Region& region) = 0;
};

// First in, first out, in the order pages were filled.
std::unique_ptr<EvictionPolicy> make_fifo_policy();

}  // namespace autopager
