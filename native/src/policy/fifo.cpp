#include <mutex>

#include "policy/eviction_policy.hpp"
#include "policy/page_queue.hpp"

namespace autopager {
namespace {

class FifoPolicy final : public EvictionPolicy {
 public:
  void on_fill(PageRef page) override {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(page));
  }
  void queue_for_eviction(PageRef page) override { on_fill(std::move(page)); }

  std::optional<PageRef> next_victim() override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (queue_.empty()) return std::nullopt;
    PageRef victim = std::move(queue_.front());
    queue_.pop_front();
    return victim;
  }

  void forget_region(const Region& region) override {
    std::lock_guard<std::mutex> lock(mutex_);
    erase_region(queue_, region);
  }

 private:
  std::mutex mutex_;
  PageQueue queue_;
};

}  // namespace

std::unique_ptr<EvictionPolicy> make_fifo_policy() { return std::make_unique<FifoPolicy>(); }

}  // namespace autopager
