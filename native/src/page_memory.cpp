#include "page_memory.hpp"

#include <algorithm>

namespace autopager {

PageMemory plan_page_memory(const Config& config) {
  const std::uint64_t pages = config.buffer_pages;
  PageMemory plan;
  // The fillers' slots within a quarter of the buffer (one filler at least): with more, the pages the
  // program is using at once would not stay resident (a sort's merges on a buffer of 8 pages, 4 fillers
  // and 4 resident pages, only thrashed).
  plan.fillers = static_cast<unsigned>(std::clamp<std::uint64_t>(pages / 4, 1, config.fillers));
  // Reads a filler keeps in flight: enough to cover a burst of faults and their read-ahead, in at most
  // 8 MiB a filler and a quarter of the buffer for all of them; at least one slot, which takes a
  // filler's reads in place when its ring is full. One slot a filler leaves pages - fillers >= fillers
  // resident pages, and more slots leave at least three quarters of the buffer.
  constexpr std::uint64_t kMostSlotBytes = 8u << 20;
  constexpr std::uint64_t kMostSlots = 64;
  const std::uint64_t slot_bytes = std::min(kMostSlotBytes, config.buffer_bytes() / 4 / plan.fillers);
  // Read-ahead of small pages in runs of up to 1 MiB, in half the slots' memory: a stream of 4 KiB pages
  // read a page a request would cost the disk a request and the pager a copy for every 4 KiB, where 1 MiB
  // requests keep this disk at its sequential rate. Pages of 1 MiB and more are read one a request.
  constexpr std::uint64_t kRunBytes = 1u << 20;
  const std::uint64_t run_bytes = std::min(kRunBytes, slot_bytes / 2);
  if (config.read_ahead > 0 && run_bytes / config.page_size > 1) {
    plan.run_pages = static_cast<unsigned>(run_bytes / config.page_size);
    plan.run_slots = static_cast<unsigned>(slot_bytes / 2 / (std::uint64_t{plan.run_pages} * config.page_size));
  }
  const std::uint64_t page_slot_bytes = plan.run_slots > 0 ? slot_bytes / 2 : slot_bytes;
  plan.read_slots =
      static_cast<unsigned>(std::clamp<std::uint64_t>(page_slot_bytes / config.page_size, 1, kMostSlots));
  const std::uint64_t filler_pages = plan.read_slots + std::uint64_t{plan.run_slots} * plan.run_pages;
  plan.resident_pages = pages - static_cast<std::uint64_t>(plan.fillers) * filler_pages;
  return plan;
}

}  // namespace autopager
