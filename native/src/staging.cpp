#include "staging.hpp"

#include <sys/mman.h>

#include <system_error>

namespace autopager {

StagingArea::~StagingArea() {
  for (char* slot : all_) munmap(slot, page_size_);
}

char* StagingArea::take() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      char* slot = free_.back();
      free_.pop_back();
      return slot;
    }
  }
  // One slot for each write-back in progress at once: a few, made as they are first needed.
  void* area = mmap(nullptr, page_size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (area == MAP_FAILED) return nullptr;
  try {
    uffd_.register_range(area, page_size_, WriteProtect::kNo);
  } catch (const std::system_error&) {
    munmap(area, page_size_);
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  all_.push_back(static_cast<char*>(area));
  return static_cast<char*>(area);
}

void StagingArea::give_back(char* slot) {
  madvise(slot, page_size_, MADV_DONTNEED);
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(slot);
}

}  // namespace autopager
