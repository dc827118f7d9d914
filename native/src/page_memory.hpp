// How a pager's buffer (buffer_size, UMAP_BUFSIZE) is shared out between the resident pages and the
// fillers' read slots (read_slots.hpp), so that the pager's page memory stays within it, and how many
// bytes one read-ahead read covers: docs/DESIGN.md, "Pager: the memory bound".
#pragma once

#include <cstddef>
#include <cstdint>

#include "autopager/config.hpp"

namespace autopager {

struct PageMemory {
  // What the buffer counts in: the smallest page a region has (the read-only page where it is set, else the page
  // size); a page takes as many units as it spans, a region's short page (a small region) at least one.
  std::size_t unit = 0;
  unsigned fillers = 0;              // the filler threads: config.fillers, or fewer where the buffer is small
  unsigned read_slots = 0;           // each filler's, of config.page_size each (the largest page)
  // Bytes one read-ahead read covers at most (read_ahead.hpp): where pages are smaller, a run of them is read
  // with one request into one of each filler's `run_slots` slots of this size and installed with one copy; 0:
  // no run slots, every read is a page's.
  std::size_t run_bytes = 0;
  unsigned run_slots = 0;
  // Where direct I/O is on: slots an evictor's write-backs copy runs of dirty pages into (write_back_staging.hpp),
  // one an evictor, of `write_staging_bytes` each; none where the buffer cannot spare them.
  unsigned write_staging_slots = 0;
  std::size_t write_staging_bytes = 0;
  std::uint64_t resident_units = 0;  // the buffer's units less every filler's slots and the write-back slots
  // All the buffer's units: what the resident pages may take where the regions fit in it whole and the slots give
  // their memory back after every read (Buffer::slots_transient).
  std::uint64_t buffer_units = 0;

  std::uint64_t units_of(std::size_t page_size) const { return (page_size + unit - 1) / unit; }
  // The pages of `page_size` one read covers: a run slot's worth, or one.
  std::uint64_t run_pages(std::size_t page_size) const {
    return run_bytes > page_size ? run_bytes / page_size : 1;
  }
};

// For a valid config (Config::validate: a buffer of two pages at least).
PageMemory plan_page_memory(const Config& config);

}  // namespace autopager
