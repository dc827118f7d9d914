// How much a fault that starts no stream reads around its page. The kernel reads around such a fault and learns
// from page-cache hits whether that paid; a userfaultfd pager never sees a hit, only the next faults. So:
// - A region that fits in the buffer's room (what it can take before eviction starts) reads the most around
//   every such fault: nothing is evicted for the pages read, and a program that touches a file in random order
//   (a BFS over a graph in memory) comes to touch all of it, so large reads bring it in with far fewer faults.
// - Otherwise the pages around a fault are worth reading only if the program touches them soon, which shows
//   only where they are not read: one such fault in kProbeEvery (a probe) reads its page alone, and the
//   region's next kWindow faults are counted by how far they fall from it (those near it read their pages
//   alone too, so that no block hides the faults that would follow). A binary search's last probes fall
//   within a few dozen kilobytes of each other; a B-tree's leaves, a gather's rows, do not. The block read
//   around the other faults is the one whose expected faults saved, each worth kFaultBytes of transfer (a
//   fault's latency at the disk's sequential rate, and the page it evicts), most exceed the pages it adds.
// A block is centred on its fault, clipped to the region. Pure state, under the filler pool's lock like the
// region's read-ahead streams, tested alone in native/tests/read_around_test.cpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace autopager {

class ReadAround {
 public:
  struct Block {
    std::uint64_t first = 0;
    std::uint64_t count = 1;
  };

  // `most_pages`: the largest block (read_around in pages, at least 1); `page_bytes`: the region's page.
  ReadAround(std::uint64_t most_pages, std::size_t page_bytes);

  // A fault on `page` of a region of `page_count` pages: counted for the probes in flight. A fault that starts a
  // stream (`isolated`) gets its block, the most when the region `fits` in the buffer's room; any other fault
  // only its page.
  Block fault(std::uint64_t page, std::uint64_t page_count, bool isolated, bool fits);
  // The block size chosen for isolated faults of a region that does not fit, in pages.
  std::uint64_t chosen_pages() const { return std::uint64_t{1} << chosen_scale_; }
  // The largest block, read around the isolated faults of a region that fits.
  std::uint64_t most_pages() const { return std::uint64_t{1} << most_scale_; }

  static constexpr unsigned kProbeEvery = 8;
  static constexpr std::uint64_t kWindow = 32;
  static constexpr std::uint64_t kFaultBytes = 128u << 10;

 private:
  struct Probe {
    std::uint64_t page = 0;
    std::uint64_t clock = 0;
    bool active = false;
  };
  // Scales: a block of 2^k pages, k up to kMostScale (2^kMostScale pages of the smallest page are 256 MiB).
  static constexpr unsigned kMostScale = 16;
  static constexpr unsigned kProbes = 4;
  // Probes whose windows ended before the counts are halved, so that a program's new phase is learnt.
  static constexpr std::uint64_t kMemory = 64;
  // Probes ended before any block is read around.
  static constexpr std::uint64_t kLeastProbes = 4;

  Block centred(std::uint64_t page, std::uint64_t page_count, std::uint64_t pages) const;
  // Counts a fault for the probes in flight; whether it fell within the largest block of one.
  bool count(std::uint64_t page);
  void choose();

  const unsigned most_scale_;
  const std::size_t page_bytes_;
  std::array<Probe, kProbes> probes_{};
  // nearby_[k]: faults within a probe's window that fell in the block of 2^k pages centred on it, and no smaller.
  std::array<std::uint64_t, kMostScale + 1> nearby_{};
  std::uint64_t probes_ended_ = 0;
  std::uint64_t clock_ = 0;
  std::uint64_t isolated_ = 0;
  unsigned chosen_scale_ = 0;
};

}  // namespace autopager
