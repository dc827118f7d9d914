// The queues of resident pages the policies keep, and dropping a region's pages from one. A queue holds
// PageRefs or entries with a PageRef `page` and the policy's marks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>

#include "region.hpp"

namespace autopager {

using PageQueue = std::deque<PageRef>;

inline const PageRef& page_of(const PageRef& page) { return page; }
template <typename Entry>
const PageRef& page_of(const Entry& entry) {
  return entry.page;
}

template <typename Queue>
void erase_region(Queue& queue, const Region& region) {
  queue.erase(std::remove_if(queue.begin(), queue.end(),
                             [&](const auto& entry) { return page_of(entry).region.get() == &region; }),
              queue.end());
}

// A queue that also counts what its pages take of the buffer (Region::units), for a policy whose queues have
// shares of the buffer: pages of several sizes (read-only regions' smaller) take several units each.
template <typename Entry>
class UnitQueue {
 public:
  bool empty() const { return entries_.empty(); }
  std::uint64_t units() const { return units_; }
  void push_back(Entry entry) {
    units_ += page_of(entry).region->units;
    entries_.push_back(std::move(entry));
  }
  Entry pop_front() {
    Entry entry = std::move(entries_.front());
    entries_.pop_front();
    units_ -= page_of(entry).region->units;
    return entry;
  }
  void erase_region(const Region& region) {
    for (const Entry& entry : entries_)
      if (page_of(entry).region.get() == &region) units_ -= region.units;
    autopager::erase_region(entries_, region);
  }

 private:
  std::deque<Entry> entries_;
  std::uint64_t units_ = 0;
};

}  // namespace autopager
