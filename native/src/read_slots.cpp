#include "read_slots.hpp"

#include <sys/mman.h>

#include "contiguous_memory.hpp"

namespace autopager {

ReadSlots::ReadSlots(unsigned count, std::size_t slot_size)
    : slot_size_(slot_size),
      bytes_(static_cast<std::size_t>(count) * slot_size),
      area_(map_contiguous(bytes_)),
      held_(count, false) {
  for (unsigned slot = count; slot-- > 0;) free_.push_back(slot);
}

ReadSlots::~ReadSlots() { munmap(area_, bytes_); }

unsigned ReadSlots::acquire() {
  std::lock_guard<std::mutex> lock(mutex_);
  unsigned slot = free_.back();
  free_.pop_back();
  return slot;
}

void ReadSlots::give_back_idle() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (unsigned slot : free_)
    if (held_[slot]) drop(slot);
}

void ReadSlots::drop(unsigned slot) {
  madvise(buffer(slot), slot_size_, MADV_DONTNEED);
  held_[slot] = false;
}

}  // namespace autopager
