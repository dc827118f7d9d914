// What a policy learns of a page's use, the pager seeing faults only (docs/DESIGN.md, "Eviction policies"):
// whether its fill was a refault (the ghost queue remembered it) and whether it was written since the policy's
// hand last passed it. Under the policy's mutex.
#pragma once

#include <cstdint>

#include "policy/eviction_policy.hpp"
#include "policy/ghost_queue.hpp"
#include "policy/reference_bits.hpp"

namespace autopager {

class UseSignals {
 public:
  // Refaults within the last `ghost_window` evictions; write bits for a buffer of `pages`.
  UseSignals(std::uint64_t ghost_window, std::uint64_t pages) : ghost_(ghost_window), written_(pages) {}

  // A page filled: whether it is a refault (counted in `counters`).
  bool filled(const PageKey& key, PolicyCounters& counters) {
    written_.take(key);  // a bit left from an earlier residence
    const bool refault = ghost_.take(key);
    if (refault) PolicyCounters::add(counters.refaults);
    return refault;
  }
  void written(const PageKey& key) { written_.set(key); }
  // At the hand: whether the page was written since it last passed; clear afterwards.
  bool take_written(const PageKey& key) { return written_.take(key); }
  void evicted(const PageKey& key) { ghost_.remember(key); }

 private:
  GhostQueue ghost_;
  ReferenceBits written_;
};

}  // namespace autopager
