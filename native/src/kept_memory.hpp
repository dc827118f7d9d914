// The page memory of a region whose writes must outlive the process (Config::keep_writes): a memfd mapped
// shared over the region instead of anonymous memory, and the region's page states in a second memfd,
// both held by the process's keeper too (keeper_link.hpp), which writes back the pages marked dirty when
// the process dies. The dirty-state contract that makes what the keeper writes the newest bytes, and
// what happens at each kind of death: docs/DESIGN.md, "Pager: writes kept through the process's death".
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace autopager {

class KeptMemory {
 public:
  // Hands the keeper the region's memory, its states and the store's file (`store_fd`, the region at
  // `store_offset` in it), then maps the memory over [base, base + page_count * page_size) with `prot`
  // (MAP_FIXED: base is the region's reserved range). Throws KeeperUnavailable when there is no keeper
  // (the range is then as it was), std::system_error when memory cannot be had.
  KeptMemory(char* base, std::uint64_t page_count, std::size_t page_size, std::size_t length, int prot, int store_fd,
             std::uint64_t store_offset);
  // Tells the keeper the region is gone: every page has been written back (or the process is a child's).
  ~KeptMemory();
  KeptMemory(const KeptMemory&) = delete;
  KeptMemory& operator=(const KeptMemory&) = delete;

  // One byte a page, zero (PageState::kAbsent) at first, seen by the keeper.
  std::atomic<std::uint8_t>* states() const { return states_; }

  // Drops the memory behind ranges of kept regions (punches their memfd): MADV_DONTNEED would only unmap
  // a shared page, which the next access would then find again without a fault.
  static void drop(const std::vector<iovec>& ranges);

 private:
  const std::uint64_t key_;
  std::size_t states_bytes_ = 0;
  std::atomic<std::uint8_t>* states_ = nullptr;
};

}  // namespace autopager
