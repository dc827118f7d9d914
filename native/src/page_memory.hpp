// How a pager's buffer (buffer_size, UMAP_BUFSIZE) is shared out between the resident pages and the
// fillers' read slots (read_slots.hpp), so that the pager's page memory stays within it, and how many
// pages one read-ahead read covers: docs/DESIGN.md, "Pager: the memory bound".
#pragma once

#include <cstdint>

#include "autopager/config.hpp"

namespace autopager {

struct PageMemory {
  unsigned fillers = 0;              // the filler threads: config.fillers, or fewer where the buffer is small
  unsigned read_slots = 0;           // each filler's, of a page each
  // Pages one read-ahead read covers (read_ahead.hpp): 1, or where pages are small, a run of them read
  // with one request into one of each filler's `run_slots` slots and installed with one copy.
  unsigned run_pages = 1;
  unsigned run_slots = 0;
  std::uint64_t resident_pages = 0;  // the buffer's pages less every filler's slots of both kinds
};

// For a valid config (Config::validate: a buffer of two pages at least).
PageMemory plan_page_memory(const Config& config);

}  // namespace autopager
