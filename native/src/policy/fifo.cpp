#include <algorithm>
#include <deque>
#include <mutex>

#include "policy/eviction_policy.hpp"

namespace autopager {
namespace {

class FifoPolicy final : public EvictionPolicy {
 public:
  explicit FifoPolicy(std::uint64_t retained_pages) : retained_budget_(retained_pages) {}

  void on_fill(PageRef page) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (retained_.size() < retained_budget_)
      retained_.push_back(std::move(page));
    else
      queue_.push_back(std::move(page));
  }
  // A victim kept back waits in the queue, retained before or not: its place among the retained goes to the
  // next page filled.
  void queue_for_eviction(PageRef page) override {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(page));
  }

  std::optional<PageRef> next_victim() override {
    std::lock_guard<std::mutex> lock(mutex_);
    std::deque<PageRef>& from = queue_.empty() ? retained_ : queue_;
    if (from.empty()) return std::nullopt;
    PageRef victim = std::move(from.front());
    from.pop_front();
    return victim;
  }

  void forget_region(const Region& region) override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (std::deque<PageRef>* pages : {&queue_, &retained_})
      pages->erase(std::remove_if(pages->begin(), pages->end(),
                                  [&](const PageRef& p) { return p.region.get() == &region; }),
                   pages->end());
  }

 private:
  const std::uint64_t retained_budget_;
  std::mutex mutex_;
  std::deque<PageRef> queue_;
  std::deque<PageRef> retained_;  // the first pages filled, up to retained_budget_; evicted only when queue_ is empty
};

}  // namespace

std::unique_ptr<EvictionPolicy> make_fifo_policy(std::uint64_t retained_pages) {
  return std::make_unique<FifoPolicy>(retained_pages);
}

}  // namespace autopager
