#include "policy/eviction_policy.hpp"

namespace autopager {

std::unique_ptr<EvictionPolicy> make_eviction_policy(Eviction eviction, std::uint64_t capacity_units,
                                                     std::uint64_t retained_units) {
  const std::uint64_t rest = capacity_units > retained_units ? capacity_units - retained_units : 1;
  std::unique_ptr<EvictionPolicy> policy;
  switch (eviction) {
    case Eviction::kFifo: policy = make_fifo_policy(); break;
    case Eviction::kHotFifo: policy = make_hot_fifo_policy(rest); break;
    case Eviction::kS3Fifo: policy = make_s3fifo_policy(rest); break;
    case Eviction::kClock: policy = make_clock_policy(rest); break;
  }
  return make_retaining_policy(std::move(policy), retained_units);
}

}  // namespace autopager
