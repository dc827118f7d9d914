// How much a fault that starts no stream reads around its page. The kernel reads around such a fault and learns
// from page-cache hits whether that paid; a userfaultfd pager never sees a hit, only the next faults. What it
// does know is whether the pages read would cost anything: in a region that fits in the buffer's room (what it
// can take before eviction starts), nothing is evicted for them, and a program that touches a file in random
// order (a BFS over a graph in memory, gathers from an array in memory) comes to touch most of it, so large
// blocks bring it in with far fewer faults (a fault reads a page in about the time the disk reads 200 KiB in
// sequence). Out of core a block pays only for faults clustered within it, and evicts a resident page for each
// page it adds: binary-search lookups in 1 GiB through a 256 MiB buffer read 7x the bytes and ran at half the
// rate when blocks were chosen by how far later faults fell from sampled ones, so there a fault reads its page
// and streams alone grow the unit (read_ahead.hpp), but for a thread closing in on a spot (converging_faults.hpp).
// Between the two, a region at most twice the room: while the buffer first fills, a block evicts nothing either,
// and most of what the buffer will hold is what a random reader touches, so blocks fill it; once it has filled,
// a fault reads its page as out of core (Buffer::has_room).
#pragma once

#include <algorithm>
#include <cstdint>

namespace autopager {

struct PageBlock {
  std::uint64_t first = 0;
  std::uint64_t count = 1;
};

// The block of up to `pages` pages centred on `page`, within a region of `page_count` pages.
inline PageBlock block_around(std::uint64_t page, std::uint64_t page_count, std::uint64_t pages) {
  pages = std::max<std::uint64_t>(1, std::min(pages, page_count));
  std::uint64_t first = page - std::min(page, pages / 2);
  if (first + pages > page_count) first = page_count - pages;
  return PageBlock{first, pages};
}

}  // namespace autopager
