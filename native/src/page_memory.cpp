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
  plan.read_slots = static_cast<unsigned>(std::clamp<std::uint64_t>(slot_bytes / config.page_size, 1, kMostSlots));
  plan.resident_pages = pages - static_cast<std::uint64_t>(plan.fillers) * plan.read_slots;
  return plan;
}

}  // namespace autopager
