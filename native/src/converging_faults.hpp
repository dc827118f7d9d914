// Out of core, a fault that starts no stream reads its page alone (read_around.hpp), with one exception: a thread
// closing in on one spot, as a search does (a binary search's last levels, a descent through neighbouring nodes),
// whose every probe falls nearer the previous one than that fell to the one before. Once such a thread faults
// within a few dozen pages of its own previous fault, its remaining probes lie within that distance on either
// side, so that block is read with the fault (its page first, the rest as prefetch, FillerPool::queue_read_ahead):
// the search's next probes find their pages in or on their way, where it would take a fault a level. (The kernel's
// read-around, 128 KiB around every fault, serves the same last levels in one read, and at 4 KiB a fault a
// binary search over 4 GiB took 5.6 faults a lookup and fell behind it.) Faults are told apart by thread
// (the userfaultfd's thread ids; without them the faults of all threads count as one thread's, and interleaved
// threads rarely qualify), and a distance no shorter than the thread's previous one is a stride, not a search:
// it reads nothing more, nor do random faults far apart.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>

#include "read_around.hpp"

namespace autopager {

class ConvergingFaults {
 public:
  // The most bytes such a block covers: the kernel's read-around. (Lookups in 4 GiB through a 1 GiB buffer ran
  // as fast with 64 KiB and 256 KiB, within the runs' spread; larger blocks evicted more.)
  static constexpr std::uint64_t kMostBlockBytes = 128 << 10;

  // `thread` faulted on `page` of `region` (of `page_count` pages): the block it reads, at most `most_pages`
  // pages (one page: its own alone). Within `stream_reach` pages of its previous fault it is a stream's next fault,
  // which read-ahead serves (read_ahead.hpp).
  PageBlock fault(pid_t thread, const void* region, std::uint64_t page, std::uint64_t page_count,
                  std::uint64_t most_pages, std::uint64_t stream_reach) {
    Previous& previous = previous_[static_cast<std::uint32_t>(thread) % previous_.size()];
    const bool same = previous.thread == thread && previous.region == region;
    const std::uint64_t distance = !same ? UINT64_MAX : page > previous.page ? page - previous.page : previous.page - page;
    if (distance == 0) return PageBlock{page, 1};  // its fault again (retried, or the page still on its way)
    const bool closer = same && distance < previous.distance;
    previous = Previous{thread, region, page, distance};
    if (!closer || distance <= stream_reach || 2 * distance + 1 > most_pages) return PageBlock{page, 1};
    return block_around(page, page_count, 2 * distance + 1);
  }

 private:
  struct Previous {
    pid_t thread = -1;
    const void* region = nullptr;
    std::uint64_t page = 0;
    std::uint64_t distance = UINT64_MAX;  // from the fault before it
  };
  // Threads whose ids fall on one entry take turns: a missed block, never a wrong page.
  std::array<Previous, 64> previous_{};
};

}  // namespace autopager
