// The queues of resident pages the policies keep, and dropping a region's pages from one. A queue holds
// PageRefs or entries with a PageRef `page` and the policy's marks.
#pragma once

#include <algorithm>
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

}  // namespace autopager
