// What happens to one page: filled from its store, made writable on first write, written back,
// evicted. Each operation holds the page's stripe lock, so two faults on one page cause one read.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>

#include "autopager/config.hpp"
#include "buffer.hpp"
#include "region.hpp"
#include "stats_counters.hpp"
#include "uffd.hpp"
#include "zap.hpp"

namespace autopager {

class Paging {
 public:
  Paging(const Config& config, Userfaultfd& uffd, Buffer& buffer, StatsCounters& stats)
      : config_(config), uffd_(uffd), buffer_(buffer), stats_(stats) {}

  // Brings the page in, if it is absent, through `io_buffer` (page_size bytes, page-aligned); a demand
  // fill waits for a buffer slot, a speculative one (read-ahead, prefetch) gives up when none is free.
  // Returns true when this call read the page.
  bool fill(const RegionPtr& region, std::uint64_t page, bool for_write, bool speculative, char* io_buffer);

  // A fill in two steps, for reads that complete later. claim() takes a buffer slot (through
  // `reserve`, or only a free one when speculative) and marks the absent page kFilling; false when the
  // page is present, being filled or its region closing. finish() installs the `got` bytes read (-1:
  // the read failed) and returns true when the page is now resident.
  bool try_reserve_slot() { return buffer_.try_reserve(); }
  void reserve_slot() { buffer_.reserve([this] { return evict_one(); }); }
  bool claim(Region& region, std::uint64_t page, bool speculative, const std::function<void()>& reserve);
  bool finish(const RegionPtr& region, std::uint64_t page, bool for_write, char* io_buffer, ssize_t got);
  // The first write to a clean, write-protected page: mark it dirty and let the writer through.
  void resolve_write(Region& region, std::uint64_t page);
  // Writes a dirty page back; it stays resident, write-protected again. Returns 0 or an errno.
  int write_back(Region& region, std::uint64_t page);
  // Evicts up to `most` victims of the policy, dropping their memory together; returns how many.
  std::size_t evict(std::size_t most);
  bool evict_one() { return evict(1) == 1; }
  // Releases every resident page of a closing region, writing dirty ones back. Returns 0 or an errno.
  int release_region(Region& region);

 private:
  int write_back_locked(Region& region, std::uint64_t page, bool keep_resident);

  const Config& config_;
  Userfaultfd& uffd_;
  Buffer& buffer_;
  StatsCounters& stats_;
  Zapper zapper_;
};

}  // namespace autopager
