#include "read_slots.hpp"

#include <sys/mman.h>

#include <cstdint>
#include <new>

namespace autopager {
namespace {

// Anonymous memory: a slot costs nothing until a read first lands in it. Large slots get transparent huge
// pages, aligned to them: a direct read of 1 MiB into 256 scattered 4 KiB pages needs more segments than
// a virtio disk takes in one request, and the block layer then splits and requeues it (measured with
// fault_bench: a sequential scan in 1 MiB pages went from 1.1 to 1.5 GB/s).
char* map_slots(std::size_t bytes) {
  constexpr std::size_t kHugePage = 2u << 20;
  const std::size_t mapped = bytes >= kHugePage ? bytes + kHugePage : bytes;
  void* area = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (area == MAP_FAILED) throw std::bad_alloc();
  char* start = static_cast<char*>(area);
  if (mapped == bytes) return start;
  char* aligned = reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(start) + kHugePage - 1) & ~(kHugePage - 1));
  if (aligned > start) munmap(start, aligned - start);
  if (start + mapped > aligned + bytes) munmap(aligned + bytes, start + mapped - (aligned + bytes));
  madvise(aligned, bytes, MADV_HUGEPAGE);
  return aligned;
}

}  // namespace

ReadSlots::ReadSlots(unsigned count, std::size_t slot_size)
    : slot_size_(slot_size), bytes_(static_cast<std::size_t>(count) * slot_size), area_(map_slots(bytes_)) {
  for (unsigned slot = count; slot-- > 0;) free_.push_back(slot);
}

ReadSlots::~ReadSlots() { munmap(area_, bytes_); }

unsigned ReadSlots::acquire() {
  unsigned slot = free_.back();
  free_.pop_back();
  return slot;
}

}  // namespace autopager
