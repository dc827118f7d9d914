// numpy.memmap's mode "c" and the preload's MAP_PRIVATE writable mappings: a store that reads a base store
// and keeps every write in a scratch overlay, so written pages survive eviction and re-reading but never
// reach the base (its file is opened read-only). The overlay remembers which byte ranges it holds; reads
// take those from the overlay. When the scratch file's file system is full, every later write goes to
// anonymous memory instead, as the kernel keeps a private mapping's pages: a private write never fails.
// A heap mapping's store (the preload's heap) fails such a write instead, so that its pages stay within the
// pager's buffer (a fault that finds no page it can evict is SIGBUS), until it is handed to the kernel, whose
// memory takes them anyway.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "autopager/store.hpp"
#include "scratch_store.hpp"

namespace autopager::python {

class CopyOnWriteStore : public Store {
 public:
  // What a write does that finds the overlay's file system full: goes to memory, or fails (ENOSPC).
  enum class WhenFull { kMemory, kFail };
  // The overlay is a scratch file in `scratch_directory`, as large as `base`.
  CopyOnWriteStore(std::shared_ptr<Store> base, const std::string& scratch_directory,
                   WhenFull when_full = WhenFull::kMemory);
  ~CopyOnWriteStore() override;
  CopyOnWriteStore(const CopyOnWriteStore&) = delete;
  CopyOnWriteStore& operator=(const CopyOnWriteStore&) = delete;

  ssize_t read(void* dst, std::size_t n, std::uint64_t offset) override;
  ssize_t write(const void* src, std::size_t n, std::uint64_t offset) override;
  std::uint64_t size() const override { return base_->size(); }
  // From now on a write that finds the file system full goes to memory (before the mapping's pages are
  // written back to be copied into the kernel's memory).
  void keep_writes_in_memory_when_full() { when_full_.store(WhenFull::kMemory); }
  // The byte ranges [begin, end) written so far, in order.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> written_ranges() const;
  bool outlives_process() const override { return false; }  // its writes live in the scratch overlay
  bool direct_io() const override { return base_->direct_io(); }  // the file's reads; it is never written

 private:
  using Ranges = std::map<std::uint64_t, std::uint64_t>;  // begin -> end of disjoint, non-touching ranges
  static void remember(Ranges& ranges, std::uint64_t begin, std::uint64_t end);
  // Maps the memory that takes the writes from now on; false with errno when it cannot be had.
  bool overflow_to_memory();

  std::shared_ptr<Store> base_;
  ScratchStore overlay_;
  mutable std::shared_mutex written_mutex_;
  Ranges written_;                        // in the overlay
  Ranges in_memory_;                      // in `memory_`, newer than the overlay's bytes of the same range
  std::atomic<char*> memory_{nullptr};    // as large as the base, once the overlay's file system was full
  std::atomic<WhenFull> when_full_;
};

}  // namespace autopager::python
