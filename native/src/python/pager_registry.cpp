#include "pager_registry.hpp"

#include <algorithm>
#include <mutex>
#include <vector>

namespace autopager::python {

namespace {

std::mutex registry_mutex;
std::vector<std::weak_ptr<Pager>> registry;

}  // namespace

std::shared_ptr<Pager> open_pager(const Config& config) {
  auto pager = std::make_shared<Pager>(config);
  std::lock_guard lock(registry_mutex);
  registry.erase(std::remove_if(registry.begin(), registry.end(), [](const auto& p) { return p.expired(); }),
                 registry.end());
  registry.push_back(pager);
  return pager;
}

int flush_all_pagers() {
  std::vector<std::shared_ptr<Pager>> alive;
  {
    std::lock_guard lock(registry_mutex);
    for (const auto& weak : registry) {
      if (auto pager = weak.lock()) alive.push_back(std::move(pager));
    }
  }
  int failed = 0;
  for (const auto& pager : alive) failed += pager->flush() != 0;
  return failed;
}

}  // namespace autopager::python
