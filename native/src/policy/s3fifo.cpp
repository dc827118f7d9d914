// S3-FIFO (Yang et al., "FIFO queues are all you need for cache eviction", SOSP'23): a small FIFO takes new
// pages; one used while there moves on to the main FIFO when it reaches the small FIFO's end, the others
// leave and are remembered in a ghost queue; a page filled while the ghost queue remembers it enters the main
// FIFO directly. The main FIFO gives a page used since it entered (or since its last round) another round.
// "Used" is what this pager sees of a resident page: its first write (a write-protect fault). The refault is
// the signal that works for every page: a page evicted from the small FIFO and faulted again within the ghost
// queue's window, a main FIFO's worth of evictions, is kept in the main FIFO from then on.
#include <algorithm>

#include "policy/page_queue.hpp"
#include "policy/signalled_policy.hpp"

namespace autopager {
namespace {

constexpr std::uint64_t kSmallSharePercent = 10;  // S3-FIFO's choice

// The ghost queue's window: a main FIFO's worth of evictions.
std::uint64_t main_share(std::uint64_t capacity_units, std::uint64_t small_budget) {
  return capacity_units > small_budget ? capacity_units - small_budget : 1;
}

class S3FifoPolicy final : public SignalledPolicy {
 public:
  explicit S3FifoPolicy(std::uint64_t capacity_units, std::uint64_t small_budget)
      : SignalledPolicy(main_share(capacity_units, small_budget), capacity_units), small_budget_(small_budget) {}

 private:
  void admit_locked(PageRef page, bool refaulted) override {
    if (refaulted) {
      PolicyCounters::add(counters_.promotions);
      main_.push_back(std::move(page));
    } else {
      small_.push_back(std::move(page));
    }
  }

  std::optional<PageRef> next_victim_locked() override {
    // Ends: each round taken clears a bit, and no bit is set meanwhile.
    for (;;) {
      if (!small_.empty() && (small_.units() >= small_budget_ || main_.empty())) {
        PageRef page = small_.pop_front();
        if (use_.take_written(key_of(page))) {
          PolicyCounters::add(counters_.promotions);
          main_.push_back(std::move(page));
          continue;
        }
        use_.evicted(key_of(page));
        return page;
      }
      if (main_.empty()) return std::nullopt;
      PageRef page = main_.pop_front();
      if (use_.take_written(key_of(page))) {
        PolicyCounters::add(counters_.second_chances);
        main_.push_back(std::move(page));
        continue;
      }
      return page;
    }
  }

  void forget_region_locked(const Region& region) override {
    small_.erase_region(region);
    main_.erase_region(region);
  }

  const std::uint64_t small_budget_;  // units, as the buffer counts
  UnitQueue<PageRef> small_;
  UnitQueue<PageRef> main_;
};

}  // namespace

std::unique_ptr<EvictionPolicy> make_s3fifo_policy(std::uint64_t capacity_units) {
  return std::make_unique<S3FifoPolicy>(capacity_units,
                                        std::max<std::uint64_t>(1, capacity_units * kSmallSharePercent / 100));
}

}  // namespace autopager
