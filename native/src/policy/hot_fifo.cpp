// DI-MMAP's buffer (Essen et al., "DI-MMAP: a scalable memory-map runtime for out-of-core data-intensive
// applications"): pages enter a primary FIFO in fill order; a page leaving it that faulted again lately goes to
// a hot-page FIFO instead of out, and a page pushed out of the hot FIFO (over its share) is evicted. DI-MMAP
// counts a page's faults while it sits in its eviction queue, the window in which a fault takes the page back
// without a read. Here the pager keeps the policy's last victims' contents in its victim buffer (victim_units:
// the buffer's share the hot FIFO leaves, docs/DESIGN.md, "The victim buffer"), so that a fault on one is
// served from memory; the refault signal is a ghost queue of the last buffer's worth of pages evicted, which
// covers the victims and remembers longer. A first write (the write-protect fault) counts as a fault too.
#include "policy/page_queue.hpp"
#include "policy/signalled_policy.hpp"

namespace autopager {
namespace {

// DI-MMAP's best share for the hot FIFO on BFS (its figure 13: 75% of the buffer, 1.48x over none).
constexpr std::uint64_t kHotSharePercent = 75;

class HotFifoPolicy final : public SignalledPolicy {
 public:
  explicit HotFifoPolicy(std::uint64_t capacity_units)
      : SignalledPolicy(capacity_units, capacity_units),
        hot_budget_(capacity_units * kHotSharePercent / 100),
        victim_units_(capacity_units - hot_budget_) {}

  std::uint64_t victim_units() const override { return victim_units_; }

 private:
  struct Entry {
    PageRef page;
    bool refaulted;  // filled while the ghost queue remembered it
  };

  void admit_locked(PageRef page, bool refaulted) override { fifo_.push_back(Entry{std::move(page), refaulted}); }

  std::optional<PageRef> next_victim_locked() override {
    // Ends: each turn evicts a page or moves one from fifo_ to hot_, which is evicted from once over its share.
    for (;;) {
      if (hot_.units() > hot_budget_ || fifo_.empty()) {
        if (hot_.empty()) return std::nullopt;
        if (hot_.units() > hot_budget_) PolicyCounters::add(counters_.demotions);
        return leave(hot_.pop_front());
      }
      Entry entry = std::move(fifo_.front());
      fifo_.pop_front();
      const bool written = use_.take_written(key_of(entry.page));
      if (hot_budget_ > 0 && (entry.refaulted || written)) {
        hot_.push_back(std::move(entry.page));
        PolicyCounters::add(counters_.promotions);
        continue;
      }
      return leave(std::move(entry.page));
    }
  }

  void forget_region_locked(const Region& region) override {
    erase_region(fifo_, region);
    hot_.erase_region(region);
  }

  PageRef leave(PageRef victim) {
    use_.evicted(key_of(victim));
    return victim;
  }

  const std::uint64_t hot_budget_;  // units, as the buffer counts
  const std::uint64_t victim_units_;
  std::deque<Entry> fifo_;     // the primary FIFO, in fill order
  UnitQueue<PageRef> hot_;     // pages that faulted again, in the order they left fifo_
};

}  // namespace

std::unique_ptr<EvictionPolicy> make_hot_fifo_policy(std::uint64_t capacity_units) {
  return std::make_unique<HotFifoPolicy>(capacity_units);
}

}  // namespace autopager
