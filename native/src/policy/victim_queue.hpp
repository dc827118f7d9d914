// Which evicted pages the victim buffer holds (victim_buffer.hpp), oldest first, and which slot each one's
// contents occupy: the bookkeeping alone, no memory, not thread-safe (VictimBuffer locks it). The buffer has an
// arena for each kind of page it keeps (a page size), of slots that size; all victims together hold at most
// `capacity` units of the pager's buffer, a slot of an arena the units of its page. A page parks in a free
// slot of its arena; a fault takes it back out; a page needing room drops the oldest.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

#include "policy/eviction_policy.hpp"

namespace autopager {

struct VictimSlot {
  unsigned arena;
  std::uint64_t index;
};

struct Victim {
  PageRef page;
  VictimSlot slot;
};

class VictimQueue {
 public:
  // Arena a's slots each hold `slot_units[a]` units; it has capacity / slot_units[a] of them, so that a victim
  // finds a slot of its arena whenever the units it takes are free.
  VictimQueue(const std::vector<std::uint64_t>& slot_units, std::uint64_t capacity)
      : capacity_(capacity), slot_units_(slot_units), free_(slot_units.size()) {
    for (unsigned arena = 0; arena < slot_units.size(); ++arena) {
      const std::uint64_t slots = slots_of(arena);
      free_[arena].reserve(slots);
      for (std::uint64_t slot = slots; slot > 0; --slot) free_[arena].push_back(slot - 1);
    }
  }

  std::uint64_t capacity() const { return capacity_; }  // units
  std::uint64_t slots_of(unsigned arena) const {
    return slot_units_[arena] == 0 ? 0 : capacity_ / slot_units_[arena];
  }
  std::uint64_t units_of(unsigned arena) const { return slot_units_[arena]; }

  // A free slot of the arena for a page about to park, or nothing while its units are not free.
  std::optional<VictimSlot> take_slot(unsigned arena) {
    if (held_ + slot_units_[arena] > capacity_ || free_[arena].empty()) return std::nullopt;
    const std::uint64_t index = free_[arena].back();
    free_[arena].pop_back();
    held_ += slot_units_[arena];
    return VictimSlot{arena, index};
  }
  // A slot taken, once nothing of a page is in it.
  void give_back_slot(VictimSlot slot) {
    free_[slot.arena].push_back(slot.index);
    held_ -= slot_units_[slot.arena];
  }
  // Units of the slots taken (by victims, or for pages about to park).
  std::uint64_t held_units() const { return held_; }

  // The page, its contents in `slot`, is now the newest victim.
  void park(PageRef page, VictimSlot slot) {
    const PageKey key = key_of(page);
    order_.push_back(Victim{std::move(page), slot});
    where_[key] = std::prev(order_.end());
  }
  // The page's slot, the page no longer a victim; nothing when it is not one (or a dropper took it).
  std::optional<VictimSlot> take(const PageKey& key) {
    auto found = where_.find(key);
    if (found == where_.end()) return std::nullopt;
    const VictimSlot slot = found->second->slot;
    order_.erase(found->second);
    where_.erase(found);
    return slot;
  }
  // The oldest victim, no longer one; its slot stays taken until given back.
  std::optional<Victim> pop_oldest() {
    if (order_.empty()) return std::nullopt;
    Victim victim = std::move(order_.front());
    order_.pop_front();
    where_.erase(key_of(victim.page));
    return victim;
  }
  std::uint64_t size() const { return order_.size(); }

 private:
  const std::uint64_t capacity_;
  const std::vector<std::uint64_t> slot_units_;
  std::uint64_t held_ = 0;
  std::list<Victim> order_;  // oldest first
  std::unordered_map<PageKey, std::list<Victim>::iterator, PageKeyHash> where_;
  std::vector<std::vector<std::uint64_t>> free_;  // an arena's free slots
};

}  // namespace autopager
