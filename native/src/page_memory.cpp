#include "page_memory.hpp"

#include <algorithm>

#include "huge_pages.hpp"

namespace autopager {

PageMemory plan_page_memory(const Config& config) {
  const std::uint64_t pages = config.buffer_pages;
  PageMemory plan;
  plan.unit = config.page_size_for(false);
  // The fillers' slots within a quarter of the buffer (one filler at least): with more, the pages the
  // program is using at once would not stay resident (a sort's merges on a buffer of 8 pages, 4 fillers
  // and 4 resident pages, only thrashed).
  plan.fillers = static_cast<unsigned>(std::clamp<std::uint64_t>(pages / 4, 1, config.fillers));
  // Reads a filler keeps in flight: enough to cover a burst of faults and their read-ahead, in a quarter of
  // the buffer for all of them; at least one slot, which takes a filler's reads in place when its ring is
  // full. One slot a filler leaves pages - fillers >= fillers resident pages, and more slots leave at least
  // three quarters of the buffer.
  constexpr std::uint64_t kMostPageSlotBytes = 8u << 20;
  constexpr std::uint64_t kMostSlots = 64;
  const std::uint64_t share = config.buffer_bytes() / 4 / plan.fillers;
  // Reads of small pages in runs of up to read_ahead_run (read-ahead, read-around), two of them or 4 MiB a
  // filler, in at most half its share: a stream of 4 KiB pages read a page a request would cost the disk a
  // request and the pager a copy for every 4 KiB, where requests of a megabyte and more keep this disk at its
  // sequential rate. Pages of read_ahead_run and more are read one a request.
  constexpr std::uint64_t kLeastRunSlotBytes = 4u << 20;
  const std::uint64_t run_share = std::min(std::max<std::uint64_t>(kLeastRunSlotBytes, 2 * config.read_ahead_run),
                                           share / 2);
  const std::uint64_t run_bytes = std::min<std::uint64_t>(config.read_ahead_run, run_share) / plan.unit * plan.unit;
  const bool reads_grow = config.read_ahead > 0 || config.read_around > plan.unit;
  if (reads_grow && run_bytes / plan.unit > 1) {
    plan.run_bytes = static_cast<std::size_t>(run_bytes);
    plan.run_slots = static_cast<unsigned>(run_share / run_bytes);
  }
  const std::uint64_t page_slot_bytes =
      plan.run_slots > 0 ? std::min(kMostPageSlotBytes, share) / 2 : std::min(kMostPageSlotBytes, share);
  plan.read_slots =
      static_cast<unsigned>(std::clamp<std::uint64_t>(page_slot_bytes / config.page_size, 1, kMostSlots));
  const std::uint64_t filler_units =
      plan.read_slots * plan.units_of(config.page_size) + std::uint64_t{plan.run_slots} * (plan.run_bytes / plan.unit);
  // Write-back slots of the longest write-back run (8 MiB) or less, whole huge pages, in at most a 32nd of the buffer;
  // none where the regions may be in huge pages, whose memory is contiguous already.
  constexpr std::uint64_t kMostStagingBytes = 8u << 20;
  const std::uint64_t staging_share = config.buffer_bytes() / 32 / std::max(1u, config.evictors);
  const std::uint64_t staging_bytes = std::min(kMostStagingBytes, staging_share) / kHugePageSize * kHugePageSize;
  if (config.direct_io && staging_bytes > 0 && !may_use_huge_pages(config)) {
    plan.write_staging_slots = config.evictors;
    plan.write_staging_bytes = static_cast<std::size_t>(staging_bytes);
  }
  plan.buffer_units = pages * plan.units_of(config.page_size);
  plan.resident_units = plan.buffer_units - std::uint64_t{plan.fillers} * filler_units -
                        plan.write_staging_slots * staging_bytes / plan.unit;
  return plan;
}

}  // namespace autopager
