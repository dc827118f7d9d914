// The victim buffer: the contents of the last pages an eviction policy evicted (EvictionPolicy::victim_pages of
// them), kept in memory so that a fault on one installs it again without a read (docs/DESIGN.md, "The victim
// buffer"). A victim is clean (written back before it parks), unmapped from its region, in the state
// kVictim, and keeps its buffer slot: the memory bound counts it. Its contents sit in one slot of an arena
// registered with the pager's userfaultfd (the destination UFFDIO_MOVE and UFFDIO_COPY need) and touched by
// nothing but those ioctls, so that no access to the arena ever faults.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "policy/victim_queue.hpp"
#include "region.hpp"
#include "uffd.hpp"

namespace autopager {

class VictimBuffer {
 public:
  // A page kept by a copy exists twice until its region's copy is dropped: an eviction drops the pages it
  // copied whenever they reach this, and a larger page is kept only by a move.
  static constexpr std::size_t kMostCopiedAtOnce = 1u << 20;

  // `pages` slots of `page_size` bytes; none (and no arena) for 0.
  VictimBuffer(Userfaultfd& uffd, std::size_t page_size, std::uint64_t pages);
  ~VictimBuffer();
  VictimBuffer(const VictimBuffer&) = delete;
  VictimBuffer& operator=(const VictimBuffer&) = delete;

  bool enabled() const { return arena_ != nullptr; }
  std::uint64_t capacity() const { return pages_; }

  // Up to `most` free slots, taken for an eviction's batch; what it does not use goes back (give_back_slots).
  std::vector<std::uint64_t> take_slots(std::uint64_t most);
  void give_back_slots(const std::vector<std::uint64_t>& slots);

  // Under the page's stripe, the page resident, clean and about to go: its contents into `slot` (taken), moved
  // out of the region (UFFDIO_MOVE: the page is gone from it, nothing to zap) or else copied (to be dropped
  // from the region by the caller). Whether it moved; nothing when neither worked (the slot is free again).
  std::optional<bool> keep(const Region& region, std::uint64_t page, std::uint64_t slot);
  // The page, kept in `slot` and now unmapped, is the newest victim.
  void park(PageRef page, std::uint64_t slot);
  // Under the page's stripe, a kVictim page: its slot, no longer queued; nothing when a dropper has taken it
  // (it is about to be absent).
  std::optional<std::uint64_t> take(const Region& region, std::uint64_t page);
  std::optional<Victim> pop_oldest();
  // Installs the slot's contents at the page (UFFDIO_COPY), waking its faulting threads. 0 or the errno.
  int install(const Region& region, std::uint64_t page, std::uint64_t slot, WriteProtect protect);
  // Drops what a slot taken holds and frees it.
  void drop(std::uint64_t slot);

 private:
  char* slot_address(std::uint64_t slot) const { return arena_ + slot * page_size_; }

  Userfaultfd& uffd_;
  const std::size_t page_size_;
  const std::uint64_t pages_;
  char* arena_ = nullptr;
  std::mutex mutex_;  // a leaf, over queue_
  VictimQueue queue_;
};

}  // namespace autopager
