// Counters a pager keeps; readable at any time, printed at exit when UMAP_PRINT_STATS=1.
#pragma once

#include <cstdint>
#include <string>

namespace autopager {

struct Stats {
  std::uint64_t page_size = 0;         // the page of writable regions in bytes (a region smaller than it has its own)
  std::uint64_t read_only_page_size = 0;  // the page of read-only regions
  std::uint64_t read_ahead_run_bytes = 0;  // the most one read of several pages covers (0: a page at a time)
  std::uint64_t read_faults = 0;       // faults on missing pages by reads
  std::uint64_t write_faults = 0;      // faults by writes (missing pages, or first write to a clean page)
  std::uint64_t fills = 0;             // pages read from a store and installed (demand, read-ahead, prefetch)
  std::uint64_t read_around_pages = 0;  // pages queued to be read around faults that started no stream
  std::uint64_t reads = 0;             // the store reads that installed them: a page's, or a read-ahead run's
  std::uint64_t bytes_read = 0;
  std::uint64_t evictions = 0;         // pages taken out of their regions (victims kept in the victim buffer too)
  std::uint64_t write_backs = 0;       // dirty pages written to a store
  std::uint64_t bytes_written = 0;
  std::uint64_t write_errors = 0;      // write-backs that failed (the page stays resident and dirty)
  std::uint64_t read_errors = 0;       // faults failed with SIGBUS (a read error, a page past the store's end)
  std::uint64_t resident_bytes = 0;    // of resident pages (victims kept included), now
  std::uint64_t peak_resident_bytes = 0;  // the most resident at once since the pager started
  std::uint64_t dirty_pages = 0;       // now
  // How the eviction policy's queues served (UMAP_EVICTION; native/src/policy/eviction_policy.hpp, PolicyStats).
  std::uint64_t policy_refaults = 0;       // fills of pages it remembered as evicted lately
  std::uint64_t policy_promotions = 0;     // pages moved into its protected queue (hot FIFO, S3-FIFO's main)
  std::uint64_t policy_second_chances = 0; // pages kept at its hand because referenced since
  std::uint64_t policy_demotions = 0;      // protected pages evicted because that queue was over its share
  std::uint64_t victim_hits = 0;           // faults served from the victim buffer, without a read
  double fault_service_mean_us = 0;    // from reading the fault to waking the faulting thread
  double fault_service_p99_us = 0;

  std::string to_json() const;
};

}  // namespace autopager
