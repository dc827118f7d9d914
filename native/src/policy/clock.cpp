// CLOCK: the resident pages in a ring behind a hand; the hand gives a referenced page another round, clearing
// its reference, and evicts the first page not referenced since it last passed. The pager cannot read the
// hardware's accessed bits of its pages (idle page tracking, which would give them, is missing on the
// kernels measured), so the reference is sampled from what it sees: a page's first write (its write-protect
// fault) and its eviction itself, taken as a sample: a page faulted again while a ghost queue remembers it
// (the last buffer's worth of evictions) was in use when it went, and comes back referenced.
#include <mutex>

#include "policy/eviction_policy.hpp"
#include "policy/page_queue.hpp"
#include "policy/use_signals.hpp"

namespace autopager {
namespace {

class ClockPolicy final : public EvictionPolicy {
 public:
  explicit ClockPolicy(std::uint64_t capacity_pages) : use_(capacity_pages, capacity_pages) {}

  void on_fill(PageRef page) override {
    std::lock_guard<std::mutex> lock(mutex_);
    const bool refault = use_.filled(key_of(page), counters_);
    ring_.push_back(Entry{std::move(page), refault});
  }
  void on_write(const Region& region, std::uint64_t page) override {
    std::lock_guard<std::mutex> lock(mutex_);
    use_.written(key_of(region, page));
  }
  void queue_for_eviction(PageRef page) override {
    std::lock_guard<std::mutex> lock(mutex_);
    ring_.push_back(Entry{std::move(page), false});
  }

  std::optional<PageRef> next_victim() override {
    std::lock_guard<std::mutex> lock(mutex_);
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

  void forget_region(const Region& region) override {
    std::lock_guard<std::mutex> lock(mutex_);
    erase_region(ring_, region);
  }
  PolicyStats stats() const override { return counters_.snapshot(); }

 private:
  struct Entry {
    PageRef page;
    bool refaulted;  // filled while the ghost queue remembered it, the hand not past it since
  };

  std::mutex mutex_;
  std::deque<Entry> ring_;  // the hand is at the front; a page given another round goes to the back
  UseSignals use_;  // refaults within a buffer's worth of evictions
  PolicyCounters counters_;
};

}  // namespace

std::unique_ptr<EvictionPolicy> make_clock_policy(std::uint64_t capacity_pages) {
  return std::make_unique<ClockPolicy>(capacity_pages);
}

}  // namespace autopager
