// Where a page of a region without write tracking goes while it is written back: UFFDIO_MOVE takes
// it out of the region in one step, so that a write racing with its eviction faults (and waits for
// the page to come back from the store) instead of landing in memory that is about to be dropped.
// Slots are page-sized and registered with the pager's userfaultfd, as UFFDIO_MOVE requires of its
// destination; nothing but the write-back ever touches them, and only while a page is there.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

#include "uffd.hpp"

namespace autopager {

class StagingArea {
 public:
  StagingArea(Userfaultfd& uffd, std::size_t page_size) : uffd_(uffd), page_size_(page_size) {}
  ~StagingArea();
  StagingArea(const StagingArea&) = delete;
  StagingArea& operator=(const StagingArea&) = delete;

  // An empty slot, or nullptr when none can be made.
  char* take();
  // Drops what the slot holds and makes it free again.
  void give_back(char* slot);

 private:
  Userfaultfd& uffd_;
  const std::size_t page_size_;
  std::mutex mutex_;
  std::vector<char*> free_;
  std::vector<char*> all_;
};

}  // namespace autopager
