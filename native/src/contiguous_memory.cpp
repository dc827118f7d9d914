#include "contiguous_memory.hpp"

#include <sys/mman.h>

#include <cstdint>
#include <new>

#include "autopager/config.hpp"

namespace autopager {

char* map_contiguous(std::size_t bytes) {
  const std::size_t mapped = bytes >= kHugePageSize ? bytes + kHugePageSize : bytes;
  void* area = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (area == MAP_FAILED) throw std::bad_alloc();
  char* start = static_cast<char*>(area);
  if (mapped == bytes) return start;
  const std::uintptr_t past = reinterpret_cast<std::uintptr_t>(start) + kHugePageSize - 1;
  char* aligned = reinterpret_cast<char*>(past & ~(kHugePageSize - 1));
  if (aligned > start) munmap(start, aligned - start);
  if (start + mapped > aligned + bytes) munmap(aligned + bytes, start + mapped - (aligned + bytes));
  madvise(aligned, bytes, MADV_HUGEPAGE);
  return aligned;
}

}  // namespace autopager
