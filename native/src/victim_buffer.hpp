// The victim buffer: the contents of the last pages an eviction policy evicted (EvictionPolicy::victim_units of
// the buffer), kept in memory so that a fault on one installs it again without a read (docs/DESIGN.md, "The victim
// buffer"). A victim is clean (written back before it parks), unmapped from its region, in the state
// kVictim, and keeps its units of the buffer: the memory bound counts it. Its contents sit in a slot of an arena
// of its page size (one for writable regions' pages, config.page_size, and one for read-only regions', where that
// differs), registered with the pager's userfaultfd (the destination UFFDIO_MOVE and UFFDIO_COPY need) and touched
// by nothing but those ioctls, so that no access to an arena ever faults.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "autopager/config.hpp"
#include "page_memory.hpp"
#include "policy/victim_queue.hpp"
#include "region.hpp"
#include "uffd.hpp"

namespace autopager {

class VictimBuffer {
 public:
  // A page kept by a copy exists twice until its region's copy is dropped: an eviction drops the pages it
  // copied whenever they reach this, and a larger page is kept only by a move.
  static constexpr std::size_t kMostCopiedAtOnce = 1u << 20;

  // Victims holding at most `capacity` units of the buffer (`memory`'s), of the page sizes `config` gives regions;
  // none (and no arena) for 0. Each arena has slots for the whole capacity in its pages: address space only
  // (MAP_NORESERVE), backed by the victims alone.
  VictimBuffer(Userfaultfd& uffd, const Config& config, const PageMemory& memory, std::uint64_t capacity);
  ~VictimBuffer();
  VictimBuffer(const VictimBuffer&) = delete;
  VictimBuffer& operator=(const VictimBuffer&) = delete;

  bool enabled() const { return !arenas_.empty(); }
  std::uint64_t capacity() const { return queue_.capacity(); }  // units

  // The arena a page of this region waits in: nothing for a page size of neither arena (a small region's page,
  // shorter than its kind's).
  std::optional<unsigned> arena_for(const Region& region) const;
  // A free slot of the arena, taken for a page of an eviction's batch; nothing while the victims hold the
  // capacity. What the batch does not use goes back (give_back_slot).
  std::optional<VictimSlot> take_slot(unsigned arena);
  void give_back_slot(VictimSlot slot);

  // Under the page's stripe, the page resident, clean and about to go: its contents into `slot` (taken, of its
  // arena), moved out of the region (UFFDIO_MOVE: the page is gone from it, nothing to zap) or else copied (to be
  // dropped from the region by the caller). Whether it moved; nothing when neither worked (the slot is free again).
  std::optional<bool> keep(const Region& region, std::uint64_t page, VictimSlot slot);
  // The page, kept in `slot` and now unmapped, is the newest victim.
  void park(PageRef page, VictimSlot slot);
  // Under the page's stripe, a kVictim page: its slot, no longer queued; nothing when a dropper has taken it
  // (it is about to be absent).
  std::optional<VictimSlot> take(const Region& region, std::uint64_t page);
  std::optional<Victim> pop_oldest();
  // Installs the slot's contents at the page (UFFDIO_COPY), waking its faulting threads. 0 or the errno.
  int install(const Region& region, std::uint64_t page, VictimSlot slot, WriteProtect protect);
  // Units no victim and no page about to park holds.
  std::uint64_t free_units();
  // Drops what slots taken hold and frees them: one call a run of neighbouring slots, since each call flushes
  // the TLB of every CPU the program runs on.
  // `slots` is reordered.
  void drop(VictimSlot* slots, std::size_t count);
  void drop(VictimSlot slot) { drop(&slot, 1); }

 private:
  struct Arena {
    std::size_t page_size;
    char* base;
    std::uint64_t slots;
  };
  char* slot_address(VictimSlot slot) const { return arenas_[slot.arena].base + slot.index * arenas_[slot.arena].page_size; }

  Userfaultfd& uffd_;
  std::vector<Arena> arenas_;
  std::mutex mutex_;  // a leaf, over queue_
  VictimQueue queue_;
};

}  // namespace autopager
