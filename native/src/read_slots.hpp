// A filler's page buffers: every read it does, queued on its ring or done in place, lands in one of
// them before the page is copied into its region. Their memory is taken out of the buffer's
// (page_memory.hpp), so there are as many as the plan gives and no other.
#pragma once

#include <cstddef>
#include <vector>

namespace autopager {

class ReadSlots {
 public:
  // Maps `count` page-sized, page-aligned slots; throws std::bad_alloc when it cannot.
  ReadSlots(unsigned count, std::size_t slot_size);
  ~ReadSlots();
  ReadSlots(const ReadSlots&) = delete;
  ReadSlots& operator=(const ReadSlots&) = delete;

  bool has_free() const { return !free_.empty(); }
  // Takes a free slot (has_free() must hold).
  unsigned acquire();
  void release(unsigned slot) { free_.push_back(slot); }
  // Drops what the slot holds (its memory goes back to the system; the next read into it faults it in anew).
  void give_back_memory(unsigned slot);
  char* buffer(unsigned slot) const { return area_ + static_cast<std::size_t>(slot) * slot_size_; }

 private:
  std::size_t slot_size_;
  std::size_t bytes_;
  char* area_;
  std::vector<unsigned> free_;
};

}  // namespace autopager
