#include "write_back_staging.hpp"

#include <sys/mman.h>

#include "contiguous_memory.hpp"

namespace autopager {

WriteBackStaging::WriteBackStaging(unsigned count, std::size_t slot_bytes)
    : slot_bytes_(count > 0 ? slot_bytes : 0), bytes_(static_cast<std::size_t>(count) * slot_bytes_) {
  if (bytes_ == 0) return;
  area_ = map_contiguous(bytes_);
  for (unsigned slot = 0; slot < count; ++slot) free_.push_back(area_ + slot * slot_bytes_);
  held_.assign(count, false);
}

WriteBackStaging::~WriteBackStaging() {
  if (area_ != nullptr) munmap(area_, bytes_);
}

char* WriteBackStaging::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (free_.empty()) return nullptr;
  char* slot = free_.back();
  free_.pop_back();
  return slot;
}

void WriteBackStaging::give_back_idle() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (char* slot : free_)
    if (held_[index(slot)]) drop_locked(slot);
}

void WriteBackStaging::drop_locked(char* slot) {
  madvise(slot, slot_bytes_, MADV_DONTNEED);
  held_[index(slot)] = false;
}

}  // namespace autopager
