// S3-FIFO (Yang et al., "FIFO queues are all you need for cache eviction", SOSP'23): a small FIFO takes new
// pages; one used while there moves on to the main FIFO when it reaches the small FIFO's end, the others
// leave and are remembered in a ghost queue; a page filled while the ghost queue remembers it enters the main
// FIFO directly. The main FIFO gives a page used since it entered (or since its last round) another round.
// "Used" is what this pager sees of a resident page: its first write (a write-protect fault). The refault is
// the signal that works for every page: a page evicted from the small FIFO and faulted again within the ghost
// queue's window, a main FIFO's worth of evictions, is kept in the main FIFO from then on.
#include <mutex>

#include "policy/eviction_policy.hpp"
#include "policy/page_queue.hpp"
#include "policy/use_signals.hpp"

namespace autopager {
namespace {

constexpr std::uint64_t kSmallSharePercent = 10;  // S3-FIFO's choice

class S3FifoPolicy final : public EvictionPolicy {
 public:
  explicit S3FifoPolicy(std::uint64_t capacity_pages)
      : small_budget_(std::max<std::uint64_t>(1, capacity_pages * kSmallSharePercent / 100)),
        use_(capacity_pages > small_budget_ ? capacity_pages - small_budget_ : 1, capacity_pages) {}

  void on_fill(PageRef page) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (use_.filled(key_of(page), counters_)) {
      PolicyCounters::add(counters_.promotions);
      main_.push_back(std::move(page));
    } else {
      small_.push_back(std::move(page));
    }
  }
  void on_write(const Region& region, std::uint64_t page) override {
    std::lock_guard<std::mutex> lock(mutex_);
    use_.written(key_of(region, page));
  }
  void queue_for_eviction(PageRef page) override {
    std::lock_guard<std::mutex> lock(mutex_);
    small_.push_back(std::move(page));
  }

  std::optional<PageRef> next_victim() override {
    std::lock_guard<std::mutex> lock(mutex_);
    // Ends: each round taken clears a bit, and no bit is set meanwhile.
    for (;;) {
      if (!small_.empty() && (small_.size() >= small_budget_ || main_.empty())) {
        PageRef page = take_front(small_);
        if (use_.take_written(key_of(page))) {
          PolicyCounters::add(counters_.promotions);
          main_.push_back(std::move(page));
          continue;
        }
        use_.evicted(key_of(page));
        return page;
      }
      if (main_.empty()) return std::nullopt;
      PageRef page = take_front(main_);
      if (use_.take_written(key_of(page))) {
        PolicyCounters::add(counters_.second_chances);
        main_.push_back(std::move(page));
        continue;
      }
      return page;
    }
  }

  void forget_region(const Region& region) override {
    std::lock_guard<std::mutex> lock(mutex_);
    erase_region(small_, region);
    erase_region(main_, region);
  }
  PolicyStats stats() const override { return counters_.snapshot(); }

 private:
  static PageRef take_front(PageQueue& queue) {
    PageRef page = std::move(queue.front());
    queue.pop_front();
    return page;
  }

  const std::uint64_t small_budget_;
  std::mutex mutex_;
  PageQueue small_;
  PageQueue main_;
  UseSignals use_;  // refaults of pages evicted from small_ within a main FIFO's worth of evictions; writes
  PolicyCounters counters_;
};

}  // namespace

std::unique_ptr<EvictionPolicy> make_s3fifo_policy(std::uint64_t capacity_pages) {
  return std::make_unique<S3FifoPolicy>(capacity_pages);
}

}  // namespace autopager
