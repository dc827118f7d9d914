// Where read-ahead reads in a region. A fault that starts a stream reads nothing ahead: one fault says
// nothing about the next, and reading ahead of every random fault would multiply a random program's reads.
// The fault that continues it (the stream's next page, or one within `read_ahead` pages past it, forward or
// backward) shows a sequential stream and reads `read_ahead` pages on from it in the stream's direction.
// From then on read-ahead no longer waits for the next fault: every completed read of the stream starts the
// read `read_ahead` pages further on, so `read_ahead` reads stay in flight, up to a window beyond the newest
// fault that doubles with each sequential fault. Without this, a scan faster than the disk would read a
// burst, wait for all of it, and leave the disk idle while it copies: a userfaultfd pager never learns that
// a page it installed was touched, so the next fault, past the pages read ahead, is the only news that the
// scan went on. Backward streams matter because nothing else reads ahead of them: with O_DIRECT the kernel
// reads nothing ahead at all, and the page cache's own read-ahead follows a forward scan of the file but
// never a backward one (a reverse cursor, a descending merge).
// Where pages are small, a stream's reads grow into runs of pages read with one request (page_memory.hpp):
// one page each at first, then, as each sequential fault doubles the window, larger, up to `run_pages`.
// A stream's runs are the region's blocks of that many pages (a fault queues the runs from it to its block's
// edge and on, as many as cover `read_ahead` runs): the reads a fault queues and those its stream's completed
// reads start then claim the same blocks, whole or not at all. Runs led by any page instead overlapped those in
// flight and claimed their remnants (an LMDB scan read 162 KiB a request where runs were 1 MiB).
// The first reads stay small because a stream is a guess: a binary search's last probes fall a page or two
// apart and look like one, and reading a megabyte at each would multiply its reads. So with the default page of
// read-only regions (the system page, config.hpp) the unit a fault reads follows the faults: a block for a fault
// that starts a stream (read_around.hpp), runs doubling along a stream up to `read_ahead_run` bytes, and a
// block again once random faults have replaced the stream. A stream whose first fault read a block around it
// goes on from the block's edges. A stream's window is at most an eighth of the buffer (its reads a fault at most
// a sixteenth: none in a buffer of under 16 pages), and the windows of the streams
// in use share another eighth between them: a small buffer fills at the high water mark and is evicted down
// to the low one, and windows that add up to more than that gap evict their own pages before the program
// reaches them (STREAM's three arrays at a quarter of the buffer each read its data twice over, and nearly
// a hundred times over an NBD export, where read-ahead keeps far more in flight). Streams a fault continues stay followed; a new fault replaces the oldest stream that
// has not shown a direction yet, or a stream idle for kIdleFaults faults of the region, so that random faults
// between the merges of a sort or a BFS frontier and its offsets do not push the streams out.
// Read-ahead pages are installed clean (write-protected where writes are tracked), whatever the stream's
// faults: only a page the program writes is written back, as the kernel writes back only dirty pages, so a
// page read ahead of a writer takes its own write-protect fault.
#pragma once

#include <array>
#include <cstdint>

#include "autopager/config.hpp"

namespace autopager {

class ReadAheadStreams {
 public:
  // Where to read `read_ahead` pages from a faulting page: nowhere, or on in one direction.
  enum class Direction : int { kBackward = -1, kNone = 0, kForward = 1 };

  // What a stream reads next: in which direction (kNone: nothing) and runs of how many pages.
  struct Reads {
    Direction direction = Direction::kNone;
    std::uint64_t run = 1;
    bool starts = false;  // the fault started a stream: no fault before it was this near
  };

  // `read_ahead`: reads kept in flight for a stream, each of up to `run_pages` pages; `most_window`: pages
  // a stream may run ahead of its newest fault; `shared_window`: pages the streams in use may run ahead of
  // their faults together, shared evenly (no stream below `read_ahead`).
  ReadAheadStreams(unsigned read_ahead, std::uint64_t run_pages, std::uint64_t most_window,
                   std::uint64_t shared_window = UINT64_MAX);
  // For a region of pages of `page_size` whose reads cover `run_pages` at most: a window of at most an eighth of
  // the buffer and 64 MiB, the streams' windows an eighth together, reads a fault at most a sixteenth.
  static ReadAheadStreams for_region(const Config& config, std::size_t page_size, std::uint64_t run_pages);

  // A fault on the missing `page`: starts a stream (kNone), or continues one, widens its window and says
  // what it reads.
  Reads fault(std::uint64_t page);
  // The fault on `page` that just started a stream read pages [first, first + count) around it: the stream goes
  // on from a fault just past either end, with a window as wide as what was read.
  void read_around(std::uint64_t page, std::uint64_t first, std::uint64_t count);
  // A read-ahead read completed, `page` the one of its run nearest the fault: true, with the first page of the
  // next read and what it reads, when its stream goes on. The next read is the block of `reads.run` pages
  // `read_ahead` blocks on from `page`'s.
  bool next_after(std::uint64_t page, std::uint64_t& next, Reads& reads) const;
  // Whether a stream in `direction` has faulted past pages [first, first + count) and no stream has any of
  // them ahead: a read of them that waited (queued, or its filler not running) while the scan went on
  // would bring back pages it is done with, evicted meanwhile.
  bool passed(std::uint64_t first, std::uint64_t count, int direction) const;
  // The reads a fault that continues a stream queues: `read_ahead`, at most a sixteenth of the buffer.
  unsigned reads_per_fault() const { return read_ahead_; }
  // The most pages a read covers.
  std::uint64_t run_pages() const { return run_pages_; }

 private:
  struct Stream {
    std::uint64_t newest_fault = 0;
    // Pages beyond newest_fault, in the stream's direction, that may be read; for a stream of one fault, the
    // reach (less one) within which a second fault continues it; 0: unused.
    std::uint64_t window = 0;
    int direction = 0;  // +1 forward, -1 backward, 0 not known yet (one fault)
    std::uint64_t last_use = 0;
    // Of a stream of one fault: the pages read around it (newest_fault alone when none), which a second fault
    // continues from.
    std::uint64_t low = 0;
    std::uint64_t high = 0;
    // Whether `page` lies within `reach` pages beyond the newest fault in direction `towards`.
    bool ahead(std::uint64_t page, int towards, std::uint64_t reach) const;
  };
  // A few at once: threads scanning different parts of one region, a merge of sorted runs.
  static constexpr std::size_t kStreams = 8;
  // Faults of the region after which a stream none of them continued may be replaced by a new one.
  static constexpr std::uint64_t kIdleFaults = 4 * kStreams;

  // The stream a new fault takes the place of.
  Stream& replaced();
  // The most a stream's window may grow to now: its share of shared_window among the streams in use.
  std::uint64_t window_cap() const;

  // The pages each read of stream `s` covers: one until its window is twice read_ahead, then growing with it.
  std::uint64_t run_of(const Stream& s) const;

  const unsigned read_ahead_;
  const std::uint64_t run_pages_;
  const std::uint64_t most_window_;
  const std::uint64_t shared_window_;
  std::array<Stream, kStreams> streams_{};
  std::uint64_t clock_ = 0;
};

}  // namespace autopager
