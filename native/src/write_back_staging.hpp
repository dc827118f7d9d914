// Where a run of dirty pages of a direct-I/O store is copied before its write: a region's memory is installed
// a page at a time, so a write straight from it reaches the disk in requests of about 1 MiB whatever the run
// (contiguous_memory.hpp); copied into contiguous memory first, a run of 8 MiB goes in two requests of 4 MiB.
// The slots are few (one an evictor) and their memory is taken out of the buffer's (page_memory.hpp); a writer
// that finds none free writes from the region, as before. Where the pages take that share too
// (Buffer::slots_transient), a slot gives its memory back after its use and the idle ones when told to.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

namespace autopager {

class WriteBackStaging {
 public:
  // `count` slots of `slot_bytes` each (none when either is 0); throws std::bad_alloc when they cannot be mapped.
  WriteBackStaging(unsigned count, std::size_t slot_bytes);
  ~WriteBackStaging();
  WriteBackStaging(const WriteBackStaging&) = delete;
  WriteBackStaging& operator=(const WriteBackStaging&) = delete;

  std::size_t slot_bytes() const { return slot_bytes_; }
  // A free slot, or nullptr when every slot is in use (or there are none).
  char* take();
  // Frees a slot after its write; it gives its memory back too when `drop()` says so, asked under the lock.
  template <typename Drop>
  void give_back(char* slot, Drop&& drop) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (drop()) drop_locked(slot);
    else held_[index(slot)] = true;
    free_.push_back(slot);
  }
  // The free slots that hold memory give it back.
  void give_back_idle();

 private:
  const std::size_t slot_bytes_;
  const std::size_t bytes_;
  char* area_ = nullptr;
  std::size_t index(const char* slot) const { return static_cast<std::size_t>(slot - area_) / slot_bytes_; }
  void drop_locked(char* slot);
  std::mutex mutex_;
  std::vector<char*> free_;
  std::vector<bool> held_;  // whether a slot may hold memory
};

}  // namespace autopager
