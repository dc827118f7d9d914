// A bit a page, set when the page is used (its first write) and cleared when the policy's hand passes it,
// for pages the policy holds in a queue: a bitset indexed by the page's hash, so that setting one needs no
// search of the queue. Two pages of one bit share it (one of them may get a second round it did not earn):
// at 8 bits a page of the buffer, one in eight pages.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "policy/eviction_policy.hpp"

namespace autopager {

class ReferenceBits {
 public:
  explicit ReferenceBits(std::uint64_t pages) : words_((8 * std::max<std::uint64_t>(pages, 1) + 63) / 64) {}

  void set(const PageKey& key) {
    const std::uint64_t bit = index(key);
    words_[bit / 64] |= 1ull << (bit % 64);
  }
  // Whether it was set; it is clear afterwards.
  bool take(const PageKey& key) {
    const std::uint64_t bit = index(key);
    const std::uint64_t mask = 1ull << (bit % 64);
    const bool was = (words_[bit / 64] & mask) != 0;
    words_[bit / 64] &= ~mask;
    return was;
  }

 private:
  std::uint64_t index(const PageKey& key) const { return PageKeyHash()(key) % (words_.size() * 64); }
  std::vector<std::uint64_t> words_;
};

}  // namespace autopager
