// Which evicted pages the victim buffer holds (victim_buffer.hpp), oldest first, and which of its slots
// each one's contents occupy: the bookkeeping alone, no memory, not thread-safe (VictimBuffer locks it).
// A page parks in a free slot; a fault takes it back out; a page needing room drops the oldest.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

#include "policy/eviction_policy.hpp"

namespace autopager {

struct Victim {
  PageRef page;
  std::uint64_t slot;
};

class VictimQueue {
 public:
  explicit VictimQueue(std::uint64_t slots) {
    free_.reserve(slots);
    for (std::uint64_t slot = slots; slot > 0; --slot) free_.push_back(slot - 1);
  }

  // A free slot for a page about to park, or nothing while every slot is taken.
  std::optional<std::uint64_t> take_slot() {
    if (free_.empty()) return std::nullopt;
    const std::uint64_t slot = free_.back();
    free_.pop_back();
    return slot;
  }
  // A slot taken, once nothing of a page is in it.
  void give_back_slot(std::uint64_t slot) { free_.push_back(slot); }
  std::uint64_t free_slots() const { return free_.size(); }

  // The page, its contents in `slot`, is now the newest victim.
  void park(PageRef page, std::uint64_t slot) {
    const PageKey key = key_of(page);
    order_.push_back(Victim{std::move(page), slot});
    where_[key] = std::prev(order_.end());
  }
  // The page's slot, the page no longer a victim; nothing when it is not one (or a dropper took it).
  std::optional<std::uint64_t> take(const PageKey& key) {
    auto found = where_.find(key);
    if (found == where_.end()) return std::nullopt;
    const std::uint64_t slot = found->second->slot;
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
  std::list<Victim> order_;  // oldest first
  std::unordered_map<PageKey, std::list<Victim>::iterator, PageKeyHash> where_;
  std::vector<std::uint64_t> free_;
};

}  // namespace autopager
