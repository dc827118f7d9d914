// The regions of a pager, found by address on every fault.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "region.hpp"

namespace autopager {

class RegionTable {
 public:
  void add(RegionPtr region) {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    regions_[reinterpret_cast<std::uintptr_t>(region->base)] = std::move(region);
  }
  // Removes and returns the region that starts at `base`, or nullptr.
  RegionPtr remove(const void* base) {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    auto it = regions_.find(reinterpret_cast<std::uintptr_t>(base));
    if (it == regions_.end()) return nullptr;
    RegionPtr region = std::move(it->second);
    regions_.erase(it);
    return region;
  }
  // The region holding `address`, or nullptr.
  RegionPtr find(const void* address) const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    auto it = regions_.upper_bound(reinterpret_cast<std::uintptr_t>(address));
    if (it == regions_.begin()) return nullptr;
    --it;
    return it->second->contains(address) ? it->second : nullptr;
  }
  std::vector<RegionPtr> all() const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    std::vector<RegionPtr> out;
    out.reserve(regions_.size());
    for (const auto& entry : regions_) out.push_back(entry.second);
    return out;
  }

 private:
  mutable std::shared_mutex mutex_;
  std::map<std::uintptr_t, RegionPtr> regions_;
};

}  // namespace autopager
