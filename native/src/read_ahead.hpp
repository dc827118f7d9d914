// Where read-ahead reads in a region. A fault reads `read_ahead` pages after it. Once faults follow each
// other through the region (a sequential stream, forward or backward), read-ahead no longer waits for the
// next fault: every completed read of the stream starts the read `read_ahead` pages further on in the
// stream's direction, so `read_ahead` reads stay in flight, up to a window beyond the newest fault that
// doubles with each sequential fault. Without this, a scan faster than the disk would read a burst, wait
// for all of it, and leave the disk idle while it copies: a userfaultfd pager never learns that a page it
// installed was touched, so the next fault, past the pages read ahead, is the only news that the scan went
// on. Backward streams matter because the store's reads go through the kernel's page cache, whose own
// read-ahead follows a forward scan of the file but never a backward one (a reverse cursor, a descending
// merge).
#pragma once

#include <array>
#include <cstdint>

#include "autopager/config.hpp"

namespace autopager {

class ReadAheadStreams {
 public:
  enum class Direction : int { kBackward = -1, kForward = 1 };

  // `read_ahead`: reads kept in flight for a stream; `most_window`: pages a stream may run ahead of its
  // newest fault.
  ReadAheadStreams(unsigned read_ahead, std::uint64_t most_window);
  // A window of at most a quarter of the buffer and 64 MiB.
  static ReadAheadStreams for_config(const Config& config);

  // A fault at `page`: starts a stream, or continues one and widens its window. The direction in which to
  // read `read_ahead` pages from it: the stream's, forward for a new one.
  Direction fault(std::uint64_t page);
  // A read-ahead read of `page` completed: true, with the page to read next, when its stream goes on.
  bool next_after(std::uint64_t page, std::uint64_t& next) const;

 private:
  struct Stream {
    std::uint64_t newest_fault = 0;
    std::uint64_t window = 0;  // pages beyond newest_fault, in the stream's direction, that may be read; 0: unused
    int direction = 0;         // +1 forward, -1 backward, 0 not known yet (one fault)
    std::uint64_t last_use = 0;
    // Whether `page` lies within `reach` pages beyond the newest fault in direction `towards`.
    bool ahead(std::uint64_t page, int towards, std::uint64_t reach) const;
  };
  // A few at once: threads scanning different parts of one region, a merge of sorted runs.
  static constexpr std::size_t kStreams = 4;

  const unsigned read_ahead_;
  const std::uint64_t most_window_;
  std::array<Stream, kStreams> streams_{};
  std::uint64_t clock_ = 0;
};

}  // namespace autopager
