// A filler's page buffers: every read it does, queued on its ring or done in place, lands in one of
// them before the page is copied into its region. Their memory is taken out of the buffer's
// (page_memory.hpp), so there are as many as the plan gives and no other; where the pages take that share
// too (Buffer::slots_transient), a slot gives its memory back after each use, and any thread may make the
// idle ones give theirs (give_back_idle): the free list is under a lock for that.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

namespace autopager {

class ReadSlots {
 public:
  // Maps `count` page-sized, page-aligned slots; throws std::bad_alloc when it cannot.
  ReadSlots(unsigned count, std::size_t slot_size);
  ~ReadSlots();
  ReadSlots(const ReadSlots&) = delete;
  ReadSlots& operator=(const ReadSlots&) = delete;

  bool has_free() const { return !free_.empty(); }  // by the owning filler, the one thread that takes slots
  // Takes a free slot (has_free() must hold).
  unsigned acquire();
  // Frees a slot after a use; it gives its memory back too when `give_back()` says so, asked under the lock.
  template <typename GiveBack>
  void release(unsigned slot, GiveBack&& give_back) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (give_back()) drop(slot);
    else held_[slot] = true;
    free_.push_back(slot);
  }
  // Frees a slot taken but not read into.
  void release_unused(unsigned slot) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(slot);
  }
  // The free slots that hold memory give it back (their next use faults it in anew).
  void give_back_idle();
  char* buffer(unsigned slot) const { return area_ + static_cast<std::size_t>(slot) * slot_size_; }

 private:
  std::size_t slot_size_;
  std::size_t bytes_;
  char* area_;
  void drop(unsigned slot);
  std::mutex mutex_;
  std::vector<unsigned> free_;
  std::vector<bool> held_;  // whether a slot may hold memory
};

}  // namespace autopager
