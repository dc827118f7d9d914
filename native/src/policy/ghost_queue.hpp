// The pages evicted most recently, by id only (no data): a fill of one of them is a refault, a sign that it
// went too early (S3-FIFO's ghost queue, CLOCK's reference on refault). Kept compact, 16 bytes a page of the
// window: a table of 4-slot buckets chosen by the page's hash, each slot holding the hash's upper half and
// when the page left. A page leaving takes an empty slot of its bucket or the one that left longest ago (the
// window then forgets that page early); two pages are mistaken for each other only when both halves of their
// hashes agree.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "policy/eviction_policy.hpp"

namespace autopager {

class GhostQueue {
 public:
  // Remembers the last `window` pages evicted.
  explicit GhostQueue(std::uint64_t window)
      : window_(static_cast<std::uint32_t>(std::min<std::uint64_t>(std::max<std::uint64_t>(window, 1), UINT32_MAX / 2))),
        slots_(kWays * ((2 * static_cast<std::uint64_t>(window_) + kWays - 1) / kWays)) {}

  void remember(const PageKey& key) {
    if (++evicted_ == 0) ++evicted_;  // 0 marks an empty slot
    const std::uint64_t h = PageKeyHash()(key);
    Slot* bucket = bucket_of(h);
    Slot* oldest = bucket;
    for (Slot* slot = bucket; slot < bucket + kWays; ++slot) {
      if (slot->when == 0 || age(*slot) >= window_) {
        oldest = slot;
        break;
      }
      if (age(*slot) > age(*oldest)) oldest = slot;
    }
    *oldest = Slot{fingerprint(h), evicted_};
  }
  // Whether the page left within the window; it is forgotten either way.
  bool take(const PageKey& key) {
    const std::uint64_t h = PageKeyHash()(key);
    Slot* bucket = bucket_of(h);
    for (Slot* slot = bucket; slot < bucket + kWays; ++slot) {
      if (slot->when != 0 && slot->fingerprint == fingerprint(h)) {
        const bool within = age(*slot) < window_;
        *slot = Slot{};
        return within;
      }
    }
    return false;
  }

 private:
  static constexpr std::uint64_t kWays = 4;
  struct Slot {
    std::uint32_t fingerprint = 0;
    std::uint32_t when = 0;  // the eviction count (modulo 2^32, never 0) when it left; 0: empty
  };
  static std::uint32_t fingerprint(std::uint64_t h) { return static_cast<std::uint32_t>(h >> 32); }
  std::uint32_t age(const Slot& slot) const { return evicted_ - slot.when; }
  Slot* bucket_of(std::uint64_t h) { return &slots_[(h % (slots_.size() / kWays)) * kWays]; }

  const std::uint32_t window_;
  std::uint32_t evicted_ = 0;
  std::vector<Slot> slots_;
};

}  // namespace autopager
