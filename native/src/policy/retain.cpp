#include <mutex>

#include "policy/eviction_policy.hpp"
#include "policy/page_queue.hpp"

namespace autopager {
namespace {

class RetainingPolicy final : public EvictionPolicy {
 public:
  RetainingPolicy(std::unique_ptr<EvictionPolicy> policy, std::uint64_t retained_units)
      : policy_(std::move(policy)), retained_budget_(retained_units) {}

  void on_fill(PageRef page) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (retained_.units() < retained_budget_) {
        retained_.push_back(std::move(page));
        return;
      }
    }
    policy_->on_fill(std::move(page));
  }
  void on_write(const Region& region, std::uint64_t page) override { policy_->on_write(region, page); }
  // A victim kept back waits in the policy, retained before or not: its place among the retained goes to the
  // next page filled.
  void queue_for_eviction(PageRef page) override { policy_->queue_for_eviction(std::move(page)); }

  std::optional<PageRef> next_victim() override {
    if (std::optional<PageRef> victim = policy_->next_victim()) return victim;
    std::lock_guard<std::mutex> lock(mutex_);
    if (retained_.empty()) return std::nullopt;
    return retained_.pop_front();
  }

  void forget_region(const Region& region) override {
    policy_->forget_region(region);
    std::lock_guard<std::mutex> lock(mutex_);
    retained_.erase_region(region);
  }
  PolicyStats stats() const override { return policy_->stats(); }
  std::uint64_t victim_units() const override { return policy_->victim_units(); }

 private:
  const std::unique_ptr<EvictionPolicy> policy_;
  const std::uint64_t retained_budget_;
  std::mutex mutex_;    // over retained_ only, never held while policy_ is called
  UnitQueue<PageRef> retained_;  // the first pages filled, up to retained_budget_ units
};

}  // namespace

std::unique_ptr<EvictionPolicy> make_retaining_policy(std::unique_ptr<EvictionPolicy> policy,
                                                      std::uint64_t retained_units) {
  if (retained_units == 0) return policy;
  return std::make_unique<RetainingPolicy>(std::move(policy), retained_units);
}

}  // namespace autopager
