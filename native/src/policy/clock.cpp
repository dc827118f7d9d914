// CLOCK: the resident pages in a ring behind a hand; the hand gives a referenced page another round, clearing
// its reference, and evicts the first page not referenced since it last passed. The pager cannot read the
// hardware's accessed bits of its pages (idle page tracking, which would give them, is missing on the
// kernels measured), so the reference is sampled from what it sees: a page's first write (its write-protect
// fault) and its eviction itself, taken as a sample: a page faulted again while a ghost queue remembers it
// (the last buffer's worth of evictions) was in use when it went, and comes back referenced.
#include "policy/page_queue.hpp"
#include "policy/signalled_policy.hpp"

namespace autopager {
namespace {

class ClockPolicy final : public SignalledPolicy {
 public:
  explicit ClockPolicy(std::uint64_t capacity_units) : SignalledPolicy(capacity_units, capacity_units) {}

 private:
  void admit_locked(PageRef page, bool refaulted) override { ring_.push_back(Entry{std::move(page), refaulted}); }

  std::optional<PageRef> next_victim_locked() override {
    // Ends: each round given clears a reference, and none is set meanwhile.
    while (!ring_.empty()) {
      Entry entry = std::move(ring_.front());
      ring_.pop_front();
      const bool written = use_.take_written(key_of(entry.page));
      if (entry.refaulted || written) {
        PolicyCounters::add(counters_.second_chances);
        ring_.push_back(Entry{std::move(entry.page), false});
        continue;
      }
      use_.evicted(key_of(entry.page));
      return std::move(entry.page);
    }
    return std::nullopt;
  }

  void forget_region_locked(const Region& region) override { erase_region(ring_, region); }

  struct Entry {
    PageRef page;
    bool refaulted;  // filled while the ghost queue remembered it, the hand not past it since
  };

  std::deque<Entry> ring_;  // the hand is at the front; a page given another round goes to the back
};

}  // namespace

std::unique_ptr<EvictionPolicy> make_clock_policy(std::uint64_t capacity_units) {
  return std::make_unique<ClockPolicy>(capacity_units);
}

}  // namespace autopager
